// The planner's cost model: cycle and byte estimates for the ops of the
// mid-level IR. Used only to choose a plan; the simulator measures the real
// cycles by executing the code, and reports show both side by side.
//
// The figures per kernel mirror the kernels in kernels/ (their inner loops,
// per-job set-up and drain lengths); tests/compiler/cost_model_test.cpp
// compares them with simulated kernels so they cannot silently drift.
#pragma once

#include "compiler/mid.h"
#include "target/machine.h"

#include <cstdint>

namespace tilec::compiler {

// AMP instructions per k step of a 16x16 output block.
int amp_bundles_per_k(ElementType operand);

struct KernelCosts {
  int worker_start = 8;          // bundles before a worker's first job
  int gemm_job_setup = 12;       // loading a job's fields, zeroing the accumulators
  int gemm_drain_f16 = 34;       // 16 rows x 2 accrd.f16 paired with stores
  int gemm_drain_f32 = 66;       // 16 rows x 4 accrd.f32 paired with stores
  int map_job_setup = 10;
  int supervisor_bundle = 6;     // the supervisor issues once every 6 cycles
  int run_workers = 6 * 2 * 6;   // set-up and `run` of six workers
  int exchange_latency = 60;     // worst case across the chip
};

const KernelCosts& kernel_costs();

// Cycles for one tile to compute `blocks` 16x16 output blocks with `k_steps`
// k steps each (even), spread over six workers.
double gemm_tile_cycles(std::int64_t blocks, std::int64_t k_steps, ElementType operand,
                        bool drain_f32);

// Bundles a worker needs for 8 elements of an elementwise pass that reads
// `inputs` (each of `input_type`), applies `epilogue` and stores `output`.
double map_bundles_per_8(int inputs, ElementType input_type, const std::vector<EpilogueOp>& epilogue,
                         ElementType output);
double map_tile_cycles(std::int64_t elements, int inputs, ElementType input_type,
                       const std::vector<EpilogueOp>& epilogue, ElementType output);

// An exchange phase in which the busiest tile receives `bytes_in`, the
// busiest sends `bytes_out`, and tiles issue up to `transfers` sends or
// receives each.
double exchange_cycles(std::int64_t bytes_in, std::int64_t bytes_out, std::int64_t transfers,
                       const MachineModel& machine);

// What moving a value from layout `from` to layout `to` costs one group,
// in columns (multiply by rows x element bytes for bytes): the busiest
// tile's columns in and out, and its transfer count.
struct RearrangeCost {
  std::int64_t columns_in = 0;
  std::int64_t columns_out = 0;
  std::int64_t transfers = 0;
  bool needed() const { return columns_in > 0; }
};
RearrangeCost rearrange_cost(const ColumnLayout& from, const ColumnLayout& to);

}  // namespace tilec::compiler
