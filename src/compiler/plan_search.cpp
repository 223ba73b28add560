// The search half of construct_mid: the dynamic program over the chain.
#include "compiler/construct_mid.h"

#include "compiler/attempt_order.h"
#include "compiler/cost_model.h"
#include "compiler/kernel_plan.h"
#include "compiler/attention_candidates.h"
#include "compiler/row_candidates.h"
#include "support/error.h"
#include "support/parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

namespace tilec::compiler {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t round_up(std::int64_t a, std::int64_t b) { return ceil_div(a, b) * b; }

// Layouts seen by the search, deduplicated so that states compare by id,
// with the rearrange costs between them remembered. Every layout also has
// the id of its form with each row part one panel high: moving between two
// layouts of the same row parts costs in proportion to the panels of a
// part (every row part has the same columns and tiles pattern), so chunk
// sizes share one computation.
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

// (current layout, layout the repeat's carried value has at its entry or -1)
using State = std::pair<int, int>;

// A state keeps at most this many labels: the fastest, and the few that
// need least memory (when memory is tight, only those may fit).
constexpr std::size_t kLabelsPerState = 12, kSmallestLabels = 4;

void add_weight_bytes(Label& label, std::int64_t bytes, bool per_iteration) {
  label.weight_bytes += bytes;
  if (per_iteration) label.record_bytes += bytes;
}

std::int64_t label_bytes(const Label& label) { return label.weight_bytes + label.input_bytes + label.activation_peak; }

void insert_label(std::vector<Label>& front, Label label) {
  for (const Label& existing : front)
    if (existing.dominates(label)) return;
  std::erase_if(front, [&](const Label& existing) { return label.dominates(existing); });
  front.push_back(std::move(label));
  if (front.size() <= kLabelsPerState) return;
  std::sort(front.begin(), front.end(),
            [](const Label& a, const Label& b) { return label_bytes(a) < label_bytes(b); });
  std::sort(front.begin() + kSmallestLabels, front.end(),
            [](const Label& a, const Label& b) { return a.cycles < b.cycles; });
  front.resize(kLabelsPerState);
}

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

  std::int64_t rows() const { return chunk_panels * kPanelRows; }
  // Panels of a chunk in the rows of an activation's space.
  std::int64_t panels(int activation) const {
    return chain.space_panels(chain.activations[static_cast<std::size_t>(activation)].space, chunk_panels);
  }
};

std::uint32_t storage_bytes(StorageType storage) { return element_bytes(storage.element); }

bool in_region(const Chain& chain, int step) {
  return chain.repeat && step >= chain.repeat->first_step && step <= chain.repeat->last_step;
}


// Moves the current value from layout `from` into layout `to` (ids).
void add_rearrange(const SearchContext& context, int from, int to, std::uint32_t element, double repeat,
                   Label& label) {
  if (from == to) return;
  const RearrangeCost cost = context.layouts.cost(from, to);
  if (!cost.needed()) return;
  label.cycles += repeat * exchange_cycles(cost.elements_in * element, cost.elements_out * element, cost.transfers,
                                           context.options.machine, cost.patterned);
  label.exchanges += static_cast<int>(repeat);
  label.supervisor_bundles += 2 * cost.transfers + 4;
  std::int64_t live = element * (context.layouts.piece_elements(from) + context.layouts.piece_elements(to));
  label.activation_peak = std::max(label.activation_peak, live);
}

