// `tilec bench`: the sweep of ../shared/workload.md (fp8 x batch 1, 2, 4 x
// blocks 1 x budget default, 384, 256, 128, 64 KiB on the full chip) or any
// grid the flags choose, of any built-in workload (the ViT ones by layers
// instead of blocks), run in parallel and resumable (bench/sweep.h).
// Writes OUT/report.json (the reference schema), OUT/report.md and a
// profile page per simulated case; prints the table, and with --compare the
// side-by-side against an older report. Exit 1 when a case failed, faulted
// or stopped with an error (a planner rejection is a result, not a failure).
#include "bench/case_report.h"
#include "bench/micro.h"
#include "bench/report_html.h"
#include "bench/sweep.h"
#include "bench/workload_data.h"
#include "cli/case_flags.h"
#include "cli/commands.h"
#include "support/error.h"
#include "support/host_memory.h"
#include "support/output_path.h"
#include "support/parallel.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <memory>

namespace tilec::cli {

namespace {

struct BenchFlags {
  WorkloadFlags workload;
  std::vector<std::string> precisions{"fp8"};
  std::vector<std::string> batches{"1", "2", "4"};
  std::vector<std::string> blocks{"1"};
  std::vector<std::string> layers;   // empty: the workload's own
  std::vector<std::string> budgets;  // empty: the workload's default grid
  std::string tiles;
  std::string target;
  std::string targets;             // comma-separated machines
  std::vector<std::string> vary;   // FIELD=V,V,... each
  std::string out = "out/sweep";
  std::string jobs = "auto";
  std::string compare;
  std::uint64_t max_cycles = sim::kDefaultMaxCycles;
  bench::ToleranceRule tolerance;
  bool fp16_partials = false;
  bool force = false;
  bool no_profiles = false;
  bool quiet = false;
  bool micro = false;
  std::string micro_dir;  // empty: the built-in bench/micro
  bool json = false;
};

std::int64_t positive(const std::string& flag, const std::string& text) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end || value < 1)
    throw_bad_input(flag + " " + text, "must be an integer >= 1");
  return value;
}

// "ipu21:tiles=1216,exchange-bytes=8,ipu1" -> {"ipu21:tiles=1216,exchange-bytes=8", "ipu1"}: a piece
// with '=' and no ':' continues the previous target's overrides.
std::vector<std::string> split_targets(const std::string& text) {
  std::vector<std::string> targets;
  if (text.empty()) return targets;
  for (std::size_t from = 0; from <= text.size();) {
    const std::size_t comma = std::min(text.find(',', from), text.size());
    const std::string piece = text.substr(from, comma - from);
    const bool continues = piece.find('=') != std::string::npos && piece.find(':') == std::string::npos;
    if (continues && !targets.empty()) targets.back() += "," + piece;
    else targets.push_back(piece);
    from = comma + 1;
  }
  return targets;
}

std::vector<bench::SweepOptions::Machine> machines_of(const BenchFlags& flags) {
  const int machine_flags = !flags.tiles.empty() + !flags.target.empty() + !flags.targets.empty();
  if (machine_flags > 1) throw_bad_input("--tiles", "give one of --tiles, --target and --targets");
  std::vector<std::string> targets = split_targets(flags.targets);
  if (!flags.target.empty()) targets = {flags.target};
  if (!flags.tiles.empty()) targets = {ipu21_cut(parse_tiles(flags.tiles)).name};
  return bench::machine_grid(targets, flags.vary);
}

