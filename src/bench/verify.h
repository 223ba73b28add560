// Checks a device's outputs against the host reference: an element passes
// when |device - reference| <= atol + rtol x |reference|, by default the
// rule of ../shared/workload.md (atol 0.03, rtol 0.05); the case's error is
// the largest |device - reference| over every output element. Where the reference is NaN, a NaN
// on the device agrees, and so does the same infinity where it is
// infinite; an element where only one side is NaN, or where an infinity
// meets another value, is out of tolerance and counted as such.
#pragma once

#include "graph/reference.h"
#include "graph/tensor.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tilec::bench {

inline constexpr double kAbsoluteTolerance = 0.03;
inline constexpr double kRelativeTolerance = 0.05;

// The pass rule: |device - reference| <= absolute + relative x |reference|.
struct ToleranceRule {
  double absolute = kAbsoluteTolerance;
  double relative = kRelativeTolerance;
};

struct Comparison {
  std::int64_t elements = 0;
  std::int64_t out_of_tolerance = 0;  // every kind below included
  std::int64_t nan_mismatches = 0;       // NaN on one side only
  std::int64_t infinity_mismatches = 0;  // an infinity against another value (not NaN)
  // nullopt when some mismatch is not finite (a NaN or infinity mismatch).
  std::optional<double> maximum_absolute_error = 0.0;
  // The largest |device - reference| / |reference| where |reference| >=
  // the rule's absolute part (below it the rule judges an element by its
  // absolute error) and not zero; nullopt like maximum_absolute_error.
  std::optional<double> maximum_relative_error = 0.0;
  // The worst element beyond tolerance: "y[0,3,17]: device 1.5 reference 0.25".
  std::string worst;

  bool passed() const { return out_of_tolerance == 0; }
};

// Every output of `reference` must be in `device` with the same type
// (BadInput otherwise).
Comparison compare_outputs(const graph::TensorMap& device, const graph::TensorMap& reference,
                           const ToleranceRule& rule = {});

// How far stored values lie from the exact reference (graph::run_exact_reference),
// over the elements where both are finite: the largest |value - exact|, and
// the largest |value - exact| / |exact| where |exact| >= relative_floor
// (the pass rule's absolute part) and is not zero.
struct ExactError {
  double absolute = 0;
  double relative = 0;
};
ExactError exact_error(const graph::TensorMap& values, const graph::ExactOutputs& exact, double relative_floor);

}  // namespace tilec::bench