void add_gemm(const SearchContext& context, int step_index, const GemmCandidate& candidate, int from, int input_layout,
              Label& label) {
  const Chain& chain = context.chain;
  const Step& step = chain.steps[step_index];
  double repeat = in_region(chain, step_index) ? static_cast<double>(context.iterations) : 1.0;
  const StorageType input_storage = chain.activations[step.input].storage;
  const std::uint32_t input_bytes = storage_bytes(input_storage);
  add_rearrange(context, from, input_layout, input_bytes, repeat, label);

  const std::int64_t panels = largest_part_panels(row_split(context.panels(step.input), candidate.row_parts));
  const std::int64_t rows = panels * kPanelRows;
  std::int64_t panel_columns = round_up(candidate.max_columns, kPanelRows);
  const std::int64_t column_blocks = panel_columns / kPanelRows;
  std::int64_t k_steps = candidate.max_ks;
  const std::uint32_t partial_bytes = element_bytes(candidate.partial_type);
  const bool drain_f32 = candidate.partial_type == ElementType::F32;
  std::int64_t gathered_bytes = 0;  // the gathered weights' buffer
  if (!candidate.weights_moved) {
    label.cycles += repeat * gemm_tile_cycles(column_blocks * panels, k_steps, input_storage.element, drain_f32);
  } else {
    // A tile's own piece, then the gathered blocks before and after it:
    // up to three kernel runs.
    const std::int64_t own = ceil_div(column_blocks, candidate.row_parts);
    const std::int64_t before = (column_blocks - own) / 2, after = column_blocks - own - before;
    for (std::int64_t part : {own, before, after})
      label.cycles += repeat * gemm_tile_cycles(part * panels, k_steps, input_storage.element, drain_f32);
    // The gather: every other row part's piece of the tile's block comes
    // in (multicast), its own goes out, in the exchange before the GEMM.
    const std::int64_t piece_bytes =
        own * kPanelRows * k_steps * storage_bytes(chain.weights[static_cast<std::size_t>(step.weight)].storage);
    const std::int64_t gathered = piece_bytes * (candidate.row_parts - 1);
    label.cycles += repeat * exchange_cycles(gathered, piece_bytes, candidate.row_parts - 1, context.options.machine);
    label.supervisor_bundles += 2 * (candidate.row_parts - 1) + 4;
    gathered_bytes = gathered + piece_bytes;
  }

  // The reduction: partials of this K part's share come in from the other
  // K parts, plus a second local partial where a block was split between
  // workers; the sum goes through the epilogue.
  std::int64_t share = round_up(ceil_div(candidate.max_columns, candidate.k_parts), 1);
  std::int64_t share_elements = rows * share;
  const StorageType out_storage = step.final_storage();
  int inputs = candidate.k_parts + 1;
  label.cycles += repeat * map_tile_cycles(share_elements, inputs, candidate.partial_type, step.epilogue,
                                           out_storage.element);
  std::int64_t exchanged = 0;
  if (candidate.k_parts > 1) {
    exchanged = static_cast<std::int64_t>(candidate.k_parts - 1) * share_elements * partial_bytes;
    label.cycles += repeat * exchange_cycles(exchanged, exchanged, candidate.k_parts - 1, context.options.machine);
    label.exchanges += static_cast<int>(repeat);
    label.supervisor_bundles += 2 * (candidate.k_parts - 1) + 4;
  }
  label.supervisor_bundles += 40;

  std::int64_t input_panel = rows * candidate.max_ks * input_bytes;
  std::int64_t partials = rows * panel_columns * partial_bytes + 6 * kPanelRows * kPanelRows * partial_bytes;
  std::int64_t output = rows * round_up(share, 8) * storage_bytes(out_storage);
  label.activation_peak =
      std::max(label.activation_peak, input_panel + partials + exchanged + output + gathered_bytes);

  const bool per_iteration = chain.weights[static_cast<std::size_t>(step.weight)].per_iteration;
  add_weight_bytes(label, candidate.weight_bytes, per_iteration);
  if (per_iteration && candidate.weights_moved) label.moved_record_bytes += candidate.weight_bytes;
  for (const EpilogueOp& op : step.epilogue)
    if (op.kind == EpilogueOp::Kind::AddBias) {
      const bool per_iteration = chain.weights[op.weight].per_iteration;
      add_weight_bytes(label,
                       round_up(share, 8) * storage_bytes(chain.weights[op.weight].storage) *
                           (per_iteration ? context.iterations : 1),
                       per_iteration);
    }
}

void add_elementwise(const SearchContext& context, int step_index, int layout, Label& label) {
  const Chain& chain = context.chain;
  const Step& step = chain.steps[step_index];
  double repeat = in_region(chain, step_index) ? static_cast<double>(context.iterations) : 1.0;
  std::int64_t elements = context.layouts.piece_elements(layout);
  const StorageType in = chain.activations[step.input].storage;
  int inputs = step.second_input >= 0 || step.table >= 0 ? 2 : 1;
  if (step.epilogue.empty() && inputs == 1) return;  // an identity copy: aliased later
  if (step.table >= 0) label.weight_bytes += elements * storage_bytes(in);
  label.cycles += repeat * map_tile_cycles(elements, inputs, in.element, step.epilogue, step.final_storage().element);
  label.activation_peak = std::max(label.activation_peak,
                                   elements * (inputs * storage_bytes(in) + storage_bytes(step.final_storage())));
  label.supervisor_bundles += 20;
}

