// The importer's per-node machinery, shared by the files that translate
// node kinds (node_math.cpp, node_layout.cpp, node_nn.cpp): a node's
// inputs, attributes and outputs, and `stage`, which adds a tilec op or,
// when every operand is a constant, computes it at import (fold.cpp).
#pragma once

#include "onnx/import.h"
#include "onnx/staged_graph.h"

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tilec::onnx_import {

// The product of axes [begin, end) of `shape`.
inline std::int64_t extent_product(const graph::Shape& shape, std::size_t begin, std::size_t end) {
  std::int64_t count = 1;
  for (std::size_t axis = begin; axis < end; ++axis) count *= shape[axis];
  return count;
}

class NodeImporter;
using NodeHandler = std::function<void(NodeImporter&)>;

// Op type -> handler; each translation file adds its own.
void add_math_handlers(std::map<std::string, NodeHandler>& handlers);
void add_layout_handlers(std::map<std::string, NodeHandler>& handlers);
void add_nn_handlers(std::map<std::string, NodeHandler>& handlers);

// An op of constants computed on the host: shape inference has checked
// `op` and gives `result`. nullopt for ops not folded (gemm, softmax, ...),
// which stay ops of parameters.
std::optional<HostTensor> fold(const graph::Op& op, const std::vector<const HostTensor*>& operands,
                               const graph::Shape& result);

class NodeImporter {
 public:
  NodeImporter(const onnx::NodeProto& node, StagedGraph& graph, std::map<std::string, StagedId>& values,
               const std::map<std::string, std::int32_t>& value_types, std::int64_t opset);

  const onnx::NodeProto& node() const { return node_; }
  const std::string& where() const { return where_; }
  std::int64_t opset() const { return opset_; }
  StagedGraph& graph() { return graph_; }

  [[noreturn]] void unsupported(const std::string& why) const;

  // Inputs: present (a non-empty name), the value, its constant.
  bool has_input(int index) const;
  StagedId input(int index) const;
  const HostTensor* constant_input(int index) const;
  // A constant input's values as integers (Reshape's shape, Slice's starts...).
  std::vector<std::int64_t> integer_input(int index, const char* what) const;
  const graph::Shape& shape_of(StagedId id) const { return graph_.type(id).shape; }

  // Attributes, with their defaults.
  bool has_attribute(const std::string& name) const;
  std::int64_t attribute_int(const std::string& name, std::int64_t fallback) const;
  float attribute_float(const std::string& name, float fallback) const;
  std::vector<std::int64_t> attribute_ints(const std::string& name, std::vector<std::int64_t> fallback = {}) const;
  std::string attribute_string(const std::string& name, const std::string& fallback) const;
  const onnx::AttributeProto* attribute(const std::string& name) const;

  // The storage of output `index` (its ONNX element type), or of the first
  // float operand when ONNX gave none; unsupported for other types.
  StorageType output_storage(int index = 0) const;

  // A tilec op over `operands`, named after the node's first output (plus
  // `suffix`); computed here when every operand is a constant.
  StagedId stage(graph::Op op, std::vector<StagedId> operands, std::optional<StorageType> result = {},
                 const std::string& suffix = "");
  StagedId constant(HostTensor tensor, StorageType storage, const std::string& suffix);
  // A scalar constant of `storage`'s float type, to combine with a value.
  StagedId scalar(double value, StorageType storage, const std::string& suffix);
  StagedId reshape(StagedId x, graph::Shape shape, const std::string& suffix = "");

  // Binds output `index` to `value`.
  void define(int index, StagedId value);
  // An axis in [-rank, rank) as a non-negative index.
  std::size_t axis(std::int64_t axis, std::size_t rank, const char* what) const;

 private:
  const onnx::NodeProto& node_;
  StagedGraph& graph_;
  std::map<std::string, StagedId>& values_;
  const std::map<std::string, std::int32_t>& value_types_;
  std::int64_t opset_;
  std::string where_;
};

graph::Op make_op(graph::OpKind kind);

}  // namespace tilec::onnx_import
