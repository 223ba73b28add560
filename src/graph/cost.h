// What a graph costs, independent of any machine: multiply-accumulates and
// the bytes of its inputs and parameters as stored.
#pragma once

#include "graph/graph.h"

#include <cstdint>

namespace tilec::graph {

// Multiply-accumulates of one op: gemm M*N*K per batch element; attention
// S*T*(D+E) per batch element; repeat count x its body's; 0 for the others.
std::int64_t op_macs(const Graph& graph, const Op& op);
std::int64_t graph_macs(const Graph& graph);

std::int64_t input_bytes(const Graph& graph);
std::int64_t parameter_bytes(const Graph& graph);

}  // namespace tilec::graph
