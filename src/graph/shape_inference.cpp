#include "graph/shape_inference.h"

#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace tilec::graph {

namespace {

constexpr std::array<std::string_view, 2> kAB{"a", "b"};
constexpr std::array<std::string_view, 1> kX{"x"};
constexpr std::array<std::string_view, 3> kLayerNorm{"x", "gamma", "beta"};
constexpr std::array<std::string_view, 3> kAttention{"q", "k", "v"};

Shape leading(const Shape& shape, std::size_t trailing_axes) {
  return Shape(shape.begin(), shape.end() - static_cast<std::ptrdiff_t>(trailing_axes));
}

Shape concat(Shape head, std::initializer_list<std::int64_t> tail) {
  head.insert(head.end(), tail);
  return head;
}

class OpChecker {
 public:
  OpChecker(const Op& op, std::span<const TensorType> operands)
      : op_(op), operands_(operands), where_(fmt::format("op '{}'", op.name)) {}

  std::vector<Shape> infer() {
    switch (op_.kind) {
      case OpKind::Input:
      case OpKind::Parameter: return {};
      case OpKind::Gemm: return {gemm()};
      case OpKind::Gelu:
      case OpKind::Cast: return {shape(0)};
      case OpKind::Add:
      case OpKind::Sub:
      case OpKind::Mul:
      case OpKind::Div:
      case OpKind::Pow: return {add()};
      case OpKind::Sqrt:
      case OpKind::Erf:
      case OpKind::Tanh:
      case OpKind::Relu:
      case OpKind::Sigmoid:
      case OpKind::Exp: return {shape(0)};
      case OpKind::ReduceMean:
      case OpKind::ReduceSum:
      case OpKind::ReduceMax: return {reduce()};
      case OpKind::Transpose: return {transpose()};
      case OpKind::Concat: return {concatenate()};
      case OpKind::Slice: return {slice()};
      case OpKind::Gather: return {gather()};
      case OpKind::LayerNorm: return {layernorm()};
      case OpKind::Softmax: return {softmax()};
      case OpKind::Attention: return {attention()};
      case OpKind::Patchify: return {patchify()};
      case OpKind::Reshape: return {reshape()};
      case OpKind::Repeat: return repeat();
    }
    throw_bad_input(where_, "unknown op kind {}", static_cast<int>(op_.kind));
  }

  void check_operand_count() {
    if (op_.kind == OpKind::Repeat) return;
    if (op_.kind == OpKind::Concat) {
      if (operands_.empty()) throw_bad_input(where_, "concat takes at least one operand");
      return;
    }
    const std::size_t expected = operand_roles(op_.kind).size();
    if (operands_.size() != expected)
      throw_bad_input(where_, "{} takes {} operands, not {}", op_kind_name(op_.kind), expected,
                      operands_.size());
  }

 private:
  const Shape& shape(std::size_t index) const { return operands_[index].shape; }
  std::string_view role(std::size_t index) const { return operand_roles(op_.kind)[index]; }
  std::string shape_of(std::size_t index) const { return shape_text(shape(index)); }

  void require_rank(std::size_t index, std::size_t rank, std::string_view form) const {
    if (shape(index).size() < rank)
      throw_bad_input(where_, "operand '{}' has shape {} but needs at least {} axes ({})",
                      role(index), shape_of(index), rank, form);
  }

  // Broadcasts the batch axes of two operands (all but their `trailing` last axes).
  Shape broadcast_batch(std::size_t first, std::size_t second, std::size_t trailing) const {
    std::optional<Shape> batch =
        broadcast_shapes(leading(shape(first), trailing), leading(shape(second), trailing));
    if (!batch)
      throw_bad_input(where_,
                      "operand '{}' has shape {} whose batch axes {} do not broadcast with "
                      "those of operand '{}' {}",
                      role(second), shape_of(second), shape_text(leading(shape(second), trailing)),
                      role(first), shape_text(leading(shape(first), trailing)));
    return *batch;
  }

