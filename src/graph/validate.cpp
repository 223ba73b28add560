#include "graph/validate.h"

#include "graph/builder.h"
#include "graph/shape_inference.h"
#include "support/error.h"

#include <fmt/format.h>

#include <set>

namespace tilec::graph {

namespace {

class Validator {
 public:
  Validator(const Graph& graph, bool is_body) : graph_(graph), is_body_(is_body) {}

  void run() {
    check_values();
    check_arguments();
    defined_.assign(graph_.values.size(), false);
    for (ValueId argument : graph_.arguments) defined_[static_cast<std::size_t>(argument)] = true;
    for (std::size_t index = 0; index < graph_.ops.size(); ++index) {
      try {
        check_op(index);
      } catch (const Error& error) {
        // Shape inference names the op itself; the checks here leave it to us.
        if (!error.where().empty()) throw;
        throw error.within(fmt::format("op '{}'", graph_.ops[index].name));
      }
    }
    check_outputs();
  }

 private:
  bool in_range(ValueId id) const {
    return id >= 0 && static_cast<std::size_t>(id) < graph_.values.size();
  }

  void check_values() {
    std::set<std::string, std::less<>> names;
    for (std::size_t id = 0; id < graph_.values.size(); ++id) {
      const Value& value = graph_.values[id];
      const std::string where = fmt::format("value {} '{}'", id, value.name);
      if (!names.insert(value.name).second) throw_bad_input(where, "two values have this name");
      if (value.producer >= 0) {
        const auto producer = static_cast<std::size_t>(value.producer);
        const auto result = static_cast<std::size_t>(value.result_index);
        if (producer >= graph_.ops.size() || value.result_index < 0 ||
            result >= graph_.ops[producer].results.size() ||
            graph_.ops[producer].results[result] != static_cast<ValueId>(id))
          throw_bad_input(where, "its producer (op {}, result {}) does not list it",
                          value.producer, value.result_index);
      } else if (value.producer != -1) {
        throw_bad_input(where, "producer {} is neither an op index nor -1", value.producer);
      }
      check_type(where, "the value", value.type);
    }
  }

  void check_arguments() {
    if (!is_body_ && !graph_.arguments.empty())
      throw_bad_input("graph", "only repeat bodies have arguments, this graph has {}",
                      graph_.arguments.size());
    std::set<ValueId> seen;
    for (ValueId id : graph_.arguments) {
      if (!in_range(id)) throw_bad_input("graph", "argument id {} is out of range", id);
      const Value& value = graph_.value(id);
      const std::string where = fmt::format("argument '{}'", value.name);
      if (value.producer != -1) throw_bad_input(where, "an argument has no producer op");
      if (!seen.insert(id).second) throw_bad_input(where, "listed twice among the arguments");
      if (!is_valid_name(value.name)) throw_bad_input(where, "invalid name");
    }
    for (std::size_t id = 0; id < graph_.values.size(); ++id)
      if (graph_.values[id].producer == -1 && !seen.contains(static_cast<ValueId>(id)))
        throw_bad_input(fmt::format("value {} '{}'", id, graph_.values[id].name),
                        "it has no producer op and is not an argument");
  }

  void check_order(const Op& op) {
    const bool is_source = op.kind == OpKind::Input || op.kind == OpKind::Parameter;
    if (is_source && is_body_)
      throw_bad_input("", "a repeat body has no {}s", op_kind_name(op.kind));
    if (op.kind == OpKind::Input && seen_parameter_)
      throw_bad_input("", "input after a parameter: inputs come first, then parameters, then ops");
    if (is_source && seen_compute_)
      throw_bad_input("", "{} after op '{}': inputs and parameters come before every other op",
                      op_kind_name(op.kind), first_compute_);
    if (op.kind == OpKind::Parameter) seen_parameter_ = true;
    if (!is_source && !seen_compute_) {
      seen_compute_ = true;
      first_compute_ = op.name;
    }
  }

