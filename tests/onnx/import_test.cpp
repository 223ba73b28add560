#include "onnx/import.h"

#include "graph/reference.h"
#include "onnx/node_test.h"
#include "support/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <limits>

namespace tilec::onnx_import {
namespace {

using ::testing::HasSubstr;

// A model built node by node with ONNX's protobuf classes.
class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 17) {
    model_.set_ir_version(8);
    model_.add_opset_import()->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  // dims: an extent, or -1 for a named dynamic axis.
  ModelBuilder& input(const std::string& name, std::vector<std::int64_t> dims, int type = 1) {
    describe(model_.mutable_graph()->add_input(), name, dims, type);
    return *this;
  }
  ModelBuilder& output(const std::string& name, std::vector<std::int64_t> dims, int type = 1) {
    describe(model_.mutable_graph()->add_output(), name, dims, type);
    return *this;
  }
  ModelBuilder& initializer(const std::string& name, std::vector<std::int64_t> dims, std::vector<float> values) {
    onnx::TensorProto* tensor = model_.mutable_graph()->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(1);
    for (std::int64_t d : dims) tensor->add_dims(d);
    for (float v : values) tensor->add_float_data(v);
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs) {
    onnx::NodeProto* node = model_.mutable_graph()->add_node();
    node->set_op_type(op);
    node->set_name(outputs.at(0));
    for (const auto& in : inputs) node->add_input(in);
    for (const auto& out : outputs) node->add_output(out);
    return *node;
  }
  std::string bytes() const { return model_.SerializeAsString(); }
  onnx::ModelProto& model() { return model_; }

 private:
  static void describe(onnx::ValueInfoProto* info, const std::string& name, const std::vector<std::int64_t>& dims, int type) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(type);
    for (std::int64_t d : dims) {
      auto* dim = tensor->mutable_shape()->add_dim();
      if (d < 0) dim->set_dim_param("batch");
      else dim->set_dim_value(d);
    }
  }
  onnx::ModelProto model_;
};


