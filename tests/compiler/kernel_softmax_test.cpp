// The generated softmax kernels (compiler/softmax_kernel.h) on one
// simulated tile: scaled and partial softmax on half panels, and the three
// kernels of a softmax whose columns are split between workers. Each
// against a host model of the kernel's arithmetic, bit for bit (outputs
// and statistics), and against numerics::reference's softmax within an
// FP16 step or two FP32 ulps; every worker's bundles against the cost
// model; and the cycles of 1, 2 and 5 panels of 96 columns, before (the
// fixed kernel on half panels) and after (the best split).
#include "compiler/cost_model.h"
#include "compiler/softmax_kernel.h"
#include "kernel_blocks.h"
#include "kernel_harness.h"
#include "numerics/fp16.h"
#include "numerics/reference_ops.h"

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

struct SoftmaxCase {
  ElementType input = ElementType::F32;
  ElementType output = ElementType::F16;
  bool partial = false;
  bool scaled = true;
  float scale = 0.117851f;  // 1 / sqrt(72)
  std::int64_t panels = 2;
  std::int64_t columns = 37;         // C: the columns the statistics cover
  std::int64_t stored_columns = 40;  // the buffers' columns (the rest hold NaN, never read)
  int chunks = 1;                    // 1: the whole-row kernel; else the split kernels
  // Normalised, whole: the output holds result columns [first, first + count).
  std::int64_t first_output_column = 0;
  std::int64_t output_columns = 0;
  bool in_place = false;  // a split normalised softmax keeps its exponentials in the input (FP32)
  bool stats_in_chunk0 = false;  // a split partial softmax writes its statistics over chunk 0's

  std::int64_t written() const { return output_columns ? output_columns : columns; }
  bool fixed_stride = false;  // the input stride built into the kernels (RowVariant::input_stride)
  RowVariant variant(SoftmaxForm form) const {
    RowVariant v{false, input, output, form, scaled};
    if (fixed_stride) v.input_stride = static_cast<std::uint32_t>(16 * panels) * element_bytes(input);
    if (form == SoftmaxForm::ChunkExp && !partial) v.output = ElementType::F32;
    return v;
  }
  RowVariant whole() const { return variant(partial ? SoftmaxForm::Partial : SoftmaxForm::Normalised); }
};

std::string describe(const SoftmaxCase& c) {
  return fmt::format("{} {}{} -> {}, {} panels, C = {} of {}, {} chunks{}", c.partial ? "partial" : "normalised",
                     c.scaled ? "scaled " : "", element_type_name(c.input), element_type_name(c.output), c.panels,
                     c.columns, c.stored_columns, c.chunks, c.fixed_stride ? ", fixed stride" : "");
}

// Every kernel the tests use, in one library: each stride built in is a
// column of 1 to 5 panels of FP16 or FP32.
KernelLibrary softmax_kernels() {
  std::vector<std::uint32_t> strides{0};
  for (std::uint32_t panels = 1; panels <= 5; ++panels)
    for (std::uint32_t bytes : {2u, 4u}) strides.push_back(16 * panels * bytes);
  KernelLibrary library;
  for (ElementType input : {ElementType::F16, ElementType::F32})
    for (ElementType output : {ElementType::F16, ElementType::F32})
      for (bool scaled : {false, true}) {
        library.row(RowVariant{false, input, output});
        for (SoftmaxForm form : {SoftmaxForm::Normalised, SoftmaxForm::Partial, SoftmaxForm::ChunkMax,
                                 SoftmaxForm::ChunkExp, SoftmaxForm::FinishStats, SoftmaxForm::FinishNormalise})
          for (std::uint32_t stride : strides) {
            RowVariant v{false, input, output, form, scaled};
            v.input_stride = stride;
            if (v.generated()) library.row(v);
          }
      }
  return library;
}

const KernelHarness& harness() {
  static const KernelHarness instance{softmax_kernels()};
  return instance;
}

float rounded(float value, ElementType type) { return type == ElementType::F16 ? round_to_half(value) : value; }

// The kernels' arithmetic for one row of x (values of the input type).
struct RowResult {
  std::vector<float> out;  // the written columns, rounded to the output type
  float m = 0, l = 0;      // partial: the statistics
};