  void check_op(std::size_t index) {
    const Op& op = graph_.ops[index];
    if (!is_valid_name(op.name))
      throw_bad_input(fmt::format("op {} '{}'", index, op.name), "invalid op name");
    if (!op_names_.insert(op.name).second) throw_bad_input("", "two ops have this name");
    if (op_kind_name(op.kind) == "?") throw_bad_input("", "unknown op kind {}", static_cast<int>(op.kind));
    check_order(op);

    std::vector<TensorType> operand_types;
    for (ValueId id : op.operands) {
      if (!in_range(id)) throw_bad_input("", "operand id {} is out of range", id);
      if (!defined_[static_cast<std::size_t>(id)])
        throw_bad_input("", "operand '{}' is used before it is defined", graph_.value(id).name);
      operand_types.push_back(graph_.type(id));
    }
    if (op.kind == OpKind::Repeat) {
      if (!op.body) throw_bad_input("", "repeat has no body");
      try {
        Validator(*op.body, true).run();
      } catch (const Error& error) {
        throw error.within(fmt::format("op '{}'", op.name));
      }
    }

    const bool is_source = op.kind == OpKind::Input || op.kind == OpKind::Parameter;
    std::vector<Shape> shapes = infer_result_shapes(op, operand_types);
    const std::size_t result_count = is_source ? 1 : shapes.size();
    if (op.results.size() != result_count)
      throw_bad_input("", "{} has {} results, not {}", op_kind_name(op.kind), result_count,
                      op.results.size());
    for (std::size_t i = 0; i < op.results.size(); ++i) {
      const ValueId id = op.results[i];
      if (!in_range(id)) throw_bad_input("", "result id {} is out of range", id);
      const Value& value = graph_.value(id);
      if (value.producer != static_cast<std::int32_t>(index) ||
          value.result_index != static_cast<std::int32_t>(i))
        throw_bad_input("", "result '{}' names another producer", value.name);
      const std::string expected_name =
          op.results.size() == 1 ? op.name : fmt::format("{}#{}", op.name, i);
      if (value.name != expected_name)
        throw_bad_input("", "result {} is named '{}', not '{}'", i, value.name, expected_name);
      if (!is_source && value.type.shape != shapes[i])
        throw_bad_input("", "result '{}' has shape {} but its operands give {}", value.name,
                        shape_text(value.type.shape), shape_text(shapes[i]));
      if (op.kind == OpKind::Repeat && value.type != operand_types[i])
        throw_bad_input("", "result '{}' has type {} but its carried operand {}", value.name,
                        type_text(value.type), type_text(operand_types[i]));
      defined_[static_cast<std::size_t>(id)] = true;
    }
  }

  void check_outputs() {
    if (!is_body_ && graph_.outputs.empty()) throw_bad_input("graph", "the graph has no outputs");
    std::set<std::string, std::less<>> names;
    for (std::size_t i = 0; i < graph_.outputs.size(); ++i) {
      const auto& [name, id] = graph_.outputs[i];
      const std::string where = fmt::format("output '{}'", name);
      if (!in_range(id)) throw_bad_input(where, "value id {} is out of range", id);
      if (!is_body_ && !is_valid_name(name)) throw_bad_input(where, "invalid output name");
      if (!names.insert(name).second) throw_bad_input(where, "two outputs have this name");
      if (is_body_ && (i >= graph_.arguments.size() || graph_.value(graph_.arguments[i]).name != name))
        throw_bad_input(where, "body output {} must be named after carried argument {}", i, i);
    }
  }

  const Graph& graph_;
  bool is_body_;
  std::vector<bool> defined_;
  std::set<std::string, std::less<>> op_names_;
  bool seen_parameter_ = false;
  bool seen_compute_ = false;
  std::string first_compute_;
};

}  // namespace

void validate(const Graph& graph) { Validator(graph, false).run(); }

}  // namespace tilec::graph
