#include "cli/case_flags.h"

#include "bench/run_case.h"
#include "bench/workload_data.h"
#include "cli/usage_errors.h"
#include "graph/json_format.h"
#include "graph/npy.h"
#include "support/error.h"

#include <charconv>
#include <filesystem>

namespace tilec::cli {

namespace {

std::optional<std::uint32_t> parse_unsigned(const std::string& text) {
  std::uint32_t value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end) return std::nullopt;
  return value;
}

}  // namespace

void add_target_flags(CLI::App& command, TargetFlags& flags) {
  command.add_option("--target", flags.target, "Machine: a preset (ipu21, the default; bow, ipu2, ipu1), PRESET:N (its first N tiles), PRESET:field=value,... or FILE.json (docs/machines.md)")
      ->type_name("T");
  command.add_option("--budget-kib", flags.budget_kib,
                     "The most memory any tile may use, code included, in KiB (0 = the whole tile; default 0)")
      ->type_name("N");
  add_fp16_partials_flag(command, flags.fp16_partials);
}

void add_fp16_partials_flag(CLI::App& command, bool& fp16_partials) {
  command.add_flag("--fp16-partials", fp16_partials,
                   "Partial sums travel as FP16 wherever a GEMM's result is FP16, as the chip's FP8 matmul "
                   "accumulates (half the exchange; by default FP32 where their rounding would reach an FP8 cast "
                   "or a repeat's next iteration)");
}

void add_max_cycles_flag(CLI::App& command, std::uint64_t& max_cycles) {
  command
      .add_option("--max-cycles", max_cycles,
                  fmt::format("Fault when the run reaches cycle N without halting (default {}; the watchdog "
                              "alone restarts at every sync)",
                              max_cycles))
      ->type_name("N")
      ->check(integer_in(1));
}

void add_tolerance_flags(CLI::App& command, bench::ToleranceRule& rule) {
  command
      .add_option("--atol", rule.absolute,
                  fmt::format("Pass rule: |device - reference| <= ATOL + RTOL x |reference| (default {}, the "
                              "workload's)",
                              rule.absolute))
      ->type_name("ATOL")
      ->check(non_negative_number());
  command.add_option("--rtol", rule.relative, fmt::format("The pass rule's relative part (default {})", rule.relative))
      ->type_name("RTOL")
      ->check(non_negative_number());
}

std::uint32_t parse_budget_kib(const std::string& flag, const std::string& text, const MachineModel& machine) {
  const std::optional<std::uint32_t> kib = parse_unsigned(text);
  if (!kib) throw_bad_input(flag + " " + text, "must be an integer >= 0");
  if (*kib > machine.memory_bytes() / 1024)
    throw_bad_input(flag + " " + text, "is more than a tile's {} KiB", machine.memory_bytes() / 1024);
  return *kib;
}

std::uint32_t parse_tiles(const std::string& text) {
  const std::optional<std::uint32_t> tiles = parse_unsigned(text);
  if (!tiles || *tiles < 1 || *tiles > ipu21().tiles)
    throw_bad_input("--tiles " + text, "must be an integer from 1 to {}", ipu21().tiles);
  return *tiles;
}

compiler::CompileOptions compile_options(const TargetFlags& flags, const std::string& fallback_target) {
  compiler::CompileOptions options;
  options.machine = machine_by_name(flags.target.empty() ? fallback_target : flags.target);
  options.budget_bytes = parse_budget_kib("--budget-kib", flags.budget_kib, options.machine) * 1024;
  options.fp16_partials_anywhere = flags.fp16_partials;
  return options;
}

GraphSource load_graph_source(const CLI::App& command, const std::string& graph_file, const WorkloadFlags& workload,
                              const std::string& inputs_dir, bool with_data, std::uint32_t budget_kib) {
  if (graph_file.empty() == workload.workload.empty())
    throw_bad_input(command.get_name(), "give a GRAPH file or --workload NAME (one of them)");
  GraphSource source;
  source.identity.budget_kib = budget_kib;
  if (!workload.workload.empty()) {
    const graph::MlpOptions options = workload_options(workload);
    if (with_data && inputs_dir.empty()) {
      source.workload = std::make_shared<bench::WorkloadData>(workload.workload, options);
      source.graph = source.workload->graph();
    } else {
      source.graph = graph::build_workload(workload.workload, options);
    }
    source.identity = bench::workload_case(workload.workload, options, budget_kib);
    source.identity.workload = bench::workload_label(workload.workload, options);
  } else {
    reject_workload_options_without_workload(command, workload);
    if (!with_data && command.count("--seed") > 0) throw_bad_input("--seed", "applies to --workload only here");
    if (with_data) check_graph_file_data_flags(command, inputs_dir);
    GraphFile file = load_graph_file(graph_file, workload);
    source.graph = std::move(file.graph);
    if (with_data) source.data = graph_file_data(command, source.graph, inputs_dir, workload, file.parameters);
    source.identity.name = fmt::format("{}-{}", std::filesystem::path(graph_file).stem().string(),
                                       budget_kib == 0 ? std::string("default") : fmt::format("{}k", budget_kib));
    source.identity.workload = graph_file;
  }
  // --inputs replaces a workload's own data (every tensor must be there).
  if (with_data && !inputs_dir.empty() && !workload.workload.empty()) source.data = graph::read_tensor_dir(inputs_dir, source_types(source.graph));
  return source;
}

}  // namespace tilec::cli
