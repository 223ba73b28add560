#include "graph/reference.h"

#include "graph/builder.h"
#include "graph/workloads.h"
#include "numerics/fp16.h"
#include "numerics/fp8.h"
#include "numerics/reference_ops.h"
#include "support/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace tilec::graph {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;

constexpr StorageType kF32{ElementType::F32, 0};
constexpr StorageType kF16{ElementType::F16, 0};

Tensor tensor(Shape shape, std::vector<float> values, StorageType storage = kF32) {
  return Tensor::from_floats({std::move(shape), storage}, values);
}

std::vector<float> run_single(Graph graph, const TensorMap& tensors, const std::string& output = "y") {
  return run_reference(graph, tensors).outputs.at(output).to_floats();
}

TEST(Reference, GemmWithBroadcastBatchAndTransposes) {
  GraphBuilder b;
  ValueId a = b.input("a", {{2, 1, 2}, kF32});
  ValueId w = b.parameter("w", {{2, 2, 3}, kF32});
  ValueId wt = b.parameter("wt", {{3, 2}, kF32});
  b.output("y", b.gemm("y", a, w, kF32));
  b.output("z", b.gemm("z", a, wt, kF32, false, true));
  const TensorMap tensors{{"a", tensor({2, 1, 2}, {1, 2, 3, 4})},
                          {"w", tensor({2, 2, 3}, {1, 0, 2, 0, 1, 3, /**/ 1, 1, 1, 2, 2, 2})},
                          {"wt", tensor({3, 2}, {1, 0, 0, 1, 1, 1})}};
  ReferenceResult result = run_reference(b.finish(), tensors);
  // a[0] = [1 2] x w[0]; a[1] = [3 4] x w[1].
  EXPECT_THAT(result.outputs.at("y").to_floats(), ElementsAre(1, 2, 8, 11, 11, 11));
  EXPECT_EQ(result.outputs.at("y").type.shape, (Shape{2, 1, 3}));
  // z = a x wt^T: [1 2] -> [1, 2, 3]; [3 4] -> [3, 4, 7].
  EXPECT_THAT(result.outputs.at("z").to_floats(), ElementsAre(1, 2, 3, 3, 4, 7));
}

TEST(Reference, TransposedAOperand) {
  GraphBuilder b;
  ValueId a = b.input("a", {{3, 2}, kF32});  // stored [K, M]
  ValueId w = b.parameter("w", {{3, 1}, kF32});
  b.output("y", b.gemm("y", a, w, kF32, true, false));
  // A = [[1 3 5], [2 4 6]] (M=2, K=3) x [1 1 1]^T.
  EXPECT_THAT(run_single(b.finish(), {{"a", tensor({3, 2}, {1, 2, 3, 4, 5, 6})},
                                     {"w", tensor({3, 1}, {1, 1, 1})}}),
              ElementsAre(9, 12));
}

TEST(Reference, CastsAndGemmResultsRound) {
  GraphBuilder b;
  ValueId x = b.input("x", {{3, 1}, kF32});
  ValueId third = b.parameter("third", {{1, 1}, kF32});
  b.output("h", b.cast("h", x, kF16));
  b.output("q", b.cast("q", x, {ElementType::F143, -4}));
  b.output("g", b.gemm("g", x, third, kF16));
  const float one_third = 1.0f / 3.0f;
  ReferenceResult result = run_reference(
      b.finish(), {{"x", tensor({3, 1}, {one_third, 0.3f, -100.0f})}, {"third", tensor({1, 1}, {one_third})}});
  EXPECT_THAT(result.outputs.at("h").to_floats(),
              ElementsAre(round_to_half(one_third), round_to_half(0.3f), -100.0f));
  // Scaled by 2^4: 5.33 lies between the F143 values 5 and 5.5, 4.8 between
  // 4.5 and 5; 1600 saturates at 240 (15 after scaling back).
  EXPECT_THAT(result.outputs.at("q").to_floats(), ElementsAre(0.34375f, 0.3125f, -15.0f));
  EXPECT_EQ(result.outputs.at("g").at(0), round_to_half(one_third * one_third));
  EXPECT_EQ(result.outputs.at("g").type.storage, kF16);
}

