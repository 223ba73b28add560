#include "graph/vit_workload.h"

#include "graph/builder.h"
#include "graph/random.h"
#include "graph/shape_inference.h"
#include "numerics/fp8.h"
#include "support/error.h"
#include "support/parallel.h"

#include <fmt/format.h>

#include <cmath>
#include <span>

namespace tilec::graph {

namespace {

constexpr StorageType kF16{ElementType::F16, 0};
constexpr StorageType kF32{ElementType::F32, 0};

// |gelu_tanh(h)| <= 0.17 for every h < 0 (its minimum is about -0.170).
constexpr double kGeluNegativeBound = 0.17;

// What a tensor is for: decides its storage type and its data.
enum class Role : std::uint8_t {
  Image,
  Tokens,     // the encoder layer's input x: N(0, 1)
  Weight,     // a GEMM's right operand: N(0, 1/K)
  Probe,      // the head's query, a GEMM's left operand: small
  Bias,       // biases and the position embedding: small
  Gain,       // layernorm gamma: near 1, always f32
  Shift,      // layernorm beta: small, always f32
};

struct Source {
  std::string name;
  Shape shape;
  Role role;
  bool stacked;  // one slice per encoder layer along the leading axis
};

// One encoder layer's parameters, in the order the repeat takes them.
struct LayerParameter {
  const char* name;
  Role role;
};
constexpr LayerParameter kLayerParameters[] = {
    {"ln1_gamma", Role::Gain}, {"ln1_beta", Role::Shift}, {"Wq", Role::Weight},        {"bq", Role::Bias},
    {"Wk", Role::Weight},      {"bk", Role::Bias},        {"Wv", Role::Weight},        {"bv", Role::Bias},
    {"Wo", Role::Weight},      {"bo", Role::Bias},        {"ln2_gamma", Role::Gain},   {"ln2_beta", Role::Shift},
    {"W1", Role::Weight},      {"b1", Role::Bias},        {"W2", Role::Weight},        {"b2", Role::Bias},
};

Shape layer_shape(const std::string& name, const VitDimensions& d) {
  const std::int64_t w = d.width, h = d.hidden;
  if (name == "W1") return {w, h};
  if (name == "b1") return {h};
  if (name == "W2") return {h, w};
  if (name.front() == 'W') return {w, w};
  return {w};
}

std::vector<Source> sources_of(const VitOptions& options) {
  const VitDimensions& d = options.dimensions;
  const std::int64_t tokens = (d.image / d.patch) * (d.image / d.patch);
  if (options.part == VitPart::EncoderLayer) {
    std::vector<Source> sources{{"x", {options.batch, tokens, d.width}, Role::Tokens, false}};
    for (const LayerParameter& parameter : kLayerParameters)
      sources.push_back({parameter.name, layer_shape(parameter.name, d), parameter.role, false});
    return sources;
  }
  std::vector<Source> sources{
      {"image", {options.batch, d.image, d.image, d.channels}, Role::Image, false},
      {"patch_W", {d.patch * d.patch * d.channels, d.width}, Role::Weight, false},
      {"patch_b", {d.width}, Role::Bias, false},
      {"position", {tokens, d.width}, Role::Bias, false},
  };
  for (const LayerParameter& parameter : kLayerParameters) {
    Shape shape = layer_shape(parameter.name, d);
    shape.insert(shape.begin(), d.layers);
    sources.push_back({parameter.name, shape, parameter.role, true});
  }
  sources.push_back({"post_gamma", {d.width}, Role::Gain, false});
  sources.push_back({"post_beta", {d.width}, Role::Shift, false});
  if (options.head) {
    sources.push_back({"probe", {1, 1, d.width}, Role::Probe, false});
    for (const LayerParameter& parameter : kLayerParameters) {
      const std::string name = parameter.name;
      const std::string head_name = name.starts_with("ln2") ? "head_ln" + name.substr(3) : "head_" + name;
      if (!name.starts_with("ln1")) sources.push_back({head_name, layer_shape(name, d), parameter.role, false});
    }
  }
  return sources;
}

Distribution distribution_of(const Source& source) {
  switch (source.role) {
    case Role::Image: return {0.0f, kImageSigma};
    case Role::Tokens: return {0.0f, 1.0f};
    case Role::Weight: {
      const auto fan_in = static_cast<float>(source.shape[source.shape.size() - 2]);
      return {0.0f, 1.0f / std::sqrt(fan_in)};
    }
    case Role::Gain: return {1.0f, kSmallSigma};
    case Role::Probe:
    case Role::Bias:
    case Role::Shift: return {0.0f, kSmallSigma};
  }
  return {};
}

std::int64_t elements_of(const Shape& shape) { return TensorType{shape, kF32}.elements(); }

// What the cast bounds need of one slice of a tensor's stored values.
struct SliceFacts {
  double largest = 0;              // max |v|
  double norm = 0;                 // sqrt(sum v^2)
  double largest_column_norm = 0;  // a matrix's max over columns j of ||v[:, j]||
};

struct Facts {
  StorageType storage;
  std::vector<SliceFacts> slices;  // one per encoder layer, or one
};

StorageType storage_of(Role role, Precision precision) {
  const StorageType activation = precision == Precision::Fp32 ? kF32 : kF16;
  if (role == Role::Gain || role == Role::Shift) return kF32;
  if ((role == Role::Weight || role == Role::Probe) && precision == Precision::Fp8)
    return {ElementType::F143, 0};  // the scale comes from the data
  return activation;
}

// Generates the tensor as generate_data will, into `buffer` (at least its
// size), picks its FP8 scale as siglip-mlp does (automatic_fp8_scale of the
// drawn values), and measures the stored values.
Facts measure(const Source& source, const VitOptions& options, std::span<float> buffer) {
  const Distribution distribution = distribution_of(source);
  const std::span<float> drawn = buffer.first(static_cast<std::size_t>(elements_of(source.shape)));
  gaussian_into(options.seed, source.name, drawn, distribution.sigma, distribution.mean);
  Facts facts{storage_of(source.role, options.precision), {}};
  const Shape slice_shape = source.stacked ? Shape(source.shape.begin() + 1, source.shape.end()) : source.shape;
  const std::int64_t slice_size = elements_of(slice_shape);
  const std::int64_t columns = slice_shape.size() >= 2 ? slice_shape.back() : 0;
  facts.slices.resize(source.stacked ? static_cast<std::size_t>(source.shape.front()) : 1);
  const std::size_t width = columns > 0 ? static_cast<std::size_t>(columns) : 1;
  const auto slice_of = [&](std::size_t slice) {
    return drawn.subspan(slice * static_cast<std::size_t>(slice_size), static_cast<std::size_t>(slice_size));
  };
  if (is_fp8(facts.storage.element)) {
    // The scale depends only on the largest magnitude: each slice's, found at once.
    std::vector<float> largest(facts.slices.size());
    parallel_for(0, facts.slices.size(), [&](std::size_t slice) {
      for (float value : slice_of(slice)) largest[slice] = std::max(largest[slice], std::fabs(value));
    });
    facts.storage.scale = automatic_fp8_scale(largest);
  }
  parallel_for(0, facts.slices.size(), [&](std::size_t slice) {
    SliceFacts& out = facts.slices[slice];
    // Rounded in place: the drawn values are not needed once the scale is set.
    const std::span<float> stored = slice_of(slice);
    round_to_storage(stored, facts.storage);
    std::vector<double> column_squares(width);
    double squares = 0;
    for (std::size_t row = 0; row < stored.size() / width; ++row)
      for (std::size_t column = 0; column < width; ++column) {
        const double value = stored[row * width + column];
        out.largest = std::max(out.largest, std::fabs(value));
        squares += value * value;
        column_squares[column] += value * value;
      }
    out.norm = std::sqrt(squares);
    if (columns > 0)
      for (double column : column_squares) out.largest_column_norm = std::max(out.largest_column_norm, std::sqrt(column));
  });
  return facts;
}

// Bounds on every value an FP8 cast takes, for any image. A layernorm's
// normalised row has mean 0 and mean square at most 1, so each element is
// at most sqrt(W-1) in magnitude and the row's norm at most sqrt(W); hence
//   |ln| <= sqrt(W-1) max|gamma| + max|beta|,  ||ln row|| <= sqrt(W) max|gamma| + ||beta||.
// A GEMM of such rows plus a bias gives |y_j| <= ||row|| ||W[:, j]|| + |b_j|
// (Cauchy-Schwarz); attention averages rows of v, so |o| <= max|v|; and
// |gelu(h)| <= max(|h|, 0.17). The roundings of the stored results and of
// the GEMM's FP8 operand (1/16 at most) are what bounded_fp8_scale's 1/8
// covers.
class CastBounds {
 public:
  CastBounds(const std::map<std::string, Facts>& facts, std::int64_t width) : facts_(facts), width_(width) {}

