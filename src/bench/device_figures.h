// Figures about a compiled graph on a machine: the compute lower bound
// (roofline) its multiply-accumulates allow, and the bytes its bindings
// occupy on the device.
#pragma once

#include "graph/graph.h"
#include "package/package.h"
#include "target/machine.h"

#include <cstdint>

namespace tilec::bench {

// Sum over every GEMM and attention of its MACs / (tiles x the AMP's peak
// MACs per cycle at its operands' precision): 38,368 x batch x blocks for
// the SigLIP MLP at FP8 on the full chip. 0 for a graph without them.
double roofline_cycles(const graph::Graph& graph, const MachineModel& machine);

// The precision of the ops doing most of the graph's MACs (FP32 when none).
AmpPrecision dominant_precision(const graph::Graph& graph);

// Bytes the bindings of `role` occupy on the device: every piece counted,
// so a replicated parameter counts each copy.
std::int64_t binding_bytes(const package::Package& package, package::BindingRole role);

// The largest planned per-tile use, code included, over every tile.
std::uint32_t peak_tile_bytes(const package::Package& package);

}  // namespace tilec::bench
