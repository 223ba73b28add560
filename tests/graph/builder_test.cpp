#include "graph/builder.h"
#include "graph/validate.h"
#include "support/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tilec::graph {
namespace {


constexpr StorageType kF32{ElementType::F32, 0};
constexpr StorageType kF16{ElementType::F16, 0};
constexpr StorageType kF143{ElementType::F143, -4};

TensorType f32(Shape shape) { return {std::move(shape), kF32}; }

// The message of the BadInput error `build` throws.
template <typename Build>
std::string bad_input_message(Build&& build) {
  try {
    build();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

TEST(GraphText, TypesAndOpNames) {
  EXPECT_EQ(type_text({{1, 729, 1152}, kF143}), "f143(s=-4)[1,729,1152]");
  EXPECT_EQ(type_text({{4304}, kF16}), "f16[4304]");
  EXPECT_EQ(type_text({{}, kF32}), "f32[]");
  for (OpKind kind : {OpKind::Input, OpKind::Parameter, OpKind::Gemm, OpKind::Gelu, OpKind::Add,
                      OpKind::Cast, OpKind::LayerNorm, OpKind::Softmax, OpKind::Attention,
                      OpKind::Repeat, OpKind::Patchify, OpKind::Reshape})
    EXPECT_EQ(parse_op_kind(op_kind_name(kind)), kind);
  EXPECT_EQ(op_kind_name(OpKind::LayerNorm), "layernorm");
  EXPECT_EQ(parse_op_kind("matmul"), std::nullopt);
}

TEST(GraphBuilder, GemmBroadcastsBatchAxesAndHonoursTransposes) {
  GraphBuilder b;
  ValueId a = b.input("a", f32({2, 1, 5, 3}));
  ValueId w = b.parameter("w", f32({4, 3, 7}));
  ValueId wt = b.parameter("wt", f32({7, 3}));
  ValueId at = b.parameter("at", f32({3, 5}));
  ValueId y = b.gemm("y", a, w, kF16);
  EXPECT_EQ(b.graph().type(y), (TensorType{{2, 4, 5, 7}, kF16}));
  ValueId z = b.gemm("z", a, wt, kF32, false, true);
  EXPECT_EQ(b.graph().type(z).shape, (Shape{2, 1, 5, 7}));
  ValueId u = b.gemm("u", at, wt, kF32, true, true);
  EXPECT_EQ(b.graph().type(u).shape, (Shape{5, 7}));
  b.output("y", y);
  Graph graph = b.finish();
  validate(graph);
  EXPECT_EQ(graph.producer(y)->name, "y");
  EXPECT_EQ(graph.producer(a)->kind, OpKind::Input);
  ASSERT_EQ(graph.inputs().size(), 1u);
  ASSERT_EQ(graph.parameters().size(), 3u);
  EXPECT_EQ(graph.parameters()[1]->name, "wt");
}

TEST(GraphBuilder, GemmShapeErrorsNameOpOperandsAndShapes) {
  GraphBuilder b;
  ValueId x = b.input("x", f32({1, 729, 1152}));
  ValueId w = b.parameter("W1", f32({1000, 4304}));
  ValueId v = b.parameter("v", f32({3, 1152, 4}));
  ValueId s = b.parameter("s", f32({5}));
  EXPECT_EQ(bad_input_message([&] { b.gemm("gemm1", x, w, kF16); }),
            "op 'gemm1': operand 'b' has shape [1000,4304] but operand 'a' needs K = 1152");
  EXPECT_EQ(bad_input_message([&] { b.gemm("gemm2", x, w, kF16, false, true); }),
            "op 'gemm2': operand 'b' has shape [1000,4304] (transposed) but operand 'a' needs K = 1152");
  EXPECT_EQ(bad_input_message([&] { b.gemm("gemm3", x, s, kF16); }),
            "op 'gemm3': operand 'b' has shape [5] but needs at least 2 axes ([..., K, N])");
  EXPECT_EQ(bad_input_message([&] {
                GraphBuilder c;
                ValueId p = c.input("p", f32({2, 3, 4}));
                ValueId q = c.parameter("q", f32({3, 4, 5}));
                c.gemm("g", p, q, kF32);
              }),
              "op 'g': operand 'b' has shape [3,4,5] whose batch axes [3] do not broadcast with "
              "those of operand 'a' [2]");
  EXPECT_EQ(b.graph().type(b.gemm("ok", x, v, kF16)).shape, (Shape{3, 729, 4}));
}

TEST(GraphBuilder, ElementwiseOpsBroadcastAndKeepStorage) {
  GraphBuilder b;
  ValueId x = b.input("x", {{2, 3, 4}, kF16});
  ValueId bias = b.parameter("bias", f32({4}));
  ValueId col = b.parameter("col", f32({3, 1}));
  ValueId g = b.gelu("g", x, GeluApproximation::Erf);
  EXPECT_EQ(b.graph().type(g), (TensorType{{2, 3, 4}, kF16}));
  EXPECT_EQ(b.graph().ops.back().approximation, GeluApproximation::Erf);
  ValueId s = b.add("s", g, bias);
  EXPECT_EQ(b.graph().type(s), (TensorType{{2, 3, 4}, kF16}));
  ValueId t = b.add("t", col, bias, kF32);
  EXPECT_EQ(b.graph().type(t), (TensorType{{3, 4}, kF32}));
  ValueId c = b.cast("c", s, kF143);
  EXPECT_EQ(b.graph().type(c), (TensorType{{2, 3, 4}, kF143}));
  EXPECT_EQ(bad_input_message([&] { b.parameter("z", f32({5})); }),
            "parameter 'z': declared after gelu 'g': declare inputs, then parameters, then ops");
  EXPECT_EQ(bad_input_message([&] { b.input("i", f32({5})); }),
            "input 'i': declared after parameter 'bias': declare inputs, then parameters, then ops");
}

TEST(GraphBuilder, AddReportsShapesThatDoNotBroadcast) {
  GraphBuilder b;
  ValueId x = b.input("x", f32({2, 3, 5}));
  ValueId y = b.parameter("y", f32({3, 4}));
  EXPECT_EQ(bad_input_message([&] { b.add("sum", x, y); }),
            "op 'sum': operand 'b' has shape [3,4] which does not broadcast with operand 'a' [2,3,5]");
}

TEST(GraphBuilder, LayerNormSoftmaxAndAttentionShapes) {
  GraphBuilder b;
  ValueId x = b.input("x", f32({2, 6, 8}));
  ValueId k = b.input("k", f32({2, 5, 8}));
  ValueId v = b.input("v", f32({1, 5, 3}));
  ValueId gamma = b.parameter("gamma", f32({8}));
  ValueId beta = b.parameter("beta", f32({8}));
  ValueId wrong = b.parameter("wrong", f32({6}));
  ValueId n = b.layernorm("ln", x, gamma, beta, 1e-5f);
  EXPECT_EQ(b.graph().type(n).shape, (Shape{2, 6, 8}));
  EXPECT_EQ(b.graph().ops.back().epsilon, 1e-5f);
  EXPECT_EQ(bad_input_message([&] { b.layernorm("ln2", x, gamma, wrong); }),
            "op 'ln2': operand 'beta' has shape [6] but operand 'x' needs [8]");
  EXPECT_EQ(bad_input_message([&] { b.layernorm("ln3", x, gamma, beta, -1.0f); }),
            "op 'ln3': epsilon -1 must be finite and >= 0");
  ValueId s = b.softmax("sm", x, 1);
  EXPECT_EQ(b.graph().type(s).shape, (Shape{2, 6, 8}));
  EXPECT_EQ(bad_input_message([&] { b.softmax("sm2", x, 3); }),
            "op 'sm2': axis 3 is out of range for operand 'x' of shape [2,6,8]");
  EXPECT_EQ(bad_input_message([&] { b.softmax("sm3", x, -4); }),
            "op 'sm3': axis -4 is out of range for operand 'x' of shape [2,6,8]");
  ValueId a = b.attention("att", x, k, v);
  EXPECT_EQ(b.graph().type(a).shape, (Shape{2, 6, 3}));
  EXPECT_EQ(bad_input_message([&] { b.attention("att2", x, v, v); }),
            "op 'att2': operand 'k' has shape [1,5,3] but operand 'q' needs D = 8");
  EXPECT_EQ(bad_input_message([&] { b.attention("att3", x, k, x); }),
            "op 'att3': operand 'v' has shape [2,6,8] but operand 'k' needs T = 5");
  EXPECT_EQ(bad_input_message([&] { b.attention("att4", x, k, v, 0.0f, std::nullopt, 2); }),
            "op 'att4': 2 heads do not divide D = 8 of 'q' and E = 3 of 'v'");
  EXPECT_EQ(bad_input_message([&] { b.attention("att5", x, k, v, 0.0f, std::nullopt, 0); }),
            "op 'att5': heads 0 must be at least 1");
}

// What the ViT tower needs: a position embedding broadcast over the batch,
// and one query (the head's probe) attending over every batch item's tokens.
TEST(GraphBuilder, BroadcastAddAndCrossAttentionWithABroadcastQuery) {
  GraphBuilder b;
  ValueId tokens = b.input("tokens", {{3, 729, 1152}, kF16});
  ValueId position = b.parameter("position", {{729, 1152}, kF16});
  ValueId probe = b.parameter("probe", {{1, 1, 1152}, kF16});
  ValueId wrong = b.parameter("wrong", {{2, 1, 1152}, kF16});
  ValueId embedded = b.add("embedded", tokens, position);
  EXPECT_EQ(b.graph().type(embedded), (TensorType{{3, 729, 1152}, kF16}));
  ValueId pooled = b.attention("pooled", probe, embedded, embedded, 0.0f, std::nullopt, 16);
  EXPECT_EQ(b.graph().type(pooled), (TensorType{{3, 1, 1152}, kF16}));
  EXPECT_EQ(bad_input_message([&] { b.attention("bad", wrong, embedded, embedded); }),
            "op 'bad': operand 'k' has shape [3,729,1152] whose batch axes [3] do not broadcast with those of "
            "operand 'q' [2]");
}

TEST(GraphBuilder, PatchifyShapesAndErrors) {
  GraphBuilder b;
  ValueId image = b.input("image", {{2, 384, 384, 3}, kF16});
  ValueId small = b.input("small", {{6, 4, 5}, kF32});
  ValueId flat = b.input("flat", f32({4, 4}));
  ValueId patches = b.patchify("patches", image, 14);
  EXPECT_EQ(b.graph().type(patches), (TensorType{{2, 729, 588}, kF16}));
  EXPECT_EQ(b.graph().ops.back().patch, 14);
  EXPECT_EQ(b.graph().type(b.patchify("typed", small, 2, kF143)), (TensorType{{6, 20}, kF143}));
  EXPECT_EQ(b.graph().type(b.patchify("whole", small, 1)).shape, (Shape{24, 5}));
  EXPECT_EQ(bad_input_message([&] { b.patchify("p0", image, 0); }), "op 'p0': patch 0 must be at least 1");
  // Rows and columns beyond the last whole patch are left out: 4 / 3 = 1.
  EXPECT_EQ(b.graph().type(b.patchify("p3", small, 3)).shape, (Shape{2, 45}));
  EXPECT_EQ(bad_input_message([&] { b.patchify("p5", small, 5); }),
            "op 'p5': operand 'x' has shape [6,4,5] whose height 6 and width 4 do not hold one patch of 5");
  EXPECT_EQ(bad_input_message([&] { b.patchify("p385", image, 385); }),
            "op 'p385': operand 'x' has shape [2,384,384,3] whose height 384 and width 384 do not hold one "
            "patch of 385");
  EXPECT_EQ(bad_input_message([&] { b.patchify("p2", flat, 2); }),
            "op 'p2': operand 'x' has shape [4,4] but needs at least 3 axes ([..., H, W, C])");
}

TEST(GraphBuilder, ReshapeResolvesMinusOneAndChecksTheCount) {
  GraphBuilder b;
  ValueId x = b.input("x", {{4, 1, 6}, kF16});
  ValueId r = b.reshape("r", x, {4, 6});
  EXPECT_EQ(b.graph().type(r), (TensorType{{4, 6}, kF16}));
  ValueId free = b.reshape("free", x, {2, -1, 3}, kF32);
  EXPECT_EQ(b.graph().type(free), (TensorType{{2, 4, 3}, kF32}));
  // The op keeps the resolved shape, as the result has it.
  EXPECT_EQ(b.graph().ops.back().target_shape, (Shape{2, 4, 3}));
  EXPECT_EQ(b.graph().type(b.reshape("all", x, {-1})).shape, (Shape{24}));
  ValueId one = b.reshape("one", b.reshape("single", x, {24}), {24, 1, 1});
  EXPECT_EQ(b.graph().type(one).shape, (Shape{24, 1, 1}));
  EXPECT_EQ(bad_input_message([&] { b.reshape("two", x, {-1, -1}); }), "op 'two': shape [-1,-1] has more than one -1");
  EXPECT_EQ(bad_input_message([&] { b.reshape("zero", x, {0, 24}); }),
            "op 'zero': shape [0,24] has extent 0: extents are >= 1, or one -1");
  EXPECT_EQ(bad_input_message([&] { b.reshape("neg", x, {-2, -12}); }),
            "op 'neg': shape [-2,-12] has extent -2: extents are >= 1, or one -1");
  EXPECT_EQ(bad_input_message([&] { b.reshape("count", x, {5, 5}); }),
            "op 'count': shape [5,5] cannot hold the 24 elements of operand 'x' [4,1,6]");
  EXPECT_EQ(bad_input_message([&] { b.reshape("rest", x, {5, -1}); }),
            "op 'rest': shape [5,-1] cannot hold the 24 elements of operand 'x' [4,1,6]");
  EXPECT_EQ(bad_input_message([&] { b.reshape("huge", x, {1 << 30, 1 << 30, 1 << 30, -1}); }),
            "op 'huge': shape [1073741824,1073741824,1073741824,-1] cannot hold the 24 elements of operand 'x' "
            "[4,1,6]");
  EXPECT_EQ(bad_input_message([&] { b.reshape("scalar", x, {}); }),
            "op 'scalar': shape [] cannot hold the 24 elements of operand 'x' [4,1,6]");
}

TEST(GraphBuilder, ElementwiseReductionAndLayoutShapes) {
  GraphBuilder b;
  ValueId x = b.input("x", f32({2, 3, 4}));
  ValueId row = b.input("row", {{4}, kF16});
  EXPECT_EQ(b.graph().type(b.binary(OpKind::Div, "div", x, row)), f32({2, 3, 4}));
  EXPECT_EQ(b.graph().type(b.binary(OpKind::Pow, "pow", row, x)), (TensorType{{2, 3, 4}, kF16}));
  EXPECT_EQ(b.graph().type(b.unary(OpKind::Erf, "erf", x, kF16)), (TensorType{{2, 3, 4}, kF16}));
  ValueId mean = b.reduce(OpKind::ReduceMean, "mean", x, {-1, 0});
  EXPECT_EQ(b.graph().type(mean).shape, (Shape{1, 3, 1}));
  EXPECT_EQ(b.graph().ops.back().axes, (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(b.graph().type(b.reduce(OpKind::ReduceSum, "sum", x, {1}, false)).shape, (Shape{2, 4}));
  EXPECT_EQ(b.graph().type(b.transpose("t", x, {2, 0, 1})).shape, (Shape{4, 2, 3}));
  EXPECT_EQ(b.graph().type(b.concat("c", {x, x, x}, 1)).shape, (Shape{2, 9, 4}));
  EXPECT_EQ(b.graph().type(b.slice("s", x, {1, 2, 0}, {2, -1, 4}, {1, -1, 3})).shape, (Shape{1, 3, 2}));
  EXPECT_EQ(b.graph().type(b.gather("g", x, -2, {2, 0, 1, 1}, {2, 2})).shape, (Shape{2, 2, 2, 4}));
  EXPECT_EQ(b.graph().type(b.gather("scalar", x, 2, {3}, {})).shape, (Shape{2, 3}));
  // A reduction kept with keep_dims broadcasts back over what it reduced.
  EXPECT_EQ(b.graph().type(b.binary(OpKind::Sub, "centred", x, mean)).shape, (Shape{2, 3, 4}));
}

TEST(GraphBuilder, ReductionAndLayoutErrorsNameTheOp) {
  GraphBuilder b;
  ValueId x = b.input("x", f32({2, 3, 4}));
  ValueId y = b.input("y", f32({2, 5}));
  EXPECT_EQ(bad_input_message([&] { b.binary(OpKind::Mul, "mul", x, y); }),
            "op 'mul': operand 'b' has shape [2,5] which does not broadcast with operand 'a' [2,3,4]");
  EXPECT_EQ(bad_input_message([&] { b.reduce(OpKind::ReduceMax, "r", x, {3}); }),
            "op 'r': axis 3 is out of range for operand 'x' of shape [2,3,4]");
  EXPECT_EQ(bad_input_message([&] { b.reduce(OpKind::ReduceMax, "twice", x, {1, -2}); }),
            "op 'twice': axes [1,1] must be ascending without repeats");
  EXPECT_EQ(bad_input_message([&] { b.reduce(OpKind::ReduceMean, "none", x, {}); }),
            "op 'none': axes must name at least one axis");
  EXPECT_EQ(bad_input_message([&] { b.transpose("t", x, {0, 0, 1}); }),
            "op 't': permutation [0,0,1] is not a permutation of the 3 axes of operand 'x' [2,3,4]");
  EXPECT_EQ(bad_input_message([&] { b.concat("c", {x, y}, 0); }),
            "op 'c': operand 1 has shape [2,5] which does not match operand 0 [2,3,4] off axis 0");
  EXPECT_EQ(bad_input_message([&] { b.concat("empty", {}, 0); }), "op 'empty': concat takes at least one operand");
  EXPECT_EQ(bad_input_message([&] { b.concat("far", {x}, 3); }),
            "op 'far': axis 3 is out of range for operand 'x' of shape [2,3,4]");
  EXPECT_EQ(bad_input_message([&] { b.slice("s", x, {0, 0}, {1, 1}, {1, 1}); }),
            "op 's': starts, ends and steps need one entry per axis of operand 'x' [2,3,4]");
  EXPECT_EQ(bad_input_message([&] { b.slice("empty_axis", x, {0, 2, 0}, {2, 2, 4}, {1, 1, 1}); }),
            "op 'empty_axis': axis 1 of extent 3: start 2, end 2, step 1 select no element");
  EXPECT_EQ(bad_input_message([&] { b.slice("zero_step", x, {0, 0, 0}, {2, 3, 4}, {1, 0, 1}); }),
            "op 'zero_step': axis 1 of extent 3: start 0, end 3, step 0 select no element");
  EXPECT_EQ(bad_input_message([&] { b.gather("g", x, 1, {3}, {1}); }),
            "op 'g': index 3 is out of range for axis 1 of operand 'x' [2,3,4]");
  EXPECT_EQ(bad_input_message([&] { b.gather("count", x, 1, {0, 1}, {3}); }),
            "op 'count': 2 indices do not fill indices shape [3]");
}

TEST(GraphBuilder, NamesAreCheckedAndUnique) {
  GraphBuilder b;
  ValueId x = b.input("x", f32({2, 2}));
  EXPECT_EQ(bad_input_message([&] { b.gelu("x", x); }),
            "op 'x': the name is already used by another op or value");
  EXPECT_EQ(bad_input_message([&] { b.gelu("a b", x); }),
            "op 'a b': names are letters, digits, '_', '-' and '.', not starting with '-' or '.'");
  EXPECT_EQ(bad_input_message([&] { b.gelu("", x); }),
            "op '': names are letters, digits, '_', '-' and '.', not starting with '-' or '.'");
  EXPECT_TRUE(is_valid_name("blocks.0_W-1"));
  EXPECT_FALSE(is_valid_name("../x"));
  EXPECT_FALSE(is_valid_name("a#1"));
  b.output("y", x);
  EXPECT_EQ(bad_input_message([&] { b.output("y", x); }), "output 'y': two outputs have this name");
  EXPECT_EQ(bad_input_message([] { GraphBuilder().finish(); }), "graph: the graph has no outputs");
}

TEST(GraphBuilder, TypesAreChecked) {
  GraphBuilder b;
  EXPECT_EQ(bad_input_message([&] { b.input("x", f32({2, 0})); }),
            "input 'x': the tensor has shape [2,0]: every extent must be >= 1");
  EXPECT_EQ(bad_input_message([&] { b.input("x", {{2}, {ElementType::F16, 3}}); }),
            "input 'x': the tensor has type f16 with scale 3: only FP8 types take a scale");
  EXPECT_EQ(bad_input_message([&] { b.input("x", {{2}, {ElementType::F143, 65}}); }),
            "input 'x': the tensor has scale 65: scales must lie within +-64");
  EXPECT_EQ(bad_input_message([&] { b.input("x", f32({1 << 20, 1 << 20, 2})); }),
            "input 'x': the tensor has shape [1048576,1048576,2]: more than 2^40 elements");
}

// A two-layer block repeated: x carried, weights per iteration, a bias shared.
Graph repeated_graph(std::int64_t count) {
  GraphBuilder b;
  ValueId x = b.input("x", f32({4, 6}));
  ValueId w = b.parameter("W", f32({count, 6, 6}));
  ValueId bias = b.parameter("bias", f32({6}));
  std::vector<ValueId> results = b.repeat(
      "blocks", count, {.carried = {x}, .sequence = {w}, .invariant = {bias}},
      [](GraphBuilder& body, const std::vector<ValueId>& args) {
        EXPECT_EQ(body.graph().type(args[1]).shape, (Shape{6, 6}));
        ValueId h = body.gemm("h", args[0], args[1], kF32);
        return std::vector<ValueId>{body.add("y", h, args[2])};
      });
  b.output("y", results.at(0));
  return b.finish();
}

TEST(GraphBuilder, RepeatBuildsOneBodyWithArgumentsInOrder) {
  Graph graph = repeated_graph(3);
  validate(graph);
  const Op& repeat = graph.ops.back();
  EXPECT_EQ(repeat.kind, OpKind::Repeat);
  EXPECT_EQ(repeat.count, 3);
  EXPECT_EQ(repeat.signature.carried, 1);
  EXPECT_EQ(repeat.signature.sequence, 1);
  EXPECT_EQ(repeat.signature.invariant, 1);
  ASSERT_TRUE(repeat.body);
  EXPECT_EQ(repeat.body->ops.size(), 2u);
  ASSERT_EQ(repeat.body->arguments.size(), 3u);
  EXPECT_EQ(repeat.body->value(repeat.body->arguments[0]).name, "x");
  EXPECT_EQ(repeat.body->value(repeat.body->arguments[1]).name, "W");
  ASSERT_EQ(repeat.body->outputs.size(), 1u);
  EXPECT_EQ(repeat.body->outputs[0].first, "x");
  EXPECT_EQ(graph.value(repeat.results[0]).name, "blocks");
  EXPECT_EQ(graph.type(repeat.results[0]), (TensorType{{4, 6}, kF32}));
}

TEST(GraphBuilder, RepeatErrors) {
  GraphBuilder b;
  ValueId x = b.input("x", f32({4, 6}));
  ValueId w = b.parameter("W", f32({2, 6, 6}));
  auto identity = [](GraphBuilder&, const std::vector<ValueId>& args) {
    return std::vector<ValueId>{args[0]};
  };
  EXPECT_EQ(bad_input_message([&] { b.repeat("r", 3, {.carried = {x}, .sequence = {w}}, identity); }),
            "op 'r': sequence operand 'W' has shape [2,6,6] but its leading axis must equal the "
            "count 3");
  EXPECT_EQ(bad_input_message([&] { b.repeat("r", 0, {.carried = {x}}, identity); }),
            "op 'r': repeat count 0 must be >= 1");
  EXPECT_EQ(bad_input_message([&] { b.repeat("r", 2, {.sequence = {w}}, identity); }),
            "op 'r': repeat needs >= 1 carried operand, not 0 (1 sequence, 0 invariant)");
  EXPECT_EQ(bad_input_message([&] {
              b.repeat("r", 2, {.carried = {x}, .sequence = {w}},
                       [](GraphBuilder& body, const std::vector<ValueId>& args) {
                         return std::vector<ValueId>{body.cast("c", args[0], kF16)};
                       });
            }),
            "op 'r': repeat body output 0 'x' has type f16[4,6] but carried 'x' has type f32[4,6]");
  EXPECT_EQ(bad_input_message([&] {
              b.repeat("r", 2, {.carried = {x}, .sequence = {w}},
                       [](GraphBuilder& body, const std::vector<ValueId>& args) {
                         return std::vector<ValueId>{body.gemm("g", args[1], args[0], kF32)};
                       });
            }),
            "op 'r': op 'g': operand 'b' has shape [4,6] but operand 'a' needs K = 6");
  EXPECT_EQ(bad_input_message([&] {
              b.repeat("r", 2, {.carried = {x}}, [](GraphBuilder& body, const std::vector<ValueId>&) {
                body.parameter("p", f32({1}));
                return std::vector<ValueId>{};
              });
            }),
            "op 'r': parameter 'p': a repeat body has no parameters: pass values in as invariant operands");
  EXPECT_EQ(bad_input_message([&] {
              b.repeat("r", 2, {.carried = {x}}, [](GraphBuilder&, const std::vector<ValueId>&) {
                return std::vector<ValueId>{};
              });
            }),
            "op 'r': the body returns 0 values for 1 carried values");
}

TEST(GraphBuilder, RepeatWithSeveralCarriedValuesNamesResults) {
  GraphBuilder b;
  ValueId x = b.input("x", f32({2}));
  ValueId y = b.input("y", f32({2}));
  std::vector<ValueId> results =
      b.repeat("swap", 3, {.carried = {x, y}, .argument_names = {"p", "q"}},
               [](GraphBuilder&, const std::vector<ValueId>& args) {
                 return std::vector<ValueId>{args[0], args[0]};
               });
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(b.graph().value(results[0]).name, "swap#0");
  EXPECT_EQ(b.graph().value(results[1]).name, "swap#1");
  EXPECT_EQ(b.find("swap#1"), results[1]);
  b.output("out", results[1]);
  validate(b.finish());
}

}  // namespace
}  // namespace tilec::graph
