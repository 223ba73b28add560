// The search half of construct_mid: the dynamic program over the chain.
#include "compiler/construct_mid.h"

#include "compiler/attempt_order.h"
#include "compiler/search_steps.h"
#include "support/parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <optional>
#include <span>
#include <tuple>

namespace tilec::compiler {

namespace {

using namespace search;

// (current layout, layout the repeat's carried value has at its entry or -1)
using State = std::pair<int, int>;

// A state keeps at most this many labels: the fastest, and the few that
// need least memory (when memory is tight, only those may fit).
constexpr std::size_t kLabelsPerState = 12, kSmallestLabels = 4;

std::int64_t label_bytes(const Label& label) { return label.weight_bytes + label.input_bytes + label.activation_peak; }

void insert_label(std::vector<Label>& front, Label label) {
  for (const Label& existing : front)
    if (existing.dominates(label)) return;
  std::erase_if(front, [&](const Label& existing) { return label.dominates(existing); });
  front.push_back(std::move(label));
  if (front.size() <= kLabelsPerState) return;
  // The smallest by bytes first, then the rest by cycles, both stable;
  // sorted as indices, so each label moves once.
  std::array<std::size_t, kLabelsPerState + 1> order;
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return label_bytes(front[a]) < label_bytes(front[b]); });
  std::stable_sort(order.begin() + kSmallestLabels, order.end(),
                   [&](std::size_t a, std::size_t b) { return front[a].cycles < front[b].cycles; });
  std::vector<Label> kept;
  kept.reserve(kLabelsPerState + 1);
  for (std::size_t position = 0; position < kLabelsPerState; ++position) kept.push_back(std::move(front[order[position]]));
  front = std::move(kept);
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

// The least each GEMM step's candidates at this group size store (by step;
// steps without candidates left out): weights in all, of one copy, of
// every iteration (which staging may move out), and its working set, each
// the least of any candidate.
struct GemmFloor {
  std::int64_t weights = INT64_MAX, once = INT64_MAX, record = INT64_MAX, working_set = INT64_MAX;
};
std::map<int, GemmFloor> gemm_floors(const SearchContext& context) {
  std::map<int, GemmFloor> floors;
  for (const auto& [step, by_size] : context.candidates.by_step) {
    GemmFloor least;
    for (const GemmCandidate& candidate : by_size.at(context.group_size)) {
      Label alone;
      add_gemm(context, step, candidate, -1, -1, alone);
      least.weights = std::min(least.weights, alone.weight_bytes);
      least.once = std::min(least.once, alone.weight_bytes - alone.record_bytes);
      least.record = std::min(least.record, alone.record_bytes);
      least.working_set = std::min(least.working_set, alone.activation_peak);
    }
    if (least.weights != INT64_MAX) floors.emplace(step, least);
  }
  return floors;
}

// The data any plan of this chunk size stores at least: each GEMM's least
// weights, and the largest of the GEMMs' least working sets.
std::int64_t data_floor(const std::map<int, GemmFloor>& floors) {
  std::int64_t weights = 0, working_set = 0;
  for (const auto& [step, least] : floors) {
    weights += least.weights;
    working_set = std::max(working_set, least.working_set);
  }
  return weights + working_set;
}

// A second search's bounds on the plans grown from a label: the data they
// keep in interleaved memory and their peak, after the shortfall, and
// their cycles against the plan built. Labels that cannot fit or cannot be
// faster are dropped before they take a place in a state.
class SecondSearchBound {
 public:
  SecondSearchBound(const SearchContext& context, const std::map<int, GemmFloor>& floors,
                    std::int64_t library_code_bytes, const SecondSearch& again)
      : after_(context.chain.steps.size()),
        iterations_(context.iterations),
        code_floor_(library_code_bytes + 2048),
        standard_(context.options.machine.standard.bytes()),
        data_limit_(context.options.machine.interleaved.bytes() - again.missed.data),
        peak_limit_(context.options.budget() - again.missed.peak),
        cycles_limit_(again.cycles_to_beat / static_cast<double>(context.chunks)) {
    // What the GEMMs after each step add at least.
    for (const auto& [step, least] : floors) {
      for (int before = 0; before < step; ++before) {
        Floor& floor = after_[static_cast<std::size_t>(before)];
        floor.once += least.once;
        floor.record += least.record;
        floor.working_set = std::max(floor.working_set, least.working_set);
      }
    }
  }

