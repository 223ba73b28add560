#include "graph/builder.h"
#include "sample_graphs.h"
#include "graph/equality.h"
#include "graph/json_format.h"
#include "graph/validate.h"
#include "graph/workloads.h"
#include "support/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

namespace tilec::graph {
namespace {
using namespace testing_graphs;

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<std::string> doc_examples() {
  const std::string doc = read_text(std::string(TILEC_SOURCE_DIR) + "/docs/graph-format.md");
  std::vector<std::string> examples;
  const std::regex block("```json\n([\\s\\S]*?)```");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), block); it != std::sregex_iterator(); ++it)
    examples.push_back((*it)[1]);
  return examples;
}

std::string read_error(std::string_view text) {
  try {
    read_graph_json(text, "model.json");
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput);
    return error.what();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return "";
}

// A valid one-op file with `ops` spliced in.
std::string with_ops(std::string_view ops, std::string_view outputs = R"(["h"])") {
  return fmt::format(R"({{"format": "tilec-graph", "version": 1,
  "inputs": [{{"name": "x", "type": "f32", "shape": [2, 3]}}],
  "parameters": [{{"name": "w", "type": "f32", "shape": [3, 4]}}],
  "ops": [{}],
  "outputs": {}}})",
                     ops, outputs);
}

TEST(JsonFormat, EveryOpRoundTrips) {
  const Graph graph = every_op_graph();
  const std::string text = write_graph_json(graph);
  const Graph read = read_graph_json(text);
  EXPECT_EQ(first_difference(graph, read), "");
  EXPECT_EQ(write_graph_json(read), text);
}

TEST(JsonFormat, WorkloadsRoundTrip) {
  for (Precision precision : {Precision::Fp8, Precision::Fp16, Precision::Fp32})
    for (std::int64_t blocks : {1, 3})
      for (bool bias : {false, true}) {
        MlpOptions options{.batch = 2, .blocks = blocks, .precision = precision, .bias = bias};
        const Graph graph = build_workload("mlp", options);
        const Graph read = read_graph_json(write_graph_json(graph));
        EXPECT_EQ(first_difference(graph, read), "") << precision_name(precision) << blocks << bias;
      }
}

TEST(JsonFormat, WritesTheCanonicalText) {
  GraphBuilder b;
  ValueId x = b.input("x", {{2, 3}, {ElementType::F143, -7}});
  ValueId w = b.parameter("w", {{2, 3, 4}, kF16});
  ValueId y = b.repeat("r", 2, {.carried = {x}, .sequence = {w}},
                       [](GraphBuilder& body, const std::vector<ValueId>& args) {
                         ValueId h = body.gemm("h", args[0], args[1], kF16);
                         ValueId t = body.gemm("t", h, args[1], {ElementType::F143, -7}, false, true);
                         return std::vector<ValueId>{t};
                       })
                  .front();
  b.output("out", y);
  EXPECT_EQ(write_graph_json(b.finish()), R"({
  "format": "tilec-graph",
  "version": 1,
  "inputs": [
    {"name": "x", "type": "f143", "scale": -7, "shape": [2, 3]}
  ],
  "parameters": [
    {"name": "w", "type": "f16", "shape": [2, 3, 4]}
  ],
  "ops": [
    {"op": "repeat", "name": "r", "count": 2, "carried": ["x"], "sequence": ["w"], "body": {
      "ops": [
        {"op": "gemm", "name": "h", "a": "x", "b": "w", "type": "f16"},
        {"op": "gemm", "name": "t", "a": "h", "b": "w", "type": "f143", "scale": -7, "transpose_b": true}
      ],
      "outputs": ["t"]
    }}
  ],
  "outputs": [{"name": "out", "value": "r"}]
}
)");
}