std::string import_error(const std::string& bytes, const ImportOptions& options = {}) {
  try {
    import_model_bytes(bytes, "model.onnx", options);
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

ModelBuilder linear_model() {
  ModelBuilder m;
  m.input("x", {2, 3}).initializer("w", {3, 2}, {1, 2, 3, 4, 5, 6}).initializer("b", {2}, {0.5f, -1}).output("y", {2, 2});
  m.node("MatMul", {"x", "w"}, {"h"});
  m.node("Add", {"h", "b"}, {"y"});
  return m;
}

TEST(OnnxImport, MatMulAndBiasBecomeGemmAndAdd) {
  const ImportedModel model = import_model_bytes(linear_model().bytes(), "model.onnx");
  ASSERT_EQ(model.graph.ops.size(), 5u);
  EXPECT_EQ(model.graph.ops[3].kind, graph::OpKind::Gemm);
  EXPECT_EQ(model.graph.ops[4].kind, graph::OpKind::Add);
  EXPECT_EQ(model.parameters.at("w").to_floats(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  const graph::TensorMap data = {{"x", graph::Tensor::from_floats({{2, 3}, {ElementType::F32, 0}}, std::vector<float>{1, 0, 0, 0, 1, 1})},
                                 {"w", model.parameters.at("w")},
                                 {"b", model.parameters.at("b")}};
  EXPECT_EQ(graph::run_reference(model.graph, data).outputs.at("y").to_floats(), (std::vector<float>{1.5f, 1, 8.5f, 9}));
}

TEST(OnnxImport, ShapeArithmeticIsFoldedAtImport) {
  ModelBuilder simple;
  simple.input("x", {2, 3, 4}).output("y", {2, 12});
  onnx::NodeProto& minus_one = simple.node("Constant", {}, {"target"});
  auto* target = minus_one.add_attribute();
  target->set_name("value_ints");
  target->set_type(onnx::AttributeProto::INTS);
  target->add_ints(0);
  target->add_ints(-1);
  simple.node("Reshape", {"x", "target"}, {"flat"});
  simple.node("Shape", {"flat"}, {"s"});
  simple.node("Reshape", {"flat", "s"}, {"y"});
  const ImportedModel model = import_model_bytes(simple.bytes(), "model.onnx");
  // No Shape op survives: both reshapes' targets were known at import.
  ASSERT_EQ(model.graph.ops.size(), 2u);
  EXPECT_EQ(model.graph.ops[1].kind, graph::OpKind::Reshape);
  EXPECT_EQ(model.graph.type(model.graph.outputs[0].second).shape, (graph::Shape{2, 12}));
}

TEST(OnnxImport, GeluErfFormBecomesOneGelu) {
  ModelBuilder m;
  m.input("x", {4, 8}).initializer("root2", {}, {1.4142135f}).initializer("one", {}, {1}).initializer("half", {}, {0.5f});
  m.output("y", {4, 8});
  m.node("Div", {"x", "root2"}, {"d"});
  m.node("Erf", {"d"}, {"e"});
  m.node("Add", {"e", "one"}, {"a"});
  m.node("Mul", {"x", "a"}, {"m"});
  m.node("Mul", {"m", "half"}, {"y"});
  const ImportedModel model = import_model_bytes(m.bytes(), "model.onnx");
  ASSERT_EQ(model.graph.ops.size(), 2u);
  EXPECT_EQ(model.graph.ops[1].kind, graph::OpKind::Gelu);
  EXPECT_EQ(model.graph.ops[1].approximation, graph::GeluApproximation::Erf);
  ImportOptions unfused;
  unfused.fuse = false;
  EXPECT_EQ(import_model_bytes(m.bytes(), "model.onnx", unfused).graph.ops.size(), 9u);
}

TEST(OnnxImport, DecomposedLayerNormBecomesLayerNorm) {
  ModelBuilder m(13);
  m.input("x", {3, 4}).initializer("two", {}, {2}).initializer("eps", {}, {1e-5f});
  m.initializer("gamma", {4}, {1, 2, 3, 4}).initializer("beta", {4}, {0, 0, 1, 1}).output("y", {3, 4});
  auto axes = [](onnx::NodeProto& node) {
    auto* attribute = node.add_attribute();
    attribute->set_name("axes");
    attribute->set_type(onnx::AttributeProto::INTS);
    attribute->add_ints(-1);
  };
  axes(m.node("ReduceMean", {"x"}, {"mean"}));
  m.node("Sub", {"x", "mean"}, {"d"});
  m.node("Pow", {"d", "two"}, {"p"});
  axes(m.node("ReduceMean", {"p"}, {"var"}));
  m.node("Add", {"var", "eps"}, {"ve"});
  m.node("Sqrt", {"ve"}, {"s"});
  m.node("Div", {"d", "s"}, {"n"});
  m.node("Mul", {"n", "gamma"}, {"g"});
  m.node("Add", {"g", "beta"}, {"y"});
  const ImportedModel model = import_model_bytes(m.bytes(), "model.onnx");
  ASSERT_EQ(model.graph.ops.back().kind, graph::OpKind::LayerNorm);
  EXPECT_FLOAT_EQ(model.graph.ops.back().epsilon, 1e-5f);
  EXPECT_EQ(model.graph.parameters().size(), 2u);  // gamma and beta; the constants went with their ops
}

TEST(OnnxImport, BadModelsGiveOneLine) {
  const std::string bytes = linear_model().bytes();
  EXPECT_THAT(import_error(bytes.substr(0, bytes.size() / 2)), HasSubstr("model.onnx: is not an ONNX model"));
  EXPECT_THAT(import_error("not a model at all"), HasSubstr("model.onnx: is not an ONNX model"));

  ModelBuilder unknown;
  unknown.input("x", {2, 2}).output("y", {2, 2});
  unknown.node("MatMul", {"x"}, {"y"});  // one operand of two
  EXPECT_THAT(import_error(unknown.bytes()), HasSubstr("ONNX's checker rejects the model"));
  ModelBuilder unsupported;
  unsupported.input("x", {2, 2}).output("y", {2, 2});
  unsupported.node("Abs", {"x"}, {"y"});
  EXPECT_EQ(import_error(unsupported.bytes()), "model.onnx: node 'y' (Abs): tilec does not import this op");

  ModelBuilder dynamic;
  dynamic.input("x", {-1, 3}).initializer("w", {3, 2}, {1, 2, 3, 4, 5, 6}).output("y", {-1, 2});
  dynamic.node("MatMul", {"x", "w"}, {"y"});
  EXPECT_EQ(import_error(dynamic.bytes()),
            "model.onnx: input 'x' axis 0 ('batch') is dynamic: fix it with --shape x=d0,d1,...");
  ImportOptions fixed;
  fixed.shapes["x"] = {5, 3};
  EXPECT_EQ(import_model_bytes(dynamic.bytes(), "model.onnx", fixed).graph.type(0).shape, (graph::Shape{5, 3}));
  fixed.shapes["x"] = {5, 4};
  EXPECT_EQ(import_error(dynamic.bytes(), fixed), "--shape x: axis 1 is fixed at 3 in the model, not 4");
  fixed.shapes = {{"z", {1}}};
  EXPECT_EQ(import_error(dynamic.bytes(), fixed), "model.onnx: --shape names 'z', which is no input of the model");

  ModelBuilder short_weights;
  short_weights.input("x", {2, 3}).initializer("w", {3, 2}, {1, 2, 3, 4, 5}).output("y", {2, 2});
  short_weights.node("MatMul", {"x", "w"}, {"y"});
  EXPECT_THAT(import_error(short_weights.bytes()), HasSubstr("initializer 'w'"));
}

TEST(OnnxImport, DeeplyNestedModelsAreRefusedAtParse) {
  // Each If's branch is a graph holding the next If: three messages a level.
  auto nested = [](int levels) {
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.add_opset_import()->set_version(17);
    onnx::GraphProto* graph = model.mutable_graph();
    for (int level = 0; level < levels; ++level) {
      onnx::NodeProto* node = graph->add_node();
      node->set_op_type("If");
      onnx::AttributeProto* branch = node->add_attribute();
      branch->set_name("then_branch");
      branch->set_type(onnx::AttributeProto::GRAPH);
      graph = branch->mutable_g();
    }
    return model.SerializeAsString();
  };
  EXPECT_THAT(import_error(nested(12)), HasSubstr("nested more than 32 messages deep"));
  // Within the bound the model parses, and is refused for its op.
  EXPECT_THAT(import_error(nested(8)), HasSubstr("(If): tilec does not import this op"));
}

// ONNX's shape inference copies raw data into a buffer its size rounded
// down to whole elements: a ragged length must stop the import first.
TEST(OnnxImport, RawDataThatDisagreesWithItsShapeIsRefusedBeforeOnnxReadsIt) {
  ModelBuilder m;
  m.input("x", {2, 3}).output("y", {3, 2});
  onnx::TensorProto* shape = m.model().mutable_graph()->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(7);
  shape->add_dims(2);
  shape->set_raw_data(std::string(15, '\0'));
  m.node("Reshape", {"x", "shape"}, {"y"});
  EXPECT_EQ(import_error(m.bytes()), "model.onnx: initializer 'shape': holds 15 bytes of raw data but its shape [2] needs 16");
  onnx::NodeProto& constant = m.node("Constant", {}, {"c"});
  onnx::AttributeProto* value = constant.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(1);
  value->mutable_t()->set_raw_data(std::string(3, '\0'));
  shape->set_raw_data(std::string(16, '\0'));
  EXPECT_EQ(import_error(m.bytes()), "model.onnx: node 'c' (Constant): tensor '': holds 3 bytes of raw data but its shape [] needs 4");
}

TEST(OnnxImport, ConvWhoseKernelIsItsStrideIsAPatchEmbedding) {
  ModelBuilder m;
  m.input("image", {1, 2, 4, 4}).output("y", {1, 3, 2, 2});
  std::vector<float> kernel(3 * 2 * 2 * 2);
  for (std::size_t i = 0; i < kernel.size(); ++i) kernel[i] = static_cast<float>(i % 5) - 2;
  m.initializer("k", {3, 2, 2, 2}, kernel).initializer("bias", {3}, {1, 0, -1});
  onnx::NodeProto& conv = m.node("Conv", {"image", "k", "bias"}, {"y"});
  for (const char* name : {"kernel_shape", "strides"}) {
    auto* attribute = conv.add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::INTS);
    attribute->add_ints(2);
    attribute->add_ints(2);
  }
  const ImportedModel model = import_model_bytes(m.bytes(), "model.onnx");
  std::vector<float> pixels(32);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(i) * 0.25f;
  graph::TensorMap data = model.parameters;
  data.emplace("image", graph::Tensor::from_floats({{1, 2, 4, 4}, {ElementType::F32, 0}}, pixels));
  const std::vector<float> y = graph::run_reference(model.graph, data).outputs.at("y").to_floats();
  ASSERT_EQ(y.size(), 12u);
  // y[o][py][px] = bias[o] + sum over c, i, j of k[o][c][i][j] image[c][2py+i][2px+j].
  for (int o = 0; o < 3; ++o)
    for (int py = 0; py < 2; ++py)
      for (int px = 0; px < 2; ++px) {
        float sum = o == 0 ? 1.0f : o == 1 ? 0.0f : -1.0f;
        for (int c = 0; c < 2; ++c)
          for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j)
              sum += kernel[static_cast<std::size_t>(((o * 2 + c) * 2 + i) * 2 + j)] *
                     pixels[static_cast<std::size_t>((c * 4 + 2 * py + i) * 4 + 2 * px + j)];
        EXPECT_FLOAT_EQ(y[static_cast<std::size_t>((o * 2 + py) * 2 + px)], sum) << o << py << px;
      }
}

TEST(OnnxImport, ConvKernelShapeMustBeTheKernelsOwn) {
  ModelBuilder m;
  m.input("image", {1, 1, 6, 6}).output("y", {1, 1, 2, 2});
  m.initializer("k", {1, 1, 2, 2}, {1, 1, 1, 1});
  onnx::NodeProto& conv = m.node("Conv", {"image", "k"}, {"y"});
  for (const char* name : {"kernel_shape", "strides"}) {
    auto* attribute = conv.add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::INTS);
    attribute->add_ints(3);
    attribute->add_ints(3);
  }
  EXPECT_EQ(import_error(m.bytes()), "model.onnx: node 'y' (Conv): kernel_shape [3,3] is not the kernel's own extents [2,2]");
}

void add_ints(onnx::NodeProto& node, const std::string& name, std::vector<std::int64_t> values) {
  auto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INTS);
  for (std::int64_t v : values) attribute->add_ints(v);
}

