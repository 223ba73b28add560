// MatMul, Gemm, Softmax, LayerNormalization and Conv (as patch embedding).
#include "graph/layout.h"
#include "onnx/node_importer.h"

#include <fmt/format.h>

namespace tilec::onnx_import {

namespace {

using graph::OpKind;
using graph::Shape;

graph::Op gemm_op(bool transpose_a, bool transpose_b) {
  graph::Op op{.kind = OpKind::Gemm};
  op.transpose_a = transpose_a;
  op.transpose_b = transpose_b;
  return op;
}

// NumPy's matmul: a 1-D operand gains an axis of 1, which the result drops.
void matmul(NodeImporter& n) {
  StagedId a = n.input(0), b = n.input(1);
  const Shape a_shape = n.shape_of(a), b_shape = n.shape_of(b);
  if (a_shape.size() == 1) a = n.reshape(a, {1, a_shape[0]}, ".a");
  if (b_shape.size() == 1) b = n.reshape(b, {b_shape[0], 1}, ".b");
  const bool reshaped = a_shape.size() == 1 || b_shape.size() == 1;
  StagedId y = n.stage(gemm_op(false, false), {a, b}, n.output_storage(), reshaped ? ".gemm" : "");
  if (reshaped) {
    Shape result = n.shape_of(y);
    if (b_shape.size() == 1) result.pop_back();
    if (a_shape.size() == 1) result.erase(result.end() - (b_shape.size() == 1 ? 1 : 2));
    y = n.reshape(y, result);
  }
  n.define(0, y);
}

// alpha A' B' + beta C, with alpha folded into a constant B and beta into a
// constant C, so that a Gemm of weights stays one gemm and a bias add.
void gemm(NodeImporter& n) {
  const float alpha = n.attribute_float("alpha", 1.0f), beta = n.attribute_float("beta", 1.0f);
  const StorageType storage = n.output_storage();
  StagedId b = n.input(1);
  const bool scale_b = alpha != 1.0f && n.graph().constant(b);
  if (scale_b) b = n.stage(graph::Op{.kind = OpKind::Mul}, {b, n.scalar(alpha, storage, ".alpha")}, {}, ".b_scaled");
  const bool has_c = n.has_input(2);
  StagedId y = n.stage(gemm_op(n.attribute_int("transA", 0) != 0, n.attribute_int("transB", 0) != 0), {n.input(0), b},
                       storage, has_c || (alpha != 1.0f && !scale_b) ? ".gemm" : "");
  if (alpha != 1.0f && !scale_b)
    y = n.stage(graph::Op{.kind = OpKind::Mul}, {y, n.scalar(alpha, storage, ".alpha")}, storage, has_c ? ".scaled" : "");
  if (has_c) {
    StagedId c = n.input(2);
    if (beta != 1.0f) c = n.stage(graph::Op{.kind = OpKind::Mul}, {c, n.scalar(beta, storage, ".beta")}, storage, ".c_scaled");
    // A constant [1, N] bias broadcasts as [N], the form the compiler takes.
    if (n.graph().constant(c) && n.shape_of(c).size() == 2 && n.shape_of(c)[0] == 1) c = n.reshape(c, {n.shape_of(c)[1]}, ".bias");
    y = n.stage(graph::Op{.kind = OpKind::Add}, {y, c}, storage);
  }
  n.define(0, y);
}

// Softmax-13 works over one axis; before 13, over every axis from `axis` on
// (the input seen as 2-D).
void softmax(NodeImporter& n) {
  const StagedId x = n.input(0);
  const Shape shape = n.shape_of(x);
  graph::Op op{.kind = OpKind::Softmax};
  if (n.opset() >= 13) {
    op.axis = static_cast<int>(n.axis(n.attribute_int("axis", -1), shape.size(), "axis"));
    n.define(0, n.stage(std::move(op), {x}));
    return;
  }
  const std::size_t axis = n.axis(n.attribute_int("axis", 1), shape.size(), "axis");
  const StagedId flat = n.reshape(x, {extent_product(shape, 0, axis), extent_product(shape, axis, shape.size())}, ".flat");
  op.axis = -1;
  n.define(0, n.reshape(n.stage(std::move(op), {flat}, {}, ".normalised"), shape));
}

// Scale or bias of the normalised axes as a [W] operand.
StagedId row_operand(NodeImporter& n, int index, std::int64_t width, const std::string& suffix) {
  const StagedId operand = n.input(index);
  const std::int64_t count = extent_product(n.shape_of(operand), 0, n.shape_of(operand).size());
  if (count == width) return n.reshape(operand, {width}, suffix);
  const HostTensor* constant = n.constant_input(index);
  if (!constant || count != 1)
    n.unsupported(fmt::format("input {} has shape [{}]; tilec needs one value per normalised element ({})", index,
                              fmt::join(n.shape_of(operand), ","), width));
  HostTensor filled = *constant;
  filled.shape = {width};
  filled.values.assign(static_cast<std::size_t>(width), constant->values.front());
  return n.constant(std::move(filled), n.graph().type(operand).storage, suffix);
}

void layer_normalization(NodeImporter& n) {
  const StagedId x = n.input(0);
  const Shape shape = n.shape_of(x);
  const std::size_t axis = n.axis(n.attribute_int("axis", -1), shape.size(), "axis");
  const float epsilon = n.attribute_float("epsilon", 1e-5f);
  const std::int64_t width = extent_product(shape, axis, shape.size());
  const StorageType storage = n.output_storage();
  // Over the last axis alone, x is normalised as it is (the compiler's form).
  const bool flattened = axis + 1 != shape.size();
  const StagedId rows = flattened ? n.reshape(x, {extent_product(shape, 0, axis), width}, ".rows") : x;
  const StagedId gamma = row_operand(n, 1, width, ".scale");
  const StagedId beta = n.has_input(2) ? row_operand(n, 2, width, ".bias")
                                       : n.constant(float_tensor({width}, std::vector<double>(static_cast<std::size_t>(width), 0.0)),
                                                    n.graph().type(gamma).storage, ".bias");
  graph::Op op{.kind = OpKind::LayerNorm};
  op.epsilon = epsilon;
  n.define(0, n.reshape(n.stage(std::move(op), {rows, gamma, beta}, storage, flattened ? ".normalised" : ""), shape));
  const bool wants_statistics = (n.node().output_size() > 1 && !n.node().output(1).empty()) ||
                                (n.node().output_size() > 2 && !n.node().output(2).empty());
  if (!wants_statistics) return;
  // Mean and 1 / sqrt(var + epsilon), kept as extent 1 over the normalised axes.
  const StorageType f32{ElementType::F32, 0};
  graph::Op mean_op{.kind = OpKind::ReduceMean};
  for (std::size_t a = axis; a < shape.size(); ++a) mean_op.axes.push_back(static_cast<std::int64_t>(a));
  graph::Op variance_op = mean_op;
  const StagedId mean = n.stage(std::move(mean_op), {x}, f32, ".mean");
  const StagedId centred = n.stage(graph::Op{.kind = OpKind::Sub}, {x, mean}, f32, ".centred");
  const StagedId squares = n.stage(graph::Op{.kind = OpKind::Mul}, {centred, centred}, f32, ".squares");
  const StagedId variance = n.stage(std::move(variance_op), {squares}, f32, ".variance");
  const StagedId shifted = n.stage(graph::Op{.kind = OpKind::Add}, {variance, n.scalar(epsilon, f32, ".epsilon")}, f32, ".shifted");
  const StagedId deviation = n.stage(graph::Op{.kind = OpKind::Sqrt}, {shifted}, f32, ".deviation");
  n.define(1, mean);
  n.define(2, n.stage(graph::Op{.kind = OpKind::Div}, {n.scalar(1, f32, ".one"), deviation}, f32, ".inverse_deviation"));
}

// A convolution whose kernel equals its stride (no padding, dilation or
// groups) cuts the image into patches: patchify, then one GEMM with the
// kernel as a [p p C, O] matrix.
void conv(NodeImporter& n) {
  const StagedId x = n.input(0);
  const Shape shape = n.shape_of(x);
  const HostTensor* kernel = n.constant_input(1);
  if (shape.size() != 4 || !kernel || kernel->shape.size() != 4)
    n.unsupported("tilec imports a 2-D Conv of an NCHW value with a constant kernel");
  const std::vector<std::int64_t> kernel_shape = n.attribute_ints("kernel_shape", {kernel->shape[2], kernel->shape[3]});
  // The matrix below is read from the kernel's own extents.
  if (kernel_shape != std::vector<std::int64_t>{kernel->shape[2], kernel->shape[3]} || kernel->shape[2] < 1)
    n.unsupported(fmt::format("kernel_shape [{}] is not the kernel's own extents [{},{}]", fmt::join(kernel_shape, ","),
                              kernel->shape[2], kernel->shape[3]));
  const std::vector<std::int64_t> strides = n.attribute_ints("strides", {1, 1});
  const std::vector<std::int64_t> pads = n.attribute_ints("pads", {0, 0, 0, 0});
  const std::vector<std::int64_t> dilations = n.attribute_ints("dilations", {1, 1});
  const std::int64_t p = kernel_shape.at(0);
  const bool plain = std::all_of(pads.begin(), pads.end(), [](std::int64_t v) { return v == 0; }) &&
                     dilations == std::vector<std::int64_t>{1, 1} && n.attribute_int("group", 1) == 1 &&
                     (n.attribute_string("auto_pad", "NOTSET") == "NOTSET" || n.attribute_string("auto_pad", "") == "VALID");
  if (kernel_shape != std::vector<std::int64_t>{p, p} || strides != kernel_shape || !plain)
    n.unsupported(fmt::format("kernel [{}] with strides [{}]: tilec imports a Conv whose square kernel equals its "
                              "stride, without padding, dilation or groups",
                              fmt::join(kernel_shape, ","), fmt::join(strides, ",")));
  const std::int64_t outputs = kernel->shape[0], channels = kernel->shape[1];
  // Row (i p + j) C + c of the matrix is kernel element [o][c][i][j].
  HostTensor matrix{kernel->data_type, {p * p * channels, outputs}, {}};
  matrix.values.resize(static_cast<std::size_t>(p * p * channels * outputs));
  for (std::int64_t o = 0; o < outputs; ++o)
    for (std::int64_t c = 0; c < channels; ++c)
      for (std::int64_t i = 0; i < p; ++i)
        for (std::int64_t j = 0; j < p; ++j)
          matrix.values[static_cast<std::size_t>(((i * p + j) * channels + c) * outputs + o)] =
              kernel->values[static_cast<std::size_t>(((o * channels + c) * p + i) * p + j)];
  const StorageType storage = n.output_storage();
  graph::Op channels_last{.kind = OpKind::Transpose};
  channels_last.permutation = {0, 2, 3, 1};
  graph::Op patchify{.kind = OpKind::Patchify};
  patchify.patch = p;
  const StagedId patches = n.stage(std::move(patchify), {n.stage(std::move(channels_last), {x}, {}, ".nhwc")}, {}, ".patches");
  StagedId y = n.stage(gemm_op(false, false), {patches, n.constant(std::move(matrix), n.graph().type(n.input(1)).storage, ".kernel")},
                       storage, ".gemm");
  if (n.has_input(2)) y = n.stage(graph::Op{.kind = OpKind::Add}, {y, n.input(2)}, storage, ".bias");
  graph::Op channels_first{.kind = OpKind::Transpose};
  channels_first.permutation = {0, 3, 1, 2};
  n.define(0, n.stage(std::move(channels_first), {n.reshape(y, {shape[0], shape[2] / p, shape[3] / p, outputs}, ".grid")}));
}

}  // namespace

void add_nn_handlers(std::map<std::string, NodeHandler>& handlers) {
  handlers["MatMul"] = matmul;
  handlers["Gemm"] = gemm;
  handlers["Softmax"] = softmax;
  handlers["LayerNormalization"] = layer_normalization;
  handlers["Conv"] = conv;
}

}  // namespace tilec::onnx_import
