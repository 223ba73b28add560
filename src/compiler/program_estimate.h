// Stage estimate_program: the cycles the built program should take.
//
// Needs: the LIR after plan_kernels (each task priced: Task::cycles) and
// the exchange schedule (each tile's exchange time per phase).
// Does: prices each superstep as its slowest tile, a tile's time being its
// scheduled exchange then its tasks one after another, and adds a sync
// between supersteps, for every superstep the program runs (the repeat's
// body once per iteration, every chunk). The plan search prices the steps
// of a program not yet built; this prices the program the later stages
// built (its exchanges as scheduled, its kernels' worker shares), and is
// the estimate reported beside the simulator's cycles.
// Produces: the total, and each phase's slowest tile.
#pragma once

#include "compiler/exchange_schedule.h"
#include "compiler/lir.h"
#include "target/machine.h"

#include <vector>

namespace tilec::compiler {

struct PhaseEstimate {
  double cycles = 0;    // one run of the phase, from its release to its slowest tile's sync
  int slowest_tile = 0;
  double exchange = 0;  // the slowest tile's exchange, then its compute
  double compute = 0;
  double runs = 0;      // how often the program runs it
};

struct ProgramEstimate {
  double cycles = 0;
  std::vector<PhaseEstimate> phases;
};

ProgramEstimate estimate_program(const Lir& lir, const ExchangePlan& exchanges, const MachineModel& machine);

}  // namespace tilec::compiler
