// The reference interpreter's op kernels, in T = float (the reference)
// and T = double (the exact reference); included by reference.cpp only.
#pragma once

#include "graph/graph.h"
#include "graph/layout.h"
#include "graph/summation_order.h"
#include "numerics/fp8.h"
#include "numerics/reference_ops.h"
#include "support/error.h"
#include "support/parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

namespace tilec::graph::interpreter_ops {

// The interpreter runs in T = float (the reference: each result rounded to
// its storage type) or T = double (the exact reference: nothing rounded).
template <typename T>
using Values = std::vector<T>;

// A value during interpretation: its elements, rounded to its storage type
// in the FP32 reference. Shared, because carried and invariant values pass
// into every iteration unchanged. A source that only repeats read, as a
// sequence operand, keeps its stored tensor instead (`data` null) and is
// decoded one iteration's slice at a time: a tower's stacked weights
// would take 4 or 8 bytes an element decoded whole.
template <typename T>
struct Buffer {
  TensorType type;
  std::shared_ptr<const Values<T>> data;
  const Tensor* stored = nullptr;
};

inline std::int64_t product(const Shape& shape) {
  std::int64_t count = 1;
  for (std::int64_t extent : shape) count *= extent;
  return count;
}

inline Shape drop_last(const Shape& shape, std::size_t axes) {
  return Shape(shape.begin(), shape.end() - static_cast<std::ptrdiff_t>(axes));
}

// Runs body(begin, end) over [0, count) in chunks; elementwise work only, so
// the split cannot change a bit.
template <typename Body>
void for_chunks(std::int64_t count, Body&& body) {
  constexpr std::int64_t kChunk = 1 << 16;
  const std::int64_t chunks = (count + kChunk - 1) / kChunk;
  parallel_for(0, static_cast<std::size_t>(chunks), [&](std::size_t chunk) {
    const std::int64_t begin = static_cast<std::int64_t>(chunk) * kChunk;
    body(begin, std::min(count, begin + kChunk));
  });
}

// Maps flat indices of a broadcast result to flat indices of one operand
// (NumPy rules: shapes aligned on the right, extent-1 axes repeated).
class BroadcastMap {
 public:
  BroadcastMap(const Shape& operand, const Shape& result) : result_(result), strides_(result.size(), 0) {
    std::int64_t stride = 1;
    const std::size_t offset = result.size() - operand.size();
    for (std::size_t i = operand.size(); i-- > 0;) {
      if (operand[i] != 1) strides_[i + offset] = stride;
      stride *= operand[i];
    }
    // An operand that is the result's trailing axes (a bias, a position
    // embedding, an equal shape) repeats every `stride` result elements.
    std::size_t first = 0;
    while (first < operand.size() && operand[first] == 1) ++first;
    if (std::equal(operand.begin() + static_cast<std::ptrdiff_t>(first), operand.end(),
                   result.end() - static_cast<std::ptrdiff_t>(operand.size() - first)))
      period_ = stride;
  }

  // Operand index i % period() for result index i; 0 when it has no period.
  std::int64_t period() const { return period_; }

  std::int64_t operator()(std::int64_t flat) const {
    std::int64_t offset = 0;
    for (std::size_t axis = result_.size(); axis-- > 0;) {
      offset += flat % result_[axis] * strides_[axis];
      flat /= result_[axis];
    }
    return offset;
  }

 private:
  Shape result_;
  std::vector<std::int64_t> strides_;
  std::int64_t period_ = 0;
};

inline void round_to(Values<float>& values, StorageType storage) {
  if (storage.element == ElementType::F32) return;
  for_chunks(static_cast<std::int64_t>(values.size()), [&](std::int64_t begin, std::int64_t end) {
    round_to_storage(std::span<float>(values).subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin)),
                     storage);
  });
}

template <typename T>
std::span<const T> slice(const Buffer<T>& buffer, std::int64_t offset, std::int64_t count) {
  return std::span<const T>(*buffer.data).subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(count));
}