  // Over layers: the largest |ln| of layernorm PREFIX (PREFIX_gamma, PREFIX_beta).
  double layernorm(const std::string& prefix) const {
    double bound = 0;
    for_slices(prefix, [&](std::size_t l) { bound = std::max(bound, layernorm_largest(prefix, l)); });
    return bound;
  }

  // Over layers: the largest |ln W + b| for layernorm PREFIX, weight W and bias b.
  double gemm_of_layernorm(const std::string& prefix, const std::string& weight, const std::string& bias) const {
    double bound = 0;
    for_slices(prefix, [&](std::size_t l) {
      const double row_norm =
          std::sqrt(static_cast<double>(width_)) * slice(prefix + "_gamma", l).largest + slice(prefix + "_beta", l).norm;
      bound = std::max(bound, row_norm * slice(weight, l).largest_column_norm + slice(bias, l).largest);
    });
    return bound;
  }

 private:
  const SliceFacts& slice(const std::string& name, std::size_t layer) const { return facts_.at(name).slices.at(layer); }

  double layernorm_largest(const std::string& prefix, std::size_t l) const {
    return std::sqrt(static_cast<double>(width_ - 1)) * slice(prefix + "_gamma", l).largest +
           slice(prefix + "_beta", l).largest;
  }

  template <typename Body>
  void for_slices(const std::string& prefix, Body&& body) const {
    for (std::size_t l = 0; l < facts_.at(prefix + "_gamma").slices.size(); ++l) body(l);
  }

