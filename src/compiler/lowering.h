// The LIR-to-LIR lowering stages. Each rewrites the LIR in place.
//
// merge_copies
//   Needs: transfers from group_exchanges.
//   Does: merges transfers of one phase that go from one tile to the same
//   tiles from consecutive source bytes to consecutive destination bytes
//   (contiguous transfers only), and turns identical sends to different
//   tiles (same bytes, same patterns) into one multicast.
//   Leaves: fewer, larger transfers; nothing else changes.
//
// eliminate
//   Needs: the LIR after merge_copies.
//   Does: removes identity work: an elementwise task that only copies (its
//   output buffer becomes the input's), a reduction with one K part and no
//   epilogue (the GEMM drains straight into the output), and tasks and
//   transfers left with nothing to do.
//   Leaves: buffers that alias others are retargeted everywhere they were
//   named; their own entry stays with zero bytes.
#pragma once

#include "compiler/lir.h"

namespace tilec::compiler {

void merge_copies(Lir& lir);
void eliminate(Lir& lir);

}  // namespace tilec::compiler