TEST(JsonFormat, DocumentedExamplesLoadAndMatchTheWorkload) {
  const std::vector<std::string> examples = doc_examples();
  ASSERT_EQ(examples.size(), 2u);
  for (const std::string& example : examples) {
    const Graph graph = read_graph_json(example, "docs/graph-format.md");
    const std::string canonical = write_graph_json(graph);
    EXPECT_EQ(write_graph_json(read_graph_json(canonical)), canonical);
  }
  const Graph repeated = read_graph_json(examples[1]);
  const Graph workload = build_workload("siglip-mlp", {.blocks = 4, .precision = Precision::Fp16});
  EXPECT_EQ(first_difference(repeated, workload), "");
  // The first example is the default fp8 workload with biases, automatic scales included.
  EXPECT_EQ(first_difference(read_graph_json(examples[0]), build_workload("siglip-mlp", {.bias = true})), "");
}

// A reshape's -1 is resolved as it is read; the canonical text gives the shape.
TEST(JsonFormat, PatchifyAndReshapeFields) {
  const Graph graph = read_graph_json(R"({"format": "tilec-graph", "version": 1,
    "inputs": [{"name": "image", "type": "f16", "shape": [1, 4, 6, 3]}],
    "ops": [
      {"op": "patchify", "name": "p", "x": "image", "patch": 2},
      {"op": "reshape", "name": "r", "x": "p", "shape": [-1, 12], "type": "f143", "scale": -3}
    ],
    "outputs": ["r"]})");
  EXPECT_EQ(graph.type(graph.ops[1].results[0]), (TensorType{{1, 6, 12}, kF16}));
  EXPECT_EQ(graph.type(graph.ops[2].results[0]), (TensorType{{6, 12}, {ElementType::F143, -3}}));
  EXPECT_THAT(write_graph_json(graph),
              ::testing::HasSubstr("    {\"op\": \"patchify\", \"name\": \"p\", \"x\": \"image\", \"patch\": 2, "
                                   "\"type\": \"f16\"},\n"
                                   "    {\"op\": \"reshape\", \"name\": \"r\", \"x\": \"p\", \"shape\": [6, 12], "
                                   "\"type\": \"f143\", \"scale\": -3}\n"));
}

TEST(JsonFormat, HandWrittenDefaultsAndComments) {
  const Graph graph = read_graph_json(with_ops(R"(
    // a comment
    {"op": "gemm", "name": "g", "a": "x", "b": "w", "type": "f16"},
    /* another */ {"op": "gelu", "name": "h", "x": "g"})"));
  ASSERT_EQ(graph.ops.size(), 4u);
  EXPECT_EQ(graph.ops[3].approximation, GeluApproximation::Tanh);
  EXPECT_EQ(graph.type(graph.ops[3].results[0]), (TensorType{{2, 4}, kF16}));
  EXPECT_EQ(graph.outputs.at(0).first, "h");
}

TEST(JsonFormat, SyntaxErrorsGiveLineAndColumn) {
  EXPECT_EQ(read_error("{\n  \"format\": \"tilec-graph\",\n  \"version\" 1\n}"),
            "model.json:3:13: syntax error while parsing object separator - unexpected number "
            "literal; expected ':'");
  EXPECT_EQ(read_error(""),
            "model.json:1:1: syntax error while parsing value - unexpected end of input; expected "
            "'[', '{', or a literal");
  EXPECT_THAT(read_error("{\"a\": [1, 2,\n\n   ]}"), ::testing::StartsWith("model.json:3:4: "));
  // Found by fuzzing: a number beyond a double's range was an internal error.
  EXPECT_EQ(read_error("{\"format\": 1e30816}"), "model.json: number overflow parsing '1e30816'");
}

TEST(JsonFormat, StructureErrors) {
  EXPECT_EQ(read_error("[]"), "model.json: a graph file must be an object, not an array");
  EXPECT_EQ(read_error(R"({"format": "onnx", "version": 1, "outputs": []})"),
            "model.json: field 'format' is 'onnx', not 'tilec-graph'");
  EXPECT_EQ(read_error(R"({"format": "tilec-graph", "version": 2, "outputs": []})"),
            "model.json: version 2 is not supported (this tilec reads version 1)");
  EXPECT_EQ(read_error(R"({"format": "tilec-graph", "version": 1})"),
            "model.json: missing field 'outputs'");
  EXPECT_EQ(read_error(R"({"format": "tilec-graph", "version": 1, "outputs": [], "extra": 1})"),
            "model.json: unknown field 'extra' (a graph file takes format, version, inputs, "
            "parameters, ops, outputs)");
  EXPECT_EQ(read_error(R"({"format": "tilec-graph", "version": 1, "outputs": []})"),
            "model.json: graph: the graph has no outputs");
  EXPECT_EQ(read_error(R"({"format": "tilec-graph", "version": 1, "ops": [{"name": "a", "op": "gelu",
            "x": "b", "x": "c"}], "outputs": []})"),
            "model.json: ops[0]: duplicate field 'x'");
  EXPECT_EQ(read_error(std::string(100, '[') + std::string(100, ']')),
            "model.json: [0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
            "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
            "[0][0][0][0][0][0][0][0][0][0][0][0]: nesting deeper than 64 levels");
}