bench::SweepOptions sweep_options(const BenchFlags& flags) {
  bench::SweepOptions options;
  options.workload = flags.workload.workload;
  options.base = workload_options(flags.workload);
  // Each value of --blocks and --layers is checked as `run` checks the flag:
  // one the workload does not take is refused by name.
  WorkloadFlags point = flags.workload;
  options.blocks.clear();
  for (const std::string& text : flags.blocks) {
    point.blocks = text;
    options.blocks.push_back(workload_options(point).blocks);
  }
  point.blocks = "1";
  for (const std::string& text : flags.layers) {
    point.layers = text;
    options.layers.push_back(*workload_options(point).layers);
  }
  options.precisions.clear();
  for (const std::string& text : flags.precisions) {
    const std::optional<graph::Precision> precision = graph::parse_precision(text);
    if (!precision) throw_bad_input("--precisions " + text, "must be fp8, fp16 or fp32");
    options.precisions.push_back(*precision);
  }
  options.batches.clear();
  for (const std::string& text : flags.batches) options.batches.push_back(positive("--batches", text));
  options.machines = machines_of(flags);
  // The ViT workloads need the whole tile: the default budget alone unless asked.
  std::vector<std::string> budgets = flags.budgets;
  if (budgets.empty() && bench::workload_kind(options.workload) != bench::WorkloadKind::Mlp) budgets = {"default"};
  if (budgets.empty()) budgets = {"default", "384", "256", "128", "64"};
  options.budgets_kib.clear();
  for (const std::string& text : budgets) {
    std::uint32_t kib = 0;  // default: the whole tile; a figure must fit every machine's tile
    if (text != "default")
      for (const bench::SweepOptions::Machine& machine : options.machines)
        kib = parse_budget_kib("--budgets", text, machine.model);
    options.budgets_kib.push_back(kib);
  }
  options.out_directory = flags.out;
  options.jobs = flags.jobs == "auto" ? bench::default_jobs(thread_count(), available_memory_bytes().value_or(0) / 1024,
                                                           bench::case_memory_kib(options.workload))
                                      : static_cast<int>(positive("--jobs", flags.jobs));
  options.force = flags.force;
  options.max_cycles = flags.max_cycles;
  options.fp16_partials = flags.fp16_partials;
  options.tolerance = flags.tolerance;
  options.profiles = !flags.no_profiles;
  if (!flags.quiet)
    options.progress = [](const std::string& line) {
      std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    };
  return options;
}

void bench_sweep(const BenchFlags& flags) {
  const bench::SweepOptions options = sweep_options(flags);
  check_output_folder("--out", options.out_directory);
  // Read first: a bad --compare file should not wait for the sweep.
  std::vector<bench::CaseReport> old_cases;
  if (!flags.compare.empty()) old_cases = bench::read_report_file(flags.compare);

  const bench::SweepResult result = bench::run_sweep(options);
  const std::string report_path = options.out_directory + "/report.json";
  fmt::print("{}", bench::report_markdown(result.cases, fmt::format("tilec sweep ({})", report_path)));
  fmt::print("\n{} cases: {} run, {} kept from an earlier sweep; {:.1f} s, {} host thread{} a case; wrote {}, "
             "{}/report.md and report.html\n",
             result.cases.size(), result.ran, result.kept, result.wall_seconds, result.case_threads,
             result.case_threads == 1 ? "" : "s", report_path, options.out_directory);
  if (!flags.compare.empty()) {
    fmt::print("\n{}", bench::compare_markdown(old_cases, result.cases, flags.compare, report_path));
    // The page again, with the older report's figures on the same axes.
    bench::write_text_atomically(options.out_directory + "/report.html",
                          bench::report_html(result.cases, fmt::format("tilec sweep ({}) against {}", report_path,
                                                                        flags.compare),
                                             old_cases));
  }

  std::vector<std::string> broken;
  for (const bench::CaseReport& report : result.cases)
    if (!report.passed() && report.status != bench::kPlannerRejected)
      broken.push_back(fmt::format("{} ({})", report.name, report.status));
  if (!broken.empty())
    throw_failure("bench", "{} of {} cases did not pass: {}", broken.size(), result.cases.size(),
                  fmt::join(broken, ", "));
}

