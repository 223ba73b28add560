#include "graph/graph.h"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace tilec::graph {

namespace {
constexpr std::array<std::pair<OpKind, std::string_view>, 29> kOpNames{{
    {OpKind::Input, "input"},
    {OpKind::Parameter, "parameter"},
    {OpKind::Gemm, "gemm"},
    {OpKind::Gelu, "gelu"},
    {OpKind::Add, "add"},
    {OpKind::Cast, "cast"},
    {OpKind::LayerNorm, "layernorm"},
    {OpKind::Softmax, "softmax"},
    {OpKind::Attention, "attention"},
    {OpKind::Repeat, "repeat"},
    {OpKind::Patchify, "patchify"},
    {OpKind::Reshape, "reshape"},
    {OpKind::Sub, "sub"},
    {OpKind::Mul, "mul"},
    {OpKind::Div, "div"},
    {OpKind::Pow, "pow"},
    {OpKind::Sqrt, "sqrt"},
    {OpKind::Erf, "erf"},
    {OpKind::Tanh, "tanh"},
    {OpKind::Relu, "relu"},
    {OpKind::Sigmoid, "sigmoid"},
    {OpKind::Exp, "exp"},
    {OpKind::ReduceMean, "reduce_mean"},
    {OpKind::ReduceSum, "reduce_sum"},
    {OpKind::ReduceMax, "reduce_max"},
    {OpKind::Transpose, "transpose"},
    {OpKind::Concat, "concat"},
    {OpKind::Slice, "slice"},
    {OpKind::Gather, "gather"},
}};

std::vector<const Op*> ops_of_kind(const Graph& graph, OpKind kind) {
  std::vector<const Op*> found;
  for (const Op& op : graph.ops)
    if (op.kind == kind) found.push_back(&op);
  return found;
}
}  // namespace

std::string type_text(const TensorType& type) {
  std::string text(element_type_name(type.storage.element));
  if (is_fp8(type.storage.element)) text += fmt::format("(s={})", type.storage.scale);
  return text + fmt::format("[{}]", fmt::join(type.shape, ","));
}

std::string_view op_kind_name(OpKind kind) {
  for (const auto& [candidate, name] : kOpNames)
    if (candidate == kind) return name;
  return "?";
}

std::optional<OpKind> parse_op_kind(std::string_view name) {
  for (const auto& [kind, candidate] : kOpNames)
    if (candidate == name) return kind;
  return std::nullopt;
}

bool is_binary_elementwise(OpKind kind) {
  return kind == OpKind::Add || kind == OpKind::Sub || kind == OpKind::Mul || kind == OpKind::Div ||
         kind == OpKind::Pow;
}

bool is_unary_elementwise(OpKind kind) {
  return kind == OpKind::Sqrt || kind == OpKind::Erf || kind == OpKind::Tanh || kind == OpKind::Relu ||
         kind == OpKind::Sigmoid || kind == OpKind::Exp;
}

bool is_reduction(OpKind kind) {
  return kind == OpKind::ReduceMean || kind == OpKind::ReduceSum || kind == OpKind::ReduceMax;
}

const Op* Graph::producer(ValueId id) const {
  const std::int32_t index = value(id).producer;
  if (index < 0) return nullptr;
  return &ops.at(static_cast<std::size_t>(index));
}

std::vector<const Op*> Graph::inputs() const { return ops_of_kind(*this, OpKind::Input); }

std::vector<const Op*> Graph::parameters() const { return ops_of_kind(*this, OpKind::Parameter); }

}  // namespace tilec::graph
