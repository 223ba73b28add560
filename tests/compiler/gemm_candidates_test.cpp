// Stage gemm_candidates alone: what partial sums travel as.
#include "compiler/gemm_candidates.h"
#include "graph/workloads.h"
#include "target/machine.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tilec::compiler {
namespace {

// The partial types of every candidate with K parts of the GEMM step `name`.
std::set<ElementType> split_partial_types(const Chain& chain, const std::string& name) {
  CompileOptions options;
  options.machine = ipu21_cut(64);
  const GemmCandidates candidates = gemm_candidates(chain, candidate_group_sizes(chain, options), options);
  std::set<ElementType> types;
  for (const auto& [step, by_size] : candidates.by_step)
    if (chain.steps[static_cast<std::size_t>(step)].name == name)
      for (const auto& [size, list] : by_size)
        for (const GemmCandidate& candidate : list)
          if (candidate.grid.k_parts > 1) types.insert(candidate.partial_type);
  return types;
}

graph::Graph small_mlp(graph::Precision precision, std::int64_t blocks) {
  graph::MlpOptions options;
  options.precision = precision;
  options.blocks = blocks;
  options.tokens = 32;
  options.width = 64;
  options.hidden = 128;
  return graph::mlp_graph(options);
}

TEST(GemmCandidates, Fp16PartialsWhenNothingQuantisesTheResult) {
  EXPECT_EQ(split_partial_types(build_chain(small_mlp(graph::Precision::Fp8, 1)), "gemm2"),
            std::set<ElementType>{ElementType::F16});
  EXPECT_EQ(split_partial_types(build_chain(small_mlp(graph::Precision::Fp16, 2)), "gemm2"),
            std::set<ElementType>{ElementType::F16});
}

// gemm1's GELU is cast to FP8 in its epilogue; gemm2's result, carried to
// the next iteration, is cast to FP8 there: both sum FP32 partials.
TEST(GemmCandidates, Fp32PartialsWhenTheResultIsCastToFp8Later) {
  const Chain chain = build_chain(small_mlp(graph::Precision::Fp8, 2));
  EXPECT_EQ(split_partial_types(chain, "gemm1"), std::set<ElementType>{ElementType::F32});
  EXPECT_EQ(split_partial_types(chain, "gemm2"), std::set<ElementType>{ElementType::F32});
}

}  // namespace
}  // namespace tilec::compiler
