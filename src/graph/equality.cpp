#include "graph/equality.h"

#include <fmt/format.h>

namespace tilec::graph {

namespace {

std::string op_difference(const Op& a, const Op& b) {
  if (a.kind != b.kind) return "kinds differ";
  if (a.name != b.name) return fmt::format("names differ ('{}' and '{}')", a.name, b.name);
  if (a.operands != b.operands) return "operands differ";
  if (a.results != b.results) return "results differ";
  if (a.transpose_a != b.transpose_a || a.transpose_b != b.transpose_b) return "transposes differ";
  if (a.approximation != b.approximation) return "approximations differ";
  if (a.epsilon != b.epsilon) return "epsilons differ";
  if (a.axis != b.axis) return "axes differ";
  if (a.attention_scale != b.attention_scale) return "attention scales differ";
  if (a.attention_heads != b.attention_heads) return "attention heads differ";
  if (a.patch != b.patch) return "patch sizes differ";
  if (a.target_shape != b.target_shape) return "target shapes differ";
  if (a.axes != b.axes || a.keep_dims != b.keep_dims) return "reduced axes differ";
  if (a.permutation != b.permutation) return "permutations differ";
  if (a.starts != b.starts || a.ends != b.ends || a.steps != b.steps) return "slices differ";
  if (a.indices != b.indices || a.indices_shape != b.indices_shape) return "gather indices differ";
  if (a.count != b.count) return "counts differ";
  if (a.signature.carried != b.signature.carried || a.signature.sequence != b.signature.sequence ||
      a.signature.invariant != b.signature.invariant)
    return "repeat signatures differ";
  if (!a.body != !b.body) return "one has a body, the other not";
  if (a.body) {
    std::string body = first_difference(*a.body, *b.body);
    if (!body.empty()) return "body: " + body;
  }
  return "";
}

}  // namespace

std::string first_difference(const Graph& a, const Graph& b) {
  if (a.ops.size() != b.ops.size())
    return fmt::format("{} ops and {} ops", a.ops.size(), b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    std::string difference = op_difference(a.ops[i], b.ops[i]);
    if (!difference.empty()) return fmt::format("op {} '{}': {}", i, a.ops[i].name, difference);
  }
  if (a.values.size() != b.values.size())
    return fmt::format("{} values and {} values", a.values.size(), b.values.size());
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    const Value& va = a.values[i];
    const Value& vb = b.values[i];
    if (va.type != vb.type || va.name != vb.name || va.producer != vb.producer ||
        va.result_index != vb.result_index)
      return fmt::format("value {} differs: '{}' {} and '{}' {}", i, va.name, type_text(va.type),
                         vb.name, type_text(vb.type));
  }
  if (a.arguments != b.arguments) return "arguments differ";
  if (a.outputs != b.outputs) return "outputs differ";
  return "";
}

}  // namespace tilec::graph