// How the FP32 reference sums a GEMM's K: in one part, in balanced parts,
// or as a plan splits it.
struct KOrder {
  int balanced_parts = 1;
  const reference::KSplit* split = nullptr;
};

// The FP32 reference's GEMM, or the FP64 one.
inline void gemm_kernel(std::span<const float> a, std::span<const float> b, std::span<float> c, std::int64_t m,
                 std::int64_t n, std::int64_t k, bool transpose_a, bool transpose_b, KOrder order) {
  if (order.split)
    reference::gemm(a, b, c, m, n, k, transpose_a, transpose_b, *order.split);
  else
    reference::gemm(a, b, c, m, n, k, transpose_a, transpose_b, order.balanced_parts);
}
inline void gemm_kernel(std::span<const double> a, std::span<const double> b, std::span<double> c, std::int64_t m,
                 std::int64_t n, std::int64_t k, bool transpose_a, bool transpose_b, KOrder) {
  reference::gemm(a, b, c, m, n, k, transpose_a, transpose_b);
}

template <typename T>
Values<T> gemm(const Op& op, const Buffer<T>& a, const Buffer<T>& b, const Shape& result, KOrder k_order) {
  const Shape& as = a.type.shape;
  const Shape& bs = b.type.shape;
  const std::int64_t m = result[result.size() - 2], n = result.back();
  const std::int64_t k = op.transpose_a ? as[as.size() - 2] : as.back();
  Values<T> c(static_cast<std::size_t>(product(result)));
  const Shape batch = drop_last(result, 2);
  const Shape a_batch = drop_last(as, 2), b_batch = drop_last(bs, 2);
  if (product(b_batch) == 1 && !op.transpose_a) {
    // One B for every batch element: a single GEMM over all rows of A.
    const std::int64_t rows = product(a_batch) * m;
    gemm_kernel(*a.data, *b.data, c, rows, n, k, false, op.transpose_b, k_order);
    return c;
  }
  const BroadcastMap a_map(a_batch, batch), b_map(b_batch, batch);
  for (std::int64_t i = 0; i < product(batch); ++i)
    gemm_kernel(slice(a, a_map(i) * m * k, m * k), slice(b, b_map(i) * k * n, k * n),
                std::span<T>(c).subspan(static_cast<std::size_t>(i * m * n), static_cast<std::size_t>(m * n)), m, n,
                k, op.transpose_a, op.transpose_b, k_order);
  return c;
}

template <typename T, typename Combine>
Values<T> broadcast_combine(const Buffer<T>& a, const Buffer<T>& b, const Shape& result, Combine combine) {
  Values<T> c(static_cast<std::size_t>(product(result)));
  const BroadcastMap a_map(a.type.shape, result), b_map(b.type.shape, result);
  const Values<T>& av = *a.data;
  const Values<T>& bv = *b.data;
  const std::int64_t a_period = a_map.period(), b_period = b_map.period();
  for_chunks(product(result), [&](std::int64_t begin, std::int64_t end) {
    if (a_period > 0 && b_period > 0) {
      // Both operands repeat along the result: walk them without dividing.
      std::size_t ia = static_cast<std::size_t>(begin % a_period), ib = static_cast<std::size_t>(begin % b_period);
      for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i) {
        c[i] = combine(av[ia], bv[ib]);
        if (++ia == static_cast<std::size_t>(a_period)) ia = 0;
        if (++ib == static_cast<std::size_t>(b_period)) ib = 0;
      }
      return;
    }
    for (std::int64_t i = begin; i < end; ++i)
      c[static_cast<std::size_t>(i)] =
          combine(av[static_cast<std::size_t>(a_map(i))], bv[static_cast<std::size_t>(b_map(i))]);
  });
  return c;
}

