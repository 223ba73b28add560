// `tilec bench --micro`: the microbenchmarks of bench/micro/, hand-written
// programs that time one feature of the machine each, run on the simulator
// and set beside the figure the machine description implies. The tables
// follow Jia et al. 2019, "Dissecting the Graphcore IPU Architecture via
// Microbenchmarking": synchronization, exchange latency and bandwidth,
// arithmetic throughput, memory bandwidth and thread scheduling.
#pragma once

#include "target/machine.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::bench {

struct MicroFigure {
  std::string table;     // the study's section: "exchange latency", ...
  std::string name;      // what was measured: "tile 0 to tile 64 (1 column)"
  std::string unit;      // "cycles", "bytes a cycle", "MACs a cycle"
  double measured = 0;   // from the program's run on the simulator
  double implied = 0;    // from the machine description
  std::string because;   // the fields or rule that imply it

  bool matches() const { return measured == implied; }
};

// The sources: bench/micro/ as built into tilec, or the .s files of a folder.
using MicroSources = std::map<std::string, std::string>;
const std::map<std::string, std::string_view>& embedded_micro_sources();
MicroSources built_in_micro_sources();
// BadInput naming the folder when it cannot be read or lacks a benchmark.
MicroSources micro_sources_from(const std::string& directory);

// Runs every benchmark on `machine`; `progress` hears each table's name.
// A benchmark that faults where the machine implies a fault (FP8 on a
// machine without it) measures 0; any other fault or error is thrown, named
// by the benchmark's file.
std::vector<MicroFigure> run_micro(const MicroSources& sources, const MachineModel& machine,
                                   const std::function<void(const std::string&)>& progress = {});

std::string micro_markdown(const std::vector<MicroFigure>& figures, const MachineModel& machine);
nlohmann::json micro_json(const std::vector<MicroFigure>& figures, const MachineModel& machine);

}  // namespace tilec::bench
