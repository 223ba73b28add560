// The cost model's kernel figures against the simulator: each worker's
// bundles exactly, and a tile's cycles within a few percent (the
// supervisor's share differs between the test's and the compiler's code).
#include "compiler/combine_kernel.h"
#include "compiler/cost_model.h"
#include "compiler/merge_kernel.h"
#include "compiler/softmax_kernel.h"
#include "kernel_blocks.h"
#include "kernel_harness.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tilec::compiler {
namespace {

using testing::DataPlaces;
using testing::KernelHarness;
using testing::KernelResult;
using testing::KernelRun;

// A worker's span runs from its `run` (1 to 6 cycles before its first
// bundle) to the cycle after its `exit`, issuing once every six cycles.
std::int64_t worker_bundles(std::uint64_t span) { return static_cast<std::int64_t>((span + 4) / 6); }

struct GemmCostCase {
  ElementType operand;
  bool drain_f32;
  std::int64_t k;
  std::int64_t blocks;  // 16x16 output blocks: one panel, `blocks` column blocks
};

TEST(KernelCost, GemmWorkersIssueTheModelsBundles) {
  for (const GemmCostCase& c : {GemmCostCase{ElementType::F143, false, 96, 12}, GemmCostCase{ElementType::F152, true, 33, 7},
                                GemmCostCase{ElementType::F16, false, 40, 13}, GemmCostCase{ElementType::F16, true, 17, 6},
                                GemmCostCase{ElementType::F32, false, 12, 9}, GemmCostCase{ElementType::F32, true, 5, 6}}) {
    GemmVariant variant;
    variant.weights = variant.activations = c.operand;
    const std::uint32_t bytes = element_bytes(c.operand), out_bytes = c.drain_f32 ? 4 : 2;
    variant.activation_stride = 16 * bytes;
    variant.output_stride = 16 * out_bytes;
    variant.drain_f32 = c.drain_f32;
    KernelLibrary library;
    std::string kernel = library.gemm(variant);
    KernelHarness harness(library);
    const auto k = static_cast<std::uint32_t>(c.k);
    DataPlaces places;
    std::uint32_t x = places.take(k * 16 * bytes), w = places.take(k * 16 * bytes * static_cast<std::uint32_t>(c.blocks));
    std::uint32_t out = places.take(static_cast<std::uint32_t>(c.blocks) * 256 * out_bytes);
    KernelRun run{kernel, {}, {}, {}};
    for (int worker = 0; worker < 6; ++worker) {
      std::int64_t first = c.blocks * worker / 6, last = c.blocks * (worker + 1) / 6;
      if (first == last) continue;
      std::vector<std::uint32_t> block{static_cast<std::uint32_t>(last - first), w, x, out};
      for (std::int64_t b = first; b < last; ++b)
        for (std::uint32_t word : {static_cast<std::uint32_t>(b) * k * 16 * bytes, 0u, static_cast<std::uint32_t>(b) * 256 * out_bytes, k})
          block.push_back(word);
      run.blocks.push_back(std::move(block));
    }
    KernelResult result = harness.run(run);
    std::int64_t busiest = 0;
    for (std::size_t worker = 0; worker < result.worker_cycles.size(); ++worker) {
      const std::int64_t jobs = c.blocks * static_cast<std::int64_t>(worker + 1) / 6 - c.blocks * static_cast<std::int64_t>(worker) / 6;
      EXPECT_EQ(worker_bundles(result.worker_cycles[worker]), gemm_worker_bundles(jobs, c.k, c.operand, c.drain_f32))
          << element_type_name(c.operand) << " k " << c.k << " worker " << worker;
      busiest = std::max(busiest, jobs);
    }
    const double model = gemm_tile_cycles(c.blocks, c.k, c.operand, c.drain_f32);
    const double simulated = static_cast<double>(result.stats.halt_cycle);
    std::cerr << element_type_name(c.operand) << " k=" << c.k << " blocks=" << c.blocks << ": model " << model
              << " simulated " << simulated << "\n";
    EXPECT_NEAR(model / simulated, 1.0, 0.03) << element_type_name(c.operand) << " k " << c.k;
  }
}

CombineVariant variant_of(int inputs, StorageType input, StorageType sum, std::vector<CombineStage> stages,
                          ElementType bias = ElementType::F16) {
  CombineVariant variant;
  variant.inputs = inputs;
  variant.input = input;
  variant.sum = sum;
  variant.bias = bias;
  variant.stages = std::move(stages);
  return variant;
}

TEST(KernelCost, CombineWorkersIssueTheModelsBundles) {
  using Kind = EpilogueOp::Kind;
  const StorageType f32{ElementType::F32, 0}, f16{ElementType::F16, 0}, f8{ElementType::F143, -3};
  const auto tanh = graph::GeluApproximation::Tanh;
  const std::vector<CombineVariant> variants{
      variant_of(1, f32, f16, {}),
      variant_of(2, f32, f16, {{Kind::Gelu, tanh, f16}, {Kind::Cast, tanh, f8}}),
      variant_of(3, f16, f16, {{Kind::AddBias, tanh, f16}}),
      variant_of(1, f8, f8, {{Kind::Cast, tanh, f32}}),
      variant_of(4, f32, f32, {{Kind::AddBias, tanh, f32}, {Kind::Gelu, tanh, f32}}, ElementType::F32)};
  for (const CombineVariant& v : variants) {
    const std::int64_t columns = 40, panels = 4, column_elements = 16 * panels;
    KernelLibrary library;
    std::string kernel = library.combine(v);
    KernelHarness harness(library);
    const auto in_bytes = element_bytes(v.input.element), out_bytes = element_bytes(v.output().element);
    const auto elements = static_cast<std::uint32_t>(columns * column_elements);
    DataPlaces places;
    std::vector<std::uint32_t> inputs;
    for (int i = 0; i < v.inputs; ++i) inputs.push_back(places.take(elements * in_bytes));
    std::uint32_t bias = places.take(static_cast<std::uint32_t>(columns) * 4), out = places.take(elements * out_bytes);
    KernelRun run{kernel, {}, {}, {}};
    for (int worker = 0; worker < 6; ++worker) {
      auto first = static_cast<std::uint32_t>(columns * worker / 6), last = static_cast<std::uint32_t>(columns * (worker + 1) / 6);
      std::vector<std::uint32_t> block{last - first, static_cast<std::uint32_t>(column_elements / 8),
                                       out + first * static_cast<std::uint32_t>(column_elements) * out_bytes, bias + 4 * first};
      for (std::uint32_t input : inputs) block.push_back(input + first * static_cast<std::uint32_t>(column_elements) * in_bytes);
      run.blocks.push_back(std::move(block));
    }
    KernelResult result = harness.run(run);
    const CombineShape shape = combine_shape(v);
    for (std::size_t worker = 0; worker < result.worker_cycles.size(); ++worker) {
      const std::int64_t share = columns * static_cast<std::int64_t>(worker + 1) / 6 - columns * static_cast<std::int64_t>(worker) / 6;
      EXPECT_EQ(worker_bundles(result.worker_cycles[worker]), combine_worker_bundles(shape, share, column_elements / 8))
          << kernel << " worker " << worker;
    }
    const double model = combine_tile_cycles(v, columns, column_elements);
    const double simulated = static_cast<double>(result.stats.halt_cycle);
    std::cerr << v.inputs << " inputs, " << v.stages.size() << " stages: " << shape.bundles_per_8()
              << " bundles per 8 (ideal " << shape.ideal_bundles_per_8() << "), model " << model << " simulated "
              << simulated << "\n";
    EXPECT_NEAR(model / simulated, 1.0, 0.03) << kernel;
  }
}

// Weights read with a stride (k's panel format): the same bundles as packed.
TEST(KernelCost, StridedGemmWorkersIssueThePackedKernelsBundles) {
  for (ElementType operand : {ElementType::F143, ElementType::F16, ElementType::F32}) {
    const std::uint32_t bytes = element_bytes(operand), k = 19, blocks = 9, key_panels = 9;
    GemmVariant variant;
    variant.weights = variant.activations = operand;
    variant.activation_stride = 16 * bytes;
    variant.weight_stride = key_panels * 16 * bytes;
    variant.output_stride = 16 * 4;
    variant.drain_f32 = true;
    KernelLibrary library;
    const std::string kernel = library.gemm(variant);
    KernelHarness harness(library);
    DataPlaces places;
    const std::uint32_t x = places.take(k * 16 * bytes), w = places.take(k * key_panels * 16 * bytes);
    const std::uint32_t out = places.take(blocks * 256 * 4);
    std::vector<std::array<std::uint32_t, 4>> jobs;
    for (std::uint32_t b = 0; b < blocks; ++b) jobs.push_back({b * 16 * bytes, 0, b * 256 * 4, k});
    testing::Launches launches;
    testing::add_gemm(launches, kernel, variant, jobs, w, x, out);
    const KernelResult result = testing::run_launches(harness, launches, {}, {});
    const double model = gemm_tile_cycles(blocks, k, operand, true);
    EXPECT_NEAR(model / static_cast<double>(result.stats.halt_cycle), 1.0, 0.03) << element_type_name(operand);
  }
}

// The generated softmax kernels, whole and split, and the merge: every
// worker's bundles (run_launches) and the tile's cycles.
TEST(KernelCost, GeneratedSoftmaxWorkersIssueTheModelsBundles) {
  KernelLibrary library;
  const std::int64_t panels = 3, columns = 50;
  std::vector<std::pair<RowVariant, int>> cases;
  for (SoftmaxForm form : {SoftmaxForm::Normalised, SoftmaxForm::Partial})
    for (int chunks : {1, 3}) cases.push_back({RowVariant{false, ElementType::F16, ElementType::F16, form, true}, chunks});
  for (const auto& [variant, chunks] : cases) {
    library.row(variant);
    for (SoftmaxForm phase : {SoftmaxForm::ChunkMax, SoftmaxForm::ChunkExp, SoftmaxForm::FinishStats,
                              SoftmaxForm::FinishNormalise}) {
      RowVariant v = variant;
      v.form = phase;
      if (phase == SoftmaxForm::ChunkExp && variant.form == SoftmaxForm::Normalised) v.output = ElementType::F32;
      library.row(v);
    }
  }
  KernelHarness harness(library);
  for (const auto& [variant, chunks] : cases) {
    DataPlaces places;
    testing::SoftmaxBuffers b;
    b.columns = columns;
    b.input_stride = b.output_stride = 16 * panels * 2;
    b.exponential_stride = 16 * panels * 4;
    b.input = places.take(static_cast<std::uint32_t>(columns) * b.input_stride);
    b.output = places.take(static_cast<std::uint32_t>(columns) * b.output_stride);
    b.exponentials = places.take(static_cast<std::uint32_t>(columns) * b.exponential_stride);
    b.chunk_stride = static_cast<std::uint32_t>(softmax_stats_bytes(panels));
    b.stats = places.take(b.chunk_stride);
    b.chunk_stats = places.take(b.chunk_stride * 3);
    b.scale = 0.5f;
    testing::Launches launches;
    testing::add_softmax(launches, variant, panels, chunks, b);
    // Inputs of zeros: the cycles do not depend on the values.
    const KernelResult result = testing::run_launches(harness, launches, {}, {});
    const double model = softmax_tile_cycles(variant, panels, columns, chunks);
    const auto simulated = static_cast<double>(result.stats.halt_cycle);
    std::cerr << (variant.form == SoftmaxForm::Partial ? "partial" : "normalised") << " softmax, " << chunks
              << " chunks: model " << model << " simulated " << simulated << "\n";
    EXPECT_NEAR(model / simulated, 1.0, 0.03);
  }
}

TEST(KernelCost, MergeWorkersIssueTheModelsBundles) {
  for (ElementType output : {ElementType::F16, ElementType::F32}) {
    const std::int64_t panels = 2, columns = 41, partials = 3;
    const MergeVariant variant{output, static_cast<std::uint32_t>(64 * panels),
                               static_cast<std::uint32_t>(16 * panels) * element_bytes(output)};
    KernelLibrary library;
    const std::string kernel = library.merge(variant);
    KernelHarness harness(library);
    DataPlaces places;
    const std::uint32_t stride = static_cast<std::uint32_t>(columns) * variant.partial_column_stride;
    testing::MergeBuffers b;
    b.partials = places.take(stride * partials);
    b.partial_stride = stride;
    b.stats_stride = static_cast<std::uint32_t>(softmax_stats_bytes(panels));
    b.stats = places.take(b.stats_stride * partials);
    b.output = places.take(static_cast<std::uint32_t>(columns) * variant.output_column_stride);
    const std::vector<MergeShare> shares = merge_shares(variant, 4 * panels, columns, partials);
    for (std::size_t w = 0; w < shares.size(); ++w)
      b.scratch.push_back(places.take(static_cast<std::uint32_t>(merge_scratch_bytes(partials))));
    testing::Launches launches;
    testing::add_merge(launches, kernel, variant, shares, partials, b);
    const KernelResult result = testing::run_launches(harness, launches, {}, {});
    const double model = merge_tile_cycles(variant, 4 * panels, columns, partials);
    EXPECT_NEAR(model / static_cast<double>(result.stats.halt_cycle), 1.0, 0.03) << element_type_name(output);
  }
}

}  // namespace
}  // namespace tilec::compiler