// A layernorm or softmax on a grid of row parts x column parts
// (row_candidates.h): whole rows on each tile, or split columns whose
// statistics every tile of a row part exchanges.
void add_row_step(const SearchContext& context, int step_index, int from, const RowCandidate& candidate,
                  Label& label) {
  const Chain& chain = context.chain;
  const Step& step = chain.steps[step_index];
  double repeat = in_region(chain, step_index) ? static_cast<double>(context.iterations) : 1.0;
  const Activation& input = chain.activations[step.input];
  add_rearrange(context, from, context.layouts.id(row_input_layout(candidate, context.panels(step.input), input.cols)),
                storage_bytes(input.storage), repeat, label);
  const std::int64_t panels = largest_part_panels(row_split(context.panels(step.input), candidate.row_parts));
  const std::int64_t rows = panels * kPanelRows;
  const std::int64_t share = ceil_div(input.cols, candidate.col_parts);
  const RowKernel kernel = step.kind == StepKind::LayerNorm ? RowKernel::LayerNorm : RowKernel::Softmax;
  const ElementType in = input.storage.element, out = step.result.element;
  if (!candidate.split) {
    label.cycles += repeat * row_tile_cycles(kernel, in, out, panels, input.cols, share);
    label.activation_peak = std::max(label.activation_peak,
                                     rows * (input.cols * storage_bytes(input.storage) + share * storage_bytes(step.result)));
  } else {
    const SplitRowPlan plan = split_row_plan(kernel, in, out, panels, share, candidate.col_parts);
    label.cycles += repeat * plan.cycles;
    const std::int64_t slot = row_statistics_bytes(panels);
    label.cycles += repeat * exchange_cycles((candidate.col_parts - 1) * slot, slot, candidate.col_parts - 1,
                                             context.options.machine);
    label.exchanges += static_cast<int>(repeat);
    label.supervisor_bundles += 2 * (candidate.col_parts - 1) + 4 + 20;
    label.activation_peak =
        std::max(label.activation_peak, rows * share * (storage_bytes(input.storage) + storage_bytes(step.result)) +
                                            (candidate.col_parts + plan.ranges) * slot);
  }
  if (step.gamma >= 0) {
    const bool per_iteration = chain.weights[static_cast<std::size_t>(step.gamma)].per_iteration;
    add_weight_bytes(label, 8 * share * (per_iteration ? context.iterations : 1), per_iteration);
  }
  label.supervisor_bundles += 20;
}



// The attention shape of a candidate at this chunk size.
AttentionShape attention_shape(const SearchContext& context, const Step& step, const AttentionCandidate& candidate) {
  return attention_shape(context.chain, step, candidate, context.chunk_panels);
}

// Attention on (segment, head group, query block, key block) tiles
// (attention_candidates.h): q, k and v rearranged to them (ids.q, ids.k,
// ids.v) from where `layout_of` says they are (no layouts: host inputs
// bound now; already_there: no rearrange), each tile's share of GEMMs and
// softmax, and with several key blocks the exchange of partials and their
// merge.
void add_attention(const SearchContext& context, int step_index, const std::vector<int>& layout_of,
                   const AttentionCandidate& candidate, const AttentionLayoutIds& ids, Label& label,
                   bool already_there = false) {
  const Chain& chain = context.chain;
  const Step& step = chain.steps[static_cast<std::size_t>(step_index)];
  double repeat = in_region(chain, step_index) ? static_cast<double>(context.iterations) : 1.0;
  const AttentionShape shape = attention_shape(context, step, candidate);
  const int operands[] = {step.input, step.second_input, step.third_input};
  const int wanted[] = {ids.q, ids.k, ids.v};
  const std::int64_t pieces[] = {shape.query_block_panels() * shape.heads_per_tile() * shape.qk_head_columns(),
                                 shape.key_block_panels() * shape.heads_per_tile() * shape.qk_head_columns(),
                                 shape.key_block_panels() * shape.heads_per_tile() * shape.v_head_columns()};
  std::int64_t held = 0;
  for (int i = 0; i < 3; ++i) {
    const Activation& a = chain.activations[static_cast<std::size_t>(operands[i])];
    const int from = layout_of.empty() ? -1 : layout_of[static_cast<std::size_t>(operands[i])];
    if (already_there) {
    } else if (from < 0) {
      // Bound from the host stored once in the layout read.
      const int stored = context.layouts.id(stored_once(context.layouts.at(wanted[i]), label.input_spread));
      label.input_bytes += context.layouts.piece_elements(stored) * context.chunks * storage_bytes(a.storage);
      add_rearrange(context, stored, wanted[i], storage_bytes(a.storage), repeat, label);
    } else {
      add_rearrange(context, from, wanted[i], storage_bytes(a.storage), repeat, label);
    }
    held += pieces[i] * kPanelRows * storage_bytes(a.storage);
  }
  const ElementType input = chain.activations[static_cast<std::size_t>(step.input)].storage.element;
  const AttentionKernels kernels = attention_kernels(shape, input, step.result.element);
  const AttentionScratch scratch = attention_scratch(shape, kernels);
  label.cycles += repeat * (attention_tile_cycles(shape, kernels) + attention_merge_cycles(shape, kernels));
  const std::int64_t output_columns =
      candidate.key_parts > 1 ? shape.merge_share_columns() : shape.heads_per_tile() * shape.v_head_columns();
  const std::int64_t output_bytes =
      round_up(output_columns, kPanelRows) * shape.query_block_panels() * kPanelRows * storage_bytes(step.result);
  if (candidate.key_parts > 1) {
    // Each tile sends its partial's shares (and its statistics, one
    // multicast) and receives a slot from every key part.
    const std::int64_t in = scratch.merge, out = scratch.partial + scratch.statistics;
    label.cycles += repeat * exchange_cycles(in, out, candidate.key_parts + 1, context.options.machine);
    label.exchanges += static_cast<int>(repeat);
    label.supervisor_bundles += 4 * candidate.key_parts + 8;
  }
  label.activation_peak = std::max(label.activation_peak, held + output_bytes + scratch.total());
  label.supervisor_bundles += 60 * shape.heads_per_tile();
}

