#include "onnx/model_file.h"

#include "graph/shape_inference.h"
#include "support/error.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

namespace tilec::onnx_import {

namespace {

// ONNX's messages span lines and carry context we do not need after the first.
std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

bool is_initializer(const onnx::GraphProto& graph, const std::string& name) {
  for (const onnx::TensorProto& initializer : graph.initializer())
    if (initializer.name() == name) return true;
  return false;
}

void apply_overrides(onnx::GraphProto& graph, const ShapeOverrides& shapes, const std::string& source) {
  std::set<std::string> used;
  for (onnx::ValueInfoProto& input : *graph.mutable_input()) {
    auto found = shapes.find(input.name());
    if (found == shapes.end()) continue;
    used.insert(input.name());
    const std::string where = fmt::format("--shape {}", input.name());
    if (!input.type().has_tensor_type()) throw_bad_input(where, "input '{}' is not a tensor", input.name());
    onnx::TensorShapeProto* shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    const graph::Shape& extents = found->second;
    if (shape->dim_size() != 0 && shape->dim_size() != static_cast<int>(extents.size()))
      throw_bad_input(where, "gives {} extents but the input has {} axes", extents.size(), shape->dim_size());
    if (shape->dim_size() == 0)
      for (std::size_t i = 0; i < extents.size(); ++i) shape->add_dim();
    for (int axis = 0; axis < shape->dim_size(); ++axis) {
      onnx::TensorShapeProto_Dimension* dim = shape->mutable_dim(axis);
      const std::int64_t extent = extents[static_cast<std::size_t>(axis)];
      if (dim->has_dim_value() && dim->dim_value() != extent)
        throw_bad_input(where, "axis {} is fixed at {} in the model, not {}", axis, dim->dim_value(), extent);
      dim->set_dim_value(extent);
    }
  }
  for (const auto& [name, extents] : shapes)
    if (!used.contains(name)) throw_bad_input(source, "--shape names '{}', which is no input of the model", name);
}

// Bytes per element of ONNX's fixed-size types (0: none, or no raw form).
std::int64_t raw_element_bytes(std::int32_t data_type) {
  switch (data_type) {
    case 2: case 3: case 9: return 1;             // uint8, int8, bool
    case 4: case 5: case 10: case 16: return 2;   // uint16, int16, float16, bfloat16
    case 1: case 6: case 12: return 4;            // float, int32, uint32
    case 7: case 11: case 13: case 14: return 8;  // int64, double, uint64, complex64
    case 15: return 16;                           // complex128
    default: return 0;
  }
}

// ONNX's checker leaves raw data unchecked against the shape, and its shape
// inference then copies raw_data.size() bytes into shape-sized buffers: so
// every tensor anywhere in the model (initializers, attributes, subgraphs,
// functions) must hold exactly what its dims say before ONNX reads it.
void check_tensor_data(const onnx::TensorProto& tensor, const std::string& where) {
  const std::string name = fmt::format("{} '{}'", where, tensor.name());
  std::int64_t elements = 1;
  for (std::int64_t extent : tensor.dims()) {
    if (extent < 0) throw_bad_input(name, "has a negative extent {}", extent);
    elements = extent != 0 && elements > graph::kLargestElementCount / extent ? graph::kLargestElementCount + 1
                                                                            : elements * extent;
  }
  if (elements > graph::kLargestElementCount)
    throw_bad_input(name, "has more than {} elements", graph::kLargestElementCount);
  if (!tensor.has_raw_data()) return;
  const std::int64_t element = raw_element_bytes(tensor.data_type());
  if (element == 0) throw_bad_input(name, "holds raw data of element type {}, which has no raw form", tensor.data_type());
  if (static_cast<std::int64_t>(tensor.raw_data().size()) != elements * element)
    throw_bad_input(name, "holds {} bytes of raw data but its shape [{}] needs {}", tensor.raw_data().size(),
                    fmt::join(tensor.dims(), ","), elements * element);
}

void check_graph_tensors(const onnx::GraphProto& graph, const std::string& where);

void check_node_tensors(const onnx::NodeProto& node, const std::string& where) {
  const std::string at = fmt::format("{}node '{}' ({}): tensor", where, node.name(), node.op_type());
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.has_t()) check_tensor_data(attribute.t(), at);
    for (const onnx::TensorProto& tensor : attribute.tensors()) check_tensor_data(tensor, at);
    if (attribute.has_sparse_tensor()) {
      check_tensor_data(attribute.sparse_tensor().values(), at);
      check_tensor_data(attribute.sparse_tensor().indices(), at);
    }
    for (const onnx::SparseTensorProto& sparse : attribute.sparse_tensors()) {
      check_tensor_data(sparse.values(), at);
      check_tensor_data(sparse.indices(), at);
    }
    const std::string inside = fmt::format("{}node '{}' ({}): ", where, node.name(), node.op_type());
    if (attribute.has_g()) check_graph_tensors(attribute.g(), inside);
    for (const onnx::GraphProto& graph : attribute.graphs()) check_graph_tensors(graph, inside);
  }
}

