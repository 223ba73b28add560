#include "bench/run_case.h"

#include "bench/device_figures.h"
#include "bench/verify.h"
#include "compiler/compile.h"
#include "graph/cost.h"
#include "package/package_file.h"
#include "package/validate.h"
#include "profile/profile.h"
#include "profile/run_tally.h"
#include "sim/device.h"
#include "sim/fault.h"
#include "support/duration.h"
#include "support/host_memory.h"
#include "support/number_text.h"
#include "support/span.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>

namespace tilec::bench {

namespace {

// A planner rejection is a result of the case; any other failure of the
// compiler is an error.
bool is_planner_rejection(const Error& error) { return dynamic_cast<const compiler::NoPlanFits*>(&error) != nullptr; }

// What ran, one line per span, in the order they ended: the diagnostic of a
// case that did not pass.
std::vector<std::string> span_lines(const Timeline& timeline) {
  std::vector<std::string> lines;
  for (const SpanRecord& record : timeline.top_level())
    lines.push_back(fmt::format("{}: close time.wall={} time.busy={}", record.name,
                                format_duration(record.wall_seconds), format_duration(record.busy_seconds)));
  return lines;
}

class CaseRunner {
 public:
  explicit CaseRunner(const CaseRequest& request) : request_(request) {
    outcome_.report = request.identity;
    timeline_.on_begin = [this](const std::string& name) {
      if (request_.on_stage) request_.on_stage(name, elapsed());
    };
  }

