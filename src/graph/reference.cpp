#include "graph/reference.h"

#include "graph/layout.h"
#include "graph/validate.h"
#include "numerics/fp8.h"
#include "numerics/reference_ops.h"
#include "support/error.h"
#include "support/parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

namespace tilec::graph {

namespace {

using Values = std::vector<float>;

// A value during interpretation: its elements as FP32, already rounded to
// its storage type. Shared, because carried and invariant values pass into
// every iteration unchanged.
struct Buffer {
  TensorType type;
  std::shared_ptr<const Values> data;
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

void round_to(Values& values, StorageType storage) {
  if (storage.element == ElementType::F32) return;
  for_chunks(static_cast<std::int64_t>(values.size()), [&](std::int64_t begin, std::int64_t end) {
    round_to_storage(std::span<float>(values).subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin)),
                     storage);
  });
}

std::span<const float> slice(const Buffer& buffer, std::int64_t offset, std::int64_t count) {
  return std::span<const float>(*buffer.data).subspan(static_cast<std::size_t>(offset),
                                                      static_cast<std::size_t>(count));
}

Values gemm(const Op& op, const Buffer& a, const Buffer& b, const Shape& result, int k_parts) {
  const Shape& as = a.type.shape;
  const Shape& bs = b.type.shape;
  const std::int64_t m = result[result.size() - 2], n = result.back();
  const std::int64_t k = op.transpose_a ? as[as.size() - 2] : as.back();
  Values c(static_cast<std::size_t>(product(result)));
  const Shape batch = drop_last(result, 2);
  const Shape a_batch = drop_last(as, 2), b_batch = drop_last(bs, 2);
  if (product(b_batch) == 1 && !op.transpose_a) {
    // One B for every batch element: a single GEMM over all rows of A.
    const std::int64_t rows = product(a_batch) * m;
    reference::gemm(*a.data, *b.data, c, rows, n, k, false, op.transpose_b, k_parts);
    return c;
  }
  const BroadcastMap a_map(a_batch, batch), b_map(b_batch, batch);
  for (std::int64_t i = 0; i < product(batch); ++i)
    reference::gemm(slice(a, a_map(i) * m * k, m * k), slice(b, b_map(i) * k * n, k * n),
                    std::span<float>(c).subspan(static_cast<std::size_t>(i * m * n),
                                                static_cast<std::size_t>(m * n)),
                    m, n, k, op.transpose_a, op.transpose_b, k_parts);
  return c;
}

template <typename Combine>
Values broadcast_combine(const Buffer& a, const Buffer& b, const Shape& result, Combine combine) {
  Values c(static_cast<std::size_t>(product(result)));
  const BroadcastMap a_map(a.type.shape, result), b_map(b.type.shape, result);
  const Values& av = *a.data;
  const Values& bv = *b.data;
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

Values binary(OpKind kind, const Buffer& a, const Buffer& b, const Shape& result) {
  switch (kind) {
    case OpKind::Add: return broadcast_combine(a, b, result, [](float x, float y) { return x + y; });
    case OpKind::Sub: return broadcast_combine(a, b, result, [](float x, float y) { return x - y; });
    case OpKind::Mul: return broadcast_combine(a, b, result, [](float x, float y) { return x * y; });
    case OpKind::Div: return broadcast_combine(a, b, result, [](float x, float y) { return x / y; });
    default: return broadcast_combine(a, b, result, [](float x, float y) { return std::pow(x, y); });
  }
}

template <typename Function>
Values map_values(const Buffer& x, Function function) {
  Values out(x.data->size());
  const Values& in = *x.data;
  for_chunks(static_cast<std::int64_t>(in.size()), [&](std::int64_t begin, std::int64_t end) {
    for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i) out[i] = function(in[i]);
  });
  return out;
}

Values unary(OpKind kind, const Buffer& x) {
  switch (kind) {
    case OpKind::Sqrt: return map_values(x, [](float v) { return std::sqrt(v); });
    case OpKind::Erf: return map_values(x, [](float v) { return std::erf(v); });
    case OpKind::Tanh: return map_values(x, [](float v) { return std::tanh(v); });
    case OpKind::Relu: return map_values(x, [](float v) { return v > 0.0f ? v : 0.0f; });
    case OpKind::Sigmoid: return map_values(x, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
    default: return map_values(x, [](float v) { return std::exp(v); });
  }
}

// Folds x's elements into their targets in row-major order (one FP32
// accumulator per result element, added to in that order).
Values reduce(const Op& op, const Buffer& x, std::int64_t result_elements) {
  const std::vector<std::int64_t> targets = layout::reduction_targets(x.type.shape, op.axes);
  const Values& in = *x.data;
  const bool is_max = op.kind == OpKind::ReduceMax;
  Values out(static_cast<std::size_t>(result_elements), is_max ? -INFINITY : 0.0f);
  for (std::size_t i = 0; i < in.size(); ++i) {
    float& target = out[static_cast<std::size_t>(targets[i])];
    // NaN propagates through max as through the sums.
    target = is_max ? (std::isnan(in[i]) || in[i] > target ? in[i] : target) : target + in[i];
  }
  if (op.kind == OpKind::ReduceMean) {
    const auto count = static_cast<float>(static_cast<std::int64_t>(in.size()) / result_elements);
    for (float& value : out) value /= count;
  }
  return out;
}

Values rearrange(const Op& op, const std::vector<const Buffer*>& operands, const Shape& result) {
  const Buffer& x = *operands.front();
  const std::span<const float> xs(*x.data);
  const auto axis_of = [&](int axis) {
    return static_cast<std::size_t>(axis < 0 ? axis + static_cast<int>(x.type.shape.size()) : axis);
  };
  switch (op.kind) {
    case OpKind::Transpose: return layout::transpose(xs, x.type.shape, op.permutation);
    case OpKind::Slice: return layout::slice(xs, x.type.shape, op, result);
    case OpKind::Gather: return layout::gather(xs, x.type.shape, axis_of(op.axis), op.indices);
    default: {
      std::vector<std::span<const float>> parts;
      std::vector<Shape> shapes;
      for (const Buffer* operand : operands) {
        parts.emplace_back(*operand->data);
        shapes.push_back(operand->type.shape);
      }
      return layout::concat(parts, shapes, axis_of(op.axis));
    }
  }
}

Values gelu(const Op& op, const Buffer& x) {
  Values out(x.data->size());
  const Values& in = *x.data;
  for_chunks(static_cast<std::int64_t>(in.size()), [&](std::int64_t begin, std::int64_t end) {
    for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i)
      out[i] = op.approximation == GeluApproximation::Tanh ? reference::gelu_tanh(in[i])
                                                            : reference::gelu_erf(in[i]);
  });
  return out;
}

Values softmax(const Op& op, const Buffer& x) {
  const Shape& shape = x.type.shape;
  const auto axis = static_cast<std::size_t>(op.axis < 0 ? op.axis + static_cast<int>(shape.size()) : op.axis);
  const std::int64_t length = shape[axis];
  const std::int64_t inner = product(Shape(shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, shape.end()));
  const std::int64_t outer = product(drop_last(shape, shape.size() - axis));
  Values out(x.data->size());
  if (inner == 1) {
    reference::softmax(*x.data, out, length);
    return out;
  }
  // Make the softmax axis innermost, normalise, and put it back.
  Values moved(out.size()), normalised(out.size());
  auto moved_index = [&](std::int64_t o, std::int64_t l, std::int64_t i) {
    return static_cast<std::size_t>((o * inner + i) * length + l);
  };
  auto original_index = [&](std::int64_t o, std::int64_t l, std::int64_t i) {
    return static_cast<std::size_t>((o * length + l) * inner + i);
  };
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t l = 0; l < length; ++l)
      for (std::int64_t i = 0; i < inner; ++i) moved[moved_index(o, l, i)] = (*x.data)[original_index(o, l, i)];
  reference::softmax(moved, normalised, length);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t l = 0; l < length; ++l)
      for (std::int64_t i = 0; i < inner; ++i) out[original_index(o, l, i)] = normalised[moved_index(o, l, i)];
  return out;
}

