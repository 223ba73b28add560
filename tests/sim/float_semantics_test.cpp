// Semantics of the float-slot instructions: vector arithmetic, conversions
// and the AMP. Each test loads input quads into $a0:3, $a4:7, $a8:11, runs
// float instructions, and reads back $a12:15 .. $a24:27.
#include "numerics/fp16.h"
#include "numerics/fp8.h"
#include "numerics/reference_ops.h"
#include "sim_test_support.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

namespace tilec::sim {
namespace {

using namespace testing;

constexpr int kOut = 12;  // first output register: $a12:15, then $a16:19, $a20:23, $a24:27

std::uint32_t bits(float value) { return std::bit_cast<std::uint32_t>(value); }
float value(std::uint32_t word) { return std::bit_cast<float>(word); }
std::uint32_t halves(std::uint16_t low, std::uint16_t high) { return low | (std::uint32_t{high} << 16); }
std::uint16_t half(float x) { return float_to_half(x); }

// Runs `instructions` (float slot) after loading 12 input words; returns
// the 16 words of $a12..$a27.
std::vector<std::uint32_t> run_float(const std::vector<std::uint32_t>& inputs,
                                     const std::vector<isa::Instruction>& instructions) {
  std::vector<std::uint32_t> padded = inputs;
  padded.resize(12);
  Code code;
  code.set(1, kInterleavedData);
  for (int quad = 0; quad < 3; ++quad) code.main(Opcode::Ld128, {4 * quad, 1, 16 * quad});
  for (const isa::Instruction& instruction : instructions) code.both(isa::nop(), instruction);
  for (int quad = 0; quad < 4; ++quad) code.main(Opcode::St128, {kOut + 4 * quad, 1, 64 + 16 * quad});
  code.main(Opcode::Halt);
  package::Package package =
      package_of(1, image(code, {data_segment(".in", kInterleavedData, as_bytes(padded))}));
  package.bindings.push_back(
      dense_binding("out", package::BindingRole::Output, f32_type({16}), 0, kInterleavedData + 64));
  Device device(package, ipu21_cut(1));
  device.run();
  graph::Tensor out = device.read("out");
  std::vector<std::uint32_t> words(16);
  std::memcpy(words.data(), out.bytes.data(), 64);
  return words;
}

std::vector<std::uint32_t> floats(std::initializer_list<float> values) {
  std::vector<std::uint32_t> words;
  for (float v : values) words.push_back(bits(v));
  return words;
}

TEST(VectorSemantics, F32LaneArithmetic) {
  const float big = 1.0f + std::ldexp(1.0f, -23);
  std::vector<std::uint32_t> in = floats({1.5f, -2.0f, big, 3.0f, 0.25f, 4.0f, big, std::nanf("")});
  std::vector<std::uint32_t> d = floats({10.0f, 1.0f, -(1.0f + std::ldexp(1.0f, -22)), 0.0f});
  in.insert(in.end(), d.begin(), d.end());
  std::vector<std::uint32_t> out = run_float(in, {
      ins(Opcode::F32v4add, {12, 0, 4}), ins(Opcode::F32v4mul, {16, 0, 4}),
      ins(Opcode::F32v4max, {20, 0, 4}), ins(Opcode::F32v4mov, {24, 8}),
      ins(Opcode::F32v4mac, {24, 0, 4})});
  for (int lane = 0; lane < 4; ++lane) {
    float a = value(in[lane]), b = value(in[4 + lane]);
    EXPECT_EQ(out[lane], bits(a + b)) << lane;
    EXPECT_EQ(out[4 + lane], bits(a * b)) << lane;
    EXPECT_EQ(out[8 + lane], bits(std::fmax(a, b))) << lane;
  }
  // Fused: (1 + 2^-23)^2 - (1 + 2^-22) = 2^-46, which a separate multiply loses.
  EXPECT_EQ(value(out[14]), std::ldexp(1.0f, -46));
  EXPECT_EQ(value(out[12]), 10.0f + 1.5f * 0.25f);

  out = run_float(in, {ins(Opcode::F32v4sub, {12, 0, 4}), ins(Opcode::F32v4min, {16, 0, 4}),
                       ins(Opcode::F32v4adds, {20, 0, 5}), ins(Opcode::F32v4muls, {24, 0, 4})});
  for (int lane = 0; lane < 4; ++lane) {
    float a = value(in[lane]), b = value(in[4 + lane]);
    EXPECT_EQ(out[lane], bits(a - b)) << lane;
    EXPECT_EQ(out[4 + lane], bits(std::fmin(a, b))) << lane;
    EXPECT_EQ(out[8 + lane], bits(a + 4.0f)) << lane;
    EXPECT_EQ(out[12 + lane], bits(a * 0.25f)) << lane;
  }
}

TEST(VectorSemantics, TranscendentalsAndGelu) {
  std::vector<std::uint32_t> in = floats({-1.75f, 0.5f, 2.0f, 9.0f});
  std::vector<std::uint32_t> out = run_float(in, {
      ins(Opcode::F32v4tanh, {12, 0}), ins(Opcode::F32v4exp, {16, 0}),
      ins(Opcode::F32v4erf, {20, 0}), ins(Opcode::F32v4rsqrt, {24, 0})});
  for (int lane = 0; lane < 4; ++lane) {
    float x = value(in[lane]);
    EXPECT_EQ(out[lane], bits(std::tanh(x)));
    EXPECT_EQ(out[4 + lane], bits(std::exp(x)));
    EXPECT_EQ(out[8 + lane], bits(std::erf(x)));
    EXPECT_EQ(out[12 + lane], bits(1.0f / std::sqrt(x)));
  }
  out = run_float(in, {ins(Opcode::F32v4recip, {12, 0}), ins(Opcode::F32v4gelu, {16, 0, 0}),
                       ins(Opcode::F32v4gelu, {20, 0, 1})});
  for (int lane = 0; lane < 4; ++lane) {
    float x = value(in[lane]);
    EXPECT_EQ(out[lane], bits(1.0f / x));
    EXPECT_EQ(out[4 + lane], bits(reference::gelu_tanh(x)));
    EXPECT_EQ(out[8 + lane], bits(reference::gelu_erf(x)));
  }
  // FP16 GELU: four lanes of a pair, computed in FP32, rounded once.
  std::vector<std::uint16_t> h = {half(-1.5f), half(0.3f), half(2.5f), half(-0.01f)};
  out = run_float({halves(h[0], h[1]), halves(h[2], h[3])},
                  {ins(Opcode::F16v4gelu, {12, 0, 0}), ins(Opcode::F16v4gelu, {14, 0, 1})});
  for (int lane = 0; lane < 4; ++lane) {
    float x = half_to_float(h[lane]);
    EXPECT_EQ(static_cast<std::uint16_t>(out[lane / 2] >> (16 * (lane % 2))), half(reference::gelu_tanh(x)));
    EXPECT_EQ(static_cast<std::uint16_t>(out[2 + lane / 2] >> (16 * (lane % 2))), half(reference::gelu_erf(x)));
  }
}

TEST(VectorSemantics, HorizontalSplatAndZero) {
  std::vector<std::uint32_t> in = floats({1e8f, 1.0f, -1e8f, 1.0f, 7.0f});
  std::vector<std::uint32_t> out = run_float(in, {
      ins(Opcode::F32v4hsum, {12, 0}), ins(Opcode::F32v4hmax, {13, 0}),
      ins(Opcode::F32v4splat, {16, 4}), ins(Opcode::F32v4zero, {20})});
  EXPECT_EQ(value(out[0]), 0.0f);  // (1e8 + 1) + (-1e8 + 1) in FP32; left to right would give 1
  EXPECT_EQ(value(out[1]), 1e8f);
  EXPECT_EQ(out[4], bits(7.0f));
  EXPECT_EQ(out[7], bits(7.0f));
  EXPECT_EQ(out[8], 0u);
  EXPECT_EQ(out[11], 0u);
}

TEST(VectorSemantics, Fp16LanesRoundOnce) {
  // 2048 + 1 is halfway between the FP16 neighbours 2048 and 2050: it
  // rounds to the even one, 2048.
  std::vector<std::uint16_t> a = {half(2048), half(65504), half(-3.0f), half(0.1f),
                                  half(1.0f), half(2.0f), half(5.0f), half(-0.0f)};
  std::vector<std::uint16_t> b = {half(1), half(65504), half(1.5f), half(0.2f),
                                  half(1e-4f), half(3.0f), half(-7.0f), half(0.0f)};
  std::vector<std::uint32_t> in(12, 0);
  for (int lane = 0; lane < 8; lane += 2) {
    in[lane / 2] = halves(a[lane], a[lane + 1]);
    in[4 + lane / 2] = halves(b[lane], b[lane + 1]);
  }
  std::vector<std::uint32_t> out = run_float(in, {
      ins(Opcode::F16v8add, {12, 0, 4}), ins(Opcode::F16v8mul, {16, 0, 4}),
      ins(Opcode::F16v8max, {20, 0, 4})});
  auto lane_of = [&](int quad, int lane) {
    return static_cast<std::uint16_t>(out[4 * quad + lane / 2] >> (16 * (lane % 2)));
  };
  EXPECT_EQ(half_to_float(lane_of(0, 0)), 2048.0f);
  EXPECT_EQ(lane_of(0, 1), 0x7c00);  // overflow to infinity
  for (int lane = 0; lane < 8; ++lane) {
    float x = half_to_float(a[lane]), y = half_to_float(b[lane]);
    EXPECT_EQ(lane_of(0, lane), half(x + y)) << lane;
    EXPECT_EQ(lane_of(1, lane), half(x * y)) << lane;
    EXPECT_EQ(lane_of(2, lane), half(std::fmax(x, y))) << lane;
  }
}

TEST(ConversionSemantics, Fp16AndFp32) {
  std::vector<std::uint32_t> in = {halves(half(1.5f), half(-2.0f)), halves(half(65504), half(6e-8f)),
                                   halves(half(0.1f), half(3.0f)), halves(half(-0.5f), half(9.0f)),
                                   bits(1.0f + std::ldexp(1.0f, -11)), bits(70000.0f), bits(-1e-9f),
                                   bits(0.333333f)};
  std::vector<std::uint32_t> out = run_float(in, {
      ins(Opcode::F16tof32lo, {12, 0}), ins(Opcode::F16tof32hi, {16, 0}), ins(Opcode::F32tof16, {20, 4})});
  EXPECT_EQ(value(out[0]), 1.5f);
  EXPECT_EQ(value(out[1]), -2.0f);
  EXPECT_EQ(value(out[2]), 65504.0f);
  EXPECT_EQ(value(out[3]), half_to_float(half(6e-8f)));
  EXPECT_EQ(value(out[4]), half_to_float(half(0.1f)));
  EXPECT_EQ(value(out[7]), 9.0f);
  EXPECT_EQ(out[8] & 0xffff, half(1.0f));  // a tie: to even
  EXPECT_EQ(out[8] >> 16, 0x7c00u);        // overflow: infinity
  EXPECT_EQ(out[9] & 0xffff, 0x8000u);     // underflow keeps the sign
  EXPECT_EQ(out[9] >> 16, half(0.333333f));
  EXPECT_EQ(out[10], 0u);                  // $a22:23 are not written
}

// FP16 lanes added to FP32 lanes round once, as widening and then adding
// do: the combine kernels' FP16 partial sums rely on it.
TEST(VectorSemantics, Fp32PlusWidenedFp16) {
  std::vector<std::uint32_t> in = {halves(half(1.5f), half(-2.0f)), halves(half(65504), half(6e-8f)),
                                   halves(half(0.1f), half(3.0f)), halves(half(-0.5f), half(9.0f)),
                                   bits(1.0f), bits(std::ldexp(1.0f, 30)), bits(-1e-9f), bits(0.333333f)};
  std::vector<std::uint32_t> out =
      run_float(in, {ins(Opcode::F32v4addlo, {12, 4, 0}), ins(Opcode::F32v4addhi, {16, 4, 0})});
  const float sums[4] = {1.0f, std::ldexp(1.0f, 30), -1e-9f, 0.333333f};
  for (int lane = 0; lane < 8; ++lane) {
    const std::uint16_t h = static_cast<std::uint16_t>(in[static_cast<std::size_t>(lane / 2)] >> (16 * (lane % 2)));
    EXPECT_EQ(value(out[static_cast<std::size_t>(lane)]), sums[lane % 4] + half_to_float(h)) << lane;
  }
  EXPECT_EQ(value(out[0]), 2.5f);
  EXPECT_EQ(value(out[5]), std::ldexp(1.0f, 30));  // 2^30 + 3 rounds once, to 2^30
}

TEST(ConversionSemantics, Fp8WithScales) {
  std::vector<std::uint16_t> h = {half(1.0f), half(-3.0f), half(100.0f), half(1e4f),
                                  half(0.01f), half(-0.0f), half(7.5f), half(-240.0f)};
  std::vector<std::uint32_t> in(12, 0);
  for (int lane = 0; lane < 8; lane += 2) in[lane / 2] = halves(h[lane], h[lane + 1]);
  for (int lane = 0; lane < 4; ++lane) in[4 + lane] = bits(half_to_float(h[lane]) * 3.0f);
  in[8] = 0x80c1380fu;  // four FP8 codes
  in[9] = 0x01ff7f00u;
  std::vector<std::uint32_t> out = run_float(in, {
      ins(Opcode::F16tof8, {12, 0, 0, 2}), ins(Opcode::F16tof8, {14, 0, 1, -3}),
      ins(Opcode::F32tof8, {16, 4, 0, 1}), ins(Opcode::F8tof16, {20, 8, 1, 3}),
      ins(Opcode::F8tof32, {24, 8, 0, -2})});
  auto byte = [&](int word, int lane) { return static_cast<std::uint8_t>(out[word] >> (8 * lane)); };
  for (int lane = 0; lane < 8; ++lane) {
    float x = half_to_float(h[lane]);
    EXPECT_EQ(byte(lane / 4, lane % 4), float_to_fp8(x, ElementType::F143, 2)) << lane;
    EXPECT_EQ(byte(2 + lane / 4, lane % 4), float_to_fp8(x, ElementType::F152, -3)) << lane;
  }
  for (int lane = 0; lane < 4; ++lane)
    EXPECT_EQ(byte(4, lane), float_to_fp8(value(in[4 + lane]), ElementType::F143, 1)) << lane;
  for (int lane = 0; lane < 8; ++lane) {
    auto code = static_cast<std::uint8_t>(in[8 + lane / 4] >> (8 * (lane % 4)));
    auto got = static_cast<std::uint16_t>(out[8 + lane / 2] >> (16 * (lane % 2)));
    EXPECT_EQ(got, half(fp8_to_float(code, ElementType::F152, 3))) << lane;
  }
  for (int lane = 0; lane < 4; ++lane) {
    auto code = static_cast<std::uint8_t>(in[8] >> (8 * lane));
    float expected = fp8_to_float(code, ElementType::F143, -2);
    if (std::isnan(expected)) EXPECT_TRUE(std::isnan(value(out[12 + lane])));
    else EXPECT_EQ(value(out[12 + lane]), expected) << lane;
  }
}

TEST(AmpSemantics, F32BlocksAreFusedAndPlaced) {
  std::vector<std::uint32_t> in = floats({1.0f + std::ldexp(1.0f, -23), 3.0f, -0.5f, 1e-3f,
                                          1.0f + std::ldexp(1.0f, -23), 0.1f, 2.0f, -7.0f});
  std::vector<std::uint32_t> out = run_float(in, {
      ins(Opcode::Accz), ins(Opcode::Ampf32, {0, 4, 6}), ins(Opcode::Ampf32, {0, 4, 6}),
      ins(Opcode::Accrdf32, {12, 4, 2, 1}), ins(Opcode::Accrdf32, {16, 7, 2, 0}),
      ins(Opcode::Accrdf32, {20, 4, 1, 0}), ins(Opcode::Accrdf32, {24, 8, 2, 0})});
  // Block 6 = rows 4..7, columns 8..11; acc = fma(a, b, fma(a, b, 0)).
  for (int column = 0; column < 4; ++column) {
    float a0 = value(in[0]), a3 = value(in[3]), b = value(in[4 + column]);
    EXPECT_EQ(value(out[column]), std::fma(a0, b, std::fma(a0, b, 0.0f)) * 2.0f) << column;
    EXPECT_EQ(value(out[4 + column]), std::fma(a3, b, std::fma(a3, b, 0.0f))) << column;
    EXPECT_EQ(out[8 + column], 0u);   // columns 4..7: another block
    EXPECT_EQ(out[12 + column], 0u);  // row 8: another block
  }
}

TEST(AmpSemantics, F16OuterProductAndReadback) {
  std::vector<float> a = {1.0f, -2.0f, 0.5f, 3.0f, 0.25f, 7.0f, -1.5f, 1000.0f};
  std::vector<float> b = {2.0f, 0.125f, -4.0f, 1.5f, 9.0f, -0.75f, 0.5f, 100.0f};
  std::vector<std::uint32_t> in(12, 0);
  for (int lane = 0; lane < 8; lane += 2) {
    in[lane / 2] = halves(half(a[lane]), half(a[lane + 1]));
    in[4 + lane / 2] = halves(half(b[lane]), half(b[lane + 1]));
  }
  std::vector<std::uint32_t> out = run_float(in, {
      ins(Opcode::Accz), ins(Opcode::Ampf16, {0, 4, 3}), ins(Opcode::Ampf16, {0, 4, 3}),
      ins(Opcode::Accrdf32, {12, 10, 2, 0}), ins(Opcode::Accrdf16, {16, 15, 1, -1}),
      ins(Opcode::Accrdf16, {20, 15, 0, 0})});
  // Block 3 = rows 8..15, columns 8..15; every MAC added twice.
  for (int c = 0; c < 4; ++c) EXPECT_EQ(value(out[c]), 2.0f * a[2] * b[c]) << c;
  for (int c = 0; c < 8; ++c) {
    auto got = static_cast<std::uint16_t>(out[4 + c / 2] >> (16 * (c % 2)));
    EXPECT_EQ(got, half(a[7] * b[c])) << c;  // 2 a b x 2^-1; 2 x 1000 x 100 / 2 fits FP16
  }
  EXPECT_EQ(out[8], 0u);
}

TEST(AmpSemantics, F8DecodesEachOperandInItsFormat) {
  std::vector<std::uint32_t> in = {0x01234567u, 0x89abcdefu, 0x7f3c1a08u, 0xc0b0a090u,
                                   0x44332211u, 0xf0e0d0c4u};
  std::vector<std::uint32_t> out = run_float(in, {
      ins(Opcode::Accz), ins(Opcode::Ampf8, {0, 4, 1, 1, 0}),
      ins(Opcode::Accrdf32, {12, 3, 2, 0}), ins(Opcode::Accrdf32, {16, 3, 3, 0}),
      ins(Opcode::Accrdf32, {20, 14, 3, 0}), ins(Opcode::Accrdf32, {24, 3, 0, 0})});
  auto code = [&](int word, int lane) { return static_cast<std::uint8_t>(in[word] >> (8 * lane)); };
  auto expect_row = [&](int row, int first_column, int word) {
    for (int c = 0; c < 4; ++c) {
      float product = fp8_to_float(code(row / 4, row % 4), ElementType::F152) *
                      fp8_to_float(code(4 + (first_column + c) / 4, (first_column + c) % 4), ElementType::F143);
      EXPECT_EQ(value(out[word + c]), product) << row << "," << first_column + c;
    }
  };
  expect_row(3, 0, 0);   // columns 8..11 hold B[0..3]
  expect_row(3, 4, 4);   // columns 12..15 hold B[4..7]
  expect_row(14, 4, 8);
  for (int c = 0; c < 4; ++c) EXPECT_EQ(out[12 + c], 0u);  // block 0 untouched
}

}  // namespace
}  // namespace tilec::sim
