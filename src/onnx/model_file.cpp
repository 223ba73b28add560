#include "onnx/model_file.h"

#include "graph/shape_inference.h"
#include "support/error.h"

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

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

onnx::ModelProto read_model(const std::string& bytes, const std::string& source, const ShapeOverrides& shapes) {
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes))
    throw_bad_input(source, "is not an ONNX model (its protobuf does not parse: truncated or another format)");
  if (!model.has_graph()) throw_bad_input(source, "is not an ONNX model (it holds no graph)");
  apply_overrides(*model.mutable_graph(), shapes, source);
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& error) {
    throw_bad_input(source, "ONNX's checker rejects the model: {}", first_line(error.what()));
  }
  require_static_inputs(model.graph(), source);
  try {
    // Strict: an op whose shapes do not agree stops the import here.
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, true));
  } catch (const std::exception& error) {
    throw_bad_input(source, "ONNX's shape inference fails: {}", first_line(error.what()));
  }
  return model;
}

}  // namespace tilec::onnx_import
