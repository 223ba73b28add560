#include "onnx/import.h"

#include "graph/shape_inference.h"
#include "onnx/fuse_patterns.h"
#include "onnx/node_importer.h"
#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>

namespace tilec::onnx_import {

graph::Op make_op(graph::OpKind kind) {
  graph::Op op;
  op.kind = kind;
  return op;
}

NodeImporter::NodeImporter(const onnx::NodeProto& node, StagedGraph& graph, std::map<std::string, StagedId>& values,
                           const std::map<std::string, std::int32_t>& value_types, std::int64_t opset)
    : node_(node), graph_(graph), values_(values), value_types_(value_types), opset_(opset) {
  const std::string& name = !node.name().empty() ? node.name() : node.output_size() > 0 ? node.output(0) : "";
  where_ = fmt::format("node '{}' ({})", name, node.op_type());
}

void NodeImporter::unsupported(const std::string& why) const { throw_bad_input(where_, "{}", why); }

bool NodeImporter::has_input(int index) const { return index < node_.input_size() && !node_.input(index).empty(); }

StagedId NodeImporter::input(int index) const {
  if (!has_input(index)) unsupported(fmt::format("input {} is missing", index));
  auto found = values_.find(node_.input(index));
  if (found == values_.end()) unsupported(fmt::format("input '{}' is defined by no earlier node", node_.input(index)));
  return found->second;
}

const HostTensor* NodeImporter::constant_input(int index) const {
  const std::optional<HostTensor>& constant = graph_.constant(input(index));
  return constant ? &*constant : nullptr;
}

std::vector<std::int64_t> NodeImporter::integer_input(int index, const char* what) const {
  const HostTensor* tensor = constant_input(index);
  if (!tensor)
    unsupported(fmt::format("its {} (input {}) is computed at run time; tilec needs it constant", what, index));
  return tensor->integers();
}

const onnx::AttributeProto* NodeImporter::attribute(const std::string& name) const {
  for (const onnx::AttributeProto& attribute : node_.attribute())
    if (attribute.name() == name) return &attribute;
  return nullptr;
}

bool NodeImporter::has_attribute(const std::string& name) const { return attribute(name) != nullptr; }

std::int64_t NodeImporter::attribute_int(const std::string& name, std::int64_t fallback) const {
  const onnx::AttributeProto* found = attribute(name);
  return found ? found->i() : fallback;
}

float NodeImporter::attribute_float(const std::string& name, float fallback) const {
  const onnx::AttributeProto* found = attribute(name);
  return found ? found->f() : fallback;
}

std::vector<std::int64_t> NodeImporter::attribute_ints(const std::string& name,
                                                       std::vector<std::int64_t> fallback) const {
  const onnx::AttributeProto* found = attribute(name);
  if (!found) return fallback;
  return std::vector<std::int64_t>(found->ints().begin(), found->ints().end());
}

std::string NodeImporter::attribute_string(const std::string& name, const std::string& fallback) const {
  const onnx::AttributeProto* found = attribute(name);
  return found ? found->s() : fallback;
}

StorageType NodeImporter::output_storage(int index) const {
  std::optional<std::int32_t> type;
  if (index < node_.output_size()) {
    auto found = value_types_.find(node_.output(index));
    if (found != value_types_.end()) type = found->second;
  }
  if (!type)
    for (int i = 0; i < node_.input_size() && !type; ++i)
      if (has_input(i) && !graph_.constant(input(i))) type = static_cast<std::int32_t>(graph_.type(input(i)).storage.element == ElementType::F16 ? DataType::Float16 : DataType::Float);
  const std::optional<StorageType> storage = storage_of(type.value_or(static_cast<std::int32_t>(DataType::Float)));
  if (!storage) unsupported(fmt::format("its result is {}; tilec computes float and float16 values", data_type_name(*type)));
  return *storage;
}

StagedId NodeImporter::constant(HostTensor tensor, StorageType storage, const std::string& suffix) {
  const std::string base = node_.output_size() > 0 ? node_.output(0) : node_.name();
  return graph_.add_constant(base + suffix, std::move(tensor), storage);
}

StagedId NodeImporter::scalar(double value, StorageType storage, const std::string& suffix) {
  return constant(float_tensor({}, {value}, storage.element == ElementType::F16 ? 10 : 1), storage, suffix);
}

StagedId NodeImporter::reshape(StagedId x, graph::Shape shape, const std::string& suffix) {
  if (shape_of(x) == shape) return x;
  graph::Op op = make_op(graph::OpKind::Reshape);
  op.target_shape = std::move(shape);
  return stage(std::move(op), {x}, graph_.type(x).storage, suffix);
}

StagedId NodeImporter::stage(graph::Op op, std::vector<StagedId> operands, std::optional<StorageType> result,
                             const std::string& suffix) {
  const std::string base = node_.output_size() > 0 ? node_.output(0) : node_.name();
  op.name = base + suffix;
  op.operands = operands;
  const StorageType storage = result ? *result : graph_.type(operands.at(0)).storage;
  std::vector<const HostTensor*> constants;
  for (StagedId id : operands)
    if (graph_.constant(id)) constants.push_back(&*graph_.constant(id));
  try {
    if (constants.size() == operands.size()) {
      std::vector<graph::TensorType> types;
      std::int64_t operand_elements = 0;
      for (StagedId id : operands) {
        types.push_back(graph_.type(id));
        operand_elements += static_cast<std::int64_t>(graph_.constant(id)->values.size());
      }
      const graph::Shape shape = graph::infer_result_shapes(op, types).at(0);
      // A fold that would grow the constants past the bound stays an op of parameters.
      const bool small = bounded_element_count(shape) <= std::max(kLargestComputedConstant, operand_elements);
      if (std::optional<HostTensor> folded = small ? fold(op, constants, shape) : std::nullopt) {
        if (folded->is_float()) folded->data_type = storage.element == ElementType::F16 ? 10 : 1;
        for (double& v : folded->values)
          if (folded->is_float()) v = static_cast<float>(v);
        return graph_.add_constant(op.name, std::move(*folded), storage);
      }
    }
    return graph_.add_op(std::move(op), storage, where_);
  } catch (const Error& error) {
    throw error.within(where_);
  }
}

void NodeImporter::define(int index, StagedId value) {
  if (index < node_.output_size() && !node_.output(index).empty()) values_[node_.output(index)] = value;
}

std::size_t NodeImporter::axis(std::int64_t axis, std::size_t rank, const char* what) const {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) unsupported(fmt::format("{} {} is out of range for rank {}", what, axis, rank));
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

namespace {

const std::map<std::string, NodeHandler>& handlers() {
  static const std::map<std::string, NodeHandler> table = [] {
    std::map<std::string, NodeHandler> built;
    add_math_handlers(built);
    add_layout_handlers(built);
    add_nn_handlers(built);
    return built;
  }();
  return table;
}

std::int64_t default_opset(const onnx::ModelProto& model) {
  for (const onnx::OperatorSetIdProto& entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx") return entry.version();
  return 0;
}

// Element types of every typed value (inputs, outputs, inferred value_info).
std::map<std::string, std::int32_t> value_types(const onnx::GraphProto& graph) {
  std::map<std::string, std::int32_t> types;
  auto note = [&](const onnx::ValueInfoProto& info) {
    if (info.type().has_tensor_type()) types[info.name()] = info.type().tensor_type().elem_type();
  };
  for (const auto& info : graph.input()) note(info);
  for (const auto& info : graph.value_info()) note(info);
  for (const auto& info : graph.output()) note(info);
  return types;
}

graph::Shape static_shape(const onnx::TypeProto_Tensor& tensor) {
  graph::Shape shape;
  for (const auto& dim : tensor.shape().dim()) shape.push_back(dim.dim_value());
  return shape;
}

// ONNX's inferred shapes, where it gives static ones, must be tilec's too.
void check_inferred_shapes(const onnx::GraphProto& graph, const std::map<std::string, StagedId>& values,
                           const StagedGraph& staged, const onnx::NodeProto& node, const std::string& where) {
  for (const std::string& output : node.output()) {
    auto found = values.find(output);
    if (found == values.end()) continue;
    for (const onnx::ValueInfoProto& info : graph.value_info()) {
      if (info.name() != output || !info.type().tensor_type().has_shape()) continue;
      bool known = true;
      for (const auto& dim : info.type().tensor_type().shape().dim()) known = known && dim.has_dim_value();
      const graph::Shape inferred = static_shape(info.type().tensor_type());
      if (known && inferred != staged.type(found->second).shape)
        throw_bad_input(where, "output '{}' has shape {} in tilec but {} by ONNX's shape inference", output,
                        graph::shape_text(staged.type(found->second).shape), graph::shape_text(inferred));
    }
  }
}

}  // namespace

bool is_onnx_path(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

namespace {

// A node whose domain or op tilec does not import; also what ONNX's checker
// and shape inference must never see (onnx/model_file.h).
void require_imported_op(const NodeImporter& importer) {
  const onnx::NodeProto& node = importer.node();
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    importer.unsupported(fmt::format("domain '{}' is not ONNX's own", node.domain()));
  if (!handlers().contains(node.op_type())) importer.unsupported("tilec does not import this op");
}

}  // namespace

ImportedModel import_model_bytes(const std::string& bytes, const std::string& source, const ImportOptions& options) {
  auto check_nodes = [](const onnx::GraphProto& graph) {
    StagedGraph unused_graph;
    std::map<std::string, StagedId> unused_values;
    const std::map<std::string, std::int32_t> unused_types;
    for (const onnx::NodeProto& node : graph.node())
      require_imported_op(NodeImporter(node, unused_graph, unused_values, unused_types, 0));
  };
  const onnx::ModelProto model = read_model(bytes, source, options.shapes, check_nodes);
  const onnx::GraphProto& graph = model.graph();
  ImportedModel imported;
  imported.opset = default_opset(model);
  StagedGraph staged;
  std::map<std::string, StagedId> values;
  const std::map<std::string, std::int32_t> types = value_types(graph);
  try {
    for (const onnx::TensorProto& initializer : graph.initializer()) {
      HostTensor tensor = read_tensor_proto(initializer, fmt::format("initializer '{}'", initializer.name()));
      const StorageType storage = storage_of(tensor.data_type).value_or(StorageType{ElementType::F32, 0});
      values[initializer.name()] = staged.add_constant(initializer.name(), std::move(tensor), storage);
    }
    for (const onnx::ValueInfoProto& input : graph.input()) {
      if (values.contains(input.name())) continue;  // an initializer listed as an input (IR version < 4)
      const std::string where = fmt::format("input '{}'", input.name());
      if (!input.type().has_tensor_type()) throw_bad_input(where, "is not a tensor");
      const std::int32_t type = input.type().tensor_type().elem_type();
      auto fixed = options.constant_inputs.find(input.name());
      if (fixed != options.constant_inputs.end()) {
        values[input.name()] = staged.add_constant(input.name(), fixed->second, StorageType{ElementType::F32, 0});
        continue;
      }
      const std::optional<StorageType> storage = storage_of(type);
      if (!storage) throw_bad_input(where, "is {}; tilec takes float and float16 inputs", data_type_name(type));
      const graph::TensorType tensor_type{static_shape(input.type().tensor_type()), *storage};
      graph::check_type(where, "the input", tensor_type);
      values[input.name()] = staged.add_input(input.name(), tensor_type);
      imported.inputs.emplace_back(input.name(), staged.value(values[input.name()]).name);
    }
    for (const onnx::NodeProto& node : graph.node()) {
      NodeImporter importer(node, staged, values, types, imported.opset);
      handlers().at(node.op_type())(importer);
      for (const std::string& output : node.output())
        if (!output.empty() && !values.contains(output))
          importer.unsupported(fmt::format("tilec does not compute its output '{}'", output));
      check_inferred_shapes(graph, values, staged, node, importer.where());
    }
    for (const onnx::ValueInfoProto& output : graph.output()) {
      auto found = values.find(output.name());
      if (found == values.end()) throw_bad_input(fmt::format("output '{}'", output.name()), "no node computes it");
      staged.add_output(output.name(), found->second);
      imported.outputs.emplace_back(output.name(), graph_name(output.name()));
    }
    staged.remove_dead_ops();
    if (options.fuse) fuse_patterns(staged);
    imported.graph = staged.emit(imported.parameters);
  } catch (const Error& error) {
    throw error.within(source);
  }
  return imported;
}

ImportedModel import_model(const std::string& path, const ImportOptions& options) {
  return import_model_bytes(read_file_bytes(path), path, options);
}

}  // namespace tilec::onnx_import
