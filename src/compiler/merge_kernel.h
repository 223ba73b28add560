// The attention merge kernel: n partial attention outputs O_i (FP32, each
// over its own key block, unnormalised) and their softmax statistics
// (m_i, l_i per row) become, per row,
//   M = max_i m_i,  w_i = exp(m_i - M),  L = sum_i w_i l_i,
//   u_i = w_i / L,  out = sum_i u_i O_i
// in FP16 or FP32 (docs/kernels.md "Attention merge" gives the argument
// block and the exact order of the arithmetic).
//
// Workers take row quads (4 rows, one FP32 quad) and a range of columns.
// Per quad: the weights u_i into the worker's scratch; then the columns 6
// at a time (a tail of 1-5 last), each block summing its 6 columns over
// the partials in 6 accumulator quads.
#pragma once

#include "compiler/kernel_library.h"
#include "compiler/kernel_writer.h"

#include <array>
#include <cstdint>
#include <string>

namespace tilec::compiler {

// Columns a block sums at once.
constexpr int kMergeBlockColumns = 6;

// Bytes of one merge worker's scratch for n partials: the block count (16
// bytes), then the n weights of a row quad (16 bytes each).
constexpr std::int64_t merge_scratch_bytes(std::int64_t partials) { return 16 + 16 * partials; }

struct MergeShape {
  int entry = 0;  // to the empty check, included
  int quad = 0;   // straight-line bundles per row quad: statistics set-up, bases, the loop back
  // The three loops over the partials' statistics per quad (M; the w_i and
  // L; the u_i): fixed + (n - 1) x interval bundles each.
  std::array<int, 3> statistics_fixed{}, statistics_interval{};
  // A block of k columns (index k = 1..6): bundles outside its loop over
  // the partials, and per partial after the first (k + 2).
  std::array<int, kMergeBlockColumns + 1> block{}, per_partial{};
  // Choosing the tail block after the full blocks, by tail width 0..5.
  std::array<int, kMergeBlockColumns> dispatch{};
  int exit = 1;
};

MergeShape merge_shape(const MergeVariant& variant);

std::string merge_source(const std::string& name, const MergeVariant& variant);

// Bundles one worker issues for `quads` row quads of `columns` columns
// (1 <= columns < 65536) over `partials` partials (n >= 1).
std::int64_t merge_worker_bundles(const MergeShape& shape, std::int64_t quads, std::int64_t columns,
                                  std::int64_t partials);

}  // namespace tilec::compiler
