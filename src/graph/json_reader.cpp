// Reads the JSON graph format into a Graph through GraphBuilder, so that a
// file obeys exactly the rules of a graph built in code.
#include "graph/builder.h"
#include "graph/json_format.h"
#include "graph/shape_inference.h"
#include "graph/validate.h"
#include "support/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace tilec::graph {

namespace {

using Json = nlohmann::json;

constexpr int kFormatVersion = 1;
// Deeper nesting only arises from broken or hostile files.
constexpr int kDeepestNesting = 64;

std::string_view kind_of(const Json& value) {
  switch (value.type()) {
    case Json::value_t::string: return "a string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    default: return "null";
  }
}

// "FILE:LINE:COLUMN: message" from nlohmann's byte offset (1-based, the
// character that stopped the parser).
[[noreturn]] void throw_syntax_error(const std::string& source, std::string_view text,
                                     const Json::parse_error& error) {
  const std::size_t offset = std::min<std::size_t>(error.byte == 0 ? 0 : error.byte - 1, text.size());
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  // Keep nlohmann's explanation, dropping its own "[json.exception...] parse
  // error at line L, column C: " prefix.
  std::string message = error.what();
  const std::size_t at_column = message.find("column ");
  const std::size_t colon = message.find(": ", at_column == std::string::npos ? 0 : at_column);
  if (colon != std::string::npos) message = message.substr(colon + 2);
  throw_bad_input(fmt::format("{}:{}:{}", source, line, column), "{}", message);
}

// Rejects duplicate fields (nlohmann would keep the last silently) and
// runaway nesting while parsing; names the object by its path ("ops[2]").
class StructureGuard {
 public:
  bool operator()(int depth, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        if (depth >= kDeepestNesting)
          throw_bad_input(path(), "nesting deeper than {} levels", kDeepestNesting);
        frames_.push_back(Frame{event == Json::parse_event_t::object_start, 0, {}, {}});
        break;
      case Json::parse_event_t::key: {
        Frame& frame = frames_.back();
        frame.key = parsed.get<std::string>();
        if (!frame.keys.insert(frame.key).second) {
          frames_.back().key.clear();
          throw_bad_input(path(), "duplicate field '{}'", parsed.get<std::string>());
        }
        break;
      }
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        frames_.pop_back();
        completed_value();
        break;
      case Json::parse_event_t::value: completed_value(); break;
    }
    return true;
  }

 private:
  struct Frame {
    bool is_object;
    std::size_t index;
    std::string key;
    std::set<std::string> keys;
  };

  void completed_value() {
    if (!frames_.empty() && !frames_.back().is_object) ++frames_.back().index;
  }

  std::string path() const {
    std::string text;
    for (const Frame& frame : frames_) {
      if (frame.is_object && !frame.key.empty())
        text += (text.empty() ? "" : ".") + frame.key;
      else if (!frame.is_object)
        text += fmt::format("[{}]", frame.index);
    }
    return text;
  }

  std::vector<Frame> frames_;
};

// One JSON object's fields, checked against the fields its kind allows.
class Fields {
 public:
  Fields(const Json& object, std::string where, std::string_view what,
         std::initializer_list<std::string_view> allowed)
      : object_(object), where_(std::move(where)) {
    if (!object.is_object())
      throw_bad_input(where_, "{} must be an object, not {}", what, kind_of(object));
    for (const auto& [key, value] : object.items()) {
      bool known = false;
      for (std::string_view candidate : allowed) known = known || candidate == key;
      if (!known)
        throw_bad_input(where_, "unknown field '{}' ({} takes {})", key, what,
                        fmt::join(allowed, ", "));
    }
  }

  const std::string& where() const { return where_; }

  const Json* find(std::string_view key) const {
    auto found = object_.find(key);
    return found == object_.end() ? nullptr : &*found;
  }

  const Json& required(std::string_view key) const {
    const Json* value = find(key);
    if (!value) throw_bad_input(where_, "missing field '{}'", key);
    return *value;
  }

  std::string text(std::string_view key) const { return as_text(key, required(key)); }
  std::optional<std::string> optional_text(std::string_view key) const {
    const Json* value = find(key);
    return value ? std::optional(as_text(key, *value)) : std::nullopt;
  }

  std::int64_t integer(std::string_view key) const { return as_integer(key, required(key)); }
  std::optional<std::int64_t> optional_integer(std::string_view key) const {
    const Json* value = find(key);
    return value ? std::optional(as_integer(key, *value)) : std::nullopt;
  }