// The candidates of a GEMM step the program weighs at this chunk size:
// every grid that splits no rows (the plans of whole-row layouts), and of
// those that split rows, the few cheapest alone (compute, reduction, the
// gather and receiving the input) and the few that store least.
constexpr std::size_t kRowSplitCandidates = 4;
std::vector<int> keep_candidates(const SearchContext& context, int step) {
  const std::vector<GemmCandidate>& all = context.candidates.by_step.at(step).at(context.group_size);
  std::vector<int> kept;
  std::vector<std::pair<double, int>> by_cycles;
  std::vector<std::pair<std::int64_t, int>> by_bytes;
  const Step& gemm = context.chain.steps[static_cast<std::size_t>(step)];
  const std::uint32_t input_bytes = storage_bytes(context.chain.activations[static_cast<std::size_t>(gemm.input)].storage);
  for (int c = 0; c < static_cast<int>(all.size()); ++c) {
    const GemmCandidate& candidate = all[static_cast<std::size_t>(c)];
    if (candidate.row_parts == 1) {
      kept.push_back(c);
      continue;
    }
    if (candidate.row_parts > context.panels(gemm.input)) continue;
    Label alone;
    add_gemm(context, step, candidate, -1, -1, alone);
    const std::int64_t rows = largest_part_panels(row_split(context.panels(gemm.input), candidate.row_parts)) * kPanelRows;
    alone.cycles += exchange_cycles(rows * candidate.max_ks * input_bytes, 0, 1, context.options.machine);
    by_cycles.emplace_back(alone.cycles, c);
    by_bytes.emplace_back(alone.weight_bytes + alone.activation_peak, c);
  }
  std::sort(by_cycles.begin(), by_cycles.end());
  std::sort(by_bytes.begin(), by_bytes.end());
  for (std::size_t i = 0; i < by_cycles.size() && i < kRowSplitCandidates; ++i) kept.push_back(by_cycles[i].second);
  for (std::size_t i = 0; i < by_bytes.size() && i < kRowSplitCandidates; ++i) kept.push_back(by_bytes[i].second);
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  return kept;
}

// The candidates of a layernorm or softmax step weighed at this chunk
// size: whole rows with rows unsplit (the plans before row parts), and of
// the others the few cheapest alone and the few that need least memory.
constexpr std::size_t kRowStepCandidates = 6;
std::vector<int> keep_row_candidates(const SearchContext& context, int step) {
  const std::vector<RowCandidate>& all = context.row_candidates.at(step);
  const Activation& input = context.chain.activations[static_cast<std::size_t>(context.chain.steps[static_cast<std::size_t>(step)].input)];
  std::vector<int> kept;
  std::vector<std::pair<double, int>> by_cycles;
  std::vector<std::pair<std::int64_t, int>> by_bytes;
  for (int c = 0; c < static_cast<int>(all.size()); ++c) {
    const RowCandidate& candidate = all[static_cast<std::size_t>(c)];
    if (candidate.row_parts == 1 && !candidate.split) {
      kept.push_back(c);
      continue;
    }
    const std::int64_t panels = context.panels(context.chain.steps[static_cast<std::size_t>(step)].input);
    if (candidate.row_parts > panels) continue;
    if (candidate.split && context.options.max_k_parts == 1) continue;
    Label alone;
    const int input_layout = context.layouts.id(row_input_layout(candidate, panels, input.cols));
    add_row_step(context, step, input_layout, candidate, alone);
    const std::int64_t rows = largest_part_panels(row_split(panels, candidate.row_parts)) * kPanelRows;
    const std::int64_t held = candidate.split ? ceil_div(input.cols, candidate.col_parts) : input.cols;
    alone.cycles += exchange_cycles(rows * held * storage_bytes(input.storage), 0, 1, context.options.machine);
    by_cycles.emplace_back(alone.cycles, c);
    by_bytes.emplace_back(alone.weight_bytes + alone.activation_peak, c);
  }
  std::sort(by_cycles.begin(), by_cycles.end());
  std::sort(by_bytes.begin(), by_bytes.end());
  for (std::size_t i = 0; i < by_cycles.size() && i < kRowStepCandidates; ++i) kept.push_back(by_cycles[i].second);
  for (std::size_t i = 0; i < by_bytes.size() && i < kRowStepCandidates / 2; ++i) kept.push_back(by_bytes[i].second);
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  return kept;
}