  const std::map<std::string, Facts>& facts_;
  std::int64_t width_;
};

void check_options(const VitOptions& options) {
  const VitDimensions& d = options.dimensions;
  for (auto [option, value] : {std::pair<const char*, std::int64_t>{"batch", options.batch},
                               {"image", d.image}, {"channels", d.channels}, {"patch", d.patch},
                               {"width", d.width}, {"hidden", d.hidden}, {"heads", d.heads},
                               {"layers", d.layers}})
    if (value < 1) throw_bad_input("workload", "{} {} must be >= 1", option, value);
  if (d.patch > d.image) throw_bad_input("workload", "patch {} is larger than image {}", d.patch, d.image);
  if (d.width % d.heads != 0) throw_bad_input("workload", "heads {} do not divide width {}", d.heads, d.width);
}

class VitBuilder {
 public:
  explicit VitBuilder(const VitOptions& options)
      : options_(options), d_(options.dimensions), fp8_(options.precision == Precision::Fp8),
        activation_(options.precision == Precision::Fp32 ? kF32 : kF16) {}

  Workload build() {
    const std::vector<Source> sources = sources_of(options_);
    Workload workload;
    for (const Source& source : sources) {
      // Checked before any data is drawn for it.
      check_type(fmt::format("{} '{}'", is_input(source) ? "input" : "parameter", source.name), "the tensor",
                 {source.shape, kF32});
      workload.data_rules.emplace(source.name, distribution_of(source));
    }
    if (fp8_) measure_parameters(sources);
    for (const Source& source : sources) {
      const TensorType type{source.shape, storage(source)};
      values_[source.name] = is_input(source) ? builder_.input(source.name, type) : builder_.parameter(source.name, type);
    }
    if (options_.part == VitPart::EncoderLayer) {
      std::map<std::string, ValueId> parameters;
      for (const LayerParameter& parameter : kLayerParameters) parameters[parameter.name] = value(parameter.name);
      builder_.output("y", encoder_layer(builder_, value("x"), parameters));
      workload.graph = builder_.finish();
      return workload;
    }
    ValueId x = embed();
    x = layers(x);
    x = builder_.layernorm("post_ln", x, value("post_gamma"), value("post_beta"), kLayerNormEpsilon);
    if (options_.head)
      builder_.output("embedding", head(x));
    else
      builder_.output("tokens", x);
    workload.graph = builder_.finish();
    return workload;
  }

