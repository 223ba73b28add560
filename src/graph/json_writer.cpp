// Writes the canonical text of the JSON graph format: one line per input,
// parameter and op (a repeat's body indented under it), fields in a fixed
// order, every type written out, defaults written except false transposes.
#include "graph/json_format.h"
#include "graph/validate.h"
#include "support/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace tilec::graph {

namespace {

std::string quoted(const std::string& text) { return nlohmann::json(text).dump(); }

// The shortest decimal text that reads back as the same float.
std::string float_text(float value) { return fmt::format("{}", value); }

// A one-line JSON object built field by field, values given as JSON text.
class Line {
 public:
  Line& field(const std::string& key, std::string json_text) {
    fields_.emplace_back(key, std::move(json_text));
    return *this;
  }
  Line& text(const std::string& key, const std::string& value) { return field(key, quoted(value)); }
  Line& storage(StorageType storage) {
    text("type", std::string(element_type_name(storage.element)));
    if (is_fp8(storage.element)) field("scale", std::to_string(storage.scale));
    return *this;
  }
  std::string str() const {
    std::vector<std::string> parts;
    for (const auto& [key, value] : fields_) parts.push_back(quoted(key) + ": " + value);
    return fmt::format("{{{}}}", fmt::join(parts, ", "));
  }
  // All fields but the closing brace, for an object continued on more lines.
  std::string open() const {
    const std::string whole = str();
    return whole.substr(0, whole.size() - 1);
  }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// ["x", {"name": "h", "value": "y"}]: a plain name when both names agree.
std::string bindings_text(const std::vector<std::pair<std::string, std::string>>& bindings) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : bindings)
    parts.push_back(name == value ? quoted(name)
                                  : Line().text("name", name).text("value", value).str());
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

class Writer {
 public:
  std::string write(const Graph& graph) {
    out_ += "{\n";
    out_ += "  \"format\": \"tilec-graph\",\n";
    out_ += "  \"version\": 1,\n";
    write_sources(graph, OpKind::Input, "inputs");
    write_sources(graph, OpKind::Parameter, "parameters");
    write_ops(graph, 1);
    out_ += ",\n";
    std::vector<std::pair<std::string, std::string>> outputs;
    for (const auto& [name, id] : graph.outputs) outputs.emplace_back(name, graph.value(id).name);
    out_ += "  \"outputs\": " + bindings_text(outputs) + "\n}\n";
    return std::move(out_);
  }

 private:
  static std::string indent(int level) { return std::string(2 * static_cast<std::size_t>(level), ' '); }

  void write_sources(const Graph& graph, OpKind kind, std::string_view key) {
    std::vector<std::string> lines;
    for (const Op& op : graph.ops) {
      if (op.kind != kind) continue;
      const TensorType& type = graph.type(op.results.at(0));
      lines.push_back(Line()
                          .text("name", op.name)
                          .storage(type.storage)
                          .field("shape", fmt::format("[{}]", fmt::join(type.shape, ", ")))
                          .str());
    }
    write_list(key, lines, 1);
    out_ += ",\n";
  }

  void write_list(std::string_view key, const std::vector<std::string>& lines, int level) {
    out_ += fmt::format("{}\"{}\": [", indent(level), key);
    if (lines.empty()) {
      out_ += "]";
      return;
    }
    out_ += "\n";
    for (std::size_t i = 0; i < lines.size(); ++i)
      out_ += indent(level + 1) + lines[i] + (i + 1 < lines.size() ? ",\n" : "\n");
    out_ += indent(level) + "]";
  }

  void write_ops(const Graph& graph, int level) {
    std::vector<std::string> lines;
    for (const Op& op : graph.ops)
      if (op.kind != OpKind::Input && op.kind != OpKind::Parameter)
        lines.push_back(op_text(graph, op, level + 1));
    write_list("ops", lines, level);
  }

