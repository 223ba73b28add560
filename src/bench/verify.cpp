#include "bench/verify.h"

#include "support/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <vector>

namespace tilec::bench {

namespace {

std::string element_name(const std::string& tensor, const graph::Shape& shape, std::int64_t flat) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t axis = shape.size(); axis-- > 0;) {
    index[axis] = flat % shape[axis];
    flat /= shape[axis];
  }
  return fmt::format("{}[{}]", tensor, fmt::join(index, ","));
}

}  // namespace

Comparison compare_outputs(const graph::TensorMap& device, const graph::TensorMap& reference,
                           const ToleranceRule& rule) {
  Comparison comparison;
  double worst_excess = 0;
  double largest = 0, largest_relative = 0;
  for (const auto& [name, expected] : reference) {
    const std::vector<float> want = expected.to_floats(), got = graph::output_like(device, name, expected).to_floats();
    comparison.elements += static_cast<std::int64_t>(want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      const double d = got[i], r = want[i];
      double excess;  // beyond the tolerance; infinite for a non-finite mismatch
      if (std::isnan(d) || std::isnan(r)) {
        if (std::isnan(d) && std::isnan(r)) continue;
        ++comparison.nan_mismatches;
        excess = INFINITY;
      } else if (std::isinf(d) || std::isinf(r)) {
        if (d == r) continue;
        ++comparison.infinity_mismatches;
        excess = INFINITY;
      } else {
        const double difference = std::fabs(d - r);
        largest = std::max(largest, difference);
        if (std::fabs(r) >= rule.absolute && r != 0)
          largest_relative = std::max(largest_relative, difference / std::fabs(r));
        excess = difference - (rule.absolute + rule.relative * std::fabs(r));
        if (excess <= 0) continue;
      }
      ++comparison.out_of_tolerance;
      if (excess > worst_excess) {
        worst_excess = excess;
        comparison.worst = fmt::format("{}: device {} reference {}",
                                       element_name(name, expected.type.shape, static_cast<std::int64_t>(i)),
                                       got[i], want[i]);
      }
    }
  }
  if (comparison.nan_mismatches == 0 && comparison.infinity_mismatches == 0) {
    comparison.maximum_absolute_error = largest;
    comparison.maximum_relative_error = largest_relative;
  } else {
    comparison.maximum_absolute_error.reset();
    comparison.maximum_relative_error.reset();
  }
  return comparison;
}

ExactError exact_error(const graph::TensorMap& values, const graph::ExactOutputs& exact, double relative_floor) {
  ExactError error;
  for (const auto& [name, want] : exact) {
    const auto found = values.find(name);
    if (found == values.end()) throw_bad_input("output '" + name + "'", "has no values to compare with the exact reference");
    const std::vector<float> got = found->second.to_floats();
    TILEC_CHECK(got.size() == want.size(), "output '{}' has {} values but its exact reference {}", name, got.size(),
                want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (!std::isfinite(got[i]) || !std::isfinite(want[i])) continue;
      const double difference = std::fabs(static_cast<double>(got[i]) - want[i]);
      error.absolute = std::max(error.absolute, difference);
      if (std::fabs(want[i]) >= relative_floor && want[i] != 0)
        error.relative = std::max(error.relative, difference / std::fabs(want[i]));
    }
  }
  return error;
}

}  // namespace tilec::bench