template <typename T>
Values<T> binary(OpKind kind, const Buffer<T>& a, const Buffer<T>& b, const Shape& result) {
  switch (kind) {
    case OpKind::Add: return broadcast_combine(a, b, result, [](T x, T y) { return x + y; });
    case OpKind::Sub: return broadcast_combine(a, b, result, [](T x, T y) { return x - y; });
    case OpKind::Mul: return broadcast_combine(a, b, result, [](T x, T y) { return x * y; });
    case OpKind::Div: return broadcast_combine(a, b, result, [](T x, T y) { return x / y; });
    default: return broadcast_combine(a, b, result, [](T x, T y) { return std::pow(x, y); });
  }
}

template <typename T, typename Function>
Values<T> map_values(const Buffer<T>& x, Function function) {
  Values<T> out(x.data->size());
  const Values<T>& in = *x.data;
  for_chunks(static_cast<std::int64_t>(in.size()), [&](std::int64_t begin, std::int64_t end) {
    for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i) out[i] = function(in[i]);
  });
  return out;
}

template <typename T>
Values<T> unary(OpKind kind, const Buffer<T>& x) {
  switch (kind) {
    case OpKind::Sqrt: return map_values(x, [](T v) { return std::sqrt(v); });
    case OpKind::Erf: return map_values(x, [](T v) { return std::erf(v); });
    case OpKind::Tanh: return map_values(x, [](T v) { return std::tanh(v); });
    case OpKind::Relu: return map_values(x, [](T v) { return v > T(0) ? v : T(0); });
    case OpKind::Sigmoid: return map_values(x, [](T v) { return T(1) / (T(1) + std::exp(-v)); });
    default: return map_values(x, [](T v) { return std::exp(v); });
  }
}

// Folds x's elements into their targets in row-major order (one FP32
// accumulator per result element, added to in that order).
template <typename T>
Values<T> reduce(const Op& op, const Buffer<T>& x, std::int64_t result_elements) {
  const std::vector<std::int64_t> targets = layout::reduction_targets(x.type.shape, op.axes);
  const Values<T>& in = *x.data;
  const bool is_max = op.kind == OpKind::ReduceMax;
  Values<T> out(static_cast<std::size_t>(result_elements), is_max ? -static_cast<T>(INFINITY) : T(0));
  for (std::size_t i = 0; i < in.size(); ++i) {
    T& target = out[static_cast<std::size_t>(targets[i])];
    // NaN propagates through max as through the sums.
    target = is_max ? (std::isnan(in[i]) || in[i] > target ? in[i] : target) : target + in[i];
  }
  if (op.kind == OpKind::ReduceMean) {
    const auto count = static_cast<T>(static_cast<std::int64_t>(in.size()) / result_elements);
    for (T& value : out) value /= count;
  }
  return out;
}

template <typename T>
Values<T> rearrange(const Op& op, const std::vector<const Buffer<T>*>& operands, const Shape& result) {
  const Buffer<T>& x = *operands.front();
  const std::span<const T> xs(*x.data);
  const auto axis_of = [&](int axis) {
    return static_cast<std::size_t>(axis < 0 ? axis + static_cast<int>(x.type.shape.size()) : axis);
  };
  switch (op.kind) {
    case OpKind::Transpose: return layout::transpose(xs, x.type.shape, op.permutation);
    case OpKind::Slice: return layout::slice(xs, x.type.shape, op, result);
    case OpKind::Gather: return layout::gather(xs, x.type.shape, axis_of(op.axis), op.indices);
    default: {
      std::vector<std::span<const T>> parts;
      std::vector<Shape> shapes;
      for (const Buffer<T>* operand : operands) {
        parts.emplace_back(*operand->data);
        shapes.push_back(operand->type.shape);
      }
      return layout::concat(parts, shapes, axis_of(op.axis));
    }
  }
}

template <typename T>
Values<T> gelu(const Op& op, const Buffer<T>& x) {
  Values<T> out(x.data->size());
  const Values<T>& in = *x.data;
  for_chunks(static_cast<std::int64_t>(in.size()), [&](std::int64_t begin, std::int64_t end) {
    for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i)
      out[i] = op.approximation == GeluApproximation::Tanh ? reference::gelu_tanh(in[i])
                                                            : reference::gelu_erf(in[i]);
  });
  return out;
}

