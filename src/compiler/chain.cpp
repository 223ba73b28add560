#include "compiler/chain.h"

#include "support/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
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
  // A host input becomes an activation where it is first read (as itself,
  // or as patches).
  enum class Kind { Activation, Weight, HostInput } kind;
  int index;
};

class ChainBuilder {
 public:
  explicit ChainBuilder(Chain& chain) : chain_(chain) {}

  void add_graph(const graph::Graph& graph, std::map<graph::ValueId, Binding> bindings,
                 bool inside_repeat) {
    graphs_.push_back(&graph);
    std::map<graph::ValueId, int> uses = count_uses(graph);
    for (const graph::Op& op : graph.ops) add_op(graph, op, bindings, uses, inside_repeat);
    graphs_.pop_back();
    bindings_of_last_graph_ = std::move(bindings);
  }

  const std::map<graph::ValueId, Binding>& last_bindings() const { return bindings_of_last_graph_; }

  // The graph's outputs. One that no step computes (a host input itself)
  // is a copy of it, so that input and output are bound apart.
  void add_outputs(const graph::Graph& graph) {
    graphs_.push_back(&graph);
    std::map<graph::ValueId, Binding>& bindings = bindings_of_last_graph_;
    for (const auto& [name, value] : graph.outputs) {
      auto it = bindings.find(value);
      if (it == bindings.end() || it->second.kind == Binding::Kind::Weight)
        throw_failure(fmt::format("output '{}'", name), "outputs must be computed from the host inputs");
      graph::Op copy_op{graph::OpKind::Cast, name + ".copy"};
      const int source = activation_of(copy_op, bindings, value, "x");
      int output = source;
      const bool computed = std::any_of(chain_.steps.begin(), chain_.steps.end(),
                                        [&](const Step& step) { return step.output == source; });
      if (!computed) {
        Step step{StepKind::Map, copy_op.name};
        step.input = source;
        step.result = chain_.activations[static_cast<std::size_t>(source)].storage;
        chain_.activations.push_back(chain_.activations[static_cast<std::size_t>(source)]);
        chain_.activations.back().name = name;
        step.output = static_cast<int>(chain_.activations.size()) - 1;
        output = step.output;
        chain_.steps.push_back(std::move(step));
      }
      chain_.outputs.emplace_back(name, output);
    }
    graphs_.pop_back();
  }

 private:
  static std::map<graph::ValueId, int> count_uses(const graph::Graph& graph) {
    std::map<graph::ValueId, int> uses;
    for (const graph::Op& op : graph.ops)
      for (graph::ValueId operand : op.operands) ++uses[operand];
    for (const auto& [name, value] : graph.outputs) uses[value] += 2;  // never fuse away an output
    return uses;
  }

  int new_activation(const graph::Graph& graph, graph::ValueId value, int space = 0) {
    const graph::TensorType& type = graph.type(value);
    std::int64_t rows = leading_rows(type.shape);
    if (type.shape.empty()) throw_bad_input(graph.value(value).name, "scalars are not supported as activations");
    const RowSpace& rows_of = chain_.spaces[static_cast<std::size_t>(space)];
    if (space == 0 && chain_.rows == 0) {
      chain_.rows = rows;
      chain_.row_shape.assign(type.shape.begin(), type.shape.end() - 1);
    } else {
      const std::int64_t expected =
          space == 0 ? chain_.rows : rows_of.shared ? rows_of.rows : segments() * rows_of.rows;
      if (rows != expected)
        throw_failure(graph.value(value).name,
                      "the compiler plans graphs whose activations share their leading axes; this value has {} rows "
                      "where its operands have {}",
                      rows, expected);
    }
    chain_.activations.push_back(Activation{graph.value(value).name, type.shape.back(), type.storage, space});
    return static_cast<int>(chain_.activations.size()) - 1;
  }

  std::int64_t segments() const { return chain_.segment_rows ? chain_.rows / chain_.segment_rows : 1; }

  int space_index(RowSpace space) {
    for (std::size_t i = 1; i < chain_.spaces.size(); ++i)
      if (chain_.spaces[i] == space) return static_cast<int>(i);
    chain_.spaces.push_back(space);
    return static_cast<int>(chain_.spaces.size()) - 1;
  }

  int space_of(int activation) const { return chain_.activations[static_cast<std::size_t>(activation)].space; }

  int activation_of(const graph::Op& op, std::map<graph::ValueId, Binding>& bindings, graph::ValueId value,
                    const char* role) {
    auto it = bindings.find(value);
    if (it != bindings.end() && it->second.kind == Binding::Kind::HostInput) {
      const graph::Graph& graph = *graphs_.back();
      const int activation = new_activation(graph, value);
      chain_.inputs.emplace_back(graph.value(value).name, activation);
      it->second = {Binding::Kind::Activation, activation};
    }
    if (it != bindings.end() && it->second.kind == Binding::Kind::Weight) return parameter_activation(op, value, role);
    if (it == bindings.end() || it->second.kind != Binding::Kind::Activation)
      throw_failure(op_where(op), "operand '{}' must be computed from the host inputs (it is a parameter)", role);
    return it->second.index;
  }