  bool boolean(std::string_view key, bool fallback) const {
    const Json* value = find(key);
    if (!value) return fallback;
    if (!value->is_boolean()) wrong_kind(key, *value, "a boolean");
    return value->get<bool>();
  }

  float number(std::string_view key, float fallback) const {
    const Json* value = find(key);
    if (!value) return fallback;
    if (!value->is_number()) wrong_kind(key, *value, "a number");
    const double number = value->get<double>();
    if (!(std::abs(number) <= std::numeric_limits<float>::max()))
      throw_bad_input(where_, "field '{}' is {}, beyond the range of a float", key, number);
    return static_cast<float>(number);
  }

  const Json& array(std::string_view key) const { return as_array(key, required(key)); }
  const Json& optional_array(std::string_view key) const {
    static const Json empty = Json::array();
    const Json* value = find(key);
    return value ? as_array(key, *value) : empty;
  }

  std::int64_t as_integer(std::string_view key, const Json& value) const {
    if (value.is_number_unsigned() &&
        value.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      throw_bad_input(where_, "field '{}' is out of range", key);
    if (!value.is_number_integer()) wrong_kind(key, value, "an integer");
    return value.get<std::int64_t>();
  }

 private:
  [[noreturn]] void wrong_kind(std::string_view key, const Json& value, std::string_view kind) const {
    throw_bad_input(where_, "field '{}' must be {}, not {}", key, kind, kind_of(value));
  }
  std::string as_text(std::string_view key, const Json& value) const {
    if (!value.is_string()) wrong_kind(key, value, "a string");
    return value.get<std::string>();
  }
  const Json& as_array(std::string_view key, const Json& value) const {
    if (!value.is_array()) wrong_kind(key, value, "an array");
    return value;
  }

  const Json& object_;
  std::string where_;
};

std::optional<StorageType> read_storage(const Fields& fields, bool required) {
  const std::optional<std::string> name =
      required ? std::optional(fields.text("type")) : fields.optional_text("type");
  const std::optional<std::int64_t> scale = fields.optional_integer("scale");
  if (!name) {
    if (scale) throw_bad_input(fields.where(), "field 'scale' needs field 'type'");
    return std::nullopt;
  }
  const std::optional<ElementType> element = parse_element_type(*name);
  if (!element)
    throw_bad_input(fields.where(), "unknown type '{}' (types: f32, f16, f143, f152, e4m3, e5m2)",
                    *name);
  if (scale && !is_fp8(*element))
    throw_bad_input(fields.where(), "field 'scale' is for FP8 types, not {}", *name);
  if (scale && (*scale < -kLargestFp8Scale || *scale > kLargestFp8Scale))
    throw_bad_input(fields.where(), "scale {} is beyond +-{}", *scale, kLargestFp8Scale);
  return StorageType{*element, static_cast<int>(scale.value_or(0))};
}

std::vector<std::int64_t> read_integers(const Fields& fields, std::string_view key) {
  std::vector<std::int64_t> integers;
  for (const Json& entry : fields.array(key)) integers.push_back(fields.as_integer(key, entry));
  return integers;
}

Shape read_shape(const Fields& fields) { return read_integers(fields, "shape"); }

// An axis field, kept within what any shape can have.
int read_axis(const Fields& fields, std::string_view key, std::int64_t fallback) {
  const std::int64_t axis = fields.optional_integer(key).value_or(fallback);
  if (axis < -1024 || axis > 1024) throw_bad_input(fields.where(), "{} {} is out of range", key, axis);
  return static_cast<int>(axis);
}

// A name and the value it stands for: "x" (both the same) or
// {"name": "x", "value": "x0"}.
std::pair<std::string, std::string> read_binding(const Json& entry, const std::string& where,
                                                 std::string_view what) {
  if (entry.is_string()) return {entry.get<std::string>(), entry.get<std::string>()};
  Fields fields(entry, where, what, {"name", "value"});
  return {fields.text("name"), fields.text("value")};
}

class Reader {
 public:
  Graph read(const Json& document) {
    Fields fields(document, "", "a graph file",
                  {"format", "version", "inputs", "parameters", "ops", "outputs"});
    if (const std::string format = fields.text("format"); format != "tilec-graph")
      throw_bad_input("", "field 'format' is '{}', not 'tilec-graph'", format);
    if (const std::int64_t version = fields.integer("version"); version != kFormatVersion)
      throw_bad_input("", "version {} is not supported (this tilec reads version {})", version,
                      kFormatVersion);
    GraphBuilder builder;
    scopes_.push_back(&builder);
    const Json& inputs = fields.optional_array("inputs");
    for (std::size_t i = 0; i < inputs.size(); ++i)
      read_source(inputs[i], OpKind::Input, fmt::format("inputs[{}]", i), builder);
    const Json& parameters = fields.optional_array("parameters");
    for (std::size_t i = 0; i < parameters.size(); ++i)
      read_source(parameters[i], OpKind::Parameter, fmt::format("parameters[{}]", i), builder);
    read_ops(fields.optional_array("ops"), builder);
    const Json& outputs = fields.array("outputs");
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const std::string where = fmt::format("outputs[{}]", i);
      auto [name, value] = read_binding(outputs[i], where, "an output");
      builder.output(name, resolve(builder, fmt::format("output '{}'", name), "value", value));
    }
    return builder.finish();
  }