// The FP32 reference's row kernels (in a plan's order when `split` is
// given), or the FP64 ones.
inline void softmax_kernel(std::span<const float> x, std::span<float> out, std::int64_t width,
                    const reference::RowSplit* split) {
  if (split)
    reference::softmax(x, out, width, *split);
  else
    reference::softmax(x, out, width);
}
inline void softmax_kernel(std::span<const double> x, std::span<double> out, std::int64_t width,
                           const reference::RowSplit*) {
  reference::softmax(x, out, width);
}
inline void layernorm_kernel(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta,
                      std::span<float> out, std::int64_t width, float epsilon, const reference::RowSplit* split) {
  if (split)
    reference::layernorm(x, gamma, beta, out, width, epsilon, *split);
  else
    reference::layernorm(x, gamma, beta, out, width, epsilon);
}
inline void layernorm_kernel(std::span<const double> x, std::span<const double> gamma, std::span<const double> beta,
                      std::span<double> out, std::int64_t width, double epsilon, const reference::RowSplit*) {
  reference::layernorm(x, gamma, beta, out, width, epsilon);
}

template <typename T>
Values<T> softmax(const Op& op, const Buffer<T>& x, const reference::RowSplit* split) {
  const Shape& shape = x.type.shape;
  const auto axis = static_cast<std::size_t>(op.axis < 0 ? op.axis + static_cast<int>(shape.size()) : op.axis);
  const std::int64_t length = shape[axis];
  const std::int64_t inner = product(Shape(shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, shape.end()));
  const std::int64_t outer = product(drop_last(shape, shape.size() - axis));
  Values<T> out(x.data->size());
  if (inner == 1) {
    softmax_kernel(std::span<const T>(*x.data), out, length, split);
    return out;
  }
  // Make the softmax axis innermost, normalise, and put it back.
  Values<T> moved(out.size()), normalised(out.size());
  auto moved_index = [&](std::int64_t o, std::int64_t l, std::int64_t i) {
    return static_cast<std::size_t>((o * inner + i) * length + l);
  };
  auto original_index = [&](std::int64_t o, std::int64_t l, std::int64_t i) {
    return static_cast<std::size_t>((o * length + l) * inner + i);
  };
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t l = 0; l < length; ++l)
      for (std::int64_t i = 0; i < inner; ++i) moved[moved_index(o, l, i)] = (*x.data)[original_index(o, l, i)];
  softmax_kernel(std::span<const T>(moved), normalised, length, split);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t l = 0; l < length; ++l)
      for (std::int64_t i = 0; i < inner; ++i) out[original_index(o, l, i)] = normalised[moved_index(o, l, i)];
  return out;
}

template <typename T>
Values<T> layernorm(const Op& op, const Buffer<T>& x, const Buffer<T>& gamma, const Buffer<T>& beta,
                    const reference::RowSplit* split) {
  Values<T> out(x.data->size());
  layernorm_kernel(std::span<const T>(*x.data), std::span<const T>(*gamma.data), std::span<const T>(*beta.data), out,
                   x.type.shape.back(), static_cast<T>(op.epsilon), split);
  return out;
}

// Columns [first, first + count) of a row-major [rows, cols] matrix.
template <typename T>
std::vector<T> columns_of(std::span<const T> matrix, std::int64_t rows, std::int64_t cols, std::int64_t first,
                          std::int64_t count) {
  std::vector<T> part(static_cast<std::size_t>(rows * count));
  for (std::int64_t r = 0; r < rows; ++r)
    std::copy_n(matrix.begin() + r * cols + first, count, part.begin() + r * count);
  return part;
}

