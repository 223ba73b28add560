#include "numerics/fp16.h"

#include <bit>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace tilec {

namespace {

constexpr float decode_half(std::uint16_t bits) {
  std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  std::uint32_t exponent = (bits >> 10) & 0x1fu;
  std::uint32_t mantissa = bits & 0x3ffu;
  std::uint32_t out;
  if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x00400000u : 0u);
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;
  } else {
    // Subnormal half: normalise into a float.
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    out = sign | ((113 - shift) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(out);
}

constexpr std::array<float, 65536> build_table() {
  std::array<float, 65536> result{};
  for (std::uint32_t i = 0; i < 65536; ++i) result[i] = decode_half(static_cast<std::uint16_t>(i));
  return result;
}

}  // namespace

namespace detail {
constinit const std::array<float, 65536> half_to_float_table = build_table();
}

std::uint16_t float_to_half(float value) {
  std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // infinity or NaN
    if (magnitude == 0x7f800000u) return sign | 0x7c00u;
    return sign | 0x7e00u | static_cast<std::uint16_t>((magnitude >> 13) & 0x1ffu);
  }
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // rounds beyond 65,504
  if (magnitude < 0x38800000u) {
    // Result is subnormal or zero: align to the half subnormal quantum 2^-24.
    if (magnitude < 0x33000000u) return sign;  // below half of 2^-24: zero
    std::uint32_t exponent = magnitude >> 23;
    std::uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    std::uint32_t shift = 126 - exponent;  // 14 + (113 - exponent) - 1
    std::uint32_t result = mantissa >> shift;
    std::uint32_t remainder = mantissa & ((1u << shift) - 1u);
    std::uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
    return sign | static_cast<std::uint16_t>(result);
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits.
  std::uint32_t result = (magnitude - 0x38000000u) >> 13;
  std::uint32_t remainder = magnitude & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result;
  return sign | static_cast<std::uint16_t>(result);
}

namespace {

#if defined(__AVX512F__)
constexpr std::size_t kLanes = 16;

// The CPU's conversion gives float_to_half's bits for every float, NaN
// payloads included (tests/numerics/fp16_test.cpp compares them).
__m256i halves_of(__m512 values) {
  return _mm512_maskz_cvtps_ph(0xffff, values, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
__m512 floats_of(__m256i halves) { return _mm512_maskz_cvtph_ps(0xffff, halves); }
#endif

}  // namespace

void floats_to_halves(std::span<const float> values, std::uint16_t* halves) {
  std::size_t i = 0;
#if defined(__AVX512F__)
  for (; i + kLanes <= values.size(); i += kLanes)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(halves + i), halves_of(_mm512_loadu_ps(values.data() + i)));
#endif
  for (; i < values.size(); ++i) halves[i] = float_to_half(values[i]);
}

void halves_to_floats(const std::uint16_t* halves, std::span<float> values) {
  std::size_t i = 0;
#if defined(__AVX512F__)
  for (; i + kLanes <= values.size(); i += kLanes)
    _mm512_storeu_ps(values.data() + i,
                     floats_of(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(halves + i))));
#endif
  for (; i < values.size(); ++i) values[i] = half_to_float(halves[i]);
}

void round_to_half(std::span<float> values) {
  std::size_t i = 0;
#if defined(__AVX512F__)
  for (; i + kLanes <= values.size(); i += kLanes)
    _mm512_storeu_ps(values.data() + i, floats_of(halves_of(_mm512_loadu_ps(values.data() + i))));
#endif
  for (; i < values.size(); ++i) values[i] = round_to_half(values[i]);
}

}  // namespace tilec