  // A parameter read as an activation: rows every segment shares, bound
  // like any parameter (outside a repeat only).
  int parameter_activation(const graph::Op& op, graph::ValueId value, const char* role) {
    auto cached = parameter_activations_.find(value);
    if (cached != parameter_activations_.end()) return cached->second;
    const graph::Graph& graph = *graphs_.back();
    const graph::Op* producer = graph.producer(value);
    if (graphs_.size() > 1 || !producer || producer->kind != graph::OpKind::Parameter)
      throw_failure(op_where(op), "operand '{}' must be computed from the host inputs or be a parameter outside a repeat",
                    role);
    const graph::TensorType& type = graph.type(value);
    if (type.shape.size() < 2) throw_failure(op_where(op), "operand '{}' is a parameter of fewer than two axes", role);
    const int activation = new_activation(graph, value, space_index(RowSpace{leading_rows(type.shape), true}));
    chain_.parameter_inputs.emplace_back(producer->name, activation);
    parameter_activations_[value] = activation;
    return activation;
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
    step.output = new_activation(graph, op.results[0], space_of(input));
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
      case OpKind::Input:
        bindings[op.results[0]] = {Binding::Kind::HostInput, -1};
        return;
      case OpKind::Patchify: {
        // Patches of a host input are the input as the device holds it:
        // the loader writes each pixel where its patch row and column go.
        auto it = bindings.find(op.operands[0]);
        const graph::Op* producer = graph.producer(op.operands[0]);
        if (it == bindings.end() || it->second.kind != Binding::Kind::HostInput || !producer ||
            producer->kind != OpKind::Input || uses.at(op.operands[0]) != 1)
          throw_failure(op_where(op), "the compiler supports patchify of a host input that nothing else reads");
        const graph::TensorType& image = graph.type(op.operands[0]);
        if (graph.type(op.results[0]).storage != image.storage)
          throw_failure(op_where(op), "the compiler needs patches stored as the image is (cast them after)");
        const int activation = new_activation(graph, op.results[0]);
        chain_.inputs.emplace_back(producer->name, activation);
        chain_.patched_inputs[producer->name] = Chain::Patches{op.patch, image.shape};
        // Each image's patches are a segment: chunks hold whole images.
        const graph::Shape& patches = graph.type(op.results[0]).shape;
        set_segment_rows(op, patches[patches.size() - 2]);
        it->second = {Binding::Kind::Activation, activation};
        bindings[op.results[0]] = {Binding::Kind::Activation, activation};
        return;
      }
      case OpKind::Reshape: {
        // The chain's view of a value is its rows x its last axis: a reshape
        // that keeps both is the value itself.
        const graph::Shape& from = graph.type(op.operands[0]).shape;
        const graph::Shape& to = graph.type(op.results[0]).shape;
        if (from.empty() || to.empty() || from.back() != to.back() || leading_rows(from) != leading_rows(to) ||
            graph.type(op.results[0]).storage != graph.type(op.operands[0]).storage)
          throw_failure(op_where(op), "the compiler supports reshapes that keep the last axis and its type only");
        const int activation = activation_of(op, bindings, op.operands[0], "x");
        bindings[op.results[0]] = {Binding::Kind::Activation, activation};
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
        step.output = new_activation(graph, op.results[0], space_of(input));
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
          if (bias.shape.size() >= 2) {
            add_table(graph, op, input, weight, bindings);
            return;
          }
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
        if (graph.type(op.operands[0]).shape != graph.type(op.operands[1]).shape || space_of(a) != space_of(b))
          throw_failure(op_where(op), "the compiler supports adding two activations of the same shape only");
        Step step{StepKind::Map, op.name};
        step.input = a;
        step.second_input = b;
        step.result = result.storage;
        step.output = new_activation(graph, op.results[0], space_of(a));
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
        step.output = new_activation(graph, op.results[0], space_of(step.input));
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
        step.output = new_activation(graph, op.results[0], space_of(step.input));
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
      default:
        throw_failure(op_where(op), "the compiler does not plan {} ops yet (the host reference runs them: tilec "
                      "reference)", graph::op_kind_name(op.kind));
    }
  }

  // A parameter [S, C] added to an activation [..., S, C]: the same rows
  // to every segment of S rows, as a step of its own.
  void add_table(const graph::Graph& graph, const graph::Op& op, int input, int weight,
                 std::map<graph::ValueId, Binding>& bindings) {
    const Weight& table = chain_.weights[static_cast<std::size_t>(weight)];
    const graph::Shape& shape = graph.type(op.results[0]).shape;
    if (table.shape.size() != 2 || shape.size() < 2 || table.shape[0] != shape[shape.size() - 2] ||
        table.shape[1] != shape.back() || table.per_iteration)
      throw_failure(op_where(op), "the compiler adds a parameter as a bias [C] or as rows [S, C] of every segment "
                    "[..., S, C] outside a repeat only");
    if (table.storage != chain_.activations[static_cast<std::size_t>(input)].storage)
      throw_failure(op_where(op), "the compiler needs a table added in its activation's type");
    set_segment_rows(op, table.shape[0]);
    Step step{StepKind::Map, op.name};
    if (space_of(input) != 0) throw_failure(op_where(op), "the compiler adds a table to the token rows only");
    step.input = input;
    step.table = weight;
    step.result = graph.type(op.results[0]).storage;
    step.output = new_activation(graph, op.results[0]);
    bindings[op.results[0]] = {Binding::Kind::Activation, step.output};
    chain_.steps.push_back(std::move(step));
  }

