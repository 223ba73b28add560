#include "graph/builder.h"

#include "graph/shape_inference.h"
#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>

namespace tilec::graph {

namespace {
bool is_name_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

std::string op_place(const std::string& name) { return fmt::format("op '{}'", name); }

Op make_op(OpKind kind, const std::string& name, std::vector<ValueId> operands) {
  Op op;
  op.kind = kind;
  op.name = name;
  op.operands = std::move(operands);
  return op;
}
}  // namespace

bool is_valid_name(std::string_view name) {
  if (name.empty() || name.front() == '-' || name.front() == '.') return false;
  for (char c : name)
    if (!is_name_character(c)) return false;
  return true;
}

void GraphBuilder::claim_op_name(const std::string& name) {
  if (!is_valid_name(name))
    throw_bad_input(op_place(name),
                    "names are letters, digits, '_', '-' and '.', not starting with '-' or '.'");
  if (op_names_.contains(name) || value_names_.contains(name))
    throw_bad_input(op_place(name), "the name is already used by another op or value");
  op_names_.insert(name);
}

void GraphBuilder::check_operand(const std::string& op_name, ValueId id) const {
  TILEC_CHECK(id >= 0 && static_cast<std::size_t>(id) < graph_.values.size(),
              "op '{}': operand id {} is not a value of this graph", op_name, id);
}

ValueId GraphBuilder::add_source(OpKind kind, const std::string& name, const TensorType& type) {
  const std::string where = fmt::format("{} '{}'", op_kind_name(kind), name);
  if (is_body_)
    throw_bad_input(where, "a repeat body has no {}s: pass values in as invariant operands",
                    op_kind_name(kind));
  for (const Op& op : graph_.ops)
    if (op.kind != OpKind::Input && (op.kind != OpKind::Parameter || kind == OpKind::Input))
      throw_bad_input(where, "declared after {} '{}': declare inputs, then parameters, then ops",
                      op_kind_name(op.kind), op.name);
  check_type(where, "the tensor", type);
  return append(make_op(kind, name, {}), {type}).front();
}

ValueId GraphBuilder::input(const std::string& name, const TensorType& type) {
  return add_source(OpKind::Input, name, type);
}

ValueId GraphBuilder::parameter(const std::string& name, const TensorType& type) {
  return add_source(OpKind::Parameter, name, type);
}

std::vector<ValueId> GraphBuilder::add_op(Op op, std::vector<StorageType> result_storage) {
  std::vector<TensorType> operand_types;
  for (ValueId id : op.operands) {
    check_operand(op.name, id);
    operand_types.push_back(graph_.type(id));
  }
  std::vector<Shape> shapes = infer_result_shapes(op, operand_types);
  TILEC_CHECK(shapes.size() == result_storage.size(), "op '{}': {} results but {} storage types",
              op.name, shapes.size(), result_storage.size());
  std::vector<TensorType> types;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    types.push_back(TensorType{std::move(shapes[i]), result_storage[i]});
    check_type(op_place(op.name), "its result", types.back());
  }
  return append(std::move(op), std::move(types));
}

std::vector<ValueId> GraphBuilder::append(Op op, std::vector<TensorType> result_types) {
  claim_op_name(op.name);
  const auto op_index = static_cast<std::int32_t>(graph_.ops.size());
  for (std::size_t i = 0; i < result_types.size(); ++i) {
    Value value;
    value.type = std::move(result_types[i]);
    value.name = result_types.size() == 1 ? op.name : fmt::format("{}#{}", op.name, i);
    value.producer = op_index;
    value.result_index = static_cast<std::int32_t>(i);
    if (value_names_.contains(value.name))
      throw_bad_input(op_place(op.name), "result name '{}' is already used", value.name);
    const auto id = static_cast<ValueId>(graph_.values.size());
    value_names_.emplace(value.name, id);
    op.results.push_back(id);
    graph_.values.push_back(std::move(value));
  }
  graph_.ops.push_back(std::move(op));
  return graph_.ops.back().results;
}

ValueId GraphBuilder::add_single(Op op, std::optional<StorageType> result) {
  StorageType storage = result ? *result : StorageType{};
  if (!result) {
    check_operand(op.name, op.operands.at(0));
    storage = graph_.type(op.operands[0]).storage;
  }
  return add_op(std::move(op), {storage}).front();
}

ValueId GraphBuilder::gemm(const std::string& name, ValueId a, ValueId b, StorageType result,
                           bool transpose_a, bool transpose_b) {
  Op op = make_op(OpKind::Gemm, name, {a, b});
  op.transpose_a = transpose_a;
  op.transpose_b = transpose_b;
  return add_single(std::move(op), result);
}

ValueId GraphBuilder::gelu(const std::string& name, ValueId x, GeluApproximation approximation,
                           std::optional<StorageType> result) {
  Op op = make_op(OpKind::Gelu, name, {x});
  op.approximation = approximation;
  return add_single(std::move(op), result);
}

