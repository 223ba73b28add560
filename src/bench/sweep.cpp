#include "bench/sweep.h"

#include "bench/report_html.h"
#include "bench/run_case.h"
#include "bench/workload_data.h"
#include "compiler/compile.h"
#include "graph/npy.h"
#include "support/error.h"
#include "support/host_memory.h"
#include "support/number_text.h"
#include "support/parallel.h"
#include "target/machine_description.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

namespace tilec::bench {

namespace fs = std::filesystem;

namespace {

// The workloads of the grid, each once: "vit 16x32 layers 1, vit 16x32 layers 2".
std::string sweep_title(const std::vector<GridCase>& grid) {
  std::vector<std::string> labels;
  for (const GridCase& grid_case : grid)
    if (std::find(labels.begin(), labels.end(), grid_case.workload) == labels.end())
      labels.push_back(grid_case.workload);
  return fmt::format("{}", fmt::join(labels, ", "));
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string outcome_text(const CaseReport& report) {
  std::string text = report.status;
  if (report.cycles) text += fmt::format(", {} cycles", grouped(*report.cycles));
  if (report.maximum_absolute_error) text += fmt::format(", max abs error {:.4g}", *report.maximum_absolute_error);
  if (!report.passed() && !report.diagnostic.empty()) text += ": " + report.diagnostic.back();
  return text;
}

class Sweep {
 public:
  explicit Sweep(const SweepOptions& options)
      : options_(options),
        grid_(sweep_grid(options)),
        title_(sweep_title(grid_)),
        reports_(grid_.size()) {}

  SweepResult run() {
    const auto start = std::chrono::steady_clock::now();
    std::error_code error;
    fs::create_directories(options_.out_directory, error);
    if (error) throw_bad_input(options_.out_directory, "cannot create the output folder: {}", error.message());

    write_reports();

    std::atomic<std::size_t> next{0};
    const int jobs = std::clamp(options_.jobs, 1, static_cast<int>(grid_.size()));
    const int case_threads = threads_per_case(thread_count(), jobs);
    // A case's peak resident memory is its own only when it runs alone and
    // the mark restarts for each case.
    measure_peak_resident_ = jobs == 1 && restart_peak_resident();
    std::atomic<int> observed_threads{0};
    auto worker = [&] {
      tbb::task_arena arena(case_threads);
      arena.execute([&] {
        observed_threads = tbb::this_task_arena::max_concurrency();
        for (std::size_t i; (i = next++) < grid_.size() && !stopped_;) run_case_at(i);
      });
    };
    std::vector<std::thread> threads;
    for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
    worker();
    for (std::thread& thread : threads) thread.join();
    if (folder_error_) std::rethrow_exception(folder_error_);

    result_.case_threads = observed_threads;
    result_.kept = kept_;
    result_.ran = ran_;
    for (std::optional<CaseReport>& report : reports_)
      if (report) result_.cases.push_back(std::move(*report));
    result_.wall_seconds = seconds_since(start);
    return std::move(result_);
  }

 private:
  fs::path case_directory(std::size_t i) const { return fs::path(options_.out_directory) / grid_[i].name; }

  // The report of a case an earlier sweep finished, when it still stands:
  // its record unchanged since it was written, made under the key the case
  // would run under now, its stored outputs those it reported.
  std::optional<CaseReport> earlier(std::size_t i, const CaseRequest& request) {
    const fs::path file = case_directory(i) / "case.json";
    if (options_.force || !fs::exists(file)) return std::nullopt;
    try {
      CaseReport report = read_sealed_case_file(file.string());
      if (report.name != grid_[i].name || report.target != grid_[i].machine.name ||
          report.workload != grid_[i].workload) {
        say(i, fmt::format("found a case of {} on {}: running again", report.workload, report.target));
        return std::nullopt;
      }
      if (!report.key || *report.key != expected_key(request)) {
        say(i, "found a case made by another graph, data, options, tilec or package: running again");
        return std::nullopt;
      }
      if (!report.outputs_digest.empty()) {
        std::map<std::string, graph::TensorType> types;
        for (const auto& [name, value] : request.graph->outputs) types.emplace(name, request.graph->type(value));
        if (tensors_digest(graph::read_tensor_dir((case_directory(i) / "outputs").string(), types)) !=
            report.outputs_digest) {
          say(i, "its stored outputs are not those it reported: running again");
          return std::nullopt;
        }
      }
      return report;
    } catch (const std::exception& error) {
      say(i, fmt::format("unusable earlier result ({}): running again", one_line(error.what())));
      return std::nullopt;
    }
  }

  CaseReport identity(std::size_t i) const {
    const GridCase& grid_case = grid_[i];
    CaseReport report = workload_case(options_.workload, grid_case.options, grid_case.budget_kib);
    report.name = grid_case.name;
    report.target = grid_case.machine.name;
    report.workload = grid_case.workload;
    return report;
  }

  void run_case_at(std::size_t i) {
    const auto start = std::chrono::steady_clock::now();
    const GridCase& grid_case = grid_[i];
    CaseOutcome outcome;
    std::string phase;
    try {
      const std::shared_ptr<WorkloadData> data = cache_.get(options_.workload, grid_case.options);
      CaseRequest request;
      request.identity = identity(i);
      request.graph = &data->graph();
      request.data = &data->data();
      request.reference = [&data]() -> const ReferenceOutputs& { return data->reference(); };
      request.compile.machine = grid_case.machine;
      request.compile.budget_bytes = grid_case.budget_kib * 1024;
      request.compile.fp16_partials_anywhere = options_.fp16_partials;
      request.max_cycles = options_.max_cycles;
      request.tolerance = options_.tolerance;
      request.measure_peak_resident = measure_peak_resident_;
      if (options_.profiles) request.profile_directory = case_directory(i).string();
      if (std::optional<CaseReport> kept = earlier(i, request)) {
        say(i, fmt::format("finished earlier ({}), kept", outcome_text(*kept)));
        std::lock_guard lock(reports_mutex_);
        ++kept_;
        reports_[i] = std::move(*kept);
        write_reports_locked();
        return;
      }
      request.on_stage = [&](std::string_view stage, double) {
        const std::string_view now = case_phase(stage);
        if (now == phase) return;
        phase = now;
        say(i, fmt::format("{} (+{:.1f}s)", phase, seconds_since(start)));
      };
      outcome = run_case(request);
      // The page, as the report's folder sees it.
      if (!outcome.report.profile.empty()) outcome.report.profile = grid_case.name + "/profile.html";
    } catch (const Error& error) {
      // The workload itself could not be built: the case's error.
      outcome.report = identity(i);
      outcome.report.status = kError;
      outcome.report.returncode = error.exit_code();
      outcome.report.diagnostic = {error.what()};
    }
    outcome.report.wall_seconds = seconds_since(start);
    finish(i, std::move(outcome.report), outcome.outputs);
  }

  // The case's outputs go next to its record, so that a resumed sweep can
  // check them against the digest the record holds.
  void finish(std::size_t i, CaseReport report, const graph::TensorMap& outputs) {
    try {
      const fs::path directory = case_directory(i);
      fs::create_directories(directory);
      fs::remove_all(directory / "outputs");
      if (!outputs.empty())
        graph::write_tensor_dir((directory / "outputs").string(), outputs, graph::TensorRole::Output);
      write_text_atomically((directory / "case.json").string(), sealed_case_text(report));
      std::lock_guard lock(reports_mutex_);
      ++ran_;
      reports_[i] = report;
      write_reports_locked();
    } catch (const Error&) {
      std::lock_guard lock(reports_mutex_);
      if (!folder_error_) folder_error_ = std::current_exception();
      stopped_ = true;
      return;
    } catch (const fs::filesystem_error& error) {
      std::lock_guard lock(reports_mutex_);
      if (!folder_error_)
        folder_error_ = std::make_exception_ptr(
            Error(ErrorKind::Failure, case_directory(i).string(), one_line(error.code().message())));
      stopped_ = true;
      return;
    }
    say(i, fmt::format("{} ({:.1f}s)", outcome_text(report), report.wall_seconds));
  }

  void write_reports() {
    std::lock_guard lock(reports_mutex_);
    write_reports_locked();
  }

  void write_reports_locked() {
    std::vector<CaseReport> finished;
    for (const std::optional<CaseReport>& report : reports_)
      if (report) finished.push_back(*report);
    const fs::path out(options_.out_directory);
    write_text_atomically((out / "report.json").string(), report_json(finished).dump(2) + "\n");
    const std::string title =
        fmt::format("tilec sweep: {} on {} ({} of {} cases)", title_, machines_text(), finished.size(), grid_.size());
    write_text_atomically((out / "report.md").string(), report_markdown(finished, title));
    write_text_atomically((out / "report.html").string(), report_html(finished, title));
  }

  std::string machines_text() const {
    if (options_.machines.size() == 1) return options_.machines.front().model.name;
    std::vector<std::string> names;
    for (const SweepOptions::Machine& machine : options_.machines) names.push_back(machine.model.name);
    return fmt::format("{} machines ({})", names.size(), fmt::join(names, "; "));
  }

  void say(std::size_t i, const std::string& what) {
    if (!options_.progress) return;
    std::lock_guard lock(progress_mutex_);
    const int width = static_cast<int>(std::to_string(grid_.size()).size());
    options_.progress(fmt::format("bench [{:>{}}/{}] {}: {}", i + 1, width, grid_.size(), grid_[i].name, what));
  }

  const SweepOptions& options_;
  const std::vector<GridCase> grid_;
  const std::string title_;
  WorkloadCache cache_;
  std::vector<std::optional<CaseReport>> reports_;
  std::mutex reports_mutex_, progress_mutex_;
  std::exception_ptr folder_error_;  // stops the sweep: the folder cannot be written
  std::atomic<bool> stopped_{false};
  int kept_ = 0, ran_ = 0;  // under reports_mutex_
  bool measure_peak_resident_ = false;  // CaseRequest::measure_peak_resident
  SweepResult result_;
};

}  // namespace

std::vector<GridCase> sweep_grid(const SweepOptions& options) {
  std::vector<std::optional<std::int64_t>> layers(options.layers.begin(), options.layers.end());
  if (layers.empty()) layers.push_back(options.base.layers);
  std::vector<GridCase> grid;
  for (graph::Precision precision : options.precisions)
    for (std::int64_t batch : options.batches)
      for (std::int64_t blocks : options.blocks)
        for (const std::optional<std::int64_t>& layer_count : layers)
          for (std::uint32_t budget_kib : options.budgets_kib)
            for (const SweepOptions::Machine& machine : options.machines) {
            GridCase grid_case;
            grid_case.options = options.base;
            grid_case.options.precision = precision;
            grid_case.options.batch = batch;
            grid_case.options.blocks = blocks;
            grid_case.options.layers = layer_count;
            grid_case.budget_kib = budget_kib;
            // Checks the point before its name can hide it (a tower's name has no blocks).
            grid_case.workload = workload_label(options.workload, grid_case.options);
            grid_case.name = name_with_options(workload_case(options.workload, grid_case.options, budget_kib).name,
                                               options.fp16_partials);
            if (!machine.label.empty()) grid_case.name += "@" + machine.label;
            grid_case.machine = machine.model;
            if (std::none_of(grid.begin(), grid.end(), [&](const GridCase& other) { return other.name == grid_case.name; }))
              grid.push_back(std::move(grid_case));
          }
  return grid;
}

std::vector<SweepOptions::Machine> machine_grid(const std::vector<std::string>& targets,
                                                const std::vector<std::string>& vary) {
  std::vector<MachineModel> bases;
  for (const std::string& target : targets) bases.push_back(machine_by_name(target));
  if (bases.empty()) bases.push_back(ipu21());
  // Each vary as its field=value overrides: "exchange-bytes=4,8" -> {exchange-bytes=4, exchange-bytes=8}.
  std::vector<std::vector<std::string>> settings;
  for (const std::string& item : vary) {
    const std::size_t equals = item.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == item.size())
      throw_bad_input("--vary " + item, "expected field=value,value,... such as exchange-bytes=4,8,16");
    std::vector<std::string> values;
    for (std::size_t from = equals + 1; from <= item.size();) {
      const std::size_t comma = std::min(item.find(',', from), item.size());
      values.push_back(item.substr(0, equals) + "=" + item.substr(from, comma - from));
      from = comma + 1;
    }
    settings.push_back(std::move(values));
  }
  std::vector<std::vector<std::string>> combinations{{}};
  for (const std::vector<std::string>& values : settings) {
    std::vector<std::vector<std::string>> crossed;
    for (const std::vector<std::string>& combination : combinations)
      for (const std::string& value : values) {
        crossed.push_back(combination);
        crossed.back().push_back(value);
      }
    combinations = std::move(crossed);
  }
  std::vector<SweepOptions::Machine> machines;
  for (const MachineModel& base : bases)
    for (const std::vector<std::string>& combination : combinations) {
      const std::string overrides = fmt::format("{}", fmt::join(combination, ","));
      SweepOptions::Machine machine{overrides.empty() ? base : machine_with_overrides(base, overrides), ""};
      std::vector<std::string> label;
      if (bases.size() > 1) label.push_back(base.name);
      if (!overrides.empty()) label.push_back(overrides);
      machine.label = fmt::format("{}", fmt::join(label, ","));
      if (std::none_of(machines.begin(), machines.end(),
                       [&](const SweepOptions::Machine& other) { return other.model.name == machine.model.name; }))
        machines.push_back(std::move(machine));
    }
  if (machines.size() == 1) machines.front().label.clear();
  return machines;
}

int threads_per_case(int threads, int jobs) { return std::max(1, threads / std::max(1, jobs)); }

std::uint64_t case_memory_kib(std::string_view workload) {
  constexpr std::uint64_t kMebibyteInKib = 1024;
  return (workload_kind(workload) == WorkloadKind::Mlp ? 1536 : 4096) * kMebibyteInKib;
}

int default_jobs(int threads, std::uint64_t available_kib, std::uint64_t case_kib) {
  const std::uint64_t by_memory = available_kib / std::max<std::uint64_t>(1, case_kib);
  return static_cast<int>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(threads / 2, by_memory)));
}

SweepResult run_sweep(const SweepOptions& options) { return Sweep(options).run(); }

}  // namespace tilec::bench
