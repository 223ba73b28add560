// Structural comparison of graphs, for round-trip tests of every format that
// carries a graph (JSON here, packages later).
#pragma once

#include "graph/graph.h"

#include <string>

namespace tilec::graph {

// Empty when the graphs are equal (ops and their attributes, values, argument
// and output lists, repeat bodies compared recursively); otherwise the first
// difference found, e.g. "op 3 'h': operands differ".
std::string first_difference(const Graph& a, const Graph& b);

inline bool graphs_equal(const Graph& a, const Graph& b) { return first_difference(a, b).empty(); }

}  // namespace tilec::graph
