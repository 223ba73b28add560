// FP8 conversions of all four formats, checked code by code against decoders
// written here from each format's definition.
#include "numerics/fp8.h"

#include "support/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tilec {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr float kFloatInfinity = std::numeric_limits<float>::infinity();

// Sign, then an exponent field e and mantissa field m: e = 0 is subnormal
// m * 2^(1 - bias - mbits), otherwise (2^mbits + m) * 2^(e - bias - mbits).
double finite_value(std::uint8_t code, int mantissa_bits, int bias) {
  const int mantissa = code & ((1 << mantissa_bits) - 1);
  const int exponent = (code & 0x7f) >> mantissa_bits;
  const double magnitude = exponent == 0
                               ? std::ldexp(mantissa, 1 - bias - mantissa_bits)
                               : std::ldexp((1 << mantissa_bits) + mantissa, exponent - bias - mantissa_bits);
  return (code & 0x80) ? -magnitude : magnitude;
}

// The formats' definitions, including which codes are special.
double reference_decode(std::uint8_t code, ElementType type) {
  switch (type) {
    case ElementType::F143:  // 1.4.3, bias 8; 0x80 (the would-be -0) is the only NaN
      return code == 0x80 ? kNaN : finite_value(code, 3, 8);
    case ElementType::F152:  // 1.5.2, bias 16; 0x80 is the only NaN
      return code == 0x80 ? kNaN : finite_value(code, 2, 16);
    case ElementType::E4M3:  // OCP E4M3FN, bias 7; S.1111.111 is NaN, no infinities
      return (code & 0x7f) == 0x7f ? kNaN : finite_value(code, 3, 7);
    case ElementType::E5M2:  // OCP E5M2, bias 15; exponent 31 is infinity (m = 0) or NaN
      if ((code & 0x7c) == 0x7c) return (code & 0x03) ? kNaN : ((code & 0x80) ? -kInfinity : kInfinity);
      return finite_value(code, 2, 15);
    default: return kNaN;
  }
}

struct Format {
  ElementType type;
  double largest;
  double smallest_subnormal;
  double smallest_normal;
  std::uint8_t largest_code;
  std::uint8_t smallest_normal_code;
  bool has_negative_zero;
};

const Format kFormats[] = {
    {ElementType::F143, 240.0, 0x1p-10, 0x1p-7, 0x7f, 0x08, false},
    {ElementType::F152, 57344.0, 0x1p-17, 0x1p-15, 0x7f, 0x04, false},
    {ElementType::E4M3, 448.0, 0x1p-9, 0x1p-6, 0x7e, 0x08, true},
    {ElementType::E5M2, 57344.0, 0x1p-16, 0x1p-14, 0x7b, 0x04, true},
};

std::string name_of(const Format& format) { return std::string(element_type_name(format.type)); }

// The code a negative value of magnitude |code| gets (F143/F152 have no -0).
std::uint8_t negated(std::uint8_t code, const Format& format) {
  if (code == 0 && !format.has_negative_zero) return 0;
  return static_cast<std::uint8_t>(code | 0x80);
}

// Positive finite codes in ascending order of value, by the reference decoder.
std::vector<std::uint8_t> positive_codes(const Format& format) {
  std::vector<std::uint8_t> codes;
  for (int code = 0; code < 0x80; ++code) {
    double value = reference_decode(static_cast<std::uint8_t>(code), format.type);
    if (std::isfinite(value)) codes.push_back(static_cast<std::uint8_t>(code));
  }
  std::sort(codes.begin(), codes.end(), [&](std::uint8_t a, std::uint8_t b) {
    return reference_decode(a, format.type) < reference_decode(b, format.type);
  });
  return codes;
}

bool same_float(float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }

TEST(Fp8, DecodesAllCodesLikeTheFormatDefinitions) {
  for (const Format& format : kFormats) {
    const auto& table = fp8_table(format.type);
    for (int code = 0; code < 256; ++code) {
      const auto byte = static_cast<std::uint8_t>(code);
      const double expected = reference_decode(byte, format.type);
      const float decoded = fp8_to_float(byte, format.type);
      if (std::isnan(expected)) {
        EXPECT_TRUE(std::isnan(decoded)) << name_of(format) << " code " << code;
      } else {
        EXPECT_EQ(static_cast<double>(decoded), expected) << name_of(format) << " code " << code;
        EXPECT_EQ(std::signbit(decoded), std::signbit(expected)) << name_of(format) << " code " << code;
      }
      EXPECT_TRUE(same_float(table[code], decoded)) << name_of(format) << " code " << code;
    }
  }
}

TEST(Fp8, NaNCodesAreExactlyTheDefinedOnes) {
  for (const Format& format : kFormats) {
    std::vector<int> nan_codes;
    for (int code = 0; code < 256; ++code)
      if (std::isnan(fp8_to_float(static_cast<std::uint8_t>(code), format.type))) nan_codes.push_back(code);
    std::vector<int> expected;
    switch (format.type) {
      case ElementType::E4M3: expected = {0x7f, 0xff}; break;
      case ElementType::E5M2: expected = {0x7d, 0x7e, 0x7f, 0xfd, 0xfe, 0xff}; break;
      default: expected = {0x80};
    }
    EXPECT_EQ(nan_codes, expected) << name_of(format);
  }
  EXPECT_EQ(fp8_to_float(0x7c, ElementType::E5M2), kFloatInfinity);
  EXPECT_EQ(fp8_to_float(0xfc, ElementType::E5M2), -kFloatInfinity);
}

TEST(Fp8, EncodingADecodedCodeGivesItBack) {
  for (const Format& format : kFormats) {
    for (int code = 0; code < 256; ++code) {
      const auto byte = static_cast<std::uint8_t>(code);
      const float value = fp8_to_float(byte, format.type);
      if (std::isnan(value) || std::isinf(value)) continue;  // NaN and E5M2 infinities: below
      EXPECT_EQ(float_to_fp8(value, format.type), byte) << name_of(format) << " code " << code;
    }
    EXPECT_EQ(float_to_fp8(-0.0f, format.type), format.has_negative_zero ? 0x80 : 0x00) << name_of(format);
    EXPECT_EQ(float_to_fp8(0.0f, format.type), 0x00) << name_of(format);
  }
}

// Between every two adjacent codes of either sign: the midpoint goes to the
// even code, the floats just inside it to the nearer code.
TEST(Fp8, RoundsMidpointsToEvenAndNeighboursToNearest) {
  for (const Format& format : kFormats) {
    const auto codes = positive_codes(format);
    for (std::size_t i = 0; i + 1 < codes.size(); ++i) {
      const std::uint8_t low = codes[i], high = codes[i + 1];
      ASSERT_EQ(high, low + 1) << name_of(format);  // codes count up with value
      const double exact_midpoint = (reference_decode(low, format.type) + reference_decode(high, format.type)) / 2;
      const float midpoint = static_cast<float>(exact_midpoint);
      ASSERT_EQ(static_cast<double>(midpoint), exact_midpoint);
      const std::uint8_t even = (low & 1) ? high : low;
      const float below = std::nextafter(midpoint, 0.0f);
      const float above = std::nextafter(midpoint, kFloatInfinity);
      const std::string where = name_of(format) + " between codes " + std::to_string(low) + " and " +
                                std::to_string(high);
      EXPECT_EQ(float_to_fp8(midpoint, format.type), even) << where;
      EXPECT_EQ(float_to_fp8(below, format.type), low) << where;
      EXPECT_EQ(float_to_fp8(above, format.type), high) << where;
      EXPECT_EQ(float_to_fp8(-midpoint, format.type), negated(even, format)) << where;
      EXPECT_EQ(float_to_fp8(-below, format.type), negated(low, format)) << where;
      EXPECT_EQ(float_to_fp8(-above, format.type), negated(high, format)) << where;
    }
  }
}

