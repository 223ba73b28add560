// The ways a self-attention step spreads over a group, and what a tile
// computes for its share.
//
// Within every segment of a chunk (the S rows of one [..., S, D] item, the
// segment padded to whole panels), queries split into query blocks and
// keys into key blocks (whole panels); heads split into head groups. Tile
// ((s * Pq + j) * Ph + g) * Pk + b computes head group g of query block j
// against key block b of segment s:
//   1. each head's v block transposed (a GEMM with the identity),
//   2. the scores S = q k^T (a GEMM reading k's panel format as weights),
//   3. softmax(scale x S) over the block's valid keys: normalised with one
//      key block, else partial (unnormalised, with each row's max and sum),
//   4. O = P v (a GEMM with the transposed v as weights).
// With several key blocks, block (s, j, g)'s partials meet on the tiles of
// the next block in (s, j, g) order, tile b taking share b of the head
// group's columns (no tile merges its own partial), and the merge kernel
// combines them by their statistics: a numerically stable online softmax.
#pragma once

#include "compiler/chain.h"
#include "compiler/kernel_library.h"
#include "compiler/mid.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tilec::compiler {

struct AttentionCandidate {
  int head_parts = 1;   // Ph: heads / Ph heads a tile
  int query_parts = 1;  // Pq query blocks a segment
  int key_parts = 1;    // Pk key blocks a segment

  std::string text() const;
};

// Head part counts dividing the heads, query and key part counts up to
// the segment's panels; key parts above one only with one head a tile.
std::vector<AttentionCandidate> attention_candidates(const Chain& chain, const Step& step, int group_size);

// The rows and tiles of one chunk: `segments` segments of `segment_panels`
// key panels each, and `query_panels` query panels each (a shared query's
// rows, the same for every segment, when `shared_query`).
struct AttentionShape {
  const Chain* chain = nullptr;
  const Step* step = nullptr;
  AttentionCandidate candidate;
  std::int64_t segments = 1;
  std::int64_t segment_panels = 1;
  std::int64_t query_segment_panels = 1;
  bool shared_query = false;

  int tiles() const;
  int tile(std::int64_t segment, int query_part, int head_part, int key_part) const;
  std::int64_t heads_per_tile() const;
  std::int64_t qk_head_columns() const;  // D / H
  std::int64_t v_head_columns() const;   // E / H
  // Query and key blocks of segment-relative panels.
  std::vector<Range> query_panels() const;
  std::vector<Range> key_panels() const;
  // Keys of key block b that are real rows (the rest of it is padding).
  std::int64_t valid_keys(int key_part) const;
  // The largest query and key block, in panels.
  std::int64_t query_block_panels() const;
  std::int64_t key_block_panels() const;
  // Columns of the head group's output that key part b merges.
  Range merge_share(int key_part) const;
  std::int64_t merge_share_columns() const;  // the widest

  Layout q_layout() const;
  Layout k_layout() const;  // v's too, with v's columns
  Layout v_layout() const;
  Layout output_layout() const;
};

// The shape of a candidate on a chunk of `chunk_panels` token panels.
AttentionShape attention_shape(const Chain& chain, const Step& step, const AttentionCandidate& candidate,
                               std::int64_t chunk_panels);

// What every tile of a candidate runs (the largest shares), for the cost
// model and for lowering: the kernels' variants and the softmax's chunks.
struct AttentionKernels {
  GemmVariant transpose;
  GemmVariant scores;
  RowVariant softmax;
  int softmax_chunks = 1;
  GemmVariant output;
  MergeVariant merge;
};
AttentionKernels attention_kernels(const AttentionShape& shape, ElementType input, ElementType output);

// Step 1's jobs for one head, in the order workers take them (worker w the
// jobs [J w / 6, J (w + 1) / 6)): key panel by key panel, so each worker's
// share holds as many of the last column block's narrower jobs as another's.
struct TransposeJob {
  std::int64_t key_panel = 0, column_block = 0, columns = 0;
};
std::vector<TransposeJob> attention_transpose_jobs(std::int64_t key_panels, std::int64_t v_columns);

// A tile's cycles for its share (every head of it), and the merge's.
double attention_tile_cycles(const AttentionShape& shape, const AttentionKernels& kernels);
double attention_merge_cycles(const AttentionShape& shape, const AttentionKernels& kernels);

// Bytes a tile's share needs beyond its q, k, v and output pieces. With
// one head a tile, S may go where v was (v is read only by the transpose,
// which runs first) and P where k was (read only by S), when they fit and
// nothing reads v or k after the step: scores_in_v, probabilities_in_k.
struct AttentionScratch {
  std::uint32_t transposed = 0;      // one head's v, transposed
  std::uint32_t scores = 0;          // FP32 S (and the split softmax's exponentials)
  std::uint32_t probabilities = 0;   // P
  std::uint32_t chunk_statistics = 0;
  std::uint32_t partial = 0;         // FP32 O, one head (several key parts)
  std::uint32_t statistics = 0;      // m, l of one head's rows
  std::uint32_t merge_slot = 0;      // one partial's share and statistics
  std::uint32_t merge = 0;           // every key part's slot
  std::uint32_t merge_workers = 0;   // the merge kernel's scratch, six workers
  bool scores_in_v = false;
  bool probabilities_in_k = false;
  std::uint32_t total() const;
};
// `inputs_free`: v and k may be overwritten within the step.
AttentionScratch attention_scratch(const AttentionShape& shape, const AttentionKernels& kernels,
                                   bool inputs_free = true);

}  // namespace tilec::compiler