  void set_segment_rows(const graph::Op& op, std::int64_t segment) {
    if (chain_.segment_rows != 0 && chain_.segment_rows != segment)
      throw_failure(op_where(op), "segments of {} rows where an earlier op has {}; the compiler needs one", segment,
                    chain_.segment_rows);
    chain_.segment_rows = segment;
  }

  // Self-attention over segments of S rows: q, k and v share their leading
  // axes, so row r of each belongs to the same segment. Cross attention: q
  // shared by every segment (rows of a parameter's), k and v the token rows
  // of each segment; the result has q's rows for each segment.
  void add_attention(const graph::Graph& graph, const graph::Op& op, std::map<graph::ValueId, Binding>& bindings) {
    Step step{StepKind::Attention, op.name};
    step.input = activation_of(op, bindings, op.operands[0], "q");
    step.second_input = activation_of(op, bindings, op.operands[1], "k");
    step.third_input = activation_of(op, bindings, op.operands[2], "v");
    const graph::TensorType& q = graph.type(op.operands[0]);
    const graph::TensorType& k = graph.type(op.operands[1]);
    const graph::TensorType& result = graph.type(op.results[0]);
    step.shared_query = chain_.spaces[static_cast<std::size_t>(space_of(step.input))].shared;
    const graph::Shape rows_of_k(k.shape.begin(), k.shape.end() - 1);
    for (int operand : {0, 2}) {
      if (operand == 0 && step.shared_query) continue;
      const graph::Shape& shape = graph.type(op.operands[static_cast<std::size_t>(operand)]).shape;
      if (graph::Shape(shape.begin(), shape.end() - 1) != rows_of_k)
        throw_failure(op_where(op), "the compiler supports attention whose q, k and v share their leading axes, or whose "
                      "q is a parameter's rows (k has {} rows, operand '{}' {})", fmt::join(rows_of_k, "x"),
                      operand == 0 ? "q" : "v", fmt::join(graph::Shape(shape.begin(), shape.end() - 1), "x"));
    }
    if (space_of(step.second_input) != 0 || space_of(step.third_input) != 0)
      throw_failure(op_where(op), "the compiler needs attention's k and v in the token rows");
    for (graph::ValueId operand : op.operands)
      if (graph.type(operand).storage.element != q.storage.element)
        throw_failure(op_where(op), "the compiler needs q, k and v of one element type");
    for (ElementType type : {q.storage.element, result.storage.element})
      if (type != ElementType::F16 && type != ElementType::F32)
        throw_failure(op_where(op), "the compiler supports attention on f16 and f32 values only, not {}",
                      element_type_name(type));
    set_segment_rows(op, k.shape[k.shape.size() - 2]);
    step.attention_heads = op.attention_heads;
    step.attention_scale = op.attention_scale != 0.0f
                               ? op.attention_scale
                               : 1.0f / std::sqrt(static_cast<float>(q.shape.back() / op.attention_heads));
    step.result = result.storage;
    const std::int64_t query_rows = q.shape[q.shape.size() - 2];
    step.output = new_activation(graph, op.results[0],
                                 step.shared_query ? space_index(RowSpace{query_rows, false}) : space_of(step.input));
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
      if (it->second.kind == Binding::Kind::HostInput) activation_of(op, bindings, op.operands[index], "invariant");
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
  std::vector<const graph::Graph*> graphs_;  // the graph whose ops are being added, innermost last
  std::map<graph::ValueId, Binding> bindings_of_last_graph_;
  std::map<graph::ValueId, int> parameter_activations_;  // parameters read as activations
  int fusion_barrier_ = 0;  // steps before this index take no more epilogue
};

}  // namespace

std::int64_t Chain::space_panels(int space, std::int64_t chunk_panels) const {
  if (space == 0) return chunk_panels;
  const RowSpace& rows_of = spaces[static_cast<std::size_t>(space)];
  const std::int64_t panels = (rows_of.rows + 15) / 16;
  if (rows_of.shared) return panels;
  return chunk_panels / (padded_segment_rows() / 16) * panels;
}

int Chain::carried_layout_step() const {
  int index = repeat->last_step;
  while (steps[static_cast<std::size_t>(index)].kind == StepKind::Map) {
    const int input = steps[static_cast<std::size_t>(index)].input;
    int producer = index - 1;
    while (producer >= repeat->first_step && steps[static_cast<std::size_t>(producer)].output != input) --producer;
    if (producer < repeat->first_step) break;
    index = producer;
  }
  return index;
}

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
  builder.add_outputs(graph);
  if (chain.inputs.empty()) throw_failure("graph", "the graph has no host input");
  fuse_sibling_gemms(chain);
  return chain;
}

}  // namespace tilec::compiler