  Shape gemm() const {
    require_rank(0, 2, "[..., M, K]");
    require_rank(1, 2, "[..., K, N]");
    const Shape& a = shape(0);
    const Shape& b = shape(1);
    const std::size_t ra = a.size(), rb = b.size();
    const std::int64_t m = op_.transpose_a ? a[ra - 1] : a[ra - 2];
    const std::int64_t k = op_.transpose_a ? a[ra - 2] : a[ra - 1];
    const std::int64_t kb = op_.transpose_b ? b[rb - 1] : b[rb - 2];
    const std::int64_t n = op_.transpose_b ? b[rb - 2] : b[rb - 1];
    if (k != kb)
      throw_bad_input(where_, "operand 'b' has shape {}{} but operand 'a' needs K = {}",
                      shape_of(1), op_.transpose_b ? " (transposed)" : "", k);
    return concat(broadcast_batch(0, 1, 2), {m, n});
  }

  Shape add() const {
    std::optional<Shape> result = broadcast_shapes(shape(0), shape(1));
    if (!result)
      throw_bad_input(where_, "operand 'b' has shape {} which does not broadcast with operand 'a' {}",
                      shape_of(1), shape_of(0));
    return *result;
  }

  Shape layernorm() const {
    require_rank(0, 1, "[..., W]");
    const Shape width{shape(0).back()};
    for (std::size_t index : {1, 2})
      if (shape(index) != width)
        throw_bad_input(where_, "operand '{}' has shape {} but operand 'x' needs {}",
                        role(index), shape_of(index), shape_text(width));
    if (!std::isfinite(op_.epsilon) || op_.epsilon < 0)
      throw_bad_input(where_, "epsilon {} must be finite and >= 0", op_.epsilon);
    return shape(0);
  }

  Shape softmax() const {
    const auto rank = static_cast<int>(shape(0).size());
    if (op_.axis < -rank || op_.axis >= rank)
      throw_bad_input(where_, "axis {} is out of range for operand 'x' of shape {}", op_.axis,
                      shape_of(0));
    return shape(0);
  }

  Shape attention() const {
    require_rank(0, 2, "[..., S, D]");
    require_rank(1, 2, "[..., T, D]");
    require_rank(2, 2, "[..., T, E]");
    const Shape& q = shape(0);
    const Shape& k = shape(1);
    const Shape& v = shape(2);
    if (k.back() != q.back())
      throw_bad_input(where_, "operand 'k' has shape {} but operand 'q' needs D = {}", shape_of(1),
                      q.back());
    if (v[v.size() - 2] != k[k.size() - 2])
      throw_bad_input(where_, "operand 'v' has shape {} but operand 'k' needs T = {}", shape_of(2),
                      k[k.size() - 2]);
    if (!std::isfinite(op_.attention_scale))
      throw_bad_input(where_, "attention scale {} must be finite", op_.attention_scale);
    const std::int64_t heads = op_.attention_heads;
    if (heads < 1) throw_bad_input(where_, "heads {} must be at least 1", heads);
    if (q.back() % heads != 0 || v.back() % heads != 0)
      throw_bad_input(where_, "{} heads do not divide D = {} of 'q' and E = {} of 'v'", heads, q.back(), v.back());
    Shape batch = broadcast_batch(0, 1, 2);
    std::optional<Shape> with_v = broadcast_shapes(batch, leading(v, 2));
    if (!with_v)
      throw_bad_input(where_, "operand 'v' has shape {} whose batch axes {} do not broadcast with {}",
                      shape_of(2), shape_text(leading(v, 2)), shape_text(batch));
    return concat(*with_v, {q[q.size() - 2], v.back()});
  }

