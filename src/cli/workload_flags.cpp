#include "cli/workload_flags.h"

#include "graph/json_format.h"
#include "graph/npy.h"
#include "onnx/import.h"
#include "graph/vit_workload.h"
#include "support/error.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>

namespace tilec::cli {

namespace {

constexpr const char* kWorkloadOptions[] = {"--batch", "--blocks", "--precision", "--fp8-scale", "--bias",
                                            "--tokens", "--width", "--hidden", "--layers", "--no-head"};

bool is_vit(const std::string& workload) { return workload == "siglip-vit" || workload == "vit"; }
bool is_vit_layer(const std::string& workload) { return workload == "siglip-vit-layer" || workload == "vit-layer"; }

// A flag given to a workload that does not take it: one line naming both.
void check_applies(const std::string& workload, bool given, const std::string& flag, bool applies,
                   const char* workloads) {
  if (given && !applies) throw_bad_input(flag, "applies to workload {} only, not {}", workloads, workload);
}

// Each flag against the workload (an unknown workload is build_workload's to report).
void check_flags_apply(const WorkloadFlags& flags) {
  const std::string& name = flags.workload;
  const bool vit = is_vit(name), mlp = name == "siglip-mlp" || name == "mlp";
  if (!vit && !mlp && !is_vit_layer(name)) return;
  const bool sized = name == "mlp" || name == "vit" || name == "vit-layer";
  check_applies(name, flags.blocks != "1", "--blocks " + flags.blocks, mlp, "siglip-mlp or mlp");
  check_applies(name, flags.fp8_scale != "auto", "--fp8-scale " + flags.fp8_scale, mlp, "siglip-mlp or mlp");
  check_applies(name, flags.bias, "--bias", mlp, "siglip-mlp or mlp");
  check_applies(name, !flags.tokens.empty(), "--tokens " + flags.tokens, name == "mlp", "mlp");
  check_applies(name, !flags.width.empty(), "--width " + flags.width, sized, "mlp, vit or vit-layer");
  check_applies(name, !flags.hidden.empty(), "--hidden " + flags.hidden, sized, "mlp, vit or vit-layer");
  check_applies(name, !flags.layers.empty(), "--layers " + flags.layers, vit, "siglip-vit or vit");
  check_applies(name, flags.no_head, "--no-head", vit, "siglip-vit or vit");
}

template <typename Integer>
std::optional<Integer> parse_integer(const std::string& text) {
  Integer value{};
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end || text.empty()) return std::nullopt;
  return value;
}

std::int64_t positive(const std::string& flag, const std::string& text) {
  const std::optional<std::int64_t> value = parse_integer<std::int64_t>(text);
  if (!value || *value < 1) throw_bad_input(flag + " " + text, "must be an integer >= 1");
  return *value;
}

std::optional<std::int64_t> optional_positive(const std::string& flag, const std::string& text) {
  if (text.empty()) return std::nullopt;
  return positive(flag, text);
}

}  // namespace

void add_workload_flags(CLI::App& command, WorkloadFlags& flags) {
  std::string names;
  for (const graph::WorkloadInfo& info : graph::workloads())
    names += fmt::format("\n  {}: {}", info.name, info.summary);
  command.add_option("--workload", flags.workload, "A built-in workload:" + names)->type_name("NAME");
  command.add_option("--batch", flags.batch, "Batch size of the workload's input x (default 1)")
      ->type_name("N");
  command.add_option("--blocks", flags.blocks,
                     "Chained MLP blocks; more than 1 makes one repeat op, MLP workloads only (default 1)")
      ->type_name("N");
  command.add_option("--precision", flags.precision,
                     "fp8 (F143 weights and GEMM operands; FP16 GEMM results and the rest), fp16 or fp32 "
                     "(default fp8)")
      ->type_name("P");
  command.add_option("--fp8-scale", flags.fp8_scale,
                     "FP8 scale exponent of x, W1 and W2: an integer, or auto = per tensor the "
                     "smallest s with max|v| * 2^-s <= 240 (default auto)")
      ->type_name("S|auto");
  command.add_flag("--bias", flags.bias, "Add biases b1 and b2 after the GEMMs (default off)");
  command.add_option("--tokens", flags.tokens, "Tokens per batch item, workload mlp only (default 8)")
      ->type_name("N");
  command.add_option("--width", flags.width, "Model width, workloads mlp, vit and vit-layer only (default 16)")
      ->type_name("N");
  command.add_option("--hidden", flags.hidden, "MLP hidden width, workloads mlp, vit and vit-layer only (default 32)")
      ->type_name("N");
  command.add_option("--layers", flags.layers,
                     "Encoder layers, one repeat op, workloads siglip-vit and vit only (default 27 and 2)")
      ->type_name("N");
  command.add_flag("--no-head", flags.no_head,
                   "Without the MAP head: the output is the post-layernorm tokens (siglip-vit and vit only)");
  command.add_option("--shape", flags.shapes,
                     "With an .onnx model: fix input NAME's dynamic extents (repeatable)")
      ->type_name("NAME=d0,d1,...");
  command.add_option("--seed", flags.seed, "Seed of the generated inputs and parameters: a workload's, or a GRAPH file's "
                     "in place of --inputs (default 0)")
      ->type_name("N");
}

