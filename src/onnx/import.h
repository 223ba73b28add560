// tilec's ONNX importer: an ONNX model (read with ONNX's own library,
// checked and shape-inferred, onnx/model_file.h) becomes a tilec graph and
// the data of its parameters.
//
// Each node becomes tilec ops (docs/onnx.md lists the ops and how they map);
// a node whose operands are all constants (initializers, Constant nodes, the
// shapes of values) is computed at import time, so shape arithmetic never
// reaches the graph. The patterns exporters decompose (layernorm, GELU in
// its erf and tanh forms, multi-head attention) are then recognised and
// replaced by tilec's own ops (onnx/fuse_patterns.h). Anything else gives
// one line naming the node, its op type and why: "node 'n3' (Resize): tilec
// does not import this op".
#pragma once

#include "graph/graph.h"
#include "graph/tensor.h"
#include "onnx/host_tensor.h"
#include "onnx/model_file.h"

#include <map>
#include <string>
#include <vector>

namespace tilec::onnx_import {

struct ImportOptions {
  ShapeOverrides shapes;  // --shape NAME=d0,d1,...
  // Graph inputs whose values are fixed at import, as constants: the
  // integer inputs of ONNX's backend tests (a Reshape's shape, say).
  std::map<std::string, HostTensor> constant_inputs;
  // Recognise layernorm, GELU and attention (off: keep the elementwise ops).
  bool fuse = true;
};

struct ImportedModel {
  graph::Graph graph;
  graph::TensorMap parameters;  // every parameter's data, by graph name
  // ONNX input and output names -> their graph names (names the graph
  // format does not accept are rewritten, onnx/staged_graph.h).
  std::vector<std::pair<std::string, std::string>> inputs, outputs;
  std::int64_t opset = 0;
};

ImportedModel import_model(const std::string& path, const ImportOptions& options = {});
// The model's serialized bytes; `source` names it in errors.
ImportedModel import_model_bytes(const std::string& bytes, const std::string& source,
                                 const ImportOptions& options = {});

// True for a path that names an ONNX model (".onnx").
bool is_onnx_path(const std::string& path);

}  // namespace tilec::onnx_import
