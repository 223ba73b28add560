// The planner's cost model: cycle and byte estimates for the ops of the
// mid-level IR. Used only to choose a plan; the simulator measures the real
// cycles by executing the code, and reports show both side by side.
//
// The figures per kernel mirror the kernels in kernels/ (their inner loops,
// per-job set-up and drain lengths; the combine kernels' counts come from
// their generated code); tests/compiler/kernel_cost_test.cpp compares them
// with simulated kernels so they cannot silently drift.
#pragma once

#include "compiler/kernel_library.h"
#include "compiler/mid.h"
#include "target/machine.h"

#include <cstdint>
#include <vector>

namespace tilec::compiler {

// AMP instructions per k step of a 16x16 output block.
int amp_bundles_per_k(ElementType operand);

// Bundle counts of the kernels in kernels/ outside their inner loops
// (docs/kernels.md gives each kernel's cycle formula).
struct KernelCosts {
  int worker_start = 6;          // GEMM: reading the job count and bases, first job, empty check
  int worker_exit = 1;
  // Per GEMM job: its fields and accz (7), the operand loads before the
  // loop and the k-parity branch, and the jump to the next job (2).
  int gemm_job_setup_f8 = 15;    // + 2 when k is even
  int gemm_job_setup_f16 = 17;   // + 2 when k is even
  int gemm_job_setup_f32 = 18;
  // The drains: see gemm_drain_bundles (kernel_library.h).
  int supervisor_bundle = 6;     // the supervisor issues once every 6 cycles
  int run_workers = 6 * 2 * 6;   // set-up and `run` of six workers
  int exchange_latency = 60;     // worst case across the chip
  // Cycles a transfer adds beyond its bytes and its two supervisor bundles:
  // receivers at other distances free their ports at other times (fitted
  // to the reference grid's simulated exchange phases).
  int transfer_gap = 20;
  // A patterned send or receive: its run and stride set, then xpat.
  int pattern_bundles = 3;
};

const KernelCosts& kernel_costs();

// Bundles one GEMM worker issues for `jobs` 16x16 blocks of `k_steps`.
std::int64_t gemm_worker_bundles(std::int64_t jobs, std::int64_t k_steps, const GemmVariant& variant);
std::int64_t gemm_worker_bundles(std::int64_t jobs, std::int64_t k_steps, ElementType operand, bool drain_f32);

// Cycles for one tile to compute `blocks` 16x16 output blocks with `k_steps`
// k steps each, spread over six workers as plan_kernels spreads them.
double gemm_tile_cycles(std::int64_t blocks, std::int64_t k_steps, ElementType operand,
                        bool drain_f32);

// Cycles for one tile to run GEMM jobs of these k steps (one entry a
// 16x16 block), worker w of six taking jobs [J w / 6, J (w + 1) / 6) as
// plan_kernels hands them out.
double gemm_jobs_tile_cycles(const std::vector<std::int64_t>& k_steps, const GemmVariant& variant);

// One run of a combine kernel over `columns` columns of `column_elements`
// elements, its workers taking whole columns or (rows_split) each column's
// panels (combine_kernel.h): the busiest worker's bundles and the launch.
double combine_run_cycles(const CombineVariant& variant, std::int64_t columns, std::int64_t column_elements,
                          bool rows_split);

// A combine kernel over `columns` columns of `column_elements` elements
// (whole panels), split between six workers by columns as plan_kernels
// splits it: the bundles its generated code issues (combine_kernel.h).
double combine_tile_cycles(const CombineVariant& variant, std::int64_t columns, std::int64_t column_elements);
// The columns of a combine with a bias that a second run takes, each
// column's panels shared by its workers (combine_kernel.h), where the two
// runs are faster than whole columns; else 0.
std::int64_t combine_rows_split_columns(const CombineVariant& variant, std::int64_t columns,
                                        std::int64_t column_elements);

// The same from the planner's view of an elementwise pass that reads
// `inputs` (each of `input_type`), applies `epilogue` and stores `output`:
// the variant it most likely becomes (the sum type is the output's when
// there is no epilogue, the input's for one input, else FP32 when the input
// and something after it are FP32, else FP16), over `elements` elements in
// one column per worker.
CombineVariant likely_combine_variant(int inputs, ElementType input_type, const std::vector<EpilogueOp>& epilogue,
                                      ElementType output);
// Bundles a worker issues per 8 elements in the loop of that variant.
double map_bundles_per_8(int inputs, ElementType input_type, const std::vector<EpilogueOp>& epilogue,
                         ElementType output);
double map_tile_cycles(std::int64_t elements, int inputs, ElementType input_type,
                       const std::vector<EpilogueOp>& epilogue, ElementType output);

// The row kernels (kernels/layernorm.S, kernels/softmax.S) over whole rows
// of `columns` columns, writing `output_columns` of them: the bundles one
// worker issues for `half_panels` half panels (8 rows each).
enum class RowKernel : std::uint8_t { LayerNorm, Softmax };
std::int64_t row_worker_bundles(RowKernel kernel, ElementType input, ElementType output, std::int64_t half_panels,
                                std::int64_t columns, std::int64_t output_columns);
// Per column of 8 rows, in the three passes' loops: each loop issues one
// bundle per instruction of its busier slot.
int row_bundles_per_column(RowKernel kernel, ElementType input, ElementType output);
// A tile's cycles for `panels` panels split between six workers by half
// panels.
double row_tile_cycles(RowKernel kernel, ElementType input, ElementType output, std::int64_t panels,
                       std::int64_t columns, std::int64_t output_columns);

// The split-column row kernels (kernels/row_stats.S, row_apply.S;
// docs/kernels.md gives the formulas): the bundles one worker issues for
// `half_panels` half panels over its `columns` columns; the apply kernels
// combine `slots` slots of statistics per half panel. A worker with no
// half panels issues 3 (its first argument, the empty check, exit).
std::int64_t row_stats_worker_bundles(RowKernel kernel, ElementType input, std::int64_t half_panels,
                                      std::int64_t columns);
std::int64_t row_apply_worker_bundles(RowKernel kernel, ElementType input, ElementType output,
                                      std::int64_t half_panels, std::int64_t columns, std::int64_t slots);
// The merge kernels (kernels/row_merge.S): a worker's bundles for `quads`
// quads of 4 rows merging `slots` slots into one (3 when quads = 0).
std::int64_t row_merge_worker_bundles(RowKernel kernel, std::int64_t quads, std::int64_t slots);
// A tile's cycles merging the slots of a block of `panels` panels, its
// workers taking quads as split_row_quads gives them.
double row_merge_tile_cycles(RowKernel kernel, std::int64_t panels, std::int64_t slots);
// A tile's cycles for a block of `panels` panels x `columns` columns shared
// as split_row_block(panels, columns, column_ranges) shares it: 6 x the
// busiest worker's bundles + 12 per worker started + 12.
double row_stats_tile_cycles(RowKernel kernel, ElementType input, std::int64_t panels, std::int64_t columns,
                             int column_ranges);
double row_apply_tile_cycles(RowKernel kernel, ElementType input, ElementType output, std::int64_t panels,
                             std::int64_t columns, std::int64_t slots, int column_ranges);
// The column ranges (1 to 6) with the fewest of these kernels' cycles (the
// fewest ranges among equals). For the statistics this counts the kernel
// only: each range is one more slot to exchange and to combine.
int fastest_row_stats_ranges(RowKernel kernel, ElementType input, std::int64_t panels, std::int64_t columns);
int fastest_row_apply_ranges(RowKernel kernel, ElementType input, ElementType output, std::int64_t panels,
                             std::int64_t columns, std::int64_t slots);

// The generated softmax kernels (softmax_kernel.h, every RowVariant with
// generated()): the bundles one worker issues for `half_panels` half
// panels, reading `columns` columns (C, or its chunk's), writing
// `output_columns` (a normalised softmax's C'), of a softmax split into
// `chunks` chunks (ChunkExp, the finishes).
std::int64_t softmax_variant_worker_bundles(const RowVariant& variant, std::int64_t half_panels,
                                            std::int64_t columns, std::int64_t output_columns,
                                            std::int64_t chunks = 1);

// One worker's share of a softmax whose C columns are cut into K chunks:
// chunk k is columns [C k / K, C (k + 1) / K), taken by 6 / K workers who
// split the 2P half panels between them (worker u of the chunk takes
// [2P u / (6 / K), 2P (u + 1) / (6 / K))). K = 1 is the whole-row kernels'
// split of half panels.
struct SoftmaxShare {
  std::int64_t first_half = 0, halves = 0;
  int chunk = 0;
  std::int64_t first_column = 0, columns = 0;
};
constexpr int kSoftmaxChunkChoices[] = {1, 2, 3, 6};
std::vector<SoftmaxShare> softmax_shares(std::int64_t panels, std::int64_t columns, int chunks);

// A tile's cycles for a softmax (`variant.form` Normalised or Partial, any
// scale) over `panels` panels of `columns` columns: with one chunk the
// whole-row kernel (today's fixed kernel when normalised and unscaled),
// else the three split kernels, a launch each (a normalised one keeps the
// exponentials in FP32 between them).
double softmax_tile_cycles(const RowVariant& variant, std::int64_t panels, std::int64_t columns, int chunks);
// One launch of one of those kernels (`kernel.form` ChunkMax, ChunkExp or
// a finish when `chunks` > 1; a finish of a partial softmax runs on chunk
// 0's workers only).
double softmax_launch_cycles(const RowVariant& kernel, std::int64_t panels, std::int64_t columns, int chunks);
// The chunk count of kSoftmaxChunkChoices with the fewest cycles.
int softmax_best_chunks(const RowVariant& variant, std::int64_t panels, std::int64_t columns);

// The attention merge (merge_kernel.h): the bundles one worker issues for
// `quads` row quads of `columns` columns over `partials` partials.
std::int64_t merge_worker_bundles(const MergeVariant& variant, std::int64_t quads, std::int64_t columns,
                                  std::int64_t partials);
// Workers on a grid of row-quad groups x column groups (at most six
// cells; each worker one cell: its quads and columns split as evenly as
// they divide), the grid with the fewest cycles.
struct MergeShare {
  std::int64_t first_quad = 0, quads = 0;
  std::int64_t first_column = 0, columns = 0;
};
std::vector<MergeShare> merge_shares(const MergeVariant& variant, std::int64_t quads, std::int64_t columns,
                                     std::int64_t partials);
double merge_tile_cycles(const MergeVariant& variant, std::int64_t quads, std::int64_t columns,
                         std::int64_t partials);


// An exchange phase in which the busiest tile receives `bytes_in`, the
// busiest sends `bytes_out`, and tiles issue up to `transfers` sends or
// receives each, `patterned` of them with a byte pattern.
double exchange_cycles(std::int64_t bytes_in, std::int64_t bytes_out, std::int64_t transfers,
                       const MachineModel& machine, std::int64_t patterned = 0);

// What moving a value from layout `from` to layout `to` costs one group,
// in elements (multiply by the element bytes for bytes): the busiest
// tile's elements in and out, its transfer count (a block of rows x
// columns moves in one transfer) and how many of them take a byte pattern.
struct RearrangeCost {
  std::int64_t elements_in = 0;
  std::int64_t elements_out = 0;
  std::int64_t transfers = 0;
  std::int64_t patterned = 0;
  bool needed() const { return elements_in > 0; }
};
RearrangeCost rearrange_cost(const Layout& from, const Layout& to);

}  // namespace tilec::compiler
