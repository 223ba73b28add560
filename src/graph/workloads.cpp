#include "graph/workloads.h"

#include "graph/builder.h"
#include "graph/random.h"
#include "graph/shape_inference.h"
#include "graph/vit_workload.h"
#include "numerics/fp8.h"
#include "support/error.h"
#include "support/parallel.h"

#include <cmath>

namespace tilec::graph {

namespace {

constexpr std::int64_t kSiglipTokens = 729, kSiglipWidth = 1152, kSiglipHidden = 4304;
constexpr std::int64_t kSmallTokens = 8, kSmallWidth = 16, kSmallHidden = 32;

constexpr StorageType kF16{ElementType::F16, 0};
constexpr StorageType kF32{ElementType::F32, 0};

struct MlpTypes {
  StorageType x, w1, w2;
  StorageType activation;  // GEMM results, GELU
  StorageType bias;
};

// The FP8 scale of one tensor: the forced one, or the automatic one for the
// data generate_data() will give it.
int fp8_scale_for(const MlpOptions& options, const std::string& name, std::int64_t elements,
                  float sigma) {
  if (options.fp8_scale) return *options.fp8_scale;
  return automatic_fp8_scale(gaussian(options.seed, name, static_cast<std::size_t>(elements), sigma));
}

void check_options(const MlpOptions& options, std::int64_t tokens, std::int64_t width,
                   std::int64_t hidden) {
  auto require_positive = [](std::string_view option, std::int64_t value) {
    if (value < 1) throw_bad_input("workload", "{} {} must be >= 1", option, value);
  };
  require_positive("batch", options.batch);
  require_positive("blocks", options.blocks);
  require_positive("tokens", tokens);
  require_positive("width", width);
  require_positive("hidden", hidden);
  if (options.fp8_scale && options.precision != Precision::Fp8)
    throw_bad_input("workload", "an FP8 scale applies to fp8 precision only, not {}",
                    precision_name(options.precision));
  if (options.fp8_scale && std::abs(*options.fp8_scale) > kLargestFp8Scale)
    throw_bad_input("workload", "FP8 scale {} is beyond +-{}", *options.fp8_scale, kLargestFp8Scale);
  // The limit graph files obey, checked before any data is made for them.
  const std::int64_t blocks = options.blocks;
  const std::pair<const char*, Shape> tensors[] = {{"x", {options.batch, tokens, width}},
                                                   {"the hidden activation", {options.batch, tokens, hidden}},
                                                   {"W1", {blocks, width, hidden}},
                                                   {"W2", {blocks, hidden, width}}};
  for (const auto& [name, shape] : tensors) check_type("workload", name, TensorType{shape, kF32});
}

}  // namespace

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::Fp8: return "fp8";
    case Precision::Fp16: return "fp16";
    case Precision::Fp32: return "fp32";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view name) {
  for (Precision precision : {Precision::Fp8, Precision::Fp16, Precision::Fp32})
    if (precision_name(precision) == name) return precision;
  return std::nullopt;
}

int automatic_fp8_scale(std::span<const float> values, ElementType type) {
  float largest = 0.0f;
  for (float value : values) largest = std::max(largest, std::fabs(value));
  if (largest == 0.0f || !std::isfinite(largest)) return 0;
  const float limit = fp8_spec(type).largest;
  // Start near the answer from the exponents, then settle it exactly.
  int scale = std::ilogb(largest) - std::ilogb(limit);
  while (std::ldexp(largest, -scale) > limit) ++scale;
  while (std::ldexp(largest, -(scale - 1)) <= limit) --scale;
  return std::clamp(scale, -kLargestFp8Scale, kLargestFp8Scale);
}

