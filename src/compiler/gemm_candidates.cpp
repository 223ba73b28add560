#include "compiler/gemm_candidates.h"

#include "compiler/cost_model.h"
#include "support/span.h"

#include <algorithm>
#include <set>

namespace tilec::compiler {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Partial sums are FP32: summed across K parts and rounded once to the
// GEMM's result type, as the host reference rounds its FP32 sum.
ElementType partial_type_for(const Step&) { return ElementType::F32; }

// K-part counts worth trying for a group of `group_size` tiles: every count
// whose column-part count floor(G / Pk) differs from the previous one.
std::vector<int> k_part_counts(int group_size, std::int64_t k_units, std::int64_t n_units) {
  std::vector<int> counts;
  int previous_columns = -1;
  for (int k_parts = 1; k_parts <= group_size && k_parts <= k_units; ++k_parts) {
    int column_parts = static_cast<int>(std::min<std::int64_t>(group_size / k_parts, n_units));
    if (column_parts == previous_columns) continue;
    previous_columns = column_parts;
    counts.push_back(k_parts);
    if (counts.size() >= 48) break;
  }
  return counts;
}

GemmCandidate make_candidate(const Chain& chain, const Step& step, int column_parts, int k_parts,
                             std::int64_t iterations) {
  const Weight& weight = chain.weights[step.weight];
  std::int64_t k = step.transpose_weight ? weight.shape[1] : weight.shape[0];
  std::int64_t n = step.transpose_weight ? weight.shape[0] : weight.shape[1];
  GemmCandidate candidate;
  GemmGrid& grid = candidate.grid;
  grid.column_parts = column_parts;
  grid.k_parts = k_parts;
  grid.columns = balanced_split(n, column_parts, kPanelRows);
  grid.ks = balanced_split(k, k_parts, kPanelRows);
  for (int kp = 0; kp < k_parts; ++kp) {
    candidate.input_layout.parts.push_back(grid.ks[kp]);
    std::vector<int> tiles;
    for (int np = 0; np < column_parts; ++np) tiles.push_back(grid.tile(np, kp));
    candidate.input_layout.tiles.push_back(std::move(tiles));
  }
  for (int np = 0; np < column_parts; ++np) {
    Range columns = grid.columns[np];
    std::vector<Range> shares = balanced_split(columns.size(), k_parts, kPanelRows);
    for (int kp = 0; kp < k_parts; ++kp) {
      candidate.output_layout.parts.push_back(
          Range{columns.begin + shares[kp].begin, columns.begin + shares[kp].end});
      candidate.output_layout.tiles.push_back({grid.tile(np, kp)});
    }
  }
  candidate.partial_type = partial_type_for(step);
  candidate.max_columns = grid.columns.front().size();
  candidate.max_ks = grid.ks.front().size();
  std::int64_t panel_columns = ceil_div(candidate.max_columns, kPanelRows) * kPanelRows;
  candidate.weight_bytes = panel_columns * candidate.max_ks * element_bytes(weight.storage.element) *
                           (weight.per_iteration ? iterations : 1);
  return candidate;
}

}  // namespace

std::vector<int> candidate_group_sizes(const Chain& chain, const CompileOptions& options) {
  const int tiles = static_cast<int>(options.machine.tiles);
  std::int64_t panels = ceil_div(chain.rows, kPanelRows);
  std::set<int> sizes;
  // One size per distinct number of panels a group must handle.
  std::int64_t previous = -1;
  for (int groups = 1; groups <= tiles && groups <= panels; ++groups) {
    std::int64_t per_group = ceil_div(panels, groups);
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
      for (int k_parts : k_part_counts(group_size, ceil_div(k, kPanelRows), ceil_div(n, kPanelRows))) {
        int column_parts = static_cast<int>(std::min<std::int64_t>(group_size / k_parts, ceil_div(n, kPanelRows)));
        list.push_back(make_candidate(chain, step, column_parts, k_parts, iterations));
      }
    }
  }
  (void)options;
  return result;
}

ColumnLayout stored_once(const ColumnLayout& layout, std::int64_t unit) {
  ColumnLayout once;
  for (std::size_t part = 0; part < layout.parts.size(); ++part) {
    const Range range = layout.parts[part];
    const std::vector<int>& tiles = layout.tiles[part];
    std::vector<Range> shares = balanced_split(range.size(), static_cast<int>(tiles.size()), unit);
    for (std::size_t replica = 0; replica < tiles.size(); ++replica) {
      if (shares[replica].size() == 0) continue;
      once.parts.push_back(Range{range.begin + shares[replica].begin, range.begin + shares[replica].end});
      once.tiles.push_back({tiles[replica]});
    }
  }
  return once;
}

ColumnLayout whole_rows_layout(std::int64_t cols) {
  ColumnLayout layout;
  layout.parts.push_back(Range{0, cols});
  layout.tiles.push_back({0});
  return layout;
}

}  // namespace tilec::compiler