ValueId GraphBuilder::add(const std::string& name, ValueId a, ValueId b,
                          std::optional<StorageType> result) {
  return add_single(make_op(OpKind::Add, name, {a, b}), result);
}

ValueId GraphBuilder::cast(const std::string& name, ValueId x, StorageType result) {
  return add_single(make_op(OpKind::Cast, name, {x}), result);
}

ValueId GraphBuilder::layernorm(const std::string& name, ValueId x, ValueId gamma, ValueId beta,
                                float epsilon, std::optional<StorageType> result) {
  Op op = make_op(OpKind::LayerNorm, name, {x, gamma, beta});
  op.epsilon = epsilon;
  return add_single(std::move(op), result);
}

ValueId GraphBuilder::softmax(const std::string& name, ValueId x, int axis,
                              std::optional<StorageType> result) {
  Op op = make_op(OpKind::Softmax, name, {x});
  op.axis = axis;
  return add_single(std::move(op), result);
}

ValueId GraphBuilder::attention(const std::string& name, ValueId q, ValueId k, ValueId v,
                                float scale, std::optional<StorageType> result, std::int64_t heads) {
  Op op = make_op(OpKind::Attention, name, {q, k, v});
  op.attention_scale = scale;
  op.attention_heads = heads;
  return add_single(std::move(op), result);
}

ValueId GraphBuilder::patchify(const std::string& name, ValueId x, std::int64_t patch,
                               std::optional<StorageType> result) {
  Op op = make_op(OpKind::Patchify, name, {x});
  op.patch = patch;
  return add_single(std::move(op), result);
}

ValueId GraphBuilder::reshape(const std::string& name, ValueId x, Shape shape, std::optional<StorageType> result) {
  Op op = make_op(OpKind::Reshape, name, {x});
  op.target_shape = std::move(shape);
  const ValueId id = add_single(std::move(op), result);
  graph_.ops.back().target_shape = graph_.type(id).shape;
  return id;
}

ValueId GraphBuilder::binary(OpKind kind, const std::string& name, ValueId a, ValueId b,
                             std::optional<StorageType> result) {
  TILEC_CHECK(is_binary_elementwise(kind), "op '{}': {} is not a binary elementwise op", name, op_kind_name(kind));
  return add_single(make_op(kind, name, {a, b}), result);
}

ValueId GraphBuilder::unary(OpKind kind, const std::string& name, ValueId x, std::optional<StorageType> result) {
  TILEC_CHECK(is_unary_elementwise(kind), "op '{}': {} is not a unary elementwise op", name, op_kind_name(kind));
  return add_single(make_op(kind, name, {x}), result);
}

ValueId GraphBuilder::reduce(OpKind kind, const std::string& name, ValueId x, std::vector<std::int64_t> axes,
                             bool keep_dims, std::optional<StorageType> result) {
  TILEC_CHECK(is_reduction(kind), "op '{}': {} is not a reduction", name, op_kind_name(kind));
  check_operand(name, x);
  const auto rank = static_cast<std::int64_t>(graph_.type(x).shape.size());
  for (std::int64_t& axis : axes)
    if (axis < 0 && axis >= -rank) axis += rank;
  std::sort(axes.begin(), axes.end());
  Op op = make_op(kind, name, {x});
  op.axes = std::move(axes);
  op.keep_dims = keep_dims;
  return add_single(std::move(op), result);
}

ValueId GraphBuilder::transpose(const std::string& name, ValueId x, std::vector<std::int64_t> permutation,
                                std::optional<StorageType> result) {
  Op op = make_op(OpKind::Transpose, name, {x});
  op.permutation = std::move(permutation);
  return add_single(std::move(op), result);
}

ValueId GraphBuilder::concat(const std::string& name, const std::vector<ValueId>& operands, int axis,
                             std::optional<StorageType> result) {
  if (operands.empty()) throw_bad_input(op_place(name), "concat takes at least one operand");
  Op op = make_op(OpKind::Concat, name, operands);
  op.axis = axis;
  return add_single(std::move(op), result);
}

ValueId GraphBuilder::slice(const std::string& name, ValueId x, std::vector<std::int64_t> starts,
                            std::vector<std::int64_t> ends, std::vector<std::int64_t> steps,
                            std::optional<StorageType> result) {
  Op op = make_op(OpKind::Slice, name, {x});
  op.starts = std::move(starts);
  op.ends = std::move(ends);
  op.steps = std::move(steps);
  return add_single(std::move(op), result);
}

ValueId GraphBuilder::gather(const std::string& name, ValueId x, int axis, std::vector<std::int64_t> indices,
                             Shape indices_shape, std::optional<StorageType> result) {
  Op op = make_op(OpKind::Gather, name, {x});
  op.axis = axis;
  op.indices = std::move(indices);
  op.indices_shape = std::move(indices_shape);
  return add_single(std::move(op), result);
}

