// The construction half of construct_mid: the mid-level IR of one plan.
#include "compiler/construct_mid.h"

#include "compiler/attention_candidates.h"
#include "compiler/row_candidates.h"
#include "support/error.h"

#include <map>

namespace tilec::compiler {

namespace {

class MidBuilder {
 public:
  MidBuilder(const Chain& chain, const GemmCandidates& candidates, const PlanChoice& choice, MidProgram& program)
      : chain_(chain), candidates_(candidates), choice_(choice), program_(program) {}

  void build() {
    for (int index = 0; index < static_cast<int>(chain_.steps.size()); ++index) {
      if (chain_.repeat && index == chain_.repeat->first_step) program_.repeat_first_op = static_cast<int>(program_.ops.size());
      add_step(index);
      if (chain_.repeat && index == chain_.repeat->last_step) close_region();
    }
    if (chain_.repeat) program_.repeat_count = chain_.repeat->count;
    for (const auto& [name, activation] : chain_.outputs)
      TILEC_CHECK(current_.count(activation), "output '{}' was never computed", name);
    number_supersteps();
  }

 private:
  int add_value(MidValue value) {
    program_.values.push_back(std::move(value));
    return static_cast<int>(program_.values.size()) - 1;
  }

  int activation_value(int activation, const Layout& layout) {
    const Activation& a = chain_.activations[activation];
    MidValue value{a.name, a.cols, a.storage, layout, false, activation};
    int id = add_value(std::move(value));
    current_[activation] = id;
    return id;
  }

  int add_op(MidOp op) {
    program_.ops.push_back(std::move(op));
    return static_cast<int>(program_.ops.size()) - 1;
  }

  // The value of `activation` in `layout`, rearranging when needed. Host
  // inputs seen for the first time are bound in the stored-once form.
  int value_in(int activation, const Layout& layout, bool host_input_stored_once) {
    auto it = current_.find(activation);
    const Activation& a = chain_.activations[static_cast<std::size_t>(activation)];
    if (it == current_.end() && a.view_of >= 0) {
      // A view moves out of the value it is part of, from its columns.
      const int from = current_.at(a.view_of);
      MidOp op{MidOpKind::Rearrange, a.name + ".rearrange"};
      op.inputs = {from};
      op.output = activation_value(activation, layout);
      op.column_offset = a.view_offset;
      const int to = op.output;
      add_op(std::move(op));
      return to;
    }
    if (it == current_.end()) {
      Layout bound = host_input_stored_once ? stored_once(layout, choice_.input_spread) : layout;
      int id = activation_value(activation, bound);
      if (bound == layout) return id;
      it = current_.find(activation);
    }
    int from = it->second;
    if (program_.values[from].layout == layout) return from;
    MidValue moved = program_.values[from];
    moved.layout = layout;
    int to = add_value(std::move(moved));
    MidOp op{MidOpKind::Rearrange, program_.values[from].name + ".rearrange"};
    op.inputs = {from};
    op.output = to;
    add_op(std::move(op));
    current_[activation] = to;
    return to;
  }

  // Panels of a chunk in the rows of an activation's space.
  std::int64_t panels(int activation) const {
    return chain_.space_panels(chain_.activations[static_cast<std::size_t>(activation)].space,
                               program_.groups.chunk_panels);
  }

  GemmGrid grid_of(int step) const {
    return gemm_grid(candidates_.by_step.at(step).at(choice_.group_size).at(
                         static_cast<std::size_t>(choice_.step_choice[static_cast<std::size_t>(step)])),
                     panels(chain_.steps[static_cast<std::size_t>(step)].input));
  }

  void add_step(int index) {
    const Step& step = chain_.steps[index];
    switch (step.kind) {
      case StepKind::Gemm: add_gemm(index); return;
      case StepKind::Map: add_map(index); return;
      case StepKind::LayerNorm:
      case StepKind::Softmax: add_row_step(index); return;
      case StepKind::Attention: add_attention(index); return;
    }
  }

