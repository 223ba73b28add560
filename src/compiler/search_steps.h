// The plan search's pieces (plan_search.cpp runs the program): the
// layouts it has seen, its labels, and what each step of the chain adds
// to a label (search_steps.cpp).
#pragma once

#include "compiler/attention_candidates.h"
#include "compiler/construct_mid.h"
#include "compiler/cost_model.h"
#include "compiler/row_candidates.h"

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <unordered_map>
#include <vector>

namespace tilec::compiler::search {

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
inline std::int64_t round_up(std::int64_t a, std::int64_t b) { return ceil_div(a, b) * b; }

// Layouts seen by the search, deduplicated so that states compare by id,
// with the rearrange costs between them remembered. Every layout also has
// the id of its form with each row part one panel high: moving between two
// layouts of the same row parts costs in proportion to the panels of a
// part (every row part has the same columns and tiles pattern), so layouts
// that differ only in their panels share one computation.
class LayoutTable {
 public:
  int id(const Layout& layout) {
    std::uint64_t key = hash(layout);
    for (int candidate : by_hash_[key])
      if (layouts_[static_cast<std::size_t>(candidate)] == layout) return candidate;
    int columns_only = -1;
    if (layout.piece_panels != 1) {
      Layout one_panel = layout;
      for (int part = 0; part < layout.row_parts(); ++part)
        one_panel.rows[static_cast<std::size_t>(part)] = Range{part * kPanelRows, (part + 1) * kPanelRows};
      one_panel.piece_panels = 1;
      columns_only = id(one_panel);
    }
    layouts_.push_back(layout);
    widest_.push_back(layout.widest());
    columns_only_.push_back(columns_only);
    int id = static_cast<int>(layouts_.size()) - 1;
    by_hash_[key].push_back(id);
    return id;
  }
  const Layout& at(int id) const { return layouts_[static_cast<std::size_t>(id)]; }
  // The most columns any tile holds.
  std::int64_t widest(int id) const { return widest_[static_cast<std::size_t>(id)]; }
  // Elements of the largest piece a tile holds.
  std::int64_t piece_elements(int id) const {
    return widest(id) * at(id).piece_panels * kPanelRows;
  }

  RearrangeCost cost(int from, int to) {
    const std::int64_t panels = at(from).piece_panels;
    const int from_columns = columns_only_[static_cast<std::size_t>(from)];
    const int to_columns = columns_only_[static_cast<std::size_t>(to)];
    if (from_columns >= 0 && to_columns >= 0 && at(from).rows == at(to).rows) {
      RearrangeCost scaled = cached(from_columns, to_columns);
      scaled.elements_in *= panels;
      scaled.elements_out *= panels;
      return scaled;
    }
    return cached(from, to);
  }

 private:
  static std::uint64_t hash(const Layout& layout) {
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(static_cast<std::uint64_t>(layout.piece_panels));
    for (const std::vector<Range>* ranges : {&layout.rows, &layout.cols})
      for (const Range& range : *ranges) {
        mix(static_cast<std::uint64_t>(range.begin));
        mix(static_cast<std::uint64_t>(range.end));
      }
    for (int tile : layout.tile_list) mix(static_cast<std::uint64_t>(tile));
    for (int end : layout.block_end) mix(static_cast<std::uint64_t>(end));
    return h;
  }

  const RearrangeCost& cached(int from, int to) {
    const std::uint64_t key = static_cast<std::uint64_t>(static_cast<std::uint32_t>(from)) << 32 |
                              static_cast<std::uint32_t>(to);
    auto it = costs_.find(key);
    if (it == costs_.end()) it = costs_.emplace(key, rearrange_cost(at(from), at(to))).first;
    return it->second;
  }

  std::vector<Layout> layouts_;
  std::vector<std::int64_t> widest_;
  std::vector<int> columns_only_;
  std::unordered_map<std::uint64_t, std::vector<int>> by_hash_;
  std::unordered_map<std::uint64_t, RearrangeCost> costs_;  // by (from << 32 | to)
};

struct Label {
  double cycles = 0;  // per chunk
  int exchanges = 0;  // exchange phases per chunk
  bool leading_exchange = false;  // the first phase is an exchange: the run starts with it, no sync before
  std::int64_t weight_bytes = 0;
  std::int64_t record_bytes = 0;  // of weight_bytes, those of every repeat iteration
  std::int64_t moved_record_bytes = 0;  // of record_bytes, moved weights' pieces
  std::int64_t activation_peak = 0;
  std::int64_t supervisor_bundles = 0;
  int input_spread = 1;
  std::int64_t input_bytes = 0;     // the host input's records on the busiest tile
  std::int64_t output_elements = 0;  // the output's largest piece on a tile
  std::vector<int> choice;
  // Where each activation computed (or bound) so far is: a layout id, or
  // -1. Steps read their inputs from there.
  std::vector<int> layout_of;

