// A combine with a bias whose columns its workers would not share evenly
// runs as two tasks (kernel_plan.cpp); the driver builds a plan without
// those splits where it fits only so.
#include "end_to_end.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace tilec::compiler {
namespace {

// 96 tokens, width 96 and hidden 112 with biases, one group of 16 tiles:
// its plan splits combines, which costs it bytes on some tile.
graph::Graph split_mlp() {
  graph::MlpOptions mlp = small_mlp(graph::Precision::Fp16);
  mlp.tokens = 96;
  mlp.width = 96;
  mlp.hidden = 112;
  mlp.bias = true;
  return graph::build_workload("mlp", mlp);
}

bool logged(const CompileResult& result, const std::string& text) {
  return std::any_of(result.log.begin(), result.log.end(),
                     [&](const std::string& line) { return line.find(text) != std::string::npos; });
}

TEST(CombineSplit, APlanThatFitsOnlyWithoutItsSplitsIsBuiltWithoutThem) {
  CompileOptions options = on_tiles(16);
  options.groups = 1;
  const Outcome split = compile_and_run(split_mlp(), options);
  EXPECT_FALSE(logged(split.compiled, "without"));
  EXPECT_EQ(split.differing, 0);
  EXPECT_EQ(split.bad, 0);

  options.budget_bytes = split.compiled.peak_bytes - 1;
  const Outcome unsplit = compile_and_run(split_mlp(), options);
  EXPECT_TRUE(logged(unsplit.compiled, "with combines split for their workers; built without"));
  EXPECT_EQ(unsplit.compiled.plan, split.compiled.plan);
  EXPECT_LT(unsplit.compiled.peak_bytes, split.compiled.peak_bytes);
  EXPECT_EQ(unsplit.differing, 0);
  EXPECT_EQ(unsplit.bad, 0);
  // The splits are made where they are faster.
  EXPECT_LT(split.cycles, unsplit.cycles);
}

}  // namespace
}  // namespace tilec::compiler