  void add_gemm(int index) {
    const Step& step = chain_.steps[index];
    const GemmCandidate& candidate =
        candidates_.by_step.at(index).at(choice_.group_size).at(static_cast<std::size_t>(choice_.step_choice[index]));
    const GemmGrid grid = grid_of(index);
    int input = value_in(step.input, gemm_input_layout(grid), true);
    // Partial sums: every tile of block (m, n) holds the sums over its K part.
    MidValue partial{step.name + ".partial", chain_.activations[step.output].cols,
                     StorageType{candidate.partial_type, 0}, gemm_partial_layout(grid), true, -1};
    int partial_id = add_value(std::move(partial));
    MidOp gemm{MidOpKind::Gemm, step.name, index};
    gemm.inputs = {input};
    gemm.output = partial_id;
    gemm.grid = grid;
    add_op(std::move(gemm));

    int output = activation_value(step.output, gemm_output_layout(grid));
    MidOp reduce{MidOpKind::Reduce, step.name + ".reduce", index};
    reduce.inputs = {partial_id};
    reduce.output = output;
    reduce.grid = grid;
    reduce.epilogue = step.epilogue;
    add_op(std::move(reduce));
  }

  void add_map(int index) {
    const Step& step = chain_.steps[index];
    auto it = current_.find(step.input);
    const Activation& read = chain_.activations[static_cast<std::size_t>(step.input)];
    Layout layout = it != current_.end() ? program_.values[it->second].layout
                    : read.view_of >= 0
                        ? column_window(program_.values[static_cast<std::size_t>(current_.at(read.view_of))].layout,
                                        Range{read.view_offset, read.view_offset + read.cols})
                        : spread_layout(panels(step.input), read.cols, choice_.group_size);
    bool enters_region = chain_.repeat && index < chain_.repeat->first_step && step.name == chain_.repeat->name + ".enter";
    if (enters_region) layout = entry_layout(layout);
    int input = value_in(step.input, layout, false);
    MidOp op{MidOpKind::Map, step.name, index};
    op.inputs = {input};
    if (step.second_input >= 0) op.inputs.push_back(value_in(step.second_input, layout, false));
    op.epilogue = step.epilogue;
    op.output = activation_value(step.output, layout);
    if (enters_region) entry_values_[step.output] = op.output;
    add_op(std::move(op));
  }

  // The carried value's layout inside the loop: what the body leaves, so the
  // loop needs no rearrange at its end when the plan allows it.
  Layout entry_layout(const Layout& current) const {
    const int kept = chain_.carried_layout_step();
    if (chain_.steps[static_cast<std::size_t>(kept)].kind != StepKind::Gemm) return current;
    return gemm_output_layout(grid_of(kept));
  }

  void add_row_step(int index) {
    const Step& step = chain_.steps[index];
    const std::int64_t cols = chain_.activations[step.input].cols;
    const RowCandidate candidate = row_candidates(cols, choice_.group_size)[static_cast<std::size_t>(choice_.step_choice[index])];
    int input = value_in(step.input, row_input_layout(candidate, panels(step.input), cols), true);
    const Layout output = row_output_layout(candidate, panels(step.input), cols);
    if (!candidate.split) {
      MidOp op{step.kind == StepKind::LayerNorm ? MidOpKind::LayerNorm : MidOpKind::Softmax, step.name, index};
      op.inputs = {input};
      op.output = activation_value(step.output, output);
      add_op(std::move(op));
      return;
    }
    // Statistics: per tile, its rows' over its columns (FP32 records).
    MidValue statistics{step.name + ".statistics", candidate.col_parts, StorageType{ElementType::F32, 0}, output,
                        true, -1};
    MidOp gather{MidOpKind::RowStatistics, step.name + ".statistics", index};
    gather.inputs = {input};
    gather.output = add_value(std::move(statistics));
    const int statistics_id = gather.output;
    add_op(std::move(gather));
    MidOp apply{MidOpKind::RowApply, step.name, index};
    apply.inputs = {input, statistics_id};
    apply.output = activation_value(step.output, output);
    add_op(std::move(apply));
  }

