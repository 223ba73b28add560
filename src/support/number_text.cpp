#include "support/number_text.h"

#include <fmt/format.h>

namespace tilec {

std::string memory_text(std::uint64_t bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int unit = 0;
  auto scaled = static_cast<double>(bytes);
  while (scaled >= 999.5 && unit < 4) {
    scaled /= 1000;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.{}f} {}", scaled, scaled >= 99.95 ? 0 : scaled >= 9.995 ? 1 : 2, units[unit]);
}

}  // namespace tilec