 private:
  // The "name" of a list entry, read before anything else so that every
  // later error can name the entry.
  static std::string entry_name(const Json& entry, const std::string& index_place,
                                std::string_view what) {
    if (!entry.is_object())
      throw_bad_input(index_place, "{} must be an object, not {}", what, kind_of(entry));
    const auto name = entry.find("name");
    if (name == entry.end()) throw_bad_input(index_place, "missing field 'name'");
    if (!name->is_string())
      throw_bad_input(index_place, "field 'name' must be a string, not {}", kind_of(*name));
    return name->get<std::string>();
  }

  void read_source(const Json& entry, OpKind kind, const std::string& index_place,
                   GraphBuilder& builder) {
    std::string_view what = kind == OpKind::Input ? "an input" : "a parameter";
    const std::string name = entry_name(entry, index_place, what);
    Fields fields(entry, fmt::format("{} '{}'", op_kind_name(kind), name), what,
                  {"name", "type", "scale", "shape"});
    TensorType type{read_shape(fields), *read_storage(fields, true)};
    if (kind == OpKind::Input) builder.input(name, type);
    else builder.parameter(name, type);
  }

  void read_ops(const Json& ops, GraphBuilder& builder) {
    for (std::size_t i = 0; i < ops.size(); ++i)
      read_op(ops[i], entry_name(ops[i], fmt::format("ops[{}]", i), "an op"), builder);
  }

  ValueId resolve(const GraphBuilder& builder, const std::string& where, std::string_view role,
                  const std::string& name) const {
    const ValueId id = builder.find(name);
    if (id != kNoValue) return id;
    for (const GraphBuilder* scope : scopes_)
      if (scope != &builder && scope->find(name) != kNoValue)
        throw_bad_input(where, "{} names '{}', which is outside this repeat body (pass it in as an "
                        "invariant operand)",
                        role, name);
    throw_bad_input(where, "{} names unknown value '{}'", role, name);
  }

