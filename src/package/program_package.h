// A package of hand-written programs (`tilec asm FILE... -o prog.tpk`):
// assembled objects linked into tile images that `tilec sim` runs.
#pragma once

#include "isa/object.h"
#include "package/package.h"

#include <cstdint>
#include <vector>

namespace tilec::package {

// `programs[t]` on tile t, or with one program, that program on the first
// `tiles` tiles (0: every tile). Each program starts at its global `main`;
// its data sections are linked beside its code, and the exchange groups
// its sources declare become the package's, in file order. The other
// tiles stay idle. BadInput naming the file for a missing `main`, too many
// programs, a link error or groups that name no tile of the machine.
Package link_programs(const std::vector<isa::Object>& programs, std::uint32_t tiles, const MachineModel& machine);

}  // namespace tilec::package
