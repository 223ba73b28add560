// IEEE binary16 conversions, checked exhaustively against an oracle written
// here from the format definition (1 sign bit, 5 exponent bits with bias 15,
// 10 mantissa bits; exponent 0 is subnormal, 31 is infinity/NaN), and against
// the CPU's own F16C conversion where the build target has it.
#include "numerics/fp16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#ifdef __F16C__
#include <immintrin.h>
#endif

namespace tilec {
namespace {

constexpr std::uint16_t kPositiveInfinity = 0x7c00;
constexpr std::uint16_t kLargestFinite = 0x7bff;  // 65504

bool is_half_nan(std::uint16_t code) { return (code & 0x7c00) == 0x7c00 && (code & 0x03ff) != 0; }

// The value of a half code from the format definition, in double.
double half_value(std::uint16_t code) {
  const int exponent = (code >> 10) & 0x1f;
  const int mantissa = code & 0x3ff;
  const double sign = (code & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0x1f)
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// Nearest half to a float, ties to the even code, overflow to infinity from
// the midpoint between 65504 and 2^16 (65520) up. Works by comparing against
// exact midpoints of adjacent halves, so it shares no logic with the code
// under test.
std::uint16_t oracle_float_to_half(float value) {
  const std::uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const double magnitude = std::fabs(static_cast<double>(value));
  if (std::isnan(value)) return 0x7e00 | sign;
  if (magnitude >= 65520.0) return sign | kPositiveInfinity;
  // Positive codes are ordered like their values; find the bracketing pair.
  std::uint16_t low = 0, high = kLargestFinite;
  while (high - low > 1) {
    std::uint16_t middle = static_cast<std::uint16_t>((low + high) / 2);
    (half_value(middle) <= magnitude ? low : high) = middle;
  }
  if (half_value(high) <= magnitude) low = high;
  if (half_value(low) == magnitude || low == kLargestFinite) return sign | low;
  const double midpoint = (half_value(low) + half_value(low + 1)) / 2;  // exact
  if (magnitude < midpoint) return sign | low;
  if (magnitude > midpoint) return sign | static_cast<std::uint16_t>(low + 1);
  return sign | ((low & 1) ? static_cast<std::uint16_t>(low + 1) : low);
}

float float_from_bits(std::uint32_t bits) { return std::bit_cast<float>(bits); }
std::uint32_t bits_of(float value) { return std::bit_cast<std::uint32_t>(value); }

TEST(Fp16, DecodesEveryCodeLikeTheFormatDefinition) {
  for (std::uint32_t code = 0; code < 65536; ++code) {
    const float decoded = half_to_float(static_cast<std::uint16_t>(code));
    const double expected = half_value(static_cast<std::uint16_t>(code));
    if (is_half_nan(static_cast<std::uint16_t>(code))) {
      EXPECT_TRUE(std::isnan(decoded)) << code;
      EXPECT_EQ(std::signbit(decoded), (code & 0x8000) != 0) << code;
      continue;
    }
    EXPECT_EQ(static_cast<double>(decoded), expected) << code;
    EXPECT_EQ(std::signbit(decoded), (code & 0x8000) != 0) << code;
  }
}

TEST(Fp16, HalfToFloatToHalfIsTheIdentityForEveryCode) {
  for (std::uint32_t code = 0; code < 65536; ++code) {
    const std::uint16_t half = static_cast<std::uint16_t>(code);
    const std::uint16_t back = float_to_half(half_to_float(half));
    if (is_half_nan(half)) {
      EXPECT_TRUE(is_half_nan(back)) << code;
      EXPECT_EQ(back & 0x8000, half & 0x8000) << code;
    } else {
      EXPECT_EQ(back, half) << code;
    }
  }
}

// For every pair of adjacent finite halves of either sign: the exact midpoint
// goes to the even code, the floats on either side of it to the near code.
TEST(Fp16, RoundsEveryMidpointToEvenAndItsNeighboursToNearest) {
  for (std::uint16_t sign : {std::uint16_t{0}, std::uint16_t{0x8000}}) {
    for (std::uint16_t low = 0; low < kLargestFinite; ++low) {
      const std::uint16_t high = static_cast<std::uint16_t>(low + 1);
      const double lower_value = half_value(low), upper_value = half_value(high);
      const float midpoint = static_cast<float>((lower_value + upper_value) / 2);
      ASSERT_EQ(static_cast<double>(midpoint), (lower_value + upper_value) / 2);  // exact in float
      const float signed_midpoint = sign ? -midpoint : midpoint;
      const std::uint16_t even = (low & 1) ? high : low;
      EXPECT_EQ(float_to_half(signed_midpoint), sign | even) << low;
      const float below = std::nextafter(midpoint, 0.0f);
      const float above = std::nextafter(midpoint, std::numeric_limits<float>::infinity());
      EXPECT_EQ(float_to_half(sign ? -below : below), sign | low) << low;
      EXPECT_EQ(float_to_half(sign ? -above : above), sign | high) << low;
    }
  }
}

TEST(Fp16, OverflowsToInfinityFrom65520) {
  EXPECT_EQ(float_to_half(65504.0f), kLargestFinite);
  EXPECT_EQ(float_to_half(std::nextafter(65520.0f, 0.0f)), kLargestFinite);
  EXPECT_EQ(float_to_half(65520.0f), kPositiveInfinity);
  EXPECT_EQ(float_to_half(-65520.0f), 0xfc00);
  EXPECT_EQ(float_to_half(65536.0f), kPositiveInfinity);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::max()), kPositiveInfinity);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), kPositiveInfinity);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xfc00);
}

