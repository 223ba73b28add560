#include "cli/workload_flags.h"

#include "graph/npy.h"
#include "support/error.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>

namespace tilec::cli {

namespace {

constexpr const char* kWorkloadOptions[] = {"--batch", "--blocks", "--precision", "--fp8-scale", "--bias",
                                            "--tokens", "--width", "--hidden"};

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
                     "Chained MLP blocks; more than 1 makes one repeat op (default 1)")
      ->type_name("N");
  command.add_option("--precision", flags.precision,
                     "fp8 (F143 x, W1, W2 and h; FP16 GEMM results), fp16 or fp32 (default fp8)")
      ->type_name("P");
  command.add_option("--fp8-scale", flags.fp8_scale,
                     "FP8 scale exponent of x, W1 and W2: an integer, or auto = per tensor the "
                     "smallest s with max|v| * 2^-s <= 240 (default auto)")
      ->type_name("S|auto");
  command.add_flag("--bias", flags.bias, "Add biases b1 and b2 after the GEMMs (default off)");
  command.add_option("--tokens", flags.tokens, "Tokens per batch item, workload mlp only (default 8)")
      ->type_name("N");
  command.add_option("--width", flags.width, "Model width, workload mlp only (default 16)")->type_name("N");
  command.add_option("--hidden", flags.hidden, "MLP hidden width, workload mlp only (default 32)")
      ->type_name("N");
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
                                 const WorkloadFlags& flags) {
  check_graph_file_data_flags(command, inputs_dir);
  if (inputs_dir.empty()) return graph::generate_data(graph, workload_seed(flags));
  return graph::read_tensor_dir(inputs_dir, source_types(graph));
}

std::string workload_title(const WorkloadFlags& flags, const graph::MlpOptions& options) {
  std::string title = fmt::format("{} {} batch {} blocks {}", flags.workload,
                                  graph::precision_name(options.precision), options.batch, options.blocks);
  if (options.bias) title += " bias";
  return title;
}

}  // namespace tilec::cli
