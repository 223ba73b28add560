#include "support/duration.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>

namespace tilec {

namespace {

struct Unit {
  const char* suffix;
  double seconds;
};

// Largest first; seconds are never converted to minutes (the reference writes "107s").
constexpr std::array<Unit, 4> kUnits{{{"s", 1.0}, {"ms", 1e-3}, {"µs", 1e-6}, {"ns", 1e-9}}};

std::string three_digits(double value) {
  // value is in [1, 1000) after unit choice, or >= 1000 for seconds.
  if (value >= 100) return fmt::format("{:.0f}", value);
  if (value >= 10) return fmt::format("{:.1f}", value);
  return fmt::format("{:.2f}", value);
}

// Rounds to three significant digits so that 999.7µs becomes 1.00ms, not 1000µs.
double round_significant(double value) {
  if (value <= 0) return 0;
  double magnitude = std::floor(std::log10(value));
  double step = std::pow(10.0, magnitude - 2);
  return std::round(value / step) * step;
}

}  // namespace

std::string format_duration(double seconds) {
  if (!(seconds > 0)) return "0ns";
  double rounded = round_significant(seconds);
  for (const Unit& unit : kUnits) {
    double value = rounded / unit.seconds;
    if (value >= 1 - 1e-9 || unit.seconds == 1e-9) {
      if (unit.seconds == 1.0 && value >= 1000) return fmt::format("{:.0f}s", seconds);
      return three_digits(value) + unit.suffix;
    }
  }
  return "0ns";
}

std::optional<double> parse_duration(std::string_view text) {
  for (const Unit& unit : kUnits) {
    std::string_view suffix(unit.suffix);
    if (text.size() <= suffix.size() || text.substr(text.size() - suffix.size()) != suffix)
      continue;
    std::string_view number = text.substr(0, text.size() - suffix.size());
    // "s" is a suffix of "ms", "µs" and "ns": only accept a plain number before it.
    double value = 0;
    auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (error != std::errc() || end != number.data() + number.size() || value < 0) continue;
    return value * unit.seconds;
  }
  return std::nullopt;
}

}  // namespace tilec