  // Weights and the host input's per-chunk records stay for the whole run.
  bool dominates(const Label& other) const {
    return cycles <= other.cycles && weight_bytes + input_bytes <= other.weight_bytes + other.input_bytes &&
           activation_peak <= other.activation_peak;
  }
};

void add_weight_bytes(Label& label, std::int64_t bytes, bool per_iteration);

// A candidate's layouts as ids of the search's table.
struct CandidateLayouts {
  bool considered = false;  // kept for this chunk size (see keep_candidates)
  int input = -1;
  int output = -1;
  std::vector<int> stored_once;  // the input bound from the host, per spread (kInputSpreads)
};

// The layouts (ids) an attention candidate reads and writes.
struct AttentionLayoutIds {
  int q = -1, k = -1, v = -1, output = -1;
};

// What a row or attention step adds to a label whatever layout its inputs
// come from (its kernels, its own exchanges, its memory), worked out once
// per candidate and chunk size: labels differ only in their rearranges.
struct StepCosts {
  // (step, row parts, column parts, split) -> (the layout read, the cost)
  std::map<std::array<int, 4>, std::pair<int, Label>> rows;
  // (step, head parts, query parts, key parts) -> the cost
  std::map<std::array<int, 4>, Label> attention;
};

struct SearchContext {
  LayoutTable& layouts;
  std::map<int, std::vector<CandidateLayouts>>& candidate_layouts;
  // Per layernorm or softmax step: its candidates, and those weighed at
  // this chunk size.
  const std::map<int, std::vector<RowCandidate>>& row_candidates;
  std::map<int, std::vector<int>>& row_kept;
  // Likewise per attention step.
  const std::map<int, std::vector<AttentionCandidate>>& attention_candidates;
  std::map<int, std::vector<int>>& attention_kept;
  std::map<int, std::map<int, AttentionLayoutIds>>& attention_layouts;  // of the kept
  const Chain& chain;
  const GemmCandidates& candidates;
  const CompileOptions& options;
  int group_size;
  std::int64_t chunk_panels;  // panels of one chunk (rows past a group's share are padding)
  std::int64_t chunks;
  std::int64_t iterations;  // repeat count
  StepCosts& step_costs;

  std::int64_t rows() const { return chunk_panels * kPanelRows; }
  // Times a step runs: the repeat's iterations inside it, else once.
  double runs(int step) const;
  // Panels of a chunk in the rows of an activation's space.
  std::int64_t panels(int activation) const {
    return chain.space_panels(chain.activations[static_cast<std::size_t>(activation)].space, chunk_panels);
  }
};

inline std::uint32_t storage_bytes(StorageType storage) { return element_bytes(storage.element); }

inline bool in_region(const Chain& chain, int step) {
  return chain.repeat && step >= chain.repeat->first_step && step <= chain.repeat->last_step;
}

inline double SearchContext::runs(int step) const {
  return in_region(chain, step) ? static_cast<double>(iterations) : 1.0;
}

// What each step adds to a label (cycles, bytes, code), reading its input
// from layout `from` (ids; see search_steps.cpp for each).
struct Move {
  int from = -1, to = -1;    // layout ids
  std::uint32_t element = 0;  // bytes of an element
};
void add_rearranges(const SearchContext& context, std::span<const Move> moves, double repeat, Label& label);
void add_rearrange(const SearchContext& context, int from, int to, std::uint32_t element, double repeat,
                   Label& label);
void add_gemm(const SearchContext& context, int step_index, const GemmCandidate& candidate, int from, int input_layout,
              Label& label);
void add_elementwise(const SearchContext& context, int step_index, int layout, Label& label);
void add_row_step(const SearchContext& context, int step_index, int from, const RowCandidate& candidate,
                  Label& label);
AttentionShape attention_shape(const SearchContext& context, const Step& step, const AttentionCandidate& candidate);
void add_attention(const SearchContext& context, int step_index, const std::vector<int>& layout_of,
                   const AttentionCandidate& candidate, const AttentionLayoutIds& ids, Label& label,
                   bool already_there = false);

// The candidates of a step the program weighs at this chunk size.
std::vector<int> keep_candidates(const SearchContext& context, int step);
std::vector<int> keep_row_candidates(const SearchContext& context, int step);
std::vector<int> keep_attention_candidates(const SearchContext& context, int step_index);

}  // namespace tilec::compiler::search