TEST(Fp16, SubnormalsAndUnderflow) {
  const float smallest_subnormal = std::ldexp(1.0f, -24);
  const float smallest_normal = std::ldexp(1.0f, -14);
  EXPECT_EQ(float_to_half(smallest_subnormal), 0x0001);
  EXPECT_EQ(half_to_float(0x0001), smallest_subnormal);
  EXPECT_EQ(float_to_half(smallest_normal), 0x0400);
  EXPECT_EQ(half_to_float(0x03ff), std::ldexp(1023.0f, -24));  // largest subnormal
  // Half the smallest subnormal is a tie with zero: even is zero.
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(float_to_half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);  // just above the tie
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 quanta: tie to even 2
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(float_to_half(std::ldexp(2047.0f, -25)), 0x0400);
  // Float subnormals and the smallest floats vanish, keeping their sign.
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::denorm_min()), 0x8000);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::min()), 0x8000);
}

TEST(Fp16, SignedZerosAndNaNs) {
  EXPECT_EQ(float_to_half(0.0f), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
  EXPECT_EQ(half_to_float(0x8000), 0.0f);
  const float quiet = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(is_half_nan(float_to_half(quiet)));
  EXPECT_EQ(float_to_half(-quiet) & 0x8000, 0x8000);
  // A signalling NaN whose payload lies only in the dropped bits stays NaN.
  EXPECT_TRUE(is_half_nan(float_to_half(float_from_bits(0x7f800001u))));
  EXPECT_TRUE(is_half_nan(float_to_half(float_from_bits(0xff800001u))));
  EXPECT_TRUE(std::isnan(round_to_half(quiet)));
}

TEST(Fp16, GoldenValues) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(0.1f), 0x2e66);
  EXPECT_EQ(float_to_half(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(float_to_half(3.14159265f), 0x4248);
  EXPECT_EQ(half_to_float(0x3bff), 1.0f - std::ldexp(1.0f, -11));
  EXPECT_EQ(round_to_half(1.0f + std::ldexp(1.0f, -11)), 1.0f);  // tie to even
  EXPECT_EQ(round_to_half(1.0f + std::ldexp(3.0f, -11)), 1.0f + std::ldexp(1.0f, -9));
}

// A small xorshift generator: the test only needs varied bit patterns.
struct BitPatterns {
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  std::uint32_t next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<std::uint32_t>(state >> 16);
  }
};