Graph mlp_graph(const MlpOptions& options) {
  const std::int64_t tokens = options.tokens.value_or(kSiglipTokens);
  const std::int64_t width = options.width.value_or(kSiglipWidth);
  const std::int64_t hidden = options.hidden.value_or(kSiglipHidden);
  check_options(options, tokens, width, hidden);
  const std::int64_t blocks = options.blocks;
  const bool repeated = blocks > 1;
  // Stacked per-block parameters carry a leading [blocks] axis.
  auto stacked = [&](Shape shape) {
    if (repeated) shape.insert(shape.begin(), blocks);
    return shape;
  };
  const Shape x_shape{options.batch, tokens, width};
  const Shape w1_shape = stacked({width, hidden});
  const Shape w2_shape = stacked({hidden, width});
  auto elements = [](const Shape& shape) { return TensorType{shape, kF32}.elements(); };

  MlpTypes types{kF32, kF32, kF32, kF32, kF32};
  if (options.precision == Precision::Fp16) types = {kF16, kF16, kF16, kF16, kF16};
  if (options.precision == Precision::Fp8) {
    auto f143 = [&](const std::string& name, const Shape& shape, float sigma) {
      return StorageType{ElementType::F143, fp8_scale_for(options, name, elements(shape), sigma)};
    };
    types = {f143("x", x_shape, kInputSigma), f143("W1", w1_shape, kParameterSigma),
             f143("W2", w2_shape, kParameterSigma), kF16, kF16};
  }
  const bool fp8 = options.precision == Precision::Fp8;

  GraphBuilder builder;
  ValueId x = builder.input("x", {x_shape, types.x});
  ValueId w1 = builder.parameter("W1", {w1_shape, types.w1});
  ValueId b1 = options.bias ? builder.parameter("b1", {stacked({hidden}), types.bias}) : kNoValue;
  ValueId w2 = builder.parameter("W2", {w2_shape, types.w2});
  ValueId b2 = options.bias ? builder.parameter("b2", {stacked({width}), types.bias}) : kNoValue;

  // One block on `b`: the same ops at top level or in the repeat body.
  auto block = [&](GraphBuilder& b, ValueId in, ValueId w1v, ValueId b1v, ValueId w2v, ValueId b2v) {
    ValueId h = b.gemm("gemm1", in, w1v, types.activation);
    if (b1v != kNoValue) h = b.add("bias1", h, b1v);
    h = b.gelu("gelu", h, GeluApproximation::Tanh);
    if (fp8) h = b.cast("gelu_f143", h, {ElementType::F143, kHiddenFp8Scale});
    ValueId y = b.gemm("gemm2", h, w2v, types.activation);
    if (b2v != kNoValue) y = b.add("bias2", y, b2v);
    return y;
  };

  ValueId y;
  if (!repeated) {
    y = block(builder, x, w1, b1, w2, b2);
  } else {
    // The carried value is a block's FP16 result; at FP8 each block first
    // casts it to x's F143 type (exact for the first block, whose input is x).
    ValueId carried = fp8 ? builder.cast("x_f16", x, kF16) : x;
    GraphBuilder::RepeatOperands operands{.carried = {carried}, .sequence = {w1, w2}};
    if (options.bias) operands.sequence = {w1, b1, w2, b2};
    y = builder
            .repeat("blocks", blocks, operands,
                    [&](GraphBuilder& body, const std::vector<ValueId>& args) {
                      const bool bias = options.bias;
                      ValueId in = fp8 ? body.cast("block_x", args[0], types.x) : args[0];
                      return std::vector<ValueId>{block(body, in, args[1], bias ? args[2] : kNoValue,
                                                        args[bias ? 3 : 2], bias ? args[4] : kNoValue)};
                    })
            .front();
  }
  builder.output("y", y);
  return builder.finish();
}

std::vector<WorkloadInfo> workloads() {
  return {
      {"siglip-mlp", "SigLIP So400m/14 MLP block: x[batch,729,1152] -> gelu_tanh(x W1) W2"},
      {"mlp", "the same MLP with --tokens/--width/--hidden of your choice (default 8/16/32)"},
      {"siglip-vit", "SigLIP So400m/14 vision tower at 384 px: image[batch,384,384,3] -> 27 encoder layers -> "
                     "MAP head -> [batch,1152]"},
      {"vit", "the same tower at 8x8 px, patch 2 (16 tokens), --width/--hidden of your choice (default 16/32), "
              "2 heads, 2 layers"},
      {"siglip-vit-layer", "one SigLIP So400m/14 encoder layer: x[batch,729,1152] -> y"},
      {"vit-layer", "one encoder layer of vit: x[batch,16,16] -> y"},
  };
}

