#include "onnx/fuse_patterns.h"

#include "graph/layout.h"
#include "onnx/node_importer.h"

#include <cmath>
#include <functional>
#include <numeric>
#include <set>

namespace tilec::onnx_import {

namespace {

using graph::OpKind;

class Fuser {
 public:
  explicit Fuser(StagedGraph& graph) : graph_(graph) {}

  void run() {
    // Each rewrite adds ops at the end; walk the ops that were there.
    const std::size_t count = graph_.ops().size();
    for (std::size_t i = 0; i < count; ++i) {
      if (graph_.ops()[i].dead) continue;
      const StagedId result = graph_.ops()[i].op.results[0];
      if (try_layout_chain(result) || try_attention(result) || try_layernorm(result) || try_gelu(result)) {
        graph_.remove_dead_ops();
      }
    }
  }

 private:
  // The live op producing `value` if it is of `kind`; records it as matched.
  const graph::Op* op(StagedId value, OpKind kind) {
    const StagedOp* producer = graph_.producer(value);
    if (!producer || producer->op.kind != kind) return nullptr;
    matched_.insert(value);
    return &producer->op;
  }

  std::optional<double> scalar(StagedId value) const {
    const std::optional<HostTensor>& constant = graph_.constant(value);
    if (!constant) return std::nullopt;
    return constant->single_value();
  }

  bool near(StagedId value, double expected) const {
    std::optional<double> v = scalar(value);
    // Loose enough for float16 constants (11 significant bits).
    return v && std::abs(*v - expected) <= 1e-3 * std::abs(expected);
  }

  // Every matched value but `root` is read only by matched ops.
  bool self_contained(StagedId root) const {
    for (StagedId value : matched_) {
      if (value == root) continue;
      for (const auto& [name, output] : graph_.outputs())
        if (output == value) return false;
      for (const StagedOp& user : graph_.ops()) {
        if (user.dead) continue;
        const bool reads = std::find(user.op.operands.begin(), user.op.operands.end(), value) != user.op.operands.end();
        if (reads && !matched_.contains(user.op.results[0])) return false;
      }
    }
    return true;
  }

  const std::string& node_of(StagedId value) const { return graph_.producer(value)->node; }

  void replace(StagedId root, graph::Op op, std::vector<StagedId> operands) {
    op.operands = std::move(operands);
    graph_.replace_op(root, std::move(op));
  }

  // x * 0.5 * (1 + erf(x / sqrt 2)) or its tanh form, with the three factors in any grouping.
  bool try_gelu(StagedId root) {
    matched_.clear();
    const graph::Op* outer = op(root, OpKind::Mul);
    if (!outer) return false;
    std::vector<StagedId> factors;
    for (StagedId operand : outer->operands) {
      const graph::Op* inner = op(operand, OpKind::Mul);
      if (inner) factors.insert(factors.end(), inner->operands.begin(), inner->operands.end());
      else factors.push_back(operand);
    }
    if (factors.size() != 3) return false;
    for (std::size_t half = 0; half < 3; ++half) {
      if (!near(factors[half], 0.5)) continue;
      for (std::size_t gate = 0; gate < 3; ++gate) {
        if (gate == half) continue;
        const StagedId x = factors[3 - half - gate];
        std::optional<graph::GeluApproximation> form = gelu_gate(factors[gate], x);
        if (!form || !self_contained(root)) continue;
        graph::Op gelu{.kind = OpKind::Gelu};
        gelu.approximation = *form;
        replace(root, std::move(gelu), {x});
        return true;
      }
    }
    return false;
  }

  // 1 + erf(x / sqrt 2) or 1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)).
  std::optional<graph::GeluApproximation> gelu_gate(StagedId gate, StagedId x) {
    const graph::Op* plus = op(gate, OpKind::Add);
    if (!plus) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      if (!near(plus->operands[side], 1.0)) continue;
      const StagedId f = plus->operands[1 - side];
      if (const graph::Op* erf = op(f, OpKind::Erf)) {
        const StagedId t = erf->operands[0];
        if (const graph::Op* div = op(t, OpKind::Div); div && div->operands[0] == x && near(div->operands[1], std::sqrt(2.0)))
          return graph::GeluApproximation::Erf;
        if (const graph::Op* mul = op(t, OpKind::Mul); mul && has_pair(*mul, x, 1.0 / std::sqrt(2.0)))
          return graph::GeluApproximation::Erf;
      }
      if (const graph::Op* tanh = op(f, OpKind::Tanh)) {
        const graph::Op* scaled = op(tanh->operands[0], OpKind::Mul);
        if (!scaled) continue;
        for (int k = 0; k < 2; ++k) {
          if (!near(scaled->operands[k], std::sqrt(2.0 / M_PI))) continue;
          const graph::Op* sum = op(scaled->operands[1 - k], OpKind::Add);
          if (!sum) continue;
          for (int s = 0; s < 2; ++s)
            if (sum->operands[s] == x && is_cubic_term(sum->operands[1 - s], x)) return graph::GeluApproximation::Tanh;
        }
      }
    }
    return std::nullopt;
  }

