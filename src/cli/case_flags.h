// Flags shared by `tilec compile`, `tilec run` and `tilec bench`: the
// target, the memory budget, and where a run's graph and data come from
// (a built-in workload, or a graph file with a tensor directory).
#pragma once

#include "bench/case_report.h"
#include "bench/verify.h"
#include "bench/workload_data.h"
#include "cli/workload_flags.h"
#include "compiler/options.h"
#include "graph/graph.h"
#include "graph/tensor.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace tilec::bench {
class WorkloadData;
}

namespace tilec::cli {

struct TargetFlags {
  std::string target;  // empty: ipu21, or the package's target
  std::string budget_kib = "0";
  bool fp16_partials = false;  // CompileOptions::fp16_partials_anywhere
};

void add_target_flags(CLI::App& command, TargetFlags& flags);
// "--fp16-partials" (docs/numerics.md).
void add_fp16_partials_flag(CLI::App& command, bool& fp16_partials);

// "--max-cycles N": the run faults when it reaches cycle N (N >= 1).
void add_max_cycles_flag(CLI::App& command, std::uint64_t& max_cycles);
// "--atol A", "--rtol R": the pass rule |device - reference| <= A + R x |reference|.
void add_tolerance_flags(CLI::App& command, bench::ToleranceRule& rule);

// A budget in KiB given to `flag`: 0 (the whole tile) up to the tile's memory.
std::uint32_t parse_budget_kib(const std::string& flag, const std::string& text, const MachineModel& machine);
// "--tiles N": 1..1472.
std::uint32_t parse_tiles(const std::string& text);

compiler::CompileOptions compile_options(const TargetFlags& flags, const std::string& fallback_target = "ipu21");

// What a run compiles and checks: the graph, its inputs and parameters
// (built-in data, or read from --inputs), and the case's identity.
struct GraphSource {
  graph::Graph graph;
  graph::TensorMap data;                      // a graph file's or --inputs data; empty when not asked for
  // Set for a built-in workload's own data (it holds the data, not copied
  // into `data`, and computes the reference).
  std::shared_ptr<bench::WorkloadData> workload;
  bench::CaseReport identity;                 // name, batch, blocks or layers and head, precision, workload

  // The inputs and parameters: the workload's own, or `data`.
  const graph::TensorMap& tensors() const { return workload ? workload->data() : data; }
};

// GRAPH file or --workload NAME (one of them). With `with_data`, also the
// data: the workload's own or --inputs DIR; a graph file's from --inputs DIR
// or generated with --seed N.
GraphSource load_graph_source(const CLI::App& command, const std::string& graph_file,
                              const WorkloadFlags& workload, const std::string& inputs_dir, bool with_data,
                              std::uint32_t budget_kib);

}  // namespace tilec::cli
