#include "compiler/chain.h"

#include "support/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <map>

namespace tilec::compiler {

namespace {

std::string op_where(const graph::Op& op) { return fmt::format("op '{}'", op.name); }

std::int64_t leading_rows(const graph::Shape& shape) {
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  return rows;
}

// The device's FP8 arithmetic (AMP and conversions) knows Graphcore's F143
// and F152 only; an OCP type would be computed as one of them, wrongly.
void reject_ocp_fp8(const graph::Graph& graph) {
  for (const graph::Value& value : graph.values) {
    const ElementType element = value.type.storage.element;
    if (element == ElementType::E4M3 || element == ElementType::E5M2)
      throw_bad_input(fmt::format("tensor '{}'", value.name),
                      "is {}, which the device cannot compute: its FP8 types are f143 and f152",
                      element_type_name(element));
  }
  for (const graph::Op& op : graph.ops)
    if (op.body) reject_ocp_fp8(*op.body);
}

// What a graph value is to the chain.
struct Binding {
  enum class Kind { Activation, Weight } kind;
  int index;
};

class ChainBuilder {
 public:
  explicit ChainBuilder(Chain& chain) : chain_(chain) {}

  void add_graph(const graph::Graph& graph, std::map<graph::ValueId, Binding> bindings,
                 bool inside_repeat) {
    std::map<graph::ValueId, int> uses = count_uses(graph);
    for (const graph::Op& op : graph.ops) add_op(graph, op, bindings, uses, inside_repeat);
    bindings_of_last_graph_ = std::move(bindings);
  }

  const std::map<graph::ValueId, Binding>& last_bindings() const { return bindings_of_last_graph_; }

 private:
  static std::map<graph::ValueId, int> count_uses(const graph::Graph& graph) {
    std::map<graph::ValueId, int> uses;
    for (const graph::Op& op : graph.ops)
      for (graph::ValueId operand : op.operands) ++uses[operand];
    for (const auto& [name, value] : graph.outputs) uses[value] += 2;  // never fuse away an output
    return uses;
  }

  int new_activation(const graph::Graph& graph, graph::ValueId value) {
    const graph::TensorType& type = graph.type(value);
    std::int64_t rows = leading_rows(type.shape);
    if (type.shape.empty()) throw_bad_input(graph.value(value).name, "scalars are not supported as activations");
    if (chain_.rows == 0) {
      chain_.rows = rows;
      chain_.row_shape.assign(type.shape.begin(), type.shape.end() - 1);
    } else if (rows != chain_.rows) {
      throw_failure(graph.value(value).name,
                    "the compiler plans graphs whose activations share their leading axes; this value has {} rows "
                    "where earlier ones have {}",
                    rows, chain_.rows);
    }
    chain_.activations.push_back(Activation{graph.value(value).name, type.shape.back(), type.storage});
    return static_cast<int>(chain_.activations.size()) - 1;
  }

  int activation_of(const graph::Op& op, const std::map<graph::ValueId, Binding>& bindings,
                    graph::ValueId value, const char* role) {
    auto it = bindings.find(value);
    if (it == bindings.end() || it->second.kind != Binding::Kind::Activation)
      throw_failure(op_where(op), "operand '{}' must be computed from the host inputs (it is a parameter)", role);
    return it->second.index;
  }

  std::optional<int> weight_of(const std::map<graph::ValueId, Binding>& bindings, graph::ValueId value) {
    auto it = bindings.find(value);
    if (it == bindings.end() || it->second.kind != Binding::Kind::Weight) return std::nullopt;
    return it->second.index;
  }

  // The step whose output is `activation`, if its epilogue may grow: GEMMs
  // and maps apply epilogues, the whole-row kernels do not. Fusion never
  // crosses a repeat's boundary: a step before the loop, or the loop body's
  // last, must not take on work that belongs to the other side.
  Step* fusable_producer(int activation, const std::map<graph::ValueId, int>& uses, graph::ValueId value) {
    auto use = uses.find(value);
    if (use == uses.end() || use->second != 1 || chain_.steps.empty()) return nullptr;
    if (static_cast<int>(chain_.steps.size()) <= fusion_barrier_) return nullptr;
    Step& last = chain_.steps.back();
    if (last.output != activation || (last.kind != StepKind::Gemm && last.kind != StepKind::Map)) return nullptr;
    return &last;
  }

