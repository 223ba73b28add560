// Nodes that move elements or compute shapes: Reshape, Flatten, Unsqueeze,
// Squeeze, Transpose, Concat, Slice, Gather, Shape, Size, ConstantOfShape.
#include "graph/shape_inference.h"
#include "onnx/node_importer.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace tilec::onnx_import {

namespace {

using graph::OpKind;
using graph::Shape;

void reshape(NodeImporter& n) {
  const StagedId x = n.input(0);
  const Shape& from = n.shape_of(x);
  Shape target = n.integer_input(1, "shape");
  const bool allow_zero = n.attribute_int("allowzero", 0) != 0;
  for (std::size_t axis = 0; axis < target.size(); ++axis)
    if (target[axis] == 0 && !allow_zero) {
      if (axis >= from.size()) n.unsupported(fmt::format("shape entry {} copies axis {} of a rank-{} value", axis, axis, from.size()));
      target[axis] = from[axis];
    }
  n.define(0, n.reshape(x, target));
}

void flatten(NodeImporter& n) {
  const StagedId x = n.input(0);
  const Shape& shape = n.shape_of(x);
  const std::size_t axis = n.attribute_int("axis", 1) == static_cast<std::int64_t>(shape.size())
                               ? shape.size()
                               : n.axis(n.attribute_int("axis", 1), shape.size(), "axis");
  n.define(0, n.reshape(x, {extent_product(shape, 0, axis), extent_product(shape, axis, shape.size())}));
}

// Axes from input 1 (opset 13) or the attribute (before).
std::vector<std::int64_t> axes_of(NodeImporter& n) {
  return n.has_input(1) ? n.integer_input(1, "axes") : n.attribute_ints("axes");
}

void unsqueeze(NodeImporter& n) {
  const StagedId x = n.input(0);
  Shape shape = n.shape_of(x);
  std::vector<std::int64_t> axes = axes_of(n);
  const std::size_t rank = shape.size() + axes.size();
  for (std::int64_t& axis : axes) axis = static_cast<std::int64_t>(n.axis(axis, rank, "axis"));
  std::sort(axes.begin(), axes.end());
  if (auto repeated = std::adjacent_find(axes.begin(), axes.end()); repeated != axes.end())
    n.unsupported(fmt::format("axis {} is named twice", *repeated));
  for (std::int64_t axis : axes) shape.insert(shape.begin() + axis, 1);
  n.define(0, n.reshape(x, shape));
}

void squeeze(NodeImporter& n) {
  const StagedId x = n.input(0);
  const Shape& shape = n.shape_of(x);
  std::vector<std::int64_t> axes = axes_of(n);
  for (std::int64_t& axis : axes) axis = static_cast<std::int64_t>(n.axis(axis, shape.size(), "axis"));
  Shape result;
  for (std::size_t axis = 0; axis < shape.size(); ++axis) {
    const bool named = std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(axis)) != axes.end();
    if (named && shape[axis] != 1) n.unsupported(fmt::format("axis {} has extent {}, not 1", axis, shape[axis]));
    if (!(named || (axes.empty() && shape[axis] == 1))) result.push_back(shape[axis]);
  }
  n.define(0, n.reshape(x, result));
}

void transpose(NodeImporter& n) {
  const StagedId x = n.input(0);
  const std::size_t rank = n.shape_of(x).size();
  std::vector<std::int64_t> permutation = n.attribute_ints("perm");
  if (permutation.empty())
    for (std::size_t axis = rank; axis-- > 0;) permutation.push_back(static_cast<std::int64_t>(axis));
  bool identity = true;
  for (std::size_t axis = 0; axis < permutation.size(); ++axis) identity = identity && permutation[axis] == static_cast<std::int64_t>(axis);
  if (identity && permutation.size() == rank) {
    n.define(0, x);
    return;
  }
  graph::Op op{.kind = OpKind::Transpose};
  op.permutation = permutation;
  n.define(0, n.stage(std::move(op), {x}));
}

void concat(NodeImporter& n) {
  std::vector<StagedId> operands;
  for (int i = 0; i < n.node().input_size(); ++i)
    if (n.has_input(i)) operands.push_back(n.input(i));
  // Empty operands (a shape of no axes) contribute nothing.
  std::erase_if(operands, [&](StagedId id) {
    return n.graph().constant(id) && n.graph().constant(id)->elements() == 0 && operands.size() > 1;
  });
  graph::Op op{.kind = OpKind::Concat};
  op.axis = static_cast<int>(n.axis(n.attribute_int("axis", 0), n.shape_of(operands.front()).size(), "axis"));
  n.define(0, n.stage(std::move(op), operands));
}

