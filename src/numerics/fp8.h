// FP8 formats: Graphcore F143 and F152 (the chip's own) and OCP E4M3FN and
// E5M2 (for interchange).
//
// Rounding (float -> FP8): to nearest representable value, ties to the even
// code (the one whose lowest mantissa bit is 0). Saturation: a finite value
// beyond the largest finite magnitude becomes that magnitude with its sign,
// and so do infinities. NaN becomes the format's NaN (0x80 for F143/F152;
// 0x7f with the sign bit kept for E4M3; 0x7e with the sign bit kept for
// E5M2). A value that rounds to zero is +0 in F143/F152 (they have no -0:
// their 0x80 is NaN) and keeps its sign in E4M3/E5M2.
//
// Scale: an FP8 tensor carries a power-of-two exponent s; code c stands for
// decode(c) * 2^s, and encoding value v stores encode(v * 2^-s).
#pragma once

#include "numerics/element_type.h"

#include <array>
#include <cstdint>
#include <span>

namespace tilec {

struct Fp8Spec {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  float largest;       // largest finite magnitude
  bool has_negative_zero;
};

// `type` must be an FP8 element type.
const Fp8Spec& fp8_spec(ElementType type);

// Decoded value of a code, without scale. NaN codes give NaN.
float fp8_to_float(std::uint8_t code, ElementType type);
std::uint8_t float_to_fp8(float value, ElementType type);

// With a power-of-two scale exponent.
float fp8_to_float(std::uint8_t code, ElementType type, int scale);
std::uint8_t float_to_fp8(float value, ElementType type, int scale);

// All 256 decoded values of a format (no scale), for fast bulk decoding.
const std::array<float, 256>& fp8_table(ElementType type);

// The value after storing it as `storage` and reading it back.
float round_to_storage(float value, StorageType storage);

// The same conversions over arrays, bit for bit those above, with the
// format's tables looked up once. `codes` has room for values.size().
void floats_to_fp8(std::span<const float> values, ElementType type, int scale, std::uint8_t* codes);
void round_to_storage(std::span<float> values, StorageType storage);

}  // namespace tilec