RowResult host_row(const SoftmaxCase& c, const float* x) {
  const std::int64_t chunks = c.chunks;
  auto y = [&](std::int64_t j) { return c.scaled ? c.scale * x[j] : x[j]; };
  // Each chunk's largest x, scaled once; M is their largest.
  float largest = -std::numeric_limits<float>::infinity();
  for (std::int64_t k = 0; k < chunks; ++k) {
    float chunk = -std::numeric_limits<float>::infinity();
    for (std::int64_t j = c.columns * k / chunks; j < c.columns * (k + 1) / chunks; ++j) chunk = std::fmax(chunk, x[j]);
    largest = std::fmax(largest, c.scaled ? c.scale * chunk : chunk);
  }
  // Sums in column order within each chunk from +0, then the chunks' sums
  // in chunk order from +0.
  std::vector<float> e(static_cast<std::size_t>(c.columns));
  float total = 0.0f;
  for (std::int64_t k = 0; k < chunks; ++k) {
    float sum = 0.0f;
    for (std::int64_t j = c.columns * k / chunks; j < c.columns * (k + 1) / chunks; ++j) {
      e[static_cast<std::size_t>(j)] = std::exp(y(j) - largest);
      sum += e[static_cast<std::size_t>(j)];
    }
    total = chunks == 1 ? sum : total + sum;
  }
  RowResult row;
  row.m = largest;
  row.l = total;
  const float reciprocal = 1.0f / total;
  const std::int64_t first = c.partial ? 0 : c.first_output_column;
  for (std::int64_t j = first; j < first + (c.partial ? c.columns : c.written()); ++j) {
    const float value = e[static_cast<std::size_t>(j)];
    row.out.push_back(rounded(c.partial ? value : value * reciprocal, c.output));
  }
  return row;
}

// A [rows][columns] matrix in the panel format [columns][panels][16 rows].
std::vector<std::uint8_t> panel_bytes(const std::vector<float>& rows, std::int64_t panels, std::int64_t columns,
                                      ElementType type) {
  const std::size_t bytes = element_bytes(type);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(16 * panels * columns) * bytes);
  for (std::int64_t row = 0; row < 16 * panels; ++row)
    for (std::int64_t column = 0; column < columns; ++column) {
      const float value = rows[static_cast<std::size_t>(row * columns + column)];
      const std::size_t at = static_cast<std::size_t>(column * 16 * panels + row) * bytes;
      if (type == ElementType::F16) {
        const std::uint16_t half = float_to_half(value);
        std::memcpy(&out[at], &half, 2);
      } else {
        std::memcpy(&out[at], &value, 4);
      }
    }
  return out;
}

float panel_value(const std::vector<std::uint8_t>& bytes, std::int64_t panels, std::int64_t row, std::int64_t column,
                  ElementType type) {
  const std::size_t at = static_cast<std::size_t>(column * 16 * panels + row) * element_bytes(type);
  if (type == ElementType::F16) {
    std::uint16_t half;
    std::memcpy(&half, &bytes[at], 2);
    return half_to_float(half);
  }
  float value;
  std::memcpy(&value, &bytes[at], 4);
  return value;
}

// Row r's statistics: quad r / 4 holds 4 m then 4 l.
std::pair<float, float> stats_of(const std::vector<std::uint8_t>& bytes, std::int64_t row) {
  float m, l;
  std::memcpy(&m, &bytes[static_cast<std::size_t>(32 * (row / 4) + 4 * (row % 4))], 4);
  std::memcpy(&l, &bytes[static_cast<std::size_t>(32 * (row / 4) + 16 + 4 * (row % 4))], 4);
  return {m, l};
}

std::uint32_t bits(float value) { return std::bit_cast<std::uint32_t>(value); }

struct SoftmaxOutcome {
  std::vector<float> x;                // row-major [rows][stored columns]
  std::vector<std::uint8_t> out, stats;
  KernelResult result;  // every worker's bundles checked against the model by run_launches
};

