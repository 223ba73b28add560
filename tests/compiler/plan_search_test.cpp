// The plan search weighs only the chunk sizes some plan of which the
// driver could build under the budget.
#include "compiler/attempt_order.h"
#include "compiler/chain.h"
#include "compiler/construct_mid.h"
#include "compiler/gemm_candidates.h"
#include "end_to_end.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tilec::compiler {
namespace {

PlanSearch search(const graph::Graph& graph, const CompileOptions& options) {
  const Chain chain = build_chain(graph);
  const std::vector<int> group_sizes = candidate_group_sizes(chain, options);
  const GemmCandidates candidates = gemm_candidates(chain, group_sizes, options);
  return search_plans(chain, candidates, group_sizes, 2048, options);
}

int fewest_chunks(const PlanSearch& found) {
  int fewest = INT32_MAX;
  for (const PlanChoice& plan : found.front) fewest = std::min(fewest, plan.chunks);
  return fewest;
}

// 512 tokens on 4 tiles: one chunk needs about 48 KB a tile, more than a
// quarter over a 32 KiB budget, so no one-chunk plan is weighed there.
TEST(PlanSearch, ChunkSizesNoPlanOfWhichCouldBeBuiltAreNotSearched) {
  graph::MlpOptions mlp = small_mlp(graph::Precision::Fp16);
  mlp.tokens = 512;
  const graph::Graph graph = graph::build_workload("mlp", mlp);
  CompileOptions options = on_tiles(4);
  const PlanSearch whole_tile = search(graph, options);
  EXPECT_EQ(fewest_chunks(whole_tile), 1);
  options.budget_bytes = 32 * 1024;
  const PlanSearch tight = search(graph, options);
  ASSERT_FALSE(tight.front.empty());
  EXPECT_GT(fewest_chunks(tight), 1);
  for (const PlanChoice& plan : whole_tile.front)
    if (plan.chunks == 1) EXPECT_GT(plan.estimate.peak_bytes, AttemptOrder::plain_limit(options.budget()));
}

// The finest chunking is searched whatever the budget: its smallest plan is
// what the diagnostic reports when nothing fits.
TEST(PlanSearch, TheFinestChunkingIsSearchedEvenWhenNothingCanFit) {
  graph::MlpOptions mlp = small_mlp(graph::Precision::Fp16);
  mlp.tokens = 512;
  CompileOptions options = on_tiles(4);
  options.budget_bytes = 1024;
  const PlanSearch found = search(graph::build_workload("mlp", mlp), options);
  ASSERT_TRUE(found.smallest.has_value());
  EXPECT_GT(found.smallest->estimate.peak_bytes, AttemptOrder::plain_limit(options.budget()));
}

}  // namespace
}  // namespace tilec::compiler