 private:
  static bool is_input(const Source& source) { return source.role == Role::Image || source.role == Role::Tokens; }

  void measure_parameters(const std::vector<Source>& sources) {
    // One tensor at a time through one buffer: its memory is touched once
    // (hundreds of MB fresh per tensor would cost more in page faults than
    // the drawing). The inputs' data depends on the batch, and no scale
    // comes from it.
    std::int64_t largest = 0;
    for (const Source& source : sources)
      if (!is_input(source)) largest = std::max(largest, elements_of(source.shape));
    std::vector<float> buffer;
    host_allocation(static_cast<std::uint64_t>(largest) * sizeof(float), "the workload's largest parameter",
                    [&] { buffer.resize(static_cast<std::size_t>(largest)); });
    for (const Source& source : sources)
      if (!is_input(source)) facts_.emplace(source.name, measure(source, options_, buffer));
  }

  StorageType storage(const Source& source) const {
    if (fp8_ && !is_input(source)) return facts_.at(source.name).storage;
    return storage_of(source.role, options_.precision);
  }

  ValueId value(const std::string& name) const { return values_.at(name); }

  // At fp8, the GEMM operand `x` cast to F143 with scale `scale`.
  ValueId fp8_operand(GraphBuilder& b, const std::string& name, ValueId x, double bound) const {
    return fp8_ ? b.cast(name + "_f143", x, {ElementType::F143, bounded_fp8_scale(bound)}) : x;
  }

  // y = x W + bias, named NAME_gemm and NAME.
  ValueId linear(GraphBuilder& b, const std::string& name, ValueId x, ValueId w, ValueId bias) const {
    return b.add(name, b.gemm(name + "_gemm", x, w, activation_), bias);
  }

  float attention_scale() const { return 1.0f / std::sqrt(static_cast<float>(d_.width / d_.heads)); }

  ValueId embed() {
    ValueId patches = builder_.patchify("patches", value("image"), d_.patch);
    if (fp8_) patches = builder_.cast("patches_f143", patches, {ElementType::F143, kImageFp8Scale});
    ValueId embedded = linear(builder_, "patch_embed", patches, value("patch_W"), value("patch_b"));
    return builder_.add("embedded", embedded, value("position"));
  }

  ValueId layers(ValueId embedded) {
    GraphBuilder::RepeatOperands operands{.carried = {embedded}, .argument_names = {"x"}};
    for (const LayerParameter& parameter : kLayerParameters) {
      operands.sequence.push_back(value(parameter.name));
      operands.argument_names.push_back(parameter.name);
    }
    auto body = [&](GraphBuilder& b, const std::vector<ValueId>& args) {
      std::map<std::string, ValueId> parameters;
      for (std::size_t i = 0; i < std::size(kLayerParameters); ++i) parameters[kLayerParameters[i].name] = args[i + 1];
      return std::vector<ValueId>{encoder_layer(b, args[0], parameters)};
    };
    return builder_.repeat("layers", d_.layers, operands, body).front();
  }

