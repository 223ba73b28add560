#include "compiler/summation_order.h"

#include "support/error.h"

namespace tilec::compiler {

std::vector<int> reduction_order(int k_parts, int own_part) {
  std::vector<int> order{own_part};
  for (int part = 0; part < k_parts; ++part)
    if (part != own_part) order.push_back(part);
  return order;
}

namespace {

// The gemm op's name in the summation order: a repeat body's as "REPEAT.NAME".
std::string order_name(const Chain& chain, int step) {
  const std::string& name = chain.steps[static_cast<std::size_t>(step)].name;
  if (chain.repeat && step >= chain.repeat->first_step && step <= chain.repeat->last_step)
    return chain.repeat->name + "." + name;
  return name;
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

}  // namespace

graph::SummationOrder summation_order(const Chain& chain, const MidProgram& program) {
  graph::SummationOrder order;
  for (const MidOp& op : program.ops) {
    if (op.kind != MidOpKind::Reduce || op.grid.k_parts < 2) continue;
    const std::string name = order_name(chain, op.step);
    reference::KSplit split = split_of(program, op);
    const auto [found, added] = order.gemms.emplace(name, split);
    TILEC_CHECK(added || found->second == split, "op '{}' is reduced in two orders", name);
  }
  return order;
}

}  // namespace tilec::compiler
