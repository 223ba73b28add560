// Stage gemm_candidates: the ways each GEMM step can spread over a group.
//
// Needs: the chain and the group sizes the search will try.
// Produces: for every GEMM step and group size, candidate grids (column
// parts x K parts, uneven splits in 16-column units), the layouts they read
// and leave, and their per-chunk-row costs: compute cycles, the partial-sum
// reduction, weight bytes per tile.
// Leaves for later: the choice (construct_mid), addresses, timing.
#pragma once

#include "compiler/chain.h"
#include "compiler/mid.h"
#include "compiler/options.h"

#include <cstdint>
#include <map>
#include <vector>

namespace tilec::compiler {

struct GemmCandidate {
  GemmGrid grid;
  ColumnLayout input_layout;   // K parts, each on its column parts' tiles
  ColumnLayout output_layout;  // after the reduction: column part x K part
  ElementType partial_type;    // what partial sums are stored and exchanged as
  std::int64_t weight_bytes = 0;  // per tile, every iteration included
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

// How a host input is bound when a step wants it in `layout`: stored once,
// each part split into `spread` pieces on the first `spread` of its tiles,
// each of which multicasts its piece to the others. A small spread means
// few receives (less code, less arming); a large one spreads the input's
// memory over more tiles.
ColumnLayout stored_once(const ColumnLayout& layout, int spread);

// The spreads the search tries for a host input.
constexpr int kInputSpreads[] = {1, 4, 16, 1 << 20};

// Every column on the group's first tile: what whole-row steps (layernorm,
// softmax) read.
ColumnLayout whole_rows_layout(std::int64_t cols);

// Steps that need whole rows (layernorm, softmax, attention) spread over
// `parts` tiles of the group: every one of them holds all the columns of
// what it reads whole (whole_on_tiles), and tile t computes the output's
// columns [C t / parts, C (t + 1) / parts) (split_over_tiles, balanced).
ColumnLayout whole_on_tiles(std::int64_t cols, int parts);
ColumnLayout split_over_tiles(std::int64_t cols, int parts, std::int64_t unit = 1);
// The tile counts the search tries: powers of two up to the group's size
// and the output's columns.
std::vector<int> spread_counts(std::int64_t output_cols, int group_size);

// Where attention over `parts` tiles reads and writes. One head: q and k
// whole on every tile, v and the output split by columns. H heads: up to H
// tiles take whole heads, so no tile computes another's scores; beyond, a
// multiple of H, each head's q and k sit on parts / H tiles that split its
// v and output columns.
struct AttentionLayouts {
  ColumnLayout q, k, v, output;
};
AttentionLayouts attention_layouts(const Chain& chain, const Step& step, int parts);
std::vector<int> attention_part_counts(const Chain& chain, const Step& step, int group_size);

}  // namespace tilec::compiler