  std::string op_text(const Graph& graph, const Op& op, int level) {
    Line line;
    line.text("op", std::string(op_kind_name(op.kind))).text("name", op.name);
    auto operand = [&](const char* role, std::size_t index) {
      line.text(role, graph.value(op.operands.at(index)).name);
    };
    const StorageType result = op.results.empty() ? StorageType{} : graph.type(op.results[0]).storage;
    auto integers = [](const std::vector<std::int64_t>& list) { return fmt::format("[{}]", fmt::join(list, ", ")); };
    if (is_binary_elementwise(op.kind) && op.kind != OpKind::Add) {
      operand("a", 0);
      operand("b", 1);
      return line.storage(result).str();
    }
    if (is_unary_elementwise(op.kind)) {
      operand("x", 0);
      return line.storage(result).str();
    }
    if (is_reduction(op.kind)) {
      operand("x", 0);
      line.field("axes", integers(op.axes)).field("keep_dims", op.keep_dims ? "true" : "false");
      return line.storage(result).str();
    }
    switch (op.kind) {
      case OpKind::Transpose:
        operand("x", 0);
        line.field("permutation", integers(op.permutation)).storage(result);
        break;
      case OpKind::Concat: {
        std::vector<std::string> names;
        for (ValueId id : op.operands) names.push_back(quoted(graph.value(id).name));
        line.field("inputs", fmt::format("[{}]", fmt::join(names, ", ")))
            .field("axis", std::to_string(op.axis))
            .storage(result);
        break;
      }
      case OpKind::Slice:
        operand("x", 0);
        line.field("starts", integers(op.starts)).field("ends", integers(op.ends)).field("steps", integers(op.steps));
        line.storage(result);
        break;
      case OpKind::Gather:
        operand("x", 0);
        line.field("axis", std::to_string(op.axis))
            .field("indices", integers(op.indices))
            .field("indices_shape", integers(op.indices_shape))
            .storage(result);
        break;
      case OpKind::Gemm:
        operand("a", 0);
        operand("b", 1);
        line.storage(result);
        if (op.transpose_a) line.field("transpose_a", "true");
        if (op.transpose_b) line.field("transpose_b", "true");
        break;
      case OpKind::Gelu:
        operand("x", 0);
        line.text("approximation", op.approximation == GeluApproximation::Tanh ? "tanh" : "erf");
        line.storage(result);
        break;
      case OpKind::Add:
        operand("a", 0);
        operand("b", 1);
        line.storage(result);
        break;
      case OpKind::Cast:
        operand("x", 0);
        line.storage(result);
        break;
      case OpKind::LayerNorm:
        operand("x", 0);
        operand("gamma", 1);
        operand("beta", 2);
        line.field("epsilon", float_text(op.epsilon)).storage(result);
        break;
      case OpKind::Softmax:
        operand("x", 0);
        line.field("axis", std::to_string(op.axis)).storage(result);
        break;
      case OpKind::Attention:
        operand("q", 0);
        operand("k", 1);
        operand("v", 2);
        line.field("attention_scale", float_text(op.attention_scale));
        if (op.attention_heads != 1) line.field("heads", std::to_string(op.attention_heads));
        line.storage(result);
        break;
      case OpKind::Patchify:
        operand("x", 0);
        line.field("patch", std::to_string(op.patch)).storage(result);
        break;
      case OpKind::Reshape:
        operand("x", 0);
        line.field("shape", fmt::format("[{}]", fmt::join(op.target_shape, ", "))).storage(result);
        break;
      case OpKind::Repeat: return repeat_text(graph, op, line, level);
      default: break;
    }
    return line.str();
  }

  std::string repeat_text(const Graph& graph, const Op& op, Line& line, int level) {
    const Graph& body = *op.body;
    const std::size_t carried = static_cast<std::size_t>(op.signature.carried);
    const std::size_t sequence = static_cast<std::size_t>(op.signature.sequence);
    std::vector<std::pair<std::string, std::string>> groups[3];
    for (std::size_t i = 0; i < op.operands.size(); ++i) {
      const std::size_t group = i < carried ? 0 : i < carried + sequence ? 1 : 2;
      groups[group].emplace_back(body.value(body.arguments.at(i)).name,
                                 graph.value(op.operands[i]).name);
    }
    line.field("count", std::to_string(op.count)).field("carried", bindings_text(groups[0]));
    if (!groups[1].empty()) line.field("sequence", bindings_text(groups[1]));
    if (!groups[2].empty()) line.field("invariant", bindings_text(groups[2]));

    // The body goes into a nested writer whose text is spliced in here.
    Writer nested;
    nested.out_ = line.open() + ", \"body\": {\n";
    nested.write_ops(body, level + 1);
    std::vector<std::string> outputs;
    for (const auto& [name, id] : body.outputs) outputs.push_back(quoted(body.value(id).name));
    nested.out_ += fmt::format(",\n{}\"outputs\": [{}]\n{}}}}}", indent(level + 1),
                               fmt::join(outputs, ", "), indent(level));
    return std::move(nested.out_);
  }

  std::string out_;
};

}  // namespace

std::string write_graph_json(const Graph& graph) {
  validate(graph);
  return Writer().write(graph);
}

void save_graph_file(const std::string& path, const Graph& graph) {
  const std::string text = write_graph_json(graph);
  std::ofstream file(path, std::ios::binary);
  if (!file) throw_failure(path, "cannot open the file for writing");
  file << text;
  if (!file.flush()) throw_failure(path, "cannot write the graph file");
}

}  // namespace tilec::graph