TEST(Fp8, SaturatesAtTheLargestFiniteValue) {
  for (const Format& format : kFormats) {
    const float largest = static_cast<float>(format.largest);
    const std::uint8_t max_code = format.largest_code;
    const std::uint8_t min_code = static_cast<std::uint8_t>(max_code | 0x80);
    for (float beyond : {largest, std::nextafter(largest, kFloatInfinity), largest * 1.0625f, largest * 1.5f,
                         largest * 4.0f, std::numeric_limits<float>::max(), kFloatInfinity}) {
      EXPECT_EQ(float_to_fp8(beyond, format.type), max_code) << name_of(format) << " " << beyond;
      EXPECT_EQ(float_to_fp8(-beyond, format.type), min_code) << name_of(format) << " " << -beyond;
    }
    EXPECT_EQ(fp8_to_float(max_code, format.type), largest) << name_of(format);
    EXPECT_EQ(fp8_spec(format.type).largest, largest) << name_of(format);
  }
}

TEST(Fp8, NaNBecomesTheNaNCode) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(float_to_fp8(nan, ElementType::F143), 0x80);
  EXPECT_EQ(float_to_fp8(-nan, ElementType::F143), 0x80);
  EXPECT_EQ(float_to_fp8(nan, ElementType::F152), 0x80);
  EXPECT_EQ(float_to_fp8(-nan, ElementType::F152), 0x80);
  EXPECT_EQ(float_to_fp8(nan, ElementType::E4M3), 0x7f);
  EXPECT_EQ(float_to_fp8(-nan, ElementType::E4M3), 0xff);
  EXPECT_EQ(float_to_fp8(nan, ElementType::E5M2), 0x7e);
  EXPECT_EQ(float_to_fp8(-nan, ElementType::E5M2), 0xfe);
  for (const Format& format : kFormats)
    EXPECT_TRUE(std::isnan(round_to_storage(nan, {format.type, 3}))) << name_of(format);
}

TEST(Fp8, GoldenValues) {
  for (const Format& format : kFormats) {
    const ElementType type = format.type;
    EXPECT_EQ(float_to_fp8(static_cast<float>(format.smallest_subnormal), type), 0x01) << name_of(format);
    EXPECT_EQ(fp8_to_float(0x01, type), static_cast<float>(format.smallest_subnormal)) << name_of(format);
    EXPECT_EQ(float_to_fp8(static_cast<float>(format.smallest_normal), type), format.smallest_normal_code)
        << name_of(format);
    // Half the smallest subnormal ties with zero (even); a little more rounds up.
    const float half_subnormal = static_cast<float>(format.smallest_subnormal / 2);
    EXPECT_EQ(float_to_fp8(half_subnormal, type), 0x00) << name_of(format);
    EXPECT_EQ(float_to_fp8(std::nextafter(half_subnormal, 1.0f), type), 0x01) << name_of(format);
    EXPECT_EQ(float_to_fp8(-half_subnormal, type), format.has_negative_zero ? 0x80 : 0x00) << name_of(format);
    // 1.5 subnormal quanta ties between codes 1 and 2: even is 2.
    EXPECT_EQ(float_to_fp8(static_cast<float>(format.smallest_subnormal * 1.5), type), 0x02) << name_of(format);
  }
  // F143: 1.0 is exponent field 8 (0x40); 1.0625 ties 1.0/1.125 -> 1.0; 1.1875 ties 1.125/1.25 -> 1.25.
  EXPECT_EQ(float_to_fp8(1.0f, ElementType::F143), 0x40);
  EXPECT_EQ(float_to_fp8(1.0625f, ElementType::F143), 0x40);
  EXPECT_EQ(float_to_fp8(1.1875f, ElementType::F143), 0x42);
  EXPECT_EQ(float_to_fp8(-1.1875f, ElementType::F143), 0xc2);
  EXPECT_EQ(float_to_fp8(232.0f, ElementType::F143), 0x7e);  // ties 224/240 -> 224 (0x7e, even)
  EXPECT_EQ(float_to_fp8(0.1f, ElementType::F143), 0x25);    // 0.1015625 = 1.625 * 2^-4
  // F152: 1.0 is 0x40; 1.125 ties 1.0/1.25 -> 1.0; 1.375 ties 1.25/1.5 -> 1.5.
  EXPECT_EQ(float_to_fp8(1.0f, ElementType::F152), 0x40);
  EXPECT_EQ(float_to_fp8(1.125f, ElementType::F152), 0x40);
  EXPECT_EQ(float_to_fp8(1.375f, ElementType::F152), 0x42);
  // OCP: 1.0 is 0x38 (E4M3) and 0x3c (E5M2); E4M3 400 ties 384/416 -> 384 (0x7c),
  // 432 ties 416/448 -> 448 (0x7e).
  EXPECT_EQ(float_to_fp8(1.0f, ElementType::E4M3), 0x38);
  EXPECT_EQ(float_to_fp8(400.0f, ElementType::E4M3), 0x7c);
  EXPECT_EQ(float_to_fp8(432.0f, ElementType::E4M3), 0x7e);
  EXPECT_EQ(float_to_fp8(1.0f, ElementType::E5M2), 0x3c);
  EXPECT_EQ(float_to_fp8(-57344.0f, ElementType::E5M2), 0xfb);
}

