// Reading an ONNX model file with ONNX's own library: parse the protobuf,
// fix the dynamic dimensions the user names, run ONNX's checker and its
// shape inference. What comes out has a static shape on every graph input
// and, where ONNX can infer it, on every value.
#pragma once

#include "graph/graph.h"

#include <map>
#include <string>

namespace onnx {
class ModelProto;
}

namespace tilec::onnx_import {

// NAME -> its extents (--shape NAME=d0,d1,...).
using ShapeOverrides = std::map<std::string, graph::Shape>;

// "x=1,40,64" -> {"x", [1,40,64]}; BadInput naming the flag otherwise.
std::pair<std::string, graph::Shape> parse_shape_override(const std::string& text);

// `bytes` is the file's content; `source` names it in errors. BadInput for
// bytes that are no model, a model ONNX's checker rejects, an override
// naming no input or disagreeing with a fixed extent, and a graph input left
// with a dynamic extent ("input 'x' axis 0 ('batch') is dynamic: fix it
// with --shape x=d0,d1,...").
onnx::ModelProto read_model(const std::string& bytes, const std::string& source, const ShapeOverrides& shapes);

std::string read_file_bytes(const std::string& path);

}  // namespace tilec::onnx_import