  Shape patchify() const {
    require_rank(0, 3, "[..., H, W, C]");
    const Shape& x = shape(0);
    const std::size_t rank = x.size();
    const std::int64_t p = op_.patch;
    if (p < 1) throw_bad_input(where_, "patch {} must be at least 1", p);
    const std::int64_t height = x[rank - 3], width = x[rank - 2], channels = x[rank - 1];
    // As a convolution of stride p without padding: the last H mod p rows and
    // W mod p columns belong to no patch.
    if (height < p || width < p)
      throw_bad_input(where_, "operand 'x' has shape {} whose height {} and width {} do not hold one patch of {}",
                      shape_of(0), height, width, p);
    return concat(leading(x, 3), {(height / p) * (width / p), p * p * channels});
  }

  // NumPy's rule: one extent may be -1, standing for what the others leave.
  Shape reshape() const {
    const Shape& target = op_.target_shape;
    const std::int64_t elements = operands_[0].elements();
    std::int64_t known = 1;
    std::optional<std::size_t> free_axis;
    for (std::size_t axis = 0; axis < target.size(); ++axis) {
      const std::int64_t extent = target[axis];
      if (extent == -1 && !free_axis) {
        free_axis = axis;
        continue;
      }
      if (extent == -1)
        throw_bad_input(where_, "shape {} has more than one -1", shape_text(target));
      if (extent < 1)
        throw_bad_input(where_, "shape {} has extent {}: extents are >= 1, or one -1", shape_text(target), extent);
      // Saturates just above x's count, which the check below then reports.
      known = known > elements / extent ? elements + 1 : known * extent;
    }
    Shape result = target;
    if (free_axis && elements % known == 0) result[*free_axis] = elements / known;
    if ((free_axis && elements % known != 0) || (!free_axis && known != elements))
      throw_bad_input(where_, "shape {} cannot hold the {} elements of operand 'x' {}", shape_text(target),
                      elements, shape_of(0));
    return result;
  }

  // An axis of x in [-rank, rank), as a non-negative index.
  std::size_t axis_of(std::int64_t axis, std::string_view what) const {
    const auto rank = static_cast<std::int64_t>(shape(0).size());
    if (axis < -rank || axis >= rank)
      throw_bad_input(where_, "{} {} is out of range for operand 'x' of shape {}", what, axis, shape_of(0));
    return static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  }

  Shape reduce() const {
    const std::vector<std::int64_t>& axes = op_.axes;
    if (axes.empty()) throw_bad_input(where_, "axes must name at least one axis");
    for (std::size_t i = 0; i < axes.size(); ++i) {
      if (axes[i] < 0 || axes[i] >= static_cast<std::int64_t>(shape(0).size()))
        throw_bad_input(where_, "axis {} is out of range for operand 'x' of shape {}", axes[i], shape_of(0));
      if (i > 0 && axes[i] <= axes[i - 1])
        throw_bad_input(where_, "axes [{}] must be ascending without repeats", fmt::join(axes, ","));
    }
    Shape result;
    for (std::size_t axis = 0; axis < shape(0).size(); ++axis) {
      const bool reduced = std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(axis)) != axes.end();
      if (!reduced) result.push_back(shape(0)[axis]);
      else if (op_.keep_dims) result.push_back(1);
    }
    return result;
  }

  Shape transpose() const {
    const std::vector<std::int64_t>& permutation = op_.permutation;
    const std::size_t rank = shape(0).size();
    std::vector<bool> seen(rank, false);
    bool valid = permutation.size() == rank;
    for (std::int64_t axis : permutation) {
      valid = valid && axis >= 0 && axis < static_cast<std::int64_t>(rank) && !seen[static_cast<std::size_t>(axis)];
      if (valid) seen[static_cast<std::size_t>(axis)] = true;
    }
    if (!valid)
      throw_bad_input(where_, "permutation [{}] is not a permutation of the {} axes of operand 'x' {}",
                      fmt::join(permutation, ","), rank, shape_of(0));
    Shape result;
    for (std::int64_t axis : permutation) result.push_back(shape(0)[static_cast<std::size_t>(axis)]);
    return result;
  }

