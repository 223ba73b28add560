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
    case ElementType::F16: {
      std::vector<std::uint16_t> halves(values.size());
      floats_to_halves(values, halves.data());
      if (!halves.empty()) std::memcpy(out, halves.data(), 2 * halves.size());
      break;
    }
    default: floats_to_fp8(values, storage.element, storage.scale, out);
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

std::vector<float> Tensor::to_floats() const { return to_floats(0, elements()); }

std::vector<float> Tensor::to_floats(std::int64_t first, std::int64_t count) const {
  TILEC_CHECK(first >= 0 && count >= 0 && first + count <= elements(), "elements [{}, {}) of a {} tensor", first,
              first + count, type_text(type));
  std::vector<float> values;
  host_allocation(static_cast<std::uint64_t>(count) * sizeof(float), "the values of a " + type_text(type) + " tensor",
                  [&] { values.resize(static_cast<std::size_t>(count)); });
  const auto begin = static_cast<std::size_t>(first);
  switch (type.storage.element) {
    case ElementType::F32:
      if (!values.empty()) std::memcpy(values.data(), bytes.data() + 4 * begin, 4 * values.size());
      break;
    case ElementType::F16: {
      std::vector<std::uint16_t> halves(values.size());
      if (!halves.empty()) std::memcpy(halves.data(), bytes.data() + 2 * begin, 2 * halves.size());
      halves_to_floats(halves.data(), values);
      break;
    }
    default:
      for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = fp8_to_float(bytes[begin + i], type.storage.element, type.storage.scale);
  }
  return values;
}

}  // namespace tilec::graph
