// The mid-level IR: a chain planned onto tiles.
//
// Decided at this level:
// - Tile groups: the chip's tiles form `groups` groups of `group_size`
//   tiles; each group owns a share of the token rows (in 16-row panels) and
//   runs every step on them, with its own copy of the weights. Inside a
//   group, steps spread their columns over the group's tiles.
// - Temporal chunks: a group processes its rows `chunks` at a time, running
//   the whole chain once per chunk (weights stay resident; activation
//   buffers are reused).
// - Every value's layout: which columns each tile of a group holds (and
//   replicas). Rows of a chunk are always stored in the panel format: 16-row
//   panels, each panel column-major ([column][16 rows]), so one 16-byte
//   load gives 16 FP8 (8 FP16, 4 FP32) rows of one column.
// - Each step's implementation: GEMM grid (column parts x K parts), partial
//   sums and their reduction, fused epilogues, and the explicit layout
//   changes (rearranges) between steps.
// - The superstep structure: which ops share an exchange phase.
// Not decided: addresses, exchange timing, worker shares, code.
#pragma once

#include "compiler/chain.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tilec::compiler {

constexpr std::int64_t kPanelRows = 16;

struct Range {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t size() const { return end - begin; }
  bool operator==(const Range&) const = default;
};

// Splits [0, extent) into `parts` ranges whose sizes are multiples of
// `unit` (but for the last) and differ by at most one unit.
std::vector<Range> balanced_split(std::int64_t extent, int parts, std::int64_t unit);

// Groups and chunks take rows in units of this many panels: one panel, or
// one attention segment when segments are whole panels, or else every row
// (one group, one chunk), so that no segment is ever split.
std::int64_t row_unit_panels(const Chain& chain);

// Which columns of a value each tile of a group holds: part p covers
// columns parts[p] and lives on every tile in tiles[p] (group-relative
// tile numbers; more than one = replicas).
struct ColumnLayout {
  std::vector<Range> parts;
  std::vector<std::vector<int>> tiles;

  bool operator==(const ColumnLayout&) const = default;
  // The columns a group tile holds (empty when none).
  Range columns_on(int group_tile) const;
};

struct GroupPlan {
  int group_size = 1;
  int groups = 1;
  int chunks = 1;
  // Every chunk is computed as this many 16-row panels (rows past a
  // group's share are padding).
  std::int64_t chunk_panels = 1;
  // rows[g][c]: the token rows group g holds in chunk c (panel-aligned;
  // may be empty).
  std::vector<std::vector<Range>> rows;
  std::int64_t max_chunk_rows() const;

  int tile_of(int group, int group_tile) const { return group * group_size + group_tile; }
};

struct MidValue {
  std::string name;
  std::int64_t cols = 0;
  StorageType storage;
  ColumnLayout layout;
  bool partial = false;  // FP32 partial sums awaiting a reduction
  int activation = -1;   // chain activation it holds (-1 for partials)
};

enum class MidOpKind : std::uint8_t {
  Rearrange,  // exchange: output = input in another layout
  Gemm,       // compute: output (partial or final) = input x weight slice
  Reduce,     // exchange + compute: sum K-part partials, apply the epilogue
  Map,        // compute: elementwise epilogue (and add of a second input)
  LayerNorm,  // compute on whole rows
  Softmax,    // compute on whole rows
  Attention,  // compute on whole rows of q, k and v (inputs in that order)
};

struct GemmGrid {
  int column_parts = 1;  // Pn
  int k_parts = 1;       // Pk
  std::vector<Range> columns;  // per column part
  std::vector<Range> ks;       // per K part
  // Group tile that computes (column part n, K part k).
  int tile(int n, int k) const { return k * column_parts + n; }
};

struct MidOp {
  MidOpKind kind;
  std::string name;
  int step = -1;  // chain step it implements (-1 for rearranges)
  std::vector<int> inputs;  // MidValue indices
  int output = -1;
  GemmGrid grid;  // Gemm and Reduce
  std::vector<EpilogueOp> epilogue;  // Gemm (when not partial), Reduce, Map
  // Superstep this op belongs to; an op with exchange starts a new one.
  int superstep = -1;
};

struct MidEstimate {
  double cycles = 0;
  std::int64_t peak_bytes = 0;  // largest per-tile use, code included
};

struct MidProgram {
  GroupPlan groups;
  std::vector<MidValue> values;
  std::vector<MidOp> ops;  // one chunk's worth, in order
  // The repeat region as a range of ops (inclusive), run `count` times.
  int repeat_first_op = -1;
  int repeat_last_op = -1;
  std::int64_t repeat_count = 1;
  // (value at the loop body's end, value at its start): stored in one place.
  std::vector<std::pair<int, int>> loop_carried;
  int supersteps = 0;  // per chunk, counting the repeat body once
  MidEstimate estimate;
};

}  // namespace tilec::compiler