// --micro: every microbenchmark on each machine, measured beside the
// machine's own figure; exit 1 when any differs.
void bench_micro(const BenchFlags& flags) {
  const bench::MicroSources sources =
      flags.micro_dir.empty() ? bench::built_in_micro_sources() : bench::micro_sources_from(flags.micro_dir);
  nlohmann::json reports = nlohmann::json::array();
  std::size_t figures = 0, differ = 0;
  for (const bench::SweepOptions::Machine& machine : machines_of(flags)) {
    const std::vector<bench::MicroFigure> measured =
        bench::run_micro(sources, machine.model, [&](const std::string& line) {
          if (!flags.quiet) std::fprintf(stderr, "micro %s\n", line.c_str());
        });
    figures += measured.size();
    differ += std::count_if(measured.begin(), measured.end(), [](const bench::MicroFigure& f) { return !f.matches(); });
    if (flags.json) reports.push_back(bench::micro_json(measured, machine.model));
    else fmt::print("{}\n", bench::micro_markdown(measured, machine.model));
  }
  if (flags.json) fmt::print("{}\n", reports.dump(2));
  if (differ != 0)
    throw_failure("bench --micro", "{} of {} measured figures differ from the machine description's", differ, figures);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "bench",
      "Run a sweep of cases (default: the reference grid, fp8 x batch 1,2,4 x budget default,384,256,128,64 KiB "
      "on ipu21), resumably, and write report.json, report.md and profiles into --out");
  auto flags = std::make_shared<BenchFlags>();
  flags->workload.workload = "siglip-mlp";
  BenchFlags& f = *flags;
  command
      ->add_option("--workload", f.workload.workload,
                   "Built-in workload: siglip-mlp (default), mlp, siglip-vit, vit, siglip-vit-layer or vit-layer "
                   "(tilec graph workloads)")
      ->type_name("NAME");
  command->add_option("--tokens", f.workload.tokens, "Tokens per batch item, workload mlp only")->type_name("N");
  command->add_option("--width", f.workload.width, "Model width, workloads mlp, vit and vit-layer only")
      ->type_name("N");
  command->add_option("--hidden", f.workload.hidden, "MLP hidden width, workloads mlp, vit and vit-layer only")
      ->type_name("N");
  command->add_flag("--bias", f.workload.bias, "Add biases b1 and b2 after the GEMMs, MLP workloads only");
  command->add_flag("--no-head", f.workload.no_head,
                    "Without the MAP head: the output is the post-layernorm tokens (siglip-vit and vit only)");
  command->add_option("--seed", f.workload.seed, "Seed of the generated data (default 0)")->type_name("N");
  command->add_option("--precisions", f.precisions, "Comma-separated: fp8, fp16, fp32 (default fp8)")
      ->delimiter(',')
      ->type_name("LIST");
  command->add_option("--batches", f.batches, "Comma-separated batch sizes (default 1,2,4)")
      ->delimiter(',')
      ->type_name("LIST");
  command->add_option("--blocks", f.blocks, "Comma-separated block counts, MLP workloads only (default 1)")
      ->delimiter(',')
      ->type_name("LIST");
  command
      ->add_option("--layers", f.layers,
                   "Comma-separated encoder layer counts, siglip-vit and vit only (default the workload's: 27 and 2)")
      ->delimiter(',')
      ->type_name("LIST");
  command
      ->add_option("--budgets", f.budgets,
                   "Comma-separated per-tile budgets in KiB, or default (default default,384,256,128,64; default "
                   "alone for the ViT workloads)")
      ->delimiter(',')
      ->type_name("LIST");
  command->add_option("--tiles", f.tiles, "Run on the chip cut to its first N tiles (ipu21:N)")->type_name("N");
  command->add_option("--target", f.target, "Machine: a preset (ipu21, the default; bow, ipu2, ipu1), PRESET:N, PRESET:field=value,... or FILE.json (docs/machines.md)")->type_name("T");
  command->add_option("--targets", f.targets, "Several machines, comma-separated: every case runs on each")
      ->type_name("T,T");
  command->add_option("--vary", f.vary,
                      "Run every case on the machine with a field at each value: exchange-bytes=4,8,16 "
                      "(repeatable: the values cross)")
      ->type_name("FIELD=V,V");
  command->add_option("--out", f.out, "Output folder (default out/sweep)")->type_name("DIR");
  command->add_option("--jobs", f.jobs,
                      "Cases run at once (default auto: one for every two host threads, as far as host memory "
                      "allows: about 1.5 GB per MLP case, 4 GB per ViT case); each case takes an even share of the threads")
      ->type_name("N");
  add_fp16_partials_flag(*command, f.fp16_partials);
  add_max_cycles_flag(*command, f.max_cycles);
  add_tolerance_flags(*command, f.tolerance);
  command->add_flag("--force", f.force, "Run every case again, even those finished in --out");
  command->add_flag("--no-profiles", f.no_profiles, "Write no profile per simulated case");
  command->add_option("--compare", f.compare,
                      "Print cycles, wall time and error side by side with this older report (e.g. "
                      "../shared/reference/seed-sweep.json)")
      ->type_name("OLD.json");
  command->add_flag("--quiet", f.quiet, "No progress lines on stderr");
  command->add_flag("--micro", f.micro,
                    "Run the microbenchmarks (bench/micro) on the machine instead of a sweep, and print each "
                    "measured figure beside the one the machine description implies (docs/bench.md)");
  command->add_option("--micro-dir", f.micro_dir, "With --micro: run the .s files of this folder instead of the built-in ones")
      ->type_name("DIR");
  command->add_flag("--json", f.json, "With --micro: print the figures as JSON");
  command->callback([flags] {
    if (!flags->micro && (!flags->micro_dir.empty() || flags->json))
      throw_bad_input(flags->json ? "--json" : "--micro-dir", "goes with --micro");
    if (flags->micro) bench_micro(*flags);
    else bench_sweep(*flags);
  });
}

}  // namespace tilec::cli
