// Elementwise nodes, reductions, casts, constants and identities.
#include "onnx/node_importer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tilec::onnx_import {

namespace {

using graph::OpKind;

// A constant [1, ..., 1, N] beside a value of at least its rank broadcasts
// the same as [N]: the form the compiler takes for a bias.
StagedId drop_leading_ones(NodeImporter& n, StagedId constant, StagedId other, const std::string& suffix) {
  graph::Shape shape = n.shape_of(constant);
  if (!n.graph().constant(constant) || shape.size() < 2 || n.shape_of(other).size() < shape.size()) return constant;
  while (shape.size() > 1 && shape.front() == 1) shape.erase(shape.begin());
  return n.reshape(constant, shape, suffix);
}

void binary(NodeImporter& n, OpKind kind) {
  StagedId a = n.input(0), b = n.input(1);
  a = drop_leading_ones(n, a, b, ".a");
  b = drop_leading_ones(n, b, a, ".b");
  const bool folded = n.graph().constant(a) && n.graph().constant(b);
  n.define(0, n.stage(graph::Op{.kind = kind}, {a, b}, folded ? std::nullopt : std::optional(n.output_storage())));
}

void unary(NodeImporter& n, OpKind kind) {
  n.define(0, n.stage(graph::Op{.kind = kind}, {n.input(0)}));
}

// ONNX's axes (attribute, or input 1 from ReduceSum-13 and every reduction
// at opset 18) over a value of `rank`; none = every axis.
void reduce(NodeImporter& n, OpKind kind) {
  const StagedId x = n.input(0);
  const std::size_t rank = n.shape_of(x).size();
  std::vector<std::int64_t> axes = n.has_input(1) ? n.integer_input(1, "axes") : n.attribute_ints("axes");
  if (axes.empty() && n.attribute_int("noop_with_empty_axes", 0) == 1) {
    n.define(0, x);
    return;
  }
  if (axes.empty())
    for (std::size_t axis = 0; axis < rank; ++axis) axes.push_back(static_cast<std::int64_t>(axis));
  for (std::int64_t& axis : axes) axis = static_cast<std::int64_t>(n.axis(axis, rank, "axis"));
  std::sort(axes.begin(), axes.end());
  if (rank == 0) {
    n.define(0, x);
    return;
  }
  graph::Op op{.kind = kind};
  op.axes = axes;
  op.keep_dims = n.attribute_int("keepdims", 1) != 0;
  n.define(0, n.stage(std::move(op), {x}));
}

void cast(NodeImporter& n) {
  const StagedId x = n.input(0);
  const auto to = static_cast<std::int32_t>(n.attribute_int("to", 1));
  if (const HostTensor* constant = n.constant_input(0)) {
    HostTensor converted = *constant;
    converted.data_type = to;
    for (double& v : converted.values)
      v = to == 1 ? static_cast<float>(v) : is_float_type(to) ? v : std::trunc(v);
    const StorageType storage = storage_of(to).value_or(StorageType{ElementType::F32, 0});
    n.define(0, n.constant(std::move(converted), storage, ""));
    return;
  }
  const std::optional<StorageType> storage = storage_of(to);
  if (!storage) n.unsupported(fmt::format("it casts a value to {}; tilec casts between float and float16", data_type_name(to)));
  if (n.graph().type(x).storage == *storage) {
    n.define(0, x);
    return;
  }
  n.define(0, n.stage(graph::Op{.kind = OpKind::Cast}, {x}, *storage));
}

HostTensor attribute_tensor(const NodeImporter& n) {
  if (const onnx::AttributeProto* value = n.attribute("value")) return read_tensor_proto(value->t(), n.where());
  if (const onnx::AttributeProto* value = n.attribute("value_float")) return float_tensor({}, {value->f()});
  if (const onnx::AttributeProto* value = n.attribute("value_floats")) {
    std::vector<double> values(value->floats().begin(), value->floats().end());
    return float_tensor({static_cast<std::int64_t>(values.size())}, values);
  }
  if (const onnx::AttributeProto* value = n.attribute("value_int")) return integer_tensor({}, {value->i()});
  if (const onnx::AttributeProto* value = n.attribute("value_ints")) {
    std::vector<std::int64_t> values(value->ints().begin(), value->ints().end());
    return integer_tensor({static_cast<std::int64_t>(values.size())}, values);
  }
  n.unsupported("it holds its value in an attribute tilec does not read (sparse or string)");
}

void constant(NodeImporter& n) {
  HostTensor tensor = attribute_tensor(n);
  const StorageType storage = storage_of(tensor.data_type).value_or(StorageType{ElementType::F32, 0});
  n.define(0, n.constant(std::move(tensor), storage, ""));
}

}  // namespace

void add_math_handlers(std::map<std::string, NodeHandler>& handlers) {
  const std::pair<const char*, OpKind> binaries[] = {
      {"Add", OpKind::Add}, {"Sub", OpKind::Sub}, {"Mul", OpKind::Mul}, {"Div", OpKind::Div}, {"Pow", OpKind::Pow}};
  for (const auto& [name, kind] : binaries) handlers[name] = [kind = kind](NodeImporter& n) { binary(n, kind); };
  const std::pair<const char*, OpKind> unaries[] = {{"Sqrt", OpKind::Sqrt}, {"Erf", OpKind::Erf},
                                                    {"Tanh", OpKind::Tanh}, {"Relu", OpKind::Relu},
                                                    {"Sigmoid", OpKind::Sigmoid}, {"Exp", OpKind::Exp}};
  for (const auto& [name, kind] : unaries) handlers[name] = [kind = kind](NodeImporter& n) { unary(n, kind); };
  const std::pair<const char*, OpKind> reductions[] = {
      {"ReduceMean", OpKind::ReduceMean}, {"ReduceSum", OpKind::ReduceSum}, {"ReduceMax", OpKind::ReduceMax}};
  for (const auto& [name, kind] : reductions) handlers[name] = [kind = kind](NodeImporter& n) { reduce(n, kind); };
  // -x as x * -1 and 1 / x as a division: exact, and no new op kinds.
  handlers["Neg"] = [](NodeImporter& n) {
    const StagedId x = n.input(0);
    if (const HostTensor* constant = n.constant_input(0)) {
      HostTensor negated = *constant;
      for (double& v : negated.values) v = -v;
      n.define(0, n.constant(std::move(negated), n.graph().type(x).storage, ""));
      return;
    }
    n.define(0, n.stage(graph::Op{.kind = OpKind::Mul}, {x, n.scalar(-1, n.graph().type(x).storage, ".minus_one")}));
  };
  handlers["Reciprocal"] = [](NodeImporter& n) {
    const StagedId x = n.input(0);
    n.define(0, n.stage(graph::Op{.kind = OpKind::Div}, {n.scalar(1, n.graph().type(x).storage, ".one"), x},
                        n.graph().type(x).storage));
  };
  handlers["Cast"] = cast;
  handlers["Constant"] = constant;
  handlers["Identity"] = [](NodeImporter& n) { n.define(0, n.input(0)); };
}

}  // namespace tilec::onnx_import
