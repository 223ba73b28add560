// Storage formats of tensor elements, and the scale that FP8 tensors carry.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tilec {

enum class ElementType : std::uint8_t {
  F32,   // IEEE binary32
  F16,   // IEEE binary16
  F143,  // Graphcore FP8 1.4.3: bias 8, largest 240, NaN 0x80, no -0
  F152,  // Graphcore FP8 1.5.2: bias 16, largest 57,344, NaN 0x80, no -0
  E4M3,  // OCP E4M3FN: bias 7, largest 448, NaN 0x7f/0xff, has -0
  E5M2,  // OCP E5M2: bias 15, largest 57,344, infinities and NaNs, has -0
};

constexpr bool is_fp8(ElementType type) {
  return type != ElementType::F32 && type != ElementType::F16;
}

constexpr std::uint32_t element_bytes(ElementType type) {
  return type == ElementType::F32 ? 4 : type == ElementType::F16 ? 2 : 1;
}

// "f32", "f16", "f143", "f152", "e4m3", "e5m2".
std::string_view element_type_name(ElementType type);
std::optional<ElementType> parse_element_type(std::string_view name);

// A storage format with its power-of-two scale: a stored code c means
// decode(c) * 2^scale. The scale is always 0 for f32 and f16.
struct StorageType {
  ElementType element = ElementType::F32;
  int scale = 0;

  bool operator==(const StorageType&) const = default;
  auto operator<=>(const StorageType&) const = default;
};

}  // namespace tilec
