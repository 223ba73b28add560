#include "compiler/gemm_candidates.h"

#include "compiler/cost_model.h"
#include "compiler/kernel_library.h"
#include "support/span.h"

#include <algorithm>
#include <set>

namespace tilec::compiler {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Whether the value of `activation` is later cast to FP8 on a path of
// steps other than GEMMs: by a step's epilogue, or, when it is a repeat's
// carried value at the body's end, by the next iteration's steps.
bool quantised_to_fp8_later(const Chain& chain, int activation, std::vector<bool>& seen) {
  if (seen[static_cast<std::size_t>(activation)]) return false;
  seen[static_cast<std::size_t>(activation)] = true;
  if (is_fp8(chain.activations[static_cast<std::size_t>(activation)].storage.element)) return true;
  if (chain.repeat)
    for (const auto& [start, end] : chain.repeat->carried)
      if (end == activation && quantised_to_fp8_later(chain, start, seen)) return true;
  for (int view = 0; view < static_cast<int>(chain.activations.size()); ++view)
    if (chain.activations[static_cast<std::size_t>(view)].view_of == activation &&
        quantised_to_fp8_later(chain, view, seen))
      return true;
  // Through elementwise steps, and through layernorm, softmax and
  // attention (which keep a last-bit difference last-bit): a GEMM's sum
  // spreads it less than an FP8 rounding.
  for (const Step& consumer : chain.steps) {
    if (consumer.kind == StepKind::Gemm) continue;
    if (consumer.input != activation && consumer.second_input != activation && consumer.third_input != activation)
      continue;
    if (is_fp8(consumer.result.element)) return true;
    for (const EpilogueOp& op : consumer.epilogue)
      if (is_fp8(op.result.element)) return true;
    if (quantised_to_fp8_later(chain, consumer.output, seen)) return true;
  }
  return false;
}

// Partial sums are summed in FP32 and rounded once to the GEMM's result
// type. They travel as FP16 (half the exchange, one more rounding of each
// partial) when the result is FP16, one pass sums them all (a chain of
// passes rounds its running sums to FP16), the step is not in a repeat
// body (where each iteration's error feeds the next) and nothing quantises
// the result further (an FP8 cast, here or in a later elementwise step,
// would turn their rounding into coarse flips); otherwise as FP32. Where
// no plan fits so, FP16 whenever the result is FP16.
ElementType partial_type_for(const Chain& chain, int step_index, int k_parts, bool fp16_anywhere) {
  const Step& step = chain.steps[static_cast<std::size_t>(step_index)];
  if (step.result.element != ElementType::F16) return ElementType::F32;
  if (fp16_anywhere) return ElementType::F16;
  if (k_parts > kMaxCombineInputs) return ElementType::F32;
  if (chain.repeat && step_index >= chain.repeat->first_step && step_index <= chain.repeat->last_step)
    return ElementType::F32;
  for (const EpilogueOp& op : step.epilogue)
    if (is_fp8(op.result.element)) return ElementType::F32;
  std::vector<bool> seen(chain.activations.size(), false);
  if (quantised_to_fp8_later(chain, step.output, seen)) return ElementType::F32;
  return ElementType::F16;
}

// K-part counts worth trying, each with as many column parts as the group
// and the columns allow.
constexpr int kMaxKParts = 32;
std::vector<int> k_part_counts(int group_size, std::int64_t k_units, int most) {
  std::vector<int> counts;
  for (int k_parts = 1; k_parts <= group_size && k_parts <= k_units && k_parts <= most; ++k_parts)
    counts.push_back(k_parts);
  return counts;
}

// K parts come in whole 16-row blocks of the weights, unless rounding to
// them would add more than 2% to the largest part (weights stay resident:
// on a full chip every byte of them counts).
std::int64_t k_unit(std::int64_t k, int k_parts) {
  const std::int64_t exact = ceil_div(k, k_parts);
  return ceil_div(exact, kPanelRows) * kPanelRows * 50 > exact * 51 ? 1 : kPanelRows;
}

GemmCandidate make_candidate(const Chain& chain, int step_index, int row_parts, int column_parts, int k_parts,
                             bool weights_moved, std::int64_t iterations, bool fp16_partials_anywhere) {
  const Step& step = chain.steps[static_cast<std::size_t>(step_index)];
  const Weight& weight = chain.weights[static_cast<std::size_t>(step.weight)];
  std::int64_t k = step.transpose_weight ? weight.shape[1] : weight.shape[0];
  std::int64_t n = step.transpose_weight ? weight.shape[0] : weight.shape[1];
  GemmCandidate candidate;
  candidate.row_parts = row_parts;
  candidate.column_parts = column_parts;
  candidate.k_parts = k_parts;
  candidate.weights_moved = weights_moved;
  candidate.columns = balanced_split(n, column_parts, kPanelRows);
  candidate.ks = balanced_split(k, k_parts, k_unit(k, k_parts));
  candidate.partial_type = partial_type_for(chain, step_index, k_parts, fp16_partials_anywhere);
  candidate.max_columns = candidate.columns.front().size();
  candidate.max_ks = candidate.ks.front().size();
  // Moved weights: a tile stores its piece, at most ceil(blocks / Pm) blocks.
  const std::int64_t blocks = ceil_div(candidate.max_columns, kPanelRows);
  const std::int64_t stored = weights_moved ? ceil_div(blocks, row_parts) : blocks;
  candidate.weight_bytes = stored * kPanelRows * candidate.max_ks * element_bytes(weight.storage.element) *
                           (weight.per_iteration ? iterations : 1);
  return candidate;
}

}  // namespace

