#include "graph/tensor.h"

#include "numerics/fp16.h"
#include "numerics/fp8.h"
#include "support/error.h"

#include <cstring>

namespace tilec::graph {

std::int64_t TensorType::elements() const {
  std::int64_t count = 1;
  for (std::int64_t extent : shape) count *= extent;
  return count;
}

std::int64_t TensorType::bytes() const { return elements() * element_bytes(storage.element); }

Tensor Tensor::zeros(TensorType type) {
  Tensor tensor{std::move(type), {}};
  const std::int64_t bytes = tensor.type.bytes();
  host_allocation(static_cast<std::uint64_t>(bytes), "a " + type_text(tensor.type) + " tensor",
                  [&] { tensor.bytes.assign(static_cast<std::size_t>(bytes), 0); });
  return tensor;
}

Tensor Tensor::from_floats(TensorType type, std::span<const float> values) {
  Tensor tensor = zeros(std::move(type));
  if (static_cast<std::int64_t>(values.size()) != tensor.elements())
    throw_failure("tensor", "{} values given for a tensor of {} elements", values.size(),
                  tensor.elements());
  const StorageType storage = tensor.type.storage;
  std::uint8_t* out = tensor.bytes.data();
  switch (storage.element) {
    case ElementType::F32:
      if (!values.empty()) std::memcpy(out, values.data(), values.size() * 4);  // empty: null pointers
      break;
    case ElementType::F16:
      for (std::size_t i = 0; i < values.size(); ++i) {
        std::uint16_t half = float_to_half(values[i]);
        std::memcpy(out + 2 * i, &half, 2);
      }
      break;
    default:
      for (std::size_t i = 0; i < values.size(); ++i)
        out[i] = float_to_fp8(values[i], storage.element, storage.scale);
  }
  return tensor;
}

float Tensor::at(std::int64_t flat_index) const {
  const StorageType storage = type.storage;
  const std::uint8_t* in = bytes.data();
  switch (storage.element) {
    case ElementType::F32: {
      float value;
      std::memcpy(&value, in + 4 * flat_index, 4);
      return value;
    }
    case ElementType::F16: {
      std::uint16_t half;
      std::memcpy(&half, in + 2 * flat_index, 2);
      return half_to_float(half);
    }
    default: return fp8_to_float(in[flat_index], storage.element, storage.scale);
  }
}

std::vector<float> Tensor::to_floats() const {
  std::vector<float> values;
  host_allocation(static_cast<std::uint64_t>(elements()) * sizeof(float), "the values of a " + type_text(type) + " tensor",
                  [&] { values.resize(static_cast<std::size_t>(elements())); });
  for (std::int64_t i = 0; i < elements(); ++i) values[static_cast<std::size_t>(i)] = at(i);
  return values;
}

}  // namespace tilec::graph