// The candidates of an attention step weighed at this chunk size: those
// whose tiles the group has, the cheapest few alone (receiving q, k and v
// whole included) and the few that need least memory.
constexpr std::size_t kAttentionCandidates = 6;
std::vector<int> keep_attention_candidates(const SearchContext& context, int step_index) {
  const std::vector<AttentionCandidate>& all = context.attention_candidates.at(step_index);
  const Step& step = context.chain.steps[static_cast<std::size_t>(step_index)];
  const std::uint32_t bytes = storage_bytes(context.chain.activations[static_cast<std::size_t>(step.input)].storage);
  std::vector<std::pair<double, int>> by_cycles;
  std::vector<std::pair<std::int64_t, int>> by_bytes;
  for (int c = 0; c < static_cast<int>(all.size()); ++c) {
    const AttentionCandidate& candidate = all[static_cast<std::size_t>(c)];
    const AttentionShape shape = attention_shape(context, step, candidate);
    if (shape.tiles() > context.group_size) continue;
    if (candidate.key_parts > 1 && shape.segments * candidate.query_parts * candidate.head_parts < 2)
      continue;  // the partials merge on another block's tiles
    Label alone;
    add_attention(context, step_index, {}, candidate, AttentionLayoutIds{}, alone, true);
    // Receiving its q, k and v blocks whole.
    const std::int64_t received =
        (shape.query_block_panels() * shape.qk_head_columns() +
         shape.key_block_panels() * (shape.qk_head_columns() + shape.v_head_columns())) *
        shape.heads_per_tile() * kPanelRows * bytes;
    alone.cycles += exchange_cycles(received, 0, 3, context.options.machine);
    by_cycles.emplace_back(alone.cycles, c);
    by_bytes.emplace_back(alone.activation_peak, c);
  }
  std::sort(by_cycles.begin(), by_cycles.end());
  std::sort(by_bytes.begin(), by_bytes.end());
  std::vector<int> kept;
  for (std::size_t i = 0; i < by_cycles.size() && i < kAttentionCandidates; ++i) kept.push_back(by_cycles[i].second);
  for (std::size_t i = 0; i < by_bytes.size() && i < kAttentionCandidates / 2; ++i) kept.push_back(by_bytes[i].second);
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  return kept;
}

// Layouts (ids) a repeat's carried value may take inside the loop: the
// output layouts of the GEMM whose layout the body's final value keeps, or
// where it is now.
std::vector<int> entry_layouts(const SearchContext& context, int current) {
  std::vector<int> layouts{current};
  const Chain& chain = context.chain;
  const int kept = chain.carried_layout_step();
  if (chain.steps[static_cast<std::size_t>(kept)].kind == StepKind::Gemm)
    for (const CandidateLayouts& ids : context.candidate_layouts.at(kept))
      if (ids.considered) layouts.push_back(ids.output);
  return layouts;
}

// The data any plan of this chunk size stores at least: each GEMM's least
// weights, and the largest of the GEMMs' least working sets.
std::int64_t data_floor(const SearchContext& context) {
  std::int64_t weights = 0, working_set = 0;
  for (const auto& [step, by_size] : context.candidates.by_step) {
    std::int64_t least_weights = INT64_MAX, least_working_set = INT64_MAX;
    for (const GemmCandidate& candidate : by_size.at(context.group_size)) {
      Label alone;
      add_gemm(context, step, candidate, -1, -1, alone);
      least_weights = std::min(least_weights, alone.weight_bytes);
      least_working_set = std::min(least_working_set, alone.activation_peak);
    }
    if (least_weights == INT64_MAX) continue;
    weights += least_weights;
    working_set = std::max(working_set, least_working_set);
  }
  return weights + working_set;
}