  // Whether a plan grown from `label` (after step `index`) may still fit
  // and be faster: each term below only grows as steps are added.
  bool worth_growing(const Label& label, int index) const {
    if (label.cycles >= cycles_limit_) return false;
    const Floor& later = after_[static_cast<std::size_t>(index)];
    const std::int64_t code = code_floor_ + 8 * label.supervisor_bundles;
    const std::int64_t record = label.record_bytes + later.record;
    // The iterations' record in interleaved memory: all of it, or staged,
    // what standard memory cannot take plus one iteration's working copy.
    const std::int64_t room = std::max<std::int64_t>(0, standard_ - code);
    const std::int64_t copied = ceil_div(label.record_bytes - label.moved_record_bytes, iterations_);
    const std::int64_t record_there = std::min(record, std::max<std::int64_t>(0, record - room) + copied);
    const std::int64_t data = label.weight_bytes - label.record_bytes + later.once + record_there +
                              std::max(label.activation_peak, later.working_set) + label.input_bytes;
    return data <= data_limit_ && code + data <= peak_limit_;
  }

 private:
  struct Floor {
    std::int64_t once = 0, record = 0, working_set = 0;
  };
  std::vector<Floor> after_;  // of the GEMM steps after each step
  std::int64_t iterations_, code_floor_, standard_, data_limit_, peak_limit_;
  double cycles_limit_;  // a chunk's
};

// Runs the dynamic program for one group size and chunk size; returns the
// labels at the end of the chain (with bounds, only those within them).
std::vector<Label> run_program(const SearchContext& context, LayoutTable& layouts, const SecondSearchBound* limits) {
  const Chain& chain = context.chain;
  std::map<State, std::vector<Label>> states;
  std::map<int, int> activation_layout;  // layouts of values read later (residuals, outputs)

  // A fused GEMM's views are where its output is, their columns alone:
  // the layout id of each (output layout, view), asked for once.
  std::vector<std::vector<int>> views(chain.activations.size());
  for (int a = 0; a < static_cast<int>(chain.activations.size()); ++a)
    if (chain.activations[static_cast<std::size_t>(a)].view_of >= 0)
      views[static_cast<std::size_t>(chain.activations[static_cast<std::size_t>(a)].view_of)].push_back(a);
  std::map<std::pair<int, int>, int> view_layouts;
  auto view_layout = [&](int layout, int view) {
    auto [it, added] = view_layouts.try_emplace({layout, view}, -1);
    if (added) {
      const Activation& a = chain.activations[static_cast<std::size_t>(view)];
      it->second = layouts.id(column_window(layouts.at(layout), Range{a.view_offset, a.view_offset + a.cols}));
    }
    return it->second;
  };

  // The host input starts stored once, in the layout its first reader wants
  // (chosen per candidate below); until then its state is "undecided" (-1).
  Label start;
  start.choice.assign(chain.steps.size(), -1);
  start.layout_of.assign(chain.activations.size(), -1);
  states[{-1, -1}].push_back(start);

  for (int index = 0; index < static_cast<int>(chain.steps.size()); ++index) {
    const Step& step = chain.steps[index];
    std::map<State, std::vector<Label>> next;
    // Layout ids that depend on the step and candidate alone, asked of the
    // table once each: the first label asks them in the order it always did
    // (ids number layouts in the order first asked for), the rest reuse them.
    auto memo = [&](int& id, auto make) {
      if (id < 0) id = layouts.id(make());
      return id;
    };
    const std::size_t row_count = context.row_candidates.count(index) ? context.row_candidates.at(index).size() : 0;
    std::vector<int> row_output_ids(row_count, -1);
    std::vector<std::array<int, std::size(kInputSpreads)>> row_stored_ids(row_count);
    for (auto& ids : row_stored_ids) ids.fill(-1);
    int host_spread_id = -1;
    for (auto& [state, labels] : states) {
      const int entry = state.second;
      for (const Label& label : labels) {
        auto continue_with = [&](int layout, int entry_layout, Label grown) {
          if (limits && !limits->worth_growing(grown, index)) return;
          grown.layout_of[static_cast<std::size_t>(step.output)] = layout;
          for (int view : views[static_cast<std::size_t>(step.output)])
            grown.layout_of[static_cast<std::size_t>(view)] = view_layout(layout, view);
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
          const int at = from >= 0 ? from : memo(host_spread_id, [&] {
            return spread_layout(context.panels(step.input), chain.activations[step.input].cols, context.group_size);
          });
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
            const double repeat = context.runs(index);
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
            const int output = memo(row_output_ids[static_cast<std::size_t>(c)],
                                    [&] { return row_output_layout(candidate, context.panels(step.input), cols); });
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
            for (std::size_t position = 0; position < std::size(kInputSpreads); ++position) {
              const int spread = kInputSpreads[position];
              Label bound = grown;
              bound.input_spread = spread;
              const int stored = memo(row_stored_ids[static_cast<std::size_t>(c)][position], [&] {
                return stored_once(row_input_layout(candidate, context.panels(step.input), input.cols), spread);
              });
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

// One chunk size's plans, searched with a layout table of its own (so
// chunk sizes may be searched at once).
struct ChunkSizePlans {
  bool searched = false;  // false: no plan of this size could be built
  bool fits = false;      // some plan's estimate fits the budget
  std::vector<PlanChoice> plans;
  std::optional<PlanChoice> smallest;
  int considered = 0;
};

struct ChunkSize {
  std::int64_t chunks;
  std::int64_t chunk_panels;
};

ChunkSizePlans search_chunk_size(const Chain& chain, const GemmCandidates& candidates, const CompileOptions& options,
                                 const std::map<int, std::vector<RowCandidate>>& row_options,
                                 const std::map<int, std::vector<AttentionCandidate>>& attention_options,
                                 int group_size, int groups, std::int64_t iterations, ChunkSize size, bool finest,
                                 std::int64_t library_code_bytes, const std::optional<SecondSearch>& again) {
  const auto [chunks, chunk_panels] = size;
  ChunkSizePlans result;
  LayoutTable layouts;
  std::map<int, std::vector<CandidateLayouts>> candidate_layouts;
  std::map<int, std::vector<int>> row_kept, attention_kept;
  std::map<int, std::map<int, AttentionLayoutIds>> attention_layouts;
  StepCosts step_costs;
  SearchContext context{layouts,        candidate_layouts, row_options, row_kept,   attention_options,
                        attention_kept, attention_layouts, chain,       candidates, options,
                        group_size,     chunk_panels,      chunks,      iterations, step_costs};
  // A chunk size whose every plan the driver would not build is not
  // searched, unless it is the finest (the diagnostic's smallest plan).
  const std::map<int, GemmFloor> floors = gemm_floors(context);
  if (!options.chunks && !finest && data_floor(floors) > AttemptOrder::plain_limit(options.budget())) return result;
  result.searched = true;
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
  std::optional<SecondSearchBound> limits;
  if (again) limits.emplace(context, floors, library_code_bytes, *again);
  for (Label& label : run_program(context, layouts, limits ? &*limits : nullptr)) {
    ++result.considered;
    PlanChoice choice;
    choice.group_size = group_size;
    choice.groups = groups;
    choice.chunks = static_cast<int>(chunks);
    choice.step_choice = std::move(label.choice);
    choice.input_spread = label.input_spread;
    // A sync opens every exchange phase but one the run starts with.
    double syncs = static_cast<double>(label.exchanges) * static_cast<double>(chunks) -
                   (label.leading_exchange ? 1.0 : 0.0);
    choice.estimate.cycles = label.cycles * static_cast<double>(chunks) +
                             std::max(0.0, syncs) * options.machine.sync_cycles;
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
    choice.estimate.data_bytes = data;
    if (!result.smallest || choice.estimate.peak_bytes < result.smallest->estimate.peak_bytes)
      result.smallest = choice;
    // Data that cannot be staged must fit interleaved memory. Staged
    // weights fill standard memory to the byte, so a staged plan's
    // estimate (standard memory plus its data) is weighed like any
    // other, its data held as the driver's first attempts are: at most
    // a quarter over what interleaved memory holds.
    // A second search keeps only plans that fit after the shortfall.
    const std::int64_t interleaved = options.machine.interleaved.bytes();
    const EstimateShortfall missed = again ? again->missed : EstimateShortfall{};
    if (data > (choice.staged_weights && !again ? AttemptOrder::plain_limit(interleaved)
                                                    : interleaved - missed.data) ||
        code > options.machine.standard.bytes())
      continue;
    const bool fits = choice.estimate.peak_bytes + missed.peak <= options.budget();
    if (again && !fits) continue;
    result.fits |= fits;
    result.plans.push_back(std::move(choice));
  }
  return result;
}

}  // namespace

bool PlanChoice::same_repeat_body(const PlanChoice& other, const Chain& chain) const {
  if (!chain.repeat) return same_plan(other);
  const auto first = static_cast<std::size_t>(chain.repeat->first_step);
  const auto steps = static_cast<std::size_t>(chain.repeat->last_step - chain.repeat->first_step + 1);
  const auto body = [&](const PlanChoice& plan) { return std::span(plan.step_choice).subspan(first, steps); };
  return same_frame(other) && std::ranges::equal(body(*this), body(other));
}

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
                        std::int64_t library_code_bytes, const CompileOptions& options,
                        std::optional<SecondSearch> again) {
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
    std::map<int, std::vector<RowCandidate>> row_options;
    std::map<int, std::vector<AttentionCandidate>> attention_options;
    for (int index = 0; index < static_cast<int>(chain.steps.size()); ++index) {
      const Step& step = chain.steps[static_cast<std::size_t>(index)];
      if (step.kind == StepKind::LayerNorm || step.kind == StepKind::Softmax)
        row_options[index] = row_candidates(chain.activations[static_cast<std::size_t>(step.output)].cols, group_size);
      if (step.kind == StepKind::Attention) attention_options[index] = attention_candidates(chain, step, group_size);
    }
    // The chunk sizes in order, each a different number of panels.
    std::vector<ChunkSize> sizes;
    for (std::int64_t chunks = 1; chunks <= units_per_group; ++chunks) {
      if (options.chunks && chunks != *options.chunks) continue;
      if (again && chunks > again->most_chunks) break;
      const std::int64_t chunk_panels = ceil_div(units_per_group, chunks) * unit;
      if (sizes.empty() || sizes.back().chunk_panels != chunk_panels) sizes.push_back({chunks, chunk_panels});
    }
    // More chunks only save memory, at the cost of cycles: once a chunk
    // count fits the budget, two more are kept in reserve (the exact memory
    // may be larger than estimated) and the rest are not searched. Sizes
    // are searched two at a time until one fits, then as many as are still
    // kept, so none is searched that would not be kept.
    int fitting = 0;
    for (std::size_t next = 0; next < sizes.size() && fitting < 3;) {
      const std::size_t wave = std::min<std::size_t>(sizes.size() - next, fitting > 0 ? 3 - fitting : 2);
      std::vector<ChunkSizePlans> results(wave);
      parallel_for(0, wave, [&](std::size_t i) {
        const ChunkSize size = sizes[next + i];
        results[i] = search_chunk_size(chain, candidates, options, row_options, attention_options, group_size, groups,
                                       iterations, size, size.chunks == units_per_group, library_code_bytes,
                                       again);
      });
      next += wave;
      for (ChunkSizePlans& result : results) {
        if (!result.searched) continue;
        part.considered += result.considered;
        if (result.smallest && (!part.smallest || result.smallest->estimate.peak_bytes < part.smallest->estimate.peak_bytes))
          part.smallest = std::move(result.smallest);
        for (PlanChoice& choice : result.plans) part.plans.push_back(std::move(choice));
        if (result.fits || fitting > 0) ++fitting;
      }
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