namespace {

void reject_vit_options(std::string_view name, const MlpOptions& options) {
  if (options.layers || !options.head)
    throw_bad_input(fmt::format("workload '{}'", name), "layers and head are options of workloads 'siglip-vit' and 'vit'");
}

// The ViT workloads take batch, precision, seed, layers and head (and `vit`
// width and hidden); the MLP's own options are refused by name.
VitOptions vit_options(std::string_view name, const MlpOptions& options, VitDimensions dimensions) {
  const std::string where = fmt::format("workload '{}'", name);
  if (options.blocks != 1)
    throw_bad_input(where, "blocks is an option of the MLP workloads; its encoder layers are option layers");
  if (options.fp8_scale)
    throw_bad_input(where, "it chooses every FP8 scale from its data; fp8-scale is an option of the MLP workloads");
  if (options.bias) throw_bad_input(where, "it always has biases; bias is an option of the MLP workloads");
  if (options.tokens) throw_bad_input(where, "its tokens follow from the image and the patch; tokens is an option of workload 'mlp'");
  if (name.ends_with("-layer") && (options.layers || !options.head))
    throw_bad_input(where, "it is one encoder layer, without the head; layers and head are options of workloads "
                    "'siglip-vit' and 'vit'");
  if (name.starts_with("siglip-vit") && (options.width || options.hidden))
    throw_bad_input(where, "its dimensions are fixed (1152, 4304); width and hidden are options of workload 'vit'");
  dimensions.width = options.width.value_or(dimensions.width);
  dimensions.hidden = options.hidden.value_or(dimensions.hidden);
  dimensions.layers = options.layers.value_or(dimensions.layers);
  return {dimensions, options.batch, options.precision, options.head, options.seed};
}

}  // namespace

Workload make_workload(std::string_view name, MlpOptions options) {
  if (name == "siglip-mlp") {
    reject_vit_options(name, options);
    if (options.tokens || options.width || options.hidden)
      throw_bad_input("workload 'siglip-mlp'",
                      "its dimensions are fixed (729, 1152, 4304); tokens, width and hidden are "
                      "options of workload 'mlp'");
    return {mlp_graph(options), {}};
  }
  if (name == "mlp") {
    reject_vit_options(name, options);
    options.tokens = options.tokens.value_or(kSmallTokens);
    options.width = options.width.value_or(kSmallWidth);
    options.hidden = options.hidden.value_or(kSmallHidden);
    return {mlp_graph(options), {}};
  }
  for (const auto& [tower, dimensions] : {std::pair{"siglip-vit", kSiglipVit}, std::pair{"vit", kSmallVit}}) {
    if (name != tower && name != std::string(tower) + "-layer") continue;
    VitOptions vit = vit_options(name, options, dimensions);
    if (name != tower) vit.part = VitPart::EncoderLayer;
    return vit_workload(vit);
  }
  throw_bad_input(fmt::format("workload '{}'", name),
                  "unknown workload (workloads: siglip-mlp, mlp, siglip-vit, vit, siglip-vit-layer, vit-layer)");
}

Graph build_workload(std::string_view name, MlpOptions options) {
  return make_workload(name, std::move(options)).graph;
}

TensorMap generate_data(const Graph& graph, std::uint64_t seed, const DataRules& rules) {
  std::vector<const Op*> sources = graph.inputs();
  for (const Op* parameter : graph.parameters()) sources.push_back(parameter);
  // Each tensor has its own stream, so they can be made in any order.
  std::vector<Tensor> tensors(sources.size());
  parallel_for(0, sources.size(), [&](std::size_t i) {
    const Op& op = *sources[i];
    const TensorType& type = graph.type(op.results.at(0));
    Distribution distribution{0.0f, op.kind == OpKind::Input ? kInputSigma : kParameterSigma};
    if (auto rule = rules.find(op.name); rule != rules.end()) distribution = rule->second;
    tensors[i] = Tensor::from_floats(type, gaussian(seed, op.name, static_cast<std::size_t>(type.elements()),
                                                    distribution.sigma, distribution.mean));
  });
  TensorMap data;
  for (std::size_t i = 0; i < sources.size(); ++i) data.emplace(sources[i]->name, std::move(tensors[i]));
  return data;
}

}  // namespace tilec::graph