// Runs the dynamic program for one group size and chunk size; returns the
// labels at the end of the chain.
std::vector<Label> run_program(const SearchContext& context, LayoutTable& layouts) {
  const Chain& chain = context.chain;
  std::map<State, std::vector<Label>> states;
  std::map<int, int> activation_layout;  // layouts of values read later (residuals, outputs)

  // The host input starts stored once, in the layout its first reader wants
  // (chosen per candidate below); until then its state is "undecided" (-1).
  Label start;
  start.choice.assign(chain.steps.size(), -1);
  start.layout_of.assign(chain.activations.size(), -1);
  states[{-1, -1}].push_back(start);

  for (int index = 0; index < static_cast<int>(chain.steps.size()); ++index) {
    const Step& step = chain.steps[index];
    std::map<State, std::vector<Label>> next;
    for (auto& [state, labels] : states) {
      const int entry = state.second;
      for (const Label& label : labels) {
        auto continue_with = [&](int layout, int entry_layout, Label grown) {
          grown.layout_of[static_cast<std::size_t>(step.output)] = layout;
          insert_label(next[{layout, entry_layout}], std::move(grown));
        };
        // Where the step's input is (-1: a host input not bound yet).
        const int from = label.layout_of[static_cast<std::size_t>(step.input)];
        if (step.kind == StepKind::Gemm) {
          const auto& options = context.candidates.by_step.at(index).at(context.group_size);
          for (int c = 0; c < static_cast<int>(options.size()); ++c) {
            const CandidateLayouts& ids = context.candidate_layouts.at(index)[static_cast<std::size_t>(c)];
            if (!ids.considered) continue;
            const GemmCandidate& candidate = options[c];
            Label grown = label;
            grown.choice[index] = c;
            // An undecided host input is bound straight into the stored-once
            // form of the layout this step reads.
            if (from >= 0) {
              add_gemm(context, index, candidate, from, ids.input, grown);
              continue_with(ids.output, entry, std::move(grown));
              continue;
            }
            for (std::size_t spread = 0; spread < ids.stored_once.size(); ++spread) {
              Label bound = grown;
              bound.input_spread = kInputSpreads[spread];
              bound.input_bytes = context.layouts.piece_elements(ids.stored_once[spread]) * context.chunks *
                                  storage_bytes(chain.activations[step.input].storage);
              add_gemm(context, index, candidate, ids.stored_once[spread], ids.input, bound);
              continue_with(ids.output, entry, std::move(bound));
            }
          }
        } else if (step.kind == StepKind::Map) {
          // A map on a host input keeps it spread over the group in
          // 16-column parts; its other input comes to its layout.
          const int at = from >= 0 ? from
                                   : layouts.id(spread_layout(context.panels(step.input), chain.activations[step.input].cols,
                                                              context.group_size));
          bool enters_region = chain.repeat && index < chain.repeat->first_step &&
                               step.name == chain.repeat->name + ".enter";
          if (enters_region) {
            for (int id : entry_layouts(context, at)) {
              Label grown = label;
              add_rearrange(context, at, id, storage_bytes(chain.activations[step.input].storage), 1.0, grown);
              continue_with(id, id, std::move(grown));
            }
            continue;
          }
          Label grown = label;
          if (step.second_input >= 0) {
            const int other = label.layout_of[static_cast<std::size_t>(step.second_input)];
            const double repeat = in_region(chain, index) ? static_cast<double>(context.iterations) : 1.0;
            if (other >= 0)
              add_rearrange(context, other, at, storage_bytes(chain.activations[step.second_input].storage), repeat,
                            grown);
          }
          add_elementwise(context, index, at, grown);
          continue_with(at, entry, std::move(grown));
        } else {
          const std::int64_t cols = chain.activations[step.output].cols;
          if (step.kind == StepKind::Attention) {
            const std::vector<AttentionCandidate>& options = context.attention_candidates.at(index);
            for (int c : context.attention_kept.at(index)) {
              const AttentionCandidate& candidate = options[static_cast<std::size_t>(c)];
              const AttentionLayoutIds& ids = context.attention_layouts.at(index).at(c);
              Label grown = label;
              grown.choice[index] = c;
              if (from >= 0) {
                add_attention(context, index, label.layout_of, candidate, ids, grown);
                continue_with(ids.output, entry, std::move(grown));
                continue;
              }
              for (int spread : kInputSpreads) {
                Label bound = grown;
                bound.input_spread = spread;
                add_attention(context, index, std::vector<int>{}, candidate, ids, bound);
                continue_with(ids.output, entry, std::move(bound));
              }
            }
            continue;
          }
          const std::vector<RowCandidate>& row_options = context.row_candidates.at(index);
          for (int c : context.row_kept.at(index)) {
            const RowCandidate& candidate = row_options[static_cast<std::size_t>(c)];
            const int output = layouts.id(row_output_layout(candidate, context.panels(step.input), cols));
            Label grown = label;
            grown.choice[index] = c;
            if (from >= 0) {
              add_row_step(context, index, from, candidate, grown);
              continue_with(output, entry, std::move(grown));
              continue;
            }
            // An undecided host input is bound stored once in the layout
            // the step reads.
            const Activation& input = chain.activations[static_cast<std::size_t>(step.input)];
            const Layout wanted = row_input_layout(candidate, context.panels(step.input), input.cols);
            for (int spread : kInputSpreads) {
              Label bound = grown;
              bound.input_spread = spread;
              const int stored = layouts.id(stored_once(wanted, spread));
              bound.input_bytes = layouts.piece_elements(stored) * context.chunks * storage_bytes(input.storage);
              add_row_step(context, index, stored, candidate, bound);
              continue_with(output, entry, std::move(bound));
            }
          }
        }
      }
    }
    // Close the repeat: the carried value must come back to its entry layout.
    if (chain.repeat && index == chain.repeat->last_step) {
      std::map<State, std::vector<Label>> closed;
      for (auto& [state, labels] : next) {
        auto [current, entry] = state;
        for (Label label : labels) {
          if (entry >= 0 && current != entry) {
            const Activation& carried = chain.activations[chain.steps[index].output];
            add_rearrange(context, current, entry, storage_bytes(carried.storage),
                          static_cast<double>(context.iterations), label);
          }
          insert_label(closed[{entry >= 0 ? entry : current, -1}], std::move(label));
        }
      }
      next = std::move(closed);
    }
    states = std::move(next);
  }
  std::vector<Label> finals;
  for (auto& [state, labels] : states)
    for (Label& label : labels) {
      label.output_elements = state.first >= 0 ? layouts.piece_elements(state.first) : 0;
      finals.push_back(std::move(label));
    }
  return finals;
}

}  // namespace

