#include "compiler/attention_candidates.h"

#include "compiler/cost_model.h"
#include "compiler/gemm_candidates.h"
#include "compiler/merge_kernel.h"

#include <fmt/format.h>

#include <algorithm>

namespace tilec::compiler {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::uint32_t u32(std::int64_t value) { return static_cast<std::uint32_t>(value); }

// Part counts worth trying for `panels` panels: every count giving a
// different largest part.
std::vector<int> part_counts(std::int64_t panels) {
  std::vector<int> counts;
  std::int64_t previous = -1;
  for (int parts = 1; parts <= panels; ++parts) {
    const std::int64_t largest = ceil_div(panels, parts);
    if (largest == previous) continue;
    previous = largest;
    counts.push_back(parts);
  }
  return counts;
}

}  // namespace

std::string AttentionCandidate::text() const {
  return fmt::format("{}h x {}q x {}k", head_parts, query_parts, key_parts);
}

std::vector<AttentionCandidate> attention_candidates(const Chain& chain, const Step& step, int group_size) {
  const std::int64_t heads = step.attention_heads;
  const std::int64_t panels = ceil_div(chain.segment_rows, kPanelRows);
  const std::int64_t query_panels =
      ceil_div(chain.spaces[static_cast<std::size_t>(chain.activations[static_cast<std::size_t>(step.input)].space)].rows,
               kPanelRows);
  std::vector<AttentionCandidate> candidates;
  for (int head_parts = 1; head_parts <= heads && head_parts <= group_size; ++head_parts) {
    if (heads % head_parts != 0) continue;
    for (int query_parts : part_counts(step.shared_query ? query_panels : panels)) {
      if (head_parts * query_parts > group_size) break;
      for (int key_parts : part_counts(panels)) {
        if (head_parts * query_parts * key_parts > group_size) break;
        if (key_parts > 1 && heads / head_parts > 1) break;
        candidates.push_back(AttentionCandidate{head_parts, query_parts, key_parts});
      }
    }
  }
  return candidates;
}

int AttentionShape::tiles() const {
  return static_cast<int>(segments) * candidate.query_parts * candidate.head_parts * candidate.key_parts;
}

int AttentionShape::tile(std::int64_t segment, int query_part, int head_part, int key_part) const {
  return ((static_cast<int>(segment) * candidate.query_parts + query_part) * candidate.head_parts + head_part) *
             candidate.key_parts +
         key_part;
}

std::int64_t AttentionShape::heads_per_tile() const { return step->attention_heads / candidate.head_parts; }

std::int64_t AttentionShape::qk_head_columns() const {
  return chain->activations[static_cast<std::size_t>(step->input)].cols / step->attention_heads;
}

std::int64_t AttentionShape::v_head_columns() const {
  return chain->activations[static_cast<std::size_t>(step->output)].cols / step->attention_heads;
}

AttentionShape attention_shape(const Chain& chain, const Step& step, const AttentionCandidate& candidate,
                               std::int64_t chunk_panels) {
  const std::int64_t segment_panels = chain.padded_segment_rows() / kPanelRows;
  const RowSpace& queries = chain.spaces[static_cast<std::size_t>(chain.activations[static_cast<std::size_t>(step.input)].space)];
  return AttentionShape{&chain,
                        &step,
                        candidate,
                        chunk_panels / segment_panels,
                        segment_panels,
                        step.shared_query ? ceil_div(queries.rows, kPanelRows) : segment_panels,
                        step.shared_query};
}

std::vector<Range> AttentionShape::query_panels() const {
  return balanced_split(query_segment_panels, candidate.query_parts, 1);
}
std::vector<Range> AttentionShape::key_panels() const { return balanced_split(segment_panels, candidate.key_parts, 1); }

std::int64_t AttentionShape::valid_keys(int key_part) const {
  const Range panels = key_panels()[static_cast<std::size_t>(key_part)];
  return std::max<std::int64_t>(0, std::min(panels.end * kPanelRows, chain->segment_rows) - panels.begin * kPanelRows);
}

std::int64_t AttentionShape::query_block_panels() const { return ceil_div(query_segment_panels, candidate.query_parts); }
std::int64_t AttentionShape::key_block_panels() const { return ceil_div(segment_panels, candidate.key_parts); }

Range AttentionShape::merge_share(int key_part) const {
  return balanced_split(heads_per_tile() * v_head_columns(), candidate.key_parts, 1)[static_cast<std::size_t>(key_part)];
}

std::int64_t AttentionShape::merge_share_columns() const { return merge_share(0).size(); }