TEST(Fp8, ScaleMultipliesByAPowerOfTwo) {
  for (const Format& format : kFormats) {
    const auto codes = positive_codes(format);
    for (int scale = -12; scale <= 12; ++scale) {
      for (int code = 0; code < 256; ++code) {
        const auto byte = static_cast<std::uint8_t>(code);
        const double value = reference_decode(byte, format.type);
        const float decoded = fp8_to_float(byte, format.type, scale);
        if (std::isnan(value)) {
          EXPECT_TRUE(std::isnan(decoded));
          continue;
        }
        EXPECT_EQ(static_cast<double>(decoded), std::ldexp(value, scale)) << name_of(format) << " " << code;
        if (std::isfinite(value)) {
          EXPECT_EQ(float_to_fp8(decoded, format.type, scale), byte) << name_of(format) << " " << code;
        }
      }
      // Scaled midpoints still tie to even, and saturation moves with the scale.
      for (std::size_t i = 0; i + 1 < codes.size(); ++i) {
        const double midpoint =
            (reference_decode(codes[i], format.type) + reference_decode(codes[i + 1], format.type)) / 2;
        const std::uint8_t even = (codes[i] & 1) ? codes[i + 1] : codes[i];
        EXPECT_EQ(float_to_fp8(static_cast<float>(std::ldexp(midpoint, scale)), format.type, scale), even);
      }
      const float beyond = static_cast<float>(std::ldexp(format.largest * 2, scale));
      EXPECT_EQ(float_to_fp8(beyond, format.type, scale), format.largest_code);
      const StorageType storage{format.type, scale};
      EXPECT_EQ(round_to_storage(beyond, storage), static_cast<float>(std::ldexp(format.largest, scale)));
    }
  }
}

