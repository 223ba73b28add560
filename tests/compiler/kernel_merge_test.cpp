// The attention merge kernel (compiler/merge_kernel.h) on one simulated
// tile: n partial outputs and their statistics merged, against a host
// model of the kernel's order bit for bit (M = max_i m_i from -inf, w_i =
// exp(m_i - M), L = fma(w_i, l_i, L) in i order from +0, u_i = w_i / L
// correctly rounded, out = fma(u_i, O_i, out) in i order from +0, then the
// output rounding), and against the merge computed in double; every
// worker's bundles against the cost model.
#include "compiler/cost_model.h"
#include "compiler/merge_kernel.h"
#include "kernel_harness.h"
#include "numerics/fp16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace tilec::compiler {
namespace {

using testing::DataPlaces;
using testing::KernelHarness;
using testing::KernelResult;
using testing::KernelRun;

struct MergeCase {
  ElementType output = ElementType::F16;
  std::int64_t panels = 2;
  std::int64_t columns = 12;
  std::int64_t partials = 3;
  bool stats_after_partial = true;  // each partial's stats right after its output (one message a partial)
  int max_workers = 6;
};

std::string describe(const MergeCase& c) {
  return fmt::format("merge to {}: {} panels, {} columns, {} partials", element_type_name(c.output), c.panels,
                     c.columns, c.partials);
}

MergeVariant variant_of(const MergeCase& c) {
  return MergeVariant{c.output, static_cast<std::uint32_t>(64 * c.panels),
                      static_cast<std::uint32_t>(16 * c.panels * element_bytes(c.output))};
}

std::uint32_t bits(float value) { return std::bit_cast<std::uint32_t>(value); }

struct MergeOutcome {
  int mismatches = 0;
  // Against the merge in double: the largest difference in units of
  // 2^-24 x (sum_i w_i |O_i| / L).
  double worst = 0;
  KernelResult result;
  std::vector<MergeShare> shares;
};

MergeOutcome run_merge(const MergeCase& c) {
  const std::int64_t rows = 16 * c.panels, n = c.partials;
  const MergeVariant variant = variant_of(c);
  KernelLibrary library;
  const std::string kernel = library.merge(variant);
  KernelHarness harness(library);

  std::mt19937 random(static_cast<std::uint32_t>(rows * 31 + c.columns * 7 + n));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> sums(1.0f, 60.0f);
  // O_i[row][column], m_i[row], l_i[row].
  std::vector<float> o(static_cast<std::size_t>(n * rows * c.columns)), m(static_cast<std::size_t>(n * rows)), l(m.size());
  for (float& value : o) value = normal(random);
  for (float& value : m) value = 3.0f * normal(random);
  for (float& value : l) value = sums(random);
  auto at = [&](std::int64_t i, std::int64_t row) { return static_cast<std::size_t>(i * rows + row); };

  // The partials in one buffer: O_i ([C][P][16] FP32), then (optionally) its
  // statistics, then 16 spare bytes; stats elsewhere at their own stride.
  const auto o_bytes = static_cast<std::uint32_t>(c.columns * rows * 4), stats_bytes = static_cast<std::uint32_t>(8 * rows);
  const std::uint32_t partial_stride = o_bytes + (c.stats_after_partial ? stats_bytes : 0) + 16;
  const std::uint32_t stats_stride = c.stats_after_partial ? partial_stride : stats_bytes + 32;
  DataPlaces places;
  const std::uint32_t partials = places.take(partial_stride * static_cast<std::uint32_t>(n));
  const std::uint32_t stats = c.stats_after_partial ? partials + o_bytes : places.take(stats_stride * static_cast<std::uint32_t>(n));
  std::vector<std::uint8_t> partial_bytes(partial_stride * static_cast<std::size_t>(n), 0);
  std::vector<std::uint8_t> stats_bytes_all(c.stats_after_partial ? 0 : stats_stride * static_cast<std::size_t>(n), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t row = 0; row < rows; ++row) {
      for (std::int64_t column = 0; column < c.columns; ++column)
        std::memcpy(&partial_bytes[static_cast<std::size_t>(i * partial_stride + (column * rows + row) * 4)],
                    &o[static_cast<std::size_t>((i * rows + row) * c.columns + column)], 4);
      // Row r's stats: quad r / 4 holds 4 m then 4 l.
      std::uint8_t* base = c.stats_after_partial ? &partial_bytes[static_cast<std::size_t>(i * partial_stride + o_bytes)]
                                                 : &stats_bytes_all[static_cast<std::size_t>(i * stats_stride)];
      std::memcpy(base + 32 * (row / 4) + 4 * (row % 4), &m[at(i, row)], 4);
      std::memcpy(base + 32 * (row / 4) + 16 + 4 * (row % 4), &l[at(i, row)], 4);
    }
  }
  const std::uint32_t out_bytes = element_bytes(c.output);
  const std::uint32_t out_size = static_cast<std::uint32_t>(c.columns) * variant.output_column_stride;
  const std::uint32_t out = places.take(out_size);

