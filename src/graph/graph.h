// The graph IR: a shaped SSA graph of tensor operations.
//
// Decided here: every value's shape and storage type (element format and FP8
// scale), the ops and their attributes, and structured repetition (`repeat`
// holds its body once, however many iterations it runs). Not decided here:
// anything about the machine (layouts, tiles, memory): that is the compiler's
// mid-level IR.
#pragma once

#include "numerics/element_type.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tilec::graph {

using Shape = std::vector<std::int64_t>;

struct TensorType {
  Shape shape;
  StorageType storage;

  std::int64_t elements() const;
  std::int64_t bytes() const;
  bool operator==(const TensorType&) const = default;
};

// "f143(s=-4)[1,729,1152]", "f16[4304]".
std::string type_text(const TensorType& type);

using ValueId = std::int32_t;
constexpr ValueId kNoValue = -1;

enum class OpKind : std::uint8_t {
  Input,      // host input: data supplied at run time
  Parameter,  // weights: data supplied at load time; may be replicated on the device
  Gemm,       // A[..., M, K] x B[..., K, N] -> [..., M, N]; batch axes broadcast (NumPy rules)
  Gelu,       // elementwise
  Add,        // elementwise with NumPy broadcasting
  Cast,       // change storage type (format and/or scale)
  LayerNorm,  // over the last axis: (x - mean) / sqrt(var + epsilon) * gamma + beta
  Softmax,    // over `axis`
  Attention,  // scaled dot-product: softmax(Q K^T * scale) V over [..., S, D] operands
  Repeat,     // `count` iterations of `body`
  Patchify,   // [..., H, W, C] -> [..., (H/p)(W/p), p*p*C]: p x p patches as rows (a stride-p convolution's inputs)
  Reshape,    // the same elements, row-major, in another shape
  // Elementwise with NumPy broadcasting, as add: a - b, a * b, a / b, a^b.
  Sub,
  Mul,
  Div,
  Pow,
  // Elementwise on one operand.
  Sqrt,
  Erf,
  Tanh,
  Relu,
  Sigmoid,
  Exp,
  // Over `axes`, kept as extent 1 when `keep_dims`.
  ReduceMean,
  ReduceSum,
  ReduceMax,
  Transpose,  // result axis i is operand axis permutation[i]
  Concat,     // operands joined along `axis` (any number of operands, at least one)
  Slice,      // per axis: elements starts[i], starts[i] + steps[i], ... before ends[i]
  Gather,     // along `axis`, the constant `indices` (shape indices_shape) pick slices
};

std::string_view op_kind_name(OpKind kind);
std::optional<OpKind> parse_op_kind(std::string_view name);

// add, sub, mul, div, pow: two operands with NumPy broadcasting.
bool is_binary_elementwise(OpKind kind);
// sqrt, erf, tanh, relu, sigmoid, exp.
bool is_unary_elementwise(OpKind kind);
// reduce_mean, reduce_sum, reduce_max.
bool is_reduction(OpKind kind);

enum class GeluApproximation : std::uint8_t { Tanh, Erf };

struct Graph;

// Roles of a repeat body's arguments, in this order in Op::operands and in
// Graph::arguments of the body:
//   carried   - value threaded through iterations; the body returns its next
//               value; the repeat's results are their final values
//   sequence  - operand with a leading axis of length `count`; iteration i
//               sees slice i (this is how each block gets its own weights)
//   invariant - the same value in every iteration
struct RepeatSignature {
  int carried = 0;
  int sequence = 0;
  int invariant = 0;
};

struct Op {
  OpKind kind;
  std::string name;               // unique within its graph; used in errors
  std::vector<ValueId> operands;  // values of the enclosing graph
  std::vector<ValueId> results;   // one, except for repeat (one per carried value)

  // gemm
  bool transpose_a = false;
  bool transpose_b = false;
  // gelu
  GeluApproximation approximation = GeluApproximation::Tanh;
  // layernorm: operands (x, gamma, beta)
  float epsilon = 1e-6f;
  // softmax, concat and gather (negative counts from the end)
  int axis = -1;
  // attention: operands (q, k, v); scale 0 means 1/sqrt(D / heads). With
  // heads H, the last axes of q, k and v are H equal slices, one per head.
  float attention_scale = 0.0f;
  std::int64_t attention_heads = 1;
  // patchify: the patch side p
  std::int64_t patch = 0;
  // reshape: the result's shape; the builder resolves a -1 entry, so in a
  // built graph it equals the result's shape
  Shape target_shape;
  // reduce_*: the axes reduced (non-negative, ascending) and whether they
  // stay as extent 1
  std::vector<std::int64_t> axes;
  bool keep_dims = true;
  // transpose: result axis i is operand axis permutation[i]
  std::vector<std::int64_t> permutation;
  // slice, one entry per axis of x: index starts[i] (0 <= start < extent),
  // then every steps[i]-th (non-zero; negative walks backwards) while before
  // ends[i] (exclusive; -1 with a negative step reaches index 0). Every
  // axis keeps at least one element.
  std::vector<std::int64_t> starts, ends, steps;
  // gather: indices into x's `axis` (0 <= index < extent), row-major in
  // indices_shape ([] for one index, which drops the axis)
  std::vector<std::int64_t> indices;
  Shape indices_shape;
  // repeat
  std::int64_t count = 0;
  RepeatSignature signature;
  std::shared_ptr<Graph> body;
};

struct Value {
  TensorType type;
  std::string name;  // the producing op's name, or "op#k" for the k-th result
  std::int32_t producer = -1;  // index into Graph::ops; -1 for a body argument
  std::int32_t result_index = 0;
};

struct Graph {
  std::vector<Op> ops;        // in a valid order: operands come first
  std::vector<Value> values;  // indexed by ValueId
  std::vector<ValueId> arguments;  // repeat bodies only: see RepeatSignature
  std::vector<std::pair<std::string, ValueId>> outputs;  // name, value

  const Value& value(ValueId id) const { return values.at(static_cast<std::size_t>(id)); }
  const TensorType& type(ValueId id) const { return value(id).type; }
  const Op* producer(ValueId id) const;
  // Ops of kind Input / Parameter, in order.
  std::vector<const Op*> inputs() const;
  std::vector<const Op*> parameters() const;
};

}  // namespace tilec::graph