// Models whose nodes pass ONNX's checks but that the importer must refuse
// before it indexes or allocates past what the model holds.
TEST(OnnxImport, NodesThatWouldOverrunTheImporterGiveOneLine) {
  auto fill = [](std::vector<std::int64_t> extents, int value_elements) {
    ModelBuilder m(13);
    m.input("x", {1}).output("y", std::vector<std::int64_t>(extents.size(), -1));
    onnx::TensorProto* shape = m.model().mutable_graph()->add_initializer();
    shape->set_name("s");
    shape->set_data_type(7);
    shape->add_dims(static_cast<std::int64_t>(extents.size()));
    for (std::int64_t e : extents) shape->add_int64_data(e);
    onnx::NodeProto& node = m.node("ConstantOfShape", {"s"}, {"c"});
    if (value_elements != 1) {
      auto* value = node.add_attribute();
      value->set_name("value");
      value->set_type(onnx::AttributeProto::TENSOR);
      value->mutable_t()->set_data_type(1);
      value->mutable_t()->add_dims(value_elements);
      for (int i = 0; i < value_elements; ++i) value->mutable_t()->add_float_data(1);
    }
    m.node("Add", {"x", "c"}, {"y"});
    return m.bytes();
  };
  EXPECT_EQ(import_model_bytes(fill({2, 3}, 1), "model.onnx").parameters.at("c").elements(), 6);
  EXPECT_EQ(import_error(fill({100000, 100000, 1000}, 1)),
            "model.onnx: node 'c' (ConstantOfShape): its shape [100000,100000,1000] holds more than 16777216 "
            "elements, the most tilec computes at import");
  EXPECT_EQ(import_error(fill({2}, 0)), "model.onnx: node 'c' (ConstantOfShape): its value holds 0 elements, not one");

  ModelBuilder unsqueeze(13);
  unsqueeze.input("x", {1}).output("y", {-1, -1, -1});
  add_ints(unsqueeze.node("Constant", {}, {"axes"}), "value_ints", {1, 1});
  unsqueeze.node("Unsqueeze", {"x", "axes"}, {"y"});
  EXPECT_EQ(import_error(unsqueeze.bytes()), "model.onnx: node 'y' (Unsqueeze): axis 1 is named twice");

  // ONNX 1.12's own inference of the statistics indexes with this axis.
  ModelBuilder layernorm(17);
  layernorm.input("x", {2, 4}).initializer("g", {4}, {1, 1, 1, 1}).output("y", {2, 4});
  onnx::NodeProto& node = layernorm.node("LayerNormalization", {"x", "g"}, {"y", "mean"});
  auto* axis = node.add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(-5);
  EXPECT_EQ(import_error(layernorm.bytes()), "model.onnx: node 'y' (LayerNormalization): axis -5 is out of range for rank 2");
  axis->set_i(-1);
  EXPECT_NO_THROW(import_model_bytes(layernorm.bytes(), "model.onnx"));
}

