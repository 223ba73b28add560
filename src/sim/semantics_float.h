// Included through sim/semantics.h, which defines SEMANTICS(id).
//
// Semantics of the float-slot instructions (AMP, vector arithmetic,
// conversions): one function per instruction of isa/instructions.def. Each
// reads all its operands before it writes its result, so a destination may
// name a source.
//
// Rounding follows docs/isa.md: FP32 lanes are IEEE single precision; FP16
// lanes are computed in FP32 and rounded once to FP16 (exact for +, x and
// max: FP32 has more than twice FP16's precision); the products of FP8 and
// FP16 operands are exact in FP32, so each AMP multiply-accumulate rounds
// once, when it adds.
#pragma once

#include "numerics/element_type.h"
#include "numerics/fp16.h"
#include "numerics/fp8.h"
#include "numerics/reference_ops.h"
#include "sim/exec.h"

#include <cmath>

namespace tilec::sim::semantics {

// ---- lanes ----
inline float lane_f32(const std::uint32_t* words, int lane) { return std::bit_cast<float>(words[lane]); }
inline std::uint32_t f32_bits(float value) { return std::bit_cast<std::uint32_t>(value); }
inline std::uint16_t lane_f16(const std::uint32_t* words, int lane) {
  return static_cast<std::uint16_t>(words[lane >> 1] >> (16 * (lane & 1)));
}
inline void set_lane_f16(std::uint32_t* words, int lane, std::uint16_t half) {
  int shift = 16 * (lane & 1);
  words[lane >> 1] = (words[lane >> 1] & ~(0xffffu << shift)) | (std::uint32_t{half} << shift);
}
inline std::uint8_t lane_f8(const std::uint32_t* words, int lane) {
  return static_cast<std::uint8_t>(words[lane >> 2] >> (8 * (lane & 3)));
}
inline void set_lane_f8(std::uint32_t* words, int lane, std::uint8_t code) {
  int shift = 8 * (lane & 3);
  words[lane >> 2] = (words[lane >> 2] & ~(0xffu << shift)) | (std::uint32_t{code} << shift);
}
inline ElementType fp8_type(std::int32_t format) {
  return format == 0 ? ElementType::F143 : ElementType::F152;
}

// aD (quad) = op(aA, aB) lane by lane, FP32.
template <typename X, typename Op>
inline void f32_lanes(X& x, Op op) {
  const std::uint32_t* a = x.a(1);
  const std::uint32_t* b = x.a(2);
  std::uint32_t out[4];
  for (int lane = 0; lane < 4; ++lane) out[lane] = f32_bits(op(lane_f32(a, lane), lane_f32(b, lane)));
  x.write_a(0, out, 4);
}
// aD (quad) = op(aA) lane by lane, FP32.
template <typename X, typename Op>
inline void f32_unary(X& x, Op op) {
  const std::uint32_t* a = x.a(1);
  std::uint32_t out[4];
  for (int lane = 0; lane < 4; ++lane) out[lane] = f32_bits(op(lane_f32(a, lane)));
  x.write_a(0, out, 4);
}
// aD (quad) = op(aA, aB) over eight FP16 lanes, computed in FP32, rounded once.
template <typename X, typename Op>
inline void f16_lanes(X& x, Op op) {
  const std::uint32_t* a = x.a(1);
  const std::uint32_t* b = x.a(2);
  std::uint32_t out[4] = {};
  for (int lane = 0; lane < 8; ++lane)
    set_lane_f16(out, lane,
                 float_to_half(op(half_to_float(lane_f16(a, lane)), half_to_float(lane_f16(b, lane)))));
  x.write_a(0, out, 4);
}

// ---- AMP ----
// Eight FP32 lanes as one value (a GCC vector extension): the compiler
// emits one vector multiply and one vector add per accumulator row, lane by
// lane exactly the scalar `acc + a * b`.
using Lanes8 = float __attribute__((vector_size(32)));

// acc[r][8*blk + c] += A[r] * B[c]: the FP8 codes decoded by table, then
// 16 rows of an 8-lane multiply-add.
inline void amp_f8(float (&acc)[16][16], int block, const std::uint8_t* a, const std::uint8_t* b,
                   const float* table_a, const float* table_b) {
  // Decoded into memory and loaded whole: quicker than inserting lane by lane.
  alignas(32) float decoded[8];
  for (int c = 0; c < 8; ++c) decoded[c] = table_b[b[c]];
  Lanes8 column;
  std::memcpy(&column, decoded, sizeof column);
  for (int r = 0; r < 16; ++r) {
    Lanes8 row;
    std::memcpy(&row, &acc[r][8 * block], sizeof row);
    row = row + table_a[a[r]] * column;
    std::memcpy(&acc[r][8 * block], &row, sizeof row);
  }
}

SEMANTICS(Fnop) {}
// The worker's own AMP counts, for its profile event.
template <typename X>
inline void count_amp(X& x, std::uint32_t macs) {
  x.ctx.amp_instructions += 1;
  x.ctx.amp_macs += macs;
}

SEMANTICS(Ampf8) {
  if (!x.tile.config->amp_fp8) [[unlikely]]
    x.fault("amp.f8 on a machine whose AMP takes no FP8 (its amp-types are f16/f32)");
  std::uint8_t a[16], b[8];
  std::memcpy(a, x.a(0), 16);
  std::memcpy(b, x.a(1), 8);
  amp_f8(x.ctx.acc, x.imm(2), a, b, x.fp8_table(3), x.fp8_table(4));
  x.tile.stats.amp_macs[static_cast<int>(AmpPrecision::Fp8)] += 128;
  count_amp(x, 128);
}
SEMANTICS(Ampf16) {
  const std::uint32_t* a = x.a(0);
  const std::uint32_t* b = x.a(1);
  float av[8], bv[8];
  for (int i = 0; i < 8; ++i) {
    av[i] = half_to_float(lane_f16(a, i));
    bv[i] = half_to_float(lane_f16(b, i));
  }
  int block = x.imm(2);
  for (int r = 0; r < 8; ++r) {
    float* row = &x.ctx.acc[8 * (block >> 1) + r][8 * (block & 1)];
    for (int c = 0; c < 8; ++c) row[c] = row[c] + av[r] * bv[c];
  }
  x.tile.stats.amp_macs[static_cast<int>(AmpPrecision::Fp16)] += 64;
  count_amp(x, 64);
}
SEMANTICS(Ampf32) {
  const std::uint32_t* a = x.a(0);
  const std::uint32_t* b = x.a(1);
  int block = x.imm(2);
  for (int r = 0; r < 4; ++r) {
    float* row = &x.ctx.acc[4 * (block >> 2) + r][4 * (block & 3)];
    for (int c = 0; c < 4; ++c) row[c] = std::fma(lane_f32(a, r), lane_f32(b, c), row[c]);
  }
  x.tile.stats.amp_macs[static_cast<int>(AmpPrecision::Fp32)] += 16;
  count_amp(x, 16);
}
SEMANTICS(Accz) {
  for (auto& row : x.ctx.acc)
    for (float& value : row) value = 0.0f;
}
// Scaling by 2^scale (a normal FP32 number for any 6-bit scale) is one
// correctly rounded multiply, exact unless it leaves FP32's range, where the
// FP16 result is 0 or infinity anyway: so one rounding, to FP16.
inline float power_of_two(std::int32_t exponent) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(exponent + 127) << 23);
}
SEMANTICS(Accrdf16) {
  const float* row = &x.ctx.acc[x.imm(1)][8 * x.imm(2)];
  const float scale = power_of_two(x.imm(3));
  std::uint32_t out[4] = {};
  for (int lane = 0; lane < 8; ++lane) set_lane_f16(out, lane, float_to_half(row[lane] * scale));
  x.write_a(0, out, 4);
}
SEMANTICS(Accrdf32) {
  const float* row = &x.ctx.acc[x.imm(1)][4 * x.imm(2)];
  const float scale = power_of_two(x.imm(3));
  std::uint32_t out[4];
  for (int lane = 0; lane < 4; ++lane) out[lane] = f32_bits(row[lane] * scale);
  x.write_a(0, out, 4);
}

