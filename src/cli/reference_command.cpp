// `tilec reference`: runs a workload or a graph file on the host reference
// interpreter (graph/reference.h), prints a summary, and can dump every
// input, parameter and output as .npy files with a manifest.
#include "bench/verify.h"
#include "cli/commands.h"
#include "support/number_text.h"
#include "cli/workload_flags.h"
#include "graph/cost.h"
#include "graph/json_format.h"
#include "graph/npy.h"
#include "graph/reference.h"
#include "graph/workloads.h"
#include "support/duration.h"
#include "support/error.h"
#include "support/output_path.h"
#include "support/span.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <optional>
#include <memory>

namespace tilec::cli {

namespace {

struct ReferenceFlags {
  WorkloadFlags workload;
  std::string graph_file;
  std::string inputs_dir;
  std::string dump_dir;
  bool intermediates = false;
  bool json = false;
  std::string k_parts;  // empty: no second run
};

// The outputs again with every GEMM's K summed in parts, compared with the
// one-accumulator outputs by the tolerance rule (--k-parts).
struct OrderDrift {
  int k_parts = 0;
  bench::Comparison comparison;
};

struct Statistics {
  double min = 0, max = 0, mean = 0, rms = 0;
  std::int64_t non_finite = 0;
};

Statistics statistics(const graph::Tensor& tensor) {
  Statistics stats{INFINITY, -INFINITY, 0, 0, 0};
  std::int64_t finite = 0;
  double sum = 0, squares = 0;
  for (float value : tensor.to_floats()) {
    if (!std::isfinite(value)) {
      ++stats.non_finite;
      continue;
    }
    ++finite;
    stats.min = std::min(stats.min, static_cast<double>(value));
    stats.max = std::max(stats.max, static_cast<double>(value));
    sum += value;
    squares += static_cast<double>(value) * value;
  }
  if (finite == 0) return Statistics{0, 0, 0, 0, stats.non_finite};
  stats.mean = sum / static_cast<double>(finite);
  stats.rms = std::sqrt(squares / static_cast<double>(finite));
  return stats;
}

// A fingerprint of the stored bytes, to compare runs at a glance.
std::string checksum(const graph::Tensor& tensor) {
  return fmt::format("{:016x}", XXH64(tensor.bytes.data(), tensor.bytes.size(), 0));
}

struct Loaded {
  graph::Graph graph;
  graph::TensorMap data;
  std::string title;
};

Loaded load(const CLI::App& command, const ReferenceFlags& flags) {
  const bool workload = !flags.workload.workload.empty();
  if (workload == !flags.graph_file.empty())
    throw_bad_input("reference", "give --workload NAME or --graph FILE (one of them)");
  if (workload) {
    if (!flags.inputs_dir.empty()) throw_bad_input("--inputs", "applies to --graph only");
    const graph::MlpOptions options = workload_options(flags.workload);
    Loaded loaded;
    graph::DataRules data_rules;
    {
      Span span("build_graph");
      graph::Workload built = graph::make_workload(flags.workload.workload, options);
      loaded.graph = std::move(built.graph);
      data_rules = std::move(built.data_rules);
    }
    {
      Span span("generate_data");
      loaded.data = graph::generate_data(loaded.graph, options.seed, data_rules);
    }
    loaded.title = fmt::format("{} seed {}", workload_title(flags.workload, options), options.seed);
    return loaded;
  }
  reject_workload_options_without_workload(command, flags.workload);
  check_graph_file_data_flags(command, flags.inputs_dir);
  Loaded loaded;
  GraphFile file = load_graph_file(flags.graph_file, flags.workload);
  loaded.graph = std::move(file.graph);
  Span span("load_data");
  loaded.data = graph_file_data(command, loaded.graph, flags.inputs_dir, flags.workload, file.parameters);
  loaded.title = command.count("--seed") > 0 ? fmt::format("{} seed {}", flags.graph_file, flags.workload.seed)
                                             : flags.graph_file;
  return loaded;
}

graph::TensorMap sources_of(const Loaded& loaded, graph::OpKind kind) {
  graph::TensorMap tensors;
  for (const graph::Op& op : loaded.graph.ops)
    if (op.kind == kind) tensors.emplace(op.name, loaded.data.at(op.name));
  return tensors;
}

void dump(const std::string& directory, const Loaded& loaded, const graph::ReferenceResult& result) {
  Span span("dump");
  const graph::TensorMap& outputs = result.outputs;
  graph::write_tensor_dir(directory, sources_of(loaded, graph::OpKind::Input), graph::TensorRole::Input);
  graph::write_tensor_dir(directory, sources_of(loaded, graph::OpKind::Parameter), graph::TensorRole::Parameter);
  graph::write_tensor_dir(directory, outputs, graph::TensorRole::Output);
  // With the graph beside its data, `--graph DIR/graph.json --inputs DIR` reruns it.
  graph::save_graph_file((std::filesystem::path(directory) / "graph.json").string(), loaded.graph);
  if (!result.intermediates.empty())
    graph::write_tensor_dir((std::filesystem::path(directory) / "intermediates").string(), result.intermediates,
                            graph::TensorRole::Output);
}

void print_summary(const Loaded& loaded, const graph::TensorMap& outputs, double seconds,
                   const std::string& dump_dir, const std::optional<OrderDrift>& drift) {
  struct Line {
    std::string name, role, type, detail;
  };
  std::vector<Line> lines;
  for (graph::OpKind kind : {graph::OpKind::Input, graph::OpKind::Parameter})
    for (const auto& [name, tensor] : sources_of(loaded, kind))
      lines.push_back({name, std::string(graph::op_kind_name(kind)), graph::type_text(tensor.type),
                       grouped(static_cast<std::int64_t>(tensor.bytes.size())) + " bytes"});
  for (const auto& [name, tensor] : outputs) {
    const Statistics stats = statistics(tensor);
    lines.push_back({name, "output", graph::type_text(tensor.type),
                     fmt::format("min {:.4g}  max {:.4g}  mean {:.4g}  rms {:.4g}{}", stats.min, stats.max,
                                 stats.mean, stats.rms,
                                 stats.non_finite ? fmt::format("  non-finite {}", stats.non_finite) : "")});
  }
  std::size_t widths[3] = {};
  for (const Line& line : lines) {
    widths[0] = std::max(widths[0], line.name.size());
    widths[1] = std::max(widths[1], line.role.size());
    widths[2] = std::max(widths[2], line.type.size());
  }
  fmt::print("reference: {}\n", loaded.title);
  for (const Line& line : lines)
    fmt::print("  {:<{}}  {:<{}}  {:<{}}  {}\n", line.name, widths[0], line.role, widths[1], line.type,
               widths[2], line.detail);
  fmt::print("  {} MACs in {} (host reference: FP32, each op's result rounded to its storage type)\n",
             grouped(graph::graph_macs(loaded.graph)), format_duration(seconds));
  if (drift) {
    const bench::Comparison& c = drift->comparison;
    fmt::print("  with every GEMM's K summed in {} parts: {} of {} output elements beyond 0.03 + 0.05 x |reference|, "
               "max abs difference {}\n",
               drift->k_parts, grouped(c.out_of_tolerance), grouped(c.elements),
               c.maximum_absolute_error ? fmt::format("{:.4g}", *c.maximum_absolute_error) : std::string("not finite"));
  }
  if (!dump_dir.empty()) fmt::print("  dumped to {}\n", dump_dir);
}

nlohmann::json tensor_json(const std::string& name, const graph::Tensor& tensor) {
  return {{"name", name},
          {"type", graph::type_text(tensor.type)},
          {"element", element_type_name(tensor.type.storage.element)},
          {"scale", tensor.type.storage.scale},
          {"shape", tensor.type.shape},
          {"bytes", tensor.bytes.size()}};
}

void print_json(const Loaded& loaded, const graph::TensorMap& outputs, double seconds, const std::string& dump_dir,
                const std::optional<OrderDrift>& drift) {
  nlohmann::ordered_json summary;
  summary["run"] = loaded.title;
  summary["seconds"] = seconds;
  summary["macs"] = graph::graph_macs(loaded.graph);
  summary["inputBytes"] = graph::input_bytes(loaded.graph);
  summary["weightBytes"] = graph::parameter_bytes(loaded.graph);
  nlohmann::json inputs = nlohmann::json::array();
  for (graph::OpKind kind : {graph::OpKind::Input, graph::OpKind::Parameter})
    for (const auto& [name, tensor] : sources_of(loaded, kind)) {
      nlohmann::json entry = tensor_json(name, tensor);
      entry["role"] = graph::op_kind_name(kind);
      inputs.push_back(entry);
    }
  summary["inputs"] = inputs;
  nlohmann::json output_list = nlohmann::json::array();
  for (const auto& [name, tensor] : outputs) {
    nlohmann::json entry = tensor_json(name, tensor);
    const Statistics stats = statistics(tensor);
    entry["min"] = stats.min;
    entry["max"] = stats.max;
    entry["mean"] = stats.mean;
    entry["rms"] = stats.rms;
    entry["nonFinite"] = stats.non_finite;
    entry["xxh64"] = checksum(tensor);
    output_list.push_back(entry);
  }
  summary["outputs"] = output_list;
  if (drift) {
    const bench::Comparison& c = drift->comparison;
    summary["orderDrift"] = {{"kParts", drift->k_parts},
                             {"elements", c.elements},
                             {"outOfTolerance", c.out_of_tolerance},
                             {"maximumAbsoluteError", c.maximum_absolute_error ? nlohmann::json(*c.maximum_absolute_error)
                                                                                : nlohmann::json(nullptr)}};
  }
  if (!dump_dir.empty()) summary["dump"] = dump_dir;
  fmt::print("{}\n", summary.dump());
}

void run(const CLI::App& command, const ReferenceFlags& flags) {
  if (flags.intermediates && flags.dump_dir.empty()) throw_bad_input("--intermediates", "needs --dump DIR");
  if (!flags.dump_dir.empty()) check_output_folder("--dump", flags.dump_dir);
  int k_parts = 1;
  if (!flags.k_parts.empty()) {
    std::uint32_t parsed = 0;
    const char* end = flags.k_parts.data() + flags.k_parts.size();
    auto [stop, error] = std::from_chars(flags.k_parts.data(), end, parsed);
    if (error != std::errc() || stop != end || parsed < 2 || parsed > 64)
      throw_bad_input("--k-parts " + flags.k_parts, "must be an integer from 2 to 64");
    k_parts = static_cast<int>(parsed);
  }
  const Loaded loaded = load(command, flags);
  graph::ReferenceResult result;
  double seconds = 0;
  {
    Span span("reference");
    result = graph::run_reference(loaded.graph, loaded.data, flags.intermediates);
    seconds = span.elapsed_seconds();
  }
  std::optional<OrderDrift> drift;
  if (!flags.k_parts.empty()) {
    Span span("reference_in_k_parts");
    drift = OrderDrift{k_parts, bench::compare_outputs(
                                    graph::run_reference(loaded.graph, loaded.data, false, k_parts).outputs,
                                    result.outputs)};
  }
  if (!flags.dump_dir.empty()) dump(flags.dump_dir, loaded, result);
  if (flags.json)
    print_json(loaded, result.outputs, seconds, flags.dump_dir, drift);
  else
    print_summary(loaded, result.outputs, seconds, flags.dump_dir, drift);
}

}  // namespace

void add_reference_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "reference",
      "Run a workload or graph file on the host reference (FP32, each op's result rounded to its "
      "storage type) and summarise the outputs");
  auto flags = std::make_shared<ReferenceFlags>();
  add_workload_flags(*command, flags->workload);
  command->add_option("--graph", flags->graph_file, "A graph file (JSON) to run instead of a workload")
      ->type_name("FILE");
  command->add_option("--inputs", flags->inputs_dir,
                      "With --graph: directory of NAME.npy per input and parameter (manifest.json "
                      "optional); or give --seed N for generated data")
      ->type_name("DIR");
  command->add_option("--dump", flags->dump_dir,
                      "Write inputs, parameters and outputs as NAME.npy with manifest.json, and the "
                      "graph as graph.json, into DIR")
      ->type_name("DIR");
  command->add_flag("--intermediates", flags->intermediates,
                    "With --dump: also write every op's result into DIR/intermediates (a repeat "
                    "body's as REPEAT[i].NAME)");
  command->add_option("--k-parts", flags->k_parts,
                      "Also run the graph with every GEMM's K summed in P parts (as a plan splitting K over P "
                      "tiles does) and report how many output elements that moves beyond the tolerance")
      ->type_name("P");
  command->add_flag("--json", flags->json, "Print one JSON object instead of the readable summary");
  command->callback([command, flags] { run(*command, *flags); });
}

}  // namespace tilec::cli
