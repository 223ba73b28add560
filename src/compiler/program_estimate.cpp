#include "compiler/program_estimate.h"

#include <algorithm>

namespace tilec::compiler {

ProgramEstimate estimate_program(const Lir& lir, const ExchangePlan& exchanges, const MachineModel& machine) {
  const GroupPlan& groups = lir.mid->groups;
  const auto phases = static_cast<std::size_t>(lir.phases);
  const auto group_size = static_cast<std::size_t>(groups.group_size);
  // compute[phase][group tile]: its tasks run one after another.
  std::vector<std::vector<double>> compute(phases, std::vector<double>(group_size, 0));
  for (const Task& task : lir.tasks)
    compute[static_cast<std::size_t>(task.superstep)][static_cast<std::size_t>(task.tile)] += task.cycles;
  ProgramEstimate estimate;
  estimate.phases.resize(phases);
  double runs = 0;
  for (std::size_t phase = 0; phase < phases; ++phase) {
    PhaseEstimate& slowest = estimate.phases[phase];
    for (std::size_t tile = 0; tile < static_cast<std::size_t>(groups.groups) * group_size; ++tile) {
      const double exchange = exchanges.tile_cycles[phase][tile], work = compute[phase][tile % group_size];
      if (exchange + work > slowest.cycles)
        slowest = PhaseEstimate{exchange + work, static_cast<int>(tile), exchange, work, 0};
    }
    const bool repeated =
        static_cast<int>(phase) >= lir.repeat_first_phase && static_cast<int>(phase) <= lir.repeat_last_phase;
    slowest.runs = static_cast<double>(groups.chunks) * static_cast<double>(repeated ? lir.mid->repeat_count : 1);
    estimate.cycles += slowest.runs * slowest.cycles;
    runs += slowest.runs;
  }
  estimate.cycles += std::max(0.0, runs - 1) * machine.sync_cycles;
  return estimate;
}

}  // namespace tilec::compiler