// ---- vector arithmetic ----
SEMANTICS(F32v4add) { f32_lanes(x, [](float a, float b) { return a + b; }); }
SEMANTICS(F32v4sub) { f32_lanes(x, [](float a, float b) { return a - b; }); }
SEMANTICS(F32v4mul) { f32_lanes(x, [](float a, float b) { return a * b; }); }
SEMANTICS(F32v4max) { f32_lanes(x, [](float a, float b) { return std::fmax(a, b); }); }
SEMANTICS(F32v4min) { f32_lanes(x, [](float a, float b) { return std::fmin(a, b); }); }
SEMANTICS(F32v4mac) {
  const std::uint32_t* a = x.a(1);
  const std::uint32_t* b = x.a(2);
  const std::uint32_t* d = x.a(0);
  std::uint32_t out[4];
  for (int lane = 0; lane < 4; ++lane)
    out[lane] = f32_bits(std::fma(lane_f32(a, lane), lane_f32(b, lane), lane_f32(d, lane)));
  x.write_a(0, out, 4);
}
SEMANTICS(F16v8add) { f16_lanes(x, [](float a, float b) { return a + b; }); }
SEMANTICS(F16v8mul) { f16_lanes(x, [](float a, float b) { return a * b; }); }
SEMANTICS(F16v8max) { f16_lanes(x, [](float a, float b) { return std::fmax(a, b); }); }
SEMANTICS(F32v4adds) {
  float scalar = x.f(2);
  f32_unary(x, [scalar](float a) { return a + scalar; });
}
SEMANTICS(F32v4muls) {
  float scalar = x.f(2);
  f32_unary(x, [scalar](float a) { return a * scalar; });
}
// FP32 lanes plus FP16 lanes, widened exactly: one rounding, as
// f16tof32lo/hi then f32v4add, in half the float-slot issues.
template <typename X>
inline void f32_add_f16(X& x, int first_lane) {
  const std::uint32_t* a = x.a(1);
  const std::uint32_t* b = x.a(2);
  std::uint32_t out[4];
  for (int lane = 0; lane < 4; ++lane)
    out[lane] = f32_bits(lane_f32(a, lane) + half_to_float(lane_f16(b, first_lane + lane)));
  x.write_a(0, out, 4);
}
SEMANTICS(F32v4addlo) { f32_add_f16(x, 0); }
SEMANTICS(F32v4addhi) { f32_add_f16(x, 4); }
SEMANTICS(F32v4tanh) { f32_unary(x, [](float a) { return std::tanh(a); }); }
SEMANTICS(F32v4exp) { f32_unary(x, [](float a) { return std::exp(a); }); }
SEMANTICS(F32v4erf) { f32_unary(x, [](float a) { return std::erf(a); }); }
SEMANTICS(F32v4rsqrt) { f32_unary(x, [](float a) { return 1.0f / std::sqrt(a); }); }
SEMANTICS(F32v4recip) { f32_unary(x, [](float a) { return 1.0f / a; }); }
SEMANTICS(F32v4mov) { f32_unary(x, [](float a) { return a; }); }
SEMANTICS(F32v4gelu) {
  if (x.imm(2) == 0) f32_unary(x, [](float a) { return reference::gelu_tanh(a); });
  else f32_unary(x, [](float a) { return reference::gelu_erf(a); });
}
SEMANTICS(F16v4gelu) {
  const std::uint32_t* a = x.a(1);
  bool exact = x.imm(2) != 0;
  std::uint32_t out[2] = {};
  for (int lane = 0; lane < 4; ++lane) {
    float value = half_to_float(lane_f16(a, lane));
    set_lane_f16(out, lane, float_to_half(exact ? reference::gelu_erf(value) : reference::gelu_tanh(value)));
  }
  x.write_a(0, out, 2);
}
SEMANTICS(F32v4hsum) {
  const std::uint32_t* a = x.a(1);
  std::uint32_t out = f32_bits((lane_f32(a, 0) + lane_f32(a, 1)) + (lane_f32(a, 2) + lane_f32(a, 3)));
  x.write_a(0, &out, 1);
}
SEMANTICS(F32v4hmax) {
  const std::uint32_t* a = x.a(1);
  std::uint32_t out = f32_bits(
      std::fmax(std::fmax(lane_f32(a, 0), lane_f32(a, 1)), std::fmax(lane_f32(a, 2), lane_f32(a, 3))));
  x.write_a(0, &out, 1);
}
SEMANTICS(F32v4splat) {
  std::uint32_t value = *x.a(1);
  std::uint32_t out[4] = {value, value, value, value};
  x.write_a(0, out, 4);
}
SEMANTICS(F32v4zero) {
  std::uint32_t out[4] = {};
  x.write_a(0, out, 4);
}