Values layernorm(const Op& op, const Buffer& x, const Buffer& gamma, const Buffer& beta) {
  Values out(x.data->size());
  reference::layernorm(*x.data, *gamma.data, *beta.data, out, x.type.shape.back(), op.epsilon);
  return out;
}

// Columns [first, first + count) of a row-major [rows, cols] matrix.
std::vector<float> columns_of(std::span<const float> matrix, std::int64_t rows, std::int64_t cols, std::int64_t first,
                              std::int64_t count) {
  std::vector<float> part(static_cast<std::size_t>(rows * count));
  for (std::int64_t r = 0; r < rows; ++r)
    std::copy_n(matrix.begin() + r * cols + first, count, part.begin() + r * count);
  return part;
}

Values attention(const Op& op, const Buffer& q, const Buffer& k, const Buffer& v, const Shape& result) {
  const Shape& qs = q.type.shape;
  const Shape& ks = k.type.shape;
  const std::int64_t heads = op.attention_heads;
  const std::int64_t s = qs[qs.size() - 2], d = qs.back(), t = ks[ks.size() - 2];
  const std::int64_t e = result.back();
  const std::int64_t dh = d / heads, eh = e / heads;
  const float scale = op.attention_scale != 0.0f ? op.attention_scale
                                                 : 1.0f / std::sqrt(static_cast<float>(dh));
  const Shape batch = drop_last(result, 2);
  const BroadcastMap q_map(drop_last(qs, 2), batch), k_map(drop_last(ks, 2), batch),
      v_map(drop_last(v.type.shape, 2), batch);
  Values out(static_cast<std::size_t>(product(result)));
  Values scores(static_cast<std::size_t>(s * t)), probabilities(scores.size()), head_out(static_cast<std::size_t>(s * eh));
  for (std::int64_t i = 0; i < product(batch); ++i)
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::vector<float> qh = columns_of(slice(q, q_map(i) * s * d, s * d), s, d, h * dh, dh);
      const std::vector<float> kh = columns_of(slice(k, k_map(i) * t * d, t * d), t, d, h * dh, dh);
      const std::vector<float> vh = columns_of(slice(v, v_map(i) * t * e, t * e), t, e, h * eh, eh);
      reference::gemm(qh, kh, scores, s, t, dh, false, true);
      for (float& score : scores) score *= scale;
      reference::softmax(scores, probabilities, t);
      reference::gemm(probabilities, vh, head_out, s, eh, t);
      for (std::int64_t r = 0; r < s; ++r)
        std::copy_n(head_out.begin() + r * eh, eh, out.begin() + (i * s + r) * e + h * eh);
    }
  return out;
}

