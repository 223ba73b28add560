// What a compile is asked to do.
#pragma once

#include "target/machine.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tilec::compiler {

struct CompileOptions {
  MachineModel machine = ipu21();
  // The most memory any tile may use, code included (0 = the whole tile).
  std::uint32_t budget_bytes = 0;
  // Force the planner's choices (tests and experiments); unset = search.
  std::optional<int> groups;
  std::optional<int> chunks;
  // The most K parts a GEMM may split its sums over. 1 keeps every output's
  // sum in one accumulator, in the host reference's order, and every
  // layernorm's and softmax's row statistics on one tile: results are then
  // bit-identical to the reference (at some cost in cycles).
  std::optional<int> max_k_parts;
  // Every GEMM splits its rows into this many parts, storing each weight
  // block once and gathering it (tests and experiments); unset = search.
  std::optional<int> row_parts;
  // Partial sums in FP16 wherever a GEMM's result is FP16, even where FP32
  // keeps results closer to the reference (a repeat body, an FP8 cast
  // later): the driver asks for it when no plan fits otherwise.
  bool fp16_partials_anywhere = false;
  // Runs of identical receives armed in hardware loops (less code, a bundle
  // more time each): the driver asks for it when no plan fits otherwise,
  // for the first plan that fits so.
  bool loop_receives = false;
  // A stage name: the compile result carries a text dump of the IR as that
  // stage left it (--dump-after). Empty = no dump.
  std::string dump_after;

  std::uint32_t budget() const { return budget_bytes ? budget_bytes : machine.memory_bytes(); }
};

}  // namespace tilec::compiler
