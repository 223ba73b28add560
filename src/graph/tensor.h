// Tensor data on the host: a type and its elements' stored bytes, row-major,
// little-endian, element_bytes() each (FP8 as its codes, with the scale in
// the type).
#pragma once

#include "graph/graph.h"

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace tilec::graph {

struct Tensor {
  TensorType type;
  std::vector<std::uint8_t> bytes;

  static Tensor zeros(TensorType type);
  // Rounds each value to the storage type (nearest even, FP8 saturating).
  static Tensor from_floats(TensorType type, std::span<const float> values);

  std::int64_t elements() const { return type.elements(); }
  // Decoded values, FP8 scale applied.
  std::vector<float> to_floats() const;
  // Decoded values of elements [first, first + count) in flat order.
  std::vector<float> to_floats(std::int64_t first, std::int64_t count) const;
  float at(std::int64_t flat_index) const;
};

// Tensors by name: inputs and parameters going in, outputs coming out.
using TensorMap = std::map<std::string, Tensor>;

}  // namespace tilec::graph