void check_graph_tensors(const onnx::GraphProto& graph, const std::string& where) {
  for (const onnx::TensorProto& initializer : graph.initializer()) check_tensor_data(initializer, where + "initializer");
  for (const onnx::SparseTensorProto& sparse : graph.sparse_initializer()) {
    check_tensor_data(sparse.values(), where + "sparse initializer");
    check_tensor_data(sparse.indices(), where + "sparse initializer");
  }
  for (const onnx::NodeProto& node : graph.node()) check_node_tensors(node, where);
}

void infer_shapes(onnx::ModelProto& model, const std::string& source) {
  try {
    // Strict: an op whose shapes do not agree stops the import here.
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, true));
  } catch (const std::exception& error) {
    throw_bad_input(source, "ONNX's shape inference fails: {}", first_line(error.what()));
  }
}

// ONNX 1.12 infers LayerNormalization's Mean and InvStdDev by indexing the
// input's axes from `axis` unchecked. A first, lenient inference with every
// axis set beyond any rank (which changes no value's rank, and indexes
// nothing) gives the inputs' ranks, which each axis is checked against
// before the real inference.
void check_layernorm_axes(const onnx::ModelProto& model, const std::string& source) {
  auto is_layernorm = [](const onnx::NodeProto& node) { return node.op_type() == "LayerNormalization"; };
  if (std::none_of(model.graph().node().begin(), model.graph().node().end(), is_layernorm)) return;
  auto axis_of = [](const onnx::NodeProto& node) -> std::int64_t {
    for (const onnx::AttributeProto& attribute : node.attribute())
      if (attribute.name() == "axis") return attribute.i();
    return -1;
  };
  onnx::ModelProto probe = model;
  for (onnx::NodeProto& node : *probe.mutable_graph()->mutable_node()) {
    if (!is_layernorm(node)) continue;
    onnx::AttributeProto* axis = nullptr;
    for (onnx::AttributeProto& attribute : *node.mutable_attribute())
      if (attribute.name() == "axis") axis = &attribute;
    if (!axis) {
      axis = node.add_attribute();
      axis->set_name("axis");
      axis->set_type(onnx::AttributeProto::INT);
    }
    axis->set_i(1 << 20);
  }
  try {
    onnx::shape_inference::InferShapes(probe, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception&) {
    // Lenient inference still throws on some models; the real one reports them.
  }
  std::map<std::string, std::int64_t> ranks;
  auto note = [&](const onnx::ValueInfoProto& info) {
    if (info.type().has_tensor_type() && info.type().tensor_type().has_shape())
      ranks[info.name()] = info.type().tensor_type().shape().dim_size();
  };
  for (const onnx::ValueInfoProto& info : probe.graph().input()) note(info);
  for (const onnx::ValueInfoProto& info : probe.graph().value_info()) note(info);
  for (const onnx::TensorProto& initializer : probe.graph().initializer()) ranks[initializer.name()] = initializer.dims_size();
  for (const onnx::NodeProto& node : model.graph().node()) {
    if (!is_layernorm(node) || node.input_size() == 0) continue;
    auto rank = ranks.find(node.input(0));
    const std::int64_t axis = axis_of(node);
    if (rank != ranks.end() && (axis < -rank->second || axis >= rank->second))
      throw_bad_input(source, "node '{}' (LayerNormalization): axis {} is out of range for rank {}",
                      !node.name().empty() ? node.name() : node.output_size() > 0 ? node.output(0) : "", axis,
                      rank->second);
  }
}

void require_static_inputs(const onnx::GraphProto& graph, const std::string& source) {
  for (const onnx::ValueInfoProto& input : graph.input()) {
    if (is_initializer(graph, input.name()) || !input.type().has_tensor_type()) continue;
    const onnx::TypeProto_Tensor& tensor = input.type().tensor_type();
    if (!tensor.has_shape())
      throw_bad_input(source, "input '{}' has no shape: give it with --shape {}=d0,d1,...", input.name(), input.name());
    for (int axis = 0; axis < tensor.shape().dim_size(); ++axis) {
      const onnx::TensorShapeProto_Dimension& dim = tensor.shape().dim(axis);
      if (dim.has_dim_value() && dim.dim_value() >= 0) continue;
      throw_bad_input(source, "input '{}' axis {}{} is dynamic: fix it with --shape {}=d0,d1,...", input.name(), axis,
                      dim.has_dim_param() ? fmt::format(" ('{}')", dim.dim_param()) : "", input.name());
    }
  }
}

}  // namespace