  void add_epilogue(const graph::Graph& graph, const graph::Op& op, graph::ValueId input_value, int input,
                    EpilogueOp epilogue, std::map<graph::ValueId, Binding>& bindings,
                    const std::map<graph::ValueId, int>& uses) {
    Step* producer = fusable_producer(input, uses, input_value);
    if (producer) {
      producer->epilogue.push_back(epilogue);
      chain_.activations[producer->output].storage = epilogue.result;
      chain_.activations[producer->output].name = graph.value(op.results[0]).name;
      bindings[op.results[0]] = {Binding::Kind::Activation, producer->output};
      return;
    }
    Step step{StepKind::Map, op.name};
    step.input = input;
    step.result = chain_.activations[input].storage;
    step.epilogue.push_back(epilogue);
    step.output = new_activation(graph, op.results[0]);
    bindings[op.results[0]] = {Binding::Kind::Activation, step.output};
    chain_.steps.push_back(std::move(step));
  }

  int add_weight(const graph::Graph& graph, graph::ValueId value, std::vector<std::int64_t> shape,
                 const std::string& parameter, bool per_iteration) {
    chain_.weights.push_back(Weight{parameter, std::move(shape), graph.type(value).storage, per_iteration});
    return static_cast<int>(chain_.weights.size()) - 1;
  }

  void add_op(const graph::Graph& graph, const graph::Op& op, std::map<graph::ValueId, Binding>& bindings,
              const std::map<graph::ValueId, int>& uses, bool inside_repeat) {
    using graph::OpKind;
    switch (op.kind) {
      case OpKind::Input: {
        int activation = new_activation(graph, op.results[0]);
        bindings[op.results[0]] = {Binding::Kind::Activation, activation};
        chain_.inputs.emplace_back(op.name, activation);
        return;
      }
      case OpKind::Parameter: {
        const graph::TensorType& type = graph.type(op.results[0]);
        int weight = add_weight(graph, op.results[0], type.shape, op.name, false);
        bindings[op.results[0]] = {Binding::Kind::Weight, weight};
        return;
      }
      case OpKind::Gemm: {
        int input = activation_of(op, bindings, op.operands[0], "a");
        auto weight = weight_of(bindings, op.operands[1]);
        if (!weight)
          throw_failure(op_where(op), "the compiler needs the right operand of a gemm to be a parameter");
        if (op.transpose_a) throw_failure(op_where(op), "a transposed left operand is not supported by the compiler");
        if (chain_.weights[*weight].shape.size() != 2)
          throw_failure(op_where(op), "the compiler needs a 2-D weight (batched weights are not supported)");
        Step step{StepKind::Gemm, op.name};
        step.input = input;
        step.weight = *weight;
        step.transpose_weight = op.transpose_b;
        step.result = graph.type(op.results[0]).storage;
        step.output = new_activation(graph, op.results[0]);
        bindings[op.results[0]] = {Binding::Kind::Activation, step.output};
        chain_.steps.push_back(std::move(step));
        return;
      }
      case OpKind::Gelu: {
        int input = activation_of(op, bindings, op.operands[0], "x");
        EpilogueOp epilogue{EpilogueOp::Kind::Gelu, op.name};
        epilogue.approximation = op.approximation;
        epilogue.result = graph.type(op.results[0]).storage;
        add_epilogue(graph, op, op.operands[0], input, epilogue, bindings, uses);
        return;
      }
      case OpKind::Cast: {
        int input = activation_of(op, bindings, op.operands[0], "x");
        EpilogueOp epilogue{EpilogueOp::Kind::Cast, op.name};
        epilogue.result = graph.type(op.results[0]).storage;
        add_epilogue(graph, op, op.operands[0], input, epilogue, bindings, uses);
        return;
      }
      case OpKind::Add: {
        auto a_weight = weight_of(bindings, op.operands[0]);
        auto b_weight = weight_of(bindings, op.operands[1]);
        if (a_weight && b_weight) throw_failure(op_where(op), "adding two parameters is not supported by the compiler");
        const graph::TensorType& result = graph.type(op.results[0]);
        if (a_weight || b_weight) {
          int weight = a_weight ? *a_weight : *b_weight;
          graph::ValueId activation_value = a_weight ? op.operands[1] : op.operands[0];
          int input = activation_of(op, bindings, activation_value, a_weight ? "b" : "a");
          const Weight& bias = chain_.weights[weight];
          std::int64_t bias_elements = 1;
          for (std::int64_t extent : bias.shape) bias_elements *= extent;
          if (bias_elements != result.shape.back() || bias.shape.empty() || bias.shape.back() != result.shape.back())
            throw_failure(op_where(op), "the compiler supports adding a parameter only as a bias along the last axis");
          chain_.weights[weight].shape = {result.shape.back()};
          EpilogueOp epilogue{EpilogueOp::Kind::AddBias, op.name};
          epilogue.weight = weight;
          epilogue.result = result.storage;
          add_epilogue(graph, op, activation_value, input, epilogue, bindings, uses);
          return;
        }
        int a = activation_of(op, bindings, op.operands[0], "a");
        int b = activation_of(op, bindings, op.operands[1], "b");
        if (graph.type(op.operands[0]).shape != graph.type(op.operands[1]).shape)
          throw_failure(op_where(op), "the compiler supports adding two activations of the same shape only");
        Step step{StepKind::Map, op.name};
        step.input = a;
        step.second_input = b;
        step.result = result.storage;
        step.output = new_activation(graph, op.results[0]);
        bindings[op.results[0]] = {Binding::Kind::Activation, step.output};
        chain_.steps.push_back(std::move(step));
        return;
      }
      case OpKind::LayerNorm: {
        Step step{StepKind::LayerNorm, op.name};
        step.input = activation_of(op, bindings, op.operands[0], "x");
        auto gamma = weight_of(bindings, op.operands[1]);
        auto beta = weight_of(bindings, op.operands[2]);
        if (!gamma || !beta) throw_failure(op_where(op), "the compiler needs layernorm's gamma and beta to be parameters");
        step.gamma = *gamma;
        step.beta = *beta;
        step.epsilon = op.epsilon;
        step.result = graph.type(op.results[0]).storage;
        step.output = new_activation(graph, op.results[0]);
        bindings[op.results[0]] = {Binding::Kind::Activation, step.output};
        chain_.steps.push_back(std::move(step));
        return;
      }
      case OpKind::Softmax: {
        const graph::TensorType& type = graph.type(op.operands[0]);
        int rank = static_cast<int>(type.shape.size());
        if (op.axis != -1 && op.axis != rank - 1)
          throw_failure(op_where(op), "the compiler supports softmax over the last axis only");
        Step step{StepKind::Softmax, op.name};
        step.input = activation_of(op, bindings, op.operands[0], "x");
        step.result = graph.type(op.results[0]).storage;
        step.output = new_activation(graph, op.results[0]);
        bindings[op.results[0]] = {Binding::Kind::Activation, step.output};
        chain_.steps.push_back(std::move(step));
        return;
      }
      case OpKind::Attention:
        add_attention(graph, op, bindings);
        return;
      case OpKind::Repeat:
        add_repeat(graph, op, bindings, inside_repeat);
        return;
    }
  }

