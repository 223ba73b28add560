// The low-level IR: the plan as buffers, transfers and worker tasks.
//
// Decided at this level:
// - Buffers: every piece of memory a tile uses, with its size (the largest
//   any tile needs: buffers sit at the same address on every tile), its
//   memory class, and its lifetime in supersteps of the chunk body. Host
//   inputs and outputs live in per-chunk records (chunk c at
//   base + c * record size); per-iteration weights in per-iteration records.
// - Transfers: for each exchange phase, who sends which bytes to whom.
//   Transfers are described for one group (group-relative tiles); every
//   group runs the same ones on its own tiles.
// - Tasks: for each superstep's compute phase, which kernel runs on which
//   group tile over which buffers.
// Decided by later stages (fields filled in as they run): addresses,
// exchange timing, worker jobs, argument blocks, code.
#pragma once

#include "compiler/mid.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tilec::compiler {

enum class BufferKind : std::uint8_t {
  Value,          // a MidValue's per-tile piece
  Partial,        // GEMM partial sums
  ReceiveSlots,   // partial sums arriving from other K parts
  Weight,         // GEMM weight panels (resident)
  GatheredWeight, // a GEMM's weight block gathered from its row parts' pieces
  Bias,           // bias vectors, one word per column
  ChunkRecord,    // host inputs and outputs, one record per chunk
  IterationRecord,  // weights and biases of a repeat, one record per iteration
  Scratch,        // a kernel's working memory, one piece per worker
  Statistics,     // a split row op's statistics: a slot per tile of the row part
  Constant,       // data the compiler writes (Lir::constants), resident
};

// How a buffer's lifetime is counted: supersteps of the chunk body. A
// resident buffer lives for the whole run.
struct Lifetime {
  int first = 0;
  int last = 0;
  bool resident = false;

  bool overlaps(const Lifetime& other) const {
    return resident || other.resident || (first <= other.last && other.first <= last);
  }
};

struct Buffer {
  std::string name;
  BufferKind kind = BufferKind::Value;
  std::uint32_t bytes = 0;
  Lifetime lifetime;
  int value = -1;            // MidValue it holds (Value, Partial)
  int op = -1;               // MidOp it serves; -1: the records every op shares, or a graph input
  std::uint32_t address = 0; // set by place_storage
  // A buffer placed inside another (offset bytes in), sharing its memory.
  int alias_of = -1;
  std::uint32_t alias_offset = 0;
};

// Where bytes live on a tile: a buffer and a byte offset; in chunk c and
// repeat iteration i the address is
//   buffer address + offset + c * chunk_stride + i * iteration_stride.
struct Place {
  int buffer = -1;
  std::uint32_t offset = 0;
  std::uint32_t chunk_stride = 0;
  std::uint32_t iteration_stride = 0;

  Place plus(std::uint32_t bytes) const {
    Place moved = *this;
    moved.offset += bytes;
    return moved;
  }
  bool varies() const { return chunk_stride != 0 || iteration_stride != 0; }
};

// Where a transfer's bytes sit at one end: contiguous from the place, or
// (run > 0) bytes / run runs of `run` bytes, run i at place + i * stride
// (docs/isa.md, xpat: run and stride multiples of 4, stride >= run).
struct BytePattern {
  std::uint32_t run = 0;
  std::uint32_t stride = 0;

  bool contiguous() const { return run == 0; }
  bool operator==(const BytePattern&) const = default;
};

struct Transfer {
  int phase = 0;  // superstep whose exchange phase moves it
  int source_tile = 0;                  // group-relative
  std::vector<int> destination_tiles;   // group-relative; more than one = multicast
  Place source;
  Place destination;                    // the same on every destination tile
  std::uint32_t bytes = 0;              // in all, whatever the patterns
  BytePattern source_pattern;           // how the bytes are read at the source
  BytePattern destination_pattern;      // how they land on every destination
  std::string what;  // for dumps and errors
  int op = -1;       // MidOp it serves; -1: an iteration's staged weights
};

enum class TaskKind : std::uint8_t {
  Gemm,
  Combine,
  LayerNorm,
  Softmax,
  Attention,
  RowStatistics,  // a split row op's statistics kernel
  RowMerge,       // slots of statistics merged into one
  RowApply,       // a split row op's result from every slot
};

// One kernel run of a tile's share of attention (attention_candidates.h).
enum class AttentionStage : std::uint8_t {
  Transpose,      // one head's v block transposed (GEMM with the identity)
  Scores,         // S = q k^T (GEMM), FP32
  Softmax,        // P from S: normalised or partial, workers by half panels
  SoftmaxMax,     // the same split over column chunks: the chunks' maxima,
  SoftmaxExp,     // their exponentials,
  SoftmaxFinish,  // and the rows' statistics or P
  Output,         // O = P v (GEMM): the output's head columns, or a partial
  Merge,          // a block's partials combined (the merge kernel)
};

struct AttentionWork {
  AttentionStage stage = AttentionStage::Transpose;
  int head = 0;  // among the tile's heads
  // The tile's query and key blocks: panels held, keys that are real rows.
  std::int64_t query_panels = 0;
  std::int64_t key_panels = 0;
  std::int64_t valid_keys = 0;
  Place q, k, v, identity, transposed, scores, probabilities, chunk_statistics, output, statistics;
  // Merge: the key parts' slots (partial share, then statistics) and the
  // workers' scratch; the columns merged.
  Place slots, workers;
  std::int64_t merged_columns = 0;
};