namespace {

// Rows of every segment's blocks (of `per_segment` panels a segment), in
// order.
std::vector<Range> block_rows(const AttentionShape& shape, const std::vector<Range>& panels, std::int64_t per_segment) {
  std::vector<Range> rows;
  for (std::int64_t s = 0; s < shape.segments; ++s)
    for (const Range& block : panels)
      rows.push_back(Range{(s * per_segment + block.begin) * kPanelRows, (s * per_segment + block.end) * kPanelRows});
  return rows;
}

std::vector<Range> head_group_columns(const AttentionShape& shape, std::int64_t head_columns) {
  std::vector<Range> cols;
  const std::int64_t width = shape.heads_per_tile() * head_columns;
  for (int g = 0; g < shape.candidate.head_parts; ++g) cols.push_back(Range{g * width, (g + 1) * width});
  return cols;
}

// q's blocks (s, j, g) on the key parts' tiles; k's and v's (s, b, g) on
// the query parts'.
Layout operand_layout(const AttentionShape& shape, bool keys, std::int64_t head_columns) {
  Layout layout;
  const AttentionCandidate& c = shape.candidate;
  layout.cols = head_group_columns(shape, head_columns);
  layout.piece_panels = keys ? shape.key_block_panels() : shape.query_block_panels();
  const int blocks = keys ? c.key_parts : c.query_parts, others = keys ? c.query_parts : c.key_parts;
  if (!keys && shape.shared_query) {
    // One query every segment reads: block (j, g) on every segment's tiles.
    for (const Range& block : shape.query_panels())
      layout.rows.push_back(Range{block.begin * kPanelRows, block.end * kPanelRows});
    for (int j = 0; j < c.query_parts; ++j)
      for (int g = 0; g < c.head_parts; ++g) {
        std::vector<int> tiles;
        for (std::int64_t s = 0; s < shape.segments; ++s)
          for (int b = 0; b < c.key_parts; ++b) tiles.push_back(shape.tile(s, j, g, b));
        layout.add_block(tiles);
      }
    return layout;
  }
  layout.rows = keys ? block_rows(shape, shape.key_panels(), shape.segment_panels)
                     : block_rows(shape, shape.query_panels(), shape.query_segment_panels);
  for (std::int64_t s = 0; s < shape.segments; ++s)
    for (int block = 0; block < blocks; ++block)
      for (int g = 0; g < c.head_parts; ++g) {
        std::vector<int> tiles;
        for (int other = 0; other < others; ++other)
          tiles.push_back(keys ? shape.tile(s, other, g, block) : shape.tile(s, block, g, other));
        layout.add_block(tiles);
      }
  return layout;
}

}  // namespace

Layout AttentionShape::q_layout() const { return operand_layout(*this, false, qk_head_columns()); }
Layout AttentionShape::k_layout() const { return operand_layout(*this, true, qk_head_columns()); }
Layout AttentionShape::v_layout() const { return operand_layout(*this, true, v_head_columns()); }

Layout AttentionShape::output_layout() const {
  const AttentionCandidate& c = candidate;
  Layout layout;
  layout.rows = block_rows(*this, query_panels(), query_segment_panels);
  layout.piece_panels = query_block_panels();
  const std::vector<Range> groups = head_group_columns(*this, v_head_columns());
  if (c.key_parts == 1) {
    layout.cols = groups;
    for (std::int64_t s = 0; s < segments; ++s)
      for (int j = 0; j < c.query_parts; ++j)
        for (int g = 0; g < c.head_parts; ++g) layout.add_block({tile(s, j, g, 0)});
    return layout;
  }
  // Block (s, j, g)'s share b on the tile of the next block's key part b.
  for (const Range& group : groups)
    for (int b = 0; b < c.key_parts; ++b) {
      const Range share = merge_share(b);
      layout.cols.push_back(Range{group.begin + share.begin, group.begin + share.end});
    }
  const int blocks = static_cast<int>(segments) * c.query_parts * c.head_parts;
  for (int block = 0; block < blocks; ++block)
    for (int b = 0; b < c.key_parts; ++b) layout.add_block({((block + 1) % blocks) * c.key_parts + b});
  return layout;
}

AttentionKernels attention_kernels(const AttentionShape& shape, ElementType input, ElementType output) {
  AttentionKernels k;
  const std::uint32_t bytes = element_bytes(input);
  const bool several = shape.candidate.key_parts > 1;
  const std::uint32_t q_column = u32(shape.query_block_panels() * kPanelRows) * bytes;
  const std::uint32_t k_column = u32(shape.key_block_panels() * kPanelRows) * bytes;
  const std::uint32_t s_column = u32(shape.query_block_panels() * kPanelRows) * 4;
  // The transpose: identity (one panel) times v's panel format, into
  // [column blocks][keys][16 columns] (one key to the next: 16 elements).
  k.transpose.weights = k.transpose.activations = input;
  k.transpose.activation_stride = 16 * bytes;
  k.transpose.weight_stride = k_column;
  k.transpose.output_stride = 16 * bytes;
  k.transpose.drain_f32 = input == ElementType::F32;
  // S = q k^T, in FP32.
  k.scores.weights = k.scores.activations = input;
  k.scores.activation_stride = q_column;
  k.scores.weight_stride = k_column;
  k.scores.output_stride = s_column;
  k.scores.drain_f32 = true;
  // P in the operands' type.
  k.softmax = RowVariant{.layernorm = false, .input = ElementType::F32, .output = input,
                         .form = several ? SoftmaxForm::Partial : SoftmaxForm::Normalised, .scaled = true,
                         .input_stride = s_column <= kMaxRowInputStride ? s_column : 0};
  k.softmax_chunks = softmax_best_chunks(k.softmax, shape.query_block_panels(), shape.valid_keys(0));
  // O = P v: the result, or an FP32 partial.
  k.output.weights = k.output.activations = input;
  k.output.activation_stride = q_column;
  k.output.drain_f32 = several || output == ElementType::F32;
  k.output.output_stride = u32(shape.query_block_panels() * kPanelRows) * (several ? 4 : element_bytes(output));
  k.merge.output = output;
  k.merge.partial_column_stride = u32(shape.query_block_panels() * kPanelRows) * 4;
  k.merge.output_column_stride = u32(shape.query_block_panels() * kPanelRows) * element_bytes(output);
  return k;
}