std::pair<std::string, graph::Shape> parse_shape_override(const std::string& text) {
  const std::string where = "--shape " + text;
  const std::size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size())
    throw_bad_input(where, "must be NAME=d0,d1,... (extents >= 1)");
  graph::Shape shape;
  std::string_view rest(text);
  rest.remove_prefix(equals + 1);
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    std::int64_t extent = 0;
    auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), extent);
    if (error != std::errc() || end != part.data() + part.size() || part.empty() || extent < 1)
      throw_bad_input(where, "extent '{}' must be an integer >= 1", part);
    shape.push_back(extent);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return {text.substr(0, equals), shape};
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw_bad_input(path, "cannot open the file");
  std::ostringstream bytes;
  bytes << file.rdbuf();
  if (file.bad()) throw_bad_input(path, "cannot read the file");
  return bytes.str();
}

onnx::ModelProto read_model(const std::string& bytes, const std::string& source, const ShapeOverrides& shapes,
                            const std::function<void(const onnx::GraphProto&)>& check_nodes) {
  if (bytes.size() > static_cast<std::size_t>(kLargestModelBytes))
    throw_bad_input(source, "is {} bytes; a model of more than {} bytes keeps its weights in external data, which "
                    "tilec does not read", bytes.size(), kLargestModelBytes);
  google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetRecursionLimit(kDeepestModelNesting);
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    throw_bad_input(source, "is not an ONNX model (its protobuf does not parse: truncated, nested more than {} "
                    "messages deep, or another format)", kDeepestModelNesting);
  if (!model.has_graph()) throw_bad_input(source, "is not an ONNX model (it holds no graph)");
  apply_overrides(*model.mutable_graph(), shapes, source);
  try {
    check_graph_tensors(model.graph(), "");
    for (const onnx::FunctionProto& function : model.functions())
      for (const onnx::NodeProto& node : function.node())
        check_node_tensors(node, fmt::format("function '{}': ", function.name()));
    if (check_nodes) check_nodes(model.graph());
  } catch (const Error& error) {
    throw error.within(source);
  }
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& error) {
    throw_bad_input(source, "ONNX's checker rejects the model: {}", first_line(error.what()));
  }
  require_static_inputs(model.graph(), source);
  check_layernorm_axes(model, source);
  infer_shapes(model, source);
  return model;
}

}  // namespace tilec::onnx_import
