// Sibling GEMMs fused into one (chain.h, fuse_sibling_gemms).
//
// An attention layer's q, k and v projections read one activation. Apart,
// each spreads over the group on its own grid: the activation is read three
// times and each narrow result splits its sums over many K parts, whose
// partial sums dominate the exchange. Side by side, one GEMM of three times
// the columns reads the activation once and finds wider grids with fewer K
// parts; its results are views of its output, which the steps that read
// them rearrange from (they move anyway: attention wants its own layouts).
#include "compiler/chain.h"
#include "compiler/mid.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <span>

namespace tilec::compiler {

namespace {

std::int64_t output_columns(const Chain& chain, const Step& step) {
  const Weight& weight = chain.weights[static_cast<std::size_t>(step.weight)];
  return weight.columns(step.transpose_weight);
}

bool same_weight_kind(const Weight& a, const Weight& b) {
  return a.storage == b.storage && a.per_iteration == b.per_iteration && a.joined.empty() && b.joined.empty();
}

bool same_epilogue(const Chain& chain, const Step& a, const Step& b) {
  if (a.epilogue.size() != b.epilogue.size()) return false;
  for (std::size_t i = 0; i < a.epilogue.size(); ++i) {
    const EpilogueOp& x = a.epilogue[i];
    const EpilogueOp& y = b.epilogue[i];
    if (x.kind != y.kind || x.result != y.result) return false;
    if (x.kind == EpilogueOp::Kind::Gelu && x.approximation != y.approximation) return false;
    if (x.kind == EpilogueOp::Kind::AddBias &&
        !same_weight_kind(chain.weights[static_cast<std::size_t>(x.weight)],
                          chain.weights[static_cast<std::size_t>(y.weight)]))
      return false;
  }
  return true;
}

// Whether an activation must stay a value of its own: a graph output, a
// repeat's carried value, or already a view.
bool pinned(const Chain& chain, int activation) {
  if (chain.activations[static_cast<std::size_t>(activation)].view_of >= 0) return true;
  for (const auto& [name, output] : chain.outputs)
    if (output == activation) return true;
  if (chain.repeat)
    for (const auto& [start, end] : chain.repeat->carried)
      if (start == activation || end == activation) return true;
  return false;
}

bool in_repeat(const Chain& chain, int step) {
  return chain.repeat && step >= chain.repeat->first_step && step <= chain.repeat->last_step;
}

// Whether `later` computes as `first` does, on the same input: the same K,
// weights and biases of one type, the same epilogue. Weights are stored in
// 16-column blocks; each GEMM's columns in whole blocks keep every block
// within one graph weight.
bool joins(const Chain& chain, int first_index, int later_index) {
  const Step& first = chain.steps[static_cast<std::size_t>(first_index)];
  const Step& later = chain.steps[static_cast<std::size_t>(later_index)];
  if (later.kind != StepKind::Gemm || !later.fused.empty() || later.input != first.input ||
      later.transpose_weight != first.transpose_weight || later.result != first.result ||
      in_repeat(chain, first_index) != in_repeat(chain, later_index) || pinned(chain, later.output))
    return false;
  const Weight& a = chain.weights[static_cast<std::size_t>(first.weight)];
  const Weight& b = chain.weights[static_cast<std::size_t>(later.weight)];
  const std::int64_t k_a = first.transpose_weight ? a.shape[1] : a.shape[0];
  const std::int64_t k_b = later.transpose_weight ? b.shape[1] : b.shape[0];
  return same_weight_kind(a, b) && k_a == k_b && output_columns(chain, first) % kPanelRows == 0 &&
         output_columns(chain, later) % kPanelRows == 0 && same_epilogue(chain, first, later);
}

// Weights side by side: the GEMMs' weights, or one epilogue's biases.
int join_weights(Chain& chain, const std::vector<int>& parts, bool transposed) {
  Weight joined = chain.weights[static_cast<std::size_t>(parts.front())];
  std::vector<std::string> names;
  std::int64_t columns = 0;
  for (int part : parts) {
    const Weight& weight = chain.weights[static_cast<std::size_t>(part)];
    names.push_back(weight.parameter);
    columns += weight.columns(transposed);
  }
  joined.parameter = fmt::format("{}", fmt::join(names, "+"));
  if (joined.shape.size() == 1)
    joined.shape = {columns};
  else if (transposed)
    joined.shape[0] = columns;
  else
    joined.shape[1] = columns;
  joined.joined = parts;
  chain.weights.push_back(std::move(joined));
  return static_cast<int>(chain.weights.size()) - 1;
}

// Steps [first, first + count) as one GEMM; their outputs become views.
Step fuse(Chain& chain, int first, int count) {
  const std::span<const Step> siblings(chain.steps.data() + first, static_cast<std::size_t>(count));
  Step fused = siblings.front();
  std::vector<int> weights;
  std::vector<std::string> names, outputs;
  std::int64_t columns = 0;
  for (const Step& step : siblings) {
    weights.push_back(step.weight);
    names.push_back(step.name);
    outputs.push_back(chain.activations[static_cast<std::size_t>(step.output)].name);
    const std::int64_t width = output_columns(chain, step);
    fused.fused.push_back(FusedGemm{step.name, columns, width});
    columns += width;
  }
  fused.name = fmt::format("{}", fmt::join(names, "+"));
  fused.weight = join_weights(chain, weights, fused.transpose_weight);
  for (std::size_t e = 0; e < fused.epilogue.size(); ++e) {
    std::vector<int> biases;
    std::vector<std::string> ops;
    for (const Step& step : siblings) {
      biases.push_back(step.epilogue[e].weight);
      ops.push_back(step.epilogue[e].op_name);
    }
    EpilogueOp& op = fused.epilogue[e];
    op.op_name = fmt::format("{}", fmt::join(ops, "+"));
    if (op.kind == EpilogueOp::Kind::AddBias) op.weight = join_weights(chain, biases, false);
  }
  Activation output = chain.activations[static_cast<std::size_t>(siblings.front().output)];
  output.name = fmt::format("{}", fmt::join(outputs, "+"));
  output.cols = columns;
  chain.activations.push_back(std::move(output));
  fused.output = static_cast<int>(chain.activations.size()) - 1;
  for (const Step& step : siblings) {
    Activation& view = chain.activations[static_cast<std::size_t>(step.output)];
    view.view_of = fused.output;
    view.view_offset = fused.fused[static_cast<std::size_t>(&step - siblings.data())].first_column;
  }
  return fused;
}

}  // namespace

void fuse_sibling_gemms(Chain& chain) {
  std::vector<Step> steps;
  int removed_before_repeat = 0, removed_in_repeat = 0;
  for (int index = 0; index < static_cast<int>(chain.steps.size());) {
    const Step& step = chain.steps[static_cast<std::size_t>(index)];
    int count = 1;
    if (step.kind == StepKind::Gemm && step.fused.empty() && !pinned(chain, step.output))
      while (index + count < static_cast<int>(chain.steps.size()) && joins(chain, index, index + count)) ++count;
    steps.push_back(count > 1 ? fuse(chain, index, count) : step);
    if (count > 1) {
      if (in_repeat(chain, index))
        removed_in_repeat += count - 1;
      else if (chain.repeat && index < chain.repeat->first_step)
        removed_before_repeat += count - 1;
    }
    index += count;
  }
  chain.steps = std::move(steps);
  if (chain.repeat) {
    chain.repeat->first_step -= removed_before_repeat;
    chain.repeat->last_step -= removed_before_repeat + removed_in_repeat;
  }
}

}  // namespace tilec::compiler
