// Exchange resolution of one superstep (docs/isa.md, "Exchange and
// synchronisation"). Every tile has run its exchange phase, recording its
// sends (with their bytes, read at issue) and armed receives. Resolution
// works out when each word arrives, checks that no receiver hears two
// words in one cycle, matches each source's sends to the receives armed for
// it in order, writes the data into the receivers' memory (run by run
// under a receive's pattern) and notes, per
// tile, the cycle after its last word landed (TileState::landed).
#pragma once

#include "sim/tile_state.h"
#include "target/machine.h"

#include <cstdint>
#include <vector>

namespace tilec::sim {

// Throws the fault of the lowest-numbered receiving tile whose exchange is
// wrong: colliding receives, data with no receive armed (or arriving before
// it is armed), a length that differs from its receive's, or an armed
// receive that got no data. Deterministic whatever the thread count.
void resolve_exchange(std::vector<TileState>& tiles, const MachineModel& machine,
                      const std::vector<std::vector<std::uint32_t>>& groups);

}  // namespace tilec::sim