TEST(Reference, GeluAddLayerNormSoftmax) {
  GraphBuilder b;
  ValueId x = b.input("x", {{2, 4}, kF32});
  ValueId row = b.parameter("row", {{4}, kF32});
  ValueId column = b.parameter("column", {{2, 1}, kF32});
  ValueId ones = b.parameter("ones", {{4}, kF32});
  b.output("tanh", b.gelu("tanh", x, GeluApproximation::Tanh));
  b.output("erf", b.gelu("erf", x, GeluApproximation::Erf));
  b.output("sum", b.add("sum", x, row));
  b.output("outer", b.add("outer", column, row));
  b.output("ln", b.layernorm("ln", x, ones, row, 0.0f));
  b.output("sm", b.softmax("sm", x, -1));
  b.output("sm0", b.softmax("sm0", x, 0));
  const std::vector<float> xs{1, 2, 3, 4, 0, -1, 0.5f, 2};
  ReferenceResult result = run_reference(b.finish(), {{"x", tensor({2, 4}, xs)},
                                                      {"row", tensor({4}, {10, 20, 30, 40})},
                                                      {"column", tensor({2, 1}, {1, 2})},
                                                      {"ones", tensor({4}, {1, 1, 1, 1})}});
  EXPECT_THAT(result.outputs.at("tanh").to_floats()[0], FloatNear(0.841192f, 1e-5f));
  EXPECT_THAT(result.outputs.at("erf").to_floats()[0], FloatNear(0.841345f, 1e-5f));
  EXPECT_EQ(result.outputs.at("tanh").to_floats()[4], 0.0f);
  EXPECT_THAT(result.outputs.at("sum").to_floats(), ElementsAre(11, 22, 33, 44, 10, 19, 30.5f, 42));
  EXPECT_THAT(result.outputs.at("outer").to_floats(), ElementsAre(11, 21, 31, 41, 12, 22, 32, 42));
  // Row [1 2 3 4]: mean 2.5, variance 1.25.
  const float d = std::sqrt(1.25f);
  EXPECT_THAT(result.outputs.at("ln").to_floats().at(0), FloatNear(10 - 1.5f / d, 1e-5f));
  EXPECT_THAT(result.outputs.at("ln").to_floats().at(3), FloatNear(40 + 1.5f / d, 1e-5f));
  const std::vector<float> sm = result.outputs.at("sm").to_floats();
  const float total = std::exp(1.0f) + std::exp(2.0f) + std::exp(3.0f) + std::exp(4.0f);
  EXPECT_THAT(sm[3], FloatNear(std::exp(4.0f) / total, 1e-6f));
  EXPECT_THAT(sm[0] + sm[1] + sm[2] + sm[3], FloatNear(1.0f, 1e-6f));
  // Axis 0: each column [x0j, x1j] normalised; column 0 is [1, 0].
  const std::vector<float> sm0 = result.outputs.at("sm0").to_floats();
  EXPECT_THAT(sm0[0], FloatNear(std::exp(1.0f) / (std::exp(1.0f) + 1.0f), 1e-6f));
  EXPECT_THAT(sm0[4], FloatNear(1.0f / (std::exp(1.0f) + 1.0f), 1e-6f));
  EXPECT_THAT(sm0[3] + sm0[7], FloatNear(1.0f, 1e-6f));
}

TEST(Reference, AttentionByHand) {
  GraphBuilder b;
  ValueId q = b.input("q", {{1, 2}, kF32});
  ValueId k = b.input("k", {{2, 2}, kF32});
  ValueId v = b.input("v", {{2, 1}, kF32});
  b.output("y", b.attention("y", q, k, v));
  b.output("s", b.attention("s", q, k, v, 2.0f));
  // Scores q.k = [1, 3]; scale 1/sqrt(2); weights softmax; y = weights . [10, 20].
  ReferenceResult result = run_reference(
      b.finish(), {{"q", tensor({1, 2}, {1, 1})}, {"k", tensor({2, 2}, {1, 0, 1, 2})}, {"v", tensor({2, 1}, {10, 20})}});
  auto expected = [](float scale) {
    const float e1 = std::exp(1.0f * scale), e3 = std::exp(3.0f * scale);
    return (10 * e1 + 20 * e3) / (e1 + e3);
  };
  EXPECT_THAT(result.outputs.at("y").at(0), FloatNear(expected(1.0f / std::sqrt(2.0f)), 1e-4f));
  EXPECT_THAT(result.outputs.at("s").at(0), FloatNear(expected(2.0f), 1e-4f));
}

