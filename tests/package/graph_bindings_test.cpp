// check_bindings_match(): every way a package's bindings can disagree with
// the graph it is run with, each a one-line BadInput naming the binding.
#include "graph/builder.h"
#include "package/validate.h"
#include "sample_package.h"

#include <gtest/gtest.h>

#include <functional>

namespace tilec::package {
namespace {

using testing::bad_input_message;
using testing::piece;

graph::Graph sample_graph() {
  graph::GraphBuilder b;
  graph::ValueId x = b.input("x", {{4, 6}, {ElementType::F16, 0}});
  graph::ValueId w = b.parameter("w", {{6, 8}, {ElementType::F143, -3}});
  b.output("y", b.gemm("g", x, w, StorageType{ElementType::F32, 0}));
  return b.finish();
}

// Bindings of sample_graph(): x and y once on tile 0, w on tiles 0 and 1.
Package matching_package() {
  Package package = make_empty_package(ipu21_cut(2));
  package.bindings = {
      Binding{"x", BindingRole::Input, {{4, 6}, {ElementType::F16, 0}}, {piece(0, 0x80000, {0, 0}, {4, 6}, {6, 1})}},
      Binding{"w", BindingRole::Parameter, {{6, 8}, {ElementType::F143, -3}},
              {piece(0, 0x80100, {0, 0}, {6, 8}, {8, 1}), piece(1, 0x80100, {0, 0}, {6, 8}, {8, 1})}},
      Binding{"y", BindingRole::Output, {{4, 8}, {ElementType::F32, 0}}, {piece(0, 0x80200, {0, 0}, {4, 8}, {8, 1})}},
  };
  return package;
}

std::string error_after(const std::function<void(Package&)>& change) {
  Package package = matching_package();
  change(package);
  return bad_input_message([&] { check_bindings_match(package, sample_graph()); });
}

TEST(BindingsMatchTheGraph, AMatchingPackagePasses) {
  EXPECT_NO_THROW(check_bindings_match(matching_package(), sample_graph()));
}

// The loophole: a host input relabelled a parameter could be replicated and
// would count as weights, not inputs.
TEST(BindingsMatchTheGraph, AHostInputCannotBecomeAParameter) {
  EXPECT_EQ(error_after([](Package& p) {
              p.bindings[0].role = BindingRole::Parameter;
              p.bindings[0].pieces.push_back(piece(1, 0x80000, {0, 0}, {4, 6}, {6, 1}));
            }),
            "binding 'x': is bound as parameter, but it is the graph's input");
  EXPECT_EQ(error_after([](Package& p) { p.bindings[1].role = BindingRole::Input; }),
            "binding 'w': is bound as input, but it is the graph's parameter");
  EXPECT_EQ(error_after([](Package& p) { p.bindings[2].role = BindingRole::Parameter; }),
            "binding 'y': is bound as parameter, but it is the graph's output");
}

TEST(BindingsMatchTheGraph, ElementTypeScaleAndShapeMustBeTheGraphs) {
  EXPECT_EQ(error_after([](Package& p) { p.bindings[0].type.storage.element = ElementType::F32; }),
            "binding 'x': is f32[4,6], but the graph's input is f16[4,6]");
  EXPECT_EQ(error_after([](Package& p) { p.bindings[1].type.storage.scale = -2; }),
            "binding 'w': is f143(s=-2)[6,8], but the graph's parameter is f143(s=-3)[6,8]");
  EXPECT_EQ(error_after([](Package& p) { p.bindings[2].type.shape = {32}; }),
            "binding 'y': is f32[32], but the graph's output is f32[4,8]");
}

TEST(BindingsMatchTheGraph, EveryTensorIsBoundOnceAndNothingElse) {
  EXPECT_EQ(error_after([](Package& p) { p.bindings.push_back(p.bindings[0]); }),
            "binding 'x': is bound twice (a host tensor has one binding)");
  EXPECT_EQ(error_after([](Package& p) { p.bindings[2].name = "z"; }),
            "binding 'z': the graph has no input, parameter or output of that name");
  EXPECT_EQ(error_after([](Package& p) { p.bindings.erase(p.bindings.begin() + 1); }),
            "parameter 'w': the package has no binding for it");
}

// An input nothing reads needs no binding; bound, it is checked all the same.
TEST(BindingsMatchTheGraph, AnUnreadInputNeedsNoBinding) {
  graph::GraphBuilder b;
  graph::ValueId x = b.input("x", {{4, 6}, {ElementType::F16, 0}});
  b.input("like", {{2}, {ElementType::F32, 0}});
  graph::ValueId w = b.parameter("w", {{6, 8}, {ElementType::F143, -3}});
  b.output("y", b.gemm("g", x, w, StorageType{ElementType::F32, 0}));
  const graph::Graph graph = b.finish();
  Package package = matching_package();
  EXPECT_NO_THROW(check_bindings_match(package, graph));
  package.bindings.push_back(Binding{"like", BindingRole::Input, {{3}, {ElementType::F32, 0}}, {}});
  EXPECT_EQ(bad_input_message([&] { check_bindings_match(package, graph); }),
            "binding 'like': is f32[3], but the graph's input is f32[2]");
}

}  // namespace
}  // namespace tilec::package
