#include "compiler/summation_order.h"

#include "compiler/attention_candidates.h"
#include "compiler/kernel_library.h"
#include "compiler/row_candidates.h"
#include "support/error.h"

namespace tilec::compiler {

std::vector<int> reduction_order(int k_parts, int own_part) {
  std::vector<int> order{own_part};
  for (int part = 0; part < k_parts; ++part)
    if (part != own_part) order.push_back(part);
  return order;
}

namespace {

// A graph op's name in the summation order: a repeat body's as "REPEAT.NAME".
std::string order_name(const Chain& chain, int step, const std::string& name) {
  if (chain.repeat && step >= chain.repeat->first_step && step <= chain.repeat->last_step)
    return chain.repeat->name + "." + name;
  return name;
}
std::string order_name(const Chain& chain, int step) {
  return order_name(chain, step, chain.steps[static_cast<std::size_t>(step)].name);
}

// A fused GEMM's split as one of its graph GEMMs sees it: the orders of
// its columns, numbered from 0.
reference::KSplit part_of(const reference::KSplit& fused, const FusedGemm& part) {
  reference::KSplit split = fused;
  split.orders.clear();
  const std::int64_t first = part.first_column, end = part.first_column + part.columns;
  for (const reference::KSplit::Columns& columns : fused.orders) {
    const std::int64_t begin = std::max(columns.begin, first), last = std::min(columns.end, end);
    if (begin < last) split.orders.push_back({begin - first, last - first, columns.parts});
  }
  return split;
}

reference::KSplit split_of(const MidProgram& program, const MidOp& reduce) {
  const GemmGrid& grid = reduce.grid;
  reference::KSplit split;
  split.cuts.push_back(grid.ks.front().begin);
  for (const Range& part : grid.ks) {
    TILEC_CHECK(part.begin == split.cuts.back(), "op '{}': K parts are not contiguous", reduce.name);
    split.cuts.push_back(part.end);
  }
  const MidValue& partial = program.values[static_cast<std::size_t>(reduce.inputs[0])];
  split.half_partials = partial.storage.element == ElementType::F16;
  // group_exchanges.cpp sums more than a combine kernel takes in passes.
  if (grid.k_parts > kMaxCombineInputs) split.pass_parts = kMaxCombineInputs;
  // Output column part (n, k) is the k-th share of column part n, reduced
  // on the tile of K part k.
  const Layout& output = program.values[static_cast<std::size_t>(reduce.output)].layout;
  for (int n = 0; n < grid.column_parts; ++n)
    for (int k = 0; k < grid.k_parts; ++k) {
      const Range share = output.cols[static_cast<std::size_t>(n * grid.k_parts + k)];
      if (share.size() > 0) split.orders.push_back({share.begin, share.end, reduction_order(grid.k_parts, k)});
    }
  return split;
}

// A row op on split columns: its column parts in slot order, each part's
// statistics ranges, and whether the received slots are merged first
// (group_exchanges.cpp, add_row_statistics and add_row_apply).
reference::RowSplit row_split_of(const Chain& chain, const MidProgram& program, const MidOp& apply) {
  const Step& step = chain.steps[static_cast<std::size_t>(apply.step)];
  const Layout& layout = program.values[static_cast<std::size_t>(apply.output)].layout;
  const SplitRowPlan plan = split_row_plan(
      step.kind == StepKind::LayerNorm ? RowKernel::LayerNorm : RowKernel::Softmax,
      program.values[static_cast<std::size_t>(apply.inputs[0])].storage.element, step.result.element,
      layout.piece_panels, layout.widest(), layout.col_parts());
  reference::RowSplit split;
  split.cuts.push_back(0);
  for (const Range& part : layout.cols) {
    TILEC_CHECK(part.begin == split.cuts.back() && part.size() > 0, "op '{}': column parts are not contiguous",
                apply.name);
    split.cuts.push_back(part.end);
  }
  split.ranges = plan.ranges;
  split.merge_received = plan.merge_received;
  return split;
}

// An attention step: its key blocks' valid keys, the softmax's chunks and
// the probabilities' type (attention_kernels: P in the operands' type).
reference::AttentionSplit attention_split_of(const Chain& chain, const MidProgram& program, const MidOp& op) {
  const Step& step = chain.steps[static_cast<std::size_t>(op.step)];
  const AttentionShape shape = attention_shape(
      chain, step, AttentionCandidate{op.attention_head_parts, op.attention_query_parts, op.attention_key_parts},
      program.groups.chunk_panels);
  const ElementType input = program.values[static_cast<std::size_t>(op.inputs[0])].storage.element;
  const AttentionKernels kernels = attention_kernels(shape, input, step.result.element);
  reference::AttentionSplit split;
  split.key_cuts.push_back(0);
  for (int b = 0; b < op.attention_key_parts; ++b) {
    const std::int64_t valid = shape.valid_keys(b);
    TILEC_CHECK(valid > 0 && shape.key_panels()[static_cast<std::size_t>(b)].begin * kPanelRows == split.key_cuts.back(),
                "op '{}': key block {} holds no keys or does not follow the one before", op.name, b);
    split.key_cuts.push_back(split.key_cuts.back() + valid);
  }
  split.softmax_chunks = kernels.softmax_chunks;
  split.half_probabilities = kernels.softmax.output == ElementType::F16;
  return split;
}

template <typename Order>
void add_order(std::map<std::string, Order>& orders, const std::string& name, const Order& order) {
  const auto [found, added] = orders.emplace(name, order);
  TILEC_CHECK(added || found->second == order, "op '{}' is computed in two orders", name);
}

}  // namespace

graph::SummationOrder summation_order(const Chain& chain, const MidProgram& program) {
  graph::SummationOrder order;
  for (const MidOp& op : program.ops) {
    if (op.step < 0) continue;
    const std::string name = order_name(chain, op.step);
    switch (op.kind) {
      case MidOpKind::Reduce: {
        if (op.grid.k_parts == 1) break;
        const reference::KSplit split = split_of(program, op);
        const Step& step = chain.steps[static_cast<std::size_t>(op.step)];
        if (step.fused.empty()) add_order(order.gemms, name, split);
        for (const FusedGemm& part : step.fused)
          add_order(order.gemms, order_name(chain, op.step, part.op), part_of(split, part));
        break;
      }
      case MidOpKind::LayerNorm:
      case MidOpKind::Softmax: add_order(order.rows, name, reference::RowSplit{}); break;
      case MidOpKind::RowApply: add_order(order.rows, name, row_split_of(chain, program, op)); break;
      case MidOpKind::Attention: add_order(order.attentions, name, attention_split_of(chain, program, op)); break;
      default: break;
    }
  }
  return order;
}

}  // namespace tilec::compiler