// One head from its unscaled scores: the reference's softmax and P V, or
// (FP32, given a split) the plan's.
template <typename T>
void attention_head(std::vector<T>& scores, const std::vector<T>& vh, std::vector<T>& probabilities,
                    std::vector<T>& head_out, std::int64_t s, std::int64_t t, std::int64_t eh, T scale,
                    const reference::AttentionSplit* split) {
  if constexpr (std::is_same_v<T, float>)
    if (split) {
      reference::attention_head(scores, vh, head_out, s, t, eh, scale, *split);
      return;
    }
  for (T& score : scores) score *= scale;
  reference::softmax(std::span<const T>(scores), probabilities, t);
  gemm_kernel(probabilities, vh, head_out, s, eh, t, false, false, KOrder{});
}

template <typename T>
Values<T> attention(const Op& op, const Buffer<T>& q, const Buffer<T>& k, const Buffer<T>& v, const Shape& result,
                    const reference::AttentionSplit* split) {
  const Shape& qs = q.type.shape;
  const Shape& ks = k.type.shape;
  const std::int64_t heads = op.attention_heads;
  const std::int64_t s = qs[qs.size() - 2], d = qs.back(), t = ks[ks.size() - 2];
  const std::int64_t e = result.back();
  const std::int64_t dh = d / heads, eh = e / heads;
  const T scale = op.attention_scale != 0.0f ? static_cast<T>(op.attention_scale) : T(1) / std::sqrt(static_cast<T>(dh));
  const Shape batch = drop_last(result, 2);
  const BroadcastMap q_map(drop_last(qs, 2), batch), k_map(drop_last(ks, 2), batch),
      v_map(drop_last(v.type.shape, 2), batch);
  Values<T> out(static_cast<std::size_t>(product(result)));
  Values<T> scores(static_cast<std::size_t>(s * t)), probabilities(scores.size()),
      head_out(static_cast<std::size_t>(s * eh));
  for (std::int64_t i = 0; i < product(batch); ++i)
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::vector<T> qh = columns_of(slice(q, q_map(i) * s * d, s * d), s, d, h * dh, dh);
      const std::vector<T> kh = columns_of(slice(k, k_map(i) * t * d, t * d), t, d, h * dh, dh);
      const std::vector<T> vh = columns_of(slice(v, v_map(i) * t * e, t * e), t, e, h * eh, eh);
      gemm_kernel(qh, kh, scores, s, t, dh, false, true, KOrder{});
      attention_head(scores, vh, probabilities, head_out, s, t, eh, scale, split);
      for (std::int64_t r = 0; r < s; ++r)
        std::copy_n(head_out.begin() + r * eh, eh, out.begin() + (i * s + r) * e + h * eh);
    }
  return out;
}

// Row py*(W/p)+px of each batch item is patch (py, px); each patch row is
// its p rows of p pixels, C channels each, in that order. Pixels beyond the
// last whole patch (H mod p rows, W mod p columns) are left out.
template <typename T>
Values<T> patchify(const Op& op, const Buffer<T>& x) {
  const Shape& shape = x.type.shape;
  const std::size_t rank = shape.size();
  const std::int64_t height = shape[rank - 3], width = shape[rank - 2], channels = shape[rank - 1];
  const std::int64_t p = op.patch, across = width / p;
  const std::int64_t patches = (height / p) * across, row_length = p * channels;
  const Values<T>& in = *x.data;
  const std::int64_t items = product(drop_last(shape, 3));
  Values<T> out(static_cast<std::size_t>(items * patches * p * row_length));
  for (std::int64_t item = 0; item < items; ++item)
    for (std::int64_t patch = 0; patch < patches; ++patch)
      for (std::int64_t i = 0; i < p; ++i) {
        // Row i of a patch: p pixels that lie side by side in the image.
        const std::int64_t y = patch / across * p + i, x0 = patch % across * p;
        std::copy_n(in.begin() + ((item * height + y) * width + x0) * channels, row_length,
                    out.begin() + (item * patches + patch) * p * row_length + i * row_length);
      }
  return out;
}

}  // namespace tilec::graph::interpreter_ops
