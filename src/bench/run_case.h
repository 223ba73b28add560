// One case, start to finish: compile the graph (unless a package is given),
// load its inputs and parameters into the simulated device, run it, read the
// outputs and compare them with the host reference. Whatever stops the case
// (no plan fits, a fault, a bad input) is caught and reported in its
// CaseReport; the case never throws a tilec::Error.
#pragma once

#include "bench/case_key.h"
#include "bench/case_report.h"
#include "bench/verify.h"
#include "compiler/options.h"
#include "graph/graph.h"
#include "graph/reference.h"
#include "graph/tensor.h"
#include "package/package.h"
#include "sim/device.h"
#include "support/error.h"
#include "support/span.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tilec::bench {

// The host reference's outputs, the exact (FP64, unrounded) reference's,
// and how long each took to compute.
struct ReferenceOutputs {
  graph::TensorMap outputs;
  graph::ExactOutputs exact;
  double seconds = 0;
  double exact_seconds = 0;
};

struct CaseRequest {
  // The case's identity (name, batch, blocks, precision, budget_kib,
  // target, workload): copied into the report.
  CaseReport identity;
  const graph::Graph* graph = nullptr;
  const graph::TensorMap* data = nullptr;  // every input and parameter
  // Called once the device's outputs are read; may wait for another case
  // computing the same reference.
  std::function<const ReferenceOutputs&()> reference;
  compiler::CompileOptions compile;  // machine and budget
  // Given: run this package instead of compiling.
  const package::Package* package = nullptr;
  // The simulator faults when the run reaches this cycle (sim::SimOptions).
  std::uint64_t max_cycles = sim::kDefaultMaxCycles;
  // The pass rule for every output element.
  ToleranceRule tolerance;
  // Set: when the case runs to the end or faults, its profile (profile.tprof,
  // docs/profile-format.md) and its page (profile.html) go into this folder,
  // and the report's `profile` names the page.
  std::string profile_directory;
  // Called when the case enters a stage (compile stages, then simulate,
  // reference, compare...), with the seconds since the case began.
  std::function<void(std::string_view stage, double elapsed)> on_stage;
  // Called with the cycles simulated so far (sim::SimOptions::on_progress).
  std::function<void(std::uint64_t cycles)> on_cycles;
  // Set when nothing else runs in the process meanwhile: the report gives
  // the process's peak resident memory over the case (peakRssBytes), the
  // mark restarted as the case begins.
  bool measure_peak_resident = false;
};

struct CaseOutcome {
  CaseReport report;
  // What stopped the case (status other than pass and failed), to rethrow.
  std::optional<Error> error;
  graph::TensorMap outputs;  // the device's, when the run completed
  std::vector<SpanRecord> spans;  // every span the case ran, for traces
};

CaseOutcome run_case(const CaseRequest& request);

// The options part of a case's key: target, budget, cycle limit, pass rule,
// FP16 partial sums, and a ViT tower's layers and head (from the identity).
std::string case_options_text(const CaseRequest& request);
// A case's name with what its compile options add: "-fp16-partials" when
// its partial sums may all be FP16 (CompileOptions::fp16_partials_anywhere).
std::string name_with_options(std::string name, bool fp16_partials);
// The key the case would run under now: the package is compiled (unless
// given) to learn its digest; "" when the compiler builds none.
CaseKey expected_key(const CaseRequest& request);

// Each compile stage's summed wall time over the top-level spans of
// `timeline` (a stage runs once per plan the driver tries), in pipeline
// order; stages that did not run are left out.
std::vector<std::pair<std::string, double>> stage_times(const Timeline& timeline);

// A case's coarse phase for progress reports, from the span that begins:
// "compile" (every compiler stage, then encoding the package), "simulate"
// (loading the device, running it, reading the outputs), "check" (the
// host reference and the comparison) or "profile" (writing it).
std::string_view case_phase(std::string_view span);

// The name a sweep gives a case, from its identity's precision, batch,
// blocks, layers and budget (each that is set): "fp8-b4-n1-default" and
// "fp8-b1-n1-256k" (an MLP's blocks), "fp8-b1-l27-default" (a ViT tower's
// layers), "fp8-b1-default" (one encoder layer: neither).
std::string case_name(const CaseReport& identity);

}  // namespace tilec::bench