// A word of a kernel's argument block: a constant, or the address of a
// place (patched by the supervisor when the place moves with the chunk or
// the repeat iteration).
struct ArgumentWord {
  std::uint32_t constant = 0;
  Place place;  // used when place.buffer >= 0

  static ArgumentWord value(std::uint32_t v) { return ArgumentWord{v, Place{}}; }
  static ArgumentWord address(const Place& p) { return ArgumentWord{0, p}; }
  bool is_address() const { return place.buffer >= 0; }
};

// One kernel run over one group tile's share.
struct Task {
  TaskKind kind = TaskKind::Gemm;
  int op = -1;  // MidOp it implements
  int superstep = 0;
  int tile = 0;  // group-relative
  // Gemm: weights (n-blocks x k), activation panel, output partial buffer.
  Place weights;
  Place activation;
  Place output;
  std::int64_t k_steps = 0;
  // The 16-column blocks [first_column_block, + column_blocks) of the
  // tile's output; `weights` is where the first one's weights start.
  std::int64_t first_column_block = 0;
  std::int64_t column_blocks = 0;
  std::int64_t panels = 0;         // 16-row panels of the tile's rows (the rest of its pieces is padding)
  // Combine: inputs summed, then the op's epilogue; `columns` columns of
  // `column_elements` elements (panels x 16) each.
  std::vector<Place> inputs;
  // A reduction over more inputs than one kernel pass takes runs as a chain
  // of passes: all but the last only sum into their first input (FP32, no
  // epilogue); the last applies the epilogue.
  bool partial_sum = false;
  // A combine's second task: the columns its first task's workers would
  // not share evenly, each column's panels shared (combine_kernel.h).
  bool rows_split = false;
  Place bias;
  AttentionWork attention;
  std::int64_t columns = 0;
  std::int64_t column_elements = 0;
  // Split row ops: the column ranges the workers take (RowStatistics: the
  // slots it writes, from `output` on); the slots read from inputs.back()
  // (RowMerge, RowApply) with their column counts at `counts` (FP32) and
  // their total; for a RowMerge of a tile's own ranges, those ranges' counts.
  int ranges = 1;
  int slots = 0;
  Place counts;
  std::int64_t total_columns = 0;
  // Filled by plan_kernels: the kernel, and one argument block per worker
  // that has work (at most six).
  std::string kernel;
  std::vector<std::vector<ArgumentWord>> worker_arguments;
  // Filled by plan_kernels: the tile's cycles for this run as the cost
  // model prices its kernel and workers' shares (estimate_program).
  double cycles = 0;
};

// Pixels of an image that no patch reads (its last rows and columns when
// the patch does not divide it) are loaded all the same, in pieces of at
// most this many elements (whole pixels of one pixel row) spread over the
// group's tiles: the pieces of one image, in the order unread_pixel_runs
// gives them.
constexpr std::int64_t kUnreadPieceElements = 64;
struct UnreadRun {
  std::int64_t y = 0, x = 0, pixels = 0;
};
std::vector<UnreadRun> unread_pixel_runs(const Chain::Patches& patches);
std::int64_t unread_pixel_pieces(const Chain::Patches& patches);

// A Constant buffer's bytes: one list for every tile, or one per group tile.
struct ConstantData {
  int buffer = -1;
  std::vector<std::vector<std::uint8_t>> contents;

  const std::vector<std::uint8_t>& on(int group_tile) const {
    return contents.size() == 1 ? contents.front() : contents[static_cast<std::size_t>(group_tile)];
  }
};

struct Lir {
  const MidProgram* mid = nullptr;
  const Chain* chain = nullptr;
  std::vector<Buffer> buffers;
  std::vector<ConstantData> constants;
  std::vector<Transfer> transfers;
  std::vector<Task> tasks;
  // Filled by plan_kernels: each group tile's tasks, in order.
  std::vector<std::vector<int>> tasks_of_tile;
  // Per MidValue: where each group tile holds its piece.
  std::vector<Place> value_places;
  std::uint32_t iteration_record_bytes = 0;
  // Staged weights (MidProgram::staged_weights): the iteration record, which
  // ends standard memory and runs on into interleaved memory, and the
  // working copy of one iteration's weights that kernels read.
  int staged_record = -1;
  int staged_copy = -1;
  std::vector<int> op_phase;  // per MidOp: its superstep
  std::map<int, Place> op_weights;  // GEMM MidOp -> where its weight panels are
  std::map<int, Place> bias_places;  // chain weight (a bias) -> where it is
  // LayerNorm MidOp -> where its gamma/beta pairs are stored (in pieces
  // over the first row parts where gathers_pairs says they are gathered).
  std::map<int, Place> row_weights;
  std::map<int, Place> tables;       // Map MidOp -> its table, stored as its output's piece
  // Per host input read as patches: where each group tile keeps the pixels
  // the patches leave out (unread_pixel_pieces), a slot of
  // kUnreadPieceElements elements per piece.
  std::map<std::string, Place> unread_pixels;
  std::uint32_t chunk_record_bytes = 0;
  int phases = 0;  // supersteps per chunk
  // The repeat region as a range of phases (inclusive), or -1.
  int repeat_first_phase = -1;
  int repeat_last_phase = -1;

};

}  // namespace tilec::compiler
