// Stages size_tile_code, prepare_tile_code and emit_tile_code: each tile's
// supervisor program and argument blocks.
//
// The supervisor program of a tile runs the chunk body `chunks` times (a
// loop) and the repeat region `count` times inside it (a loop). Every phase
// is: the tile's exchange actions (receives armed, then sends, each after an
// xwait to its planned cycle; an xpat before a patterned one; a stepping
// recvn or sendn where it sets up the next one), xdone, then
// each task: its workers started with `run` on their argument blocks, and
// wsync; phases are separated by sync. Addresses that move with the chunk
// ($m12 = chunk * record size) or the iteration ($m11 = iteration * record
// size) are computed at run time and patched into argument blocks before
// `run`.
//
// Supervisor registers: $m1-$m4 scratch, $m5 kernel entry, $m6 argument
// block, $m7 and $m8 an exchange pattern's run and stride (xpat before a
// patterned send or recv), $m11 iteration offset, $m12 chunk offset, $m13
// iterations left, $m14 chunks left. While a phase's tasks start, $m2-$m4
// and $m7-$m10 hold the moving addresses their argument blocks are patched
// with, each loaded once per task.
//
// size_tile_code emits every program once with storage still unplaced
// (every address encodes in the same number of bundles, so sizes are
// exact); prepare_tile_code lays out and resolves the argument blocks;
// emit_tile_code emits the final programs.
#pragma once

#include "compiler/exchange_schedule.h"
#include "compiler/lir.h"
#include "compiler/storage.h"
#include "isa/linker.h"
#include "target/machine.h"

#include <cstdint>
#include <vector>

namespace tilec::compiler {

// A send of the supervisor program and the MidOp it serves (Transfer::op).
struct SendSite {
  std::uint32_t offset = 0;  // of its bundle, from the program's start
  int op = -1;
};

struct TileCode {
  std::vector<std::uint8_t> code;       // supervisor program, at MemoryMap::code_address
  std::vector<std::uint8_t> arguments;  // argument blocks, at MemoryMap::arguments_address
  std::vector<SendSite> sends;          // in program order
};

struct TileCodeContext {
  const Lir& lir;
  const ExchangePlan& exchanges;
  const isa::Image& library;
  const MachineModel& machine;
  const MemoryMap* map = nullptr;  // nullptr while sizing: every address reads 0
};

// lower_exchanges: each tile's exchange instructions per phase, addresses
// resolved: [phase][tile] -> instructions.
using ExchangeCode = std::vector<std::vector<std::vector<isa::Instruction>>>;
ExchangeCode lower_exchanges(const TileCodeContext& context);

// prepare_tile_code: each tile's argument blocks, laid out in task order
// from the start of the argument region, words resolved for chunk 0 and
// iteration 0; and where each task's blocks are.
struct TileArguments {
  std::vector<std::uint8_t> bytes;
  std::vector<std::vector<std::uint32_t>> block_addresses;  // [the tile's task (Lir::tasks_of_tile)][worker]
};
std::vector<TileArguments> prepare_tile_code(const TileCodeContext& context);
// The largest argument region over tiles, known once plan_kernels has given
// every task its worker arguments (what prepare_tile_code lays out).
std::uint32_t argument_bytes(const Lir& lir);

// emit_tile_code: every tile's program (index = absolute tile).
std::vector<TileCode> emit_tile_code(const TileCodeContext& context, const ExchangeCode& exchange,
                                     std::vector<TileArguments>& arguments);

// size_tile_code: the largest code and argument sizes over tiles.
struct CodeSizes {
  std::uint32_t code = 0;
  std::uint32_t arguments = 0;
};
CodeSizes size_tile_code(const TileCodeContext& context);

}  // namespace tilec::compiler
