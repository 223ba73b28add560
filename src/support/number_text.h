// Numbers as tilec prints them for people.
#pragma once

#include <cstdint>
#include <string>

namespace tilec {

// 7229067264 -> "7,229,067,264".
inline std::string grouped(std::int64_t number) {
  const std::string digits = std::to_string(number);
  const std::size_t first = number < 0 ? 1 : 0;
  std::string text = digits.substr(0, first);
  for (std::size_t i = first; i < digits.size(); ++i) {
    if (i > first && (digits.size() - i) % 3 == 0) text += ',';
    text += digits[i];
  }
  return text;
}

// Bytes of host memory, decimal units, three significant digits:
// 37101568 -> "37.1 MB", 2597842944 -> "2.60 GB", 900 -> "900 B".
std::string memory_text(std::uint64_t bytes);

}  // namespace tilec