ValueId GraphBuilder::apply(Op op, std::optional<StorageType> result) {
  const std::string where = op_place(op.name);
  if (op.kind == OpKind::Input || op.kind == OpKind::Parameter || op.kind == OpKind::Repeat)
    throw_bad_input(where, "{} is not a single-result op", op_kind_name(op.kind));
  if (op.operands.empty()) throw_bad_input(where, "{} needs operands", op_kind_name(op.kind));
  op.results.clear();
  const bool is_reshape = op.kind == OpKind::Reshape;
  const ValueId id = add_single(std::move(op), result);
  if (is_reshape) graph_.ops.back().target_shape = graph_.type(id).shape;
  return id;
}

ValueId GraphBuilder::add_argument(const std::string& name, const TensorType& type) {
  if (!is_valid_name(name))
    throw_bad_input(fmt::format("argument '{}'", name),
                    "names are letters, digits, '_', '-' and '.', not starting with '-' or '.'");
  if (value_names_.contains(name))
    throw_bad_input(fmt::format("argument '{}'", name), "two body arguments have this name");
  Value value;
  value.type = type;
  value.name = name;
  const auto id = static_cast<ValueId>(graph_.values.size());
  graph_.values.push_back(std::move(value));
  graph_.arguments.push_back(id);
  value_names_.emplace(name, id);
  return id;
}

std::vector<ValueId> GraphBuilder::repeat(const std::string& name, std::int64_t count,
                                          const RepeatOperands& operands,
                                          const BodyFunction& build_body) {
  const std::string where = op_place(name);
  Op op = make_op(OpKind::Repeat, name, {});
  op.count = count;
  op.signature = RepeatSignature{static_cast<int>(operands.carried.size()),
                                 static_cast<int>(operands.sequence.size()),
                                 static_cast<int>(operands.invariant.size())};
  for (const auto* group : {&operands.carried, &operands.sequence, &operands.invariant})
    op.operands.insert(op.operands.end(), group->begin(), group->end());
  if (!operands.argument_names.empty() && operands.argument_names.size() != op.operands.size())
    throw_bad_input(where, "{} argument names given for {} operands",
                    operands.argument_names.size(), op.operands.size());
  if (count < 1) throw_bad_input(where, "repeat count {} must be >= 1", count);
  if (operands.carried.empty())
    throw_bad_input(where, "repeat needs >= 1 carried operand, not 0 ({} sequence, {} invariant)",
                    operands.sequence.size(), operands.invariant.size());

  GraphBuilder body;
  body.is_body_ = true;
  std::vector<ValueId> arguments;
  const auto sequence_begin = operands.carried.size();
  const auto sequence_end = sequence_begin + operands.sequence.size();
  for (std::size_t i = 0; i < op.operands.size(); ++i) {
    check_operand(name, op.operands[i]);
    const Value& operand = graph_.value(op.operands[i]);
    TensorType type = operand.type;
    if (i >= sequence_begin && i < sequence_end) {
      if (type.shape.empty() || type.shape[0] != count)
        throw_bad_input(where, "sequence operand '{}' has shape {} but its leading axis must equal "
                        "the count {}",
                        operand.name, shape_text(type.shape), count);
      type.shape.erase(type.shape.begin());
    }
    const std::string& argument_name =
        operands.argument_names.empty() ? operand.name : operands.argument_names[i];
    try {
      arguments.push_back(body.add_argument(argument_name, type));
    } catch (const Error& error) {
      throw error.within(where);
    }
  }
  try {
    std::vector<ValueId> next = build_body(body, arguments);
    if (next.size() != operands.carried.size())
      throw_bad_input("", "the body returns {} values for {} carried values", next.size(),
                      operands.carried.size());
    for (std::size_t i = 0; i < next.size(); ++i) {
      body.check_operand(name, next[i]);
      body.graph_.outputs.emplace_back(body.graph_.value(arguments[i]).name, next[i]);
    }
  } catch (const Error& error) {
    throw error.within(where);
  }
  op.body = std::make_shared<Graph>(std::move(body.graph_));

  std::vector<StorageType> storage;
  for (ValueId carried : operands.carried) storage.push_back(graph_.type(carried).storage);
  return add_op(std::move(op), std::move(storage));
}

void GraphBuilder::output(const std::string& name, ValueId value) {
  const std::string where = fmt::format("output '{}'", name);
  if (is_body_) throw_bad_input(where, "a repeat body's outputs are the values its body function returns");
  if (!is_valid_name(name))
    throw_bad_input(where, "names are letters, digits, '_', '-' and '.', not starting with '-' or '.'");
  for (const auto& [existing, id] : graph_.outputs)
    if (existing == name) throw_bad_input(where, "two outputs have this name");
  check_operand(name, value);
  graph_.outputs.emplace_back(name, value);
}

ValueId GraphBuilder::find(const std::string& name) const {
  auto found = value_names_.find(name);
  return found == value_names_.end() ? kNoValue : found->second;
}

Graph GraphBuilder::finish() {
  if (!is_body_ && graph_.outputs.empty()) throw_bad_input("graph", "the graph has no outputs");
  Graph finished = std::move(graph_);
  *this = GraphBuilder();
  return finished;
}

}  // namespace tilec::graph