SoftmaxOutcome run_softmax(const SoftmaxCase& c) {
  const std::int64_t rows = 16 * c.panels;
  const auto in_bytes = element_bytes(c.input), out_bytes = element_bytes(c.output);
  SoftmaxOutcome outcome;
  std::mt19937 random(static_cast<std::uint32_t>(rows * 131 + c.columns * 7));
  std::normal_distribution<float> normal(0.5f, 4.0f);
  outcome.x.assign(static_cast<std::size_t>(rows * c.stored_columns), std::numeric_limits<float>::quiet_NaN());
  for (std::int64_t row = 0; row < rows; ++row)
    for (std::int64_t column = 0; column < c.columns; ++column)
      outcome.x[static_cast<std::size_t>(row * c.stored_columns + column)] = rounded(normal(random), c.input);

  DataPlaces places;
  const auto in_stride = static_cast<std::uint32_t>(16 * c.panels) * in_bytes;
  const auto out_stride = static_cast<std::uint32_t>(16 * c.panels) * out_bytes;
  const auto stats_bytes = static_cast<std::uint32_t>(softmax_stats_bytes(c.panels));
  const std::vector<std::uint8_t> x_bytes = panel_bytes(outcome.x, c.panels, c.stored_columns, c.input);
  const std::uint32_t x = places.take(static_cast<std::uint32_t>(x_bytes.size()));
  const std::uint32_t out_size = static_cast<std::uint32_t>(c.stored_columns) * out_stride;
  const std::uint32_t out = places.take(out_size);
  const std::uint32_t chunk_stats = places.take(stats_bytes * static_cast<std::uint32_t>(c.chunks));
  const std::uint32_t stats = c.stats_in_chunk0 ? chunk_stats : places.take(stats_bytes);
  const std::uint32_t e_stride = static_cast<std::uint32_t>(16 * c.panels) * 4;
  const std::uint32_t e = c.in_place ? x : places.take(static_cast<std::uint32_t>(c.columns) * e_stride);
  testing::SoftmaxBuffers buffers;
  buffers.input = x;
  buffers.input_stride = in_stride;
  buffers.output = out;
  buffers.output_stride = out_stride;
  buffers.stats = stats;
  buffers.chunk_stats = chunk_stats;
  buffers.chunk_stride = stats_bytes;
  buffers.exponentials = e;
  buffers.exponential_stride = e_stride;
  buffers.columns = c.columns;
  buffers.first_output_column = c.first_output_column;
  buffers.output_columns = c.output_columns;
  buffers.scale = c.scale;
  testing::Launches launches;
  testing::add_softmax(launches, c.whole(), c.panels, c.chunks, buffers);
  outcome.result = testing::run_launches(harness(), launches, {{x, x_bytes}}, {{out, out_size}, {stats, stats_bytes}});
  outcome.out = outcome.result.outputs[0];
  outcome.stats = outcome.result.outputs[1];
  return outcome;
}

// Bit for bit against the host model; against the reference within an
// FP16 step (FP32: 2 ulps), a partial softmax's p / l included.
void check(const SoftmaxCase& c, const SoftmaxOutcome& outcome) {
  const std::int64_t rows = 16 * c.panels;
  std::vector<float> y(static_cast<std::size_t>(rows * c.columns)), reference(y.size());
  for (std::int64_t row = 0; row < rows; ++row)
    for (std::int64_t column = 0; column < c.columns; ++column) {
      const float value = outcome.x[static_cast<std::size_t>(row * c.stored_columns + column)];
      y[static_cast<std::size_t>(row * c.columns + column)] = c.scaled ? c.scale * value : value;
    }
  reference::softmax(y, reference, c.columns);
  int bad = 0;
  for (std::int64_t row = 0; row < rows; ++row) {
    const RowResult expected = host_row(c, &outcome.x[static_cast<std::size_t>(row * c.stored_columns)]);
    float m = 0, l = 0;
    if (c.partial) {
      std::tie(m, l) = stats_of(outcome.stats, row);
      if ((bits(m) != bits(expected.m) || bits(l) != bits(expected.l)) && ++bad <= 3)
        ADD_FAILURE() << describe(c) << ": row " << row << " stats (" << m << ", " << l << "), the model's ("
                      << expected.m << ", " << expected.l << ")";
    }
    const std::int64_t first = c.partial ? 0 : c.first_output_column;
    for (std::size_t j = 0; j < expected.out.size(); ++j) {
      const float got = panel_value(outcome.out, c.panels, row, static_cast<std::int64_t>(j), c.output);
      if (bits(got) != bits(expected.out[j]) && ++bad <= 3)
        ADD_FAILURE() << describe(c) << ": row " << row << " column " << j << " is " << got << ", the model's "
                      << expected.out[j];
      const float want = reference[static_cast<std::size_t>(row * c.columns + first + static_cast<std::int64_t>(j))];
      // Normalised: the output against the reference's rounded to its type
      // (an FP16 step, 2 FP32 ulps); partial: p / l, p rounded to its type
      // (2^-11 relative in FP16, 2^-25 among its subnormals), against the
      // reference's.
      const float normalised = c.partial ? got / l : got;
      const float target = c.partial ? want : rounded(want, c.output);
      float tolerance = c.output == ElementType::F32 ? 2 * (std::nextafter(std::fabs(want), INFINITY) - std::fabs(want))
                        : c.partial ? std::ldexp(want, -11) + std::ldexp(1.0f, -25) / l
                                    : half_to_float(static_cast<std::uint16_t>(float_to_half(std::fabs(want)) + 1)) -
                                          round_to_half(std::fabs(want));
      // The sum's order (chunks) and the division of p: a rounding per term.
      if (c.partial || c.chunks > 1) tolerance += std::ldexp(static_cast<float>(c.columns + 2), -24) * want;
      if (std::fabs(normalised - target) > tolerance && ++bad <= 3)
        ADD_FAILURE() << describe(c) << ": row " << row << " column " << j << " gives " << normalised
                      << ", the reference " << want;
    }
  }
  EXPECT_EQ(bad, 0) << describe(c);
}

