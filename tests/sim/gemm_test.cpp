// The FP8 GEMM program (gemm_program.h) against a host computation of the
// same sums in the same order: bit-identical FP16 outputs, and an AMP rate
// within the machine's peak.
#include "gemm_program.h"
#include "graph/tensor.h"
#include "numerics/fp16.h"
#include "numerics/fp8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace tilec::sim {
namespace {

using namespace testing;

// F143 codes of magnitude below 1 (exponent field < 8), both signs, no NaN.
graph::Tensor random_codes(graph::TensorType type, std::uint32_t seed) {
  graph::Tensor tensor = graph::Tensor::zeros(std::move(type));
  std::mt19937 random(seed);
  for (std::uint8_t& code : tensor.bytes) {
    auto bits = static_cast<std::uint8_t>(random() & 0xbf);
    code = bits == 0x80 ? 0x01 : bits;
  }
  return tensor;
}

TEST(GemmProgram, MatchesTheHostSumsExactlyWithinThePeakRate) {
  GemmShape shape;
  shape.tiles = 2;
  shape.k = 64;
  shape.column_blocks = 2;
  shape.output_scale = -3;
  Device device(gemm_package(shape), ipu21_cut(shape.tiles));
  const std::int64_t m = GemmShape::kRows, n = shape.columns(), k = shape.k;
  graph::Tensor a = random_codes({{shape.tiles, m, k}, {ElementType::F143, 0}}, 1);
  graph::Tensor b = random_codes({{shape.tiles, k, n}, {ElementType::F143, 0}}, 2);
  device.write("a", a);
  device.write("b", b);
  RunResult result = device.run();
  graph::Tensor c = device.read("c");

  const auto& table = fp8_table(ElementType::F143);
  int mismatches = 0;
  for (std::int64_t t = 0; t < shape.tiles; ++t)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        float sum = 0.0f;
        for (std::int64_t p = 0; p < k; ++p)
          sum = sum + table[a.bytes[(t * m + i) * k + p]] * table[b.bytes[(t * k + p) * n + j]];
        std::uint16_t expected = float_to_half(std::ldexp(sum, shape.output_scale));
        std::uint16_t actual;
        std::memcpy(&actual, c.bytes.data() + 2 * ((t * m + i) * n + j), 2);
        if (actual != expected && ++mismatches < 5)
          ADD_FAILURE() << "c[" << t << "][" << i << "][" << j << "] = " << half_to_float(actual)
                        << ", expected " << half_to_float(expected);
      }
  EXPECT_EQ(mismatches, 0);

  for (const TileStats& tile : result.tiles) {
    EXPECT_EQ(tile.total_amp_macs(), shape.macs_per_tile());
    EXPECT_LE(static_cast<double>(tile.total_amp_macs()) / tile.halt_cycle, 128.0);
    // Six workers in step keep the AMP busy most of the time.
    EXPECT_GT(static_cast<double>(tile.total_amp_macs()) / tile.halt_cycle, 64.0);
  }
}

}  // namespace
}  // namespace tilec::sim