  CaseOutcome run() {
    // Where the host refuses a restart, the mark covers the process so far.
    if (request_.measure_peak_resident) restart_peak_resident();
    {
      TimelineScope scope(timeline_);
      try {
        run_stages();
      } catch (const sim::Fault& fault) {
        stop(kFault, fault);
      } catch (const Error& error) {
        stop(is_planner_rejection(error) ? kPlannerRejected : kError, error);
      } catch (const std::bad_alloc&) {
        stop(kError, Error(ErrorKind::Failure, "host memory", "an allocation failed (the host is out of memory)"));
      } catch (const std::exception& error) {
        stop(kError, Error(ErrorKind::Failure, "", fmt::format("internal error: {}", one_line(error.what()))));
      }
    }
    CaseReport& report = outcome_.report;
    report.stages = stage_times(timeline_);
    outcome_.spans = timeline_.records();
    report.wall_seconds = elapsed();
    if (request_.measure_peak_resident) report.peak_rss_bytes = peak_resident_bytes();
    report.returncode = outcome_.error ? outcome_.error->exit_code() : 0;
    if (!report.passed()) {
      std::vector<std::string> lines = span_lines(timeline_);
      lines.insert(lines.end(), log_.begin(), log_.end());
      lines.insert(lines.end(), report.diagnostic.begin(), report.diagnostic.end());
      report.diagnostic = std::move(lines);
    }
    return std::move(outcome_);
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

  void stop(const char* status, const Error& error) {
    outcome_.report.status = status;
    outcome_.report.diagnostic.push_back(error.what());
    outcome_.error = error;
  }

  const package::Package& compile_package() {
    if (request_.package) {
      const nlohmann::json info = nlohmann::json::parse(request_.package->compile_info, nullptr, false);
      // What the compiler recorded, when it is there.
      if (info.is_object() && info.contains("estimatedCycles") && info["estimatedCycles"].is_number())
        outcome_.report.estimated_cycles = info["estimatedCycles"].get<double>();
      if (info.is_object() && info.contains("searchEstimatedCycles") && info["searchEstimatedCycles"].is_number())
        outcome_.report.search_estimated_cycles = info["searchEstimatedCycles"].get<double>();
      if (info.is_object() && info.contains("plan") && info["plan"].is_string())
        outcome_.report.plan = info["plan"].get<std::string>();
      return *request_.package;
    }
    const auto begin = std::chrono::steady_clock::now();
    compiler::CompileResult compiled = compiler::compile(*request_.graph, request_.compile);
    outcome_.report.compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    outcome_.report.estimated_cycles = compiled.estimated_cycles;
    outcome_.report.search_estimated_cycles = compiled.search_estimated_cycles;
    outcome_.report.plan = compiled.plan;
    log_ = std::move(compiled.log);
    compiled_ = std::move(compiled.package);
    return compiled_;
  }

  void run_stages() {
    CaseReport& report = outcome_.report;
    const MachineModel& machine = request_.compile.machine;
    report.key = case_key(*request_.graph, *request_.data, case_options_text(request_));
    const package::Package& package = compile_package();
    package::check_bindings_match(package, *request_.graph);
    report.peak_tile_bytes = peak_tile_bytes(package);
    report.weight_bytes = binding_bytes(package, package::BindingRole::Parameter);
    report.input_bytes = binding_bytes(package, package::BindingRole::Input);
    {
      Span span("encode_package");
      const std::vector<std::uint8_t> bytes = package::encode_package(package);
      report.package_bytes = bytes.size();
      report.key->package = bytes_digest(bytes.data(), bytes.size());
    }

    // The device holds every tile's memory (about 1 GB for the full chip):
    // it lives only until the outputs are read.
    std::optional<sim::Device> device;
    {
      Span span("load");
      device.emplace(package, machine);
      for (const package::Binding& binding : package.bindings) {
        if (binding.role == package::BindingRole::Output) continue;
        const auto found = request_.data->find(binding.name);
        if (found == request_.data->end())
          throw_bad_input(fmt::format("binding '{}'", binding.name), "the package needs it but no data was given");
        device->write(binding.name, found->second);
      }
    }
    const double macs = static_cast<double>(graph::graph_macs(*request_.graph));
    const std::uint32_t peak = macs > 0 ? machine.amp_macs_per_cycle(dominant_precision(*request_.graph)) : 0;
    // The events are kept only for a profile to write; the report's phases
    // are tallied as the run goes, so a long run never holds them all.
    const bool keep_profile = !request_.profile_directory.empty();
    profile::RunTally tally(machine.tiles);
    sim::RunResult run;
    {
      Span span("simulate");
      sim::SimOptions options;
      options.max_cycles = request_.max_cycles;
      options.on_progress = request_.on_cycles;
      if (!keep_profile)
        options.on_events = [&tally](std::uint32_t tile, const std::vector<sim::ProfileEvent>& events) {
          tally.add(tile, events);
        };
      try {
        run = device->run(options);
      } catch (const sim::Fault& fault) {
        // The profile up to the fault shows what led to it.
        if (keep_profile && fault.partial_run()) {
          profile::ProfileData partial =
              profile::make_profile(report.name, package, machine, *fault.partial_run(), macs, peak);
          partial.fault = profile::fault_mark(fault);
          write_profile_files(partial);
        }
        throw;
      }
      report.simulate_seconds = span.elapsed_seconds();
      report.cycles = run.cycles;
    }
    {
      Span span("read_outputs");
      for (const package::Binding& binding : package.bindings)
        if (binding.role == package::BindingRole::Output)
          outcome_.outputs.emplace(binding.name, device->read(binding.name));
      device.reset();
      report.outputs_digest = tensors_digest(outcome_.outputs);
    }
    const double roofline = roofline_cycles(*request_.graph, machine);
    if (roofline > 0 && run.cycles > 0) report.efficiency = roofline / static_cast<double>(run.cycles);
    report.device_microseconds = static_cast<double>(run.cycles) / (machine.clock_ghz * 1e3);
    std::optional<profile::ProfileData> profile;
    if (keep_profile) {
      profile = profile::make_profile(report.name, package, machine, std::move(run), macs, peak);
      tally = profile::RunTally::of(*profile);
    }
    const profile::CycleSpan shown = tally.renderer_span(*report.cycles);
    report.renderer_cycles = shown.end - shown.begin;
    // Where an active tile's cycles go, on average: the phases of docs/profile-format.md.
    const profile::PhaseCycles phases = tally.phases(*report.cycles);
    const double active = std::max<double>(1, tally.active_tiles());
    report.compute_cycles = static_cast<double>(phases.compute) / active;
    report.exchange_cycles = static_cast<double>(phases.exchange) / active;
    report.sync_cycles = static_cast<double>(phases.sync) / active;

    const ReferenceOutputs* reference = nullptr;
    {
      Span span("reference");
      reference = &request_.reference();
    }
    report.reference_seconds = reference->seconds;
    report.exact_reference_seconds = reference->exact_seconds;
    // The plan-order reference: the reference itself when the plan sums
    // every op in the reference's order.
    graph::TensorMap plan_order_outputs;
    if (!package.summation_order.empty()) {
      Span span("plan_order_reference");
      plan_order_outputs = graph::run_reference(*request_.graph, *request_.data, package.summation_order).outputs;
      report.plan_order_reference_seconds = span.elapsed_seconds();
    }
    Span span("compare");
    report.differing_elements =
        graph::differing_elements(outcome_.outputs, package.summation_order.empty() ? reference->outputs : plan_order_outputs);
    report.bit_exact = *report.differing_elements == 0;
    const ToleranceRule& rule = request_.tolerance;
    report.absolute_tolerance = rule.absolute;
    report.relative_tolerance = rule.relative;
    const Comparison comparison = compare_outputs(outcome_.outputs, reference->outputs, rule);
    report.maximum_absolute_error = comparison.maximum_absolute_error;
    report.maximum_relative_error = comparison.maximum_relative_error;
    const ExactError device_error = exact_error(outcome_.outputs, reference->exact, rule.absolute);
    const ExactError precision_error = exact_error(reference->outputs, reference->exact, rule.absolute);
    report.exact_absolute_error = device_error.absolute;
    report.exact_relative_error = device_error.relative;
    report.precision_absolute_error = precision_error.absolute;
    report.precision_relative_error = precision_error.relative;
    report.out_of_tolerance = comparison.out_of_tolerance;
    report.nan_mismatches = comparison.nan_mismatches;
    report.infinity_mismatches = comparison.infinity_mismatches;
    // Outputs out of tolerance still come from a whole run: its profile
    // shows where the time went all the same.
    if (profile) write_profile_files(*profile);
    if (comparison.passed()) {
      report.status = kPass;
      return;
    }
    report.status = kFailed;
    const std::string non_finite =
        comparison.nan_mismatches || comparison.infinity_mismatches
            ? fmt::format(", {} NaN and {} infinite", grouped(comparison.nan_mismatches),
                          grouped(comparison.infinity_mismatches))
            : "";
    const Error error(ErrorKind::Failure, report.name,
                      fmt::format("{} of {} output elements out of tolerance (|device - reference| > {} + {} x "
                                  "|reference|{}); worst {}",
                                  grouped(static_cast<std::uint64_t>(comparison.out_of_tolerance)),
                                  grouped(static_cast<std::uint64_t>(comparison.elements)), rule.absolute,
                                  rule.relative, non_finite, comparison.worst));
    report.diagnostic.push_back(error.what());
    outcome_.error = error;
  }

  void write_profile_files(const profile::ProfileData& profile) {
    Span span("profile");
    const std::filesystem::path directory(request_.profile_directory);
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    if (error) throw_failure(directory.string(), "cannot create the folder: {}", error.message());
    profile::write_profile((directory / "profile.tprof").string(), profile);
    const std::string page = (directory / "profile.html").string();
    const profile::Page rendered = profile::render_html(profile);
    write_text_atomically(page, rendered.html);
    if (rendered.cut) fmt::print(stderr, "{}\n", profile::cut_timeline_note(rendered, (directory / "profile.tprof").string()));
    outcome_.report.profile = page;
  }

  const CaseRequest& request_;
  CaseOutcome outcome_;
  Timeline timeline_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  package::Package compiled_;
  std::vector<std::string> log_;
};

}  // namespace

CaseOutcome run_case(const CaseRequest& request) { return CaseRunner(request).run(); }

std::string case_options_text(const CaseRequest& request) {
  std::string text = fmt::format("target {}, budget {} bytes, max-cycles {}, atol {}, rtol {}",
                                 request.compile.machine.name, request.compile.budget_bytes, request.max_cycles,
                                 request.tolerance.absolute, request.tolerance.relative);
  if (request.compile.fp16_partials_anywhere) text += ", fp16 partial sums anywhere";
  // The graph's digest already changes with them; the key says them in words.
  if (request.identity.layers) text += fmt::format(", layers {}", *request.identity.layers);
  if (request.identity.head) text += *request.identity.head ? ", head" : ", no head";
  return text;
}

std::string name_with_options(std::string name, bool fp16_partials) {
  if (fp16_partials) name += "-fp16-partials";
  return name;
}

CaseKey expected_key(const CaseRequest& request) {
  CaseKey key = case_key(*request.graph, *request.data, case_options_text(request));
  if (request.package) {
    const std::vector<std::uint8_t> bytes = package::encode_package(*request.package);
    key.package = bytes_digest(bytes.data(), bytes.size());
    return key;
  }
  try {
    const std::vector<std::uint8_t> bytes = package::encode_package(compiler::compile(*request.graph, request.compile).package);
    key.package = bytes_digest(bytes.data(), bytes.size());
  } catch (const Error&) {
    // No package: the case ends before simulating, as its report says.
  }
  return key;
}

std::vector<std::pair<std::string, double>> stage_times(const Timeline& timeline) {
  std::map<std::string, double, std::less<>> seconds;
  for (const SpanRecord& record : timeline.top_level()) seconds[record.name] += record.wall_seconds;
  std::vector<std::pair<std::string, double>> stages;
  for (std::string_view stage : compiler::kStages)
    if (const auto found = seconds.find(stage); found != seconds.end()) stages.emplace_back(stage, found->second);
  return stages;
}

std::string_view case_phase(std::string_view span) {
  if (std::find(compiler::kStages.begin(), compiler::kStages.end(), span) != compiler::kStages.end() ||
      span == "encode_package")
    return "compile";
  if (span == "load" || span == "simulate" || span == "read_outputs") return "simulate";
  if (span == "reference" || span == "plan_order_reference" || span == "compare") return "check";
  return span;
}

std::string case_name(const CaseReport& identity) {
  std::string name = identity.precision;
  if (identity.batch) name += fmt::format("-b{}", *identity.batch);
  if (identity.blocks) name += fmt::format("-n{}", *identity.blocks);
  if (identity.layers) name += fmt::format("-l{}", *identity.layers);
  return name + (identity.budget_kib == 0 ? std::string("-default") : fmt::format("-{}k", identity.budget_kib));
}

}  // namespace tilec::bench