std::string PlanChoice::summary(const Chain& chain, const GemmCandidates& candidates) const {
  std::string text = fmt::format("{} groups of {} tiles, {} chunk{}", groups, group_size, chunks, chunks == 1 ? "" : "s");
  for (int index = 0; index < static_cast<int>(chain.steps.size()); ++index) {
    if (step_choice[index] < 0) continue;
    const Step& step = chain.steps[static_cast<std::size_t>(index)];
    if (step.kind == StepKind::Attention) {
      text += fmt::format(", {} {}", step.name,
                          attention_candidates(chain, step, group_size)[static_cast<std::size_t>(step_choice[index])].text());
      continue;
    }
    if (step.kind != StepKind::Gemm) {
      const RowCandidate row = row_candidates(chain.activations[static_cast<std::size_t>(step.output)].cols,
                                              group_size)[static_cast<std::size_t>(step_choice[index])];
      if (row.row_parts > 1 || row.col_parts > 1) text += fmt::format(", {} {}", step.name, row.text());
      continue;
    }
    const GemmCandidate& grid = candidates.by_step.at(index).at(group_size)[step_choice[index]];
    if (grid.row_parts > 1)
      text += fmt::format(", {} {}x{}x{}", chain.steps[index].name, grid.row_parts, grid.column_parts, grid.k_parts);
    else
      text += fmt::format(", {} {}x{}", chain.steps[index].name, grid.column_parts, grid.k_parts);
  }
  if (staged_weights) text += ", iteration weights staged";
  return text;
}

