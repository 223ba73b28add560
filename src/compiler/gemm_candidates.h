// Stage gemm_candidates: the ways each GEMM step can spread over a group.
//
// Needs: the chain and the group sizes the search will try.
// Produces: for every GEMM step and group size, candidate grids (row parts
// x column parts x K parts, uneven splits in 16-column units), their
// partial-sum type and weight bytes per tile; and the layouts a grid reads
// and leaves for a given chunk size.
// Leaves for later: the choice (construct_mid), addresses, timing.
#pragma once

#include "compiler/chain.h"
#include "compiler/mid.h"
#include "compiler/options.h"

#include <cstdint>
#include <map>
#include <vector>

namespace tilec::compiler {

// A grid shape for one GEMM step on a group: row parts x column parts x K
// parts, with its column and K ranges (rows are split per chunk size).
struct GemmCandidate {
  int row_parts = 1;
  int column_parts = 1;
  int k_parts = 1;
  // With row parts: each (n, k) weight block is stored once, in pieces over
  // its row parts' tiles, and gathered before the GEMM (else replicated).
  bool weights_moved = false;
  std::vector<Range> columns;  // per column part
  std::vector<Range> ks;       // per K part
  ElementType partial_type;    // what partial sums are stored and exchanged as
  std::int64_t weight_bytes = 0;  // resident per tile, every iteration included
  std::int64_t max_columns = 0;   // widest column part
  std::int64_t max_ks = 0;        // widest K part
};

struct GemmCandidates {
  // [step][group size] -> candidates
  std::map<int, std::map<int, std::vector<GemmCandidate>>> by_step;
};

std::vector<int> candidate_group_sizes(const Chain& chain, const CompileOptions& options);

GemmCandidates gemm_candidates(const Chain& chain, const std::vector<int>& group_sizes,
                               const CompileOptions& options);

// The row part counts candidates take.
constexpr int kRowPartCounts[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48};

// The rows of a chunk of `chunk_panels` panels split into `parts` row
// parts of whole panels (balanced).
std::vector<Range> row_split(std::int64_t chunk_panels, int parts);
// The largest of them, in panels.
std::int64_t largest_part_panels(const std::vector<Range>& rows);

// A candidate's grid over a chunk of `chunk_panels` panels.
GemmGrid gemm_grid(const GemmCandidate& candidate, std::int64_t chunk_panels);
// What the grid reads: block (m, k) on every tile of column parts n.
Layout gemm_input_layout(const GemmGrid& grid);
// Its partial sums: block (m, n) on the K parts' tiles.
Layout gemm_partial_layout(const GemmGrid& grid);
// After the reduction: each K part keeps an even share of the columns of
// its (m, n) block (whole columns: the reduction works column by column).
Layout gemm_output_layout(const GemmGrid& grid);

// How a host input is bound when a step wants it in `layout`: stored once,
// each block split by columns into `spread` pieces on the first `spread`
// of its tiles, each of which multicasts its piece to the others. A small
// spread means few receives (less code, less arming); a large one spreads
// the input's memory over more tiles.
Layout stored_once(const Layout& layout, int spread);

// The spreads the search tries for a host input.
constexpr int kInputSpreads[] = {1, 4, 16, 1 << 20};

// A map on a host input: its columns spread over the group in 16-column
// parts, and its rows over the tiles those leave, one block a tile.
Layout spread_layout(std::int64_t chunk_panels, std::int64_t cols, int group_size);

}  // namespace tilec::compiler