std::vector<TransposeJob> attention_transpose_jobs(std::int64_t key_panels, std::int64_t v_columns) {
  std::vector<TransposeJob> jobs;
  for (std::int64_t p = 0; p < key_panels; ++p)
    for (std::int64_t j = 0; j < ceil_div(v_columns, kPanelRows); ++j)
      jobs.push_back({p, j, std::min<std::int64_t>(kPanelRows, v_columns - j * kPanelRows)});
  return jobs;
}

double attention_tile_cycles(const AttentionShape& shape, const AttentionKernels& kernels) {
  const std::int64_t qp = shape.query_block_panels(), kp = shape.key_block_panels();
  const std::int64_t keys = shape.valid_keys(0), dv = shape.v_head_columns();
  std::vector<std::int64_t> transpose, scores, output;
  for (const TransposeJob& job : attention_transpose_jobs(kp, dv)) transpose.push_back(job.columns);
  scores.assign(static_cast<std::size_t>(kp * qp), shape.qk_head_columns());
  output.assign(static_cast<std::size_t>(ceil_div(dv, kPanelRows) * qp), keys);
  const double per_head = gemm_jobs_tile_cycles(transpose, kernels.transpose) +
                          gemm_jobs_tile_cycles(scores, kernels.scores) +
                          softmax_tile_cycles(kernels.softmax, qp, keys, kernels.softmax_chunks) +
                          gemm_jobs_tile_cycles(output, kernels.output);
  return per_head * static_cast<double>(shape.heads_per_tile());
}

double attention_merge_cycles(const AttentionShape& shape, const AttentionKernels& kernels) {
  if (shape.candidate.key_parts == 1) return 0;
  return merge_tile_cycles(kernels.merge, 4 * shape.query_block_panels(), shape.merge_share_columns(),
                           shape.candidate.key_parts);
}

std::uint32_t AttentionScratch::total() const {
  return transposed + (scores_in_v ? 0 : scores) + (probabilities_in_k ? 0 : probabilities) + chunk_statistics +
         partial + statistics + merge + merge_workers;
}

AttentionScratch attention_scratch(const AttentionShape& shape, const AttentionKernels& kernels, bool inputs_free) {
  AttentionScratch scratch;
  const std::int64_t qp = shape.query_block_panels(), kp = shape.key_block_panels();
  const std::uint32_t bytes = element_bytes(kernels.scores.weights);
  const std::int64_t dv_blocks = ceil_div(shape.v_head_columns(), kPanelRows);
  scratch.transposed = u32(dv_blocks * kp * kPanelRows * kPanelRows) * bytes;
  scratch.scores = u32(kp * kPanelRows * qp * kPanelRows) * 4;
  scratch.probabilities = u32(kp * kPanelRows * qp * kPanelRows) * bytes;
  if (kernels.softmax_chunks > 1) scratch.chunk_statistics = u32(kernels.softmax_chunks * row_statistics_bytes(qp));
  if (inputs_free && shape.heads_per_tile() == 1) {
    const std::int64_t key_piece = kp * kPanelRows * bytes;
    scratch.scores_in_v = scratch.scores <= u32(key_piece * shape.v_head_columns());
    scratch.probabilities_in_k = scratch.probabilities <= u32(key_piece * shape.qk_head_columns());
  }
  if (shape.candidate.key_parts > 1) {
    scratch.partial = u32(dv_blocks * kPanelRows * qp * kPanelRows) * 4;
    scratch.statistics = u32(row_statistics_bytes(qp));
    scratch.merge_slot = u32(shape.merge_share_columns() * qp * kPanelRows) * 4 + scratch.statistics;
    scratch.merge = scratch.merge_slot * u32(shape.candidate.key_parts);
    scratch.merge_workers = u32(6 * merge_scratch_bytes(shape.candidate.key_parts));
  }
  return scratch;
}

}  // namespace tilec::compiler
