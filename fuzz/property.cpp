#include "fuzz_target.h"

#include <cstdio>
#include <cstdlib>

namespace tilec::fuzz {

void property_failed(const std::string& what) {
  std::fprintf(stderr, "fuzz: property failed: %s\n", what.c_str());
  std::abort();
}

}  // namespace tilec::fuzz