// ---- conversions ----
template <typename X>
inline void f16_to_f32(X& x, int first_lane) {
  const std::uint32_t* a = x.a(1);
  std::uint32_t out[4];
  for (int lane = 0; lane < 4; ++lane) out[lane] = f32_bits(half_to_float(lane_f16(a, first_lane + lane)));
  x.write_a(0, out, 4);
}
SEMANTICS(F16tof32lo) { f16_to_f32(x, 0); }
SEMANTICS(F16tof32hi) { f16_to_f32(x, 4); }
SEMANTICS(F32tof16) {
  const std::uint32_t* a = x.a(1);
  std::uint32_t out[2] = {};
  for (int lane = 0; lane < 4; ++lane) set_lane_f16(out, lane, float_to_half(lane_f32(a, lane)));
  x.write_a(0, out, 2);
}
// FP8 conversions: operands aD, aA, format, scale.
SEMANTICS(F16tof8) {
  const std::uint32_t* a = x.a(1);
  ElementType type = fp8_type(x.imm(2));
  std::uint32_t out[2] = {};
  for (int lane = 0; lane < 8; ++lane)
    set_lane_f8(out, lane, float_to_fp8(half_to_float(lane_f16(a, lane)), type, x.imm(3)));
  x.write_a(0, out, 2);
}
SEMANTICS(F8tof16) {
  const std::uint32_t* a = x.a(1);
  ElementType type = fp8_type(x.imm(2));
  std::uint32_t out[4] = {};
  for (int lane = 0; lane < 8; ++lane)
    set_lane_f16(out, lane, float_to_half(fp8_to_float(lane_f8(a, lane), type, x.imm(3))));
  x.write_a(0, out, 4);
}
SEMANTICS(F32tof8) {
  const std::uint32_t* a = x.a(1);
  ElementType type = fp8_type(x.imm(2));
  std::uint32_t out = 0;
  for (int lane = 0; lane < 4; ++lane)
    set_lane_f8(&out, lane, float_to_fp8(lane_f32(a, lane), type, x.imm(3)));
  x.write_a(0, &out, 1);
}
SEMANTICS(F8tof32) {
  const std::uint32_t* a = x.a(1);
  ElementType type = fp8_type(x.imm(2));
  std::uint32_t out[4];
  for (int lane = 0; lane < 4; ++lane) out[lane] = f32_bits(fp8_to_float(lane_f8(a, lane), type, x.imm(3)));
  x.write_a(0, out, 4);
}

}  // namespace tilec::sim::semantics
