// The mid-level IR: a chain planned onto tiles.
//
// Decided at this level:
// - Tile groups: the chip's tiles form `groups` groups of `group_size`
//   tiles; each group owns a share of the token rows (in 16-row panels) and
//   runs every step on them, with its own copy of the weights.
// - Temporal chunks: a group processes its rows `chunks` at a time, running
//   the whole chain once per chunk (weights stay resident; activation
//   buffers are reused).
// - Every value's layout on a group: a grid of row parts x column parts of
//   the chunk, each block on one tile or replicated on several. A tile
//   stores its block in the panel format: 16-row panels, each column's
//   panels contiguous ([column][panels][16 rows]), every tile's piece with
//   the same panel count, so one 16-byte load gives 16 FP8 (8 FP16, 4 FP32)
//   rows of one column.
// - Each step's implementation: GEMM grid (row parts x column parts x K
//   parts), partial sums and their reduction, fused epilogues, and the
//   explicit layout changes (rearranges) between steps.
// - The superstep structure: which ops share an exchange phase.
// Not decided: addresses, exchange timing, worker shares, code.
#pragma once

#include "compiler/chain.h"

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
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

// Where a value lives on a group: the chunk's rows split into row parts
// (panel-aligned, in order), its columns into column parts (in order), and
// block b = r * cols.size() + c on the group tiles block_tiles(b) (more
// than one = replicas; a tile holds at most one block). Every tile stores
// its block as `piece_panels` panels per column, the largest row part, so
// pieces share one column stride; a shorter row part leaves padding.
struct Layout {
  std::vector<Range> rows;
  std::vector<Range> cols;
  std::int64_t piece_panels = 0;
  // Every block's tiles, block after block; block b's end in tile_list.
  std::vector<int> tile_list;
  std::vector<int> block_end;

  bool operator==(const Layout&) const = default;
  int row_parts() const { return static_cast<int>(rows.size()); }
  int col_parts() const { return static_cast<int>(cols.size()); }
  int blocks() const { return static_cast<int>(block_end.size()); }
  // Blocks are added in order, (0, 0), (0, 1), ...
  void add_block(std::span<const int> tiles);
  void add_block(std::initializer_list<int> tiles) { add_block(std::span<const int>(tiles.begin(), tiles.size())); }
  std::span<const int> block_tiles(int block) const {
    const int begin = block ? block_end[static_cast<std::size_t>(block - 1)] : 0;
    return std::span<const int>(tile_list).subspan(static_cast<std::size_t>(begin),
                                                   static_cast<std::size_t>(block_end[static_cast<std::size_t>(block)] - begin));
  }
  std::span<const int> tiles_of(int row_part, int col_part) const { return block_tiles(row_part * col_parts() + col_part); }
  Range block_rows(int block) const { return rows[static_cast<std::size_t>(block / col_parts())]; }
  Range block_cols(int block) const { return cols[static_cast<std::size_t>(block % col_parts())]; }
  // The block a group tile holds, as (row part, column part), or (-1, -1).
  std::pair<int, int> block_on(int group_tile) const;
  // The columns and rows a group tile holds (empty when none).
  Range columns_on(int group_tile) const;
  Range rows_on(int group_tile) const;
  // The most columns any tile holds.
  std::int64_t widest() const;
};

// How rows `rows` x `cols` columns of block `from_block` of `from` move
// into block `to_block` of `to`, in one transfer. As whole columns when
// they are both blocks' rows and the pieces have one panel count: each
// column with its padding, the columns one after another, contiguous at
// both ends. Otherwise each column's rows are a run, and an end is strided
// (a byte pattern) when its runs are not its whole stored columns.
struct BlockMove {
  bool whole_columns = false;
  bool source_strided = false;
  bool destination_strided = false;
};
// Inline: the search's rearrange cost asks this of every overlapping pair
// of blocks.
inline BlockMove block_move(const Layout& from, int from_block, const Layout& to, int to_block, Range rows,
                            std::int64_t cols) {
  BlockMove move;
  move.whole_columns =
      from.piece_panels == to.piece_panels && rows == from.block_rows(from_block) && rows == to.block_rows(to_block);
  if (move.whole_columns) return move;
  move.source_strided = cols > 1 && rows.size() != from.piece_panels * kPanelRows;
  move.destination_strided = cols > 1 && rows.size() != to.piece_panels * kPanelRows;
  return move;
}

// Columns [window.begin, window.end) of a layout, numbered from 0: the
// column parts that hold some of them, cut to them, on the same tiles (a
// view's layout: its columns where the viewed value's blocks hold them).
Layout column_window(const Layout& layout, Range window);