  // Self-attention over segments of S rows: q, k and v share their leading
  // axes (no broadcasting), so row r of each belongs to the same segment.
  void add_attention(const graph::Graph& graph, const graph::Op& op, std::map<graph::ValueId, Binding>& bindings) {
    Step step{StepKind::Attention, op.name};
    step.input = activation_of(op, bindings, op.operands[0], "q");
    step.second_input = activation_of(op, bindings, op.operands[1], "k");
    step.third_input = activation_of(op, bindings, op.operands[2], "v");
    const graph::TensorType& q = graph.type(op.operands[0]);
    const graph::TensorType& result = graph.type(op.results[0]);
    const graph::Shape rows_of_q(q.shape.begin(), q.shape.end() - 1);
    for (int operand : {1, 2}) {
      const graph::Shape& shape = graph.type(op.operands[static_cast<std::size_t>(operand)]).shape;
      if (graph::Shape(shape.begin(), shape.end() - 1) != rows_of_q)
        throw_failure(op_where(op), "the compiler supports attention whose q, k and v share their leading axes "
                      "(q has {} rows, operand '{}' {})", fmt::join(rows_of_q, "x"), operand == 1 ? "k" : "v",
                      fmt::join(graph::Shape(shape.begin(), shape.end() - 1), "x"));
    }
    for (graph::ValueId operand : op.operands)
      if (graph.type(operand).storage.element != q.storage.element)
        throw_failure(op_where(op), "the compiler needs q, k and v of one element type");
    for (ElementType type : {q.storage.element, result.storage.element})
      if (type != ElementType::F16 && type != ElementType::F32)
        throw_failure(op_where(op), "the compiler supports attention on f16 and f32 values only, not {}",
                      element_type_name(type));
    const std::int64_t segment = q.shape[q.shape.size() - 2];
    if (chain_.segment_rows != 0 && chain_.segment_rows != segment)
      throw_failure(op_where(op), "attention over {} rows where an earlier attention has {}; the compiler needs one",
                    segment, chain_.segment_rows);
    chain_.segment_rows = segment;
    step.attention_heads = op.attention_heads;
    step.attention_scale = op.attention_scale != 0.0f
                               ? op.attention_scale
                               : 1.0f / std::sqrt(static_cast<float>(q.shape.back() / op.attention_heads));
    step.result = result.storage;
    step.output = new_activation(graph, op.results[0]);
    bindings[op.results[0]] = {Binding::Kind::Activation, step.output};
    chain_.steps.push_back(std::move(step));
  }

