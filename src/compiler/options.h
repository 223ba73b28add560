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
  // A stage name: the compile result carries a text dump of the IR as that
  // stage left it (--dump-after). Empty = no dump.
  std::string dump_after;

  std::uint32_t budget() const { return budget_bytes ? budget_bytes : machine.memory_bytes(); }
};

}  // namespace tilec::compiler