  bool has_pair(const graph::Op& mul, StagedId x, double constant) const {
    return (mul.operands[0] == x && near(mul.operands[1], constant)) || (mul.operands[1] == x && near(mul.operands[0], constant));
  }

  // 0.044715 x^3, as Pow(x, 3) or x * x * x.
  bool is_cubic_term(StagedId value, StagedId x) {
    const graph::Op* mul = op(value, OpKind::Mul);
    if (!mul) return false;
    for (int k = 0; k < 2; ++k) {
      if (!near(mul->operands[k], 0.044715)) continue;
      const StagedId cube = mul->operands[1 - k];
      if (const graph::Op* pow = op(cube, OpKind::Pow); pow && pow->operands[0] == x && near(pow->operands[1], 3.0))
        return true;
      if (const graph::Op* outer = op(cube, OpKind::Mul)) {
        for (int j = 0; j < 2; ++j) {
          const graph::Op* square = op(outer->operands[j], OpKind::Mul);
          if (square && outer->operands[1 - j] == x && square->operands[0] == x && square->operands[1] == x) return true;
        }
      }
    }
    return false;
  }

  bool is_last_axis_mean(const graph::Op* mean, StagedId x) const {
    return mean && mean->operands[0] == x && mean->keep_dims &&
           mean->axes == std::vector<std::int64_t>{static_cast<std::int64_t>(graph_.type(x).shape.size()) - 1};
  }

  // (x - mean) / sqrt(var + eps) * gamma + beta over the last axis.
  bool try_layernorm(StagedId root) {
    matched_.clear();
    const graph::Op* add_beta = op(root, OpKind::Add);
    if (!add_beta) return false;
    for (int b = 0; b < 2; ++b) {
      matched_ = {root};
      const StagedId beta = add_beta->operands[b];
      const graph::Op* mul_gamma = op(add_beta->operands[1 - b], OpKind::Mul);
      if (!mul_gamma) continue;
      for (int g = 0; g < 2; ++g) {
        const StagedId gamma = mul_gamma->operands[g];
        const graph::Op* div = op(mul_gamma->operands[1 - g], OpKind::Div);
        if (!div) continue;
        const StagedId centred = div->operands[0];
        const graph::Op* sub = op(centred, OpKind::Sub);
        if (!sub) continue;
        const StagedId x = sub->operands[0];
        if (!is_last_axis_mean(op(sub->operands[1], OpKind::ReduceMean), x)) continue;
        const graph::Op* sqrt = op(div->operands[1], OpKind::Sqrt);
        const graph::Op* shifted = sqrt ? op(sqrt->operands[0], OpKind::Add) : nullptr;
        if (!shifted) continue;
        for (int e = 0; e < 2; ++e) {
          std::optional<double> epsilon = scalar(shifted->operands[e]);
          const graph::Op* variance = op(shifted->operands[1 - e], OpKind::ReduceMean);
          if (!epsilon || !is_last_axis_mean(variance, variance ? variance->operands[0] : -1)) continue;
          const graph::Op* pow = op(variance->operands[0], OpKind::Pow);
          const graph::Op* square = pow ? nullptr : op(variance->operands[0], OpKind::Mul);
          const bool squares = (pow && pow->operands[0] == centred && near(pow->operands[1], 2.0)) ||
                               (square && square->operands[0] == centred && square->operands[1] == centred);
          const std::int64_t width = graph_.type(x).shape.back();
          const graph::Shape row{width};
          if (!squares || graph_.type(gamma).shape != row || graph_.type(beta).shape != row || !self_contained(root))
            continue;
          graph::Op layernorm{.kind = OpKind::LayerNorm};
          layernorm.epsilon = static_cast<float>(*epsilon);
          replace(root, std::move(layernorm), {x, gamma, beta});
          return true;
        }
      }
    }
    return false;
  }

