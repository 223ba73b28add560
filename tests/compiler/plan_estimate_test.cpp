// The plan search's memory estimate is reported beside the exact peak of
// the plan it chose, so a user (and a test) can see how far it was off.
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

}  // namespace
}  // namespace tilec::compiler
