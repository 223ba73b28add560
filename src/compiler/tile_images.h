// Stage build_tile_images: the package.
//
// Needs: every tile's program and argument blocks, the linked kernel
// library, the placed storage, the exchange groups, and the graph (for the
// bindings' tensor types).
// Produces: one image per tile (the shared library segment, the tile's
// supervisor code and argument blocks, symbols, the memory map as regions),
// the exchange groups, and the bindings: for every host input, parameter
// and output, the (tile, address, block of elements) pieces where it lives.
// Weights are bound once per group that holds a copy; host inputs and
// outputs once, in the chunk records.
#pragma once

#include "compiler/exchange_schedule.h"
#include "compiler/lir.h"
#include "compiler/storage.h"
#include "compiler/tile_code.h"
#include "graph/graph.h"
#include "isa/linker.h"
#include "package/package.h"

namespace tilec::compiler {

struct ImageInputs {
  const graph::Graph& graph;
  const Lir& lir;
  const MemoryMap& map;
  const isa::Image& library;
  const ExchangePlan& exchanges;
  const MachineModel& machine;
  std::vector<TileCode>& programs;  // consumed
  const std::vector<TileArguments>& arguments;  // where each tile's tasks' blocks are
};

// The graph op or ops MidOp `op` implements, for its op symbols: the chain
// step's op and its epilogue's ops, joined by '+', under the repeat's name
// inside a repeat ("blocks/fc1+gelu").
std::string op_symbol_name(const Lir& lir, int op);

package::Package build_tile_images(const ImageInputs& inputs);

}  // namespace tilec::compiler