// Heads attend separately: head h of a 2-head attention is the one-head
// attention of columns [3 h, 3 h + 3) of q, k and v, bit for bit.
TEST(Reference, AttentionHeadsAreSeparateAttentions) {
  const std::int64_t s = 5, t = 7;
  auto values = [](std::int64_t rows, std::int64_t cols, float seed) {
    std::vector<float> v(static_cast<std::size_t>(rows * cols));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(seed * static_cast<float>(i + 1));
    return v;
  };
  auto columns = [](const std::vector<float>& m, std::int64_t cols, std::int64_t first, std::int64_t count) {
    std::vector<float> part;
    for (std::size_t r = 0; r < m.size() / static_cast<std::size_t>(cols); ++r)
      for (std::int64_t c = first; c < first + count; ++c) part.push_back(m[r * static_cast<std::size_t>(cols) + static_cast<std::size_t>(c)]);
    return part;
  };
  const std::vector<float> q = values(s, 6, 0.7f), k = values(t, 6, 1.3f), v = values(t, 6, 2.1f);
  GraphBuilder two;
  two.output("y", two.attention("y", two.input("q", {{s, 6}, kF32}), two.input("k", {{t, 6}, kF32}),
                                two.input("v", {{t, 6}, kF32}), 0.0f, std::nullopt, 2));
  const std::vector<float> both = run_reference(two.finish(), {{"q", tensor({s, 6}, q)}, {"k", tensor({t, 6}, k)},
                                                               {"v", tensor({t, 6}, v)}})
                                      .outputs.at("y")
                                      .to_floats();
  for (std::int64_t h = 0; h < 2; ++h) {
    GraphBuilder one;
    one.output("y", one.attention("y", one.input("q", {{s, 3}, kF32}), one.input("k", {{t, 3}, kF32}),
                                  one.input("v", {{t, 3}, kF32})));
    const std::vector<float> head =
        run_reference(one.finish(), {{"q", tensor({s, 3}, columns(q, 6, 3 * h, 3))},
                                     {"k", tensor({t, 3}, columns(k, 6, 3 * h, 3))},
                                     {"v", tensor({t, 3}, columns(v, 6, 3 * h, 3))}})
            .outputs.at("y")
            .to_floats();
    EXPECT_EQ(columns(both, 6, 3 * h, 3), head) << "head " << h;
  }
}

// x -> gelu(x W_i) + bias, i = 0, 1, 2.
ValueId block(GraphBuilder& g, ValueId in, ValueId w, ValueId bias, const std::string& suffix) {
  ValueId h = g.gemm("h" + suffix, in, w, kF32);
  return g.add("y" + suffix, g.gelu("g" + suffix, h), bias, kF16);
}

// The three blocks as one repeat over a stacked W [3, 3, 3]; with
// `w_read_outside`, a second output "w_sum" reads W too.
Graph three_blocks(StorageType w_storage = kF32, bool w_read_outside = false) {
  GraphBuilder b;
  ValueId x = b.input("x", {{2, 3}, kF16});
  ValueId w = b.parameter("W", {{3, 3, 3}, w_storage});
  ValueId bias = b.parameter("bias", {{3}, kF32});
  if (w_read_outside) b.output("w_sum", b.reduce(OpKind::ReduceSum, "w_sum", w, {0, 1, 2}, false, kF32));
  ValueId y = b.repeat("blocks", 3, {.carried = {x}, .sequence = {w}, .invariant = {bias}},
                       [&](GraphBuilder& body, const std::vector<ValueId>& args) {
                         return std::vector<ValueId>{block(body, args[0], args[1], args[2], "")};
                       })
                  .front();
  b.output("y", y);
  return b.finish();
}

// The same blocks written out, with parameters W0, W1, W2.
Graph three_blocks_written_out() {
  GraphBuilder b;
  ValueId y = b.input("x", {{2, 3}, kF16});
  std::vector<ValueId> ws;
  for (int i = 0; i < 3; ++i) ws.push_back(b.parameter(fmt::format("W{}", i), {{3, 3}, kF32}));
  ValueId bias = b.parameter("bias", {{3}, kF32});
  for (int i = 0; i < 3; ++i) y = block(b, y, ws[static_cast<std::size_t>(i)], bias, std::to_string(i));
  b.output("y", y);
  return b.finish();
}

TEST(Reference, RepeatRunsItsBodyPerIterationWithSlices) {
  const std::vector<float> xs{0.5f, -1.0f, 2.0f, 0.25f, 1.5f, -0.75f};
  std::vector<float> ws(27);
  for (std::size_t i = 0; i < ws.size(); ++i) ws[i] = static_cast<float>((i * 7) % 11) / 8.0f - 0.6f;
  const std::vector<float> biases{0.1f, -0.2f, 0.3f};
  const TensorMap tensors{{"x", tensor({2, 3}, xs, kF16)},
                          {"W", tensor({3, 3, 3}, ws)},
                          {"bias", tensor({3}, biases)}};
  const ReferenceResult repeated = run_reference(three_blocks(), tensors, true);

  // The same three blocks computed step by step with the kernels directly.
  std::vector<float> state = tensors.at("x").to_floats();
  for (int i = 0; i < 3; ++i) {
    std::vector<float> h(6);
    reference::gemm(state, std::span<const float>(ws).subspan(static_cast<std::size_t>(9 * i), 9), h, 2, 3, 3);
    for (std::size_t j = 0; j < 6; ++j)
      state[j] = round_to_half(reference::gelu_tanh(h[j]) + biases[j % 3]);
    const std::vector<float> kept = repeated.intermediates.at(fmt::format("blocks[{}].y", i)).to_floats();
    EXPECT_EQ(kept, state) << "iteration " << i;
  }
  EXPECT_EQ(repeated.outputs.at("y").to_floats(), state);
  EXPECT_EQ(repeated.intermediates.at("blocks").to_floats(), state);
  EXPECT_FALSE(repeated.intermediates.contains("blocks[3].y"));
}

