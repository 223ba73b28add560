// Checks a device's outputs against the host reference, by the rule of
// ../shared/workload.md: an element passes when |device - reference| <=
// 0.03 + 0.05 x |reference|; the case's error is the largest |device -
// reference| over every output element. Where the reference is NaN, a NaN
// on the device agrees, and so does the same infinity where it is
// infinite; an element where only one side is NaN, or where an infinity
// meets another value, is out of tolerance and counted as such.
#pragma once

#include "graph/tensor.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tilec::bench {

inline constexpr double kAbsoluteTolerance = 0.03;
inline constexpr double kRelativeTolerance = 0.05;

struct Comparison {
  std::int64_t elements = 0;
  std::int64_t out_of_tolerance = 0;  // every kind below included
  std::int64_t nan_mismatches = 0;       // NaN on one side only
  std::int64_t infinity_mismatches = 0;  // an infinity against another value (not NaN)
  // nullopt when some mismatch is not finite (a NaN or infinity mismatch).
  std::optional<double> maximum_absolute_error = 0.0;
  // The worst element beyond tolerance: "y[0,3,17]: device 1.5 reference 0.25".
  std::string worst;

  bool passed() const { return out_of_tolerance == 0; }
};

// Every output of `reference` must be in `device` with the same type
// (BadInput otherwise).
Comparison compare_outputs(const graph::TensorMap& device, const graph::TensorMap& reference);

}  // namespace tilec::bench
