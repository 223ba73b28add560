#include "compiler/row_candidates.h"

#include "compiler/gemm_candidates.h"

#include <fmt/format.h>

#include <algorithm>

namespace tilec::compiler {

std::string RowCandidate::text() const {
  return fmt::format("{}x{}{}", row_parts, col_parts, split ? " split" : "");
}

std::vector<RowCandidate> row_candidates(std::int64_t cols, int group_size) {
  std::vector<RowCandidate> candidates;
  for (int row_parts = 1; row_parts <= kMaxRowParts; ++row_parts) {
    if (row_parts > group_size) break;
    const bool listed =
        std::find(std::begin(kRowPartCounts), std::end(kRowPartCounts), row_parts) != std::end(kRowPartCounts);
    for (int col_parts = 1; col_parts <= group_size / row_parts && col_parts <= cols; col_parts *= 2) {
      if (!listed && row_parts * col_parts != group_size) continue;
      candidates.push_back(RowCandidate{row_parts, col_parts, false});
      if (col_parts > 1) candidates.push_back(RowCandidate{row_parts, col_parts, true});
    }
  }
  return candidates;
}

namespace {

Layout row_layout(const RowCandidate& candidate, std::int64_t chunk_panels, std::int64_t cols, bool whole_columns) {
  Layout layout;
  layout.rows = row_split(chunk_panels, candidate.row_parts);
  layout.piece_panels = largest_part_panels(layout.rows);
  layout.cols = whole_columns ? std::vector<Range>{Range{0, cols}} : balanced_split(cols, candidate.col_parts, 1);
  for (int r = 0; r < candidate.row_parts; ++r) {
    if (whole_columns) {
      std::vector<int> tiles;
      for (int c = 0; c < candidate.col_parts; ++c) tiles.push_back(r * candidate.col_parts + c);
      layout.add_block(tiles);
      continue;
    }
    for (int c = 0; c < candidate.col_parts; ++c) layout.add_block({r * candidate.col_parts + c});
  }
  return layout;
}

}  // namespace

Layout row_input_layout(const RowCandidate& candidate, std::int64_t chunk_panels, std::int64_t cols) {
  return row_layout(candidate, chunk_panels, cols, !candidate.split);
}

Layout row_output_layout(const RowCandidate& candidate, std::int64_t chunk_panels, std::int64_t cols) {
  return row_layout(candidate, chunk_panels, cols, false);
}

bool gathers_pairs(int row_parts, bool per_iteration) { return per_iteration && row_parts > 1; }

std::vector<Range> pair_pieces(std::int64_t columns, int row_parts) {
  const int pieces = static_cast<int>(std::min<std::int64_t>({row_parts, columns, kPairPieces}));
  return balanced_split(columns, std::max(pieces, 1), 1);
}

SplitRowPlan split_row_plan(RowKernel kernel, ElementType input, ElementType output, std::int64_t panels,
                            std::int64_t columns, int col_parts) {
  SplitRowPlan plan;
  plan.ranges = fastest_row_stats_ranges(kernel, input, panels, columns);
  plan.cycles = row_stats_tile_cycles(kernel, input, panels, columns, plan.ranges);
  if (plan.ranges > 1) plan.cycles += row_merge_tile_cycles(kernel, panels, plan.ranges);
  const int direct_ranges = fastest_row_apply_ranges(kernel, input, output, panels, columns, col_parts);
  const double direct = row_apply_tile_cycles(kernel, input, output, panels, columns, col_parts, direct_ranges);
  const int one_ranges = fastest_row_apply_ranges(kernel, input, output, panels, columns, 1);
  const double merged = row_merge_tile_cycles(kernel, panels, col_parts) +
                        row_apply_tile_cycles(kernel, input, output, panels, columns, 1, one_ranges);
  plan.merge_received = merged < direct;
  plan.apply_ranges = plan.merge_received ? one_ranges : direct_ranges;
  plan.cycles += std::min(direct, merged);
  return plan;
}

}  // namespace tilec::compiler
