// The cost model's kernel figures against the simulator: each worker's
// bundles exactly, and a tile's cycles within a few percent (the
// supervisor's share differs between the test's and the compiler's code).
#include "compiler/combine_kernel.h"
#include "compiler/cost_model.h"
#include "compiler/merge_kernel.h"
#include "compiler/softmax_kernel.h"
#include "kernel_blocks.h"
#include "kernel_harness.h"
#include "split_rows_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace tilec::compiler {
namespace {

using testing::DataPlaces;
using testing::KernelHarness;
using testing::KernelResult;
using testing::KernelRun;
using testing::RowBlock;
using testing::SlotStatistics;
using testing::SplitRun;
using testing::run_apply;
using testing::run_statistics;
using testing::span_bundles;

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
  // 40 columns of 4 panels, and 7 of 6: a bias's seventh column takes a run
  // of its own, its panels shared.
  for (const auto& [columns, panels] : {std::pair<std::int64_t, std::int64_t>{40, 4}, {7, 6}})
  for (const CombineVariant& v : variants) {
    const std::int64_t column_elements = 16 * panels;
    KernelLibrary library;
    std::string kernel = library.combine(v);
    KernelHarness harness(library);
    const auto in_bytes = element_bytes(v.input.element), out_bytes = element_bytes(v.output().element);
    const auto elements = static_cast<std::uint32_t>(columns * column_elements);
    DataPlaces places;
    std::vector<std::uint32_t> inputs;
    for (int i = 0; i < v.inputs; ++i) inputs.push_back(places.take(elements * in_bytes));
    std::uint32_t bias = places.take(static_cast<std::uint32_t>(columns) * 4), out = places.take(elements * out_bytes);
    // The runs and the workers' shares as kernel_plan.cpp gives them
    // (combine_shares).
    const CombineShape shape = combine_shape(v);
    const std::int64_t rest = combine_rows_split_columns(v, columns, column_elements);
    double simulated = 0;
    int runs = 0;
    for (bool rows_split : {false, true}) {
      const std::int64_t run_columns = rows_split ? rest : columns - rest;
      if (run_columns == 0) continue;
      const std::uint32_t skip = static_cast<std::uint32_t>(columns - run_columns);
      const CombineShares shares = combine_shares(v, run_columns, column_elements, rows_split);
      KernelRun run{kernel, {}, {}, {}};
      for (const CombineShare& share : shares) {
        const auto offset = static_cast<std::uint32_t>(skip * column_elements + share.offset);
        std::vector<std::uint32_t> block{static_cast<std::uint32_t>(share.columns),
                                         static_cast<std::uint32_t>(share.groups), out + offset * out_bytes,
                                         bias + 4 * (skip + static_cast<std::uint32_t>(share.bias_column))};
        for (std::uint32_t input : inputs) block.push_back(input + offset * in_bytes);
        run.blocks.push_back(std::move(block));
      }
      KernelResult result = harness.run(run);
      for (std::size_t worker = 0; worker < result.worker_cycles.size(); ++worker)
        EXPECT_EQ(worker_bundles(result.worker_cycles[worker]),
                  combine_worker_bundles(shape, shares[worker].columns, shares[worker].groups))
            << kernel << " worker " << worker;
      simulated += static_cast<double>(result.stats.halt_cycle);
      ++runs;
    }
    const double model = combine_tile_cycles(v, columns, column_elements);
    std::cerr << v.inputs << " inputs, " << v.stages.size() << " stages: " << shape.bundles_per_8()
              << " bundles per 8 (ideal " << shape.ideal_bundles_per_8() << "), model " << model << " simulated "
              << simulated << "\n";
    // The harness's supervisor takes 12 cycles a run more than the model's.
    EXPECT_NEAR(model, simulated, std::max(0.03 * simulated, 12.0 * runs)) << kernel;
  }
}