std::vector<int> candidate_group_sizes(const Chain& chain, const CompileOptions& options) {
  const int tiles = static_cast<int>(options.machine.tiles);
  const std::int64_t units = ceil_div(ceil_div(chain.device_rows(), kPanelRows), row_unit_panels(chain));
  std::set<int> sizes;
  // One size per distinct number of row units a group must handle.
  std::int64_t previous = -1;
  for (int groups = 1; groups <= tiles && groups <= units; ++groups) {
    std::int64_t per_group = ceil_div(units, groups);
    if (per_group == previous) continue;
    previous = per_group;
    sizes.insert(tiles / groups);
  }
  if (options.groups) {
    int groups = std::clamp(*options.groups, 1, tiles);
    return {tiles / groups};
  }
  return {sizes.rbegin(), sizes.rend()};
}

GemmCandidates gemm_candidates(const Chain& chain, const std::vector<int>& group_sizes,
                               const CompileOptions& options) {
  GemmCandidates result;
  std::int64_t iterations = chain.repeat ? chain.repeat->count : 1;
  for (int index = 0; index < static_cast<int>(chain.steps.size()); ++index) {
    const Step& step = chain.steps[index];
    if (step.kind != StepKind::Gemm) continue;
    const Weight& weight = chain.weights[step.weight];
    std::int64_t k = step.transpose_weight ? weight.shape[1] : weight.shape[0];
    std::int64_t n = step.transpose_weight ? weight.shape[0] : weight.shape[1];
    for (int group_size : group_sizes) {
      std::vector<GemmCandidate>& list = result.by_step[index][group_size];
      for (int row_parts : kRowPartCounts) {
        if (row_parts > group_size) break;
        if (options.row_parts && row_parts != *options.row_parts) continue;
        for (int k_parts : k_part_counts(group_size / row_parts, ceil_div(k, kPanelRows),
                                         options.max_k_parts.value_or(kMaxKParts))) {
          int column_parts =
              static_cast<int>(std::min<std::int64_t>(group_size / (row_parts * k_parts), ceil_div(n, kPanelRows)));
          // Row parts with replicated weights are what groups give; split
          // rows here store each weight once and gather it.
          list.push_back(make_candidate(chain, index, row_parts, column_parts, k_parts, row_parts > 1, iterations,
                                        options.fp16_partials_anywhere));
        }
      }
    }
  }
  return result;
}

std::vector<Range> row_split(std::int64_t chunk_panels, int parts) {
  std::vector<Range> rows = balanced_split(chunk_panels, parts, 1);
  for (Range& range : rows) range = Range{range.begin * kPanelRows, range.end * kPanelRows};
  return rows;
}

std::int64_t largest_part_panels(const std::vector<Range>& rows) {
  std::int64_t most = 0;
  for (const Range& range : rows) most = std::max(most, range.size());
  return ceil_div(most, kPanelRows);
}

