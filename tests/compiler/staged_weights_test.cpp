// A repeat whose weights outgrow interleaved memory: the iteration record
// fills the top of standard memory and runs on into interleaved memory,
// and each iteration's weights are copied to a working copy first.
#include "end_to_end.h"
#include "support/error.h"

#include <gtest/gtest.h>

namespace tilec::compiler {
namespace {

graph::Graph blocks_of_mlp(std::int64_t blocks) {
  graph::MlpOptions mlp;
  mlp.precision = graph::Precision::Fp16;
  mlp.blocks = blocks;
  mlp.tokens = 8;
  mlp.width = 64;
  mlp.hidden = 128;
  return graph::build_workload("mlp", mlp);  // 32 KiB of weights a block
}

TEST(StagedWeights, WeightsBeyondInterleavedMemoryAreStagedAndComputeTheSame) {
  const CompileOptions one_tile = on_tiles(1);
  // 14 blocks: 448 KiB of weights, more than interleaved memory's 416 KiB.
  Outcome outcome = compile_and_run(blocks_of_mlp(14), one_tile);
  const std::string& plan = outcome.compiled.plan;
  EXPECT_NE(plan.find("iteration weights staged"), std::string::npos) << plan;
  EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
  EXPECT_EQ(outcome.bad, 0) << plan;
  EXPECT_EQ(outcome.max_error, 0.0) << plan;
  // The simulator sees standard memory used to its top, as planned.
  EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << plan;
  EXPECT_GT(outcome.most_memory, one_tile.machine.interleaved.bytes());
}

TEST(StagedWeights, OnlyWhenTheWeightsDoNotFitInterleavedMemory) {
  Outcome outcome = compile_and_run(blocks_of_mlp(4), on_tiles(1));
  EXPECT_EQ(outcome.compiled.plan.find("staged"), std::string::npos) << outcome.compiled.plan;
  EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
  EXPECT_EQ(outcome.bad, 0);
  EXPECT_LT(outcome.most_memory, on_tiles(1).machine.interleaved.bytes());
}

// A budget that leaves no room for the record in standard memory: no plan.
TEST(StagedWeights, ABudgetBelowTheRecordStillFails) {
  CompileOptions options = on_tiles(1);
  options.budget_bytes = 440 * 1024;
  EXPECT_THROW(compile(blocks_of_mlp(14), options), Error);
}

}  // namespace
}  // namespace tilec::compiler