TEST(JsonFormat, InputErrors) {
  auto with_input = [](std::string_view input) {
    return fmt::format(R"({{"format": "tilec-graph", "version": 1, "inputs": [{}], "outputs": ["x"]}})",
                       input);
  };
  EXPECT_EQ(read_error(with_input(R"({"type": "f32", "shape": [1]})")),
            "model.json: inputs[0]: missing field 'name'");
  EXPECT_EQ(read_error(with_input(R"({"name": "x", "type": "f8", "shape": [1]})")),
            "model.json: input 'x': unknown type 'f8' (types: f32, f16, f143, f152, e4m3, e5m2)");
  EXPECT_EQ(read_error(with_input(R"({"name": "x", "type": "f16", "scale": 2, "shape": [1]})")),
            "model.json: input 'x': field 'scale' is for FP8 types, not f16");
  EXPECT_EQ(read_error(with_input(R"({"name": "x", "type": "f143", "scale": 99, "shape": [1]})")),
            "model.json: input 'x': scale 99 is beyond +-64");
  EXPECT_EQ(read_error(with_input(R"({"name": "x", "type": "f32", "shape": [2, "3"]})")),
            "model.json: input 'x': field 'shape' must be an integer, not a string");
  EXPECT_EQ(read_error(with_input(R"({"name": "x", "type": "f32", "shape": [2, -3]})")),
            "model.json: input 'x': the tensor has shape [2,-3]: every extent must be >= 1");
  EXPECT_EQ(read_error(with_input(R"({"name": "x", "type": "f32", "shape": [18446744073709551615]})")),
            "model.json: input 'x': field 'shape' is out of range");
  EXPECT_EQ(read_error(with_input(R"({"name": "x", "type": "f32"})")),
            "model.json: input 'x': missing field 'shape'");
}

