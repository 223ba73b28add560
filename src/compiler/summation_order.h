// The plan's summation order (graph/summation_order.h), read off the
// mid-level program: for every GEMM whose K the plan splits over tiles, the
// K parts, the type the partial sums travel in, and the order in which each
// tile's combine kernel adds them for the output columns it reduces; for
// every layernorm and softmax, whole rows or the column parts whose
// statistics the row kernels combine.
#pragma once

#include "compiler/chain.h"
#include "compiler/mid.h"
#include "graph/summation_order.h"

namespace tilec::compiler {

// The reduction's input order on the tile of K part k (group_exchanges.cpp,
// add_reduce): its own partial sums first, then the other parts' in K order.
std::vector<int> reduction_order(int k_parts, int own_part);

graph::SummationOrder summation_order(const Chain& chain, const MidProgram& program);

}  // namespace tilec::compiler
