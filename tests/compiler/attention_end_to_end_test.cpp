// Attention end to end: self-attention over segments, heads, query and key
// blocks, and cross-attention with one query row (the MAP head's pooling).
#include "end_to_end.h"
#include "graph/builder.h"
#include "support/error.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace tilec::compiler {
namespace {

// x -> (q, k, v projections) -> attention over segments of `segment` rows
// -> output projection.
graph::Graph attention_graph(ElementType type, std::int64_t batch, std::int64_t segment) {
  const StorageType storage{type, 0};
  graph::GraphBuilder b;
  graph::ValueId x = b.input("x", {{batch, segment, 48}, storage});
  graph::ValueId wq = b.parameter("Wq", {{48, 32}, storage});
  graph::ValueId wk = b.parameter("Wk", {{48, 32}, storage});
  graph::ValueId wv = b.parameter("Wv", {{48, 40}, storage});
  graph::ValueId wo = b.parameter("Wo", {{40, 48}, storage});
  graph::ValueId q = b.gemm("q", x, wq, storage);
  graph::ValueId k = b.gemm("k", x, wk, storage);
  graph::ValueId v = b.gemm("v", x, wv, storage);
  graph::ValueId a = b.attention("attention", q, k, v, 0.0f, storage);
  b.output("y", b.gemm("out", a, wo, storage));
  return b.finish();
}

TEST(EndToEnd, AttentionMatchesTheReference) {
  struct Case {
    ElementType type;
    std::int64_t batch, segment;
  };
  // Segments of whole panels, and of 13 rows (each padded to a panel).
  for (Case c : {Case{ElementType::F16, 3, 32}, Case{ElementType::F32, 2, 32}, Case{ElementType::F16, 3, 13}}) {
    Outcome outcome = compile_and_run(attention_graph(c.type, c.batch, c.segment), on_tiles(16));
    EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
    EXPECT_EQ(outcome.bad, 0) << "max error " << outcome.max_error << " with " << outcome.compiled.plan;
    EXPECT_LT(outcome.max_error, c.type == ElementType::F32 ? 1e-4 : 2e-2) << outcome.compiled.plan;
    EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << outcome.compiled.plan;
  }
}

// An attention step's tiles in the plan text: head parts, query parts and
// key parts ("name Hh x Qq x Kk").
struct AttentionParts {
  int heads = 0, queries = 0, keys = 0;
};
AttentionParts attention_parts(const std::string& plan, const std::string& name) {
  AttentionParts parts;
  const std::size_t at = plan.find(name + " ");
  if (at == std::string::npos) return parts;
  std::sscanf(plan.c_str() + at + name.size() + 1, "%dh x %dq x %dk", &parts.heads, &parts.queries, &parts.keys);
  return parts;
}

// A segment spreads over several tiles of its group: query blocks, key
// blocks (their partials merged by their statistics) or both.
TEST(EndToEnd, AttentionSpreadsOverTiles) {
  Outcome outcome = compile_and_run(attention_graph(ElementType::F32, 2, 64), on_tiles(64));
  const std::string& plan = outcome.compiled.plan;
  const AttentionParts parts = attention_parts(plan, "attention");
  EXPECT_GT(parts.queries * parts.keys, 1) << plan;
  EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
  EXPECT_EQ(outcome.bad, 0) << "max error " << outcome.max_error << " with " << plan;
  EXPECT_LT(outcome.max_error, 1e-4) << plan;
  EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << plan;
}

// Several heads: tiles take whole heads (several per tile where there are
// more heads than tiles to share them; one each where there are more
// tiles), computing only their heads' scores.
TEST(EndToEnd, MultiHeadAttentionMatchesTheReference) {
  const StorageType f32{ElementType::F32, 0};
  struct Case {
    std::int64_t heads;
    std::uint32_t tiles;
    bool more_tiles_than_heads;
  };
  for (Case c : {Case{4, 16, true}, Case{16, 16, false}, Case{2, 64, true}}) {
    graph::GraphBuilder b;
    graph::ValueId q = b.input("q", {{2, 32, 64}, f32});
    graph::ValueId k = b.input("k", {{2, 32, 64}, f32});
    graph::ValueId v = b.input("v", {{2, 32, 32}, f32});
    b.output("y", b.attention("heads", q, k, v, 0.0f, f32, c.heads));
    Outcome outcome = compile_and_run(b.finish(), on_tiles(c.tiles));
    const std::string& plan = outcome.compiled.plan;
    const AttentionParts parts = attention_parts(plan, "heads");
    ASSERT_GT(parts.heads, 0) << plan;
    EXPECT_EQ(c.heads % parts.heads, 0) << plan;
    if (c.more_tiles_than_heads) {
      EXPECT_EQ(parts.heads, c.heads) << plan;
    }
    EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
    EXPECT_EQ(outcome.bad, 0) << plan;
    EXPECT_LT(outcome.max_error, 1e-5) << plan;
    EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << plan;
  }
}

TEST(EndToEnd, AttentionOnHostInputs) {
  const StorageType f32{ElementType::F32, 0};
  graph::GraphBuilder b;
  graph::ValueId q = b.input("q", {{2, 16, 24}, f32});
  graph::ValueId k = b.input("k", {{2, 16, 24}, f32});
  graph::ValueId v = b.input("v", {{2, 16, 24}, f32});
  b.output("y", b.attention("attention", q, k, v, 0.25f, f32));
  Outcome outcome = compile_and_run(b.finish(), on_tiles(16));
  EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
  EXPECT_EQ(outcome.bad, 0) << "max error " << outcome.max_error << " with " << outcome.compiled.plan;
  EXPECT_LT(outcome.max_error, 1e-5) << outcome.compiled.plan;
}

// Two self-attention blocks with residuals, as a repeat over stacked weights.
TEST(EndToEnd, AttentionBlocksInARepeatMatchTheReference) {
  const StorageType f32{ElementType::F32, 0};
  graph::GraphBuilder b;
  graph::ValueId x = b.input("x", {{2, 16, 32}, f32});
  std::vector<graph::ValueId> weights;
  for (const char* name : {"Wq", "Wk", "Wv", "Wo"}) weights.push_back(b.parameter(name, {{2, 32, 32}, f32}));
  graph::GraphBuilder::RepeatOperands operands{.carried = {x}, .sequence = weights};
  graph::ValueId y = b.repeat("blocks", 2, operands, [&](graph::GraphBuilder& body, const std::vector<graph::ValueId>& args) {
                        graph::ValueId q = body.gemm("q", args[0], args[1], f32);
                        graph::ValueId k = body.gemm("k", args[0], args[2], f32);
                        graph::ValueId v = body.gemm("v", args[0], args[3], f32);
                        graph::ValueId a = body.attention("attention", q, k, v);
                        return std::vector<graph::ValueId>{body.add("residual", body.gemm("o", a, args[4], f32), args[0])};
                      }).front();
  b.output("y", y);
  Outcome outcome = compile_and_run(b.finish(), on_tiles(16));
  EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
  EXPECT_EQ(outcome.bad, 0) << "max error " << outcome.max_error << " with " << outcome.compiled.plan;
  EXPECT_LT(outcome.max_error, 1e-4) << outcome.compiled.plan;
  EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << outcome.compiled.plan;
}

// An encoder layer ends in a residual add after its last GEMM; the loop
// carries the value in that GEMM's output layout, so the body needs no
// rearrange (an exchange phase and a sync) at its end.
TEST(EndToEnd, EncoderLayersCarryTheirValueWithoutARearrangeAtTheBodysEnd) {
  graph::Graph graph = graph::build_workload("vit", {.precision = graph::Precision::Fp16, .width = 64, .hidden = 128});
  CompileOptions options = on_tiles(32);
  options.dump_after = "construct_mid";
  Outcome outcome = compile_and_run(graph, options);
  const std::string& dump = outcome.compiled.dump;
  const std::size_t end = dump.find("to here]");
  ASSERT_NE(end, std::string::npos) << dump;
  const std::string last_op = dump.substr(dump.rfind('\n', end) + 1, end - dump.rfind('\n', end));
  EXPECT_NE(last_op.find("map residual2"), std::string::npos) << last_op;
  EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
}

TEST(Compile, AttentionItCannotPlanIsRejectedByName) {
  graph::GraphBuilder b;
  const StorageType f16{ElementType::F16, 0};
  // As many rows as q, but in four segments of 8 keys that q's one segment
  // of 32 queries broadcasts against.
  graph::ValueId q = b.input("q", {{1, 32, 24}, f16});
  graph::ValueId k = b.input("k", {{4, 8, 24}, f16});
  b.output("y", b.attention("shared_keys", q, k, k, 0.0f, f16));
  try {
    compile(b.finish(), on_tiles(16));
    FAIL() << "compiled attention with broadcast keys";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("op 'shared_keys'"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("share their leading axes"), std::string::npos) << error.what();
  }
}

// Cross-attention as the MAP head pools: one learned query row (a
// parameter, projected once and shared by every segment) attends over each
// segment's keys; the result has one row a segment.
graph::Graph pooling_graph(ElementType type, std::int64_t batch, std::int64_t tokens, std::int64_t heads) {
  const StorageType storage{type, 0};
  graph::GraphBuilder b;
  graph::ValueId x = b.input("x", {{batch, tokens, 32}, storage});
  graph::ValueId probe = b.parameter("probe", {{1, 1, 32}, storage});
  graph::ValueId wq = b.parameter("Wq", {{32, 32}, storage});
  graph::ValueId wk = b.parameter("Wk", {{32, 32}, storage});
  graph::ValueId wv = b.parameter("Wv", {{32, 48}, storage});
  graph::ValueId wo = b.parameter("Wo", {{48, 32}, storage});
  graph::ValueId q = b.gemm("q", probe, wq, storage);
  graph::ValueId k = b.gemm("k", x, wk, storage);
  graph::ValueId v = b.gemm("v", x, wv, storage);
  graph::ValueId pooled = b.attention("pool", q, k, v, 0.0f, storage, heads);
  b.output("y", b.gemm("out", pooled, wo, storage));
  return b.finish();
}

TEST(EndToEnd, CrossAttentionWithOneSharedQueryRow) {
  struct Case {
    ElementType type;
    std::int64_t batch, tokens, heads;
    std::uint32_t tiles;
  };
  // Whole panels and a partial one (13 keys); one segment and three; as
  // many heads as tiles and fewer.
  for (Case c : {Case{ElementType::F32, 1, 32, 2, 16}, Case{ElementType::F32, 3, 13, 2, 16},
                 Case{ElementType::F16, 2, 40, 4, 64}, Case{ElementType::F32, 3, 64, 16, 16}}) {
    const graph::Graph graph = pooling_graph(c.type, c.batch, c.tokens, c.heads);
    ASSERT_EQ(graph.type(graph.outputs.at(0).second).shape, (graph::Shape{c.batch, 1, 32}));
    Outcome outcome = compile_and_run(graph, on_tiles(c.tiles));
    const std::string& plan = outcome.compiled.plan;
    EXPECT_EQ(attention_parts(plan, "pool").queries, 1) << plan;
    EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
    EXPECT_EQ(outcome.bad, 0) << "max error " << outcome.max_error << " with " << plan;
    EXPECT_LT(outcome.max_error, c.type == ElementType::F32 ? 1e-5 : 2e-2) << plan;
    EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << plan;
  }
}

// A parameter that is a GEMM's activation operand (the probe) is bound to
// the tiles that read it, not computed: each holds a copy.
TEST(EndToEnd, AParameterCanBeAGemmsActivation) {
  const StorageType f32{ElementType::F32, 0};
  graph::GraphBuilder b;
  graph::ValueId x = b.input("x", {{2, 4, 32}, f32});
  graph::ValueId probe = b.parameter("probe", {{1, 4, 32}, f32});
  graph::ValueId w = b.parameter("W", {{32, 64}, f32});
  b.output("y", b.gemm("projected", probe, w, f32));
  b.output("z", b.gemm("transformed", x, w, f32));
  Outcome outcome = compile_and_run(b.finish(), on_tiles(16));
  EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
  EXPECT_EQ(outcome.bad, 0) << outcome.compiled.plan;
  EXPECT_LT(outcome.max_error, 1e-5) << outcome.compiled.plan;
}

// The probe is bound once per tile even when groups process their images
// several chunks at a time (every chunk reads the same copy).
TEST(EndToEnd, TheHeadsProbeInAPlanOfSeveralChunks) {
  for (graph::Precision precision : {graph::Precision::Fp32, graph::Precision::Fp16}) {
    const graph::Workload tower = graph::make_workload("vit", {.batch = 8, .precision = precision});
    Outcome outcome = compile_and_run(tower.graph, on_tiles(2), tower.data_rules);
    const std::string& plan = outcome.compiled.plan;
    EXPECT_NE(plan.find(" chunks"), std::string::npos) << plan;
    EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
    EXPECT_EQ(outcome.bad, 0) << plan;
    EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << plan;
  }
}

// The whole vision tower at toy size, with its MAP head: patchify, the
// position embedding, a repeat of encoder layers, the post-layernorm and
// the pooling head, at every precision and batch 1 and 2.
TEST(EndToEnd, SmallVisionTowerWithItsHeadMatchesTheReference) {
  for (graph::Precision precision : {graph::Precision::Fp32, graph::Precision::Fp16, graph::Precision::Fp8})
    for (std::int64_t batch : {1, 2}) {
      const graph::Workload tower = graph::make_workload("vit", {.batch = batch, .precision = precision, .layers = 2});
      Outcome outcome = compile_and_run(tower.graph, on_tiles(16), tower.data_rules);
      const std::string& plan = outcome.compiled.plan;
      EXPECT_NE(plan.find("head_attention 2h x 1q"), std::string::npos) << plan;
      EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
      EXPECT_EQ(outcome.bad, 0) << graph::precision_name(precision) << " batch " << batch << ": max error "
                                << outcome.max_error << " with " << plan;
      EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << plan;
    }
}

}  // namespace
}  // namespace tilec::compiler
