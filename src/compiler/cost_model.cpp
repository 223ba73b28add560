#include "compiler/cost_model.h"

#include "compiler/combine_kernel.h"
#include "compiler/merge_kernel.h"
#include "compiler/softmax_kernel.h"
#include "support/error.h"

#include <algorithm>
#include <map>
#include <vector>

namespace tilec::compiler {

int amp_bundles_per_k(ElementType operand) {
  switch (operand) {
    case ElementType::F32: return 16;
    case ElementType::F16: return 4;
    default: return 2;
  }
}

const KernelCosts& kernel_costs() {
  static const KernelCosts costs;
  return costs;
}

std::int64_t gemm_worker_bundles(std::int64_t jobs, std::int64_t k_steps, const GemmVariant& variant) {
  const KernelCosts& costs = kernel_costs();
  const bool even = k_steps % 2 == 0;
  std::int64_t setup = 0;
  switch (variant.weights) {
    case ElementType::F32: setup = costs.gemm_job_setup_f32; break;
    case ElementType::F16: setup = costs.gemm_job_setup_f16 + (even ? 2 : 0); break;
    default: setup = costs.gemm_job_setup_f8 + (even ? 2 : 0); break;
  }
  const std::int64_t per_job = setup + k_steps * amp_bundles_per_k(variant.weights) + gemm_drain_bundles(variant);
  return costs.worker_start + jobs * per_job + costs.worker_exit;
}

std::int64_t gemm_worker_bundles(std::int64_t jobs, std::int64_t k_steps, ElementType operand, bool drain_f32) {
  GemmVariant variant;
  variant.weights = variant.activations = operand;
  variant.drain_f32 = drain_f32;
  return gemm_worker_bundles(jobs, k_steps, variant);
}

double gemm_jobs_tile_cycles(const std::vector<std::int64_t>& k_steps, const GemmVariant& variant) {
  if (k_steps.empty()) return 0;
  const KernelCosts& costs = kernel_costs();
  const std::int64_t count = static_cast<std::int64_t>(k_steps.size());
  std::int64_t busiest = 0;
  for (int w = 0; w < kWorkers; ++w) {
    std::int64_t bundles = costs.worker_start + costs.worker_exit;
    for (std::int64_t j = count * w / kWorkers; j < count * (w + 1) / kWorkers; ++j)
      bundles += gemm_worker_bundles(1, k_steps[static_cast<std::size_t>(j)], variant) - costs.worker_start -
                 costs.worker_exit;
    busiest = std::max(busiest, bundles);
  }
  return 6.0 * static_cast<double>(busiest) + costs.run_workers;
}

double gemm_tile_cycles(std::int64_t blocks, std::int64_t k_steps, ElementType operand, bool drain_f32) {
  if (blocks == 0 || k_steps == 0) return 0;
  // Workers take whole 16x16 blocks: the busiest has ceil(blocks / 6).
  const std::int64_t jobs = (blocks + 5) / 6;
  return 6.0 * static_cast<double>(gemm_worker_bundles(jobs, k_steps, operand, drain_f32)) +
         kernel_costs().run_workers;
}

namespace {

// The generated kernels' shapes come from their code generators (their
// loops are modulo-scheduled: milliseconds); the planner asks about the same
// few variants many times, from every search thread, so each thread keeps
// its own (no lock to contend).
template <typename Variant, typename Shape>
const Shape& cached(const Variant& variant, Shape (*make)(const Variant&)) {
  thread_local std::map<Variant, Shape> shapes;
  auto it = shapes.find(variant);
  if (it == shapes.end()) it = shapes.emplace(variant, make(variant)).first;
  return it->second;
}

const CombineShape& cached_shape(const CombineVariant& variant) { return cached(variant, &combine_shape); }

}  // namespace

double combine_run_cycles(const CombineVariant& variant, std::int64_t columns, std::int64_t column_elements,
                          bool rows_split) {
  if (columns == 0) return 0;
  const CombineShape& shape = cached_shape(variant);
  std::int64_t busiest = 0;
  for (const CombineShare& share : combine_shares(variant, columns, column_elements, rows_split))
    busiest = std::max(busiest, combine_worker_bundles(shape, share.columns, share.groups));
  return 6.0 * static_cast<double>(busiest) + kernel_costs().run_workers;
}

std::int64_t combine_rows_split_columns(const CombineVariant& variant, std::int64_t columns,
                                        std::int64_t column_elements) {
  const std::int64_t rest = columns % kWorkers;
  if (!combine_loops_per_column(variant) || columns < kWorkers || rest == 0 || column_elements % 16 != 0) return 0;
  const double split = combine_run_cycles(variant, columns - rest, column_elements, false) +
                       combine_run_cycles(variant, rest, column_elements, true);
  return split < combine_run_cycles(variant, columns, column_elements, false) ? rest : 0;
}

double combine_tile_cycles(const CombineVariant& variant, std::int64_t columns, std::int64_t column_elements) {
  if (columns == 0 || column_elements == 0) return 0;
  const std::int64_t rest = combine_rows_split_columns(variant, columns, column_elements);
  return combine_run_cycles(variant, columns - rest, column_elements, false) +
         combine_run_cycles(variant, rest, column_elements, true);
}

CombineVariant likely_combine_variant(int inputs, ElementType input_type, const std::vector<EpilogueOp>& epilogue,
                                      ElementType output) {
  CombineVariant variant;
  variant.inputs = std::clamp(inputs, 1, kMaxCombineInputs);
  variant.input = StorageType{input_type, 0};
  bool later_f32 = output == ElementType::F32;
  for (const EpilogueOp& op : epilogue) {
    later_f32 |= op.result.element == ElementType::F32;
    variant.stages.push_back(CombineStage{op.kind, op.approximation, StorageType{op.result.element, 0}});
  }
  if (epilogue.empty()) variant.sum = StorageType{output, 0};
  else if (variant.inputs == 1) variant.sum = variant.input;
  else variant.sum = StorageType{input_type == ElementType::F32 && later_f32 ? ElementType::F32 : ElementType::F16, 0};
  variant.bias = input_type == ElementType::F32 ? ElementType::F32 : ElementType::F16;
  return variant;
}

double map_bundles_per_8(int inputs, ElementType input_type, const std::vector<EpilogueOp>& epilogue,
                         ElementType output) {
  return cached_shape(likely_combine_variant(inputs, input_type, epilogue, output)).bundles_per_8();
}

double map_tile_cycles(std::int64_t elements, int inputs, ElementType input_type,
                       const std::vector<EpilogueOp>& epilogue, ElementType output) {
  if (elements == 0) return 0;
  // Six workers, one column each, in whole panels (two groups of 8).
  const std::int64_t per_worker = std::max<std::int64_t>((elements + 95) / 96 * 16, 16);
  return combine_tile_cycles(likely_combine_variant(inputs, input_type, epilogue, output), 6, per_worker);
}

namespace {

// One pass of a row kernel over C columns issues fixed + per_column x C
// bundles (its loop runs C - 1 times between a prologue and an epilogue).
// Every loop issues one bundle per instruction of its busier slot.
struct PassCost {
  int per_column;
  int fixed;
};

struct RowCosts {
  PassCost first, second, output;
  int entry;       // to the first half panel
  int half_panel;  // per half panel outside the passes
};

RowCosts row_costs(RowKernel kernel, ElementType input, ElementType output) {
  const bool in16 = input == ElementType::F16, out16 = output == ElementType::F16;
  // The output loops widen FP16 inputs (2 instructions) and narrow FP16
  // outputs (2), and store one quad fewer.
  const int widen = in16 ? 2 : 0, narrow = out16 ? 2 : 0;
  if (kernel == RowKernel::LayerNorm)
    return RowCosts{in16 ? PassCost{4, 4} : PassCost{3, 3}, in16 ? PassCost{8, 4} : PassCost{6, 4},
                    PassCost{8 + widen + narrow, (in16 ? 8 : 6) - (out16 ? 1 : 0) - widen}, 21, 24};
  return RowCosts{in16 ? PassCost{4, 5} : PassCost{3, 4}, in16 ? PassCost{8, 4} : PassCost{6, 4},
                  PassCost{6 + widen + narrow, (in16 ? 8 : 6) - (out16 ? 1 : 0) - widen}, 13, 6};
}

}  // namespace

std::int64_t row_worker_bundles(RowKernel kernel, ElementType input, ElementType output, std::int64_t half_panels,
                                std::int64_t columns, std::int64_t output_columns) {
  if (half_panels <= 0) return 0;
  const RowCosts c = row_costs(kernel, input, output);
  const std::int64_t per_half_panel = c.half_panel + c.first.fixed + c.second.fixed + c.output.fixed +
                                      columns * (c.first.per_column + c.second.per_column) +
                                      output_columns * c.output.per_column;
  return c.entry + half_panels * per_half_panel + 1;
}

int row_bundles_per_column(RowKernel kernel, ElementType input, ElementType output) {
  const RowCosts c = row_costs(kernel, input, output);
  return c.first.per_column + c.second.per_column + c.output.per_column;
}

double row_tile_cycles(RowKernel kernel, ElementType input, ElementType output, std::int64_t panels,
                       std::int64_t columns, std::int64_t output_columns) {
  if (panels == 0 || columns == 0) return 0;
  return 6.0 * static_cast<double>(
                   row_worker_bundles(kernel, input, output, (2 * panels + 5) / 6, columns, output_columns)) +
         kernel_costs().run_workers;
}

std::int64_t row_stats_worker_bundles(RowKernel kernel, ElementType input, std::int64_t half_panels,
                                      std::int64_t columns) {
  if (half_panels <= 0) return 3;
  // The passes are the whole-row kernels' first two; per half panel the
  // record's four stores and the step to the next (8), and for layernorm
  // the division (6). Set-up: the arguments (6), then 1/c and -c (14) or
  // c - 1 and -inf (3).
  const RowCosts c = row_costs(kernel, input, ElementType::F32);
  const bool layernorm = kernel == RowKernel::LayerNorm;
  const std::int64_t per_half_panel =
      c.first.fixed + c.second.fixed + columns * (c.first.per_column + c.second.per_column) + 8 + (layernorm ? 6 : 0);
  return (layernorm ? 20 : 9) + half_panels * per_half_panel + 1;
}

std::int64_t row_apply_worker_bundles(RowKernel kernel, ElementType input, ElementType output,
                                      std::int64_t half_panels, std::int64_t columns, std::int64_t slots) {
  if (half_panels <= 0) return 3;
  // Per half panel, combining the slots: layernorm 6 bundles per slot for
  // the mean and 6 for M2, with 33 around them (the two divisions, 1/N and
  // -N splat twice, epsilon, 1/sqrt, the step to the next half panel);
  // softmax 3 per slot for the largest and 6 for the sum, with 14 around.
  // Then the whole-row kernel's output pass over the worker's columns.
  const RowCosts c = row_costs(kernel, input, output);
  const bool layernorm = kernel == RowKernel::LayerNorm;
  const std::int64_t combine = layernorm ? 12 * slots + 33 : 9 * slots + 14;
  const std::int64_t per_half_panel = combine + c.output.fixed + columns * c.output.per_column;
  // Set-up: the arguments, then 1/N and -N (23) or -inf (14).
  return (layernorm ? 23 : 14) + half_panels * per_half_panel + 1;
}

std::int64_t row_merge_worker_bundles(RowKernel kernel, std::int64_t quads, std::int64_t slots) {
  if (quads <= 0) return 3;
  // Per quad: layernorm 4 bundles a slot for S and Q, 3 for M2, 17 around
  // them (the quad's place, the division, the stores, the step); softmax 2
  // for M, 3 for L, 13 around. Set-up: the arguments, 1/N and -N splat
  // (22), or -inf (10).
  if (kernel == RowKernel::LayerNorm) return 22 + quads * (7 * slots + 17) + 1;
  return 10 + quads * (5 * slots + 13) + 1;
}

namespace {

// 6 x the busiest worker's bundles, plus the supervisor's two bundles
// starting each worker (its argument block, `run`) and two after the last
// exit (`wsync` and the next).
double split_row_cycles(std::int64_t busiest, std::size_t workers) {
  return 6.0 * static_cast<double>(busiest) +
         2.0 * kernel_costs().supervisor_bundle * static_cast<double>(workers + 1);
}

// A block shared as split_row_block shares it.
template <typename WorkerBundles>
double split_row_tile_cycles(std::int64_t panels, std::int64_t columns, int column_ranges,
                             const WorkerBundles& worker_bundles) {
  if (panels <= 0 || columns <= 0) return 0;
  const std::vector<RowWorkerShare> shares = split_row_block(panels, columns, column_ranges);
  std::int64_t busiest = 0;
  for (const RowWorkerShare& share : shares) busiest = std::max(busiest, worker_bundles(share.half_panels, share.columns));
  return split_row_cycles(busiest, shares.size());
}

template <typename TileCycles>
int fastest_ranges(std::int64_t columns, const TileCycles& tile_cycles) {
  int best = 1;
  for (int ranges = 2; ranges <= 6 && ranges <= columns; ++ranges)
    if (tile_cycles(ranges) < tile_cycles(best)) best = ranges;
  return best;
}

}  // namespace

double row_stats_tile_cycles(RowKernel kernel, ElementType input, std::int64_t panels, std::int64_t columns,
                             int column_ranges) {
  return split_row_tile_cycles(panels, columns, column_ranges, [&](std::int64_t halves, std::int64_t share) {
    return row_stats_worker_bundles(kernel, input, halves, share);
  });
}

double row_apply_tile_cycles(RowKernel kernel, ElementType input, ElementType output, std::int64_t panels,
                             std::int64_t columns, std::int64_t slots, int column_ranges) {
  return split_row_tile_cycles(panels, columns, column_ranges, [&](std::int64_t halves, std::int64_t share) {
    return row_apply_worker_bundles(kernel, input, output, halves, share, slots);
  });
}

double row_merge_tile_cycles(RowKernel kernel, std::int64_t panels, std::int64_t slots) {
  if (panels <= 0) return 0;
  const std::vector<RowQuadShare> shares = split_row_quads(panels);
  std::int64_t busiest = 0;
  for (const RowQuadShare& share : shares)
    busiest = std::max(busiest, row_merge_worker_bundles(kernel, share.quads, slots));
  return split_row_cycles(busiest, shares.size());
}

int fastest_row_stats_ranges(RowKernel kernel, ElementType input, std::int64_t panels, std::int64_t columns) {
  return fastest_ranges(columns, [&](int ranges) { return row_stats_tile_cycles(kernel, input, panels, columns, ranges); });
}

int fastest_row_apply_ranges(RowKernel kernel, ElementType input, ElementType output, std::int64_t panels,
                             std::int64_t columns, std::int64_t slots) {
  return fastest_ranges(columns, [&](int ranges) {
    return row_apply_tile_cycles(kernel, input, output, panels, columns, slots, ranges);
  });
}

namespace {

double launch_cycles(std::int64_t busiest_bundles) {
  return 6.0 * static_cast<double>(busiest_bundles) + kernel_costs().run_workers;
}

}  // namespace

std::int64_t softmax_variant_worker_bundles(const RowVariant& variant, std::int64_t half_panels,
                                            std::int64_t columns, std::int64_t output_columns,
                                            std::int64_t chunks) {
  return softmax_worker_bundles(cached(variant, &softmax_shape), half_panels, columns, output_columns, chunks);
}

std::vector<SoftmaxShare> softmax_shares(std::int64_t panels, std::int64_t columns, int chunks) {
  TILEC_CHECK(std::find(std::begin(kSoftmaxChunkChoices), std::end(kSoftmaxChunkChoices), chunks) !=
                      std::end(kSoftmaxChunkChoices) &&
                  chunks <= columns,
              "softmax over {} columns split into {} chunks (1, 2, 3 or 6, at most one per column)", columns, chunks);
  const std::int64_t halves = 2 * panels, per_chunk = 6 / chunks;
  std::vector<SoftmaxShare> shares;
  for (int chunk = 0; chunk < chunks; ++chunk)
    for (std::int64_t u = 0; u < per_chunk; ++u) {
      SoftmaxShare share;
      share.chunk = chunk;
      share.first_half = halves * u / per_chunk;
      share.halves = halves * (u + 1) / per_chunk - share.first_half;
      share.first_column = columns * chunk / chunks;
      share.columns = columns * (chunk + 1) / chunks - share.first_column;
      shares.push_back(share);
    }
  return shares;
}

double softmax_launch_cycles(const RowVariant& kernel, std::int64_t panels, std::int64_t columns, int chunks) {
  if (panels == 0 || columns == 0) return 0;
  std::int64_t busiest = 0;
  for (const SoftmaxShare& share : softmax_shares(panels, columns, chunks)) {
    if (kernel.form == SoftmaxForm::FinishStats && share.chunk != 0) continue;
    const std::int64_t bundles =
        kernel.generated()
            ? softmax_variant_worker_bundles(kernel, share.halves, share.columns, share.columns, chunks)
            : row_worker_bundles(RowKernel::Softmax, kernel.input, kernel.output, share.halves, share.columns,
                                 share.columns);
    busiest = std::max(busiest, bundles);
  }
  return launch_cycles(busiest);
}

double softmax_tile_cycles(const RowVariant& variant, std::int64_t panels, std::int64_t columns, int chunks) {
  if (chunks == 1) return softmax_launch_cycles(variant, panels, columns, chunks);
  const bool partial = variant.form == SoftmaxForm::Partial;
  RowVariant max = variant, exp = variant, finish = variant;
  max.form = SoftmaxForm::ChunkMax;
  exp.form = SoftmaxForm::ChunkExp;
  if (!partial) exp.output = ElementType::F32;
  finish.form = partial ? SoftmaxForm::FinishStats : SoftmaxForm::FinishNormalise;
  return softmax_launch_cycles(max, panels, columns, chunks) + softmax_launch_cycles(exp, panels, columns, chunks) +
         softmax_launch_cycles(finish, panels, columns, chunks);
}

int softmax_best_chunks(const RowVariant& variant, std::int64_t panels, std::int64_t columns) {
  int best = 1;
  for (int chunks : kSoftmaxChunkChoices)
    if (chunks <= columns &&
        softmax_tile_cycles(variant, panels, columns, chunks) < softmax_tile_cycles(variant, panels, columns, best))
      best = chunks;
  return best;
}

std::int64_t merge_worker_bundles(const MergeVariant& variant, std::int64_t quads, std::int64_t columns,
                                  std::int64_t partials) {
  return merge_worker_bundles(cached(variant, &merge_shape), quads, columns, partials);
}

namespace {

std::vector<MergeShare> merge_grid(std::int64_t quads, std::int64_t columns, std::int64_t quad_groups,
                                   std::int64_t column_groups) {
  std::vector<MergeShare> shares;
  for (std::int64_t g = 0; g < quad_groups; ++g)
    for (std::int64_t h = 0; h < column_groups; ++h) {
      MergeShare share;
      share.first_quad = quads * g / quad_groups;
      share.quads = quads * (g + 1) / quad_groups - share.first_quad;
      share.first_column = columns * h / column_groups;
      share.columns = columns * (h + 1) / column_groups - share.first_column;
      shares.push_back(share);
    }
  return shares;
}

std::int64_t busiest_merge_worker(const MergeVariant& variant, const std::vector<MergeShare>& shares,
                                  std::int64_t partials) {
  std::int64_t busiest = 0;
  for (const MergeShare& share : shares)
    busiest = std::max(busiest, merge_worker_bundles(variant, share.quads, share.columns, partials));
  return busiest;
}

}  // namespace

std::vector<MergeShare> merge_shares(const MergeVariant& variant, std::int64_t quads, std::int64_t columns,
                                     std::int64_t partials) {
  std::vector<MergeShare> best;
  std::int64_t best_bundles = 0;
  for (std::int64_t quad_groups = 1; quad_groups <= std::min<std::int64_t>(6, quads); ++quad_groups)
    for (std::int64_t column_groups = 1; column_groups <= std::min<std::int64_t>(6 / quad_groups, columns);
         ++column_groups) {
      std::vector<MergeShare> shares = merge_grid(quads, columns, quad_groups, column_groups);
      const std::int64_t bundles = busiest_merge_worker(variant, shares, partials);
      if (best.empty() || bundles < best_bundles) {
        best = std::move(shares);
        best_bundles = bundles;
      }
    }
  return best;
}

double merge_tile_cycles(const MergeVariant& variant, std::int64_t quads, std::int64_t columns,
                         std::int64_t partials) {
  if (quads == 0 || columns == 0) return 0;
  return launch_cycles(busiest_merge_worker(variant, merge_shares(variant, quads, columns, partials), partials));
}


double exchange_cycles(std::int64_t bytes_in, std::int64_t bytes_out, std::int64_t transfers,
                       const MachineModel& machine, std::int64_t patterned) {
  if (bytes_in == 0 && bytes_out == 0) return 0;
  const KernelCosts& costs = kernel_costs();
  double streaming = static_cast<double>(std::max(bytes_in, bytes_out)) / machine.exchange_bytes_per_cycle;
  return streaming + static_cast<double>(transfers) * (2 * costs.supervisor_bundle + costs.transfer_gap) +
         static_cast<double>(patterned) * costs.pattern_bundles * costs.supervisor_bundle + costs.exchange_latency;
}

namespace {

std::int64_t overlap(Range a, Range b) { return std::max<std::int64_t>(0, std::min(a.end, b.end) - std::max(a.begin, b.begin)); }

// For each range of `to`, the ranges of `from` (both ordered) that may
// overlap it: an interval of indices [first, last).
struct Span {
  int first = 0;
  int last = 0;
};
std::vector<Span> overlapping(const std::vector<Range>& from, const std::vector<Range>& to) {
  std::vector<Span> spans(to.size());
  std::size_t first = 0;
  for (std::size_t j = 0; j < to.size(); ++j) {
    while (first < from.size() && from[first].end <= to[j].begin) ++first;
    std::size_t last = first;
    while (last < from.size() && from[last].begin < to[j].end) ++last;
    spans[j] = Span{static_cast<int>(first), static_cast<int>(last)};
  }
  return spans;
}

}  // namespace

RearrangeCost rearrange_cost(const Layout& from, const Layout& to) {
  RearrangeCost cost;
  int tiles = 0;
  for (int tile : from.tile_list) tiles = std::max(tiles, tile + 1);
  for (int tile : to.tile_list) tiles = std::max(tiles, tile + 1);
  // Per tile: the source block it holds (at most one), and what it sends.
  thread_local std::vector<int> held;
  thread_local std::vector<std::int64_t> sent, sends, strided_sends;
  thread_local std::vector<int> holding;
  held.assign(static_cast<std::size_t>(tiles), -1);
  sent.assign(static_cast<std::size_t>(tiles), 0);
  sends.assign(static_cast<std::size_t>(tiles), 0);
  strided_sends.assign(static_cast<std::size_t>(tiles), 0);
  holding.assign(static_cast<std::size_t>(from.blocks()), 0);
  for (int block = 0; block < from.blocks(); ++block)
    for (int tile : from.block_tiles(block)) held[static_cast<std::size_t>(tile)] = block;
  const std::vector<Span> row_spans = overlapping(from.rows, to.rows);
  const std::vector<Span> col_spans = overlapping(from.cols, to.cols);
  const int from_cols = from.col_parts();
  for (int r = 0; r < to.row_parts(); ++r)
    for (int c = 0; c < to.col_parts(); ++c) {
      const std::span<const int> wanting = to.tiles_of(r, c);
      const Range want_rows = to.rows[static_cast<std::size_t>(r)], want_cols = to.cols[static_cast<std::size_t>(c)];
      const std::int64_t area = want_rows.size() * want_cols.size();
      if (area == 0) continue;
      bool incoming_anywhere = false;
      for (int tile : wanting) {
        const int block = held[static_cast<std::size_t>(tile)];
        std::int64_t local = 0;
        if (block >= 0) {
          ++holding[static_cast<std::size_t>(block)];
          local = overlap(from.rows[static_cast<std::size_t>(block / from_cols)], want_rows) *
                  overlap(from.cols[static_cast<std::size_t>(block % from_cols)], want_cols);
        }
        cost.elements_in = std::max(cost.elements_in, area - local);
        incoming_anywhere |= area > local;
      }
      // Each source block overlapping this one is a transfer (block_move),
      // sent unless every wanting tile holds it already.
      const Span& row_span = row_spans[static_cast<std::size_t>(r)];
      const Span& col_span = col_spans[static_cast<std::size_t>(c)];
      std::int64_t pieces = 0, strided_landings = 0;
      for (int hr = row_span.first; hr < row_span.last; ++hr) {
        const Range have_rows = from.rows[static_cast<std::size_t>(hr)];
        const Range moved{std::max(want_rows.begin, have_rows.begin), std::min(want_rows.end, have_rows.end)};
        if (moved.size() <= 0) continue;
        for (int hc = col_span.first; hc < col_span.last; ++hc) {
          const std::int64_t cols = overlap(from.cols[static_cast<std::size_t>(hc)], want_cols);
          if (cols == 0) continue;
          const int block = hr * from_cols + hc;
          const BlockMove move = block_move(from, block, to, r * to.col_parts() + c, moved, cols);
          ++pieces;
          strided_landings += move.destination_strided;
          if (holding[static_cast<std::size_t>(block)] == static_cast<int>(wanting.size())) continue;
          const std::size_t sender = static_cast<std::size_t>(from.block_tiles(block).front());
          sent[sender] += moved.size() * cols;
          sends[sender] += 1;
          strided_sends[sender] += move.source_strided;
        }
      }
      if (incoming_anywhere) {
        cost.transfers = std::max(cost.transfers, pieces);
        cost.patterned = std::max(cost.patterned, strided_landings);
      }
      for (int tile : wanting)
        if (held[static_cast<std::size_t>(tile)] >= 0) --holding[static_cast<std::size_t>(held[static_cast<std::size_t>(tile)])];
    }
  for (std::size_t tile = 0; tile < sent.size(); ++tile) {
    cost.elements_out = std::max(cost.elements_out, sent[tile]);
    cost.transfers = std::max(cost.transfers, sends[tile]);
    cost.patterned = std::max(cost.patterned, strided_sends[tile]);
  }
  return cost;
}

}  // namespace tilec::compiler
