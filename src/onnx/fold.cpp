// Computing ops of constants at import time, on the doubles HostTensor
// holds: integers keep integer semantics (division truncates), floats are
// computed in double and rounded to their type by the caller.
#include "graph/layout.h"
#include "graph/shape_inference.h"
#include "onnx/node_importer.h"

#include <cmath>

namespace tilec::onnx_import {

namespace {

using graph::OpKind;

// Index into an operand of `shape` broadcast to `result` (NumPy rules).
std::vector<std::int64_t> broadcast_strides(const graph::Shape& shape, const graph::Shape& result) {
  std::vector<std::int64_t> own = graph::layout::strides_of(shape);
  std::vector<std::int64_t> strides(result.size(), 0);
  const std::size_t offset = result.size() - shape.size();
  for (std::size_t axis = 0; axis < shape.size(); ++axis)
    strides[offset + axis] = shape[axis] == 1 ? 0 : own[axis];
  return strides;
}

double combine(OpKind kind, double a, double b, bool integer) {
  switch (kind) {
    case OpKind::Add: return a + b;
    case OpKind::Sub: return a - b;
    case OpKind::Mul: return a * b;
    case OpKind::Div: return integer ? (b == 0 ? 0 : std::trunc(a / b)) : a / b;
    default: return std::pow(a, b);
  }
}

double apply(OpKind kind, double v) {
  switch (kind) {
    case OpKind::Sqrt: return std::sqrt(v);
    case OpKind::Erf: return std::erf(v);
    case OpKind::Tanh: return std::tanh(v);
    case OpKind::Relu: return v > 0 ? v : 0;
    case OpKind::Sigmoid: return 1 / (1 + std::exp(-v));
    default: return std::exp(v);
  }
}

}  // namespace

std::optional<HostTensor> fold(const graph::Op& op, const std::vector<const HostTensor*>& operands,
                               const graph::Shape& result) {
  const HostTensor& x = *operands.front();
  HostTensor out{x.data_type, result, {}};
  if (graph::is_binary_elementwise(op.kind)) {
    const HostTensor& y = *operands[1];
    const bool integer = !x.is_float() && !y.is_float();
    if (!integer) out.data_type = x.is_float() ? x.data_type : y.data_type;
    std::vector<double> a, b;
    graph::layout::for_each_offset(result, broadcast_strides(x.shape, result), 0,
                                   [&](std::int64_t i) { a.push_back(x.values[static_cast<std::size_t>(i)]); });
    graph::layout::for_each_offset(result, broadcast_strides(y.shape, result), 0,
                                   [&](std::int64_t i) { b.push_back(y.values[static_cast<std::size_t>(i)]); });
    for (std::size_t i = 0; i < a.size(); ++i) out.values.push_back(combine(op.kind, a[i], b[i], integer));
    return out;
  }
  if (graph::is_unary_elementwise(op.kind)) {
    for (double v : x.values) out.values.push_back(apply(op.kind, v));
    return out;
  }
  if (graph::is_reduction(op.kind)) {
    const std::vector<std::int64_t> targets = graph::layout::reduction_targets(x.shape, op.axes);
    const bool is_max = op.kind == OpKind::ReduceMax;
    out.values.assign(static_cast<std::size_t>(graph::layout::element_count(result)), is_max ? -INFINITY : 0.0);
    for (std::size_t i = 0; i < x.values.size(); ++i) {
      double& target = out.values[static_cast<std::size_t>(targets[i])];
      target = is_max ? std::max(target, x.values[i]) : target + x.values[i];
    }
    if (op.kind == OpKind::ReduceMean)
      for (double& v : out.values) v /= static_cast<double>(x.values.size() / out.values.size());
    return out;
  }
  const std::span<const double> xs(x.values);
  auto axis_of = [&](int axis) {
    return static_cast<std::size_t>(axis < 0 ? axis + static_cast<int>(x.shape.size()) : axis);
  };
  switch (op.kind) {
    case OpKind::Reshape:
    case OpKind::Cast: out.values = x.values; return out;
    case OpKind::Transpose: out.values = graph::layout::transpose(xs, x.shape, op.permutation); return out;
    case OpKind::Slice: out.values = graph::layout::slice(xs, x.shape, op, result); return out;
    case OpKind::Gather: out.values = graph::layout::gather(xs, x.shape, axis_of(op.axis), op.indices); return out;
    case OpKind::Concat: {
      std::vector<std::span<const double>> parts;
      std::vector<graph::Shape> shapes;
      for (const HostTensor* operand : operands) {
        parts.emplace_back(operand->values);
        shapes.push_back(operand->shape);
      }
      out.values = graph::layout::concat(parts, shapes, axis_of(op.axis));
      return out;
    }
    default: return std::nullopt;
  }
}

}  // namespace tilec::onnx_import
