// The GEMM kernels on one simulated tile against a host computation of the
// same sums in the same order (bit-identical outputs), with their AMP rate:
// never above the machine's peak, and close to it on long K; and the drain
// with a fused epilogue (GELU, casts) against the same host steps.
#include "compiler/cost_model.h"
#include "kernel_harness.h"
#include "numerics/fp16.h"
#include "numerics/fp8.h"
#include "numerics/reference_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace tilec::compiler {
namespace {

using testing::Bytes;
using testing::DataPlaces;
using testing::KernelHarness;
using testing::KernelResult;
using testing::KernelRun;

struct GemmCase {
  ElementType weights = ElementType::F143;
  ElementType activations = ElementType::F143;
  std::uint32_t k = 8;
  std::uint32_t panels = 2;         // M = 16 x panels
  std::uint32_t column_blocks = 2;  // N = 16 x column_blocks
  bool drain_f32 = false;
  int weight_scale = 0;             // FP8 only
  int activation_scale = 0;
  int workers = 6;
  std::vector<CombineStage> epilogue;  // fused into the drain
};

double peak_macs_per_cycle(ElementType operand) {
  return operand == ElementType::F32 ? 16 : operand == ElementType::F16 ? 64 : 128;
}

// Operand codes and their values (FP8 without the tensor scale: the AMP
// multiplies the codes' own values).
struct Operand {
  std::vector<std::uint8_t> bytes;  // one element after another
  std::vector<float> values;
};

Operand random_operand(ElementType type, std::size_t count, std::mt19937& random) {
  Operand operand;
  operand.values.resize(count);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (std::size_t i = 0; i < count; ++i) {
    switch (type) {
      case ElementType::F32: {
        float value = uniform(random);
        operand.values[i] = value;
        std::uint32_t bits;
        std::memcpy(&bits, &value, 4);
        for (int b = 0; b < 4; ++b) operand.bytes.push_back(static_cast<std::uint8_t>(bits >> (8 * b)));
        break;
      }
      case ElementType::F16: {
        std::uint16_t half = float_to_half(uniform(random));
        operand.values[i] = half_to_float(half);
        operand.bytes.push_back(static_cast<std::uint8_t>(half));
        operand.bytes.push_back(static_cast<std::uint8_t>(half >> 8));
        break;
      }
      default: {
        // Every code but NaN (0x80), so products span the format's range.
        auto code = static_cast<std::uint8_t>(random());
        if (code == 0x80) code = 0;
        operand.values[i] = fp8_table(type)[code];
        operand.bytes.push_back(code);
        break;
      }
    }
  }
  return operand;
}

struct GemmOutcome {
  int mismatches = 0;
  std::uint64_t macs = 0;
  KernelResult result;
};

// Activations X [M][K] stored [k][panels][16 rows]; weights W [K][N] stored
// [N/16 blocks][k][16 columns]; output [N][panels][16 rows].
GemmOutcome run_gemm(const GemmCase& c) {
  const std::uint32_t m = 16 * c.panels, n = 16 * c.column_blocks, k = c.k;
  const std::uint32_t wbytes = element_bytes(c.weights), xbytes = element_bytes(c.activations);
  GemmVariant variant;
  variant.weights = c.weights;
  variant.activations = c.activations;
  variant.activation_stride = c.panels * 16 * xbytes;
  variant.scale = is_fp8(c.weights) ? c.weight_scale + c.activation_scale : 0;
  variant.drain_f32 = c.drain_f32;
  variant.epilogue = c.epilogue;
  const std::uint32_t obytes = element_bytes(variant.output());
  variant.output_stride = c.panels * 16 * obytes;
  KernelLibrary library;
  std::string kernel = library.gemm(variant);
  KernelHarness harness(library);

  std::mt19937 random(k * 131 + m * 7 + n + static_cast<std::uint32_t>(c.weights) * 1000 + c.drain_f32);
  // Element (row, k) of X is operand element k * M + row: the panel format.
  Operand x = random_operand(c.activations, std::size_t{m} * k, random);
  // Element (k, column) of W: block (column / 16), then k, then column % 16.
  Operand w = random_operand(c.weights, std::size_t{k} * n, random);

  DataPlaces places;
  std::uint32_t x_address = places.take(static_cast<std::uint32_t>(x.bytes.size()));
  std::uint32_t w_address = places.take(static_cast<std::uint32_t>(w.bytes.size()));
  std::uint32_t out_address = places.take(n * m * obytes);
  KernelRun run{kernel, {}, {{x_address, x.bytes}, {w_address, w.bytes}}, {{out_address, n * m * obytes}}};

  const std::uint32_t jobs = c.column_blocks * c.panels;
  for (int worker = 0; worker < c.workers; ++worker) {
    std::uint32_t first = jobs * worker / c.workers, last = jobs * (worker + 1) / c.workers;
    std::vector<std::uint32_t> block{last - first, w_address, x_address, out_address};
    for (std::uint32_t job = first; job < last; ++job) {
      std::uint32_t column_block = job / c.panels, panel = job % c.panels;
      block.push_back(column_block * k * 16 * wbytes);
      block.push_back(panel * 16 * xbytes);
      block.push_back((column_block * 16 * c.panels + panel) * 16 * obytes);
      block.push_back(k);
    }
    run.blocks.push_back(std::move(block));
  }

  GemmOutcome outcome;
  outcome.result = harness.run(run);
  outcome.macs = std::uint64_t{m} * n * k;
  const std::vector<std::uint8_t>& out = outcome.result.outputs[0];
  const float scale = std::ldexp(1.0f, variant.scale);
  for (std::uint32_t column = 0; column < n; ++column)
    for (std::uint32_t row = 0; row < m; ++row) {
      // The AMP's order: k ascending, each product exact (FP8, FP16) or
      // fused (FP32), rounded to FP32 as it is added.
      float sum = 0.0f;
      for (std::uint32_t step = 0; step < k; ++step) {
        float a = w.values[(column / 16 * k + step) * 16 + column % 16];
        float b = x.values[std::size_t{step} * m + row];
        sum = c.weights == ElementType::F32 ? std::fma(a, b, sum) : sum + a * b;
      }
      const std::size_t index = std::size_t{column} * m + row;  // [n][panels][16] = [n][m]
      bool same;
      if (!c.epilogue.empty()) {
        // The drain rounds to FP16, then each stage as the combine kernels do.
        float value = round_to_half(sum * scale);
        std::uint8_t code = 0;
        for (const CombineStage& stage : c.epilogue) {
          if (stage.kind == EpilogueOp::Kind::Gelu)
            value = round_to_half(stage.approximation == graph::GeluApproximation::Erf ? reference::gelu_erf(value)
                                                                                      : reference::gelu_tanh(value));
          if (is_fp8(stage.result.element)) code = float_to_fp8(value, stage.result.element, stage.result.scale);
        }
        if (is_fp8(variant.output())) {
          same = out[index] == code;
        } else {
          std::uint16_t actual = static_cast<std::uint16_t>(out[2 * index] | out[2 * index + 1] << 8);
          same = actual == float_to_half(value);
        }
      } else if (c.drain_f32) {
        float actual;
        std::memcpy(&actual, out.data() + 4 * index, 4);
        same = std::bit_cast<std::uint32_t>(actual) == std::bit_cast<std::uint32_t>(sum * scale);
      } else {
        std::uint16_t actual = static_cast<std::uint16_t>(out[2 * index] | out[2 * index + 1] << 8);
        same = actual == float_to_half(sum * scale);
      }
      if (!same && ++outcome.mismatches <= 3)
        ADD_FAILURE() << "output column " << column << " row " << row << " differs from " << sum * scale;
    }
  return outcome;
}

void expect_within_peak(const GemmCase& c, const GemmOutcome& outcome) {
  const sim::TileStats& stats = outcome.result.stats;
  EXPECT_EQ(stats.total_amp_macs(), outcome.macs);
  ASSERT_GT(outcome.result.kernel_cycles, 0u);
  double per_cycle = static_cast<double>(stats.total_amp_macs()) / static_cast<double>(outcome.result.kernel_cycles);
  EXPECT_LE(per_cycle, peak_macs_per_cycle(c.weights));
  EXPECT_LE(static_cast<double>(stats.total_amp_macs()) / static_cast<double>(stats.halt_cycle),
            peak_macs_per_cycle(c.weights));
}

// AMP utilisation: MACs over the kernel's cycles at the operand's peak.
double utilisation(const GemmCase& c, const GemmOutcome& outcome) {
  return static_cast<double>(outcome.macs) /
         (static_cast<double>(outcome.result.kernel_cycles) * peak_macs_per_cycle(c.weights));
}

struct Fp8Param {
  ElementType weights;
  ElementType activations;
  bool drain_f32;
  std::uint32_t k;
};

class GemmFp8 : public ::testing::TestWithParam<Fp8Param> {};

TEST_P(GemmFp8, MatchesTheHostSumsBitForBit) {
  GemmCase c;
  c.weights = GetParam().weights;
  c.activations = GetParam().activations;
  c.drain_f32 = GetParam().drain_f32;
  c.k = GetParam().k;
  c.panels = 3;
  c.column_blocks = 3;  // 9 jobs: workers take one or two
  c.weight_scale = -3;
  c.activation_scale = -2;
  GemmOutcome outcome = run_gemm(c);
  EXPECT_EQ(outcome.mismatches, 0);
  expect_within_peak(c, outcome);
}

INSTANTIATE_TEST_SUITE_P(
    FormatsDrainsAndK, GemmFp8,
    ::testing::Values(Fp8Param{ElementType::F143, ElementType::F143, false, 1},
                      Fp8Param{ElementType::F143, ElementType::F143, false, 2},
                      Fp8Param{ElementType::F143, ElementType::F143, true, 7},
                      Fp8Param{ElementType::F143, ElementType::F143, true, 10},
                      Fp8Param{ElementType::F152, ElementType::F152, false, 9},
                      Fp8Param{ElementType::F152, ElementType::F152, true, 12},
                      Fp8Param{ElementType::F143, ElementType::F152, false, 6},
                      Fp8Param{ElementType::F152, ElementType::F143, true, 5}));

TEST(GemmFp8, LongKOnSixWorkersRunsAbove95PercentOfThePeak) {
  GemmCase c;
  c.k = 1152;
  c.panels = 6;
  c.column_blocks = 2;  // two jobs per worker
  GemmOutcome outcome = run_gemm(c);
  EXPECT_EQ(outcome.mismatches, 0);
  expect_within_peak(c, outcome);
  RecordProperty("utilisation", fmt::format("{:.4f}", utilisation(c, outcome)));
  std::cerr << "fp8 k=1152: " << outcome.result.kernel_cycles << " cycles, utilisation " << utilisation(c, outcome)
            << "\n";
  EXPECT_GT(utilisation(c, outcome), 0.95);
}

TEST(GemmFp8, OneWorkerIssuesOnceEverySixCycles) {
  GemmCase c;
  c.k = 64;
  c.panels = 1;
  c.column_blocks = 1;
  c.workers = 1;
  GemmOutcome outcome = run_gemm(c);
  EXPECT_EQ(outcome.mismatches, 0);
  expect_within_peak(c, outcome);
  // One context alone reaches a sixth of the peak at most.
  EXPECT_LT(utilisation(c, outcome), 1.0 / 6);
}

class GemmWide : public ::testing::TestWithParam<std::tuple<ElementType, bool, std::uint32_t>> {};

TEST_P(GemmWide, MatchesTheHostSumsBitForBit) {
  GemmCase c;
  c.weights = c.activations = std::get<0>(GetParam());
  c.drain_f32 = std::get<1>(GetParam());
  c.k = std::get<2>(GetParam());
  c.panels = 2;
  c.column_blocks = 4;
  c.workers = 5;
  GemmOutcome outcome = run_gemm(c);
  EXPECT_EQ(outcome.mismatches, 0);
  expect_within_peak(c, outcome);
}

INSTANTIATE_TEST_SUITE_P(Fp16AndFp32, GemmWide,
                         ::testing::Combine(::testing::Values(ElementType::F16, ElementType::F32),
                                            ::testing::Bool(), ::testing::Values(1u, 2u, 5u, 8u)));

TEST(GemmWide, LongKOnSixWorkersRunsAbove95PercentOfThePeak) {
  for (ElementType type : {ElementType::F16, ElementType::F32}) {
    GemmCase c;
    c.weights = c.activations = type;
    c.k = type == ElementType::F16 ? 576 : 160;
    c.panels = 6;
    c.column_blocks = 1;
    GemmOutcome outcome = run_gemm(c);
    EXPECT_EQ(outcome.mismatches, 0);
    expect_within_peak(c, outcome);
    std::cerr << element_type_name(type) << " k=" << c.k << ": " << outcome.result.kernel_cycles
              << " cycles, utilisation " << utilisation(c, outcome) << "\n";
    EXPECT_GT(utilisation(c, outcome), 0.95) << element_type_name(type);
  }
}

CombineStage stage(EpilogueOp::Kind kind, StorageType result,
                   graph::GeluApproximation approximation = graph::GeluApproximation::Tanh) {
  return CombineStage{kind, approximation, result};
}

TEST(GemmFusedEpilogue, DrainsThroughGeluAndCasts) {
  using Kind = EpilogueOp::Kind;
  const StorageType f16{ElementType::F16, 0};
  const std::vector<std::vector<CombineStage>> epilogues{
      {stage(Kind::Gelu, f16), stage(Kind::Cast, {ElementType::F143, -4})},
      {stage(Kind::Gelu, f16, graph::GeluApproximation::Erf)},
      {stage(Kind::Cast, {ElementType::F152, 1})},
      {stage(Kind::Cast, f16), stage(Kind::Gelu, f16), stage(Kind::Cast, {ElementType::F143, 0})}};
  for (ElementType operand : {ElementType::F143, ElementType::F16}) {
    for (const auto& epilogue : epilogues) {
      GemmCase c;
      c.weights = c.activations = operand;
      c.k = 24;
      c.panels = 2;
      c.column_blocks = 4;
      c.weight_scale = -2;
      c.epilogue = epilogue;
      GemmOutcome outcome = run_gemm(c);
      EXPECT_EQ(outcome.mismatches, 0) << element_type_name(operand);
      expect_within_peak(c, outcome);
      GemmVariant variant;
      variant.weights = variant.activations = operand;
      variant.epilogue = epilogue;
      for (std::size_t worker = 0; worker < outcome.result.worker_cycles.size(); ++worker) {
        const std::int64_t jobs = 8 * static_cast<std::int64_t>(worker + 1) / 6 - 8 * static_cast<std::int64_t>(worker) / 6;
        EXPECT_EQ(static_cast<std::int64_t>((outcome.result.worker_cycles[worker] + 4) / 6),
                  gemm_worker_bundles(jobs, c.k, variant));
      }
    }
  }
}

TEST(GemmFusedEpilogue, SaysWhichEpiloguesTheDrainApplies) {
  using Kind = EpilogueOp::Kind;
  const StorageType f16{ElementType::F16, 0}, f32{ElementType::F32, 0}, f8{ElementType::F143, 0};
  GemmVariant variant;
  variant.epilogue = {stage(Kind::Gelu, f16), stage(Kind::Cast, f8)};
  EXPECT_TRUE(fused_epilogue_supported(variant));
  variant.drain_f32 = true;
  EXPECT_FALSE(fused_epilogue_supported(variant));
  variant.drain_f32 = false;
  variant.epilogue = {stage(Kind::Cast, f8), stage(Kind::Gelu, f16)};
  EXPECT_FALSE(fused_epilogue_supported(variant));
  variant.epilogue = {stage(Kind::Gelu, f32)};
  EXPECT_FALSE(fused_epilogue_supported(variant));
  variant.epilogue = {stage(Kind::AddBias, f16)};
  EXPECT_FALSE(fused_epilogue_supported(variant));
  // The same GEMM without an epilogue is another variant, drained as before.
  KernelLibrary library;
  GemmVariant plain;
  variant.epilogue = {stage(Kind::Gelu, f16)};
  EXPECT_NE(library.gemm(plain), library.gemm(variant));
}

// K split in two: a GEMM over steps [0, split) drains FP32 partial sums,
// then one over [split, K) adds its sums to them (DRAIN_F32_ADD).
struct SplitOutcome {
  std::vector<float> split;            // the two runs' result, [n][m]
  std::vector<float> whole;            // one run over all of K
  std::vector<float> expected;         // the host: (sum over the first part) + (sum over the second) x 2^scale
  std::vector<std::uint64_t> worker_cycles;
  std::int64_t jobs = 0;
};

SplitOutcome run_split_gemm(ElementType operand, std::uint32_t k, std::uint32_t split, int scale, bool integers) {
  const std::uint32_t panels = 2, column_blocks = 3, m = 16 * panels, n = 16 * column_blocks;
  const std::uint32_t bytes = element_bytes(operand);
  std::mt19937 random(k * 17 + split);
  Operand x = random_operand(operand, std::size_t{m} * k, random);
  Operand w = random_operand(operand, std::size_t{k} * n, random);
  if (integers) {
    // Small integers: every partial sum is exact, so the order cannot show.
    for (Operand* o : {&x, &w}) {
      o->bytes.clear();
      for (float& value : o->values) {
        value = static_cast<float>(static_cast<int>(random() % 7) - 3);
        if (operand == ElementType::F16) {
          const std::uint16_t half = float_to_half(value);
          o->bytes.push_back(static_cast<std::uint8_t>(half));
          o->bytes.push_back(static_cast<std::uint8_t>(half >> 8));
        } else {
          const std::uint8_t code = float_to_fp8(value, operand, 0);
          o->bytes.push_back(code);
        }
      }
    }
  }
  DataPlaces places;
  const std::uint32_t x_address = places.take(static_cast<std::uint32_t>(x.bytes.size()));
  const std::uint32_t w_address = places.take(static_cast<std::uint32_t>(w.bytes.size()));
  const std::uint32_t out_bytes = n * m * 4, out_address = places.take(out_bytes);

  GemmVariant variant;
  variant.weights = variant.activations = operand;
  variant.activation_stride = panels * 16 * bytes;
  variant.output_stride = panels * 16 * 4;
  variant.scale = scale;
  variant.drain_f32 = true;
  GemmVariant accumulating = variant;
  accumulating.accumulate = true;
  KernelLibrary library;
  const std::string plain = library.gemm(variant), adding = library.gemm(accumulating);
  KernelHarness harness(library);

  // Steps [first, first + steps) of every job, as 6 workers' blocks.
  const std::uint32_t jobs = column_blocks * panels;
  auto blocks = [&](std::uint32_t first, std::uint32_t steps) {
    std::vector<std::vector<std::uint32_t>> out;
    for (std::uint32_t worker = 0; worker < 6; ++worker) {
      std::vector<std::uint32_t> block{jobs * (worker + 1) / 6 - jobs * worker / 6, w_address, x_address, out_address};
      for (std::uint32_t job = jobs * worker / 6; job < jobs * (worker + 1) / 6; ++job) {
        const std::uint32_t column_block = job / panels, panel = job % panels;
        block.push_back((column_block * k + first) * 16 * bytes);
        block.push_back(panel * 16 * bytes + first * variant.activation_stride);
        block.push_back((column_block * 16 * panels + panel) * 16 * 4);
        block.push_back(steps);
      }
      out.push_back(std::move(block));
    }
    return out;
  };
  auto floats = [](const std::vector<std::uint8_t>& bytes) {
    std::vector<float> values(bytes.size() / 4);
    std::memcpy(values.data(), bytes.data(), bytes.size());
    return values;
  };
  const std::vector<Bytes> operands{{x_address, x.bytes}, {w_address, w.bytes}};
  KernelResult first_part = harness.run(KernelRun{plain, blocks(0, split), operands, {{out_address, out_bytes}}});
  std::vector<Bytes> with_partials = operands;
  with_partials.push_back({out_address, first_part.outputs[0]});
  KernelResult second_part =
      harness.run(KernelRun{adding, blocks(split, k - split), with_partials, {{out_address, out_bytes}}});
  KernelResult whole = harness.run(KernelRun{plain, blocks(0, k), operands, {{out_address, out_bytes}}});

  SplitOutcome outcome;
  outcome.split = floats(second_part.outputs[0]);
  outcome.whole = floats(whole.outputs[0]);
  outcome.worker_cycles = second_part.worker_cycles;
  outcome.jobs = jobs;
  const float factor = std::ldexp(1.0f, scale);
  for (std::uint32_t column = 0; column < n; ++column)
    for (std::uint32_t row = 0; row < m; ++row) {
      float sums[2] = {0.0f, 0.0f};
      for (std::uint32_t step = 0; step < k; ++step) {
        const float a = w.values[(column / 16 * k + step) * 16 + column % 16], b = x.values[std::size_t{step} * m + row];
        sums[step < split ? 0 : 1] += a * b;
      }
      outcome.expected.push_back(sums[0] * factor + sums[1] * factor);
    }
  return outcome;
}

TEST(GemmAccumulate, TwoRunsOverAKSplitAddUpInTheOutput) {
  for (ElementType operand : {ElementType::F143, ElementType::F16}) {
    for (auto [k, split] : {std::pair{24u, 10u}, std::pair{9u, 1u}, std::pair{16u, 15u}}) {
      const int scale = operand == ElementType::F143 ? -3 : 0;
      SplitOutcome outcome = run_split_gemm(operand, k, split, scale, false);
      int mismatches = 0;
      for (std::size_t i = 0; i < outcome.split.size(); ++i)
        if (std::bit_cast<std::uint32_t>(outcome.split[i]) != std::bit_cast<std::uint32_t>(outcome.expected[i]) &&
            ++mismatches <= 3)
          ADD_FAILURE() << element_type_name(operand) << " k=" << k << " split at " << split << ": element " << i
                        << " is " << outcome.split[i] << ", expected " << outcome.expected[i];
      EXPECT_EQ(mismatches, 0);
      // Every worker's bundles: the accumulating drain as the cost model counts it.
      GemmVariant variant;
      variant.weights = variant.activations = operand;
      variant.drain_f32 = variant.accumulate = true;
      for (std::size_t worker = 0; worker < outcome.worker_cycles.size(); ++worker) {
        const std::int64_t jobs = outcome.jobs * static_cast<std::int64_t>(worker + 1) / 6 -
                                  outcome.jobs * static_cast<std::int64_t>(worker) / 6;
        EXPECT_EQ(static_cast<std::int64_t>((outcome.worker_cycles[worker] + 4) / 6),
                  gemm_worker_bundles(jobs, k - split, variant));
      }
    }
  }
}

TEST(GemmAccumulate, ExactSumsEqualOneRunOverAllOfK) {
  for (ElementType operand : {ElementType::F143, ElementType::F16}) {
    SplitOutcome outcome = run_split_gemm(operand, 20, 7, 0, true);
    EXPECT_EQ(outcome.split, outcome.whole) << element_type_name(operand);
    EXPECT_NE(outcome.whole, std::vector<float>(outcome.whole.size(), 0.0f));
  }
}

TEST(GemmAccumulate, NeedsAnFp32DrainWithoutEpilogue) {
  KernelLibrary library;
  GemmVariant variant;
  variant.accumulate = true;
  EXPECT_THROW(library.gemm(variant), Error);
  variant.drain_f32 = true;
  EXPECT_NO_THROW(library.gemm(variant));
  EXPECT_EQ(gemm_drain_bundles(variant), 129);
}

// Weights read out of another matrix's activation panel format with a
// stride: B [R][K] stored [K][R/16 panels][16 rows] gives, at one k, the 16
// rows of one panel: column block b of W = B^T is B's panel b. So C = X B^T
// (attention's scores q k^T) needs no copy of B.
struct StridedCase {
  ElementType operand = ElementType::F16;
  std::uint32_t k = 24;
  std::uint32_t panels = 2;   // of X: M = 16 panels
  std::uint32_t b_panels = 3; // of B: R = 16 b_panels output columns
  bool drain_f32 = true;
  int workers = 5;
};

TEST(GemmWeightStride, ReadsTheWeightsOutOfAPanelFormatBitForBit) {
  for (ElementType operand : {ElementType::F16, ElementType::F32, ElementType::F143})
    for (auto [k, panels, b_panels, drain_f32] : {std::tuple{24u, 2u, 3u, true}, std::tuple{7u, 1u, 5u, false},
                                                  std::tuple{72u, 5u, 6u, true}, std::tuple{1u, 3u, 1u, false}}) {
      StridedCase c{operand, k, panels, b_panels, drain_f32, 5};
      const std::uint32_t m = 16 * c.panels, r = 16 * c.b_panels, bytes = element_bytes(operand);
      GemmVariant variant;
      variant.weights = variant.activations = operand;
      variant.activation_stride = c.panels * 16 * bytes;
      variant.weight_stride = c.b_panels * 16 * bytes;
      variant.drain_f32 = c.drain_f32;
      const std::uint32_t out_bytes = c.drain_f32 ? 4 : 2;
      variant.output_stride = c.panels * 16 * out_bytes;
      KernelLibrary library;
      const std::string kernel = library.gemm(variant);
      KernelHarness harness(library);

      std::mt19937 random(k * 7 + panels * 3 + b_panels + static_cast<std::uint32_t>(operand));
      // X (row, k) at k * M + row; B (row, k) at k * R + row: both panel formats.
      Operand x = random_operand(operand, std::size_t{m} * k, random);
      Operand b = random_operand(operand, std::size_t{r} * k, random);
      DataPlaces places;
      const std::uint32_t x_at = places.take(static_cast<std::uint32_t>(x.bytes.size()));
      const std::uint32_t b_at = places.take(static_cast<std::uint32_t>(b.bytes.size()));
      const std::uint32_t out_size = r * m * out_bytes, out_at = places.take(out_size);
      KernelRun run{kernel, {}, {{x_at, x.bytes}, {b_at, b.bytes}}, {{out_at, out_size}}};
      const std::uint32_t jobs = c.b_panels * c.panels;
      std::vector<std::int64_t> worker_jobs;
      for (int worker = 0; worker < c.workers; ++worker) {
        const std::uint32_t first = jobs * worker / c.workers, last = jobs * (worker + 1) / c.workers;
        std::vector<std::uint32_t> block{last - first, b_at, x_at, out_at};
        for (std::uint32_t job = first; job < last; ++job) {
          const std::uint32_t block_index = job / c.panels, panel = job % c.panels;
          block.push_back(block_index * 16 * bytes);  // B's panel: its 16 rows at k = 0
          block.push_back(panel * 16 * bytes);
          block.push_back((block_index * 16 * c.panels + panel) * 16 * out_bytes);
          block.push_back(k);
        }
        run.blocks.push_back(std::move(block));
        worker_jobs.push_back(last - first);
      }
      const KernelResult result = harness.run(run);
      int mismatches = 0;
      for (std::uint32_t column = 0; column < r; ++column)
        for (std::uint32_t row = 0; row < m; ++row) {
          float sum = 0.0f;
          for (std::uint32_t step = 0; step < k; ++step) {
            const float w = b.values[std::size_t{step} * r + column], a = x.values[std::size_t{step} * m + row];
            sum = operand == ElementType::F32 ? std::fma(w, a, sum) : sum + w * a;
          }
          const std::size_t index = std::size_t{column} * m + row;
          bool same;
          if (c.drain_f32) {
            float actual;
            std::memcpy(&actual, result.outputs[0].data() + 4 * index, 4);
            same = std::bit_cast<std::uint32_t>(actual) == std::bit_cast<std::uint32_t>(sum);
          } else {
            const auto actual = static_cast<std::uint16_t>(result.outputs[0][2 * index] | result.outputs[0][2 * index + 1] << 8);
            same = actual == float_to_half(sum);
          }
          if (!same && ++mismatches <= 3)
            ADD_FAILURE() << element_type_name(operand) << " k=" << k << ": column " << column << " row " << row;
        }
      EXPECT_EQ(mismatches, 0) << element_type_name(operand) << " k=" << k;
      // The stride changes immediates only: the bundles are the packed kernel's.
      for (std::size_t worker = 0; worker < result.worker_cycles.size(); ++worker)
        EXPECT_EQ(static_cast<std::int64_t>((result.worker_cycles[worker] + 4) / 6),
                  gemm_worker_bundles(worker_jobs[worker], k, operand, c.drain_f32))
            << element_type_name(operand) << " worker " << worker;
    }
}

TEST(GemmWeightStride, ThePackedStrideIsTheDefaultKernel) {
  KernelLibrary library;
  GemmVariant packed;
  packed.weights = packed.activations = ElementType::F16;
  GemmVariant spelled = packed;
  spelled.weight_stride = 32;
  EXPECT_EQ(library.gemm(packed), library.gemm(spelled));
  EXPECT_EQ(library.variant_count(), 1u);
  GemmVariant strided = packed;
  strided.weight_stride = 96;
  EXPECT_NE(library.gemm(packed), library.gemm(strided));
  strided.weight_stride = 40;
  EXPECT_THROW(library.gemm(strided), Error);
  strided.weight_stride = kMaxGemmWeightStride + 16;
  EXPECT_THROW(library.gemm(strided), Error);
  strided.weight_stride = kMaxGemmWeightStride;
  EXPECT_NO_THROW(library.gemm(strided));
}

// V [keys][d] in the panel format transposed by a GEMM: the 16x16 identity
// as the activation, V read as the weights (at one k, 16 keys of one column
// of V), into the weight format [d / 16 blocks][keys][16 d]: what P V needs
// as its weights. A last block of fewer than 16 columns of V takes fewer k
// steps and leaves zeros in the rest of its rows.
TEST(GemmWeightStride, TransposesAPanelFormatByTheIdentityExactly) {
  for (ElementType type : {ElementType::F16, ElementType::F32})
    for (auto [key_panels, d] : {std::pair{6u, 72u}, std::pair{1u, 16u}, std::pair{2u, 5u}}) {
      const std::uint32_t bytes = element_bytes(type), keys = 16 * key_panels, blocks = (d + 15) / 16;
      GemmVariant variant;
      variant.weights = variant.activations = type;
      variant.activation_stride = 16 * bytes;             // the identity: one panel
      variant.weight_stride = key_panels * 16 * bytes;    // V's column stride
      variant.drain_f32 = type == ElementType::F32;       // the drain keeps V's type
      variant.output_stride = 16 * bytes;                 // one key to the next
      KernelLibrary library;
      const std::string kernel = library.gemm(variant);
      KernelHarness harness(library);

      std::mt19937 random(key_panels * 100 + d);
      Operand v = random_operand(type, std::size_t{keys} * d, random);  // (key, column) at column * keys + key
      // A negative zero comes out as +0: the sum starts from +0.
      const float negative_zero = -0.0f;
      v.values[3] = negative_zero;
      if (type == ElementType::F16) {
        v.bytes[6] = 0x00;
        v.bytes[7] = 0x80;
      } else {
        std::memcpy(&v.bytes[12], &negative_zero, 4);
      }
      std::vector<float> identity(256, 0.0f);
      for (int i = 0; i < 16; ++i) identity[static_cast<std::size_t>(i * 16 + i)] = 1.0f;
      std::vector<std::uint8_t> identity_bytes;
      for (float one : identity) {
        if (type == ElementType::F16) {
          const std::uint16_t half = float_to_half(one);
          identity_bytes.push_back(static_cast<std::uint8_t>(half));
          identity_bytes.push_back(static_cast<std::uint8_t>(half >> 8));
        } else {
          std::uint8_t raw[4];
          std::memcpy(raw, &one, 4);
          identity_bytes.insert(identity_bytes.end(), raw, raw + 4);
        }
      }
      DataPlaces places;
      const std::uint32_t v_at = places.take(static_cast<std::uint32_t>(v.bytes.size()));
      const std::uint32_t identity_at = places.take(256 * bytes);
      const std::uint32_t out_size = blocks * keys * 16 * bytes, out_at = places.take(out_size);
      KernelRun run{kernel, {}, {{v_at, v.bytes}, {identity_at, identity_bytes}}, {{out_at, out_size}}};
      const std::uint32_t jobs = key_panels * blocks;
      for (std::uint32_t worker = 0; worker < 6; ++worker) {
        std::vector<std::uint32_t> block{jobs * (worker + 1) / 6 - jobs * worker / 6, v_at, identity_at, out_at};
        for (std::uint32_t job = jobs * worker / 6; job < jobs * (worker + 1) / 6; ++job) {
          const std::uint32_t panel = job % key_panels, d_block = job / key_panels;
          block.push_back((16 * d_block * key_panels + panel) * 16 * bytes);  // V column 16 j, keys of panel p
          block.push_back(0);
          block.push_back((d_block * keys + 16 * panel) * 16 * bytes);
          block.push_back(std::min(16u, d - 16 * d_block));
        }
        run.blocks.push_back(std::move(block));
      }
      const KernelResult result = harness.run(run);
      int mismatches = 0;
      for (std::uint32_t j = 0; j < blocks; ++j)
        for (std::uint32_t key = 0; key < keys; ++key)
          for (std::uint32_t lane = 0; lane < 16; ++lane) {
            const std::uint32_t column = 16 * j + lane;
            const float expected = column < d ? v.values[std::size_t{column} * keys + key] + 0.0f : 0.0f;
            const std::size_t index = (std::size_t{j} * keys + key) * 16 + lane;
            std::uint32_t actual_bits, expected_bits;
            if (type == ElementType::F16) {
              actual_bits = static_cast<std::uint16_t>(result.outputs[0][2 * index] | result.outputs[0][2 * index + 1] << 8);
              expected_bits = float_to_half(expected);
            } else {
              float actual;
              std::memcpy(&actual, result.outputs[0].data() + 4 * index, 4);
              actual_bits = std::bit_cast<std::uint32_t>(actual);
              expected_bits = std::bit_cast<std::uint32_t>(expected);
            }
            if (actual_bits != expected_bits && ++mismatches <= 3)
              ADD_FAILURE() << element_type_name(type) << " d=" << d << ": block " << j << " key " << key << " lane "
                            << lane;
          }
      EXPECT_EQ(mismatches, 0) << element_type_name(type) << " d=" << d;
    }
}

}  // namespace
}  // namespace tilec::compiler
