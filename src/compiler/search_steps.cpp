// What each step of the chain adds to a search label, and which of its
// candidates the search weighs (search_steps.h).
#include "compiler/search_steps.h"

#include "compiler/kernel_plan.h"

#include <algorithm>
#include <array>
#include <utility>

namespace tilec::compiler::search {

void add_weight_bytes(Label& label, std::int64_t bytes, bool per_iteration) {
  label.weight_bytes += bytes;
  if (per_iteration) label.record_bytes += bytes;
}

// Moves values between layouts (ids) in one exchange phase: their bytes
// and transfers add up, and they share one sync.
void add_rearranges(const SearchContext& context, std::span<const Move> moves, double repeat, Label& label) {
  std::int64_t bytes_in = 0, bytes_out = 0, transfers = 0, patterned = 0, live = 0;
  for (const Move& move : moves) {
    if (move.from == move.to) continue;
    const RearrangeCost cost = context.layouts.cost(move.from, move.to);
    if (!cost.needed()) continue;
    bytes_in += cost.elements_in * move.element;
    bytes_out += cost.elements_out * move.element;
    transfers += cost.transfers;
    patterned += cost.patterned;
    live = std::max(live, move.element * (context.layouts.piece_elements(move.from) +
                                          context.layouts.piece_elements(move.to)));
  }
  if (bytes_in == 0) return;
  if (label.cycles == 0) label.leading_exchange = true;
  label.cycles += repeat * exchange_cycles(bytes_in, bytes_out, transfers, context.options.machine, patterned);
  label.exchanges += static_cast<int>(repeat);
  label.supervisor_bundles += 2 * transfers + 4;
  label.activation_peak = std::max(label.activation_peak, live);
}

void add_rearrange(const SearchContext& context, int from, int to, std::uint32_t element, double repeat,
                   Label& label) {
  const Move move{from, to, element};
  add_rearranges(context, std::span<const Move>(&move, 1), repeat, label);
}

void add_gemm(const SearchContext& context, int step_index, const GemmCandidate& candidate, int from, int input_layout,
              Label& label) {
  const Chain& chain = context.chain;
  const Step& step = chain.steps[step_index];
  double repeat = context.runs(step_index);
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
  double repeat = context.runs(step_index);
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

namespace {

// Adds a step's cached cost (StepCosts) to a label.
void add_step_cost(const Label& cost, Label& label) {
  label.cycles += cost.cycles;
  label.exchanges += cost.exchanges;
  label.weight_bytes += cost.weight_bytes;
  label.record_bytes += cost.record_bytes;
  label.moved_record_bytes += cost.moved_record_bytes;
  label.activation_peak = std::max(label.activation_peak, cost.activation_peak);
  label.supervisor_bundles += cost.supervisor_bundles;
}

// A layernorm or softmax on a grid of row parts x column parts
// (row_candidates.h): whole rows on each tile, or split columns whose
// statistics every tile of a row part exchanges.
const std::pair<int, Label>& row_step_cost(const SearchContext& context, int step_index,
                                           const RowCandidate& candidate) {
  const std::array<int, 4> key{step_index, candidate.row_parts, candidate.col_parts, candidate.split ? 1 : 0};
  if (const auto found = context.step_costs.rows.find(key); found != context.step_costs.rows.end())
    return found->second;
  const Chain& chain = context.chain;
  const Step& step = chain.steps[step_index];
  double repeat = context.runs(step_index);
  const Activation& input = chain.activations[step.input];
  const int input_layout = context.layouts.id(row_input_layout(candidate, context.panels(step.input), input.cols));
  Label label;
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
    if (gathers_pairs(candidate.row_parts, per_iteration)) {
      const std::vector<Range> pieces = pair_pieces(share, candidate.row_parts);
      const std::int64_t stored = 8 * pieces.front().size() * context.iterations;
      add_weight_bytes(label, stored, true);
      label.moved_record_bytes += stored;
      const auto received = static_cast<std::int64_t>(pieces.size());
      label.cycles += repeat * exchange_cycles(8 * share, 8 * pieces.front().size(), received, context.options.machine);
      label.supervisor_bundles += 2 * received + 4;
      label.activation_peak = std::max(label.activation_peak, 8 * share);
    } else {
      add_weight_bytes(label, 8 * share * (per_iteration ? context.iterations : 1), per_iteration);
    }
  }
  label.supervisor_bundles += 20;
  return context.step_costs.rows.emplace(key, std::pair<int, Label>{input_layout, std::move(label)}).first->second;
}

}  // namespace

void add_row_step(const SearchContext& context, int step_index, int from, const RowCandidate& candidate,
                  Label& label) {
  const Step& step = context.chain.steps[static_cast<std::size_t>(step_index)];
  const Activation& input = context.chain.activations[static_cast<std::size_t>(step.input)];
  const double repeat = context.runs(step_index);
  const auto& [input_layout, cost] = row_step_cost(context, step_index, candidate);
  add_rearrange(context, from, input_layout, storage_bytes(input.storage), repeat, label);
  add_step_cost(cost, label);
}

// The attention shape of a candidate at this chunk size.
AttentionShape attention_shape(const SearchContext& context, const Step& step, const AttentionCandidate& candidate) {
  return attention_shape(context.chain, step, candidate, context.chunk_panels);
}

namespace {

// An attention candidate's cost once q, k and v are in place: each tile's
// share of GEMMs and softmax, and with several key blocks the exchange of
// partials and their merge.
const Label& attention_cost(const SearchContext& context, int step_index, const AttentionCandidate& candidate) {
  const std::array<int, 4> key{step_index, candidate.head_parts, candidate.query_parts, candidate.key_parts};
  if (const auto found = context.step_costs.attention.find(key); found != context.step_costs.attention.end())
    return found->second;
  const Chain& chain = context.chain;
  const Step& step = chain.steps[static_cast<std::size_t>(step_index)];
  const double repeat = context.runs(step_index);
  const AttentionShape shape = attention_shape(context, step, candidate);
  const int operands[] = {step.input, step.second_input, step.third_input};
  const std::int64_t pieces[] = {shape.query_block_panels() * shape.heads_per_tile() * shape.qk_head_columns(),
                                 shape.key_block_panels() * shape.heads_per_tile() * shape.qk_head_columns(),
                                 shape.key_block_panels() * shape.heads_per_tile() * shape.v_head_columns()};
  std::int64_t held = 0;
  for (int i = 0; i < 3; ++i)
    held += pieces[i] * kPanelRows * storage_bytes(chain.activations[static_cast<std::size_t>(operands[i])].storage);
  Label label;
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
  return context.step_costs.attention.emplace(key, std::move(label)).first->second;
}

}  // namespace

// Attention on (segment, head group, query block, key block) tiles
// (attention_candidates.h): q, k and v rearranged to them (ids.q, ids.k,
// ids.v) from where `layout_of` says they are (no layouts: host inputs
// bound now; already_there: no rearrange), then its cost (attention_cost).
void add_attention(const SearchContext& context, int step_index, const std::vector<int>& layout_of,
                   const AttentionCandidate& candidate, const AttentionLayoutIds& ids, Label& label,
                   bool already_there) {
  const Chain& chain = context.chain;
  const Step& step = chain.steps[static_cast<std::size_t>(step_index)];
  double repeat = context.runs(step_index);
  const int operands[] = {step.input, step.second_input, step.third_input};
  const int wanted[] = {ids.q, ids.k, ids.v};
  // q, k and v move in one exchange phase (the step's).
  std::array<Move, 3> moves;
  std::size_t count = 0;
  for (int i = 0; i < 3 && !already_there; ++i) {
    const Activation& a = chain.activations[static_cast<std::size_t>(operands[i])];
    const int from = layout_of.empty() ? -1 : layout_of[static_cast<std::size_t>(operands[i])];
    if (from < 0) {
      // Bound from the host stored once in the layout read.
      const int stored = context.layouts.id(stored_once(context.layouts.at(wanted[i]), label.input_spread));
      label.input_bytes += context.layouts.piece_elements(stored) * context.chunks * storage_bytes(a.storage);
      moves[count++] = Move{stored, wanted[i], storage_bytes(a.storage)};
    } else {
      moves[count++] = Move{from, wanted[i], storage_bytes(a.storage)};
    }
  }
  add_rearranges(context, std::span<const Move>(moves.data(), count), repeat, label);
  add_step_cost(attention_cost(context, step_index, candidate), label);
}

namespace {

// `kept`, with the `cheapest` first of `by_cycles` and the `smallest` first
// of `by_bytes` (candidate indices), each index once and in order.
std::vector<int> with_fewest(std::vector<int> kept, std::vector<std::pair<double, int>>& by_cycles,
                             std::size_t cheapest, std::vector<std::pair<std::int64_t, int>>& by_bytes,
                             std::size_t smallest) {
  std::sort(by_cycles.begin(), by_cycles.end());
  std::sort(by_bytes.begin(), by_bytes.end());
  for (std::size_t i = 0; i < by_cycles.size() && i < cheapest; ++i) kept.push_back(by_cycles[i].second);
  for (std::size_t i = 0; i < by_bytes.size() && i < smallest; ++i) kept.push_back(by_bytes[i].second);
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  return kept;
}

}  // namespace

// The candidates of a GEMM step the program weighs at this chunk size:
// every grid that splits no rows (the plans of whole-row layouts), and of
// those that split rows, the few cheapest alone (compute, reduction, the
// gather and receiving the input, each as often as the step runs) and the
// few that store least.
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
    alone.cycles +=
        context.runs(step) * exchange_cycles(rows * candidate.max_ks * input_bytes, 0, 1, context.options.machine);
    by_cycles.emplace_back(alone.cycles, c);
    by_bytes.emplace_back(alone.weight_bytes + alone.activation_peak, c);
  }
  return with_fewest(std::move(kept), by_cycles, kRowSplitCandidates, by_bytes, kRowSplitCandidates);
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
    alone.cycles += context.runs(step) *
                    exchange_cycles(rows * held * storage_bytes(input.storage), 0, 1, context.options.machine);
    by_cycles.emplace_back(alone.cycles, c);
    by_bytes.emplace_back(alone.weight_bytes + alone.activation_peak, c);
  }
  return with_fewest(std::move(kept), by_cycles, kRowStepCandidates, by_bytes, kRowStepCandidates / 2);
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
    alone.cycles += context.runs(step_index) * exchange_cycles(received, 0, 3, context.options.machine);
    by_cycles.emplace_back(alone.cycles, c);
    by_bytes.emplace_back(alone.activation_peak, c);
  }
  return with_fewest({}, by_cycles, kAttentionCandidates, by_bytes, kAttentionCandidates / 2);
}

}  // namespace tilec::compiler::search
