// The plan search weighs only the chunk sizes some plan of which the
// driver could build under the budget, and only plans whose data could fit
// (after the shortfall it is told of, if any); what it finds does not
// depend on the thread count.
#include "compiler/attempt_order.h"
#include "compiler/chain.h"
#include "compiler/construct_mid.h"
#include "compiler/gemm_candidates.h"
#include "end_to_end.h"
#include "support/parallel.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tilec::compiler {
namespace {

PlanSearch search(const graph::Graph& graph, const CompileOptions& options,
                  std::optional<SecondSearch> again = std::nullopt) {
  const Chain chain = build_chain(graph);
  const std::vector<int> group_sizes = candidate_group_sizes(chain, options);
  const GemmCandidates candidates = gemm_candidates(chain, group_sizes, options);
  return search_plans(chain, candidates, group_sizes, 2048, options, again);
}

int fewest_chunks(const PlanSearch& found) {
  int fewest = INT32_MAX;
  for (const PlanChoice& plan : found.front) fewest = std::min(fewest, plan.chunks);
  return fewest;
}

// The small MLP with 512 tokens: several chunk sizes to search.
graph::Graph long_mlp() {
  graph::MlpOptions mlp = small_mlp(graph::Precision::Fp16);
  mlp.tokens = 512;
  return graph::build_workload("mlp", mlp);
}

// 512 tokens on 4 tiles: one chunk needs about 48 KB a tile, more than a
// quarter over a 32 KiB budget, so no one-chunk plan is weighed there.
TEST(PlanSearch, ChunkSizesNoPlanOfWhichCouldBeBuiltAreNotSearched) {
  const graph::Graph graph = long_mlp();
  CompileOptions options = on_tiles(4);
  const PlanSearch whole_tile = search(graph, options);
  EXPECT_EQ(fewest_chunks(whole_tile), 1);
  options.budget_bytes = 32 * 1024;
  const PlanSearch tight = search(graph, options);
  ASSERT_FALSE(tight.front.empty());
  EXPECT_GT(fewest_chunks(tight), 1);
  for (const PlanChoice& plan : whole_tile.front) {
    if (plan.chunks == 1) {
      EXPECT_GT(plan.estimate.peak_bytes, AttemptOrder::plain_limit(options.budget()));
    }
  }
}

// The finest chunking is searched whatever the budget: its smallest plan is
// what the diagnostic reports when nothing fits.
TEST(PlanSearch, TheFinestChunkingIsSearchedEvenWhenNothingCanFit) {
  CompileOptions options = on_tiles(4);
  options.budget_bytes = 1024;
  const PlanSearch found = search(long_mlp(), options);
  ASSERT_TRUE(found.smallest.has_value());
  EXPECT_GT(found.smallest->estimate.peak_bytes, AttemptOrder::plain_limit(options.budget()));
}

// Blocks of an MLP whose weights outgrow interleaved memory on one tile:
// its plans stage them, and with 384 tokens a one-chunk plan's other data
// is far more than interleaved memory holds (the driver measured 581,168
// bytes of it against 425,984, when it built one).
graph::Graph staged_mlp() { return fp16_blocks(14, 384, 64, 128); }

TEST(PlanSearch, StagedPlansWhoseOtherDataCouldNotFitAreNotWeighed) {
  CompileOptions options = on_tiles(1);
  options.fp16_partials_anywhere = true;
  const PlanSearch found = search(staged_mlp(), options);
  const std::int64_t standard = options.machine.standard.bytes();
  int staged = 0;
  for (const PlanChoice& plan : found.front) {
    if (!plan.staged_weights) continue;
    ++staged;
    EXPECT_LE(plan.estimate.peak_bytes - standard, AttemptOrder::plain_limit(options.machine.interleaved.bytes()))
        << plan.chunks << " chunks";
  }
  EXPECT_GT(staged, 0);
}

// Told that built plans' peaks exceeded their estimates by 1,001 bytes, on
// a budget 1,000 over the fastest plan's estimate, the search leaves that
// plan out and keeps only plans that fit after the shortfall.
TEST(PlanSearch, ToldAPeakShortfallItKeepsOnlyPlansThatFitAfterIt) {
  const graph::Graph graph = long_mlp();
  CompileOptions options = on_tiles(4);
  const PlanSearch plain = search(graph, options);
  ASSERT_FALSE(plain.front.empty());
  const PlanChoice& fastest = plain.front.front();
  options.budget_bytes = static_cast<std::uint32_t>(fastest.estimate.peak_bytes + 1000);
  const EstimateShortfall shortfall{1001, 0};
  const PlanSearch told = search(graph, options, SecondSearch{shortfall});
  ASSERT_FALSE(told.front.empty());
  for (const PlanChoice& plan : told.front) {
    EXPECT_LE(plan.estimate.peak_bytes + shortfall.peak, options.budget()) << plan.chunks << " chunks";
    EXPECT_FALSE(plan.same_plan(fastest));
  }
  EXPECT_GT(told.front.front().estimate.cycles, fastest.estimate.cycles);
}

// Likewise for interleaved memory: told that staged plans' data exceeded
// its estimate by 40,000 bytes, the search keeps only plans whose data
// fits after that, and still finds some.
TEST(PlanSearch, ToldADataShortfallItKeepsOnlyPlansWhoseDataFitsAfterIt) {
  CompileOptions options = on_tiles(1);
  options.fp16_partials_anywhere = true;
  const PlanSearch plain = search(staged_mlp(), options);
  const std::int64_t interleaved = options.machine.interleaved.bytes();
  const EstimateShortfall shortfall{0, 40'000};
  ASSERT_TRUE(std::any_of(plain.front.begin(), plain.front.end(), [&](const PlanChoice& plan) {
    return plan.estimate.data_bytes + shortfall.data > interleaved;
  }));
  const PlanSearch told = search(staged_mlp(), options, SecondSearch{shortfall});
  ASSERT_FALSE(told.front.empty());
  for (const PlanChoice& plan : told.front)
    EXPECT_LE(plan.estimate.data_bytes + shortfall.data, interleaved) << plan.chunks << " chunks";
}

// A second search weighs no more chunks than the plan built takes: more
// would only cost cycles.
TEST(PlanSearch, ASecondSearchWeighsNoMoreChunksThanThePlanBuilt) {
  const graph::Graph graph = long_mlp();
  CompileOptions options = on_tiles(4);
  options.budget_bytes = 32 * 1024;
  const PlanSearch plain = search(graph, options);
  int fewest = INT32_MAX;  // of the plans estimated to fit
  for (const PlanChoice& plan : plain.front)
    if (plan.estimate.peak_bytes <= options.budget()) fewest = std::min(fewest, plan.chunks);
  ASSERT_TRUE(std::any_of(plain.front.begin(), plain.front.end(),
                          [&](const PlanChoice& plan) { return plan.chunks > fewest; }));
  const PlanSearch told = search(graph, options, SecondSearch{EstimateShortfall{}, fewest});
  ASSERT_FALSE(told.front.empty());
  for (const PlanChoice& plan : told.front) EXPECT_LE(plan.chunks, fewest);
}

// Told the estimated cycles of the plan built, a second search keeps only
// plans estimated faster.
TEST(PlanSearch, ASecondSearchKeepsOnlyPlansFasterThanThePlanBuilt) {
  const graph::Graph graph = long_mlp();
  const CompileOptions options = on_tiles(4);
  const PlanSearch plain = search(graph, options);
  ASSERT_GE(plain.front.size(), 3u);
  const double to_beat = plain.front[plain.front.size() / 2].estimate.cycles;
  SecondSearch again;
  again.cycles_to_beat = to_beat;
  const PlanSearch told = search(graph, options, again);
  ASSERT_FALSE(told.front.empty());
  for (const PlanChoice& plan : told.front) EXPECT_LT(plan.estimate.cycles, to_beat) << plan.chunks << " chunks";
}

bool same_plans(const PlanSearch& a, const PlanSearch& b) {
  if (a.front.size() != b.front.size() || a.plans_considered != b.plans_considered) return false;
  for (std::size_t i = 0; i < a.front.size(); ++i) {
    const PlanChoice& x = a.front[i];
    const PlanChoice& y = b.front[i];
    if (x.group_size != y.group_size || x.chunks != y.chunks || x.step_choice != y.step_choice ||
        x.input_spread != y.input_spread || x.estimate.cycles != y.estimate.cycles ||
        x.estimate.peak_bytes != y.estimate.peak_bytes)
      return false;
  }
  return true;
}

// Group sizes and chunk sizes are searched at once; each has its own
// layout table, so one thread and several find the same front.
TEST(PlanSearch, ThePlansFoundDoNotDependOnTheThreadCount) {
  const graph::Graph graph = long_mlp();
  CompileOptions options = on_tiles(16);
  options.budget_bytes = 24 * 1024;
  set_thread_count(1);
  const PlanSearch alone = search(graph, options);
  set_thread_count(4);
  const PlanSearch together = search(graph, options);
  set_thread_count(0);
  ASSERT_FALSE(alone.front.empty());
  EXPECT_GT(alone.plans_considered, 0);
  EXPECT_TRUE(same_plans(alone, together));
}

}  // namespace
}  // namespace tilec::compiler
