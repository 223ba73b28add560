// Reading an ONNX model file with ONNX's own library: parse the protobuf,
// fix the dynamic dimensions the user names, run ONNX's checker and its
// shape inference. What comes out has a static shape on every graph input
// and, where ONNX can infer it, on every value.
#pragma once

#include "graph/graph.h"

#include <functional>
#include <map>
#include <string>

namespace onnx {
class GraphProto;
class ModelProto;
}

namespace tilec::onnx_import {

// NAME -> its extents (--shape NAME=d0,d1,...).
using ShapeOverrides = std::map<std::string, graph::Shape>;

// "x=1,40,64" -> {"x", [1,40,64]}; BadInput naming the flag otherwise.
std::pair<std::string, graph::Shape> parse_shape_override(const std::string& text);

// Bounds on what read_model parses: protobuf's own size limit (larger
// models keep their weights in external data), and a nesting depth that
// real models (graph, node, attribute, tensor, type) stay well within,
// so that mutated bytes never recurse deeply in the parser or in ONNX's
// checker and shape inference.
constexpr std::int64_t kLargestModelBytes = (std::int64_t{1} << 31) - 1;
constexpr int kDeepestModelNesting = 32;

// `bytes` is the file's content; `source` names it in errors. BadInput for
// bytes that are no model, a model ONNX's checker rejects, an override
// naming no input or disagreeing with a fixed extent, and a graph input left
// with a dynamic extent ("input 'x' axis 0 ('batch') is dynamic: fix it
// with --shape x=d0,d1,..."). `check_nodes` sees the graph before ONNX's
// checker and shape inference do (which, in ONNX 1.12, index out of bounds
// on some ops' bad attributes): the importer refuses there what it cannot
// import anyway, so that ONNX only ever infers the ops tilec imports.
onnx::ModelProto read_model(const std::string& bytes, const std::string& source, const ShapeOverrides& shapes,
                            const std::function<void(const onnx::GraphProto&)>& check_nodes = {});

std::string read_file_bytes(const std::string& path);

}  // namespace tilec::onnx_import