GemmGrid gemm_grid(const GemmCandidate& candidate, std::int64_t chunk_panels) {
  GemmGrid grid;
  grid.row_parts = candidate.row_parts;
  grid.column_parts = candidate.column_parts;
  grid.k_parts = candidate.k_parts;
  grid.weights_moved = candidate.weights_moved;
  grid.rows = row_split(chunk_panels, candidate.row_parts);
  grid.columns = candidate.columns;
  grid.ks = candidate.ks;
  grid.piece_panels = largest_part_panels(grid.rows);
  return grid;
}

Layout gemm_input_layout(const GemmGrid& grid) {
  Layout layout;
  layout.rows = grid.rows;
  layout.cols = grid.ks;
  layout.piece_panels = grid.piece_panels;
  for (int m = 0; m < grid.row_parts; ++m)
    for (int k = 0; k < grid.k_parts; ++k) {
      std::vector<int> tiles;
      for (int n = 0; n < grid.column_parts; ++n) tiles.push_back(grid.tile(m, n, k));
      layout.add_block(tiles);
    }
  return layout;
}

Layout gemm_partial_layout(const GemmGrid& grid) {
  Layout layout;
  layout.rows = grid.rows;
  layout.cols = grid.columns;
  layout.piece_panels = grid.piece_panels;
  for (int m = 0; m < grid.row_parts; ++m)
    for (int n = 0; n < grid.column_parts; ++n) {
      std::vector<int> tiles;
      for (int k = 0; k < grid.k_parts; ++k) tiles.push_back(grid.tile(m, n, k));
      layout.add_block(tiles);
    }
  return layout;
}

Layout gemm_output_layout(const GemmGrid& grid) {
  Layout layout;
  layout.rows = grid.rows;
  layout.piece_panels = grid.piece_panels;
  for (int n = 0; n < grid.column_parts; ++n) {
    const Range columns = grid.columns[static_cast<std::size_t>(n)];
    for (const Range& share : balanced_split(columns.size(), grid.k_parts, 1))
      layout.cols.push_back(Range{columns.begin + share.begin, columns.begin + share.end});
  }
  for (int m = 0; m < grid.row_parts; ++m)
    for (int n = 0; n < grid.column_parts; ++n)
      for (int k = 0; k < grid.k_parts; ++k) layout.add_block({grid.tile(m, n, k)});
  return layout;
}

Layout stored_once(const Layout& layout, int spread) {
  // Every row part splits each column part the same way, so the result is
  // still a grid: a piece per (column part, replica) up to `spread`.
  Layout once;
  once.rows = layout.rows;
  once.piece_panels = layout.piece_panels;
  std::vector<int> pieces_of_part;
  for (int c = 0; c < layout.col_parts(); ++c) {
    int replicas = INT32_MAX;
    for (int r = 0; r < layout.row_parts(); ++r)
      replicas = std::min(replicas, static_cast<int>(layout.tiles_of(r, c).size()));
    const Range range = layout.cols[static_cast<std::size_t>(c)];
    const int pieces = std::max(1, std::min<int>(spread, replicas));
    int kept = 0;
    for (const Range& share : balanced_split(range.size(), pieces, 1))
      if (share.size() > 0) {
        once.cols.push_back(Range{range.begin + share.begin, range.begin + share.end});
        ++kept;
      }
    pieces_of_part.push_back(kept);
  }
  for (int r = 0; r < layout.row_parts(); ++r)
    for (int c = 0; c < layout.col_parts(); ++c)
      for (int piece = 0; piece < pieces_of_part[static_cast<std::size_t>(c)]; ++piece)
        once.add_block({layout.tiles_of(r, c)[static_cast<std::size_t>(piece)]});
  return once;
}

Layout spread_layout(std::int64_t chunk_panels, std::int64_t cols, int group_size) {
  Layout layout;
  for (const Range& part : balanced_split(cols, group_size, kPanelRows))
    if (part.size()) layout.cols.push_back(part);
  // Tiles the column parts leave free take row parts, so no tile holds
  // every row of a narrow input.
  const int row_parts = static_cast<int>(
      std::clamp<std::int64_t>(group_size / static_cast<int>(layout.cols.size()), 1, chunk_panels));
  layout.rows = row_split(chunk_panels, row_parts);
  layout.piece_panels = largest_part_panels(layout.rows);
  for (int r = 0; r < layout.row_parts(); ++r)
    for (int c = 0; c < layout.col_parts(); ++c) layout.add_block({r * layout.col_parts() + c});
  return layout;
}

}  // namespace tilec::compiler
