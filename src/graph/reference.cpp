#include "graph/reference.h"

#include "graph/reference_kernels.h"
#include "graph/validate.h"

namespace tilec::graph {

namespace {

using namespace interpreter_ops;

template <typename T>
class Interpreter {
 public:
  using Buffer = interpreter_ops::Buffer<T>;
  using Values = interpreter_ops::Values<T>;

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
    const Tensor& tensor = sources.at(op.name);
    if (read_as_sequence_only(graph, op.results[0])) return Buffer{graph.type(op.results[0]), nullptr, &tensor};
    const std::vector<float> stored = tensor.to_floats();  // decoded exactly
    return Buffer{graph.type(op.results[0]), std::make_shared<const Values>(stored.begin(), stored.end())};
  }

  // Whether every op reading `id` is a repeat taking it as a sequence
  // operand (and it is no output of the graph).
  static bool read_as_sequence_only(const Graph& graph, ValueId id) {
    for (const auto& [name, output] : graph.outputs)
      if (output == id) return false;
    bool read = false;
    for (const Op& op : graph.ops)
      for (std::size_t i = 0; i < op.operands.size(); ++i) {
        if (op.operands[i] != id) continue;
        const auto carried = static_cast<std::size_t>(op.signature.carried);
        if (op.kind != OpKind::Repeat || i < carried || i >= carried + static_cast<std::size_t>(op.signature.sequence))
          return false;
        read = true;
      }
    return read;
  }

  // Iteration `iteration`'s slice of sequence operand `operand` (its
  // leading axis dropped), decoded from the stored tensor when it is kept so.
  static Buffer sequence_slice(const Buffer& operand, std::int64_t iteration) {
    TensorType type = operand.type;
    type.shape.erase(type.shape.begin());
    const std::int64_t size = type.elements();
    if (operand.stored) {
      const std::vector<float> stored = operand.stored->to_floats(iteration * size, size);
      return Buffer{type, std::make_shared<const Values>(stored.begin(), stored.end())};
    }
    std::span<const T> part = slice(operand, iteration * size, size);
    return Buffer{type, std::make_shared<const Values>(part.begin(), part.end())};
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
        // Iteration `iteration` sees slice `iteration` of the leading axis.
        arguments.push_back(i >= sequence_end ? operands[i] : sequence_slice(operands[i], iteration));
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
