// The ways a layernorm or softmax step spreads over a group.
//
// Rows split into row parts (whole panels) and columns into column parts,
// tile r * column parts + c holding block (r, c):
// - whole rows: each tile of row part r holds every column of its rows and
//   writes its share of the columns (the whole-row kernels compute the
//   statistics over every column on each tile);
// - split: each tile holds one block; it computes its rows' statistics over
//   its columns, sends them to every tile of its row part, and combines
//   them all to write its block (the split-column kernels).
#pragma once

#include "compiler/cost_model.h"
#include "compiler/mid.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tilec::compiler {

struct RowCandidate {
  int row_parts = 1;
  int col_parts = 1;
  bool split = false;

  // "RxC", row parts x column parts, then " split".
  std::string text() const;
};

// Every row part count of kRowPartCounts and power-of-two column part
// count the group and the columns allow, whole and split; and the other
// counts up to kMaxRowParts whose grid fills the group (the full chip's
// 46 x 32 and 23 x 64: a chunk of 46 panels on every tile).
constexpr int kMaxRowParts = 48;
std::vector<RowCandidate> row_candidates(std::int64_t cols, int group_size);

// What the step reads and writes for a chunk of `chunk_panels` panels.
Layout row_input_layout(const RowCandidate& candidate, std::int64_t chunk_panels, std::int64_t cols);
Layout row_output_layout(const RowCandidate& candidate, std::int64_t chunk_panels, std::int64_t cols);

// A repeat body's layernorm whose rows split over row parts stores its
// gamma/beta pairs once per column part, in pieces over its first row
// parts (at most kPairPieces: each is one more receive on every tile),
// and gathers them on every tile of the column part before the apply;
// stored per tile they would cost every iteration's pairs on each tile.
constexpr int kPairPieces = 8;
bool gathers_pairs(int row_parts, bool per_iteration);
// The pieces of a column part of `columns` columns (relative ranges).
std::vector<Range> pair_pieces(std::int64_t columns, int row_parts);

// How a split step runs on a tile of `panels` panels x `columns` columns
// with `col_parts` tiles in its row part: the statistics kernel over
// `ranges` column ranges (when more than one, its slots are merged into
// one), the exchange (one slot out, col_parts - 1 in), then the apply over
// every slot, or a merge of them and the apply of one; with the kernels'
// cycles.
struct SplitRowPlan {
  int ranges = 1;
  bool merge_received = false;
  int apply_ranges = 1;
  double cycles = 0;
};
SplitRowPlan split_row_plan(RowKernel kernel, ElementType input, ElementType output, std::int64_t panels,
                            std::int64_t columns, int col_parts);

}  // namespace tilec::compiler