// Values of a stacked W [3, 3, 3] whose three slices differ.
std::vector<float> stacked_values() {
  std::vector<float> stacked(27);
  for (std::size_t i = 0; i < stacked.size(); ++i)
    stacked[i] = static_cast<float>((i * 5) % 13) / 10.0f - 0.55f;
  return stacked;
}

// The same values with the three slices in reverse order.
std::vector<float> slices_reversed(const std::vector<float>& stacked) {
  std::vector<float> reversed;
  for (int i = 2; i >= 0; --i)
    reversed.insert(reversed.end(), stacked.begin() + 9 * i, stacked.begin() + 9 * i + 9);
  return reversed;
}

TEST(Reference, RepeatEqualsTheOpsWrittenOut) {
  const std::vector<float> stacked = stacked_values();
  const Tensor x = tensor({2, 3}, {0.5f, -1.0f, 2.0f, 0.25f, 1.5f, -0.75f}, kF16);
  const Tensor bias = tensor({3}, {0.1f, -0.2f, 0.3f});
  TensorMap written{{"x", x}, {"bias", bias}};
  for (std::size_t i = 0; i < 3; ++i)
    written.emplace(fmt::format("W{}", i),
                    tensor({3, 3}, std::vector<float>(stacked.begin() + static_cast<std::ptrdiff_t>(9 * i),
                                                      stacked.begin() + static_cast<std::ptrdiff_t>(9 * i + 9))));
  const std::vector<float> by_repeat =
      run_single(three_blocks(), {{"x", x}, {"W", tensor({3, 3, 3}, stacked)}, {"bias", bias}});
  EXPECT_EQ(run_single(three_blocks_written_out(), written), by_repeat);
  // Each iteration used its own slice: the order of the slices matters.
  EXPECT_NE(run_single(three_blocks(), {{"x", x}, {"W", tensor({3, 3, 3}, slices_reversed(stacked))}, {"bias", bias}}),
            by_repeat);
}

// A range decodes as those elements of the whole tensor, in each storage
// type; a range past the end is an internal error, not a wild read.
TEST(Tensor, DecodesAnyRangeOfItsElements) {
  std::vector<float> values(10);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.75f - 3.0f;
  for (const StorageType storage : {kF32, kF16, StorageType{ElementType::F143, 2}, StorageType{ElementType::F152, -1}}) {
    const Tensor whole = tensor({2, 5}, values, storage);
    const std::vector<float> all = whole.to_floats();
    for (std::int64_t first : {0, 3, 9, 10})
      for (const std::int64_t count : {std::int64_t{0}, std::min<std::int64_t>(1, 10 - first), 10 - first})
        EXPECT_EQ(whole.to_floats(first, count),
                  std::vector<float>(all.begin() + first, all.begin() + first + count))
            << element_type_name(storage.element) << " [" << first << ", +" << count << ")";
    EXPECT_THROW((void)whole.to_floats(8, 3), Error);
    EXPECT_THROW((void)whole.to_floats(-1, 1), Error);
  }
}

// A stacked parameter that only the repeat reads is decoded one slice at a
// time from its stored bits; one read whole elsewhere is decoded whole. In
// every storage type both give every iteration the same slice.
TEST(Reference, StackedParametersDecodedBySliceOrWholeAgree) {
  const std::vector<float> stacked = stacked_values();
  const Tensor x = tensor({2, 3}, {0.5f, -1.0f, 2.0f, 0.25f, 1.5f, -0.75f}, kF16);
  const Tensor bias = tensor({3}, {0.1f, -0.2f, 0.3f});
  for (const StorageType storage : {kF32, kF16, StorageType{ElementType::F143, -3}, StorageType{ElementType::F152, 1}}) {
    const TensorMap tensors{{"x", x}, {"W", tensor({3, 3, 3}, stacked, storage)}, {"bias", bias}};
    const std::vector<float> by_slice = run_single(three_blocks(storage), tensors);
    const std::vector<float> whole = run_single(three_blocks(storage, true), tensors);
    EXPECT_EQ(by_slice, whole) << element_type_name(storage.element);
    EXPECT_EQ(run_single(three_blocks(storage, true), tensors, "w_sum").size(), 1u);
    // The slices differ, so a wrong one would show.
    const Tensor reversed = tensor({3, 3, 3}, slices_reversed(stacked), storage);
    EXPECT_NE(run_single(three_blocks(storage), {{"x", x}, {"W", reversed}, {"bias", bias}}), by_slice);
  }
}