// Seven columns of six panels: without a bias the workers take seven
// panels each of the columns back to back; a bias loops per column, so a
// run of six whole columns, then the seventh's panels, one a worker.
TEST(KernelCost, CombineWorkersShareUnevenColumnsByPanels) {
  const StorageType f16{ElementType::F16, 0};
  const CombineVariant plain = variant_of(2, f16, f16, {});
  const CombineVariant biased = variant_of(2, f16, f16, {{EpilogueOp::Kind::AddBias, graph::GeluApproximation::Tanh, f16}});
  EXPECT_EQ(combine_rows_split_columns(plain, 7, 96), 0);
  EXPECT_EQ(combine_rows_split_columns(biased, 7, 96), 1);
  // 40 columns of 4 panels: the four left over would take a worker a column
  // in a second run, no faster than one whole column more.
  EXPECT_EQ(combine_rows_split_columns(biased, 40, 64), 0);
  const CombineShares flat = combine_shares(plain, 7, 96, false);
  const CombineShares whole = combine_shares(biased, 6, 96, false);
  const CombineShares rows = combine_shares(biased, 1, 96, true);
  for (std::size_t worker = 0; worker < 6; ++worker) {
    EXPECT_EQ(flat[worker].columns * flat[worker].groups, 14);  // seven panels
    EXPECT_EQ(flat[worker].offset, 112 * static_cast<std::int64_t>(worker));
    EXPECT_EQ(whole[worker].columns, 1);
    EXPECT_EQ(whole[worker].groups, 12);
    EXPECT_EQ(rows[worker].columns, 1);
    EXPECT_EQ(rows[worker].groups, 2);
    EXPECT_EQ(rows[worker].offset, 16 * static_cast<std::int64_t>(worker));
    EXPECT_EQ(rows[worker].bias_column, 0);
  }
  // Two columns of three panels: three workers on each, a panel each.
  const CombineShares two = combine_shares(biased, 2, 48, true);
  for (std::size_t worker = 0; worker < 6; ++worker) {
    EXPECT_EQ(two[worker].bias_column, worker < 3 ? 0 : 1);
    EXPECT_EQ(two[worker].offset, 48 * (worker < 3 ? 0 : 1) + 16 * static_cast<std::int64_t>(worker % 3));
  }
  // Columns that share evenly (or fewer than the workers) stay whole.
  for (std::int64_t columns : {4, 5, 6, 12}) {
    EXPECT_EQ(combine_rows_split_columns(biased, columns, 96), 0) << columns << " columns";
    EXPECT_EQ(combine_shares(plain, columns, 96, false).back().groups, 12) << columns << " columns";
  }
}

// Slots of statistics for a block of `panels` panels (any finite values:
// the cost does not depend on them).
std::vector<SlotStatistics> some_slots(std::int64_t panels, std::int64_t count, std::int64_t columns) {
  std::vector<SlotStatistics> slots(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < slots.size(); ++i) {
    slots[i].columns = columns;
    for (std::int64_t row = 0; row < 16 * panels; ++row) {
      slots[i].first.push_back(0.25f * static_cast<float>(row % 5) - static_cast<float>(i % 3));
      slots[i].second.push_back(1.0f + 0.5f * static_cast<float>((row + static_cast<std::int64_t>(i)) % 7));
    }
  }
  return slots;
}

struct SplitCostCase {
  RowKernel kernel;
  ElementType input, output;
  std::int64_t panels, columns, slots;
  int ranges;
};

