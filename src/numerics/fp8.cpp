#include "numerics/fp8.h"

#include "numerics/fp16.h"
#include "support/error.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

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
  std::uint8_t largest_code = 0;  // of the largest positive finite value
};

Tables build(ElementType type) {
  Tables tables;
  for (int code = 0; code < 256; ++code) tables.values[code] = decode(static_cast<std::uint8_t>(code), type);
  for (int code = 0; code < 0x80; ++code)
    if (tables.values[code] == fp8_spec(type).largest) tables.largest_code = static_cast<std::uint8_t>(code);
  return tables;
}

// The code of |value| / 2^scale, `magnitude_bits` being the bits of a finite
// non-negative float or +infinity. Rounds the float's 24-bit significand to
// the format's quantum at its exponent, ties to even, then saturates.
std::uint8_t encode_magnitude(std::uint32_t magnitude_bits, int scale, const Fp8Spec& spec,
                              std::uint8_t largest_code) {
  if (magnitude_bits >= 0x7f800000u) return largest_code;
  if (magnitude_bits == 0) return 0;
  // value = significand * 2^(exponent - 23), significand in [2^23, 2^24).
  int exponent = static_cast<int>(magnitude_bits >> 23) - 127;
  std::uint32_t significand = (magnitude_bits & 0x7fffffu) | 0x800000u;
  if ((magnitude_bits >> 23) == 0) {  // float subnormal
    significand = magnitude_bits;
    exponent = -126;
    while ((significand & 0x800000u) == 0) {
      significand <<= 1;
      --exponent;
    }
  }
  exponent -= scale;
  const int smallest_normal_exponent = 1 - spec.bias;
  const int largest_exponent = (1 << spec.exponent_bits) - 1 - spec.bias;
  if (exponent > largest_exponent) return largest_code;
  // Bits of the significand below the quantum 2^(max(exponent, smallest normal) - mantissa bits).
  const int shift = 23 - spec.mantissa_bits + std::max(smallest_normal_exponent - exponent, 0);
  if (shift > 24) return 0;  // under half the smallest subnormal
  std::uint32_t quanta = significand >> shift;
  const std::uint32_t remainder = significand & ((1u << shift) - 1u);
  const std::uint32_t halfway = 1u << (shift - 1);
  if (remainder > halfway || (remainder == halfway && (quanta & 1u))) ++quanta;
  // Normal codes count quanta on from their exponent field; a carry out of
  // the mantissa moves to the next exponent, as it should.
  const std::uint32_t code =
      exponent >= smallest_normal_exponent
          ? (static_cast<std::uint32_t>(exponent - smallest_normal_exponent) << spec.mantissa_bits) + quanta
          : quanta;
  return code > largest_code ? largest_code : static_cast<std::uint8_t>(code);
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

std::uint8_t float_to_fp8(float value, ElementType type) { return float_to_fp8(value, type, 0); }

namespace {

float scaled(float value, int scale) {
  // Multiplying by an exact power of two rounds as ldexp does, and is faster.
  if (scale >= -126 && scale <= 127) return value * std::bit_cast<float>(static_cast<std::uint32_t>(scale + 127) << 23);
  return std::ldexp(value, scale);
}

}  // namespace

float fp8_to_float(std::uint8_t code, ElementType type, int scale) { return scaled(fp8_to_float(code, type), scale); }

namespace {

std::uint8_t encode(float value, ElementType type, int scale, const Fp8Spec& spec, const Tables& tables) {
  if (std::isnan(value)) {
    if (type == ElementType::F143 || type == ElementType::F152) return 0x80;
    std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
    return sign | (type == ElementType::E4M3 ? 0x7f : 0x7e);
  }
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint8_t code = encode_magnitude(bits & 0x7fffffffu, scale, spec, tables.largest_code);
  if (code == 0 && !spec.has_negative_zero) return 0;
  return (bits >> 31) ? static_cast<std::uint8_t>(code | 0x80) : code;
}

}  // namespace

std::uint8_t float_to_fp8(float value, ElementType type, int scale) {
  return encode(value, type, scale, fp8_spec(type), tables_of(type));
}

namespace {

// Encoding by table. Every format rounds at float mantissa bit 20 or above
// (it keeps at most 3 mantissa bits), so the code of a magnitude depends on
// its top 16 bits and on whether its low 16 bits are zero (a tie needs them
// so): 2^16 entries, indexed (magnitude >> 16) << 1 | (low bits != 0).
// Scaling first by 2^-scale is exact whenever the result is a normal float;
// when it is not, the value is far below half the smallest subnormal of
// every format and its code is 0 either way.
class TableEncoder {
 public:
  TableEncoder(ElementType type, int scale)
      : type_(type), spec_(fp8_spec(type)), tables_(tables_of(type)), codes_(codes_of(type)),
        unscale_(std::ldexp(1.0f, -scale)) {}

  // Scales whose 2^-scale is a normal float far from the ends of its range.
  static bool handles(int scale) { return scale >= -64 && scale <= 64; }

  std::uint8_t operator()(float value) const {
    if (std::isnan(value)) return encode(value, type_, 0, spec_, tables_);
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value * unscale_);
    const std::uint32_t magnitude = bits & 0x7fffffffu;
    const std::uint8_t code = codes_[(magnitude >> 16) << 1 | ((magnitude & 0xffffu) != 0)];
    if (code == 0 && !spec_.has_negative_zero) return 0;
    return (bits >> 31) ? static_cast<std::uint8_t>(code | 0x80) : code;
  }

 private:
  using Codes = std::array<std::uint8_t, 1 << 16>;

  static Codes build_codes(ElementType type) {
    Codes codes{};
    for (std::uint32_t index = 0; index < codes.size(); ++index)
      codes[index] = encode_magnitude((index >> 1) << 16 | (index & 1u), 0, fp8_spec(type), tables_of(type).largest_code);
    return codes;
  }

  static const Codes& codes_of(ElementType type) {
    static const Codes f143 = build_codes(ElementType::F143), f152 = build_codes(ElementType::F152),
                       e4m3 = build_codes(ElementType::E4M3), e5m2 = build_codes(ElementType::E5M2);
    switch (type) {
      case ElementType::F143: return f143;
      case ElementType::F152: return f152;
      case ElementType::E4M3: return e4m3;
      default: return e5m2;
    }
  }

  ElementType type_;
  const Fp8Spec& spec_;
  const Tables& tables_;
  const Codes& codes_;
  float unscale_;
};

}  // namespace

void floats_to_fp8(std::span<const float> values, ElementType type, int scale, std::uint8_t* codes) {
  if (!TableEncoder::handles(scale)) {
    for (std::size_t i = 0; i < values.size(); ++i) codes[i] = float_to_fp8(values[i], type, scale);
    return;
  }
  const TableEncoder encode_value(type, scale);
  for (std::size_t i = 0; i < values.size(); ++i) codes[i] = encode_value(values[i]);
}

void round_to_storage(std::span<float> values, StorageType storage) {
  if (storage.element == ElementType::F32) return;
  if (storage.element == ElementType::F16) return round_to_half(values);
  if (!TableEncoder::handles(storage.scale)) {
    for (float& value : values) value = round_to_storage(value, storage);
    return;
  }
  const TableEncoder encode_value(storage.element, storage.scale);
  const Tables& tables = tables_of(storage.element);
  for (float& value : values) value = scaled(tables.values[encode_value(value)], storage.scale);
}

float round_to_storage(float value, StorageType storage) {
  switch (storage.element) {
    case ElementType::F32: return value;
    case ElementType::F16: return round_to_half(value);
    default: return fp8_to_float(float_to_fp8(value, storage.element, storage.scale), storage.element, storage.scale);
  }
}

}  // namespace tilec