// Every output element of patchify, found from the definition: patch
// (py, px) is row py*(W/p)+px, column (i*p + j)*C + c is pixel (py*p+i,
// px*p+j, c); the 8th row and 10th and 11th columns hold no whole patch.
TEST(Reference, PatchifyPlacesEveryPixel) {
  const std::int64_t batch = 2, height = 8, width = 11, channels = 2, p = 3;
  std::vector<float> pixels(static_cast<std::size_t>(batch * height * width * channels));
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(i);
  GraphBuilder b;
  ValueId image = b.input("image", {{batch, height, width, channels}, kF32});
  b.output("y", b.patchify("y", image, p, kF16));
  const ReferenceResult result = run_reference(b.finish(), {{"image", tensor({batch, height, width, channels}, pixels)}});
  const Tensor& y = result.outputs.at("y");
  ASSERT_EQ(y.type, (TensorType{{batch, 6, 18}, kF16}));
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t py = 0; py < height / p; ++py)
      for (std::int64_t px = 0; px < width / p; ++px)
        for (std::int64_t i = 0; i < p; ++i)
          for (std::int64_t j = 0; j < p; ++j)
            for (std::int64_t c = 0; c < channels; ++c) {
              const std::int64_t row = py * (width / p) + px, column = (i * p + j) * channels + c;
              const float pixel = pixels[static_cast<std::size_t>(((n * height + py * p + i) * width + px * p + j) * channels + c)];
              ASSERT_EQ(y.at((n * 6 + row) * 18 + column), pixel) << n << " " << row << " " << column;
            }
}

TEST(Reference, ReshapeKeepsTheElementsInOrder) {
  GraphBuilder b;
  ValueId x = b.input("x", {{2, 1, 3}, kF32});
  b.output("y", b.reshape("y", x, {-1, 3}));
  b.output("h", b.reshape("h", x, {6}, StorageType{ElementType::F143, -2}));
  const ReferenceResult result = run_reference(b.finish(), {{"x", tensor({2, 1, 3}, {1, 2, 3, 4.25f, 5, 600})}});
  EXPECT_EQ(result.outputs.at("y").type.shape, (Shape{2, 3}));
  EXPECT_THAT(result.outputs.at("y").to_floats(), ElementsAre(1, 2, 3, 4.25f, 5, 600));
  // Rounded like a cast to F143 at scale -2: 4.25 -> 4, 600 saturates at 60.
  EXPECT_THAT(result.outputs.at("h").to_floats(), ElementsAre(1, 2, 3, 4, 5, 60));
}

TEST(Reference, BinaryAndUnaryElementwiseOps) {
  GraphBuilder b;
  ValueId x = b.input("x", {{2, 2}, kF32});
  ValueId c = b.input("c", {{2}, kF32});
  b.output("sub", b.binary(OpKind::Sub, "sub", x, c));
  b.output("mul", b.binary(OpKind::Mul, "mul", x, c));
  b.output("div", b.binary(OpKind::Div, "div", c, x));
  b.output("pow", b.binary(OpKind::Pow, "pow", x, c));
  b.output("sqrt", b.unary(OpKind::Sqrt, "sqrt", x));
  b.output("erf", b.unary(OpKind::Erf, "erf", x));
  b.output("tanh", b.unary(OpKind::Tanh, "tanh", x));
  b.output("relu", b.unary(OpKind::Relu, "relu", b.binary(OpKind::Sub, "shifted", x, c)));
  b.output("sigmoid", b.unary(OpKind::Sigmoid, "sigmoid", x));
  b.output("exp", b.unary(OpKind::Exp, "exp", x, kF16));
  const ReferenceResult r =
      run_reference(b.finish(), {{"x", tensor({2, 2}, {1, 4, 9, 0.5f})}, {"c", tensor({2}, {2, 3})}});
  EXPECT_THAT(r.outputs.at("sub").to_floats(), ElementsAre(-1, 1, 7, -2.5f));
  EXPECT_THAT(r.outputs.at("mul").to_floats(), ElementsAre(2, 12, 18, 1.5f));
  EXPECT_THAT(r.outputs.at("div").to_floats(), ElementsAre(2, 0.75f, 2.0f / 9.0f, 6));
  EXPECT_THAT(r.outputs.at("pow").to_floats(), ElementsAre(1, 64, 81, 0.125f));
  EXPECT_THAT(r.outputs.at("sqrt").to_floats(), ElementsAre(1, 2, 3, std::sqrt(0.5f)));
  EXPECT_THAT(r.outputs.at("erf").to_floats(), ElementsAre(std::erf(1.0f), std::erf(4.0f), 1.0f, std::erf(0.5f)));
  EXPECT_THAT(r.outputs.at("tanh").to_floats(), ElementsAre(std::tanh(1.0f), std::tanh(4.0f), std::tanh(9.0f), std::tanh(0.5f)));
  EXPECT_THAT(r.outputs.at("relu").to_floats(), ElementsAre(0, 1, 7, 0));
  EXPECT_THAT(r.outputs.at("sigmoid").to_floats(),
              ElementsAre(FloatNear(0.7310586f, 1e-7f), FloatNear(0.9820138f, 1e-7f), FloatNear(0.9998766f, 1e-7f),
                          FloatNear(0.6224593f, 1e-7f)));
  // Rounded once to the result's f16.
  EXPECT_THAT(r.outputs.at("exp").to_floats(),
              ElementsAre(round_to_half(std::exp(1.0f)), round_to_half(std::exp(4.0f)),
                          round_to_half(std::exp(9.0f)), round_to_half(std::exp(0.5f))));
}

