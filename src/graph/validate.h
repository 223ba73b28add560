// Checks every invariant of a graph, for graphs that did not come from a
// GraphBuilder (files, hand-made graphs in tests): ids in range, operands
// defined before use, op/value/output names valid and unique and following
// the builder's naming, inputs then parameters then other ops, every type
// legal and equal to what the builder would infer, repeat bodies
// (recursively), and outputs that exist.
#pragma once

#include "graph/graph.h"

namespace tilec::graph {

// Throws BadInput naming the op (or value, or output) and the problem.
void validate(const Graph& graph);

}  // namespace tilec::graph