// One row part covering the chunk's `chunk_panels` panels, column parts
// `cols`, part c on the tiles `tiles[c]`: the layouts of plans that split
// no rows.
Layout column_layout(std::int64_t chunk_panels, std::vector<Range> cols, const std::vector<std::vector<int>>& tiles);

struct GroupPlan {
  int group_size = 1;
  int groups = 1;
  int chunks = 1;
  // Every chunk is computed as this many 16-row panels (rows past a
  // group's share are padding).
  std::int64_t chunk_panels = 1;
  // rows[g][c]: the device rows group g holds in chunk c (panel-aligned;
  // may be empty). Device rows are the graph's token rows, or with
  // attention segments of `segment_rows` each padded to
  // `padded_segment_rows` (both 0 without).
  std::vector<std::vector<Range>> rows;
  std::int64_t segment_rows = 0;
  std::int64_t padded_segment_rows = 0;
  std::vector<RowSpace> spaces{RowSpace{}};  // the chain's row spaces
  std::int64_t max_chunk_rows() const;
  // The rows of space `space` that the chunk of device rows `chunk`
  // holds, in that space's device rows (per segment, each segment's rows
  // padded to whole panels; a shared space's rows are in every chunk).
  Range space_rows(Range chunk, int space) const;
  // The graph rows of a space's device rows: runs {first graph row, first
  // device row, count}, padding left out.
  struct RowRun {
    std::int64_t graph_row = 0;
    std::int64_t device_row = 0;
    std::int64_t count = 0;
  };
  std::vector<RowRun> graph_runs(Range device, int space = 0) const;

  int tile_of(int group, int group_tile) const { return group * group_size + group_tile; }
};

struct MidValue {
  std::string name;
  std::int64_t cols = 0;
  StorageType storage;
  Layout layout;
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
  // A layernorm or softmax on split columns: each tile's statistics of its
  // block's rows (output: the statistics), then exchange of them within
  // each row part and the result (inputs: x, the statistics).
  RowStatistics,
  RowApply,
  // Compute: each tile's share of attention (inputs q, k, v), into the
  // output, or with several key blocks into partials and their statistics.
  Attention,
  AttentionMerge,  // exchange + compute: partials of one block combined
};

struct GemmGrid {
  int row_parts = 1;     // Pm
  int column_parts = 1;  // Pn
  int k_parts = 1;       // Pk
  std::vector<Range> rows;     // per row part (rows of the chunk)
  std::vector<Range> columns;  // per column part
  std::vector<Range> ks;       // per K part
  std::int64_t piece_panels = 0;  // the largest row part, in panels
  // Each (n, k) weight block stored in pieces of 16-column blocks, piece m
  // on the tile of row part m, and gathered before the GEMM.
  bool weights_moved = false;
  // The 16-column blocks of column part n whose weights row part m stores
  // when weights move (all of them otherwise).
  Range weight_piece(int m, int n) const;
  // Group tile that computes (row part m, column part n, K part k).
  int tile(int m, int n, int k) const { return (m * k_parts + k) * column_parts + n; }
  int tiles() const { return row_parts * column_parts * k_parts; }
};

struct MidOp {
  MidOpKind kind;
  std::string name;
  int step = -1;  // chain step it implements (-1 for rearranges)
  std::vector<int> inputs;  // MidValue indices
  int output = -1;
  GemmGrid grid;  // Gemm and Reduce
  // Attention and AttentionMerge: head parts, query parts, key parts.
  int attention_head_parts = 1;
  int attention_query_parts = 1;
  int attention_key_parts = 1;
  std::vector<EpilogueOp> epilogue;  // Gemm (when not partial), Reduce, Map
  // Rearrange: the input's column that is the output's column 0 (a view
  // moving out of the fused GEMM output it is part of).
  std::int64_t column_offset = 0;
  // Superstep this op belongs to; an op with exchange starts a new one.
  int superstep = -1;
};

struct MidEstimate {
  double cycles = 0;
  std::int64_t peak_bytes = 0;  // largest per-tile use, code included
  std::int64_t data_bytes = 0;  // of it, data in interleaved memory
};

// The least by which built plans' exact peak and interleaved data exceeded
// their estimates (never below zero).
struct EstimateShortfall {
  std::int64_t peak = 0, data = 0;
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
  bool staged_weights = false;  // PlanChoice::staged_weights
  MidEstimate estimate;
};

}  // namespace tilec::compiler