TEST(Reference, ReductionsOverChosenAxes) {
  GraphBuilder b;
  ValueId x = b.input("x", {{2, 3}, kF32});
  b.output("mean_rows", b.reduce(OpKind::ReduceMean, "mean_rows", x, {1}));
  b.output("sum_columns", b.reduce(OpKind::ReduceSum, "sum_columns", x, {0}, false));
  b.output("max_all", b.reduce(OpKind::ReduceMax, "max_all", x, {0, 1}, false));
  const ReferenceResult r = run_reference(b.finish(), {{"x", tensor({2, 3}, {1, 2, 6, -4, -5, -6})}});
  EXPECT_EQ(r.outputs.at("mean_rows").type.shape, (Shape{2, 1}));
  EXPECT_THAT(r.outputs.at("mean_rows").to_floats(), ElementsAre(3, -5));
  EXPECT_THAT(r.outputs.at("sum_columns").to_floats(), ElementsAre(-3, -3, 0));
  EXPECT_EQ(r.outputs.at("max_all").type.shape, (Shape{}));
  EXPECT_THAT(r.outputs.at("max_all").to_floats(), ElementsAre(6));
}

TEST(Reference, TransposeConcatSliceAndGatherMoveElements) {
  GraphBuilder b;
  ValueId x = b.input("x", {{2, 3}, kF32});
  ValueId y = b.input("y", {{2, 1}, kF32});
  b.output("t", b.transpose("t", x, {1, 0}));
  b.output("c", b.concat("c", {x, y}, -1));
  b.output("rows", b.concat("rows", {x, x}, 0));
  b.output("s", b.slice("s", x, {1, 2}, {-1, -1}, {-1, -2}));
  b.output("g", b.gather("g", x, 1, {2, 2, 0}, {3}));
  b.output("one", b.gather("one", x, 0, {1}, {}));
  const ReferenceResult r =
      run_reference(b.finish(), {{"x", tensor({2, 3}, {0, 1, 2, 3, 4, 5})}, {"y", tensor({2, 1}, {8, 9})}});
  EXPECT_EQ(r.outputs.at("t").type.shape, (Shape{3, 2}));
  EXPECT_THAT(r.outputs.at("t").to_floats(), ElementsAre(0, 3, 1, 4, 2, 5));
  EXPECT_THAT(r.outputs.at("c").to_floats(), ElementsAre(0, 1, 2, 8, 3, 4, 5, 9));
  EXPECT_THAT(r.outputs.at("rows").to_floats(), ElementsAre(0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5));
  // Rows 1 then 0, columns 2 then 0.
  EXPECT_EQ(r.outputs.at("s").type.shape, (Shape{2, 2}));
  EXPECT_THAT(r.outputs.at("s").to_floats(), ElementsAre(5, 3, 2, 0));
  EXPECT_THAT(r.outputs.at("g").to_floats(), ElementsAre(2, 2, 0, 5, 5, 3));
  EXPECT_EQ(r.outputs.at("one").type.shape, (Shape{3}));
  EXPECT_THAT(r.outputs.at("one").to_floats(), ElementsAre(3, 4, 5));
}