  MergeOutcome outcome;
  outcome.shares = merge_shares(variant, 4 * c.panels, c.columns, n);
  if (static_cast<int>(outcome.shares.size()) > c.max_workers) outcome.shares.resize(static_cast<std::size_t>(c.max_workers));
  KernelRun run{kernel, {}, {{partials, partial_bytes}}, {{out, out_size}}};
  if (!c.stats_after_partial) run.inputs.push_back({stats, stats_bytes_all});
  for (const MergeShare& share : outcome.shares) {
    const auto quad = static_cast<std::uint32_t>(share.first_quad), column = static_cast<std::uint32_t>(share.first_column);
    const std::uint32_t scratch = places.take(static_cast<std::uint32_t>(merge_scratch_bytes(n)));
    run.blocks.push_back({static_cast<std::uint32_t>(share.quads), static_cast<std::uint32_t>(share.columns),
                          static_cast<std::uint32_t>(n), partials + column * variant.partial_column_stride + 16 * quad,
                          partial_stride, stats + 32 * quad, stats_stride,
                          out + column * variant.output_column_stride + 4 * out_bytes * quad, scratch});
  }
  outcome.result = harness.run(run);

  // Rows and columns the shares cover.
  std::vector<bool> covered(static_cast<std::size_t>(rows * c.columns), false);
  for (const MergeShare& share : outcome.shares)
    for (std::int64_t row = 4 * share.first_quad; row < 4 * (share.first_quad + share.quads); ++row)
      for (std::int64_t column = share.first_column; column < share.first_column + share.columns; ++column)
        covered[static_cast<std::size_t>(row * c.columns + column)] = true;
  const std::vector<std::uint8_t>& bytes = outcome.result.outputs[0];
  for (std::int64_t row = 0; row < rows; ++row) {
    float largest = -std::numeric_limits<float>::infinity();
    for (std::int64_t i = 0; i < n; ++i) largest = std::fmax(largest, m[at(i, row)]);
    std::vector<float> w(static_cast<std::size_t>(n));
    float total = 0.0f;
    double exact_total = 0.0;
    for (std::int64_t i = 0; i < n; ++i) {
      w[static_cast<std::size_t>(i)] = std::exp(m[at(i, row)] - largest);
      total = std::fma(w[static_cast<std::size_t>(i)], l[at(i, row)], total);
      exact_total += std::exp(static_cast<double>(m[at(i, row)]) - largest) * l[at(i, row)];
    }
    for (std::int64_t column = 0; column < c.columns; ++column) {
      if (!covered[static_cast<std::size_t>(row * c.columns + column)]) continue;
      float sum = 0.0f;
      double exact = 0.0, magnitude = 0.0;
      for (std::int64_t i = 0; i < n; ++i) {
        const float value = o[static_cast<std::size_t>((i * rows + row) * c.columns + column)];
        sum = std::fma(value, w[static_cast<std::size_t>(i)] / total, sum);
        exact += std::exp(static_cast<double>(m[at(i, row)]) - largest) * value;
        magnitude += std::exp(static_cast<double>(m[at(i, row)]) - largest) * std::fabs(value);
      }
      const float expected32 = sum;
      const std::size_t index = static_cast<std::size_t>(column * rows + row) * out_bytes;
      float got;
      std::uint32_t expected_bits, got_bits;
      if (c.output == ElementType::F16) {
        std::uint16_t half;
        std::memcpy(&half, &bytes[index], 2);
        got = half_to_float(half);
        got_bits = half;
        expected_bits = float_to_half(expected32);
      } else {
        std::memcpy(&got, &bytes[index], 4);
        got_bits = bits(got);
        expected_bits = bits(expected32);
      }
      if (got_bits != expected_bits && ++outcome.mismatches <= 3)
        ADD_FAILURE() << describe(c) << ": row " << row << " column " << column << " is " << got << ", the model's "
                      << expected32;
      const double unit = std::ldexp(magnitude / exact_total, -24);
      outcome.worst = std::max(outcome.worst, std::fabs(expected32 - exact / exact_total) / unit);
    }
  }
  return outcome;
}