TEST(JsonFormat, OpErrorsNameTheOp) {
  EXPECT_EQ(read_error(with_ops(R"({"op": "gemmm", "name": "h", "a": "x", "b": "w"})")),
            "model.json: op 'h': unknown op 'gemmm' (ops: gemm, gelu, add, sub, mul, div, pow, sqrt, erf, tanh, "
            "relu, sigmoid, exp, cast, layernorm, softmax, attention, reduce_mean, reduce_sum, reduce_max, "
            "transpose, concat, slice, gather, patchify, reshape, repeat)");
  EXPECT_EQ(read_error(with_ops(R"({"op": "gemm", "name": "h", "a": "x", "b": "w", "type": "f16",
                                    "transpose": true})")),
            "model.json: op 'h': unknown field 'transpose' (gemm takes op, name, a, b, type, scale, "
            "transpose_a, transpose_b)");
  EXPECT_EQ(read_error(with_ops(R"({"op": "gemm", "name": "h", "a": "x", "type": "f16"})")),
            "model.json: op 'h': missing field 'b'");
  EXPECT_EQ(read_error(with_ops(R"({"op": "gemm", "name": "h", "a": "x", "b": "w"})")),
            "model.json: op 'h': missing field 'type'");
  EXPECT_EQ(read_error(with_ops(R"({"name": "h", "a": "x"})")), "model.json: op 'h': missing field 'op'");
  EXPECT_EQ(read_error(with_ops(R"({"op": "gemm", "a": "x"})")), "model.json: ops[0]: missing field 'name'");
  EXPECT_EQ(read_error(with_ops(R"("gemm")")), "model.json: ops[0]: an op must be an object, not a string");
  EXPECT_EQ(read_error(with_ops(R"({"op": "gemm", "name": "h", "a": "xx", "b": "w", "type": "f16"})")),
            "model.json: op 'h': operand 'a' names unknown value 'xx'");
  EXPECT_EQ(read_error(with_ops(R"({"op": "gemm", "name": "h", "a": "x", "b": "w", "type": "f16",
                                    "transpose_a": "yes"})")),
            "model.json: op 'h': field 'transpose_a' must be a boolean, not a string");
  EXPECT_EQ(read_error(with_ops(R"({"op": "gemm", "name": "h", "a": "w", "b": "w", "type": "f16"})")),
            "model.json: op 'h': operand 'b' has shape [3,4] but operand 'a' needs K = 4");
  EXPECT_EQ(read_error(with_ops(R"({"op": "gelu", "name": "h", "x": "x", "approximation": "fast"})")),
            "model.json: op 'h': field 'approximation' is 'fast', not 'tanh' or 'erf'");
  EXPECT_EQ(read_error(with_ops(R"({"op": "gelu", "name": "h", "x": "x", "scale": 3})")),
            "model.json: op 'h': field 'scale' needs field 'type'");
  EXPECT_EQ(read_error(with_ops(R"({"op": "attention", "name": "h", "q": "x", "k": "x", "v": "x", "heads": 0})")),
            "model.json: op 'h': heads 0 must be from 1 to 2^20");
  EXPECT_EQ(read_error(with_ops(R"({"op": "attention", "name": "h", "q": "x", "k": "x", "v": "x", "heads": 2})")),
            "model.json: op 'h': 2 heads do not divide D = 3 of 'q' and E = 3 of 'v'");
  EXPECT_EQ(read_error(with_ops(R"({"op": "softmax", "name": "h", "x": "x", "axis": 1.5})")),
            "model.json: op 'h': field 'axis' must be an integer, not a number");
  EXPECT_EQ(read_error(with_ops(R"({"op": "layernorm", "name": "h", "x": "x", "gamma": "w",
                                    "beta": "w", "epsilon": 1e300})")),
            "model.json: op 'h': field 'epsilon' is 1e+300, beyond the range of a float");
  EXPECT_EQ(read_error(with_ops(R"({"op": "patchify", "name": "h", "x": "x"})")),
            "model.json: op 'h': missing field 'patch'");
  EXPECT_EQ(read_error(with_ops(R"({"op": "patchify", "name": "h", "x": "x", "patch": 2})")),
            "model.json: op 'h': operand 'x' has shape [2,3] but needs at least 3 axes ([..., H, W, C])");
  EXPECT_EQ(read_error(with_ops(R"({"op": "reshape", "name": "h", "x": "x", "shape": [4, -1]})")),
            "model.json: op 'h': shape [4,-1] cannot hold the 6 elements of operand 'x' [2,3]");
  EXPECT_EQ(read_error(with_ops(R"({"op": "reshape", "name": "h", "x": "x", "shape": 6})")),
            "model.json: op 'h': field 'shape' must be an array, not an integer");
  EXPECT_EQ(read_error(with_ops(R"({"op": "reshape", "name": "h", "x": "x", "shape": [6], "patch": 1})")),
            "model.json: op 'h': unknown field 'patch' (reshape takes op, name, x, shape, type, scale)");
  EXPECT_EQ(read_error(with_ops(R"({"op": "input", "name": "h"})")),
            "model.json: op 'h': inputs are declared in the top-level \"inputs\" list, not among the ops");
  EXPECT_EQ(read_error(with_ops(R"({"op": "gelu", "name": "x", "x": "x"})")),
            "model.json: op 'x': the name is already used by another op or value");
  EXPECT_EQ(read_error(with_ops(R"({"op": "gelu", "name": "h", "x": "x"})", R"(["nothing"])")),
            "model.json: output 'nothing': value names unknown value 'nothing'");
  EXPECT_EQ(read_error(with_ops(R"({"op": "gelu", "name": "h", "x": "x"})", R"([{"name": "y"}])")),
            "model.json: outputs[0]: missing field 'value'");
}