TEST(Fp16, AgreesWithTheOracleOnRandomFloats) {
  BitPatterns patterns;
  for (int i = 0; i < 300000; ++i) {
    const float value = float_from_bits(patterns.next());
    const std::uint16_t got = float_to_half(value);
    const std::uint16_t expected = oracle_float_to_half(value);
    if (std::isnan(value)) {
      ASSERT_TRUE(is_half_nan(got)) << bits_of(value);
      ASSERT_EQ(got & 0x8000, expected & 0x8000) << bits_of(value);
    } else {
      ASSERT_EQ(got, expected) << std::hex << bits_of(value);
    }
  }
}

// The array conversions give the scalar ones' bits, on every length (the
// vectorised body and the scalar tail), NaNs and infinities included.
TEST(Fp16, ArrayConversionsAreTheScalarOnes) {
  BitPatterns patterns;
  std::vector<float> values(100'003);
  for (float& value : values) value = float_from_bits(patterns.next());
  values[5] = std::numeric_limits<float>::infinity();
  values[17] = -std::numeric_limits<float>::quiet_NaN();
  values[40] = 65520.0f;
  values[41] = std::ldexp(3.0f, -25);
  for (std::size_t length : {std::size_t{0}, std::size_t{7}, std::size_t{16}, std::size_t{33}, values.size()}) {
    const std::span<const float> part(values.data(), length);
    std::vector<std::uint16_t> halves(length);
    floats_to_halves(part, halves.data());
    std::vector<float> rounded(part.begin(), part.end()), decoded(length);
    round_to_half(rounded);
    halves_to_floats(halves.data(), decoded);
    for (std::size_t i = 0; i < length; ++i) {
      ASSERT_EQ(halves[i], float_to_half(values[i])) << i;
      ASSERT_EQ(bits_of(rounded[i]), bits_of(round_to_half(values[i]))) << i;
      ASSERT_EQ(bits_of(decoded[i]), bits_of(half_to_float(halves[i]))) << i;
    }
  }
}

#ifdef __F16C__
std::uint16_t hardware_float_to_half(float value) {
  return static_cast<std::uint16_t>(_cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT));
}

void expect_matches_hardware(std::uint32_t bits) {
  const float value = float_from_bits(bits);
  const std::uint16_t got = float_to_half(value);
  const std::uint16_t expected = hardware_float_to_half(value);
  if (got != expected) FAIL() << std::hex << "float bits 0x" << bits << ": got 0x" << got
                              << ", F16C gives 0x" << expected;
}

// Bit-exact against the CPU, NaN payloads included.
TEST(Fp16, MatchesF16COnMillionsOfRandomFloats) {
  BitPatterns patterns;
  for (int i = 0; i < (1 << 24); ++i) {
    expect_matches_hardware(patterns.next());
    if (HasFatalFailure()) return;
  }
}

// Every float of the range where halves live, to catch anything random
// sampling misses: magnitudes 2^-26 .. 2^17 in steps of 13 ulps.
TEST(Fp16, MatchesF16COverTheWholeHalfRange) {
  for (std::uint32_t bits = 0x32800000u; bits < 0x48000000u; bits += 13) {
    expect_matches_hardware(bits);
    expect_matches_hardware(bits | 0x80000000u);
    if (HasFatalFailure()) return;
  }
}

TEST(Fp16, DecodingMatchesF16C) {
  for (std::uint32_t code = 0; code < 65536; ++code) {
    const float expected = _cvtsh_ss(static_cast<unsigned short>(code));
    EXPECT_EQ(bits_of(half_to_float(static_cast<std::uint16_t>(code))), bits_of(expected)) << code;
  }
}
#endif

}  // namespace
}  // namespace tilec