TEST(KernelCost, SplitRowWorkersIssueTheModelsBundles) {
  const auto f16 = ElementType::F16, f32 = ElementType::F32;
  for (const SplitCostCase& c :
       {SplitCostCase{RowKernel::LayerNorm, f16, f16, 1, 36, 32, 3}, SplitCostCase{RowKernel::LayerNorm, f32, f16, 3, 20, 5, 2},
        SplitCostCase{RowKernel::LayerNorm, f16, f32, 4, 50, 1, 1}, SplitCostCase{RowKernel::LayerNorm, f32, f32, 2, 7, 64, 6},
        SplitCostCase{RowKernel::Softmax, f16, f16, 1, 36, 32, 3}, SplitCostCase{RowKernel::Softmax, f32, f16, 3, 20, 5, 2},
        SplitCostCase{RowKernel::Softmax, f16, f32, 4, 50, 1, 1}, SplitCostCase{RowKernel::Softmax, f32, f32, 2, 7, 64, 6}}) {
    const std::string what = fmt::format("{} {} -> {}, {} panels x {} columns, {} slots, {} ranges",
                                         c.kernel == RowKernel::LayerNorm ? "layernorm" : "softmax",
                                         element_type_name(c.input), element_type_name(c.output), c.panels, c.columns,
                                         c.slots, c.ranges);
    std::vector<float> x(static_cast<std::size_t>(16 * c.panels * c.columns));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.125f * static_cast<float>(i % 13) - 0.5f;
    const RowBlock block{&x, c.columns, c.panels, 0, c.columns};

    const SplitRun stats = run_statistics(c.kernel, c.input, block, c.ranges);
    for (std::size_t w = 0; w < stats.shares.size(); ++w)
      EXPECT_EQ(span_bundles(stats.result.worker_cycles[w]),
                row_stats_worker_bundles(c.kernel, c.input, stats.shares[w].half_panels, stats.shares[w].columns))
          << what << " statistics worker " << w;
    const double stats_model = row_stats_tile_cycles(c.kernel, c.input, c.panels, c.columns, c.ranges);
    EXPECT_NEAR(stats_model / static_cast<double>(stats.result.stats.halt_cycle), 1.0, 0.03) << what;

    const std::vector<float> gamma(static_cast<std::size_t>(c.columns), 1.5f), beta(gamma.size(), -0.25f);
    const SplitRun apply = run_apply(c.kernel, c.input, c.output, block, c.ranges, some_slots(c.panels, c.slots, 9),
                                     9 * c.slots, gamma, beta, 1e-5f);
    for (std::size_t w = 0; w < apply.shares.size(); ++w)
      EXPECT_EQ(span_bundles(apply.result.worker_cycles[w]),
                row_apply_worker_bundles(c.kernel, c.input, c.output, apply.shares[w].half_panels,
                                         apply.shares[w].columns, c.slots))
          << what << " apply worker " << w;
    const double apply_model = row_apply_tile_cycles(c.kernel, c.input, c.output, c.panels, c.columns, c.slots, c.ranges);
    EXPECT_NEAR(apply_model / static_cast<double>(apply.result.stats.halt_cycle), 1.0, 0.03) << what;

    const testing::MergeRun merge = testing::run_merge(c.kernel, c.panels, some_slots(c.panels, c.slots, 9), 9 * c.slots);
    for (std::size_t w = 0; w < merge.shares.size(); ++w)
      EXPECT_EQ(span_bundles(merge.result.worker_cycles[w]),
                row_merge_worker_bundles(c.kernel, merge.shares[w].quads, c.slots))
          << what << " merge worker " << w;
    const double merge_model = row_merge_tile_cycles(c.kernel, c.panels, c.slots);
    EXPECT_NEAR(merge_model / static_cast<double>(merge.result.stats.halt_cycle), 1.0, 0.03) << what;
  }
}

TEST(KernelCost, SplitRowWorkersWithoutHalfPanelsExitAtOnce) {
  for (RowKernel kernel : {RowKernel::LayerNorm, RowKernel::Softmax})
    for (RowStage stage : {RowStage::Statistics, RowStage::Apply, RowStage::Merge}) {
      const std::string name = testing::split_kernel_name(kernel, stage, ElementType::F16, ElementType::F16);
      KernelRun run{name, {std::vector<std::uint32_t>(13, 0u)}, {}, {}};
      const KernelResult result = testing::split_row_harness().run(run);
      ASSERT_EQ(result.worker_cycles.size(), 1u) << name;
      const std::int64_t model = stage == RowStage::Statistics ? row_stats_worker_bundles(kernel, ElementType::F16, 0, 1)
                                 : stage == RowStage::Apply
                                     ? row_apply_worker_bundles(kernel, ElementType::F16, ElementType::F16, 0, 1, 1)
                                     : row_merge_worker_bundles(kernel, 0, 1);
      EXPECT_EQ(span_bundles(result.worker_cycles[0]), model) << name;
    }
}