  // Reshape [B, S, H, Dh] then Transpose into heads: the [B, S, H Dh] value
  // before, and H; `keys` wants [0, 2, 3, 1] (or heads then [0, 1, 3, 2]).
  std::optional<std::pair<StagedId, std::int64_t>> heads_of(StagedId value, bool keys) {
    const graph::Op* transpose = op(value, OpKind::Transpose);
    if (!transpose) return std::nullopt;
    using Axes = std::vector<std::int64_t>;
    if (keys && transpose->permutation == Axes{0, 1, 3, 2}) return heads_of(transpose->operands[0], false);
    if (transpose->permutation != (keys ? Axes{0, 2, 3, 1} : Axes{0, 2, 1, 3})) return std::nullopt;
    const graph::Op* reshape = op(transpose->operands[0], OpKind::Reshape);
    if (!reshape) return std::nullopt;
    const StagedId source = reshape->operands[0];
    const graph::Shape& split = graph_.type(transpose->operands[0]).shape;
    const graph::Shape& whole = graph_.type(source).shape;
    if (whole.size() != 3 || split.size() != 4 || split[0] != whole[0] || split[1] != whole[1]) return std::nullopt;
    return std::pair{source, split[2]};
  }

  bool try_attention(StagedId root) {
    matched_.clear();
    const graph::Op* merge = op(root, OpKind::Reshape);
    const graph::Op* back = merge ? op(merge->operands[0], OpKind::Transpose) : nullptr;
    if (!back || back->permutation != std::vector<std::int64_t>{0, 2, 1, 3}) return false;
    const graph::Op* output = op(back->operands[0], OpKind::Gemm);
    if (!output || output->transpose_a || output->transpose_b) return false;
    const graph::Op* softmax = op(output->operands[0], OpKind::Softmax);
    if (!softmax || (softmax->axis != -1 && softmax->axis != 3)) return false;
    StagedId scores = softmax->operands[0];
    double scale = 1.0;
    if (const graph::Op* mul = op(scores, OpKind::Mul); mul && scalar(mul->operands[1])) {
      scale = *scalar(mul->operands[1]);
      scores = mul->operands[0];
    } else if (const graph::Op* div = op(scores, OpKind::Div); div && scalar(div->operands[1])) {
      scale = 1.0 / *scalar(div->operands[1]);
      scores = div->operands[0];
    }
    const graph::Op* product = op(scores, OpKind::Gemm);
    if (!product || product->transpose_a || product->transpose_b) return false;
    auto q = heads_of(product->operands[0], false);
    auto k = heads_of(product->operands[1], true);
    auto v = heads_of(output->operands[1], false);
    if (!q || !k || !v || q->second != k->second || q->second != v->second) return false;
    if (graph_.type(root).shape != graph_.type(q->first).shape || !self_contained(root)) return false;
    graph::Op attention{.kind = OpKind::Attention};
    attention.attention_scale = static_cast<float>(scale);
    attention.attention_heads = q->second;
    replace(root, std::move(attention), {q->first, k->first, v->first});
    return true;
  }

  // A chain of reshapes and transposes ending at `root` that moves no
  // element: found by running it on the element indices.
  bool try_layout_chain(StagedId root) {
    matched_.clear();
    std::vector<const graph::Op*> chain;
    StagedId source = root;
    while (true) {
      const StagedOp* producer = graph_.producer(source);
      if (!producer || (producer->op.kind != OpKind::Reshape && producer->op.kind != OpKind::Transpose)) break;
      matched_.insert(source);
      chain.push_back(&producer->op);
      source = producer->op.operands[0];
    }
    const graph::TensorType& type = graph_.type(source);
    const std::int64_t count = graph::layout::element_count(type.shape);
    bool moves = std::any_of(chain.begin(), chain.end(), [](const graph::Op* o) { return o->kind == OpKind::Transpose; });
    if (chain.size() < 2 || !moves || count > (1 << 22) || graph_.type(root).storage != type.storage) return false;
    HostTensor indices{1, type.shape, std::vector<double>(static_cast<std::size_t>(count))};
    std::iota(indices.values.begin(), indices.values.end(), 0.0);
    for (auto step = chain.rbegin(); step != chain.rend(); ++step) {
      const graph::Shape result = graph_.type((*step)->results[0]).shape;
      indices = *fold(**step, {&indices}, result);
    }
    for (std::int64_t i = 0; i < count; ++i)
      if (indices.values[static_cast<std::size_t>(i)] != static_cast<double>(i)) return false;
    if (!self_contained(root)) return false;
    graph::Op reshape{.kind = OpKind::Reshape};
    reshape.target_shape = graph_.type(root).shape;
    replace(root, std::move(reshape), {source});
    return true;
  }

  StagedGraph& graph_;
  std::set<StagedId> matched_;
};

}  // namespace

void fuse_patterns(StagedGraph& graph) { Fuser(graph).run(); }

}  // namespace tilec::onnx_import
