// Stage gemm_candidates alone: what partial sums travel as.
#include "compiler/gemm_candidates.h"
#include "graph/builder.h"
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
          if (candidate.k_parts > 1) types.insert(candidate.partial_type);
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
  EXPECT_EQ(split_partial_types(build_chain(small_mlp(graph::Precision::Fp16, 1)), "gemm2"),
            std::set<ElementType>{ElementType::F16});
}

// gemm1's GELU is cast to FP8 in its epilogue; a residual add after the
// GEMM is cast to FP8 in a step of its own: both sum FP32 partials.
TEST(GemmCandidates, Fp32PartialsWhenTheResultIsCastToFp8Later) {
  EXPECT_EQ(split_partial_types(build_chain(small_mlp(graph::Precision::Fp8, 1)), "gemm1"),
            std::set<ElementType>{ElementType::F32});
  const StorageType f16{ElementType::F16, 0};
  graph::GraphBuilder b;
  const graph::ValueId x = b.input("x", {{32, 64}, f16});
  const graph::ValueId w = b.parameter("W", {{64, 64}, f16});
  const graph::ValueId sum = b.add("residual", b.gemm("gemm", x, w, f16), x);
  b.output("y", b.cast("y8", sum, StorageType{ElementType::F143, -2}));
  EXPECT_EQ(split_partial_types(build_chain(b.finish()), "gemm"), std::set<ElementType>{ElementType::F32});
}

// In a repeat body each iteration's rounding feeds the next: FP32 partials
// (in FP8, the next iteration's cast to FP8 would ask for them too).
TEST(GemmCandidates, Fp32PartialsInARepeatBody) {
  for (graph::Precision precision : {graph::Precision::Fp16, graph::Precision::Fp8}) {
    const Chain chain = build_chain(small_mlp(precision, 2));
    EXPECT_EQ(split_partial_types(chain, "gemm1"), std::set<ElementType>{ElementType::F32});
    EXPECT_EQ(split_partial_types(chain, "gemm2"), std::set<ElementType>{ElementType::F32});
  }
}

// A host input a map reads first: 16-column parts, and row parts on the
// tiles the columns leave, so a narrow input (the patches' 588 columns on a
// full chip) is not held whole by the few tiles of its column parts.
TEST(GemmCandidates, AMapOnANarrowHostInputSpreadsItsRowsToo) {
  const Layout layout = spread_layout(46, 588, 1472);
  EXPECT_EQ(layout.col_parts(), 37);
  EXPECT_EQ(layout.row_parts(), 39);
  EXPECT_EQ(layout.piece_panels, 2);
  std::set<int> tiles;
  for (int block = 0; block < layout.blocks(); ++block) {
    ASSERT_EQ(layout.block_tiles(block).size(), 1u);
    tiles.insert(layout.block_tiles(block)[0]);
  }
  EXPECT_EQ(tiles.size(), static_cast<std::size_t>(layout.blocks()));
  EXPECT_LT(*tiles.rbegin(), 1472);
  // A wide input takes one row part, as many column parts as tiles.
  const Layout wide = spread_layout(4, 16 * 2000, 64);
  EXPECT_EQ(wide.row_parts(), 1);
  EXPECT_EQ(wide.col_parts(), 64);
}

}  // namespace
}  // namespace tilec::compiler