TEST(JsonFormat, RepeatErrorsNameTheRepeatAndTheBodyOp) {
  auto repeat = [](std::string_view fields) {
    return with_ops(fmt::format(R"({{"op": "repeat", "name": "r", {}}})", fields), R"(["r"])");
  };
  const char* body = R"("body": {"ops": [{"op": "gelu", "name": "g", "x": "x"}], "outputs": ["g"]})";
  EXPECT_NO_THROW(read_graph_json(repeat(fmt::format(R"("count": 2, "carried": ["x"], {})", body))));
  EXPECT_EQ(read_error(repeat(fmt::format(R"("count": 2, "carried": ["x"], "sequence": ["w"], {})", body))),
            "model.json: op 'r': sequence operand 'w' has shape [3,4] but its leading axis must equal "
            "the count 2");
  EXPECT_EQ(read_error(repeat(fmt::format(R"("count": "2", "carried": ["x"], {})", body))),
            "model.json: op 'r': field 'count' must be an integer, not a string");
  EXPECT_EQ(read_error(repeat(R"("count": 2, "carried": ["x"])")), "model.json: op 'r': missing field 'body'");
  EXPECT_EQ(read_error(repeat(R"("count": 2, "carried": ["x"], "invariant": ["w"],
      "body": {"ops": [{"op": "gemm", "name": "g", "a": "w", "b": "x", "type": "f32"}], "outputs": ["g"]})")),
            "model.json: op 'r': op 'g': operand 'b' has shape [2,3] but operand 'a' needs K = 4");
  EXPECT_EQ(read_error(repeat(R"("count": 2, "carried": ["x"],
      "body": {"ops": [{"op": "add", "name": "g", "a": "x", "b": "w"}], "outputs": ["g"]})")),
            "model.json: op 'r': op 'g': operand 'b' names 'w', which is outside this repeat body "
            "(pass it in as an invariant operand)");
  EXPECT_EQ(read_error(repeat(R"("count": 2, "carried": [{"name": "h", "value": "x"}],
      "body": {"ops": [{"op": "cast", "name": "g", "x": "h", "type": "f16"}], "outputs": ["g"]})")),
            "model.json: op 'r': repeat body output 0 'h' has type f16[2,3] but carried 'h' has type "
            "f32[2,3]");
  EXPECT_EQ(read_error(repeat(R"("count": 2, "carried": ["x"], "body": {"outputs": ["x"], "inputs": []})")),
            "model.json: op 'r': body: unknown field 'inputs' (a repeat body takes ops, outputs)");
  EXPECT_EQ(read_error(repeat(R"("count": 2, "carried": ["x"], "body": {"outputs": []})")),
            "model.json: op 'r': the body returns 0 values for 1 carried values");
}

TEST(JsonFormat, FilesNameThemselvesInErrors) {
  const std::string path = testing::TempDir() + "/broken_graph.json";
  std::ofstream(path) << "{\n  \"format\": \"tilec-graph\",\n  oops\n}";
  try {
    load_graph_file(path);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), ::testing::StartsWith(path + ":3:3: syntax error"));
  }
  EXPECT_THROW(load_graph_file(path + ".missing"), Error);
  const Graph graph = every_op_graph();
  save_graph_file(path, graph);
  EXPECT_EQ(first_difference(load_graph_file(path), graph), "");
}

}  // namespace
}  // namespace tilec::graph