std::uint64_t workload_seed(const WorkloadFlags& flags) {
  const std::optional<std::uint64_t> seed = parse_integer<std::uint64_t>(flags.seed);
  if (!seed) throw_bad_input("--seed " + flags.seed, "must be an integer >= 0");
  return *seed;
}

graph::MlpOptions workload_options(const WorkloadFlags& flags) {
  if (!flags.shapes.empty()) throw_bad_input("--shape", "applies to an .onnx model, not to --workload");
  check_flags_apply(flags);
  graph::MlpOptions options;
  options.batch = positive("--batch", flags.batch);
  options.blocks = positive("--blocks", flags.blocks);
  const std::optional<graph::Precision> precision = graph::parse_precision(flags.precision);
  if (!precision) throw_bad_input("--precision " + flags.precision, "must be fp8, fp16 or fp32");
  options.precision = *precision;
  if (flags.fp8_scale != "auto") {
    const std::optional<int> scale = parse_integer<int>(flags.fp8_scale);
    if (!scale) throw_bad_input("--fp8-scale " + flags.fp8_scale, "must be an integer or auto");
    options.fp8_scale = *scale;
  }
  options.bias = flags.bias;
  options.tokens = optional_positive("--tokens", flags.tokens);
  options.width = optional_positive("--width", flags.width);
  options.hidden = optional_positive("--hidden", flags.hidden);
  options.layers = optional_positive("--layers", flags.layers);
  options.head = !flags.no_head;
  options.seed = workload_seed(flags);
  return options;
}

void reject_workload_options_without_workload(const CLI::App& command, const WorkloadFlags& flags) {
  if (!flags.workload.empty()) return;
  for (const char* option : kWorkloadOptions)
    if (command.count(option) > 0) throw_bad_input(option, "applies to --workload only");
}

std::map<std::string, graph::TensorType> source_types(const graph::Graph& graph) {
  std::map<std::string, graph::TensorType> types;
  for (const graph::Op& op : graph.ops)
    if (op.kind == graph::OpKind::Input || op.kind == graph::OpKind::Parameter)
      types.emplace(op.name, graph.type(op.results.at(0)));
  return types;
}

void check_graph_file_data_flags(const CLI::App& command, const std::string& inputs_dir) {
  const bool seeded = command.count("--seed") > 0;
  if (!inputs_dir.empty() && seeded)
    throw_bad_input("--seed", "a GRAPH file takes its data from --inputs DIR or --seed N, not both");
  if (inputs_dir.empty() && !seeded)
    throw_bad_input("--inputs", "a GRAPH file needs --inputs DIR with its inputs and parameters, or --seed N for "
                    "generated data");
}

graph::TensorMap graph_file_data(const CLI::App& command, const graph::Graph& graph, const std::string& inputs_dir,
                                 const WorkloadFlags& flags, const graph::TensorMap& known) {
  check_graph_file_data_flags(command, inputs_dir);
  graph::TensorMap data;
  if (inputs_dir.empty()) {
    data = graph::generate_data(graph, workload_seed(flags));
  } else {
    std::map<std::string, graph::TensorType> types = source_types(graph);
    for (const auto& [name, tensor] : known) types.erase(name);
    data = graph::read_tensor_dir(inputs_dir, types);
  }
  for (const auto& [name, tensor] : known) data.insert_or_assign(name, tensor);
  return data;
}

GraphFile load_graph_file(const std::string& path, const WorkloadFlags& flags) {
  if (!onnx_import::is_onnx_path(path)) {
    if (!flags.shapes.empty()) throw_bad_input("--shape", "applies to an .onnx model, not {}", path);
    return GraphFile{graph::load_graph_file(path), {}};
  }
  onnx_import::ImportOptions options;
  for (const std::string& text : flags.shapes) {
    auto [name, shape] = onnx_import::parse_shape_override(text);
    if (!options.shapes.emplace(name, shape).second) throw_bad_input("--shape " + text, "names '{}' twice", name);
  }
  onnx_import::ImportedModel model = onnx_import::import_model(path, options);
  return GraphFile{std::move(model.graph), std::move(model.parameters)};
}

std::string workload_title(const WorkloadFlags& flags, const graph::MlpOptions& options) {
  std::string title = fmt::format("{} {} batch {}", flags.workload, graph::precision_name(options.precision),
                                  options.batch);
  if (!is_vit(flags.workload) && !is_vit_layer(flags.workload)) title += fmt::format(" blocks {}", options.blocks);
  if (is_vit(flags.workload))
    title += fmt::format(" layers {}",
                         options.layers.value_or((flags.workload == "vit" ? graph::kSmallVit : graph::kSiglipVit).layers));
  if (!options.head) title += " no head";
  if (options.bias) title += " bias";
  return title;
}

}  // namespace tilec::cli
