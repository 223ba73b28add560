// The compiler's estimates beside what they estimate: the plan search's
// peak bytes beside the exact placement's, the built program's cycles
// (estimate_program) beside the simulator's.
#include "compiler/compile.h"
#include "end_to_end.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace tilec::compiler {
namespace {

TEST(PlanEstimate, TheLogGivesTheEstimatedPeakBesideTheExactOne) {
  const CompileResult result = compile(graph::build_workload("mlp", small_mlp(graph::Precision::Fp8)), on_tiles(16));
  ASSERT_GT(result.estimated_peak_bytes, 0);
  const std::string expected =
      fmt::format("peak {} bytes per tile (estimated {})", result.peak_bytes, result.estimated_peak_bytes);
  EXPECT_TRUE(std::any_of(result.log.begin(), result.log.end(),
                          [&](const std::string& line) { return line.find(expected) != std::string::npos; }))
      << expected;
}

// The estimate of the built program against the simulator on small MLPs,
// whichever plan wins (a run whose first phase computes, the plan of batch
// 2 on twice the bandwidth, has a sync before every exchange).
TEST(PlanEstimate, SmallMlpsRunWithinAFewPercentOfTheirEstimate) {
  for (std::uint32_t exchange_bytes : {4u, 8u})
    for (std::int64_t batch : {1, 2}) {
      graph::MlpOptions mlp = small_mlp(graph::Precision::Fp8);
      mlp.batch = batch;
      CompileOptions options = on_tiles(16);
      options.machine.exchange_bytes_per_cycle = exchange_bytes;
      const Outcome outcome = compile_and_run(graph::build_workload("mlp", mlp), options);
      EXPECT_NEAR(outcome.compiled.estimated_cycles / static_cast<double>(outcome.cycles), 1.0, 0.02)
          << "batch " << batch << ", " << exchange_bytes << " bytes a cycle: " << outcome.compiled.plan;
    }
}

// A small ViT tower (its layers one repeat, then the MAP head) runs within
// a few percent of its estimate at both precisions; batch 2 in two chunks
// runs the repeat twice over.
TEST(PlanEstimate, ASmallTowerRunsWithinAFewPercentOfItsEstimate) {
  for (graph::Precision precision : {graph::Precision::Fp8, graph::Precision::Fp16})
    for (std::int64_t batch : {1, 2}) {
      graph::MlpOptions vit{.batch = batch, .precision = precision, .width = 64, .hidden = 128};
      CompileOptions options = on_tiles(32);
      options.chunks = static_cast<int>(batch);
      const Outcome outcome = compile_and_run(graph::build_workload("vit", vit), options);
      EXPECT_NEAR(outcome.compiled.estimated_cycles / static_cast<double>(outcome.cycles), 1.0, 0.02)
          << "batch " << batch << ": " << outcome.compiled.plan;
    }
}

// With syncs far dearer than anything else, the plan search's estimate is
// its count of syncs: it must count those the built program runs (an
// attention's q, k and v move in one phase, not three).
TEST(PlanEstimate, TheSearchCountsTheSyncsTheProgramRuns) {
  for (const char* workload : {"vit-layer", "vit"}) {
    CompileOptions options = on_tiles(16);
    options.machine.sync_cycles = 100'000;
    const CompileResult result = compile(graph::build_workload(workload, graph::MlpOptions{}), options);
    EXPECT_NEAR(result.search_estimated_cycles / result.estimated_cycles, 1.0, 0.01) << workload << ": " << result.plan;
  }
}

}  // namespace
}  // namespace tilec::compiler