// Row py*(W/p)+px of each batch item is patch (py, px); each patch row is
// its p rows of p pixels, C channels each, in that order. Pixels beyond the
// last whole patch (H mod p rows, W mod p columns) are left out.
Values patchify(const Op& op, const Buffer& x) {
  const Shape& shape = x.type.shape;
  const std::size_t rank = shape.size();
  const std::int64_t height = shape[rank - 3], width = shape[rank - 2], channels = shape[rank - 1];
  const std::int64_t p = op.patch, across = width / p;
  const std::int64_t patches = (height / p) * across, row_length = p * channels;
  const Values& in = *x.data;
  const std::int64_t items = product(drop_last(shape, 3));
  Values out(static_cast<std::size_t>(items * patches * p * row_length));
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

class Interpreter {
 public:
  Interpreter(bool keep_intermediates, int gemm_k_parts, TensorMap& intermediates)
      : keep_(keep_intermediates), gemm_k_parts_(gemm_k_parts), intermediates_(intermediates) {}

  // Runs `graph` with its arguments (bodies) or with `sources` supplying its
  // inputs and parameters; returns its outputs' buffers in order.
  std::vector<Buffer> run(const Graph& graph, const std::vector<Buffer>& arguments,
                          const TensorMap* sources, const std::string& prefix) {
    std::vector<Buffer> values(graph.values.size());
    for (std::size_t i = 0; i < arguments.size(); ++i)
      values[static_cast<std::size_t>(graph.arguments[i])] = arguments[i];
    for (const Op& op : graph.ops) {
      try {
        execute(graph, op, values, sources, prefix);
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
    return Buffer{graph.type(op.results[0]),
                  std::make_shared<const Values>(sources.at(op.name).to_floats())};
  }

  void execute(const Graph& graph, const Op& op, std::vector<Buffer>& values, const TensorMap* sources,
               const std::string& prefix) {
    auto operand = [&](std::size_t i) -> const Buffer& {
      return values[static_cast<std::size_t>(op.operands[i])];
    };
    if (op.kind == OpKind::Input || op.kind == OpKind::Parameter) {
      TILEC_CHECK(sources, "{} '{}' inside a repeat body", op_kind_name(op.kind), op.name);
      values[static_cast<std::size_t>(op.results[0])] = source(graph, op, *sources);
      return;
    }
    if (op.kind == OpKind::Repeat) {
      std::vector<Buffer> results = repeat(op, values, prefix);
      for (std::size_t i = 0; i < results.size(); ++i) store(graph, op.results[i], values, results[i], prefix);
      return;
    }
    const TensorType& type = graph.type(op.results[0]);
    Values result;
    switch (op.kind) {
      case OpKind::Gemm: result = gemm(op, operand(0), operand(1), type.shape, gemm_k_parts_); break;
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
      case OpKind::LayerNorm: result = layernorm(op, operand(0), operand(1), operand(2)); break;
      case OpKind::Softmax: result = softmax(op, operand(0)); break;
      case OpKind::Attention: result = attention(op, operand(0), operand(1), operand(2), type.shape); break;
      case OpKind::Patchify: result = patchify(op, operand(0)); break;
      case OpKind::Reshape: result = *operand(0).data; break;
      default: TILEC_CHECK(false, "op kind {} has no interpreter", op_kind_name(op.kind));
    }
    round_to(result, type.storage);
    store(graph, op.results[0], values, Buffer{type, std::make_shared<const Values>(std::move(result))},
          prefix);
  }

  void store(const Graph& graph, ValueId id, std::vector<Buffer>& values, Buffer buffer,
             const std::string& prefix) {
    if (keep_)
      intermediates_.insert_or_assign(prefix + graph.value(id).name,
                                      Tensor::from_floats(buffer.type, *buffer.data));
    values[static_cast<std::size_t>(id)] = std::move(buffer);
  }

  std::vector<Buffer> repeat(const Op& op, const std::vector<Buffer>& values, const std::string& prefix) {
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
        std::span<const float> part = slice(operands[i], iteration * size, size);
        arguments.push_back(Buffer{type, std::make_shared<const Values>(part.begin(), part.end())});
      }
      state = run(*op.body, arguments, nullptr, fmt::format("{}{}[{}].", prefix, op.name, iteration));
    }
    return state;
  }

  bool keep_;
  int gemm_k_parts_;
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

}  // namespace

ReferenceResult run_reference(const Graph& graph, const TensorMap& tensors, bool keep_intermediates,
                              int gemm_k_parts) {
  validate(graph);
  check_sources(graph, tensors);
  ReferenceResult result;
  Interpreter interpreter(keep_intermediates, gemm_k_parts, result.intermediates);
  std::vector<Buffer> outputs = interpreter.run(graph, {}, &tensors, "");
  for (std::size_t i = 0; i < outputs.size(); ++i)
    result.outputs.insert_or_assign(graph.outputs[i].first,
                                    Tensor::from_floats(outputs[i].type, *outputs[i].data));
  return result;
}

}  // namespace tilec::graph