// ONNX's rules: negative indices count from the end, then starts and ends
// are clamped to the axis; a slice that keeps nothing is not a tilec value.
void slice(NodeImporter& n) {
  const StagedId x = n.input(0);
  const Shape& shape = n.shape_of(x);
  const std::vector<std::int64_t> starts = n.integer_input(1, "starts"), ends = n.integer_input(2, "ends");
  std::vector<std::int64_t> axes;
  if (n.has_input(3)) axes = n.integer_input(3, "axes");
  else for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  std::vector<std::int64_t> steps = n.has_input(4) ? n.integer_input(4, "steps") : std::vector<std::int64_t>(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    n.unsupported("starts, ends, axes and steps differ in length");
  graph::Op op{.kind = OpKind::Slice};
  op.starts.assign(shape.size(), 0);
  op.ends = shape;
  op.steps.assign(shape.size(), 1);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const std::size_t axis = n.axis(axes[i], shape.size(), "axis");
    const std::int64_t extent = shape[axis], step = steps[i];
    if (step == 0) n.unsupported("a step is 0");
    auto resolve = [&](std::int64_t index, std::int64_t low, std::int64_t high) {
      if (index < 0) index += extent;
      return std::clamp(index, low, high);
    };
    op.starts[axis] = step > 0 ? resolve(starts[i], 0, extent) : resolve(starts[i], 0, extent - 1);
    op.ends[axis] = step > 0 ? resolve(ends[i], 0, extent) : resolve(ends[i], -1, extent - 1);
    op.steps[axis] = step;
    const bool empty = step > 0 ? op.starts[axis] >= op.ends[axis] : op.starts[axis] <= op.ends[axis];
    if (empty && n.constant_input(0)) {
      // An empty constant (a shape's part of no axes) is fine at import time.
      HostTensor nothing{n.constant_input(0)->data_type, shape, {}};
      nothing.shape[axis] = 0;
      n.define(0, n.constant(std::move(nothing), n.graph().type(x).storage, ""));
      return;
    }
    if (empty || op.starts[axis] >= extent)
      n.unsupported(fmt::format("axis {} keeps no element; tilec has no empty values", axis));
  }
  n.define(0, n.stage(std::move(op), {x}));
}

void gather(NodeImporter& n) {
  const StagedId x = n.input(0);
  const Shape& shape = n.shape_of(x);
  const std::size_t axis = n.axis(n.attribute_int("axis", 0), shape.size(), "axis");
  const HostTensor* indices = n.constant_input(1);
  if (!indices) n.unsupported("its indices are computed at run time; tilec gathers constant indices");
  graph::Op op{.kind = OpKind::Gather};
  op.axis = static_cast<int>(axis);
  op.indices = indices->integers();
  for (std::int64_t& index : op.indices) {
    if (index < -shape[axis] || index >= shape[axis])
      n.unsupported(fmt::format("index {} is out of range for axis {} of extent {}", index, axis, shape[axis]));
    if (index < 0) index += shape[axis];
  }
  op.indices_shape = indices->shape;
  n.define(0, n.stage(std::move(op), {x}));
}

void shape(NodeImporter& n) {
  const Shape& shape = n.shape_of(n.input(0));
  const auto rank = static_cast<std::int64_t>(shape.size());
  auto clamp = [&](std::int64_t index) { return std::clamp(index < 0 ? index + rank : index, std::int64_t{0}, rank); };
  const std::int64_t start = clamp(n.attribute_int("start", 0));
  const std::int64_t end = clamp(n.attribute_int("end", rank));
  std::vector<std::int64_t> extents(shape.begin() + start, shape.begin() + std::max(start, end));
  n.define(0, n.constant(integer_tensor({static_cast<std::int64_t>(extents.size())}, extents),
                         StorageType{ElementType::F32, 0}, ""));
}

void size(NodeImporter& n) {
  const Shape& shape = n.shape_of(n.input(0));
  n.define(0, n.constant(integer_tensor({}, {extent_product(shape, 0, shape.size())}), StorageType{ElementType::F32, 0}, ""));
}

void constant_of_shape(NodeImporter& n) {
  const Shape extents = n.integer_input(0, "shape");
  HostTensor fill = float_tensor({1}, {0.0});
  if (const onnx::AttributeProto* value = n.attribute("value")) fill = read_tensor_proto(value->t(), n.where());
  if (fill.values.size() != 1) n.unsupported(fmt::format("its value holds {} elements, not one", fill.values.size()));
  for (std::int64_t extent : extents)
    if (extent < 0) n.unsupported(fmt::format("its shape [{}] has a negative extent", fmt::join(extents, ",")));
  if (bounded_element_count(extents) > kLargestComputedConstant)
    n.unsupported(fmt::format("its shape [{}] holds more than {} elements, the most tilec computes at import",
                              fmt::join(extents, ","), kLargestComputedConstant));
  HostTensor tensor{fill.data_type, extents, {}};
  tensor.values.assign(static_cast<std::size_t>(tensor.elements()), fill.values.front());
  n.define(0, n.constant(std::move(tensor), storage_of(fill.data_type).value_or(StorageType{ElementType::F32, 0}), ""));
}

}  // namespace

void add_layout_handlers(std::map<std::string, NodeHandler>& handlers) {
  handlers["Reshape"] = reshape;
  handlers["Flatten"] = flatten;
  handlers["Unsqueeze"] = unsqueeze;
  handlers["Squeeze"] = squeeze;
  handlers["Transpose"] = transpose;
  handlers["Concat"] = concat;
  handlers["Slice"] = slice;
  handlers["Gather"] = gather;
  handlers["Shape"] = shape;
  handlers["Size"] = size;
  handlers["ConstantOfShape"] = constant_of_shape;
}

}  // namespace tilec::onnx_import
