// `tilec compile GRAPH|--workload NAME ... -o model.tpk`: compiles a graph
// for a target within a per-tile memory budget and writes the package.
// Prints the plan, the estimated cycles, the peak per-tile bytes, the
// stage times and the package's size (--json: one object). When no plan
// fits, the compiler's one-line diagnostic is the error (exit 1).
#include "support/number_text.h"
#include "bench/case_report.h"
#include "bench/device_figures.h"
#include "bench/run_case.h"
#include "cli/case_flags.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/usage_errors.h"
#include "compiler/compile.h"
#include "package/package_file.h"
#include "support/duration.h"
#include "support/error.h"
#include "support/output_path.h"
#include "support/span.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>

namespace tilec::cli {

namespace {

struct CompileFlags {
  std::string graph_file;
  WorkloadFlags workload;
  TargetFlags target;
  std::string output;
  bool json = false;
  std::string dump_after;
  int max_k_parts = 0;
  bool progress = false;
};

struct Compiled {
  compiler::CompileResult result;
  std::vector<std::pair<std::string, double>> stages;
  double seconds = 0;
  std::uint64_t package_bytes = 0;
};

void print_summary(const GraphSource& source, const compiler::CompileOptions& options, const Compiled& compiled,
                   const std::string& output) {
  fmt::print("compiled {}: {} for {} in {}\n", source.identity.name, source.identity.workload,
             options.machine.name, format_duration(compiled.seconds));
  fmt::print("  plan      {}\n", compiled.result.plan);
  fmt::print("  estimate  {} cycles (the plan search's {})\n",
             grouped(static_cast<std::uint64_t>(compiled.result.estimated_cycles)),
             grouped(static_cast<std::uint64_t>(compiled.result.search_estimated_cycles)));
  fmt::print("  memory    peak {} bytes per tile of a budget of {}\n", grouped(compiled.result.peak_bytes),
             grouped(options.budget()));
  fmt::print("  package   {}{} bytes\n", output.empty() ? "" : output + ", ", grouped(compiled.package_bytes));
  std::string stages;
  for (const auto& [stage, seconds] : compiled.stages)
    if (seconds >= 0.1 * compiled.seconds)
      stages += fmt::format("{}{} {}", stages.empty() ? "" : ", ", stage, format_duration(seconds));
  fmt::print("  slowest   {}\n", stages);
}

void print_json(const GraphSource& source, const compiler::CompileOptions& options, const Compiled& compiled,
                const std::string& output) {
  nlohmann::ordered_json stages = nlohmann::ordered_json::object();
  for (const auto& [stage, seconds] : compiled.stages) stages[stage] = format_duration(seconds);
  nlohmann::ordered_json summary;
  summary["case"] = source.identity.name;
  summary["workload"] = source.identity.workload;
  summary["target"] = options.machine.name;
  summary["budget_kib"] = options.budget_bytes / 1024;
  summary["plan"] = compiled.result.plan;
  summary["estimatedCycles"] = compiled.result.estimated_cycles;
  summary["searchEstimatedCycles"] = compiled.result.search_estimated_cycles;
  summary["peakTileBytes"] = compiled.result.peak_bytes;
  summary["weightBytes"] = bench::binding_bytes(compiled.result.package, package::BindingRole::Parameter);
  summary["inputBytes"] = bench::binding_bytes(compiled.result.package, package::BindingRole::Input);
  summary["stages"] = stages;
  summary["compileSeconds"] = compiled.seconds;
  summary["packageBytes"] = compiled.package_bytes;
  summary["package"] = output.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(output);
  summary["log"] = compiled.result.log;
  fmt::print("{}\n", summary.dump(2));
}

void compile_graph(const CLI::App& command, const CompileFlags& flags) {
  if (!flags.output.empty()) check_output_file("-o", flags.output);
  compiler::CompileOptions options = compile_options(flags.target);
  options.dump_after = flags.dump_after;
  if (flags.max_k_parts > 0) options.max_k_parts = flags.max_k_parts;
  const GraphSource source =
      load_graph_source(command, flags.graph_file, flags.workload, "", false, options.budget_bytes / 1024);
  Compiled compiled;
  Progress progress(flags.progress);
  Timeline timeline;
  timeline.on_begin = [&progress](const std::string& stage) { progress.stage(stage); };
  {
    TimelineScope scope(timeline);
    const auto begin = std::chrono::steady_clock::now();
    try {
      compiled.result = compiler::compile(source.graph, options);
    } catch (...) {
      for (const SpanRecord& record : timeline.records()) global_timeline().add(record);
      throw;
    }
    compiled.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  }
  for (const SpanRecord& record : timeline.records()) global_timeline().add(record);
  compiled.stages = bench::stage_times(timeline);
  progress.stage("write_package");
  if (flags.output.empty()) {
    compiled.package_bytes = package::encode_package(compiled.result.package).size();
  } else {
    // What was written, not the file's size: the output may be a device.
    compiled.package_bytes = package::write_package(compiled.result.package, flags.output);
  }
  progress.finish();
  if (!flags.dump_after.empty()) {
    // The IR as the stage left it, instead of the summary.
    fmt::print("{}", compiled.result.dump);
    return;
  }
  if (flags.json)
    print_json(source, options, compiled, flags.output);
  else
    print_summary(source, options, compiled, flags.output);
}

}  // namespace

void add_compile_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "compile", "Compile a graph file or a built-in workload into a package (.tpk) for a target and memory budget");
  auto flags = std::make_shared<CompileFlags>();
  command->add_option("GRAPH", flags->graph_file, "A graph file (JSON), or give --workload")->type_name("FILE");
  add_workload_flags(*command, flags->workload);
  add_target_flags(*command, flags->target);
  command->add_option("-o,--output", flags->output, "Write the package to FILE")->type_name("FILE");
  command->add_flag("--json", flags->json, "Print the summary as one JSON object");
  add_progress_flag(*command, flags->progress);
  command->add_option("--dump-after", flags->dump_after,
                      "Print the compiler's IR as the stage STAGE left it (the stage names of docs/architecture.md)")
      ->type_name("STAGE");
  command->add_option("--max-k-parts", flags->max_k_parts,
                      "The most K parts a GEMM may split its sums over; 1 makes results bit-identical to the host "
                      "reference (default: the planner's choice)")
      ->check(integer_in(1, 64))
      ->type_name("N");
  command->callback([command, flags] { compile_graph(*command, *flags); });
}

}  // namespace tilec::cli
