// Sibling GEMMs of one input fuse into one GEMM whose results are views of
// its output, only where they compute alike; the fused plans match the
// plan-order reference bit for bit.
#include "compiler/chain.h"
#include "end_to_end.h"
#include "graph/builder.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tilec::compiler {
namespace {

const StorageType kF16{ElementType::F16, 0};

struct Projection {
  std::string name;
  std::int64_t columns = 32;
  StorageType weight = kF16;
  bool bias = true;
  bool transposed = false;  // the weight stored [N, K]
};

// x [2, 32, 48] -> one projection each -> attention over q, k, v (the first
// three) -> an output projection; more projections are graph outputs.
graph::Graph projections_graph(const std::vector<Projection>& projections, std::int64_t width = 48) {
  graph::GraphBuilder b;
  graph::ValueId x = b.input("x", {{2, 32, width}, kF16});
  std::vector<graph::ValueId> weights, biases, results;
  for (const Projection& p : projections) {
    const graph::Shape shape = p.transposed ? graph::Shape{p.columns, width} : graph::Shape{width, p.columns};
    weights.push_back(b.parameter("W" + p.name, {shape, p.weight}));
    biases.push_back(p.bias ? b.parameter("b" + p.name, {{p.columns}, kF16}) : graph::kNoValue);
  }
  graph::ValueId wo = b.parameter("Wo", {{projections[2].columns, width}, kF16});
  for (std::size_t i = 0; i < projections.size(); ++i) {
    const Projection& p = projections[i];
    graph::ValueId y = b.gemm(p.name + "_gemm", x, weights[i], kF16, false, p.transposed);
    if (p.bias) y = b.add(p.name, y, biases[i]);
    results.push_back(y);
  }
  graph::ValueId a = b.attention("attention", results[0], results[1], results[2], 0.0f, kF16, 2);
  b.output("y", b.gemm("out", a, wo, kF16));
  for (std::size_t i = 3; i < results.size(); ++i) b.output(projections[i].name + "_out", results[i]);
  return b.finish();
}

const Step* step_named(const Chain& chain, const std::string& name) {
  for (const Step& step : chain.steps)
    if (step.name == name) return &step;
  return nullptr;
}

TEST(FuseGemms, SiblingProjectionsBecomeOneGemmWhoseResultsAreViews) {
  const Chain chain = build_chain(projections_graph({{"q"}, {"k"}, {"v", 64}}));
  const Step* fused = step_named(chain, "q_gemm+k_gemm+v_gemm");
  ASSERT_NE(fused, nullptr);
  ASSERT_EQ(fused->fused.size(), 3u);
  EXPECT_EQ(fused->fused[1].op, "k_gemm");
  EXPECT_EQ(fused->fused[1].first_column, 32);
  EXPECT_EQ(fused->fused[2].first_column, 64);
  EXPECT_EQ(fused->fused[2].columns, 64);
  const Weight& weight = chain.weights[static_cast<std::size_t>(fused->weight)];
  EXPECT_EQ(weight.shape, (std::vector<std::int64_t>{48, 128}));
  EXPECT_EQ(weight.joined.size(), 3u);
  ASSERT_EQ(fused->epilogue.size(), 1u);
  EXPECT_EQ(chain.weights[static_cast<std::size_t>(fused->epilogue[0].weight)].shape, std::vector<std::int64_t>{128});
  EXPECT_EQ(chain.activations[static_cast<std::size_t>(fused->output)].cols, 128);
  // The attention reads the views: columns of the fused output.
  const Step* attention = step_named(chain, "attention");
  ASSERT_NE(attention, nullptr);
  const Activation& v = chain.activations[static_cast<std::size_t>(attention->third_input)];
  EXPECT_EQ(v.view_of, fused->output);
  EXPECT_EQ(v.view_offset, 64);
  EXPECT_EQ(v.cols, 64);
  EXPECT_EQ(step_named(chain, "q_gemm"), nullptr);
}

TEST(FuseGemms, GemmsThatComputeDifferentlyStayApart) {
  const StorageType f32{ElementType::F32, 0};
  // Columns not in whole 16-column blocks (q's, then k's), another weight
  // type, no bias: q stays apart, and k and v fuse only when alike.
  for (const auto& projections : std::vector<std::vector<Projection>>{
           {{"q", 40}, {"k", 40}, {"v"}},
           {{"q"}, {"k", 32, f32}, {"v", 32, f32}},
           {{"q"}, {"k", 32, kF16, false}, {"v", 32, kF16, false}},
       }) {
    const Chain chain = build_chain(projections_graph(projections));
    EXPECT_NE(step_named(chain, "q_gemm"), nullptr);
    const bool k_and_v_alike = projections[1].columns % 16 == 0;
    EXPECT_EQ(step_named(chain, "k_gemm+v_gemm") != nullptr, k_and_v_alike) << projections[1].name;
  }
  const Chain outputs = build_chain(projections_graph({{"q"}, {"k"}, {"v"}, {"extra"}}));
  const Step* fused = step_named(outputs, "q_gemm+k_gemm+v_gemm");
  ASSERT_NE(fused, nullptr);
  EXPECT_NE(step_named(outputs, "extra_gemm"), nullptr);  // its result is a graph output
}

TEST(FuseGemms, FusedPlansMatchThePlanOrderReference) {
  // A K of 1024 over 4 to 64 tiles, so that the fused sums split their K
  // over tiles too; q and k of 32 columns, v of 64.
  int split_sums = 0;
  for (std::uint32_t tiles : {4u, 16u, 64u}) {
    // Weights stored [N, K] on 16 tiles.
    const bool transposed = tiles == 16;
    const graph::Graph graph = projections_graph(
        {{"q", 32, kF16, true, transposed}, {"k", 32, kF16, true, transposed}, {"v", 64, kF16, true, transposed}},
        1024);
    Outcome outcome = compile_and_run(graph, on_tiles(tiles));
    EXPECT_NE(outcome.compiled.plan.find("q_gemm+k_gemm+v_gemm"), std::string::npos) << outcome.compiled.plan;
    // Each graph GEMM's order is its columns' part of the fused one's.
    const auto& gemms = outcome.compiled.package.summation_order.gemms;
    if (gemms.count("v_gemm") && gemms.at("v_gemm").parts() > 1) {
      ++split_sums;
      EXPECT_EQ(gemms.at("q_gemm").parts(), gemms.at("v_gemm").parts());
    }
    EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
    EXPECT_EQ(outcome.bad, 0) << "max error " << outcome.max_error << " with " << outcome.compiled.plan;
    EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << outcome.compiled.plan;
  }
  EXPECT_GT(split_sums, 0) << "no plan split the fused GEMM's sums over K parts";
}

// Views read by other steps than attention: an add of two views (the
// second moves to the first's tiles) and a layernorm of a third.
TEST(FuseGemms, ViewsFeedElementwiseAndRowSteps) {
  graph::GraphBuilder b;
  graph::ValueId x = b.input("x", {{40, 64}, kF16});
  std::vector<graph::ValueId> weights, biases;
  for (const char* name : {"a", "b", "c"}) {
    weights.push_back(b.parameter(std::string("W") + name, {{64, 48}, kF16}));
    biases.push_back(b.parameter(std::string("b") + name, {{48}, kF16}));
  }
  const StorageType f32{ElementType::F32, 0};
  graph::ValueId gamma = b.parameter("gamma", {{48}, f32});
  graph::ValueId beta = b.parameter("beta", {{48}, f32});
  std::vector<graph::ValueId> views;
  for (int i = 0; i < 3; ++i) {
    const std::string name(1, static_cast<char>('a' + i));
    views.push_back(b.add(name, b.gemm(name + "_gemm", x, weights[static_cast<std::size_t>(i)], kF16),
                          biases[static_cast<std::size_t>(i)]));
  }
  b.output("sum", b.add("sum", views[0], views[1]));
  b.output("normed", b.layernorm("normed", views[2], gamma, beta));
  const graph::Graph graph = b.finish();
  for (std::uint32_t tiles : {1u, 16u}) {
    Outcome outcome = compile_and_run(graph, on_tiles(tiles));
    EXPECT_NE(outcome.compiled.plan.find("a_gemm+b_gemm+c_gemm"), std::string::npos) << outcome.compiled.plan;
    EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
    EXPECT_EQ(outcome.bad, 0) << "max error " << outcome.max_error << " with " << outcome.compiled.plan;
    EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << outcome.compiled.plan;
  }
}

// Siblings before a repeat and inside its body (per-iteration weights):
// the repeat's steps move with the steps fused before it.
TEST(FuseGemms, SiblingsBeforeAndInsideARepeatFuse) {
  graph::GraphBuilder b;
  graph::ValueId x = b.input("x", {{40, 64}, kF16});
  graph::ValueId wa = b.parameter("Wa", {{64, 32}, kF16});
  graph::ValueId wb = b.parameter("Wb", {{64, 32}, kF16});
  graph::ValueId wp = b.parameter("Wp", {{2, 32, 32}, kF16});
  graph::ValueId wq = b.parameter("Wq", {{2, 32, 32}, kF16});
  graph::ValueId a = b.gemm("a_gemm", x, wa, kF16);
  graph::ValueId sum = b.add("sum", a, b.gemm("b_gemm", x, wb, kF16));
  graph::GraphBuilder::RepeatOperands operands{.carried = {sum}, .sequence = {wp, wq}};
  b.output("y", b.repeat("layers", 2, operands,
                         [&](graph::GraphBuilder& body, const std::vector<graph::ValueId>& args) {
                           graph::ValueId p = body.gemm("p_gemm", args[0], args[1], kF16);
                           graph::ValueId q = body.gemm("q_gemm", args[0], args[2], kF16);
                           return std::vector<graph::ValueId>{body.add("next", p, q)};
                         })
                    .front());
  const graph::Graph graph = b.finish();
  const Chain chain = build_chain(graph);
  ASSERT_TRUE(chain.repeat.has_value());
  EXPECT_NE(step_named(chain, "a_gemm+b_gemm"), nullptr);
  EXPECT_EQ(chain.steps[static_cast<std::size_t>(chain.repeat->first_step)].name, "p_gemm+q_gemm");
  EXPECT_EQ(chain.steps[static_cast<std::size_t>(chain.repeat->last_step)].name, "next");
  EXPECT_TRUE(chain.weights[static_cast<std::size_t>(chain.steps[static_cast<std::size_t>(chain.repeat->first_step)]
                                                           .weight)]
                  .per_iteration);
  for (std::uint32_t tiles : {1u, 16u}) {
    Outcome outcome = compile_and_run(graph, on_tiles(tiles));
    EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
    EXPECT_EQ(outcome.bad, 0) << "max error " << outcome.max_error << " with " << outcome.compiled.plan;
    EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << outcome.compiled.plan;
  }
}

}  // namespace
}  // namespace tilec::compiler