  void read_op(const Json& entry, const std::string& name, GraphBuilder& builder) {
    const std::string where = fmt::format("op '{}'", name);
    const auto kind_field = entry.find("op");
    if (kind_field == entry.end()) throw_bad_input(where, "missing field 'op'");
    if (!kind_field->is_string())
      throw_bad_input(where, "field 'op' must be a string, not {}", kind_of(*kind_field));
    const std::string kind_name = kind_field->get<std::string>();
    const std::optional<OpKind> kind = parse_op_kind(kind_name);
    if (!kind)
      throw_bad_input(where, "unknown op '{}' (ops: gemm, gelu, add, sub, mul, div, pow, sqrt, erf, tanh, relu, "
                      "sigmoid, exp, cast, layernorm, softmax, attention, reduce_mean, reduce_sum, reduce_max, "
                      "transpose, concat, slice, gather, patchify, reshape, repeat)",
                      kind_name);
    auto operand = [&](const Fields& fields, std::string_view role) {
      return resolve(builder, where, fmt::format("operand '{}'", role), fields.text(role));
    };
    if (is_binary_elementwise(*kind)) {
      Fields f(entry, where, kind_name, {"op", "name", "a", "b", "type", "scale"});
      builder.binary(*kind, name, operand(f, "a"), operand(f, "b"), read_storage(f, false));
      return;
    }
    if (is_unary_elementwise(*kind)) {
      Fields f(entry, where, kind_name, {"op", "name", "x", "type", "scale"});
      builder.unary(*kind, name, operand(f, "x"), read_storage(f, false));
      return;
    }
    if (is_reduction(*kind)) {
      Fields f(entry, where, kind_name, {"op", "name", "x", "axes", "keep_dims", "type", "scale"});
      builder.reduce(*kind, name, operand(f, "x"), read_integers(f, "axes"), f.boolean("keep_dims", true),
                     read_storage(f, false));
      return;
    }
    switch (*kind) {
      case OpKind::Transpose: {
        Fields f(entry, where, "transpose", {"op", "name", "x", "permutation", "type", "scale"});
        builder.transpose(name, operand(f, "x"), read_integers(f, "permutation"), read_storage(f, false));
        return;
      }
      case OpKind::Concat: {
        Fields f(entry, where, "concat", {"op", "name", "inputs", "axis", "type", "scale"});
        std::vector<ValueId> inputs;
        const Json& names = f.array("inputs");
        for (std::size_t i = 0; i < names.size(); ++i) {
          if (!names[i].is_string())
            throw_bad_input(where, "inputs[{}] must be a value name, not {}", i, kind_of(names[i]));
          inputs.push_back(resolve(builder, where, fmt::format("inputs[{}]", i), names[i].get<std::string>()));
        }
        builder.concat(name, inputs, read_axis(f, "axis", -1), read_storage(f, false));
        return;
      }
      case OpKind::Slice: {
        Fields f(entry, where, "slice", {"op", "name", "x", "starts", "ends", "steps", "type", "scale"});
        builder.slice(name, operand(f, "x"), read_integers(f, "starts"), read_integers(f, "ends"),
                      read_integers(f, "steps"), read_storage(f, false));
        return;
      }
      case OpKind::Gather: {
        Fields f(entry, where, "gather", {"op", "name", "x", "axis", "indices", "indices_shape", "type", "scale"});
        builder.gather(name, operand(f, "x"), read_axis(f, "axis", 0), read_integers(f, "indices"),
                       read_integers(f, "indices_shape"), read_storage(f, false));
        return;
      }
      default: break;
    }
    switch (*kind) {
      case OpKind::Input:
      case OpKind::Parameter:
        throw_bad_input(where, "{}s are declared in the top-level \"{}s\" list, not among the ops",
                        kind_name, kind_name);
      case OpKind::Gemm: {
        Fields f(entry, where, "gemm", {"op", "name", "a", "b", "type", "scale", "transpose_a", "transpose_b"});
        builder.gemm(name, operand(f, "a"), operand(f, "b"), *read_storage(f, true),
                     f.boolean("transpose_a", false), f.boolean("transpose_b", false));
        return;
      }
      case OpKind::Gelu: {
        Fields f(entry, where, "gelu", {"op", "name", "x", "approximation", "type", "scale"});
        const std::string approximation = f.optional_text("approximation").value_or("tanh");
        if (approximation != "tanh" && approximation != "erf")
          throw_bad_input(where, "field 'approximation' is '{}', not 'tanh' or 'erf'", approximation);
        builder.gelu(name, operand(f, "x"),
                     approximation == "tanh" ? GeluApproximation::Tanh : GeluApproximation::Erf,
                     read_storage(f, false));
        return;
      }
      case OpKind::Add: {
        Fields f(entry, where, "add", {"op", "name", "a", "b", "type", "scale"});
        builder.add(name, operand(f, "a"), operand(f, "b"), read_storage(f, false));
        return;
      }
      case OpKind::Cast: {
        Fields f(entry, where, "cast", {"op", "name", "x", "type", "scale"});
        builder.cast(name, operand(f, "x"), *read_storage(f, true));
        return;
      }
      case OpKind::LayerNorm: {
        Fields f(entry, where, "layernorm", {"op", "name", "x", "gamma", "beta", "epsilon", "type", "scale"});
        builder.layernorm(name, operand(f, "x"), operand(f, "gamma"), operand(f, "beta"),
                          f.number("epsilon", 1e-6f), read_storage(f, false));
        return;
      }
      case OpKind::Softmax: {
        Fields f(entry, where, "softmax", {"op", "name", "x", "axis", "type", "scale"});
        const std::int64_t axis = f.optional_integer("axis").value_or(-1);
        if (axis < -1024 || axis > 1024) throw_bad_input(where, "axis {} is out of range", axis);
        builder.softmax(name, operand(f, "x"), static_cast<int>(axis), read_storage(f, false));
        return;
      }
      case OpKind::Attention: {
        Fields f(entry, where, "attention", {"op", "name", "q", "k", "v", "attention_scale", "heads", "type", "scale"});
        const std::int64_t heads = f.optional_integer("heads").value_or(1);
        if (heads < 1 || heads > (1 << 20)) throw_bad_input(where, "heads {} must be from 1 to 2^20", heads);
        builder.attention(name, operand(f, "q"), operand(f, "k"), operand(f, "v"),
                          f.number("attention_scale", 0.0f), read_storage(f, false), heads);
        return;
      }
      case OpKind::Patchify: {
        Fields f(entry, where, "patchify", {"op", "name", "x", "patch", "type", "scale"});
        builder.patchify(name, operand(f, "x"), f.integer("patch"), read_storage(f, false));
        return;
      }
      case OpKind::Reshape: {
        Fields f(entry, where, "reshape", {"op", "name", "x", "shape", "type", "scale"});
        builder.reshape(name, operand(f, "x"), read_shape(f), read_storage(f, false));
        return;
      }
      case OpKind::Repeat: read_repeat(entry, name, where, builder); return;
      default: TILEC_CHECK(false, "op kind {} has no reader", kind_name);
    }
  }

