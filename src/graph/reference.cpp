#include "graph/reference.h"

#include "graph/layout.h"
#include "graph/validate.h"
#include "numerics/fp8.h"
#include "numerics/reference_ops.h"
#include "support/error.h"
#include "support/parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>
#include <type_traits>

namespace tilec::graph {

namespace {

// The interpreter runs in T = float (the reference: each result rounded to
// its storage type) or T = double (the exact reference: nothing rounded).
template <typename T>
using Values = std::vector<T>;

// A value during interpretation: its elements, rounded to its storage type
// in the FP32 reference. Shared, because carried and invariant values pass
// into every iteration unchanged.
template <typename T>
struct Buffer {
  TensorType type;
  std::shared_ptr<const Values<T>> data;
};

std::int64_t product(const Shape& shape) {
  std::int64_t count = 1;
  for (std::int64_t extent : shape) count *= extent;
  return count;
}

Shape drop_last(const Shape& shape, std::size_t axes) {
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

void round_to(Values<float>& values, StorageType storage) {
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
void gemm_kernel(std::span<const float> a, std::span<const float> b, std::span<float> c, std::int64_t m,
                 std::int64_t n, std::int64_t k, bool transpose_a, bool transpose_b, KOrder order) {
  if (order.split)
    reference::gemm(a, b, c, m, n, k, transpose_a, transpose_b, *order.split);
  else
    reference::gemm(a, b, c, m, n, k, transpose_a, transpose_b, order.balanced_parts);
}
void gemm_kernel(std::span<const double> a, std::span<const double> b, std::span<double> c, std::int64_t m,
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
void softmax_kernel(std::span<const float> x, std::span<float> out, std::int64_t width,
                    const reference::RowSplit* split) {
  if (split)
    reference::softmax(x, out, width, *split);
  else
    reference::softmax(x, out, width);
}
void softmax_kernel(std::span<const double> x, std::span<double> out, std::int64_t width, const reference::RowSplit*) {
  reference::softmax(x, out, width);
}
void layernorm_kernel(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta,
                      std::span<float> out, std::int64_t width, float epsilon, const reference::RowSplit* split) {
  if (split)
    reference::layernorm(x, gamma, beta, out, width, epsilon, *split);
  else
    reference::layernorm(x, gamma, beta, out, width, epsilon);
}
void layernorm_kernel(std::span<const double> x, std::span<const double> gamma, std::span<const double> beta,
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

template <typename T>
class Interpreter {
 public:
  using Buffer = graph::Buffer<T>;
  using Values = graph::Values<T>;

  Interpreter(bool keep_intermediates, int gemm_k_parts, const SummationOrder* order, TensorMap& intermediates)
      : keep_(keep_intermediates), gemm_k_parts_(gemm_k_parts), order_(order), intermediates_(intermediates) {}

  // Runs `graph` with its arguments (bodies) or with `sources` supplying its
  // inputs and parameters; returns its outputs' buffers in order. `scope`
  // prefixes op names in the summation order ("REPEAT." in a body).
  std::vector<Buffer> run(const Graph& graph, const std::vector<Buffer>& arguments,
                          const TensorMap* sources, const std::string& prefix, const std::string& scope = "") {
    std::vector<Buffer> values(graph.values.size());
    for (std::size_t i = 0; i < arguments.size(); ++i)
      values[static_cast<std::size_t>(graph.arguments[i])] = arguments[i];
    for (const Op& op : graph.ops) {
      try {
        execute(graph, op, values, sources, prefix, scope);
      } catch (const Error& error) {
        throw error.within(fmt::format("op '{}{}'", prefix, op.name));
      }
    }
    std::vector<Buffer> outputs;
    for (const auto& [name, id] : graph.outputs) outputs.push_back(values[static_cast<std::size_t>(id)]);
    return outputs;
  }

 private:
  static Buffer source(const Graph& graph, const Op& op, const TensorMap& sources) {
    const std::vector<float> stored = sources.at(op.name).to_floats();  // decoded exactly
    return Buffer{graph.type(op.results[0]), std::make_shared<const Values>(stored.begin(), stored.end())};
  }

  // The K order of gemm op `name`: the summation order's split when it
  // names the op, else balanced parts.
  KOrder k_order(const std::string& name) const {
    if (order_) {
      const auto found = order_->gemms.find(name);
      if (found != order_->gemms.end()) return KOrder{1, &found->second};
      return KOrder{};
    }
    return KOrder{gemm_k_parts_, nullptr};
  }

  // How the plan computes attention op `name`, when it says.
  const reference::AttentionSplit* attention_split(const std::string& name) const {
    if (!order_) return nullptr;
    const auto found = order_->attentions.find(name);
    return found == order_->attentions.end() ? nullptr : &found->second;
  }

  // How the plan computes row op `name`'s statistics, when it says.
  const reference::RowSplit* row_split(const std::string& name) const {
    if (!order_) return nullptr;
    const auto found = order_->rows.find(name);
    return found == order_->rows.end() ? nullptr : &found->second;
  }

  void execute(const Graph& graph, const Op& op, std::vector<Buffer>& values, const TensorMap* sources,
               const std::string& prefix, const std::string& scope) {
    auto operand = [&](std::size_t i) -> const Buffer& {
      return values[static_cast<std::size_t>(op.operands[i])];
    };
    if (op.kind == OpKind::Input || op.kind == OpKind::Parameter) {
      TILEC_CHECK(sources, "{} '{}' inside a repeat body", op_kind_name(op.kind), op.name);
      values[static_cast<std::size_t>(op.results[0])] = source(graph, op, *sources);
      return;
    }
    if (op.kind == OpKind::Repeat) {
      std::vector<Buffer> results = repeat(op, values, prefix, scope);
      for (std::size_t i = 0; i < results.size(); ++i) store(graph, op.results[i], values, results[i], prefix);
      return;
    }
    const TensorType& type = graph.type(op.results[0]);
    Values result;
    switch (op.kind) {
      case OpKind::Gemm: result = gemm(op, operand(0), operand(1), type.shape, k_order(scope + op.name)); break;
      case OpKind::Gelu: result = gelu(op, operand(0)); break;
      case OpKind::Add:
      case OpKind::Sub:
      case OpKind::Mul:
      case OpKind::Div:
      case OpKind::Pow: result = binary(op.kind, operand(0), operand(1), type.shape); break;
      case OpKind::Sqrt:
      case OpKind::Erf:
      case OpKind::Tanh:
      case OpKind::Relu:
      case OpKind::Sigmoid:
      case OpKind::Exp: result = unary(op.kind, operand(0)); break;
      case OpKind::ReduceMean:
      case OpKind::ReduceSum:
      case OpKind::ReduceMax: result = reduce(op, operand(0), type.elements()); break;
      case OpKind::Transpose:
      case OpKind::Slice:
      case OpKind::Gather:
      case OpKind::Concat: {
        std::vector<const Buffer*> buffers;
        for (std::size_t i = 0; i < op.operands.size(); ++i) buffers.push_back(&operand(i));
        result = rearrange(op, buffers, type.shape);
        break;
      }
      case OpKind::Cast: result = *operand(0).data; break;
      case OpKind::LayerNorm:
        result = layernorm(op, operand(0), operand(1), operand(2), row_split(scope + op.name));
        break;
      case OpKind::Softmax: result = softmax(op, operand(0), row_split(scope + op.name)); break;
      case OpKind::Attention:
        result = attention(op, operand(0), operand(1), operand(2), type.shape, attention_split(scope + op.name));
        break;
      case OpKind::Patchify: result = patchify(op, operand(0)); break;
      case OpKind::Reshape: result = *operand(0).data; break;
      default: TILEC_CHECK(false, "op kind {} has no interpreter", op_kind_name(op.kind));
    }
    if constexpr (std::is_same_v<T, float>) round_to(result, type.storage);
    store(graph, op.results[0], values, Buffer{type, std::make_shared<const Values>(std::move(result))},
          prefix);
  }

  void store(const Graph& graph, ValueId id, std::vector<Buffer>& values, Buffer buffer,
             const std::string& prefix) {
    if constexpr (std::is_same_v<T, float>)
      if (keep_)
        intermediates_.insert_or_assign(prefix + graph.value(id).name, Tensor::from_floats(buffer.type, *buffer.data));
    values[static_cast<std::size_t>(id)] = std::move(buffer);
  }

  std::vector<Buffer> repeat(const Op& op, const std::vector<Buffer>& values, const std::string& prefix,
                             const std::string& scope) {
    const auto carried = static_cast<std::size_t>(op.signature.carried);
    const auto sequence_end = carried + static_cast<std::size_t>(op.signature.sequence);
    std::vector<Buffer> operands;
    for (ValueId id : op.operands) operands.push_back(values[static_cast<std::size_t>(id)]);
    std::vector<Buffer> state(operands.begin(), operands.begin() + static_cast<std::ptrdiff_t>(carried));
    for (std::int64_t iteration = 0; iteration < op.count; ++iteration) {
      std::vector<Buffer> arguments = state;
      for (std::size_t i = carried; i < operands.size(); ++i) {
        if (i >= sequence_end) {
          arguments.push_back(operands[i]);
          continue;
        }
        // Iteration `iteration` sees slice `iteration` of the leading axis.
        TensorType type = operands[i].type;
        type.shape.erase(type.shape.begin());
        const std::int64_t size = type.elements();
        std::span<const T> part = slice(operands[i], iteration * size, size);
        arguments.push_back(Buffer{type, std::make_shared<const Values>(part.begin(), part.end())});
      }
      state = run(*op.body, arguments, nullptr, fmt::format("{}{}[{}].", prefix, op.name, iteration),
                  scope + op.name + ".");
    }
    return state;
  }

  bool keep_;
  int gemm_k_parts_;
  const SummationOrder* order_;
  TensorMap& intermediates_;
};

// Every input and parameter must be given with exactly its graph type.
void check_sources(const Graph& graph, const TensorMap& tensors) {
  for (const Op& op : graph.ops) {
    if (op.kind != OpKind::Input && op.kind != OpKind::Parameter) continue;
    const std::string where = fmt::format("{} '{}'", op_kind_name(op.kind), op.name);
    const TensorType& type = graph.type(op.results[0]);
    auto found = tensors.find(op.name);
    if (found == tensors.end()) throw_bad_input(where, "no tensor given for it");
    if (!(found->second.type == type))
      throw_bad_input(where, "the graph needs {}, the tensor given is {}", type_text(type),
                      type_text(found->second.type));
    if (static_cast<std::int64_t>(found->second.bytes.size()) != type.bytes())
      throw_bad_input(where, "the tensor holds {} bytes, not {}", found->second.bytes.size(),
                      type.bytes());
  }
}

// Every op the order names must be a gemm of the graph (a body's as
// "REPEAT.NAME"), so that a stale order cannot pass unnoticed.
// Every op the order names must be one of the graph's of that kind (a
// body's as "REPEAT.NAME"), so that a stale order cannot pass unnoticed.
void collect_ops(const Graph& graph, const std::string& scope, std::map<std::string, OpKind>& kinds) {
  for (const Op& op : graph.ops) {
    kinds.emplace(scope + op.name, op.kind);
    if (op.body) collect_ops(*op.body, scope + op.name + ".", kinds);
  }
}

void check_order_names(const Graph& graph, const SummationOrder& order) {
  std::map<std::string, OpKind> kinds;
  collect_ops(graph, "", kinds);
  for (const auto& [name, split] : order.gemms) {
    const auto found = kinds.find(name);
    if (found == kinds.end() || found->second != OpKind::Gemm)
      throw_bad_input(fmt::format("summation order of op '{}'", name), "the graph has no gemm of that name");
  }
  for (const auto& [name, split] : order.attentions) {
    const auto found = kinds.find(name);
    if (found == kinds.end() || found->second != OpKind::Attention)
      throw_bad_input(fmt::format("summation order of op '{}'", name), "the graph has no attention of that name");
  }
  for (const auto& [name, split] : order.rows) {
    const auto found = kinds.find(name);
    if (found == kinds.end() || (found->second != OpKind::LayerNorm && found->second != OpKind::Softmax))
      throw_bad_input(fmt::format("summation order of op '{}'", name),
                      "the graph has no layernorm or softmax of that name");
  }
}

ReferenceResult run_interpreter(const Graph& graph, const TensorMap& tensors, bool keep_intermediates,
                                int gemm_k_parts, const SummationOrder* order);

}  // namespace

ReferenceResult run_reference(const Graph& graph, const TensorMap& tensors, bool keep_intermediates,
                              int gemm_k_parts) {
  return run_interpreter(graph, tensors, keep_intermediates, gemm_k_parts, nullptr);
}

ReferenceResult run_reference(const Graph& graph, const TensorMap& tensors, const SummationOrder& order,
                              bool keep_intermediates) {
  check_order_names(graph, order);
  return run_interpreter(graph, tensors, keep_intermediates, 1, &order);
}

namespace {

ReferenceResult run_interpreter(const Graph& graph, const TensorMap& tensors, bool keep_intermediates,
                                int gemm_k_parts, const SummationOrder* order) {
  validate(graph);
  check_sources(graph, tensors);
  ReferenceResult result;
  Interpreter<float> interpreter(keep_intermediates, gemm_k_parts, order, result.intermediates);
  std::vector<Buffer<float>> outputs = interpreter.run(graph, {}, &tensors, "");
  for (std::size_t i = 0; i < outputs.size(); ++i)
    result.outputs.insert_or_assign(graph.outputs[i].first,
                                    Tensor::from_floats(outputs[i].type, *outputs[i].data));
  return result;
}

}  // namespace

const Tensor& output_like(const TensorMap& values, const std::string& name, const Tensor& expected) {
  const auto found = values.find(name);
  if (found == values.end()) throw_bad_input("output '" + name + "'", "the device has no such output");
  if (!(found->second.type == expected.type))
    throw_bad_input("output '" + name + "'", "the device's is {} but the reference's is {}", type_text(found->second.type),
                    type_text(expected.type));
  return found->second;
}

std::int64_t differing_elements(const TensorMap& values, const TensorMap& reference) {
  std::int64_t differing = 0;
  for (const auto& [name, expected] : reference) {
    // Decoding is exact and one-to-one but for NaNs, so equal float bits
    // are equal stored bits.
    const std::vector<float> want = expected.to_floats(), got = output_like(values, name, expected).to_floats();
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (std::isnan(got[i]) && std::isnan(want[i])) continue;
      if (std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(want[i])) ++differing;
    }
  }
  return differing;
}

ExactOutputs run_exact_reference(const Graph& graph, const TensorMap& tensors) {
  validate(graph);
  check_sources(graph, tensors);
  TensorMap unused;
  Interpreter<double> interpreter(false, 1, nullptr, unused);
  std::vector<Buffer<double>> outputs = interpreter.run(graph, {}, &tensors, "");
  ExactOutputs exact;
  for (std::size_t i = 0; i < outputs.size(); ++i) exact.insert_or_assign(graph.outputs[i].first, *outputs[i].data);
  return exact;
}

}  // namespace tilec::graph
