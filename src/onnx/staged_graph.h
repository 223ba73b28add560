// The importer's working graph: tilec ops (graph::Op, operands naming staged
// values) over values that are graph inputs, constants or op results, in
// any order of creation. It infers each op's result shape with the graph
// layer's rules as ops arrive, lets the pattern passes (fuse_patterns.h)
// rewrite uses, and at the end emits a graph::Graph in the order the graph
// format needs (inputs, then the constants still used, as parameters, then
// the live ops).
#pragma once

#include "graph/graph.h"
#include "graph/tensor.h"
#include "onnx/host_tensor.h"

#include <optional>
#include <string>
#include <vector>

namespace tilec::onnx_import {

using StagedId = int;

struct StagedValue {
  graph::TensorType type;             // for constants: the storage they take as parameters
  std::optional<HostTensor> constant;  // set for constants
  std::string name;                   // its graph name (inputs, constants) or its op's
  int producer = -1;                  // index into ops; -1 for inputs and constants
  bool is_input = false;
};

struct StagedOp {
  graph::Op op;      // operands and results[0] are StagedIds
  std::string node;  // the ONNX node it comes from, for errors: "node 'n' (Mul)"
  bool dead = false;
};

class StagedGraph {
 public:
  StagedId add_input(const std::string& name, const graph::TensorType& type);
  // A constant; `storage` is how it is stored if it becomes a parameter
  // (float constants only).
  StagedId add_constant(const std::string& name, HostTensor tensor, StorageType storage);
  // Appends `op` (operands set) with the result stored as `result`; infers
  // the shape (BadInput from the graph rules, naming the op). Names are
  // made unique here.
  StagedId add_op(graph::Op op, StorageType result, const std::string& node);

  const StagedValue& value(StagedId id) const { return values_.at(static_cast<std::size_t>(id)); }
  const graph::TensorType& type(StagedId id) const { return value(id).type; }
  const std::optional<HostTensor>& constant(StagedId id) const { return value(id).constant; }
  const StagedOp* producer(StagedId id) const;
  std::vector<StagedOp>& ops() { return ops_; }
  const std::vector<StagedOp>& ops() const { return ops_; }

  void add_output(const std::string& name, StagedId value);
  const std::vector<std::pair<std::string, StagedId>>& outputs() const { return outputs_; }

  // `op` (operands set) computes `root` instead of root's op, under its
  // name: every use of root becomes the new op's result.
  void replace_op(StagedId root, graph::Op op);
  // Every use of `from` (operands and outputs) becomes `to`.
  void replace_uses(StagedId from, StagedId to);
  // How many live ops read the value, plus one per output naming it.
  int use_count(StagedId id) const;
  // Marks the ops no output depends on.
  void remove_dead_ops();

  // The graph, and the data of its parameters by name.
  graph::Graph emit(graph::TensorMap& parameters) const;

 private:
  std::string unique_name(const std::string& wanted);

  std::vector<StagedValue> values_;
  std::vector<StagedOp> ops_;
  std::vector<std::pair<std::string, StagedId>> outputs_;
  std::vector<std::string> names_;
};

// A name the graph format accepts: characters other than letters, digits,
// '_', '-' and '.' become '_', and a leading '-' or '.' gains a 'v'.
std::string graph_name(const std::string& onnx_name);

}  // namespace tilec::onnx_import