// The cycles of a row op over one tile's block of P panels x C columns
// (FP16 in and out): the whole-row kernel, against the statistics kernel
// (at its fastest column ranges) and the apply kernel (at its fastest, with
// the statistics' slots), each within 3% of the cost model.
TEST(KernelCost, SplitRowKernelsAgainstWholeRows) {
  const ElementType f16 = ElementType::F16;
  for (RowKernel kernel : {RowKernel::LayerNorm, RowKernel::Softmax}) {
    const char* name = kernel == RowKernel::LayerNorm ? "layernorm" : "softmax";
    std::cerr << name << " f16 -> f16: panels, columns | whole rows | statistics (ranges) + apply (slots, ranges)\n";
    for (std::int64_t panels : {1, 2, 4})
      for (std::int64_t columns : {36, 72, 144, 1152}) {
        std::vector<float> x(static_cast<std::size_t>(16 * panels * columns));
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.125f * static_cast<float>(i % 13) - 0.5f;
        const RowBlock block{&x, columns, panels, 0, columns};
        const std::vector<float> gamma(static_cast<std::size_t>(columns), 1.5f), beta(gamma.size(), -0.25f);
        const std::string what = fmt::format("{} {} x {}", name, panels, columns);

        const KernelResult whole = testing::run_whole_rows(kernel, f16, f16, block, gamma, beta, 1e-5f);
        const double whole_model = row_tile_cycles(kernel, f16, f16, panels, columns, columns);
        EXPECT_NEAR(whole_model / static_cast<double>(whole.stats.halt_cycle), 1.0, 0.03) << what;

        const int stats_ranges = fastest_row_stats_ranges(kernel, f16, panels, columns);
        const SplitRun stats = run_statistics(kernel, f16, block, stats_ranges);
        const double stats_model = row_stats_tile_cycles(kernel, f16, panels, columns, stats_ranges);
        EXPECT_NEAR(stats_model / static_cast<double>(stats.result.stats.halt_cycle), 1.0, 0.03) << what;

        std::vector<SlotStatistics> slots;
        for (int range = 0; range < stats_ranges; ++range)
          slots.push_back(testing::slot_of_records(stats.values, static_cast<std::size_t>(range * 32 * panels), 16 * panels,
                                                   split_row_range_columns(columns, stats_ranges, range)));
        const auto slot_count = static_cast<std::int64_t>(slots.size());
        const int apply_ranges = fastest_row_apply_ranges(kernel, f16, f16, panels, columns, slot_count);
        const SplitRun apply = run_apply(kernel, f16, f16, block, apply_ranges, slots, columns, gamma, beta, 1e-5f);
        const double apply_model = row_apply_tile_cycles(kernel, f16, f16, panels, columns, slot_count, apply_ranges);
        EXPECT_NEAR(apply_model / static_cast<double>(apply.result.stats.halt_cycle), 1.0, 0.03) << what;

        std::cerr << fmt::format("  {} x {:>4} | {:>7} | {:>6} ({}) + {:>6} ({}, {}) = {:>7}\n", panels, columns,
                                 whole.stats.halt_cycle, stats.result.stats.halt_cycle, stats_ranges,
                                 apply.result.stats.halt_cycle, slot_count, apply_ranges,
                                 stats.result.stats.halt_cycle + apply.result.stats.halt_cycle);
      }
  }
}

