// A sweep: a grid of cases (precisions x batches x blocks x layers x
// budgets) of one workload, run in parallel, each case's report written to
// the output folder as soon as it finishes, so that a killed sweep resumes
// where it stopped. The folder holds:
//
//   OUT/report.json          every finished case, in grid order (the
//                            reference schema; rewritten after each case)
//   OUT/report.md            the same as a Markdown table
//   OUT/NAME/case.json       one case's report (its presence = finished),
//                            sealed with its digest
//   OUT/NAME/outputs/        the device's outputs (NAME.npy, manifest.json)
//   OUT/NAME/profile.tprof   the profile of a passing case
//   OUT/NAME/profile.html    its page
//
// A case found finished in OUT is kept, not run again, unless `force`,
// when its record is as it was written (its digest), names the same case,
// target and workload, holds the key the case would run under now (graph,
// data, options, tilec's version, package: see case_key.h), and its stored
// outputs (OUT/NAME/outputs/) have the digest it reports.
#pragma once

#include "bench/case_report.h"
#include "bench/verify.h"
#include "graph/workloads.h"
#include "sim/device.h"
#include "target/machine.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::bench {

struct SweepOptions {
  std::string workload = "siglip-mlp";
  // Dimensions, bias, head, seed and FP8 scale; precision, batch, blocks and
  // layers come from the grid.
  graph::MlpOptions base;
  // The reference grid by default.
  std::vector<graph::Precision> precisions{graph::Precision::Fp8};
  std::vector<std::int64_t> batches{1, 2, 4};
  std::vector<std::int64_t> blocks{1};
  // A ViT tower's encoder layers; empty = the workload's own (base.layers).
  std::vector<std::int64_t> layers;
  std::vector<std::uint32_t> budgets_kib{0, 384, 256, 128, 64};  // 0 = the whole tile
  // The machines every point runs on, each with the label its cases' names
  // carry ("fp8-b1-n1-default@exchange-bytes=8"); one machine, no label.
  struct Machine {
    MachineModel model;
    std::string label;
  };
  std::vector<Machine> machines{{ipu21(), ""}};
  std::uint64_t max_cycles = sim::kDefaultMaxCycles;  // each run's cycle limit
  ToleranceRule tolerance;                             // each case's pass rule
  bool fp16_partials = false;  // every FP16 GEMM result's partial sums in FP16 (--fp16-partials)

  std::string out_directory;
  int jobs = 1;         // cases run at once
  bool force = false;   // rerun finished cases
  bool profiles = true; // profile.tprof and profile.html per passing case
  // Receives progress lines (no newline); unset = quiet. Called from any
  // worker thread, one call at a time.
  std::function<void(const std::string& line)> progress;
};

// One point of the grid.
struct GridCase {
  std::string name;
  graph::MlpOptions options;  // base with the case's precision, batch, blocks, layers
  std::uint32_t budget_kib = 0;
  std::string workload;  // its label (workload_label)
  MachineModel machine;
};

// The machines of a sweep: each target (ipu21 when none), crossed with
// every value of each `vary` ("exchange-bytes=4,8,16"). BadInput naming
// the field or value.
std::vector<SweepOptions::Machine> machine_grid(const std::vector<std::string>& targets,
                                                const std::vector<std::string>& vary);

// The grid in report order: precision, batch, blocks, layers, budgets as
// given, then machines. Duplicates are dropped. BadInput for a point the workload does
// not take (blocks of a ViT tower, layers of an MLP).
std::vector<GridCase> sweep_grid(const SweepOptions& options);

struct SweepResult {
  std::vector<CaseReport> cases;  // grid order
  int kept = 0;                   // found finished in the folder
  int ran = 0;
  double wall_seconds = 0;
  int case_threads = 0;  // host threads each case could use
};

// The host threads each of `jobs` cases run at once may use, of `threads`:
// an even share, at least one, so that no case's compile or simulation is
// timed while it shares cores with another's.
int threads_per_case(int threads, int jobs);

// Host memory to allow a full-chip case of the workload: 1.5 GiB for an
// MLP (its cases peak at 0.2 to 0.8 GB), 4 GiB for a ViT layer or tower
// (the 27-layer tower at batch 2 peaks at about 3.2 GB with its events).
std::uint64_t case_memory_kib(std::string_view workload);

// The cases a sweep runs at once by default, of `threads` host threads and
// `available_kib` of host memory: one for every two threads, so that each
// compiles and simulates on two (a compile on one takes about twice as
// long), and no more than memory holds at `case_kib` a case; at least one.
int default_jobs(int threads, std::uint64_t available_kib, std::uint64_t case_kib);

// Runs the sweep. A case's failure never stops the others; only a problem
// with the folder itself (cannot create or write it) throws.
SweepResult run_sweep(const SweepOptions& options);

}  // namespace tilec::bench