  void read_repeat(const Json& entry, const std::string& name, const std::string& where,
                   GraphBuilder& builder) {
    Fields f(entry, where, "repeat", {"op", "name", "count", "carried", "sequence", "invariant", "body"});
    const std::int64_t count = f.integer("count");
    GraphBuilder::RepeatOperands operands;
    auto read_group = [&](const Json& group, std::string_view role, std::vector<ValueId>& ids) {
      for (std::size_t i = 0; i < group.size(); ++i) {
        auto [argument, value] =
            read_binding(group[i], fmt::format("{}: {}[{}]", where, role, i), "a repeat operand");
        ids.push_back(resolve(builder, where, fmt::format("{} operand", role), value));
        operands.argument_names.push_back(argument);
      }
    };
    read_group(f.array("carried"), "carried", operands.carried);
    read_group(f.optional_array("sequence"), "sequence", operands.sequence);
    read_group(f.optional_array("invariant"), "invariant", operands.invariant);
    const Json& body = f.required("body");
    builder.repeat(name, count, operands,
                   [&](GraphBuilder& body_builder, const std::vector<ValueId>&) {
                     return read_body(body, body_builder);
                   });
  }

  std::vector<ValueId> read_body(const Json& body, GraphBuilder& body_builder) {
    Fields fields(body, "body", "a repeat body", {"ops", "outputs"});
    scopes_.push_back(&body_builder);
    read_ops(fields.optional_array("ops"), body_builder);
    std::vector<ValueId> next;
    const Json& outputs = fields.array("outputs");
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const std::string where = fmt::format("body outputs[{}]", i);
      if (!outputs[i].is_string())
        throw_bad_input(where, "a body output is a value name, not {}", kind_of(outputs[i]));
      next.push_back(resolve(body_builder, where, "output", outputs[i].get<std::string>()));
    }
    scopes_.pop_back();
    return next;
  }

  std::vector<const GraphBuilder*> scopes_;
};

}  // namespace

Graph read_graph_json(std::string_view text, const std::string& source) {
  Json document;
  try {
    StructureGuard guard;
    document = Json::parse(text, std::ref(guard), /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const Json::parse_error& error) {
    throw_syntax_error(source, text, error);
  } catch (const Json::exception& error) {
    // A number too large for a double, and the like: nlohmann gives no place.
    std::string message = error.what();
    if (message.rfind("[json.exception.", 0) == 0 && message.find("] ") != std::string::npos)
      message = message.substr(message.find("] ") + 2);
    throw_bad_input(source, "{}", message);
  } catch (const Error& error) {
    throw error.within(source);
  }
  try {
    Graph graph = Reader().read(document);
    validate(graph);
    return graph;
  } catch (const Error& error) {
    throw error.within(source);
  }
}

Graph load_graph_file(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) throw_bad_input(path, "is a folder, not a graph file");
  std::ifstream file(path, std::ios::binary);
  if (!file) throw_bad_input(path, "cannot open the graph file");
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) throw_bad_input(path, "cannot read the graph file");
  return read_graph_json(text.str(), path);
}

}  // namespace tilec::graph
