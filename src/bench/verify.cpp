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

Comparison compare_outputs(const graph::TensorMap& device, const graph::TensorMap& reference) {
  Comparison comparison;
  double worst_excess = -1;
  bool all_finite = true;
  double largest = 0;
  for (const auto& [name, expected] : reference) {
    const auto found = device.find(name);
    if (found == device.end()) throw_bad_input("output '" + name + "'", "the device has no such output");
    if (!(found->second.type == expected.type))
      throw_bad_input("output '" + name + "'", "the device's is {} but the reference's is {}",
                      graph::type_text(found->second.type), graph::type_text(expected.type));
    const std::vector<float> want = expected.to_floats(), got = found->second.to_floats();
    comparison.elements += static_cast<std::int64_t>(want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      const double difference = std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i]));
      const double allowed = kAbsoluteTolerance + kRelativeTolerance * std::fabs(static_cast<double>(want[i]));
      if (!std::isfinite(difference)) all_finite = false;
      else largest = std::max(largest, difference);
      if (difference <= allowed) continue;  // false for NaN
      ++comparison.out_of_tolerance;
      const double excess = std::isfinite(difference) ? difference - allowed : INFINITY;
      if (excess > worst_excess) {
        worst_excess = excess;
        comparison.worst = fmt::format("{}: device {} reference {}",
                                       element_name(name, expected.type.shape, static_cast<std::int64_t>(i)),
                                       got[i], want[i]);
      }
    }
  }
  comparison.maximum_absolute_error = all_finite ? std::optional<double>(largest) : std::nullopt;
  return comparison;
}

}  // namespace tilec::bench