// Random floats against nearest-value search over the reference decoder.
TEST(Fp8, AgreesWithNearestValueSearchOnRandomFloats) {
  std::uint64_t state = 0x2545f4914f6cdd1dull;
  for (const Format& format : kFormats) {
    const auto codes = positive_codes(format);
    std::vector<double> values;
    for (std::uint8_t code : codes) values.push_back(reference_decode(code, format.type));
    for (int i = 0; i < 200000; ++i) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      // Magnitudes spread over the format's range and a little beyond.
      const double unit = static_cast<double>(state >> 11) * 0x1p-53;
      const double magnitude = std::ldexp(1.0 + unit, static_cast<int>(state % 48) - 24);
      const float value = static_cast<float>((state & (1ull << 10)) ? -magnitude : magnitude);
      const double target = std::fabs(static_cast<double>(value));
      // First value above the target; the answer is it or the one before.
      const std::size_t k = std::upper_bound(values.begin(), values.end(), target) - values.begin();
      std::uint8_t expected = codes.back();
      if (k < codes.size()) {
        const double midpoint = (values[k - 1] + values[k]) / 2;
        expected = target < midpoint   ? codes[k - 1]
                   : target > midpoint ? codes[k]
                                       : ((codes[k - 1] & 1) ? codes[k] : codes[k - 1]);
      }
      if (value < 0) expected = negated(expected, format);
      ASSERT_EQ(float_to_fp8(value, format.type), expected) << name_of(format) << " " << value;
      // The same value stored under a scale.
      const int scale = static_cast<int>((state >> 20) % 41) - 20;
      ASSERT_EQ(float_to_fp8(std::ldexp(value, scale), format.type, scale), expected)
          << name_of(format) << " " << value << " scale " << scale;
    }
  }
}

// Scales far from zero: float subnormals and huge values still land on codes.
TEST(Fp8, ExtremeScales) {
  EXPECT_EQ(float_to_fp8(0x1p-140f, ElementType::F143, -130), 0x01);   // 2^-10: the smallest subnormal
  EXPECT_EQ(float_to_fp8(0x1p-149f, ElementType::F143, -139), 0x01);   // from the smallest float
  EXPECT_EQ(float_to_fp8(0x1p-149f, ElementType::F143, -138), 0x00);   // half a quantum: tie to 0
  EXPECT_EQ(float_to_fp8(0x1.8p-148f, ElementType::F143, -138), 0x02); // 1.5 quanta: tie to 2
  EXPECT_EQ(fp8_to_float(0x40, ElementType::F143, -149), 0x1p-149f);  // 1.0 * 2^-149
  EXPECT_EQ(fp8_to_float(0x40, ElementType::F143, -150), 0.0f);       // ties to even: zero
  EXPECT_EQ(fp8_to_float(0x7f, ElementType::F143, 120), 0x1.ep127f);  // 240 * 2^120
  EXPECT_EQ(fp8_to_float(0x7f, ElementType::F143, 121), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp8_to_float(0x40, ElementType::F143, 127), 0x1p127f);
  EXPECT_EQ(fp8_to_float(0x40, ElementType::F143, -200), 0.0f);
  EXPECT_EQ(float_to_fp8(0x1p100f, ElementType::F152, 100), 0x40);
  EXPECT_EQ(float_to_fp8(0x1p100f, ElementType::F152, 50), 0x7f);    // saturates
  EXPECT_EQ(float_to_fp8(0x1p-100f, ElementType::E4M3, 100), 0x00);   // underflows
  EXPECT_EQ(float_to_fp8(-0x1p-100f, ElementType::E4M3, 100), 0x80);
}

TEST(Fp8, RoundToStorageCoversEveryElementType) {
  EXPECT_EQ(round_to_storage(0.1f, {ElementType::F32, 0}), 0.1f);
  EXPECT_EQ(round_to_storage(0.1f, {ElementType::F16, 0}), 0.0999755859375f);
  EXPECT_EQ(round_to_storage(0.1f, {ElementType::F143, 0}), 0.1015625f);
  EXPECT_EQ(round_to_storage(0.01f, {ElementType::F143, 0}), 0.009765625f);  // 1.25 * 2^-7
  // Scaled by 2^4, 0.01 falls among the subnormals: 0.64 of the quantum 2^-10 -> 2^-10.
  EXPECT_EQ(round_to_storage(0.01f, {ElementType::F143, 4}), 0.015625f);
  EXPECT_EQ(round_to_storage(1000.0f, {ElementType::F143, 0}), 240.0f);
  EXPECT_EQ(round_to_storage(1000.0f, {ElementType::F143, 2}), 960.0f);
}