// A row of 1152 columns over 32 tiles of 1 panel x 36 columns (729 x 1152
// as 46 x 32 tiles), FP16 in and out: the tile's own statistics (1 range,
// or 3 ranges and a merge of their slots), then the apply kernel on the 32
// or 96 slots the tiles send against merging them first and applying one
// slot, each within 3% of the cost model.
TEST(KernelCost, SplitRowMergeBeforeApply) {
  const ElementType f16 = ElementType::F16;
  const std::int64_t panels = 1, columns = 36;
  std::vector<float> x(static_cast<std::size_t>(16 * panels * columns));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.125f * static_cast<float>(i % 13) - 0.5f;
  const RowBlock block{&x, columns, panels, 0, columns};
  const std::vector<float> gamma(static_cast<std::size_t>(columns), 1.5f), beta(gamma.size(), -0.25f);
  for (RowKernel kernel : {RowKernel::LayerNorm, RowKernel::Softmax}) {
    const char* name = kernel == RowKernel::LayerNorm ? "layernorm" : "softmax";
    const SplitRun stats_one = run_statistics(kernel, f16, block, 1);
    const SplitRun stats_three = run_statistics(kernel, f16, block, 3);
    const testing::MergeRun own = testing::run_merge(kernel, panels, some_slots(panels, 3, 12), columns);
    for (const auto& [simulated, model] :
         {std::pair{stats_one.result.stats.halt_cycle, row_stats_tile_cycles(kernel, f16, panels, columns, 1)},
          std::pair{stats_three.result.stats.halt_cycle, row_stats_tile_cycles(kernel, f16, panels, columns, 3)},
          std::pair{own.result.stats.halt_cycle, row_merge_tile_cycles(kernel, panels, 3)}})
      EXPECT_NEAR(model / static_cast<double>(simulated), 1.0, 0.03) << name;
    std::cerr << fmt::format("{} 1 x 36: statistics {} (1 range), {} (3 ranges) + merge of 3 slots {}\n", name,
                             stats_one.result.stats.halt_cycle, stats_three.result.stats.halt_cycle,
                             own.result.stats.halt_cycle);
    for (std::int64_t slots : {32, 96}) {
      const std::string what = fmt::format("{} 1 x 36, {} slots", name, slots);
      const int ranges = fastest_row_apply_ranges(kernel, f16, f16, panels, columns, slots);
      const SplitRun direct = run_apply(kernel, f16, f16, block, ranges, some_slots(panels, slots, 12), 12 * slots,
                                        gamma, beta, 1e-5f);
      const double direct_model = row_apply_tile_cycles(kernel, f16, f16, panels, columns, slots, ranges);
      EXPECT_NEAR(direct_model / static_cast<double>(direct.result.stats.halt_cycle), 1.0, 0.03) << what;
      const testing::MergeRun merge = testing::run_merge(kernel, panels, some_slots(panels, slots, 12), 12 * slots);
      const double merge_model = row_merge_tile_cycles(kernel, panels, slots);
      EXPECT_NEAR(merge_model / static_cast<double>(merge.result.stats.halt_cycle), 1.0, 0.03) << what;
      const int one_ranges = fastest_row_apply_ranges(kernel, f16, f16, panels, columns, 1);
      const SplitRun one = run_apply(kernel, f16, f16, block, one_ranges, some_slots(panels, 1, 12 * slots),
                                     12 * slots, gamma, beta, 1e-5f);
      const double one_model = row_apply_tile_cycles(kernel, f16, f16, panels, columns, 1, one_ranges);
      EXPECT_NEAR(one_model / static_cast<double>(one.result.stats.halt_cycle), 1.0, 0.03) << what;
      std::cerr << fmt::format("{}: apply {} (ranges {}); merge {} + apply of one slot {} (ranges {}) = {}\n", what,
                               direct.result.stats.halt_cycle, ranges, merge.result.stats.halt_cycle,
                               one.result.stats.halt_cycle, one_ranges,
                               merge.result.stats.halt_cycle + one.result.stats.halt_cycle);
    }
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