  Shape concatenate() const {
    const std::size_t axis = axis_of(op_.axis, "axis");
    Shape result = shape(0);
    for (std::size_t i = 1; i < operands_.size(); ++i) {
      Shape other = shape(i);
      bool matches = other.size() == result.size();
      for (std::size_t a = 0; matches && a < other.size(); ++a) matches = a == axis || other[a] == result[a];
      if (!matches)
        throw_bad_input(where_, "operand {} has shape {} which does not match operand 0 {} off axis {}", i,
                        shape_of(i), shape_of(0), axis);
      result[axis] += other[axis];
    }
    return result;
  }

  Shape slice() const {
    const Shape& x = shape(0);
    const std::size_t rank = x.size();
    if (op_.starts.size() != rank || op_.ends.size() != rank || op_.steps.size() != rank)
      throw_bad_input(where_, "starts, ends and steps need one entry per axis of operand 'x' {}", shape_of(0));
    Shape result;
    for (std::size_t axis = 0; axis < rank; ++axis) {
      const std::int64_t start = op_.starts[axis], end = op_.ends[axis], step = op_.steps[axis];
      const bool valid = step != 0 && start >= 0 && start < x[axis] &&
                         (step > 0 ? end > start && end <= x[axis] : end < start && end >= -1);
      if (!valid)
        throw_bad_input(where_, "axis {} of extent {}: start {}, end {}, step {} select no element", axis, x[axis],
                        start, end, step);
      const std::int64_t span = step > 0 ? end - start : start - end;
      const std::int64_t stride = step > 0 ? step : -step;
      result.push_back((span + stride - 1) / stride);
    }
    return result;
  }

  Shape gather() const {
    const std::size_t axis = axis_of(op_.axis, "axis");
    std::int64_t count = 1;
    for (std::int64_t extent : op_.indices_shape) {
      if (extent < 1) throw_bad_input(where_, "indices shape {} has an extent below 1", shape_text(op_.indices_shape));
      count *= extent;
    }
    if (count != static_cast<std::int64_t>(op_.indices.size()))
      throw_bad_input(where_, "{} indices do not fill indices shape {}", op_.indices.size(),
                      shape_text(op_.indices_shape));
    for (std::int64_t index : op_.indices)
      if (index < 0 || index >= shape(0)[axis])
        throw_bad_input(where_, "index {} is out of range for axis {} of operand 'x' {}", index, axis, shape_of(0));
    Shape result(shape(0).begin(), shape(0).begin() + static_cast<std::ptrdiff_t>(axis));
    result.insert(result.end(), op_.indices_shape.begin(), op_.indices_shape.end());
    result.insert(result.end(), shape(0).begin() + static_cast<std::ptrdiff_t>(axis) + 1, shape(0).end());
    return result;
  }

  std::vector<Shape> repeat() const {
    const RepeatSignature& signature = op_.signature;
    if (op_.count < 1) throw_bad_input(where_, "repeat count {} must be >= 1", op_.count);
    if (signature.carried < 1 || signature.sequence < 0 || signature.invariant < 0)
      throw_bad_input(where_, "repeat needs >= 1 carried operand, not {} ({} sequence, {} invariant)",
                      signature.carried, signature.sequence, signature.invariant);
    const auto arguments =
        static_cast<std::size_t>(signature.carried + signature.sequence + signature.invariant);
    if (operands_.size() != arguments)
      throw_bad_input(where_, "repeat signature names {} operands but the op has {}", arguments,
                      operands_.size());
    if (!op_.body) throw_bad_input(where_, "repeat has no body");
    const Graph& body = *op_.body;
    if (body.arguments.size() != arguments)
      throw_bad_input(where_, "repeat has {} operands but its body {} arguments", arguments,
                      body.arguments.size());
    for (std::size_t i = 0; i < arguments; ++i) check_repeat_argument(body, i);

    const auto carried = static_cast<std::size_t>(signature.carried);
    if (body.outputs.size() != carried)
      throw_bad_input(where_, "repeat body has {} outputs but {} carried values", body.outputs.size(),
                      carried);
    std::vector<Shape> results;
    for (std::size_t i = 0; i < carried; ++i) {
      const TensorType& output = body.type(body.outputs[i].second);
      if (!(output == operands_[i]))
        throw_bad_input(where_, "repeat body output {} '{}' has type {} but carried '{}' has type {}",
                        i, body.outputs[i].first, type_text(output),
                        body.value(body.arguments[i]).name, type_text(operands_[i]));
      results.push_back(operands_[i].shape);
    }
    return results;
  }