  void add_attention(int index) {
    const Step& step = chain_.steps[index];
    const AttentionCandidate candidate =
        attention_candidates(chain_, step, choice_.group_size)[static_cast<std::size_t>(choice_.step_choice[index])];
    const AttentionShape shape = attention_shape(chain_, step, candidate, program_.groups.chunk_panels);
    MidOp op{MidOpKind::Attention, step.name, index};
    op.attention_head_parts = candidate.head_parts;
    op.attention_query_parts = candidate.query_parts;
    op.attention_key_parts = candidate.key_parts;
    op.inputs.push_back(value_in(step.input, shape.q_layout(), true));
    op.inputs.push_back(value_in(step.second_input, shape.k_layout(), true));
    op.inputs.push_back(value_in(step.third_input, shape.v_layout(), true));
    if (candidate.key_parts == 1) {
      op.output = activation_value(step.output, shape.output_layout());
      add_op(std::move(op));
      return;
    }
    // Partials (FP32) and their statistics, on the tiles that computed them.
    MidValue partials{step.name + ".partials", chain_.activations[step.output].cols, StorageType{ElementType::F32, 0},
                      program_.values[static_cast<std::size_t>(op.inputs[0])].layout, true, -1};
    op.output = add_value(std::move(partials));
    MidOp merge = op;
    merge.kind = MidOpKind::AttentionMerge;
    merge.name = step.name + ".merge";
    merge.inputs = {op.output};
    add_op(std::move(op));
    merge.output = activation_value(step.output, shape.output_layout());
    add_op(std::move(merge));
  }

  void close_region() {
    const RepeatRegion& region = *chain_.repeat;
    // The body's final value goes where the loop's next iteration reads its
    // start: the value the loop was entered with (not a copy the body made).
    for (const auto& [start, end] : region.carried) {
      const int entry_value = entry_values_.at(start);
      const Layout entry = program_.values[static_cast<std::size_t>(entry_value)].layout;
      int final_value = value_in(end, entry, false);
      program_.loop_carried.emplace_back(final_value, entry_value);
    }
    program_.repeat_last_op = static_cast<int>(program_.ops.size()) - 1;
  }

  // An op that exchanges opens a new superstep; compute ops join the
  // current one.
  void number_supersteps() {
    int superstep = -1;
    for (MidOp& op : program_.ops) {
      bool exchanges = op.kind == MidOpKind::Rearrange || op.kind == MidOpKind::RowApply ||
                       op.kind == MidOpKind::AttentionMerge ||
                       (op.kind == MidOpKind::Reduce && op.grid.k_parts > 1);
      if (exchanges || superstep < 0) ++superstep;
      op.superstep = superstep;
    }
    program_.supersteps = superstep + 1;
  }

  const Chain& chain_;
  const GemmCandidates& candidates_;
  const PlanChoice& choice_;
  MidProgram& program_;
  std::map<int, int> current_;       // activation -> value holding it now
  std::map<int, int> entry_values_;  // carried activation -> value the loop starts from
};

GroupPlan plan_groups(const Chain& chain, const PlanChoice& choice) {
  GroupPlan plan;
  plan.group_size = choice.group_size;
  plan.groups = choice.groups;
  plan.chunks = choice.chunks;
  plan.segment_rows = chain.segment_rows;
  plan.padded_segment_rows = chain.segment_rows ? chain.padded_segment_rows() : 0;
  plan.spaces = chain.spaces;
  const std::int64_t device_rows = chain.device_rows();
  std::int64_t panels = (device_rows + kPanelRows - 1) / kPanelRows;
  const std::int64_t unit = row_unit_panels(chain);
  std::vector<Range> group_panels = balanced_split(panels, choice.groups, unit);
  std::int64_t chunk_panels = 0;
  for (const Range& range : group_panels) {
    const std::int64_t units = (range.size() + unit - 1) / unit;
    chunk_panels = std::max(chunk_panels, (units + choice.chunks - 1) / choice.chunks * unit);
  }
  for (const Range& range : group_panels) {
    std::vector<Range> chunks;
    for (int chunk = 0; chunk < choice.chunks; ++chunk) {
      std::int64_t first = std::min(range.end, range.begin + chunk * chunk_panels);
      std::int64_t last = std::min(range.end, first + chunk_panels);
      chunks.push_back(Range{std::min(device_rows, first * kPanelRows), std::min(device_rows, last * kPanelRows)});
    }
    plan.rows.push_back(std::move(chunks));
  }
  plan.chunk_panels = chunk_panels;
  return plan;
}

}  // namespace

MidProgram construct_mid(const Chain& chain, const GemmCandidates& candidates, const PlanChoice& choice,
                         const CompileOptions& options) {
  MidProgram program;
  program.groups = plan_groups(chain, choice);
  MidBuilder builder(chain, candidates, choice, program);
  builder.build();
  program.estimate = choice.estimate;
  program.staged_weights = choice.staged_weights;
  (void)options;
  return program;
}

}  // namespace tilec::compiler
