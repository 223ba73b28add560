// The LayerNorm and Softmax kernels (kernels/layernorm.S, softmax.S) on one
// simulated tile against numerics::reference: LayerNorm bit for bit,
// Softmax within one FP16 step (FP32 outputs within 2 FP32 ulps); each
// worker's bundles as the cost model counts them.
#include "compiler/cost_model.h"
#include "kernel_harness.h"
#include "numerics/fp16.h"
#include "numerics/reference_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace tilec::compiler {
namespace {

using testing::DataPlaces;
using testing::KernelHarness;
using testing::KernelResult;
using testing::KernelRun;

struct RowCase {
  RowKernel kernel = RowKernel::LayerNorm;
  ElementType input = ElementType::F32;
  ElementType output = ElementType::F32;
  std::int64_t panels = 3;
  std::int64_t columns = 37;
  int workers = 6;
  float epsilon = 1e-6f;
  float mean = 0.5f;  // of the input values (standard deviation 2)
  // The output's columns [first_output_column, + output_columns) of the
  // result (0: all columns).
  std::int64_t first_output_column = 0;
  std::int64_t output_columns = 0;
  std::int64_t written() const { return output_columns ? output_columns : columns; }
};

std::string kernel_name(const RowCase& c) {
  return fmt::format("{}_{}_{}", c.kernel == RowKernel::LayerNorm ? "layernorm" : "softmax",
                     element_type_name(c.input), element_type_name(c.output));
}

struct RowOutcome {
  std::vector<float> actual;    // row-major [rows][written columns]
  std::vector<float> expected;  // the reference's FP32 results
  KernelResult result;
};

// A library with every row kernel.
KernelLibrary row_kernels() {
  KernelLibrary library;
  for (bool layernorm : {true, false})
    for (ElementType input : {ElementType::F16, ElementType::F32})
      for (ElementType output : {ElementType::F16, ElementType::F32}) library.row(RowVariant{layernorm, input, output});
  return library;
}

const KernelHarness& harness() {
  static const KernelHarness instance{row_kernels()};
  return instance;
}

RowOutcome run_rows(const RowCase& c) {
  const std::int64_t rows = 16 * c.panels, columns = c.columns;
  const std::uint32_t in_bytes = element_bytes(c.input), out_bytes = element_bytes(c.output);
  std::mt19937 random(static_cast<std::uint32_t>(rows * 1000 + columns));
  std::normal_distribution<float> normal(c.mean, 2.0f);
  // Row-major values, rounded to the input type; stored [C][P][16].
  std::vector<float> x(static_cast<std::size_t>(rows * columns));
  std::vector<std::uint8_t> stored(x.size() * in_bytes);
  for (std::int64_t row = 0; row < rows; ++row)
    for (std::int64_t column = 0; column < columns; ++column) {
      float value = normal(random);
      if (c.input == ElementType::F16) value = round_to_half(value);
      x[static_cast<std::size_t>(row * columns + column)] = value;
      const std::size_t at = static_cast<std::size_t>(column * rows + row) * in_bytes;
      if (c.input == ElementType::F16) {
        std::uint16_t half = float_to_half(value);
        std::memcpy(&stored[at], &half, 2);
      } else {
        std::memcpy(&stored[at], &value, 4);
      }
    }
  // gamma and beta of every column; the kernel reads the written ones' pairs.
  std::vector<float> gamma(static_cast<std::size_t>(columns)), beta(gamma.size()), pairs;
  std::normal_distribution<float> unit(0.0f, 1.0f);
  for (std::size_t i = 0; i < gamma.size(); ++i) {
    gamma[i] = unit(random);
    beta[i] = unit(random);
    if (static_cast<std::int64_t>(i) >= c.first_output_column &&
        static_cast<std::int64_t>(i) < c.first_output_column + c.written()) {
      pairs.push_back(gamma[i]);
      pairs.push_back(beta[i]);
    }
  }

  DataPlaces places;
  const auto elements = static_cast<std::uint32_t>(rows * columns);
  const auto written = static_cast<std::uint32_t>(rows * c.written());
  std::uint32_t in = places.take(elements * in_bytes), out = places.take(written * out_bytes);
  std::uint32_t gamma_beta = places.take(static_cast<std::uint32_t>(c.written()) * 8);
  KernelRun run{kernel_name(c), {}, {{in, stored}, {gamma_beta, testing::bytes_of(pairs)}}, {{out, written * out_bytes}}};
  const auto in_stride = static_cast<std::uint32_t>(rows) * in_bytes, out_stride = static_cast<std::uint32_t>(rows) * out_bytes;
  std::uint32_t epsilon_bits;
  std::memcpy(&epsilon_bits, &c.epsilon, 4);
  for (int worker = 0; worker < c.workers; ++worker) {
    auto first = static_cast<std::uint32_t>(2 * c.panels * worker / c.workers);
    auto last = static_cast<std::uint32_t>(2 * c.panels * (worker + 1) / c.workers);
    std::vector<std::uint32_t> block{last - first, static_cast<std::uint32_t>(columns), in + first * 8 * in_bytes,
                                     out + first * 8 * out_bytes, in_stride, out_stride};
    if (c.kernel == RowKernel::LayerNorm) {
      block.push_back(gamma_beta);
      block.push_back(epsilon_bits);
    }
    block.push_back(static_cast<std::uint32_t>(c.written()));
    block.push_back(static_cast<std::uint32_t>(c.first_output_column) * in_stride);
    run.blocks.push_back(std::move(block));
  }

  RowOutcome outcome;
  outcome.result = harness().run(run);
  outcome.expected.resize(x.size());
  if (c.kernel == RowKernel::LayerNorm)
    reference::layernorm(x, gamma, beta, outcome.expected, columns, c.epsilon);
  else
    reference::softmax(x, outcome.expected, columns);
  // Only the written columns, row-major.
  std::vector<float> all = std::move(outcome.expected);
  outcome.expected.clear();
  for (std::int64_t row = 0; row < rows; ++row)
    for (std::int64_t column = 0; column < c.written(); ++column)
      outcome.expected.push_back(all[static_cast<std::size_t>(row * columns + c.first_output_column + column)]);
  const std::vector<std::uint8_t>& bytes = outcome.result.outputs[0];
  outcome.actual.resize(outcome.expected.size());
  for (std::int64_t row = 0; row < rows; ++row)
    for (std::int64_t column = 0; column < c.written(); ++column) {
      const std::size_t at = static_cast<std::size_t>(column * rows + row) * out_bytes;
      float value;
      if (c.output == ElementType::F16) {
        std::uint16_t half;
        std::memcpy(&half, &bytes[at], 2);
        value = half_to_float(half);
      } else {
        std::memcpy(&value, &bytes[at], 4);
      }
      outcome.actual[static_cast<std::size_t>(row * c.written() + column)] = value;
    }
  return outcome;
}

// Distance from |value| (an FP16 or FP32 value) to the next one above.
float fp16_step(float value) {
  const std::uint16_t half = float_to_half(std::fabs(value));
  return half_to_float(static_cast<std::uint16_t>(half + 1)) - half_to_float(half);
}
float fp32_step(float value) { return std::nextafter(std::fabs(value), INFINITY) - std::fabs(value); }

void check(const RowCase& c, const RowOutcome& outcome) {
  int bad = 0;
  for (std::size_t i = 0; i < outcome.actual.size(); ++i) {
    const float want = c.output == ElementType::F16 ? round_to_half(outcome.expected[i]) : outcome.expected[i];
    const float got = outcome.actual[i];
    bool ok;
    if (c.kernel == RowKernel::LayerNorm)
      ok = std::bit_cast<std::uint32_t>(got) == std::bit_cast<std::uint32_t>(want);
    else if (c.output == ElementType::F16)
      ok = std::fabs(got - want) <= fp16_step(want);
    else
      ok = std::fabs(got - want) <= 2 * fp32_step(want);
    if (!ok && ++bad <= 3)
      ADD_FAILURE() << kernel_name(c) << ": element " << i << " is " << got << ", expected " << want;
  }
  EXPECT_EQ(bad, 0) << kernel_name(c);
}

void expect_bundles(const RowCase& c, const RowOutcome& outcome) {
  ASSERT_EQ(outcome.result.worker_cycles.size(), static_cast<std::size_t>(c.workers));
  for (int worker = 0; worker < c.workers; ++worker) {
    const std::int64_t halves = 2 * c.panels * (worker + 1) / c.workers - 2 * c.panels * worker / c.workers;
    EXPECT_EQ(static_cast<std::int64_t>((outcome.result.worker_cycles[static_cast<std::size_t>(worker)] + 4) / 6),
              row_worker_bundles(c.kernel, c.input, c.output, halves, c.columns, c.written()) + (halves == 0 ? 10 : 0))
        << kernel_name(c) << " worker " << worker;
  }
}

class RowKernels : public ::testing::TestWithParam<std::tuple<RowKernel, ElementType, ElementType>> {};

TEST_P(RowKernels, MatchTheReferenceAndTheCostModel) {
  RowCase c;
  std::tie(c.kernel, c.input, c.output) = GetParam();
  for (auto [panels, columns, workers] : {std::tuple{3, 37, 6}, std::tuple{7, 1, 6}, std::tuple{2, 64, 1}, std::tuple{8, 5, 5},
                                             std::tuple{1, 19, 6}, std::tuple{2, 9, 4}}) {
    c.panels = panels;
    c.columns = columns;
    c.workers = workers;
    RowOutcome outcome = run_rows(c);
    check(c, outcome);
    expect_bundles(c, outcome);
  }
}

// A tile writing some of the columns: the statistics over all of them, the
// output of its own, bit for bit (LayerNorm) as when it writes them all.
TEST_P(RowKernels, WriteAColumnRange) {
  RowCase c;
  std::tie(c.kernel, c.input, c.output) = GetParam();
  for (auto [first, count] : {std::pair{0, 5}, std::pair{13, 11}, std::pair{36, 1}}) {
    c.panels = 2;
    c.columns = 37;
    c.first_output_column = first;
    c.output_columns = count;
    RowOutcome outcome = run_rows(c);
    check(c, outcome);
    expect_bundles(c, outcome);
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryType, RowKernels,
    ::testing::Combine(::testing::Values(RowKernel::LayerNorm, RowKernel::Softmax),
                       ::testing::Values(ElementType::F32, ElementType::F16),
                       ::testing::Values(ElementType::F32, ElementType::F16)),
    [](const auto& info) {
      return fmt::format("{}_{}_{}", std::get<0>(info.param) == RowKernel::LayerNorm ? "LayerNorm" : "Softmax",
                         element_type_name(std::get<1>(info.param)), element_type_name(std::get<2>(info.param)));
    });

TEST(RowKernels, LayerNormOfLargeValuesKeepsItsPrecision) {
  // Rows far from zero: the two-pass variance does not cancel.
  RowCase c;
  c.panels = 1;
  c.columns = 300;
  c.workers = 1;
  c.epsilon = 1e-5f;
  c.mean = 3000.0f;
  RowOutcome outcome = run_rows(c);
  check(c, outcome);
}

TEST(RowKernels, WideRowsRunAtTheirLoopsRate) {
  for (RowKernel kernel : {RowKernel::LayerNorm, RowKernel::Softmax}) {
    RowCase c;
    c.kernel = kernel;
    c.panels = 6;
    c.columns = 768;
    c.input = c.output = ElementType::F16;
    RowOutcome outcome = run_rows(c);
    check(c, outcome);
    // The loops' share: one bundle per instruction of their busier slot.
    const double loops = 6.0 * 2 * static_cast<double>(c.columns) * row_bundles_per_column(kernel, c.input, c.output);
    const double cycles = static_cast<double>(outcome.result.kernel_cycles);
    std::cerr << kernel_name(c) << " C=" << c.columns << ": " << outcome.result.kernel_cycles << " cycles, "
              << row_bundles_per_column(kernel, c.input, c.output) << " bundles per column of 8 rows, loops "
              << loops / cycles << " of the cycles; model " << row_tile_cycles(kernel, c.input, c.output, c.panels, c.columns, c.columns)
              << "\n";
    EXPECT_GT(loops / cycles, 0.98);
    EXPECT_NEAR(row_tile_cycles(kernel, c.input, c.output, c.panels, c.columns, c.columns) / static_cast<double>(outcome.result.stats.halt_cycle), 1.0, 0.03);
  }
}

}  // namespace
}  // namespace tilec::compiler
