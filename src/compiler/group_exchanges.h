// Stage group_exchanges: from the mid-level IR to buffers, transfers and
// tasks, with exchanges grouped into as few phases as the data allows.
//
// Needs: the mid-level IR.
// Produces: the LIR: one buffer per value piece, partial-sum buffer,
// receive slots, weight panels and bias vector (sizes are the largest over
// tiles); the transfers of every rearrange and reduction (multicast where
// several tiles need the same bytes); one task per kernel run; each op's
// phase: an exchange goes into the first phase after its data is computed,
// and phases follow program order.
// Leaves for later: merging transfers (merge_copies), removing identity
// work (eliminate), addresses, timing, worker shares, code.
#pragma once

#include "compiler/lir.h"

namespace tilec::compiler {

Lir group_exchanges(const Chain& chain, const MidProgram& program);

// Bytes one column of a value's piece occupies on a tile (its piece panels
// x 16 rows).
std::uint32_t column_bytes(const MidValue& value);

}  // namespace tilec::compiler