  // One encoder layer on `b`, with parameters `p` by name; returns its result.
  ValueId encoder_layer(GraphBuilder& b, ValueId x, std::map<std::string, ValueId> p) const {
    CastBounds bounds(facts_, d_.width);
    ValueId ln1 = b.layernorm("ln1", x, p["ln1_gamma"], p["ln1_beta"], kLayerNormEpsilon);
    ln1 = fp8_operand(b, "ln1", ln1, fp8_ ? bounds.layernorm("ln1") : 0);
    const ValueId q = linear(b, "q", ln1, p["Wq"], p["bq"]);
    const ValueId k = linear(b, "k", ln1, p["Wk"], p["bk"]);
    const ValueId v = linear(b, "v", ln1, p["Wv"], p["bv"]);
    ValueId attention = b.attention("attention", q, k, v, attention_scale(), std::nullopt, d_.heads);
    attention = fp8_operand(b, "attention", attention, fp8_ ? bounds.gemm_of_layernorm("ln1", "Wv", "bv") : 0);
    const ValueId residual1 = b.add("residual1", linear(b, "o", attention, p["Wo"], p["bo"]), x);
    ValueId ln2 = b.layernorm("ln2", residual1, p["ln2_gamma"], p["ln2_beta"], kLayerNormEpsilon);
    ln2 = fp8_operand(b, "ln2", ln2, fp8_ ? bounds.layernorm("ln2") : 0);
    const double gelu_bound = fp8_ ? std::max(bounds.gemm_of_layernorm("ln2", "W1", "b1"), kGeluNegativeBound) : 0;
    const ValueId mlp = mlp_block(b, "", ln2, p["W1"], p["b1"], p["W2"], p["b2"], gelu_bound);
    return b.add("residual2", mlp, residual1);
  }

  // gelu_tanh(x W1 + b1) W2 + b2 with siglip-mlp's op names under `prefix`.
  ValueId mlp_block(GraphBuilder& b, const std::string& prefix, ValueId x, ValueId w1, ValueId b1, ValueId w2,
                    ValueId b2, double gelu_bound) const {
    ValueId h = b.add(prefix + "bias1", b.gemm(prefix + "gemm1", x, w1, activation_), b1);
    h = fp8_operand(b, prefix + "gelu", b.gelu(prefix + "gelu", h, GeluApproximation::Tanh), gelu_bound);
    return b.add(prefix + "bias2", b.gemm(prefix + "gemm2", h, w2, activation_), b2);
  }

  // MAP pooling: the probe attends over the tokens; y + MLP(LN(y)).
  ValueId head(ValueId tokens) {
    CastBounds bounds(facts_, d_.width);
    GraphBuilder& b = builder_;
    tokens = fp8_operand(b, "post_ln", tokens, fp8_ ? bounds.layernorm("post") : 0);
    const ValueId q = linear(b, "head_q", value("probe"), value("head_Wq"), value("head_bq"));
    const ValueId k = linear(b, "head_k", tokens, value("head_Wk"), value("head_bk"));
    const ValueId v = linear(b, "head_v", tokens, value("head_Wv"), value("head_bv"));
    ValueId pooled = b.attention("head_attention", q, k, v, attention_scale(), std::nullopt, d_.heads);
    pooled = fp8_operand(b, "head_attention", pooled, fp8_ ? bounds.gemm_of_layernorm("post", "head_Wv", "head_bv") : 0);
    const ValueId y = linear(b, "head_o", pooled, value("head_Wo"), value("head_bo"));
    ValueId ln = b.layernorm("head_ln", y, value("head_ln_gamma"), value("head_ln_beta"), kLayerNormEpsilon);
    ln = fp8_operand(b, "head_ln", ln, fp8_ ? bounds.layernorm("head_ln") : 0);
    const double gelu_bound =
        fp8_ ? std::max(bounds.gemm_of_layernorm("head_ln", "head_W1", "head_b1"), kGeluNegativeBound) : 0;
    const ValueId mlp = mlp_block(b, "head_", ln, value("head_W1"), value("head_b1"), value("head_W2"),
                                  value("head_b2"), gelu_bound);
    const ValueId pooled_out = b.add("head_residual", mlp, y);
    return b.reshape("embedding", pooled_out, {options_.batch, d_.width});
  }

  const VitOptions& options_;
  const VitDimensions& d_;
  const bool fp8_;
  const StorageType activation_;
  GraphBuilder builder_;
  std::map<std::string, ValueId> values_;
  std::map<std::string, Facts> facts_;
};

}  // namespace

int bounded_fp8_scale(double bound) {
  const std::vector<float> with_margin{static_cast<float>(bound * 1.125)};
  return automatic_fp8_scale(with_margin);
}

Workload vit_workload(const VitOptions& options) {
  check_options(options);
  return VitBuilder(options).build();
}

}  // namespace tilec::graph