// The case on `panels` panels of `columns` valid columns (of `stored`), its
// input stride from the arguments and built in.
void check_both_strides(SoftmaxCase c, std::int64_t panels, std::int64_t columns, std::int64_t stored) {
  c.panels = panels;
  c.columns = columns;
  c.stored_columns = stored;
  for (bool fixed : {false, true}) {
    c.fixed_stride = fixed;
    check(c, run_softmax(c));
  }
}

class GeneratedSoftmax : public ::testing::TestWithParam<std::tuple<ElementType, ElementType, bool>> {};

TEST_P(GeneratedSoftmax, WholeRowsMatchTheModelAndTheReference) {
  SoftmaxCase c;
  std::tie(c.input, c.output, c.partial) = GetParam();
  for (auto [panels, columns, stored] : {std::tuple{2, 37, 40}, std::tuple{1, 1, 1}, std::tuple{3, 96, 96},
                                         std::tuple{5, 19, 32}, std::tuple{4, 2, 3}}) {
    for (bool scaled : {true, false}) {
      if (!scaled && !c.partial) continue;  // the fixed kernels' own tests
      c.scaled = scaled;
      check_both_strides(c, panels, columns, stored);
    }
  }
}

TEST_P(GeneratedSoftmax, SplitColumnsMatchTheModelAndTheReference) {
  SoftmaxCase c;
  std::tie(c.input, c.output, c.partial) = GetParam();
  for (auto [panels, columns, stored, chunks] : {std::tuple{1, 96, 96, 3}, std::tuple{2, 91, 96, 3},
                                                 std::tuple{5, 96, 96, 6}, std::tuple{1, 7, 9, 2},
                                                 std::tuple{3, 6, 6, 6}}) {
    c.chunks = chunks;
    check_both_strides(c, panels, columns, stored);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryType, GeneratedSoftmax,
                         ::testing::Combine(::testing::Values(ElementType::F32, ElementType::F16),
                                            ::testing::Values(ElementType::F32, ElementType::F16), ::testing::Bool()),
                         [](const auto& info) {
                           return fmt::format("{}_{}_{}", element_type_name(std::get<0>(info.param)),
                                              element_type_name(std::get<1>(info.param)),
                                              std::get<2>(info.param) ? "partial" : "normalised");
                         });

TEST(GeneratedSoftmax, ANormalisedOneWritesAColumnRange) {
  SoftmaxCase c;
  c.panels = 2;
  c.columns = 37;
  for (auto [first, count] : {std::pair{0, 5}, std::pair{13, 11}, std::pair{36, 1}}) {
    c.first_output_column = first;
    c.output_columns = count;
    SoftmaxOutcome outcome = run_softmax(c);
    check(c, outcome);
  }
}

TEST(GeneratedSoftmax, SplitPartialGivesTheWholeKernelsProbabilitiesAndLargest) {
  SoftmaxCase c;
  c.partial = true;
  c.panels = 2;
  c.columns = 91;
  c.stored_columns = 96;
  const SoftmaxOutcome whole = run_softmax(c);
  c.chunks = 3;
  const SoftmaxOutcome split = run_softmax(c);
  const std::size_t bytes = static_cast<std::size_t>(c.columns * 16 * c.panels) * element_bytes(c.output);
  EXPECT_TRUE(std::equal(whole.out.begin(), whole.out.begin() + static_cast<std::ptrdiff_t>(bytes), split.out.begin()));
  for (std::int64_t row = 0; row < 16 * c.panels; ++row)
    EXPECT_EQ(bits(stats_of(whole.stats, row).first), bits(stats_of(split.stats, row).first)) << row;
}

TEST(GeneratedSoftmax, ASplitPartialOneCanWriteItsStatisticsOverChunkZeros) {
  SoftmaxCase c;
  c.partial = true;
  c.chunks = 6;
  c.panels = 4;
  c.columns = c.stored_columns = 30;
  c.stats_in_chunk0 = true;
  SoftmaxOutcome outcome = run_softmax(c);
  check(c, outcome);
}

TEST(GeneratedSoftmax, ASplitNormalisedOneCanKeepItsExponentialsInTheInput) {
  SoftmaxCase c;
  c.input = ElementType::F32;
  c.chunks = 3;
  c.columns = 96;
  c.stored_columns = 96;
  c.in_place = true;
  SoftmaxOutcome outcome = run_softmax(c);
  check(c, outcome);
}

TEST(GeneratedSoftmax, FormsIgnoringTypesShareAKernel) {
  KernelLibrary library;
  EXPECT_EQ(library.row(RowVariant{false, ElementType::F16, ElementType::F16, SoftmaxForm::FinishStats, true}),
            library.row(RowVariant{false, ElementType::F32, ElementType::F32, SoftmaxForm::FinishStats, false}));
  EXPECT_EQ(library.row(RowVariant{false, ElementType::F16, ElementType::F16, SoftmaxForm::ChunkMax, true}),
            library.row(RowVariant{false, ElementType::F16, ElementType::F32, SoftmaxForm::ChunkMax, true}));
  EXPECT_EQ(library.variant_count(), 2u);
  EXPECT_THROW(library.row(RowVariant{true, ElementType::F16, ElementType::F16, SoftmaxForm::Partial}), Error);
  EXPECT_THROW(library.row(RowVariant{false, ElementType::F143, ElementType::F16, SoftmaxForm::Partial}), Error);
  EXPECT_THROW(softmax_shares(2, 40, 4), Error);
  EXPECT_THROW(softmax_shares(2, 2, 3), Error);
  EXPECT_EQ(softmax_shares(2, 2, 2).size(), 6u);
}

// 1, 2 and 5 panels of 96 columns (scores in FP32 or FP16, probabilities in
// FP16): the fixed kernel on half panels against the generated kernels at
// their best chunk count, measured, with the model's figures.
TEST(GeneratedSoftmax, FewPanelsShareTheWorkersBetterThanHalfPanels) {
  for (ElementType input : {ElementType::F32, ElementType::F16})
  for (std::int64_t panels : {1, 2, 5}) {
    SoftmaxCase before;
    before.input = input;
    before.scaled = false;
    before.panels = panels;
    before.columns = before.stored_columns = 96;
    const SoftmaxOutcome fixed = run_softmax(before);
    check(before, fixed);
    const auto fixed_cycles = fixed.result.stats.halt_cycle;
    for (bool partial : {false, true}) {
      SoftmaxCase after = before;
      after.scaled = true;
      after.partial = partial;
      const std::int64_t whole_cycles = static_cast<std::int64_t>(run_softmax(after).result.stats.halt_cycle);
      after.chunks = softmax_best_chunks(after.whole(), panels, 96);
      const SoftmaxOutcome best = run_softmax(after);
      check(after, best);
      const double model = softmax_tile_cycles(after.whole(), panels, 96, after.chunks);
      const auto cycles = static_cast<double>(best.result.stats.halt_cycle);
      std::cerr << panels << " panels x 96: fixed softmax_" << element_type_name(input) << "_f16 " << fixed_cycles
                << " cycles; scaled "
                << (partial ? "partial" : "normalised") << " whole " << whole_cycles << ", " << after.chunks
                << " chunks " << best.result.stats.halt_cycle << " (model " << model << ")\n";
      EXPECT_NEAR(model / cycles, 1.0, 0.03) << describe(after);
      EXPECT_LE(cycles, static_cast<double>(whole_cycles)) << describe(after);
      if (panels <= 2) { EXPECT_LT(cycles, 0.8 * static_cast<double>(fixed_cycles)) << describe(after); }
    }
  }
}

}  // namespace
}  // namespace tilec::compiler
