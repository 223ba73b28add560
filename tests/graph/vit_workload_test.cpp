// The ViT tower workloads: structure, sizes, MACs, data, FP8 scales, and the
// host reference against a computation written out here from the model's
// definition (../shared/siglip-vit.md).
#include "graph/vit_workload.h"

#include "graph/cost.h"
#include "graph/equality.h"
#include "graph/json_format.h"
#include "graph/random.h"
#include "graph/reference.h"
#include "graph/validate.h"
#include "numerics/fp8.h"
#include "support/error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

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

std::vector<std::string> op_names(const Graph& graph, OpKind skip = OpKind::Input) {
  std::vector<std::string> names;
  for (const Op& op : graph.ops)
    if (op.kind != skip && op.kind != OpKind::Parameter) names.push_back(op.name);
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

std::int64_t elements(const Graph& graph, const std::string& name) { return type_of(graph, name).elements(); }

const std::vector<std::string> kLayerOps{
    "ln1",  "q_gemm", "q", "k_gemm", "k",    "v_gemm", "v",     "attention", "o_gemm", "o", "residual1",
    "ln2",  "gemm1",  "bias1", "gelu", "gemm2", "bias2", "residual2"};
const std::vector<std::string> kLayerParameters{"ln1_gamma", "ln1_beta", "Wq", "bq", "Wk", "bk", "Wv", "bv",
                                                "Wo", "bo", "ln2_gamma", "ln2_beta", "W1", "b1", "W2", "b2"};

TEST(VitWorkload, SiglipVitIsOneRepeatOfTheEncoderLayer) {
  const Graph graph = build_workload("siglip-vit", {.precision = Precision::Fp16});
  validate(graph);
  EXPECT_EQ(type_of(graph, "image"), (TensorType{{1, 384, 384, 3}, kF16}));
  EXPECT_EQ(op_names(graph),
            (std::vector<std::string>{"patches", "patch_embed_gemm", "patch_embed", "embedded", "layers", "post_ln",
                                      "head_q_gemm", "head_q", "head_k_gemm", "head_k", "head_v_gemm", "head_v",
                                      "head_attention", "head_o_gemm", "head_o", "head_ln", "head_gemm1",
                                      "head_bias1", "head_gelu", "head_gemm2", "head_bias2", "head_residual",
                                      "embedding"}));
  EXPECT_EQ(type_of(graph, "patches"), (TensorType{{1, 729, 588}, kF16}));
  EXPECT_EQ(type_of(graph, "position"), (TensorType{{729, 1152}, kF16}));
  EXPECT_EQ(type_of(graph, "probe"), (TensorType{{1, 1, 1152}, kF16}));
  const Op& layers = op_named(graph, "layers");
  EXPECT_EQ(layers.count, 27);
  EXPECT_EQ(layers.signature.carried, 1);
  EXPECT_EQ(layers.signature.sequence, 16);
  EXPECT_EQ(layers.signature.invariant, 0);
  EXPECT_EQ(op_names(*layers.body), kLayerOps);
  for (std::size_t i = 0; i < kLayerParameters.size(); ++i) {
    EXPECT_EQ(graph.value(layers.operands[i + 1]).name, kLayerParameters[i]);
    EXPECT_EQ(layers.body->value(layers.body->arguments[i + 1]).name, kLayerParameters[i]);
  }
  EXPECT_EQ(type_of(graph, "W1"), (TensorType{{27, 1152, 4304}, kF16}));
  EXPECT_EQ(type_of(graph, "ln1_gamma"), (TensorType{{27, 1152}, kF32}));
  const Op& attention = op_named(*layers.body, "attention");
  EXPECT_EQ(attention.attention_heads, 16);
  EXPECT_EQ(attention.attention_scale, 1.0f / std::sqrt(72.0f));
  EXPECT_EQ(op_named(*layers.body, "ln1").epsilon, 1e-6f);
  EXPECT_EQ(type_of(graph, "head_attention"), (TensorType{{1, 1, 1152}, kF16}));
  ASSERT_EQ(graph.outputs.size(), 1u);
  EXPECT_EQ(graph.outputs[0].first, "embedding");
  EXPECT_EQ(graph.type(graph.outputs[0].second), (TensorType{{1, 1152}, kF16}));
  // The body is written once in the file, however many layers.
  const std::string text = write_graph_json(graph);
  EXPECT_EQ(text.find("\"name\": \"q_gemm\""), text.rfind("\"name\": \"q_gemm\""));
}

TEST(VitWorkload, SiglipVitParameterCounts) {
  const Graph graph = build_workload("siglip-vit", {.precision = Precision::Fp16});
  std::int64_t layer_parameters = 0;
  for (const std::string& name : kLayerParameters) layer_parameters += elements(graph, name);
  EXPECT_EQ(layer_parameters, 27 * 15'239'504);  // siglip-vit.md: per encoder layer
  std::int64_t all = 0;
  for (const Op* parameter : graph.parameters()) all += graph.type(parameter->results[0]).elements();
  const std::int64_t embeddings = 588 * 1152 + 1152 + 729 * 1152;
  const std::int64_t head = 1152 + 4 * (1152 * 1152 + 1152) + 2 * 1152 + 1152 * 4304 + 4304 + 4304 * 1152 + 1152;
  EXPECT_EQ(all, 27 * 15'239'504 + embeddings + 2 * 1152 + head);
  EXPECT_NEAR(static_cast<double>(all) / 1e6, 428, 0.5);  // "about 428 M"
  // FP8 weights, FP16 biases and embeddings, FP32 layernorm parameters.
  EXPECT_EQ(parameter_bytes(build_workload("siglip-vit", {.precision = Precision::Fp32, .layers = 1, .head = false})),
            4 * (15'239'504 + embeddings + 2 * 1152));
}

TEST(VitWorkload, SiglipVitMacsPerPart) {
  const Graph graph = build_workload("siglip-vit", {.precision = Precision::Fp16});
  const Graph& body = *op_named(graph, "layers").body;
  auto macs = [](const Graph& g, std::initializer_list<const char*> ops) {
    std::int64_t total = 0;
    for (const char* op : ops) total += op_macs(g, op_named(g, op));
    return total;
  };
  // siglip-vit.md's table, in G.
  EXPECT_EQ(macs(body, {"q_gemm", "k_gemm", "v_gemm"}), 3ll * 729 * 1152 * 1152);
  EXPECT_NEAR(macs(body, {"q_gemm", "k_gemm", "v_gemm"}) / 1e9, 2.90, 0.005);
  EXPECT_EQ(macs(body, {"attention"}), 2ll * 729 * 729 * 1152);  // q k^T and softmax times v
  EXPECT_NEAR(macs(body, {"attention"}) / 2e9, 0.61, 0.005);
  EXPECT_NEAR(macs(body, {"o_gemm"}) / 1e9, 0.97, 0.005);
  EXPECT_NEAR(macs(body, {"gemm1", "gemm2"}) / 1e9, 7.23, 0.005);
  EXPECT_NEAR(graph_macs(body) / 1e9, 12.32, 0.005);
  EXPECT_EQ(op_macs(graph, op_named(graph, "layers")), 27 * graph_macs(body));
  EXPECT_NEAR(op_macs(graph, op_named(graph, "layers")) / 1e9, 332.6, 0.2);  // 27 x 12.32
  EXPECT_NEAR(macs(graph, {"patch_embed_gemm"}) / 1e9, 0.49, 0.005);
  const std::int64_t head =
      macs(graph, {"head_q_gemm", "head_k_gemm", "head_v_gemm", "head_attention", "head_o_gemm", "head_gemm1",
                   "head_gemm2"});
  EXPECT_NEAR(head / 1e9, 1.9, 0.05);
  EXPECT_EQ(graph_macs(graph), op_macs(graph, op_named(graph, "layers")) + macs(graph, {"patch_embed_gemm"}) + head);
  // Batch multiplies every part but the probe's projection.
  const Graph batch2 = build_workload("siglip-vit", {.batch = 2, .precision = Precision::Fp16});
  EXPECT_EQ(graph_macs(batch2), 2 * graph_macs(graph) - macs(graph, {"head_q_gemm"}));
}

TEST(VitWorkload, LayersHeadBatchAndSmallSizes) {
  const Graph graph = build_workload("vit", {.batch = 3, .precision = Precision::Fp32, .layers = 4, .head = false});
  EXPECT_EQ(type_of(graph, "image"), (TensorType{{3, 8, 8, 3}, kF32}));
  EXPECT_EQ(type_of(graph, "Wq"), (TensorType{{4, 16, 16}, kF32}));
  EXPECT_EQ(type_of(graph, "b1"), (TensorType{{4, 32}, kF32}));
  EXPECT_EQ(op_named(graph, "layers").count, 4);
  EXPECT_EQ(op_names(graph), (std::vector<std::string>{"patches", "patch_embed_gemm", "patch_embed", "embedded",
                                                       "layers", "post_ln"}));
  ASSERT_EQ(graph.outputs.size(), 1u);
  EXPECT_EQ(graph.outputs[0].first, "tokens");
  EXPECT_EQ(graph.type(graph.outputs[0].second), (TensorType{{3, 16, 16}, kF32}));
  const Graph wide = build_workload("vit", {.precision = Precision::Fp16, .width = 32, .hidden = 8});
  EXPECT_EQ(type_of(wide, "W1"), (TensorType{{2, 32, 8}, kF16}));
  EXPECT_EQ(type_of(wide, "embedding"), (TensorType{{1, 32}, kF16}));
  // Any size through the library: 36 tokens, 3 heads.
  const Workload custom = vit_workload(
      {.dimensions = {.image = 18, .channels = 1, .patch = 3, .width = 12, .hidden = 20, .heads = 3, .layers = 1},
       .precision = Precision::Fp16});
  EXPECT_EQ(type_of(custom.graph, "patches"), (TensorType{{1, 36, 9}, kF16}));
  EXPECT_EQ(op_named(*op_named(custom.graph, "layers").body, "attention").attention_heads, 3);
}

// At fp8 every GEMM multiplies FP8 operands: weights (and the probe) are
// F143 parameters, activations are cast to F143 right before their GEMM.
TEST(VitWorkload, Fp8CastsEveryGemmOperand) {
  const Graph graph = build_workload("vit", {.batch = 2});
  validate(graph);
  const Graph& body = *op_named(graph, "layers").body;
  EXPECT_EQ(op_names(body), (std::vector<std::string>{"ln1", "ln1_f143", "q_gemm", "q", "k_gemm", "k", "v_gemm", "v",
                                                      "attention", "attention_f143", "o_gemm", "o", "residual1",
                                                      "ln2", "ln2_f143", "gemm1", "bias1", "gelu", "gelu_f143",
                                                      "gemm2", "bias2", "residual2"}));
  for (const Graph* g : {&graph, &body})
    for (const Op& op : g->ops) {
      if (op.kind != OpKind::Gemm) continue;
      EXPECT_EQ(g->type(op.results[0]).storage, kF16) << op.name;
      for (ValueId operand : op.operands) {
        EXPECT_EQ(g->type(operand).storage.element, ElementType::F143) << op.name;
        const Op* producer = g->producer(operand);
        if (producer) {
          EXPECT_TRUE(producer->kind == OpKind::Cast || producer->kind == OpKind::Parameter) << op.name;
        }
      }
    }
  EXPECT_EQ(type_of(graph, "image").storage, kF16);
  EXPECT_EQ(type_of(graph, "patches_f143"), (TensorType{{2, 16, 12}, {ElementType::F143, kImageFp8Scale}}));
  EXPECT_EQ(type_of(graph, "probe").storage.element, ElementType::F143);
  EXPECT_EQ(type_of(graph, "b1"), (TensorType{{2, 32}, kF16}));
  EXPECT_EQ(type_of(graph, "position").storage, kF16);
  EXPECT_EQ(type_of(graph, "ln2_gamma").storage, kF32);
  EXPECT_EQ(type_of(graph, "head_ln_beta").storage, kF32);
  EXPECT_EQ(type_of(graph, "embedding"), (TensorType{{2, 16}, kF16}));
  // The FP8 scales come from the parameters' data, not the image's: the
  // batch changes no type.
  const Graph one = build_workload("vit", {.batch = 1});
  for (const Op* parameter : graph.parameters())
    EXPECT_EQ(graph.type(parameter->results[0]), type_of(one, parameter->name));
  EXPECT_EQ(type_of(*op_named(one, "layers").body, "gelu_f143"), (TensorType{{1, 16, 32}, type_of(body, "gelu_f143").storage}));
}

TEST(VitWorkload, WeightScalesAreAutomaticForTheirData) {
  const Workload workload = make_workload("vit", {.seed = 4});
  for (const std::string name : {"patch_W", "W1", "W2", "probe", "head_Wv"}) {
    const TensorType& type = type_of(workload.graph, name);
    const Distribution rule = workload.data_rules.at(name);
    EXPECT_EQ(type.storage.scale,
              automatic_fp8_scale(gaussian(4, name, static_cast<std::size_t>(type.elements()), rule.sigma, rule.mean)))
        << name;
  }
  EXPECT_EQ(bounded_fp8_scale(1.0), -7);    // 1.125 x 2^7 = 144 <= 240
  EXPECT_EQ(bounded_fp8_scale(213.0), 0);   // 239.6
  EXPECT_EQ(bounded_fp8_scale(214.0), 1);   // 240.75
}

TEST(VitWorkload, DataRules) {
  const Workload workload = make_workload("vit", {.precision = Precision::Fp16});
  const DataRules& rules = workload.data_rules;
  EXPECT_EQ(rules.at("image"), (Distribution{0.0f, kImageSigma}));
  EXPECT_EQ(rules.at("patch_W"), (Distribution{0.0f, 1.0f / std::sqrt(12.0f)}));
  EXPECT_EQ(rules.at("Wq"), (Distribution{0.0f, 1.0f / std::sqrt(16.0f)}));
  EXPECT_EQ(rules.at("W2"), (Distribution{0.0f, 1.0f / std::sqrt(32.0f)}));
  EXPECT_EQ(rules.at("head_W2"), (Distribution{0.0f, 1.0f / std::sqrt(32.0f)}));
  for (const char* gain : {"ln1_gamma", "ln2_gamma", "post_gamma", "head_ln_gamma"})
    EXPECT_EQ(rules.at(gain), (Distribution{1.0f, kSmallSigma})) << gain;
  for (const char* small : {"ln1_beta", "bq", "b2", "patch_b", "position", "probe", "head_bo", "post_beta"})
    EXPECT_EQ(rules.at(small), (Distribution{0.0f, kSmallSigma})) << small;
  EXPECT_EQ(rules.size(), workload.graph.inputs().size() + workload.graph.parameters().size());

  // generate_data follows them: the values are gaussian(seed, name, n, sigma, mean) as stored.
  const Workload big = make_workload("vit", {.batch = 8, .precision = Precision::Fp32, .width = 64, .hidden = 256});
  const TensorMap data = generate_data(big.graph, 9, big.data_rules);
  auto rms_and_mean = [&](const std::string& name) {
    const std::vector<float> values = data.at(name).to_floats();
    double sum = 0, squares = 0;
    for (float v : values) sum += v, squares += static_cast<double>(v) * v;
    const double mean = sum / static_cast<double>(values.size());
    return std::pair{std::sqrt(squares / static_cast<double>(values.size()) - mean * mean), mean};
  };
  EXPECT_NEAR(rms_and_mean("W1").first, 1.0 / 8, 0.005);
  EXPECT_NEAR(rms_and_mean("W2").first, 1.0 / 16, 0.002);
  EXPECT_NEAR(rms_and_mean("ln2_gamma").second, 1.0, 0.01);
  EXPECT_NEAR(rms_and_mean("ln2_gamma").first, kSmallSigma, 0.005);
  EXPECT_NEAR(rms_and_mean("image").first, kImageSigma, 0.05);
  EXPECT_EQ(data.at("ln2_gamma").to_floats(), gaussian(9, "ln2_gamma", 2 * 64, kSmallSigma, 1.0f));
  // Without rules, the defaults of every other graph.
  EXPECT_EQ(generate_data(big.graph, 9).at("W1").to_floats(),
            gaussian(9, "W1", static_cast<std::size_t>(elements(big.graph, "W1")), kParameterSigma));
}

// The cast scales bound every value the casts take, for any image: run the
// reference on the generated data and on an image 16 times larger.
TEST(VitWorkload, Fp8CastScalesHoldEveryValue) {
  const Workload workload = make_workload("vit", {.batch = 2, .seed = 5, .layers = 3});
  TensorMap data = generate_data(workload.graph, 5, workload.data_rules);
  for (const float image_sigma : {kImageSigma, 16 * kImageSigma}) {
    const TensorType& image = type_of(workload.graph, "image");
    data.insert_or_assign("image", Tensor::from_floats(image, gaussian(11, "image", 2 * 8 * 8 * 3, image_sigma)));
    const ReferenceResult result = run_reference(workload.graph, data, true);
    int casts = 0;
    auto check = [&](const Graph& graph, const std::string& prefix) {
      for (const Op& op : graph.ops) {
        if (op.kind != OpKind::Cast || op.name == "patches_f143") continue;
        ++casts;
        const std::vector<float> input = result.intermediates.at(prefix + graph.value(op.operands[0]).name).to_floats();
        float largest = 0;
        for (float v : input) largest = std::max(largest, std::fabs(v));
        const int scale = graph.type(op.results[0]).storage.scale;
        EXPECT_LE(largest, std::ldexp(240.0f, scale)) << prefix << op.name;
        EXPECT_GT(largest, 0.0f) << prefix << op.name;
      }
    };
    check(workload.graph, "");
    for (int layer = 0; layer < 3; ++layer) check(*op_named(workload.graph, "layers").body, fmt::format("layers[{}].", layer));
    EXPECT_EQ(casts, 4 + 3 * 4);
  }
}

TEST(VitWorkload, RoundTripsThroughJson) {
  for (Precision precision : {Precision::Fp8, Precision::Fp16, Precision::Fp32})
    for (bool head : {true, false}) {
      const Graph graph = build_workload("vit", {.batch = 2, .precision = precision, .head = head});
      const std::string text = write_graph_json(graph);
      const Graph read = read_graph_json(text);
      EXPECT_EQ(first_difference(graph, read), "") << precision_name(precision) << head;
      EXPECT_EQ(write_graph_json(read), text);
    }
}

// One encoder layer alone is the repeat body written at the top level: the
// same ops, names and types, the parameters unstacked.
TEST(VitWorkload, EncoderLayerAloneIsTheRepeatBody) {
  for (Precision precision : {Precision::Fp16, Precision::Fp8}) {
    const Graph layer = build_workload("vit-layer", {.batch = 2, .precision = precision});
    validate(layer);
    const Graph tower = build_workload("vit", {.batch = 2, .precision = precision, .layers = 1});
    const Graph& body = *op_named(tower, "layers").body;
    EXPECT_EQ(op_names(layer), op_names(body));
    for (const Op& op : body.ops) {
      const TensorType& in_body = body.type(op.results[0]);
      // Cast scales bound the values of every layer the body serves; here there is one.
      if (op.kind != OpKind::Cast) {
        EXPECT_EQ(type_of(layer, op.name), in_body) << op.name;
      }
    }
    EXPECT_EQ(type_of(layer, "x"), (TensorType{{2, 16, 16}, kF16}));
    EXPECT_EQ(type_of(layer, "W1").shape, (Shape{16, 32}));
    EXPECT_EQ(type_of(layer, "ln2_beta"), (TensorType{{16}, kF32}));
    ASSERT_EQ(layer.outputs.size(), 1u);
    EXPECT_EQ(layer.outputs[0].first, "y");
    EXPECT_EQ(layer.value(layer.outputs[0].second).name, "residual2");
  }
  const Graph siglip = build_workload("siglip-vit-layer", {.precision = Precision::Fp16});
  EXPECT_EQ(type_of(siglip, "x"), (TensorType{{1, 729, 1152}, kF16}));
  EXPECT_EQ(type_of(siglip, "W2"), (TensorType{{4304, 1152}, kF16}));
  std::int64_t parameters = 0;
  for (const Op* parameter : siglip.parameters()) parameters += siglip.type(parameter->results[0]).elements();
  EXPECT_EQ(parameters, 15'239'504);
  EXPECT_EQ(graph_macs(siglip), 12'323'342'592);
}

// Its data is the tower's first layer's (each stream's first samples do not
// depend on its length), so on the tower's embedded tokens it computes the
// tower's first layer, bit for bit.
TEST(VitWorkload, EncoderLayerAloneComputesTheTowersFirstLayer) {
  const Workload tower = make_workload("vit", {.precision = Precision::Fp16, .layers = 3});
  const Workload layer = make_workload("vit-layer", {.precision = Precision::Fp16});
  const ReferenceResult by_tower = run_reference(tower.graph, generate_data(tower.graph, 2, tower.data_rules), true);
  TensorMap data = generate_data(layer.graph, 2, layer.data_rules);
  EXPECT_EQ(layer.data_rules.at("x"), (Distribution{0.0f, 1.0f}));
  data.insert_or_assign("x", by_tower.intermediates.at("embedded"));
  EXPECT_EQ(run_reference(layer.graph, data).outputs.at("y").bytes, by_tower.intermediates.at("layers[0].residual2").bytes);
}

TEST(VitWorkload, OptionErrors) {
  EXPECT_EQ(bad_input([] { build_workload("vit", {.layers = 0}); }), "workload: layers 0 must be >= 1");
  EXPECT_EQ(bad_input([] { build_workload("vit", {.batch = 0}); }), "workload: batch 0 must be >= 1");
  EXPECT_EQ(bad_input([] { build_workload("vit", {.width = 15}); }), "workload: heads 2 do not divide width 15");
  EXPECT_EQ(bad_input([] { vit_workload({.dimensions = {.image = 8, .patch = 9}}); }),
            "workload: patch 9 is larger than image 8");
  EXPECT_EQ(bad_input([] { build_workload("siglip-vit", {.blocks = 2}); }),
            "workload 'siglip-vit': blocks is an option of the MLP workloads; its encoder layers are option layers");
  EXPECT_EQ(bad_input([] { build_workload("vit", {.fp8_scale = -3}); }),
            "workload 'vit': it chooses every FP8 scale from its data; fp8-scale is an option of the MLP workloads");
  EXPECT_EQ(bad_input([] { build_workload("vit", {.bias = true}); }),
            "workload 'vit': it always has biases; bias is an option of the MLP workloads");
  EXPECT_EQ(bad_input([] { build_workload("vit", {.tokens = 4}); }),
            "workload 'vit': its tokens follow from the image and the patch; tokens is an option of workload 'mlp'");
  EXPECT_EQ(bad_input([] { build_workload("siglip-vit", {.width = 64}); }),
            "workload 'siglip-vit': its dimensions are fixed (1152, 4304); width and hidden are options of "
            "workload 'vit'");
  EXPECT_EQ(bad_input([] { build_workload("vit-layer", {.layers = 2}); }),
            "workload 'vit-layer': it is one encoder layer, without the head; layers and head are options of "
            "workloads 'siglip-vit' and 'vit'");
  EXPECT_EQ(bad_input([] { build_workload("siglip-vit-layer", {.hidden = 8}); }),
            "workload 'siglip-vit-layer': its dimensions are fixed (1152, 4304); width and hidden are options of "
            "workload 'vit'");
  EXPECT_EQ(bad_input([] { build_workload("mlp", {.layers = 2}); }),
            "workload 'mlp': layers and head are options of workloads 'siglip-vit' and 'vit'");
  EXPECT_EQ(bad_input([] { build_workload("siglip-mlp", {.head = false}); }),
            "workload 'siglip-mlp': layers and head are options of workloads 'siglip-vit' and 'vit'");
  // The 2^40-element limit holds before any data is drawn.
  EXPECT_EQ(bad_input([] { build_workload("vit", {.width = 1 << 20, .hidden = 1 << 20}); }),
            "parameter 'Wq': the tensor has shape [2,1048576,1048576]: more than 2^40 elements");
  EXPECT_EQ(bad_input([] { build_workload("siglip-vit", {.batch = 1 << 22}); }),
            "input 'image': the tensor has shape [4194304,384,384,3]: more than 2^40 elements");
}

}  // namespace
}  // namespace tilec::graph