// The ViT tower's two broadcasts: a [T, W] position embedding added to every
// batch item, and the head's one probe q [1, 1, D] attending over each batch
// item's k, v [b, T, D]: the same as the batch items' attentions done one by one.
TEST(Reference, PositionAddAndBroadcastQueryAttention) {
  const std::int64_t batch = 3, tokens = 5, width = 4;
  auto values = [](std::int64_t count, float step) {
    std::vector<float> out(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::sin(step * static_cast<float>(i + 1));
    return out;
  };
  const std::vector<float> xs = values(batch * tokens * width, 0.7f), position = values(tokens * width, 1.3f),
                           probe = values(width, 2.1f);
  GraphBuilder b;
  ValueId x = b.input("x", {{batch, tokens, width}, kF32});
  ValueId pos = b.parameter("position", {{tokens, width}, kF32});
  ValueId q = b.parameter("probe", {{1, 1, width}, kF32});
  ValueId embedded = b.add("embedded", x, pos);
  b.output("embedded", embedded);
  b.output("pooled", b.attention("pooled", q, embedded, embedded, 0.0f, std::nullopt, 2));
  const ReferenceResult result = run_reference(b.finish(), {{"x", tensor({batch, tokens, width}, xs)},
                                                           {"position", tensor({tokens, width}, position)},
                                                           {"probe", tensor({1, 1, width}, probe)}});
  const std::vector<float> sums = result.outputs.at("embedded").to_floats();
  for (std::size_t i = 0; i < sums.size(); ++i)
    EXPECT_EQ(sums[i], xs[i] + position[i % static_cast<std::size_t>(tokens * width)]) << i;
  const Tensor& pooled = result.outputs.at("pooled");
  ASSERT_EQ(pooled.type.shape, (Shape{batch, 1, width}));
  for (std::int64_t n = 0; n < batch; ++n) {
    GraphBuilder one;
    ValueId item = one.input("item", {{tokens, width}, kF32});
    ValueId query = one.input("query", {{1, width}, kF32});
    one.output("y", one.attention("y", query, item, item, 0.0f, std::nullopt, 2));
    const auto first = sums.begin() + n * tokens * width;
    const std::vector<float> alone =
        run_single(one.finish(), {{"item", tensor({tokens, width}, std::vector<float>(first, first + tokens * width))},
                                  {"query", tensor({1, width}, probe)}});
    for (std::int64_t e = 0; e < width; ++e) EXPECT_EQ(pooled.at(n * width + e), alone[static_cast<std::size_t>(e)]);
  }
}

// The exact reference rounds nothing: a cast passes its value through, and
// each result is the FP64 value of the formula.
TEST(ExactReference, RoundsNothing) {
  GraphBuilder b;
  ValueId x = b.input("x", {{1, 3}, kF32});
  ValueId w = b.parameter("w", {{3, 1}, kF32});
  ValueId sum = b.gemm("sum", x, w, kF16);
  b.output("narrow", b.cast("narrow", sum, {ElementType::F143, -4}));
  b.output("act", b.gelu("act", sum, GeluApproximation::Erf, kF16));
  const TensorMap tensors{{"x", tensor({1, 3}, {0.1f, 0.2f, 0.3f})}, {"w", tensor({3, 1}, {1, 1, 1})}};
  const Graph graph = b.finish();
  const ExactOutputs exact = run_exact_reference(graph, tensors);
  const double total = (double{0.1f} + double{0.2f}) + double{0.3f};
  EXPECT_EQ(exact.at("narrow"), std::vector<double>{total});
  EXPECT_EQ(exact.at("act"), std::vector<double>{0.5 * total * (1.0 + std::erf(total * 0.7071067811865476))});
  // The rounded reference stores each result in its type.
  const ReferenceResult rounded = run_reference(graph, tensors);
  EXPECT_EQ(rounded.outputs.at("narrow").at(0), round_to_storage(round_to_half(0.6f), {ElementType::F143, -4}));
  EXPECT_NE(static_cast<double>(rounded.outputs.at("narrow").at(0)), total);
}

// Every op and repeats run in FP64 too: on FP32 graphs the two references
// differ only by FP32's rounding.
TEST(ExactReference, AgreesWithTheReferenceOnFp32Graphs) {
  GraphBuilder b;
  ValueId x = b.input("x", {{2, 4, 8}, kF32});
  ValueId gamma = b.parameter("gamma", {{8}, kF32});
  ValueId beta = b.parameter("beta", {{8}, kF32});
  ValueId w = b.parameter("W", {{2, 8, 8}, kF32});
  ValueId h = b.layernorm("ln", x, gamma, beta, 1e-5f, kF32);
  h = b.softmax("sm", h, -1, kF32);
  h = b.attention("att", h, h, h, 0.0f, kF32, 2);
  h = b.repeat("blocks", 2, {.carried = {h}, .sequence = {w}},
               [&](GraphBuilder& body, const std::vector<ValueId>& args) {
                 return std::vector<ValueId>{body.gelu("g", body.gemm("mm", args[0], args[1], kF32))};
               })
          .front();
  b.output("y", h);
  const Graph graph = b.finish();
  const TensorMap data = generate_data(graph, 3);
  const std::vector<float> rounded = run_reference(graph, data).outputs.at("y").to_floats();
  const std::vector<double> exact = run_exact_reference(graph, data).at("y");
  ASSERT_EQ(exact.size(), rounded.size());
  double largest = 0;
  for (std::size_t i = 0; i < exact.size(); ++i) largest = std::max(largest, std::fabs(exact[i] - rounded[i]));
  EXPECT_GT(largest, 0.0);
  EXPECT_LT(largest, 1e-5);
}

TEST(Reference, MissingOrMistypedTensorsAreBadInput) {
  Graph graph = three_blocks();
  const TensorMap tensors{{"x", tensor({2, 3}, std::vector<float>(6, 1.0f), kF16)},
                          {"W", tensor({3, 3, 3}, std::vector<float>(27, 1.0f))}};
  try {
    run_reference(graph, tensors);
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput);
    EXPECT_STREQ(error.what(), "parameter 'bias': no tensor given for it");
  }
  TensorMap wrong = tensors;
  wrong.emplace("bias", tensor({3}, {1, 2, 3}, kF16));
  try {
    run_reference(graph, wrong);
    FAIL();
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "parameter 'bias': the graph needs f32[3], the tensor given is f16[3]");
  }
}

