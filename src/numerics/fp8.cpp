#include "numerics/fp8.h"

#include "numerics/fp16.h"
#include "support/error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace tilec {

namespace {

constexpr Fp8Spec kF143{4, 3, 8, 240.0f, false};
constexpr Fp8Spec kF152{5, 2, 16, 57344.0f, false};
constexpr Fp8Spec kE4M3{4, 3, 7, 448.0f, true};
constexpr Fp8Spec kE5M2{5, 2, 15, 57344.0f, true};

bool is_nan_code(std::uint8_t code, ElementType type) {
  switch (type) {
    case ElementType::F143:
    case ElementType::F152: return code == 0x80;
    case ElementType::E4M3: return (code & 0x7f) == 0x7f;
    case ElementType::E5M2: return (code & 0x7c) == 0x7c && (code & 0x03) != 0;
    default: return false;
  }
}

bool is_infinity_code(std::uint8_t code, ElementType type) {
  return type == ElementType::E5M2 && (code & 0x7f) == 0x7c;
}

float decode(std::uint8_t code, ElementType type) {
  const Fp8Spec& spec = fp8_spec(type);
  if (is_nan_code(code, type)) return std::numeric_limits<float>::quiet_NaN();
  bool negative = code & 0x80;
  if (is_infinity_code(code, type))
    return negative ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  int exponent = (code >> spec.mantissa_bits) & ((1 << spec.exponent_bits) - 1);
  int mantissa = code & ((1 << spec.mantissa_bits) - 1);
  float magnitude = exponent == 0
                        ? std::ldexp(static_cast<float>(mantissa), 1 - spec.bias - spec.mantissa_bits)
                        : std::ldexp(static_cast<float>(mantissa + (1 << spec.mantissa_bits)),
                                     exponent - spec.bias - spec.mantissa_bits);
  return negative ? -magnitude : magnitude;
}

struct Tables {
  std::array<float, 256> values{};
  // Positive finite values in ascending order with their codes (0x00..).
  std::vector<std::pair<float, std::uint8_t>> positive;
};

Tables build(ElementType type) {
  Tables tables;
  for (int code = 0; code < 256; ++code) tables.values[code] = decode(static_cast<std::uint8_t>(code), type);
  for (int code = 0; code < 0x80; ++code) {
    float value = tables.values[code];
    if (std::isfinite(value)) tables.positive.emplace_back(value, static_cast<std::uint8_t>(code));
  }
  std::sort(tables.positive.begin(), tables.positive.end());
  return tables;
}

const Tables& tables_of(ElementType type) {
  static const Tables f143 = build(ElementType::F143);
  static const Tables f152 = build(ElementType::F152);
  static const Tables e4m3 = build(ElementType::E4M3);
  static const Tables e5m2 = build(ElementType::E5M2);
  switch (type) {
    case ElementType::F143: return f143;
    case ElementType::F152: return f152;
    case ElementType::E4M3: return e4m3;
    case ElementType::E5M2: return e5m2;
    default: throw_failure("fp8", "{} is not an FP8 format", element_type_name(type));
  }
}

}  // namespace

const Fp8Spec& fp8_spec(ElementType type) {
  switch (type) {
    case ElementType::F143: return kF143;
    case ElementType::F152: return kF152;
    case ElementType::E4M3: return kE4M3;
    case ElementType::E5M2: return kE5M2;
    default: throw_failure("fp8", "{} is not an FP8 format", element_type_name(type));
  }
}

const std::array<float, 256>& fp8_table(ElementType type) { return tables_of(type).values; }

float fp8_to_float(std::uint8_t code, ElementType type) { return tables_of(type).values[code]; }

std::uint8_t float_to_fp8(float value, ElementType type) {
  const Tables& tables = tables_of(type);
  const Fp8Spec& spec = fp8_spec(type);
  if (std::isnan(value)) {
    if (type == ElementType::F143 || type == ElementType::F152) return 0x80;
    std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
    return sign | (type == ElementType::E4M3 ? 0x7f : 0x7e);
  }
  bool negative = std::signbit(value);
  float magnitude = std::fabs(value);
  const auto& positive = tables.positive;
  std::uint8_t code;
  if (magnitude >= spec.largest) {
    code = positive.back().second;  // saturate (infinities too)
  } else {
    // First value >= magnitude; the answer is it or its predecessor.
    auto upper = std::lower_bound(positive.begin(), positive.end(), std::make_pair(magnitude, std::uint8_t{0}));
    if (upper->first == magnitude || upper == positive.begin()) {
      code = upper->second;
    } else {
      auto lower = upper - 1;
      double midpoint = (static_cast<double>(lower->first) + upper->first) / 2;
      if (magnitude < midpoint) code = lower->second;
      else if (magnitude > midpoint) code = upper->second;
      else code = (lower->second & 1) ? upper->second : lower->second;
    }
  }
  if (code == 0 && !spec.has_negative_zero) return 0;
  return negative ? static_cast<std::uint8_t>(code | 0x80) : code;
}

float fp8_to_float(std::uint8_t code, ElementType type, int scale) {
  return std::ldexp(fp8_to_float(code, type), scale);
}

std::uint8_t float_to_fp8(float value, ElementType type, int scale) {
  return float_to_fp8(std::ldexp(value, -scale), type);
}

float round_to_storage(float value, StorageType storage) {
  switch (storage.element) {
    case ElementType::F32: return value;
    case ElementType::F16: return round_to_half(value);
    default: return fp8_to_float(float_to_fp8(value, storage.element, storage.scale), storage.element, storage.scale);
  }
}

}  // namespace tilec