PlanSearch search_plans(const Chain& chain, const GemmCandidates& candidates, const std::vector<int>& group_sizes,
                        std::int64_t library_code_bytes, const CompileOptions& options) {
  PlanSearch search;
  const int tiles = static_cast<int>(options.machine.tiles);
  const std::int64_t panels = ceil_div(chain.device_rows(), kPanelRows);
  const std::int64_t unit = row_unit_panels(chain);
  const std::int64_t units = ceil_div(panels, unit);
  const std::int64_t iterations = chain.repeat ? chain.repeat->count : 1;
  // Each group size searches on its own (in parallel); merged in group
  // size order, the result is the same whatever the thread count.
  struct GroupSizePlans {
    std::vector<PlanChoice> plans;
    std::optional<PlanChoice> smallest;
    int considered = 0;
  };
  std::vector<GroupSizePlans> parts(group_sizes.size());
  parallel_for(0, group_sizes.size(), [&](std::size_t position) {
    const int group_size = group_sizes[position];
    GroupSizePlans& part = parts[position];
    int groups = tiles / group_size;
    std::int64_t units_per_group = ceil_div(units, groups);
    LayoutTable layouts;
    std::map<int, std::vector<RowCandidate>> row_options;
    std::map<int, std::vector<AttentionCandidate>> attention_options;
    for (int index = 0; index < static_cast<int>(chain.steps.size()); ++index) {
      const Step& step = chain.steps[static_cast<std::size_t>(index)];
      if (step.kind == StepKind::LayerNorm || step.kind == StepKind::Softmax)
        row_options[index] = row_candidates(chain.activations[static_cast<std::size_t>(step.output)].cols, group_size);
      if (step.kind == StepKind::Attention) attention_options[index] = attention_candidates(chain, step, group_size);
    }
    std::int64_t previous_panels = -1;
    // More chunks only save memory, at the cost of cycles: once a chunk
    // count fits the budget, two more are kept in reserve (the exact memory
    // may be larger than estimated) and the rest are not tried.
    int fitting = 0;
    for (std::int64_t chunks = 1; chunks <= units_per_group && fitting < 3; ++chunks) {
      if (options.chunks && chunks != *options.chunks) continue;
      std::int64_t chunk_panels = ceil_div(units_per_group, chunks) * unit;
      if (chunk_panels == previous_panels) continue;
      previous_panels = chunk_panels;
      bool fits = false;
      std::map<int, std::vector<CandidateLayouts>> candidate_layouts;
      std::map<int, std::vector<int>> row_kept, attention_kept;
      std::map<int, std::map<int, AttentionLayoutIds>> attention_layouts;
      SearchContext context{layouts,        candidate_layouts, row_options, row_kept,   attention_options,
                            attention_kept, attention_layouts, chain,       candidates, options,
                            group_size,     chunk_panels,      chunks,      iterations};
      // A chunk size whose every plan the driver would not build is not
      // searched, unless it is the finest (the diagnostic's smallest plan).
      if (!options.chunks && chunks < units_per_group &&
          data_floor(context) > AttemptOrder::plain_limit(options.budget()))
        continue;
      for (const auto& [step, list] : row_options) row_kept[step] = keep_row_candidates(context, step);
      for (const auto& [step, list] : attention_options) {
        attention_kept[step] = keep_attention_candidates(context, step);
        for (int c : attention_kept[step]) {
          const AttentionShape shape = attention_shape(context, chain.steps[static_cast<std::size_t>(step)],
                                                       list[static_cast<std::size_t>(c)]);
          attention_layouts[step][c] = AttentionLayoutIds{layouts.id(shape.q_layout()), layouts.id(shape.k_layout()),
                                                          layouts.id(shape.v_layout()),
                                                          layouts.id(shape.output_layout())};
        }
      }
      for (const auto& [step, by_size] : candidates.by_step) {
        std::vector<CandidateLayouts>& list = candidate_layouts[step];
        list.resize(by_size.at(group_size).size());
        for (int c : keep_candidates(context, step)) {
          const GemmGrid grid = gemm_grid(by_size.at(group_size)[static_cast<std::size_t>(c)],
                                          context.panels(chain.steps[static_cast<std::size_t>(step)].input));
          const Layout input = gemm_input_layout(grid);
          CandidateLayouts& ids = list[static_cast<std::size_t>(c)];
          ids = CandidateLayouts{true, layouts.id(input), layouts.id(gemm_output_layout(grid)), {}};
          for (int spread : kInputSpreads) ids.stored_once.push_back(layouts.id(stored_once(input, spread)));
        }
      }
      for (Label& label : run_program(context, layouts)) {
        ++part.considered;
        PlanChoice choice;
        choice.group_size = group_size;
        choice.groups = groups;
        choice.chunks = static_cast<int>(chunks);
        choice.step_choice = std::move(label.choice);
        choice.input_spread = label.input_spread;
        double syncs = static_cast<double>(label.exchanges) * static_cast<double>(chunks);
        choice.estimate.cycles = label.cycles * static_cast<double>(chunks) +
                                 std::max(0.0, syncs - 1) * options.machine.sync_cycles;
        // Host inputs and outputs live in per-chunk records.
        std::int64_t io = 0;
        io += label.input_bytes;
        for (const auto& [name, activation] : chain.outputs)
          io += label.output_elements * chunks * storage_bytes(chain.activations[activation].storage);
        std::int64_t code = library_code_bytes + 8 * label.supervisor_bundles + 2048;
        std::int64_t data = label.weight_bytes + label.activation_peak + io;
        choice.estimate.peak_bytes = code + data;
        // Data lives in interleaved memory (128-bit loads), code in standard;
        // where the data does not fit, standard memory may hold iterations'
        // weights, whose slices kernels read are copied to interleaved
        // memory when their turn comes.
        if (data > options.machine.interleaved.bytes() && label.record_bytes > 0 && iterations > 1) {
          // The working copy holds what kernels read; moved weights' pieces
          // are sent from the record (each tile's own to itself as well).
          const std::int64_t stride = ceil_div(label.record_bytes, iterations);
          const std::int64_t copied = ceil_div(label.record_bytes - label.moved_record_bytes, iterations);
          const std::int64_t free = std::max<std::int64_t>(0, options.machine.standard.bytes() - code);
          const std::int64_t in_standard = std::min(label.record_bytes, free / 16 * 16);
          if (in_standard > 0) {
            choice.staged_weights = true;
            data += copied - in_standard;
            choice.estimate.peak_bytes = options.machine.standard.bytes() + data;
            // Each iteration's first exchange also copies, and the gathers
            // also bring each tile its own pieces: the stride at 4 bytes a
            // cycle.
            choice.estimate.cycles += static_cast<double>(iterations * chunks) * static_cast<double>(stride) / 4;
          }
        }
        if (!part.smallest || choice.estimate.peak_bytes < part.smallest->estimate.peak_bytes)
          part.smallest = choice;
        // Staged weights fill standard memory to the byte, so a staged
        // plan's estimate (standard memory plus its data) already says
        // whether its data fit; the driver weighs it like any other.
        if ((!choice.staged_weights && data > options.machine.interleaved.bytes()) ||
            code > options.machine.standard.bytes())
          continue;
        fits |= choice.estimate.peak_bytes <= options.budget();
        part.plans.push_back(std::move(choice));
      }
      if (fits || fitting > 0) ++fitting;
    }
  });
  std::vector<PlanChoice> all;
  for (GroupSizePlans& part : parts) {
    search.plans_considered += part.considered;
    if (part.smallest && (!search.smallest || part.smallest->estimate.peak_bytes < search.smallest->estimate.peak_bytes))
      search.smallest = std::move(part.smallest);
    for (PlanChoice& choice : part.plans) all.push_back(std::move(choice));
  }
  std::sort(all.begin(), all.end(), [](const PlanChoice& a, const PlanChoice& b) {
    return std::tie(a.estimate.cycles, a.estimate.peak_bytes) < std::tie(b.estimate.cycles, b.estimate.peak_bytes);
  });
  std::int64_t smallest = INT64_MAX;
  for (PlanChoice& choice : all) {
    if (choice.estimate.peak_bytes >= smallest) continue;
    smallest = choice.estimate.peak_bytes;
    search.front.push_back(std::move(choice));
  }
  return search;
}

}  // namespace tilec::compiler
