#include "graph/validate.h"

#include "graph/workloads.h"
#include "sample_graphs.h"
#include "support/error.h"

#include <gtest/gtest.h>

#include <functional>

namespace tilec::graph {
namespace {

using namespace testing_graphs;

// The error validate() gives for every_op_graph() after `damage`.
std::string error_after(const std::function<void(Graph&)>& damage) {
  Graph graph = every_op_graph();
  damage(graph);
  try {
    validate(graph);
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput);
    return error.what();
  }
  ADD_FAILURE() << "validate accepted the damaged graph";
  return "";
}

Op& op_named(Graph& graph, const std::string& name) {
  for (Op& op : graph.ops)
    if (op.name == name) return op;
  throw std::logic_error("no op " + name);
}

Graph& loop_body(Graph& graph) { return *op_named(graph, "loop").body; }

TEST(Validate, AcceptsBuiltGraphs) {
  EXPECT_NO_THROW(validate(every_op_graph()));
  for (std::int64_t blocks : {1, 2})
    EXPECT_NO_THROW(validate(build_workload("mlp", {.blocks = blocks, .bias = true})));
}

TEST(Validate, OperandsMustExistAndComeFirst) {
  EXPECT_EQ(error_after([](Graph& g) { op_named(g, "a").operands[1] = 99; }),
            "op 'a': operand id 99 is out of range");
  EXPECT_EQ(error_after([](Graph& g) { op_named(g, "g").operands[0] = op_named(g, "ge").results[0]; }),
            "op 'g': operand 'ge' is used before it is defined");
  EXPECT_EQ(error_after([](Graph& g) { std::swap(g.ops[0], g.ops[1]); }),
            "value 0 'x': its producer (op 0, result 0) does not list it");
}

TEST(Validate, NamesAndOrder) {
  EXPECT_EQ(error_after([](Graph& g) {
              op_named(g, "ln").name = std::string{"a"};
            }),
            "op 'a': two ops have this name");
  EXPECT_EQ(error_after([](Graph& g) { g.values[static_cast<std::size_t>(op_named(g, "sm").results[0])].name = std::string{"smx"}; }),
            "op 'sm': result 0 is named 'smx', not 'sm'");
  EXPECT_EQ(error_after([](Graph& g) { op_named(g, "c").name = std::string{"bad name"}; }),
            "op 12 'bad name': invalid op name");
  EXPECT_EQ(error_after([](Graph& g) { g.ops[1].kind = OpKind::Parameter; g.ops[2].kind = OpKind::Input; }),
            "op 'w': input after a parameter: inputs come first, then parameters, then ops");
}

TEST(Validate, TypesMustBeWhatTheBuilderInfers) {
  EXPECT_EQ(error_after([](Graph& g) {
              g.values[static_cast<std::size_t>(op_named(g, "a").results[0])].type.shape = {2, 4, 9};
            }),
            "op 'a': result 'a' has shape [2,4,9] but its operands give [2,4,8]");
  EXPECT_EQ(error_after([](Graph& g) { op_named(g, "g").transpose_b = false; op_named(g, "g").transpose_a = true; }),
            "op 'g': operand 'b' has shape [8,8] but operand 'a' needs K = 4");
  EXPECT_EQ(error_after([](Graph& g) {
              g.values[static_cast<std::size_t>(op_named(g, "x").results[0])].type.storage.scale = 1;
            }),
            "value 0 'x': the value has type f16 with scale 1: only FP8 types take a scale");
  EXPECT_EQ(error_after([](Graph& g) { op_named(g, "sm").axis = 5; }),
            "op 'sm': axis 5 is out of range for operand 'x' of shape [2,4,8]");
  EXPECT_EQ(error_after([](Graph& g) {
              g.values[static_cast<std::size_t>(op_named(g, "loop").results[0])].type.storage = kF32;
            }),
            "op 'loop': result 'loop#0' has type f32[2,4,8] but its carried operand f16[2,4,8]");
}

TEST(Validate, RepeatBodiesAreCheckedRecursively) {
  EXPECT_EQ(error_after([](Graph& g) { op_named(g, "loop").count = 4; }),
            "op 'loop': sequence operand 'w_i' has shape [3,8,8] but its leading axis must equal "
            "the count 4");
  EXPECT_EQ(error_after([](Graph& g) { op_named(g, "loop").body.reset(); }), "op 'loop': repeat has no body");
  EXPECT_EQ(error_after([](Graph& g) { op_named(loop_body(g), "mm").operands[1] = 1; }),
            "op 'loop': op 'mm': operand 'b' has shape [2,4,8] but operand 'a' needs K = 8");
  EXPECT_EQ(error_after([](Graph& g) { loop_body(g).outputs[0].first = std::string{"other"}; }),
            "op 'loop': output 'other': body output 0 must be named after carried argument 0");
  EXPECT_EQ(error_after([](Graph& g) { loop_body(g).outputs.pop_back(); }),
            "op 'loop': repeat body has 1 outputs but 2 carried values");
  EXPECT_EQ(error_after([](Graph& g) { loop_body(g).arguments.pop_back(); }),
            "op 'loop': value 3 'gamma': it has no producer op and is not an argument");
  EXPECT_EQ(error_after([](Graph& g) { op_named(g, "loop").signature.invariant = 0; }),
            "op 'loop': repeat signature names 3 operands but the op has 4");
}

TEST(Validate, OutputsAndArguments) {
  EXPECT_EQ(error_after([](Graph& g) { g.outputs.clear(); }), "graph: the graph has no outputs");
  EXPECT_EQ(error_after([](Graph& g) { g.outputs[0].second = 1000; }),
            "output 'y': value id 1000 is out of range");
  EXPECT_EQ(error_after([](Graph& g) { g.outputs[1].first = std::string{"y"}; }), "output 'y': two outputs have this name");
  EXPECT_EQ(error_after([](Graph& g) { g.arguments.push_back(0); }),
            "graph: only repeat bodies have arguments, this graph has 1");
}

}  // namespace
}  // namespace tilec::graph
