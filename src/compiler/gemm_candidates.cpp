#include "compiler/gemm_candidates.h"

#include "compiler/cost_model.h"
#include "compiler/kernel_library.h"
#include "support/span.h"

#include <algorithm>
#include <set>

namespace tilec::compiler {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Whether the value of `activation` is later cast to FP8 on an elementwise
// path: by a map step's epilogue, or, when it is a repeat's carried value at
// the body's end, by the next iteration's steps.
bool quantised_to_fp8_later(const Chain& chain, int activation, std::vector<bool>& seen) {
  if (seen[static_cast<std::size_t>(activation)]) return false;
  seen[static_cast<std::size_t>(activation)] = true;
  if (is_fp8(chain.activations[static_cast<std::size_t>(activation)].storage.element)) return true;
  if (chain.repeat)
    for (const auto& [start, end] : chain.repeat->carried)
      if (end == activation && quantised_to_fp8_later(chain, start, seen)) return true;
  for (const Step& consumer : chain.steps) {
    if (consumer.kind != StepKind::Map) continue;
    if (consumer.input != activation && consumer.second_input != activation) continue;
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
// passes would round its intermediate sums to FP16), the step is not in a
// repeat body (where each iteration's error feeds the next) and nothing
// quantises the result further (an FP8 cast, here or in a later
// elementwise step, would turn their rounding into coarse flips);
// otherwise as FP32.
ElementType partial_type_for(const Chain& chain, int step_index, int k_parts) {
  const Step& step = chain.steps[static_cast<std::size_t>(step_index)];
  if (step.result.element != ElementType::F16 || k_parts > kMaxCombineInputs) return ElementType::F32;
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

GemmCandidate make_candidate(const Chain& chain, int step_index, int column_parts, int k_parts,
                             std::int64_t iterations) {
  const Step& step = chain.steps[static_cast<std::size_t>(step_index)];
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
    // Each K part reduces an even share of the column part (whole columns:
    // the reduction works column by column).
    std::vector<Range> shares = balanced_split(columns.size(), k_parts, 1);
    for (int kp = 0; kp < k_parts; ++kp) {
      candidate.output_layout.parts.push_back(
          Range{columns.begin + shares[kp].begin, columns.begin + shares[kp].end});
      candidate.output_layout.tiles.push_back({grid.tile(np, kp)});
    }
  }
  candidate.partial_type = partial_type_for(chain, step_index, k_parts);
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
  const std::int64_t units = ceil_div(ceil_div(chain.rows, kPanelRows), row_unit_panels(chain));
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
      for (int k_parts : k_part_counts(group_size, ceil_div(k, kPanelRows), options.max_k_parts.value_or(kMaxKParts))) {
        int column_parts = static_cast<int>(std::min<std::int64_t>(group_size / k_parts, ceil_div(n, kPanelRows)));
        list.push_back(make_candidate(chain, index, column_parts, k_parts, iterations));
      }
    }
  }
  return result;
}

ColumnLayout stored_once(const ColumnLayout& layout, int spread) {
  ColumnLayout once;
  for (std::size_t part = 0; part < layout.parts.size(); ++part) {
    const Range range = layout.parts[part];
    const std::vector<int>& tiles = layout.tiles[part];
    int pieces = std::max(1, std::min<int>(spread, static_cast<int>(tiles.size())));
    std::vector<Range> shares = balanced_split(range.size(), pieces, 1);
    for (int piece = 0; piece < pieces; ++piece) {
      if (shares[static_cast<std::size_t>(piece)].size() == 0) continue;
      once.parts.push_back(Range{range.begin + shares[static_cast<std::size_t>(piece)].begin,
                                 range.begin + shares[static_cast<std::size_t>(piece)].end});
      once.tiles.push_back({tiles[static_cast<std::size_t>(piece)]});
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

ColumnLayout whole_on_tiles(std::int64_t cols, int parts) {
  ColumnLayout layout;
  layout.parts.push_back(Range{0, cols});
  layout.tiles.emplace_back();
  for (int tile = 0; tile < parts; ++tile) layout.tiles.back().push_back(tile);
  return layout;
}

ColumnLayout split_over_tiles(std::int64_t cols, int parts, std::int64_t unit) {
  ColumnLayout layout;
  const std::vector<Range> shares = balanced_split(cols, parts, unit);
  for (int tile = 0; tile < parts; ++tile) {
    layout.parts.push_back(shares[static_cast<std::size_t>(tile)]);
    layout.tiles.push_back({tile});
  }
  return layout;
}

AttentionLayouts attention_layouts(const Chain& chain, const Step& step, int parts) {
  const std::int64_t d = chain.activations[static_cast<std::size_t>(step.input)].cols;
  const std::int64_t e = chain.activations[static_cast<std::size_t>(step.output)].cols;
  const std::int64_t heads = step.attention_heads;
  if (heads == 1)
    return {whole_on_tiles(d, parts), whole_on_tiles(d, parts), split_over_tiles(e, parts),
            split_over_tiles(e, parts)};
  if (parts <= heads)
    return {split_over_tiles(d, parts, d / heads), split_over_tiles(d, parts, d / heads),
            split_over_tiles(e, parts, e / heads), split_over_tiles(e, parts, e / heads)};
  // `per_head` tiles a head: each holds the head's q and k columns and a
  // share of its v and output columns.
  const int per_head = parts / static_cast<int>(heads);
  AttentionLayouts layouts;
  for (std::int64_t head = 0; head < heads; ++head) {
    const int first_tile = static_cast<int>(head) * per_head;
    ColumnLayout head_tiles = whole_on_tiles(d / heads, per_head);
    for (int& tile : head_tiles.tiles.front()) tile += first_tile;
    for (ColumnLayout* qk : {&layouts.q, &layouts.k}) {
      qk->parts.push_back(Range{head * (d / heads), (head + 1) * (d / heads)});
      qk->tiles.push_back(head_tiles.tiles.front());
    }
    const std::vector<Range> shares = balanced_split(e / heads, per_head, 1);
    for (int i = 0; i < per_head; ++i)
      for (ColumnLayout* vo : {&layouts.v, &layouts.output}) {
        vo->parts.push_back(Range{head * (e / heads) + shares[static_cast<std::size_t>(i)].begin,
                                  head * (e / heads) + shares[static_cast<std::size_t>(i)].end});
        vo->tiles.push_back({first_tile + i});
      }
  }
  return layouts;
}

std::vector<int> attention_part_counts(const Chain& chain, const Step& step, int group_size) {
  const std::int64_t heads = step.attention_heads;
  const std::int64_t cols = chain.activations[static_cast<std::size_t>(step.output)].cols;
  std::vector<int> counts;
  for (int parts : spread_counts(cols, group_size))
    if (heads == 1 || parts <= heads || parts % heads == 0) counts.push_back(parts);
  return counts;
}

std::vector<int> spread_counts(std::int64_t output_cols, int group_size) {
  std::vector<int> counts;
  for (int parts = 1; parts <= group_size && parts <= output_cols; parts *= 2) counts.push_back(parts);
  return counts;
}

}  // namespace tilec::compiler
