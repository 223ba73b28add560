#include "support/host_memory.h"

#include <fstream>
#include <string>

namespace tilec {

std::optional<std::uint64_t> peak_resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      std::uint64_t kib = 0;
      if (status >> kib) return kib * 1024;
      return std::nullopt;
    }
    status.ignore(4096, '\n');
  }
  return std::nullopt;
}

bool restart_peak_resident() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";  // 5: reset the peak resident size (Linux 4.0 and later)
  clear.flush();
  return static_cast<bool>(clear);
}

}  // namespace tilec
