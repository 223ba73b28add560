// Durations written the way the reference report writes stage times:
// three significant digits and the largest unit that keeps the number >= 1:
// "850ns", "89.1µs", "270µs", "1.33ms", "41.9s", "107s", "1234s".
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tilec {

std::string format_duration(double seconds);

// Reads a string written by format_duration (or the reference report) back to
// seconds; nullopt when it is not in that format.
std::optional<double> parse_duration(std::string_view text);

}  // namespace tilec