// The array conversions give the scalar ones' bits for every format and
// element type, NaNs, infinities and saturation included.
TEST(Fp8, ArrayConversionsAreTheScalarOnes) {
  std::vector<float> values;
  std::uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    values.push_back(std::bit_cast<float>(state));
  }
  for (float special : {0.0f, -0.0f, 1000.0f, -1e30f, std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN(), 0x1p-149f, 0x1p-126f, -0x1p-127f})
    values.push_back(special);
  // Every code's value and every midpoint between neighbours, with their
  // neighbouring floats, at the scales below.
  const std::size_t plain = values.size();
  for (const Format& format : kFormats) {
    const auto codes = positive_codes(format);
    for (std::size_t i = 0; i < codes.size(); ++i) {
      const double value = reference_decode(codes[i], format.type);
      const double next = i + 1 < codes.size() ? reference_decode(codes[i + 1], format.type) : 2 * value;
      for (double point : {value, (value + next) / 2}) {
        const float f = static_cast<float>(point);
        for (float near : {f, std::nextafter(f, 0.0f), std::nextafter(f, 1e30f)}) {
          values.push_back(near);
          values.push_back(-near);
        }
      }
    }
  }
  for (const Format& format : kFormats)
    for (int scale : {-130, -64, -20, -4, 0, 7, 64, 100}) {
      std::vector<float> inputs = values;
      for (std::size_t i = plain; i < inputs.size(); ++i) inputs[i] = std::ldexp(values[i], scale);
      std::vector<std::uint8_t> codes(inputs.size());
      floats_to_fp8(inputs, format.type, scale, codes.data());
      std::vector<float> rounded = inputs;
      round_to_storage(rounded, {format.type, scale});
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        ASSERT_EQ(codes[i], float_to_fp8(inputs[i], format.type, scale))
            << name_of(format) << " scale " << scale << " " << inputs[i];
        const float expected = round_to_storage(inputs[i], {format.type, scale});
        ASSERT_EQ(std::bit_cast<std::uint32_t>(rounded[i]), std::bit_cast<std::uint32_t>(expected))
            << name_of(format) << " " << i;
      }
    }
  for (ElementType type : {ElementType::F32, ElementType::F16}) {
    std::vector<float> rounded = values;
    round_to_storage(rounded, {type, 0});
    for (std::size_t i = 0; i < values.size(); ++i)
      ASSERT_EQ(std::bit_cast<std::uint32_t>(rounded[i]),
                std::bit_cast<std::uint32_t>(round_to_storage(values[i], {type, 0})));
  }
}

TEST(Fp8, NonFp8TypesAreRejected) {
  EXPECT_THROW(fp8_spec(ElementType::F16), Error);
  EXPECT_THROW(fp8_table(ElementType::F32), Error);
  EXPECT_THROW(float_to_fp8(1.0f, ElementType::F32), Error);
}

TEST(ElementTypes, NamesRoundTrip) {
  for (ElementType type : {ElementType::F32, ElementType::F16, ElementType::F143, ElementType::F152,
                           ElementType::E4M3, ElementType::E5M2}) {
    EXPECT_EQ(parse_element_type(element_type_name(type)), type);
  }
  EXPECT_EQ(parse_element_type("f8"), std::nullopt);
  EXPECT_EQ(element_bytes(ElementType::F32), 4u);
  EXPECT_EQ(element_bytes(ElementType::F16), 2u);
  EXPECT_EQ(element_bytes(ElementType::E5M2), 1u);
  EXPECT_FALSE(is_fp8(ElementType::F16));
  EXPECT_TRUE(is_fp8(ElementType::F143));
}

}  // namespace
}  // namespace tilec