  void add_repeat(const graph::Graph& graph, const graph::Op& op, std::map<graph::ValueId, Binding>& bindings,
                  bool inside_repeat) {
    if (inside_repeat || chain_.repeat)
      throw_failure(op_where(op), "the compiler supports one repeat, not nested in another");
    const graph::Graph& body = *op.body;
    const graph::RepeatSignature& signature = op.signature;
    std::map<graph::ValueId, Binding> body_bindings;
    RepeatRegion region{op.name};
    region.count = op.count;
    std::vector<int> carried_start;
    for (int i = 0; i < signature.carried; ++i) {
      int outer = activation_of(op, bindings, op.operands[i], "carried");
      int start = new_activation(body, body.arguments[i]);
      chain_.activations[start].storage = chain_.activations[outer].storage;
      carried_start.push_back(start);
      body_bindings[body.arguments[i]] = {Binding::Kind::Activation, start};
      // The loop reads its carried value where the body leaves it; a copy
      // from the value before the loop starts it off.
      Step copy{StepKind::Map, op.name + ".enter"};
      copy.input = outer;
      copy.result = chain_.activations[outer].storage;
      copy.output = start;
      chain_.steps.push_back(copy);
    }
    for (int i = 0; i < signature.sequence; ++i) {
      int index = signature.carried + i;
      auto weight = weight_of(bindings, op.operands[index]);
      if (!weight) throw_failure(op_where(op), "sequence operand {} must be a parameter", i);
      const graph::TensorType& slice = body.type(body.arguments[index]);
      int body_weight = add_weight(body, body.arguments[index], slice.shape, chain_.weights[*weight].parameter, true);
      body_bindings[body.arguments[index]] = {Binding::Kind::Weight, body_weight};
    }
    for (int i = 0; i < signature.invariant; ++i) {
      int index = signature.carried + signature.sequence + i;
      auto it = bindings.find(op.operands[index]);
      body_bindings[body.arguments[index]] = it->second;
    }
    region.first_step = static_cast<int>(chain_.steps.size());
    fusion_barrier_ = region.first_step;
    add_graph(body, std::move(body_bindings), true);
    const auto& final_bindings = last_bindings();
    region.last_step = static_cast<int>(chain_.steps.size()) - 1;
    if (region.last_step < region.first_step)
      throw_failure(op_where(op), "the repeat body computes nothing");
    for (int i = 0; i < signature.carried; ++i) {
      graph::ValueId body_output = body.outputs[i].second;
      int end = final_bindings.at(body_output).index;
      region.carried.emplace_back(carried_start[i], end);
      bindings[op.results[i]] = {Binding::Kind::Activation, end};
    }
    chain_.repeat = region;
    fusion_barrier_ = static_cast<int>(chain_.steps.size());
  }

  Chain& chain_;
  std::map<graph::ValueId, Binding> bindings_of_last_graph_;
  int fusion_barrier_ = 0;  // steps before this index take no more epilogue
};

}  // namespace

std::int64_t Chain::macs() const {
  std::int64_t total = 0;
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
    const Step& step = steps[i];
    if (step.kind != StepKind::Gemm) continue;
    const Weight& weight = weights[step.weight];
    std::int64_t per_run = rows * weight.shape[0] * weight.shape[1];
    bool repeated = repeat && i >= repeat->first_step && i <= repeat->last_step;
    total += per_run * (repeated ? repeat->count : 1);
  }
  return total;
}

Chain build_chain(const graph::Graph& graph) {
  reject_ocp_fp8(graph);
  Chain chain;
  ChainBuilder builder(chain);
  builder.add_graph(graph, {}, false);
  const auto& bindings = builder.last_bindings();
  for (const auto& [name, value] : graph.outputs) {
    auto it = bindings.find(value);
    if (it == bindings.end() || it->second.kind != Binding::Kind::Activation)
      throw_failure(fmt::format("output '{}'", name), "outputs must be computed from the host inputs");
    chain.outputs.emplace_back(name, it->second.index);
  }
  if (chain.inputs.empty()) throw_failure("graph", "the graph has no host input");
  return chain;
}

}  // namespace tilec::compiler