TEST(Reference, SmallMlpWorkloadMatchesAHandLoop) {
  const Graph graph = build_workload("mlp", {.batch = 2, .bias = true});
  const TensorMap data = generate_data(graph, 5);
  const std::vector<float> y = run_reference(graph, data).outputs.at("y").to_floats();
  const std::vector<float> x = data.at("x").to_floats(), w1 = data.at("W1").to_floats(),
                           w2 = data.at("W2").to_floats(), b1 = data.at("b1").to_floats(),
                           b2 = data.at("b2").to_floats();
  const StorageType hidden_fp8{ElementType::F143, kHiddenFp8Scale};
  const std::size_t rows = 16, width = 16, hidden = 32;
  std::vector<float> h(rows * hidden), expected(rows * width);
  reference::gemm(x, w1, h, 16, 32, 16);
  for (std::size_t i = 0; i < h.size(); ++i) {
    const float biased = round_to_half(round_to_half(h[i]) + b1[i % hidden]);
    h[i] = round_to_storage(round_to_half(reference::gelu_tanh(biased)), hidden_fp8);
  }
  reference::gemm(h, w2, expected, 16, 16, 32);
  for (std::size_t i = 0; i < expected.size(); ++i)
    expected[i] = round_to_half(round_to_half(expected[i]) + b2[i % width]);
  EXPECT_EQ(y, expected);
}

}  // namespace
}  // namespace tilec::graph

namespace tilec::graph {
namespace {

// The plan-order reference sums each gemm the order names as the order
// says, inside a repeat body too (every iteration), and the others in one
// part; an order naming an op the graph has not is refused.
TEST(Reference, PlanOrderFollowsTheSummationOrder) {
  const std::vector<float> xs{0.5f, -1.0f, 2.0f, 0.25f, 1.5f, -0.75f};
  std::vector<float> ws(27);
  for (std::size_t i = 0; i < ws.size(); ++i) ws[i] = static_cast<float>((i * 5) % 13) / 7.0f - 0.9f;
  const TensorMap tensors{{"x", tensor({2, 3}, xs, kF16)},
                          {"W", tensor({3, 3, 3}, ws)},
                          {"bias", tensor({3}, {0.1f, -0.2f, 0.3f})}};
  SummationOrder order;
  order.gemms["blocks.h"] = reference::KSplit{{0, 1, 3}, true, {{0, 2, {1, 0}}}};
  const ReferenceResult planned = run_reference(three_blocks(), tensors, order, true);

  std::vector<float> state = tensors.at("x").to_floats();
  for (int i = 0; i < 3; ++i) {
    std::vector<float> h(6);
    reference::gemm(state, std::span<const float>(ws).subspan(static_cast<std::size_t>(9 * i), 9), h, 2, 3, 3, false,
                    false, order.gemms.at("blocks.h"));
    EXPECT_EQ(planned.intermediates.at(fmt::format("blocks[{}].h", i)).to_floats(), h) << "iteration " << i;
    for (std::size_t j = 0; j < 6; ++j) state[j] = round_to_half(reference::gelu_tanh(h[j]) + (j % 3 == 0 ? 0.1f : j % 3 == 1 ? -0.2f : 0.3f));
  }
  EXPECT_EQ(planned.outputs.at("y").to_floats(), state);
  EXPECT_EQ(differing_elements(planned.outputs, planned.outputs), 0);

  SummationOrder stale;
  stale.gemms["h"] = reference::KSplit{{0, 3}, false, {}};
  EXPECT_THAT([&] { run_reference(three_blocks(), tensors, stale); },
              ::testing::ThrowsMessage<Error>(::testing::HasSubstr(
                  "summation order of op 'h': the graph has no gemm of that name")));
  SummationOrder rows;
  rows.rows["blocks.h"] = reference::RowSplit{};
  EXPECT_THAT([&] { run_reference(three_blocks(), tensors, rows); },
              ::testing::ThrowsMessage<Error>(::testing::HasSubstr("the graph has no layernorm or softmax of that name")));
}

// Bits compared as stored: NaN equals any NaN, +0 and -0 differ.
TEST(Reference, DifferingElementsCompareStoredBits) {
  const TensorMap reference{{"y", tensor({4}, {1.0f, NAN, 0.0f, 2.0f}, kF16)}};
  EXPECT_EQ(differing_elements({{"y", tensor({4}, {1.0f, -NAN, 0.0f, 2.0f}, kF16)}}, reference), 0);
  EXPECT_EQ(differing_elements({{"y", tensor({4}, {1.0f, NAN, -0.0f, 2.001f}, kF16)}}, reference), 2);
  EXPECT_THROW(differing_elements({{"y", tensor({4}, {1.0f, NAN, 0.0f, 2.0f})}}, reference), Error);
  EXPECT_THROW(differing_elements({}, reference), Error);
}

}  // namespace
}  // namespace tilec::graph
