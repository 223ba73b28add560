// `tilec run`: compile a graph (or take a package), load its inputs and
// parameters (the workload's own data, or .npy files), simulate, read the
// outputs and compare them with the host reference. Prints a summary, or
// with --json one case object of the sweep report's schema. Exit 0 when
// every output element is within tolerance; 1 when no plan fits, the
// simulator faults or the numbers are out of tolerance; 2 for bad input.
#include "support/number_text.h"
#include "bench/case_report.h"
#include "bench/run_case.h"
#include "bench/workload_data.h"
#include "cli/case_flags.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "graph/npy.h"
#include "package/package_file.h"
#include "support/duration.h"
#include "support/error.h"
#include "support/output_path.h"
#include "support/span.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>

namespace tilec::cli {

namespace {

struct RunFlags {
  std::string graph_file;
  WorkloadFlags workload;
  TargetFlags target;
  std::string inputs_dir;
  std::string package_file;
  std::string outputs_dir;
  std::string profile_dir;
  std::uint64_t max_cycles = sim::kDefaultMaxCycles;
  bench::ToleranceRule tolerance;
  bool json = false;
  bool progress = false;
};

// " (2 NaN, 1 infinite)" when some mismatches are not finite.
std::string non_finite_text(const bench::CaseReport& report) {
  const std::int64_t nans = report.nan_mismatches.value_or(0), infinities = report.infinity_mismatches.value_or(0);
  if (nans == 0 && infinities == 0) return "";
  return fmt::format(" ({} NaN, {} infinite)", grouped(nans), grouped(infinities));
}

void print_summary(const bench::CaseReport& report) {
  fmt::print("run {}: {} on {}\n", report.name, report.workload, report.target);
  if (!report.plan.empty()) fmt::print("  plan      {}\n", report.plan);
  if (report.compile_seconds) {
    std::string stages;
    for (const auto& [stage, seconds] : report.stages)
      if (seconds >= 0.1 * *report.compile_seconds)
        stages += fmt::format("{}{} {}", stages.empty() ? "" : ", ", stage, format_duration(seconds));
    fmt::print("  compile   {}{}\n", format_duration(*report.compile_seconds), stages.empty() ? "" : " (" + stages + ")");
  }
  if (report.estimated_cycles)
    fmt::print("  estimate  {} cycles\n", grouped(static_cast<std::uint64_t>(*report.estimated_cycles)));
  if (report.peak_tile_bytes)
    fmt::print("  memory    peak {} bytes per tile; weights {} bytes, inputs {} bytes on the device; package {} "
               "bytes\n",
               grouped(*report.peak_tile_bytes), grouped(report.weight_bytes.value_or(0)),
               grouped(report.input_bytes.value_or(0)), grouped(report.package_bytes.value_or(0)));
  if (report.cycles)
    fmt::print("  simulate  {} cycles{}{} in {}\n", grouped(*report.cycles),
               report.device_microseconds ? fmt::format(", {:.1f} µs on the device", *report.device_microseconds) : "",
               report.efficiency ? fmt::format(" ({:.1f}% of the roofline)", *report.efficiency * 100) : "",
               format_duration(report.simulate_seconds.value_or(0)));
  if (report.out_of_tolerance) {
    const auto error = [](const std::optional<double>& value) {
      return value ? fmt::format("{:.4g}", *value) : std::string("non-finite");
    };
    fmt::print("  outputs   max abs error {}, max rel error {}; {}\n", error(report.maximum_absolute_error),
               error(report.maximum_relative_error),
               *report.out_of_tolerance == 0
                   ? fmt::format("every element within {} + {} x |reference|", report.absolute_tolerance.value_or(0),
                                 report.relative_tolerance.value_or(0))
                   : fmt::format("{} elements out of tolerance{}",
                                 grouped(static_cast<std::uint64_t>(*report.out_of_tolerance)),
                                 non_finite_text(report)));
    if (report.exact_absolute_error)
      fmt::print("  exact     device max abs error {} (rel {}); the graph's precision alone {} (rel {})\n",
                 error(report.exact_absolute_error), error(report.exact_relative_error),
                 error(report.precision_absolute_error), error(report.precision_relative_error));
    if (report.bit_exact)
      fmt::print("  plan order {}\n", *report.bit_exact
                                          ? std::string("bit-exact: every output element equals the plan-order reference")
                                          : fmt::format("{} output elements differ from the plan-order reference",
                                                        grouped(static_cast<std::uint64_t>(
                                                            report.differing_elements.value_or(0)))));
  }
  if (!report.profile.empty()) fmt::print("  profile   {}\n", report.profile);
  const std::string memory =
      report.peak_rss_bytes ? fmt::format(", host peak RSS {}", memory_text(*report.peak_rss_bytes)) : "";
  fmt::print("  status    {} in {}{}\n", report.status, format_duration(report.wall_seconds), memory);
}

// The budget the package was compiled for, from its compile info: 0 for the
// whole tile, as --budget-kib gives it; 0 when the package does not say.
std::uint32_t package_budget_bytes(const package::Package& package, const MachineModel& machine) {
  const nlohmann::json info = nlohmann::json::parse(package.compile_info, nullptr, false);
  if (!info.is_object() || !info.contains("budgetBytes") || !info["budgetBytes"].is_number_unsigned()) return 0;
  const std::uint64_t bytes = info["budgetBytes"].get<std::uint64_t>();
  return bytes >= machine.memory_bytes() ? 0 : static_cast<std::uint32_t>(bytes);
}

void run(const CLI::App& command, const RunFlags& flags) {
  if (!flags.outputs_dir.empty()) check_output_folder("--outputs", flags.outputs_dir);
  if (!flags.profile_dir.empty()) check_output_folder("--profile", flags.profile_dir);
  std::optional<package::Package> package;
  if (!flags.package_file.empty()) {
    for (const char* flag : {"--budget-kib", "--fp16-partials"})
      if (command.count(flag) > 0) throw_bad_input(flag, "applies when compiling, not to --package");
    package = package::read_package(flags.package_file);
  }
  compiler::CompileOptions options = compile_options(flags.target, package ? package->target : "ipu21");
  if (package) options.budget_bytes = package_budget_bytes(*package, options.machine);
  GraphSource source = load_graph_source(command, flags.graph_file, flags.workload, flags.inputs_dir, true,
                                         options.budget_bytes / 1024);
  source.identity.target = options.machine.name;
  source.identity.name = bench::name_with_options(source.identity.name, options.fp16_partials_anywhere);

  bench::CaseRequest request;
  request.identity = source.identity;
  request.graph = &source.graph;
  request.data = &source.tensors();
  request.compile = options;
  request.package = package ? &*package : nullptr;
  request.profile_directory = flags.profile_dir;
  request.max_cycles = flags.max_cycles;
  request.tolerance = flags.tolerance;
  request.measure_peak_resident = true;  // one case, alone in the process
  std::optional<bench::ReferenceOutputs> reference;
  request.reference = [&]() -> const bench::ReferenceOutputs& {
    if (source.workload) return source.workload->reference();
    if (!reference) reference = bench::compute_reference(source.graph, source.tensors());
    return *reference;
  };
  Progress progress(flags.progress);
  request.on_stage = [&progress](std::string_view stage, double) { progress.stage(stage); };
  request.on_cycles = [&progress](std::uint64_t cycles) { progress.cycles(cycles); };
  bench::CaseOutcome outcome = bench::run_case(request);
  for (const SpanRecord& span : outcome.spans) global_timeline().add(span);

  if (!flags.outputs_dir.empty() && !outcome.outputs.empty())
    graph::write_tensor_dir(flags.outputs_dir, outcome.outputs, graph::TensorRole::Output);
  progress.finish();
  // A case stopped by bad input reports nothing but the error.
  if (outcome.report.status != bench::kError) {
    if (flags.json)
      fmt::print("{}\n", bench::case_json(outcome.report).dump(2));
    else
      print_summary(outcome.report);
  }
  if (outcome.error) throw *outcome.error;
}

}  // namespace

void add_run_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "run",
      "Compile a graph (or take a package), simulate it on its inputs and parameters, and compare every output "
      "with the host reference (exit 1 when out of tolerance)");
  auto flags = std::make_shared<RunFlags>();
  command->add_option("GRAPH", flags->graph_file, "A graph file (JSON), or give --workload")->type_name("FILE");
  add_workload_flags(*command, flags->workload);
  add_target_flags(*command, flags->target);
  command->add_option("--inputs", flags->inputs_dir,
                      "Directory of NAME.npy per input and parameter (manifest.json optional); a workload uses its "
                      "own generated data without it, a GRAPH file generated data with --seed N")
      ->type_name("DIR");
  command->add_option("--package", flags->package_file, "Run this package (.tpk) of the graph instead of compiling")
      ->type_name("FILE");
  command->add_option("--outputs", flags->outputs_dir, "Write the device's outputs as NAME.npy into DIR")
      ->type_name("DIR");
  command->add_option("--profile", flags->profile_dir,
                      "Once the run completes, passing or not, write its profile (profile.tprof) and page (profile.html) into DIR")
      ->type_name("DIR");
  add_max_cycles_flag(*command, flags->max_cycles);
  add_tolerance_flags(*command, flags->tolerance);
  command->add_flag("--json", flags->json, "Print one case object of the sweep report's schema");
  add_progress_flag(*command, flags->progress);
  command->callback([command, flags] { run(*command, *flags); });
}

}  // namespace tilec::cli