TEST(OnnxImport, NaNCastToAnIntegerReadsAsZero) {
  EXPECT_EQ(float_tensor({3}, {NAN, 2.5, -1e300}).integers(),
            (std::vector<std::int64_t>{0, 2, std::numeric_limits<std::int64_t>::min()}));
}

TEST(OnnxImport, ShapeOverridesParse) {
  EXPECT_EQ(parse_shape_override("x=1,40,64"), (std::pair<std::string, graph::Shape>{"x", {1, 40, 64}}));
  for (const char* bad : {"x", "=1", "x=", "x=1,,2", "x=0", "x=a"})
    EXPECT_THROW(parse_shape_override(bad), Error) << bad;
}

// ONNX's own backend tests of the ops the issue lists, on the host reference.
TEST(OnnxNodeTests, RepresentativeTestsPassOnTheHost) {
  const std::string root = "/usr/share/libonnx-testdata/data/node/";
  for (const char* name : {"test_gemm_all_attributes", "test_softmax_axis_1_expanded", "test_layer_normalization_3d_axis1_epsilon_expanded",
                           "test_transpose_all_permutations_4", "test_reshape_negative_extended_dims", "test_concat_3d_axis_negative_2",
                           "test_reduce_mean_do_not_keepdims_random", "test_matmul_4d"}) {
    const NodeTest test = load_node_test(root + name);
    for (const NodeTestSet& set : test.sets) {
      graph::TensorMap data = set.inputs;
      for (const auto& [key, tensor] : set.model.parameters) data.insert_or_assign(key, tensor);
      const graph::TensorMap outputs = graph::run_reference(set.model.graph, data).outputs;
      for (const auto& [output, expected] : set.expected)
        EXPECT_EQ(compare_with_expected(outputs.at(output), expected), "") << name << " " << output;
    }
  }
}

TEST(OnnxNodeTests, ComparisonUsesTheBackendTolerance) {
  const HostTensor expected = float_tensor({3}, {1000, 0, NAN});
  const StorageType f32{ElementType::F32, 0};
  EXPECT_EQ(compare_with_expected(graph::Tensor::from_floats({{3}, f32}, std::vector<float>{1000.9f, 0, NAN}), expected), "");
  EXPECT_THAT(compare_with_expected(graph::Tensor::from_floats({{3}, f32}, std::vector<float>{1001.2f, 0, NAN}), expected),
              HasSubstr("1 of 3 elements beyond tolerance; element 0"));
  EXPECT_THAT(compare_with_expected(graph::Tensor::from_floats({{3}, f32}, std::vector<float>{1000, 1e-6f, NAN}), expected),
              HasSubstr("element 1"));
  EXPECT_THAT(compare_with_expected(graph::Tensor::from_floats({{1, 3}, f32}, std::vector<float>{1000, 0, NAN}), expected),
              HasSubstr("shape [1,3] where ONNX expects [3]"));
}

}  // namespace
}  // namespace tilec::onnx_import