  void check_repeat_argument(const Graph& body, std::size_t index) const {
    const Value& argument = body.value(body.arguments[index]);
    const TensorType& operand = operands_[index];
    const auto carried = static_cast<std::size_t>(op_.signature.carried);
    const auto sequence = static_cast<std::size_t>(op_.signature.sequence);
    std::string_view kind = index < carried              ? "carried"
                            : index < carried + sequence ? "sequence"
                                                         : "invariant";
    TensorType expected = operand;
    if (kind == "sequence") {
      if (operand.shape.empty() || operand.shape[0] != op_.count)
        throw_bad_input(where_, "sequence operand '{}' has shape {} but its leading axis must equal "
                        "the count {}",
                        argument.name, shape_text(operand.shape), op_.count);
      expected.shape.erase(expected.shape.begin());
    }
    if (!(argument.type == expected))
      throw_bad_input(where_, "{} operand '{}' has type {} so its body argument needs {}, not {}",
                      kind, argument.name, type_text(operand), type_text(expected),
                      type_text(argument.type));
  }

  const Op& op_;
  std::span<const TensorType> operands_;
  std::string where_;
};

}  // namespace

std::string shape_text(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

void check_type(const std::string& where, const std::string& what, const TensorType& type) {
  std::int64_t elements = 1;
  for (std::int64_t extent : type.shape) {
    if (extent < 1)
      throw_bad_input(where, "{} has shape {}: every extent must be >= 1", what,
                      shape_text(type.shape));
    if (elements > kLargestElementCount / extent)
      throw_bad_input(where, "{} has shape {}: more than 2^40 elements", what,
                      shape_text(type.shape));
    elements *= extent;
  }
  const StorageType storage = type.storage;
  if (!is_fp8(storage.element) && storage.scale != 0)
    throw_bad_input(where, "{} has type {} with scale {}: only FP8 types take a scale", what,
                    element_type_name(storage.element), storage.scale);
  if (storage.scale < -kLargestFp8Scale || storage.scale > kLargestFp8Scale)
    throw_bad_input(where, "{} has scale {}: scales must lie within +-{}", what, storage.scale,
                    kLargestFp8Scale);
}

std::span<const std::string_view> operand_roles(OpKind kind) {
  switch (kind) {
    case OpKind::Gemm: return kAB;
    case OpKind::Gelu:
    case OpKind::Cast:
    case OpKind::Softmax:
    case OpKind::Patchify:
    case OpKind::Reshape:
    case OpKind::Transpose:
    case OpKind::Slice:
    case OpKind::Gather: return kX;
    case OpKind::LayerNorm: return kLayerNorm;
    case OpKind::Attention: return kAttention;
    default:
      if (is_binary_elementwise(kind)) return kAB;
      if (is_unary_elementwise(kind) || is_reduction(kind)) return kX;
      return {};
  }
}

std::vector<Shape> infer_result_shapes(const Op& op, std::span<const TensorType> operands) {
  OpChecker checker(op, operands);
  checker.check_operand_count();
  return checker.infer();
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    // Axes align from the right; a missing axis counts as extent 1.
    const std::int64_t ea = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t eb = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (ea != eb && ea != 1 && eb != 1) return std::nullopt;
    result[i] = std::max(ea, eb);
  }
  return result;
}

}  // namespace tilec::graph
