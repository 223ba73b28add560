#include "graph/workloads.h"

#include "graph/cost.h"
#include "graph/random.h"
#include "graph/validate.h"
#include "numerics/fp8.h"
#include "support/error.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tilec::graph {
namespace {

constexpr StorageType kF16{ElementType::F16, 0};
constexpr StorageType kF32{ElementType::F32, 0};

const Op& op_named(const Graph& graph, const std::string& name) {
  for (const Op& op : graph.ops)
    if (op.name == name) return op;
  throw std::logic_error("no op " + name);
}

const TensorType& type_of(const Graph& graph, const std::string& op) {
  return graph.type(op_named(graph, op).results.at(0));
}

std::vector<std::string> op_names(const Graph& graph) {
  std::vector<std::string> names;
  for (const Op& op : graph.ops) names.push_back(op.name);
  return names;
}

std::string bad_input(const std::function<void()>& build) {
  try {
    build();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput);
    return error.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Workloads, SiglipMlpFp8IsTheReferenceGraph) {
  const Graph graph = build_workload("siglip-mlp", {.fp8_scale = -6});
  EXPECT_EQ(op_names(graph), (std::vector<std::string>{"x", "W1", "W2", "gemm1", "gelu", "gelu_f143", "gemm2"}));
  const StorageType f143{ElementType::F143, -6};
  EXPECT_EQ(type_of(graph, "x"), (TensorType{{1, 729, 1152}, f143}));
  EXPECT_EQ(type_of(graph, "W1"), (TensorType{{1152, 4304}, f143}));
  EXPECT_EQ(type_of(graph, "W2"), (TensorType{{4304, 1152}, f143}));
  EXPECT_EQ(type_of(graph, "gemm1"), (TensorType{{1, 729, 4304}, kF16}));
  EXPECT_EQ(op_named(graph, "gelu").approximation, GeluApproximation::Tanh);
  EXPECT_EQ(type_of(graph, "gelu"), (TensorType{{1, 729, 4304}, kF16}));
  EXPECT_EQ(type_of(graph, "gelu_f143"),
            (TensorType{{1, 729, 4304}, {ElementType::F143, kHiddenFp8Scale}}));
  ASSERT_EQ(graph.outputs.size(), 1u);
  EXPECT_EQ(graph.outputs[0].first, "y");
  EXPECT_EQ(graph.type(graph.outputs[0].second), (TensorType{{1, 729, 1152}, kF16}));
  // What the reference report calls inputBytes; its weightBytes (9,934,848)
  // counts the bytes the device holds, replicas included.
  EXPECT_EQ(input_bytes(graph), 839'808);
  EXPECT_EQ(parameter_bytes(graph), 9'916'416);
  EXPECT_EQ(graph_macs(graph), 7'229'067'264);
}

TEST(Workloads, BatchPrecisionAndBias) {
  const Graph fp16 = build_workload("siglip-mlp", {.batch = 4, .precision = Precision::Fp16, .bias = true});
  EXPECT_EQ(op_names(fp16), (std::vector<std::string>{"x", "W1", "b1", "W2", "b2", "gemm1", "bias1",
                                                      "gelu", "gemm2", "bias2"}));
  EXPECT_EQ(type_of(fp16, "x"), (TensorType{{4, 729, 1152}, kF16}));
  EXPECT_EQ(type_of(fp16, "b1"), (TensorType{{4304}, kF16}));
  EXPECT_EQ(type_of(fp16, "b2"), (TensorType{{1152}, kF16}));
  EXPECT_EQ(fp16.value(fp16.outputs[0].second).name, "bias2");
  EXPECT_EQ(input_bytes(fp16), 4 * 729 * 1152 * 2);
  EXPECT_EQ(graph_macs(fp16), 4 * 7'229'067'264);

  const Graph fp32 = build_workload("mlp", {.precision = Precision::Fp32, .bias = true});
  EXPECT_EQ(type_of(fp32, "x"), (TensorType{{1, 8, 16}, kF32}));
  EXPECT_EQ(type_of(fp32, "b1"), (TensorType{{32}, kF32}));
  EXPECT_EQ(type_of(fp32, "gemm2"), (TensorType{{1, 8, 16}, kF32}));

  const Graph fp8 = build_workload("mlp", {.fp8_scale = -5, .bias = true, .tokens = 3});
  EXPECT_EQ(type_of(fp8, "b1"), (TensorType{{32}, kF16}));
  EXPECT_EQ(type_of(fp8, "x"), (TensorType{{1, 3, 16}, {ElementType::F143, -5}}));
  EXPECT_EQ(type_of(fp8, "bias2"), (TensorType{{1, 3, 16}, kF16}));
}

TEST(Workloads, BlocksBecomeOneRepeat) {
  const Graph graph = build_workload("mlp", {.blocks = 3, .fp8_scale = -6, .bias = true});
  validate(graph);
  EXPECT_EQ(op_names(graph), (std::vector<std::string>{"x", "W1", "b1", "W2", "b2", "x_f16", "blocks"}));
  const StorageType f143{ElementType::F143, -6};
  EXPECT_EQ(type_of(graph, "W1"), (TensorType{{3, 16, 32}, f143}));
  EXPECT_EQ(type_of(graph, "b2"), (TensorType{{3, 16}, kF16}));
  const Op& repeat = op_named(graph, "blocks");
  EXPECT_EQ(repeat.count, 3);
  EXPECT_EQ(repeat.signature.carried, 1);
  EXPECT_EQ(repeat.signature.sequence, 4);
  EXPECT_EQ(op_names(*repeat.body), (std::vector<std::string>{"block_x", "gemm1", "bias1", "gelu", "gelu_f143",
                                                              "gemm2", "bias2"}));
  // The carried value is the block's FP16 result; each block casts it to F143.
  EXPECT_EQ(graph.type(repeat.results[0]), (TensorType{{1, 8, 16}, kF16}));
  EXPECT_EQ(type_of(*repeat.body, "block_x"), (TensorType{{1, 8, 16}, f143}));
  EXPECT_EQ(graph.type(graph.outputs[0].second), (TensorType{{1, 8, 16}, kF16}));
  EXPECT_EQ(graph_macs(graph), 3 * 2 * 8 * 16 * 32);

  const Graph fp32 = build_workload("mlp", {.blocks = 2, .precision = Precision::Fp32});
  EXPECT_EQ(op_names(fp32), (std::vector<std::string>{"x", "W1", "W2", "blocks"}));
  EXPECT_EQ(op_names(*op_named(fp32, "blocks").body), (std::vector<std::string>{"gemm1", "gelu", "gemm2"}));
}

TEST(Workloads, AutomaticScaleIsTheSmallestThatFits) {
  const std::vector<float> one{0.5f, -1.0f};
  EXPECT_EQ(automatic_fp8_scale(one), -7);  // 1 * 2^7 = 128 <= 240 < 256
  EXPECT_EQ(automatic_fp8_scale(std::vector<float>{1.875f}), -7);  // exactly 240
  EXPECT_EQ(automatic_fp8_scale(std::vector<float>{1.876f}), -6);
  EXPECT_EQ(automatic_fp8_scale(std::vector<float>{240.0f}), 0);
  EXPECT_EQ(automatic_fp8_scale(std::vector<float>{-241.0f}), 1);
  EXPECT_EQ(automatic_fp8_scale(std::vector<float>{0.0f}), 0);
  EXPECT_EQ(automatic_fp8_scale(std::vector<float>{1e-30f}), -64);
  EXPECT_EQ(automatic_fp8_scale(std::vector<float>{3000.0f}, ElementType::F152), -4);
}

TEST(Workloads, AutomaticScalesFitTheGeneratedData) {
  const MlpOptions options{.tokens = 64, .width = 128, .hidden = 256, .seed = 7};
  const Graph graph = build_workload("mlp", options);
  const TensorMap data = generate_data(graph, 7);
  for (const std::string name : {"x", "W1", "W2"}) {
    const TensorType& type = type_of(graph, name);
    const std::vector<float> raw = gaussian(7, name, static_cast<std::size_t>(type.elements()),
                                            name == "x" ? kInputSigma : kParameterSigma);
    float largest = 0;
    for (float value : raw) largest = std::max(largest, std::fabs(value));
    const int scale = type.storage.scale;
    EXPECT_LE(std::ldexp(largest, -scale), 240.0f) << name;
    EXPECT_GT(std::ldexp(largest, -(scale - 1)), 240.0f) << name;
    EXPECT_EQ(data.at(name).type, type);
  }
}

TEST(Workloads, DataIsSeededGaussianRoundedToStorage) {
  const Graph graph = build_workload("mlp", {.precision = Precision::Fp16, .bias = true, .tokens = 256});
  const TensorMap data = generate_data(graph, 3);
  ASSERT_EQ(data.size(), 5u);
  for (const auto& [name, tensor] : data) EXPECT_EQ(tensor.type, type_of(graph, name)) << name;
  const std::vector<float> x = data.at("x").to_floats();
  const std::vector<float> raw = gaussian(3, "x", x.size(), kInputSigma);
  double squares = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i], round_to_storage(raw[i], kF16));
    squares += static_cast<double>(x[i]) * x[i];
  }
  EXPECT_NEAR(std::sqrt(squares / static_cast<double>(x.size())), 0.25, 0.01);
  const std::vector<float> w = data.at("W1").to_floats();
  double w_squares = 0;
  for (float value : w) w_squares += static_cast<double>(value) * value;
  EXPECT_NEAR(std::sqrt(w_squares / static_cast<double>(w.size())), 0.0625, 0.005);

  EXPECT_EQ(generate_data(graph, 3).at("W2").bytes, data.at("W2").bytes);
  EXPECT_NE(generate_data(graph, 4).at("W2").bytes, data.at("W2").bytes);
}

TEST(Workloads, OptionErrors) {
  EXPECT_EQ(bad_input([] { build_workload("siglip-mlp", {.batch = 0}); }), "workload: batch 0 must be >= 1");
  EXPECT_EQ(bad_input([] { build_workload("siglip-mlp", {.blocks = 0}); }), "workload: blocks 0 must be >= 1");
  EXPECT_EQ(bad_input([] { build_workload("mlp", {.hidden = -2}); }), "workload: hidden -2 must be >= 1");
  EXPECT_EQ(bad_input([] { build_workload("siglip-mlp", {.tokens = 8}); }),
            "workload 'siglip-mlp': its dimensions are fixed (729, 1152, 4304); tokens, width and "
            "hidden are options of workload 'mlp'");
  EXPECT_EQ(bad_input([] { build_workload("mlp", {.precision = Precision::Fp16, .fp8_scale = 2}); }),
            "workload: an FP8 scale applies to fp8 precision only, not fp16");
  EXPECT_EQ(bad_input([] { build_workload("mlp", {.fp8_scale = 70}); }), "workload: FP8 scale 70 is beyond +-64");
  EXPECT_EQ(bad_input([] { build_workload("resnet", {}); }),
            "workload 'resnet': unknown workload (workloads: siglip-mlp, mlp, siglip-vit, vit, siglip-vit-layer, "
            "vit-layer)");
  // The 2^40-element limit of graph files, before any data is generated.
  EXPECT_EQ(bad_input([] { build_workload("siglip-mlp", {.batch = 99999999999}); }),
            "workload: x has shape [99999999999,729,1152]: more than 2^40 elements");
  EXPECT_EQ(bad_input([] { build_workload("mlp", {.width = 1'000'000'000, .hidden = 4304}); }),
            "workload: W1 has shape [1,1000000000,4304]: more than 2^40 elements");
  EXPECT_EQ(bad_input([] { build_workload("mlp", {.tokens = 1 << 20, .width = 16, .hidden = 1 << 21}); }),
            "workload: the hidden activation has shape [1,1048576,2097152]: more than 2^40 elements");
  EXPECT_EQ(bad_input([] { build_workload("siglip-mlp", {.blocks = 1 << 20}); }),
            "workload: W1 has shape [1048576,1152,4304]: more than 2^40 elements");
  EXPECT_EQ(parse_precision("fp16"), Precision::Fp16);
  EXPECT_EQ(parse_precision("bf16"), std::nullopt);
  EXPECT_EQ(workloads().front().name, "siglip-mlp");
}

}  // namespace
}  // namespace tilec::graph
