// The ONNX importer: any bytes are a model it imports or a one-line
// BadInput. A model it imports (with and without pattern fusion) has data
// of its own type for every parameter, and its graph writes to text that
// reads as the same graph.
//
// An input is a model in protobuf's text format (what the seeds are: field
// names and op names mutate into other fields and ops, and lengths never
// go stale) or, when it is no text model, the serialized bytes themselves,
// which is what `tilec import` reads.
#include "fuzz_target.h"

#include "graph/equality.h"
#include "graph/json_format.h"
#include "graph/tensor.h"
#include "onnx/import.h"
#include "support/error.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace {

// protobuf's text parser prints every syntax error; the importer's own
// errors are what this target is about.
class QuietErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, int, const std::string&) override {}
  void AddWarning(int, int, const std::string&) override {}
};

std::string model_bytes(const std::uint8_t* data, std::size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  google::protobuf::TextFormat::Parser parser;
  QuietErrors quiet;
  parser.RecordErrorsTo(&quiet);
  onnx::ModelProto model;
  if (parser.ParseFromString(input, &model)) return model.SerializeAsString();
  return input;
}

void check_imported(const tilec::onnx_import::ImportedModel& imported, const char* how) {
  using namespace tilec;
  for (const graph::Op* parameter : imported.graph.parameters()) {
    const graph::TensorType& type = imported.graph.type(parameter->results.at(0));
    auto data = imported.parameters.find(parameter->name);
    if (data == imported.parameters.end())
      fuzz::property_failed(fmt::format("{}: parameter '{}' has no data", how, parameter->name));
    if (data->second.type != type ||
        static_cast<std::int64_t>(data->second.bytes.size()) != type.bytes())
      fuzz::property_failed(fmt::format("{}: parameter '{}' has data of another type", how, parameter->name));
  }
  const std::string written = graph::write_graph_json(imported.graph);
  graph::Graph again;
  try {
    again = graph::read_graph_json(written, "<written>");
  } catch (const Error& error) {
    fuzz::property_failed(fmt::format("{}: an imported graph writes text it cannot read: {}", how, error.what()));
  }
  if (const std::string difference = graph::first_difference(imported.graph, again); !difference.empty())
    fuzz::property_failed(fmt::format("{}: an imported graph written and read back differs: {}", how, difference));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tilec;
  const std::string bytes = model_bytes(data, size);
  for (bool fuse : {true, false}) {
    onnx_import::ImportOptions options;
    options.fuse = fuse;
    onnx_import::ImportedModel imported;
    try {
      imported = onnx_import::import_model_bytes(bytes, "<fuzz>", options);
    } catch (const Error&) {
      return 0;
    }
    check_imported(imported, fuse ? "fused" : "unfused");
  }
  return 0;
}

namespace tilec::fuzz {

namespace {

std::string file_text(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

// A model file as a seed, in text form and as its serialized bytes.
void add_model(const std::filesystem::path& path, std::vector<Input>& inputs) {
  onnx::ModelProto model;
  if (!model.ParseFromString(file_text(path))) return;
  std::string text;
  google::protobuf::TextFormat::PrintToString(model, &text);
  inputs.push_back(bytes_of(text));
  inputs.push_back(bytes_of(model.SerializeAsString()));
}

}  // namespace

// The encoders and patch embedding of fuzz/seeds/onnx_importer, and the
// models of ONNX's backend node tests that tilec imports
// (tests/onnx/node_tests.txt).
std::vector<Input> seeds() {
  std::vector<Input> inputs;
  const std::filesystem::path source(TILEC_SOURCE_DIR);
  std::vector<std::filesystem::path> ours;
  for (const auto& entry : std::filesystem::directory_iterator(source / "fuzz/seeds/onnx_importer"))
    ours.push_back(entry.path());
  std::sort(ours.begin(), ours.end());
  for (const auto& path : ours) add_model(path, inputs);
  std::ifstream list(source / "tests/onnx/node_tests.txt");
  for (std::string line; std::getline(list, line);) {
    if (line.rfind("test_", 0) != 0) continue;
    const std::filesystem::path model =
        std::filesystem::path(TILEC_ONNX_NODE_TESTS) / line.substr(0, line.find(' ')) / "model.onnx";
    if (std::filesystem::exists(model)) add_model(model, inputs);
  }
  return inputs;
}

// Text-format fields and the op and attribute names the importer reads.
std::vector<std::string> dictionary() {
  std::vector<std::string> words = {
      "node {", "input: ", "output: ", "initializer {", "value_info {", "attribute {", "opset_import {",
      "functions {", "graph {", "dims: ", "data_type: ", "raw_data: ", "float_data: ", "int32_data: ",
      "int64_data: ", "double_data: ", "data_location: EXTERNAL", "elem_type: ", "dim_value: ", "dim_param: ",
      "shape {", "dim {", "tensor_type {", "type {", "domain: ", "version: ", "ir_version: ", "i: ", "f: ",
      "ints: ", "floats: ", "t {", "g {", "type: INTS", "type: INT", "type: FLOAT", "type: TENSOR",
      "type: GRAPH", "-1", "0", "1", "9223372036854775807", "-9223372036854775808", "1099511627776", "1e38",
      "\"\"", "\"x\"", "\"y\""};
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Erf", "Tanh", "Relu", "Sigmoid", "Exp",
                         "Neg", "Reciprocal", "ReduceMean", "ReduceSum", "ReduceMax", "Cast", "Constant", "Identity",
                         "Reshape", "Flatten", "Unsqueeze", "Squeeze", "Transpose", "Concat", "Slice", "Gather",
                         "Shape", "Size", "ConstantOfShape", "MatMul", "Gemm", "Softmax", "LayerNormalization",
                         "Conv", "If", "Loop"})
    words.push_back(fmt::format("op_type: \"{}\"", op));
  for (const char* attribute : {"axis", "axes", "keepdims", "noop_with_empty_axes", "allowzero", "perm", "to",
                                "value", "value_float", "value_floats", "value_int", "value_ints", "start", "end",
                                "alpha", "beta", "transA", "transB", "epsilon", "kernel_shape", "strides", "pads",
                                "dilations", "group", "auto_pad"})
    words.push_back(fmt::format("name: \"{}\"", attribute));
  return words;
}

}  // namespace tilec::fuzz