void expect_bundles(const MergeCase& c, const MergeOutcome& outcome) {
  ASSERT_EQ(outcome.result.block_cycles.size(), 1u);
  ASSERT_EQ(outcome.result.block_cycles[0].size(), outcome.shares.size());
  for (std::size_t w = 0; w < outcome.shares.size(); ++w)
    EXPECT_EQ(static_cast<std::int64_t>((outcome.result.block_cycles[0][w] + 4) / 6),
              merge_worker_bundles(variant_of(c), outcome.shares[w].quads, outcome.shares[w].columns, c.partials))
        << describe(c) << " worker " << w;
}

class MergeKernel : public ::testing::TestWithParam<ElementType> {};

TEST_P(MergeKernel, MatchesTheModelBitForBitAndTheCostModel) {
  MergeCase c;
  c.output = GetParam();
  for (auto [panels, columns, partials] : {std::tuple{2, 12, 3}, std::tuple{1, 72, 2}, std::tuple{1, 1, 1},
                                           std::tuple{3, 7, 16}, std::tuple{5, 72, 4}, std::tuple{1, 4, 40},
                                           std::tuple{2, 23, 1}, std::tuple{4, 5, 9}}) {
    c.panels = panels;
    c.columns = columns;
    c.partials = partials;
    for (bool after : {true, false}) {
      c.stats_after_partial = after;
      MergeOutcome outcome = run_merge(c);
      EXPECT_EQ(outcome.mismatches, 0) << describe(c);
      // The merge in FP32 against the truth: each weight, quotient and term
      // a rounding, L's relative error included.
      EXPECT_LT(outcome.worst, 4.0 * static_cast<double>(partials + 3)) << describe(c);
      expect_bundles(c, outcome);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BothOutputs, MergeKernel, ::testing::Values(ElementType::F32, ElementType::F16),
                         [](const auto& info) { return std::string(element_type_name(info.param)); });

TEST(MergeKernel, OneWorkerTakesEveryRowAndColumnOrAShare) {
  // A worker's share starts anywhere: one worker alone, then six.
  for (int workers : {1, 6}) {
    MergeCase c;
    c.panels = 3;
    c.columns = 29;
    c.partials = 5;
    c.max_workers = workers;
    MergeOutcome outcome = run_merge(c);
    EXPECT_EQ(outcome.mismatches, 0);
    if (workers == 6) { EXPECT_EQ(outcome.shares.size(), 6u); }
  }
}

TEST(MergeKernel, TileCyclesFollowTheCostModel) {
  MergeCase c;
  c.panels = 5;
  c.columns = 72;
  c.partials = 4;
  MergeOutcome outcome = run_merge(c);
  const double model = merge_tile_cycles(variant_of(c), 4 * c.panels, c.columns, c.partials);
  const auto cycles = static_cast<double>(outcome.result.stats.halt_cycle);
  std::cerr << describe(c) << ": " << outcome.result.stats.halt_cycle << " cycles, model " << model << ", "
            << outcome.shares.size() << " workers\n";
  EXPECT_NEAR(model / cycles, 1.0, 0.03);
}

TEST(MergeKernel, RejectsStridesItsImmediatesCannotHold) {
  KernelLibrary library;
  EXPECT_THROW(library.merge(MergeVariant{ElementType::F16, kMaxMergePartialColumnStride + 16, 64}), Error);
  EXPECT_THROW(library.merge(MergeVariant{ElementType::F32, 64, 40}), Error);
  EXPECT_THROW(library.merge(MergeVariant{ElementType::F143, 64, 64}), Error);
  EXPECT_NO_THROW(library.merge(MergeVariant{ElementType::F16, kMaxMergePartialColumnStride, 8}));
}

}  // namespace
}  // namespace tilec::compiler
