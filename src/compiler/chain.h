// The planner's view of a graph: a chain of row-local steps.
//
// Decided at this level: the 2-D view of every activation (rows = the
// product of the leading axes, the "token" rows every step shares; cols =
// the last axis), which graph ops each step implements, which elementwise
// ops fuse into the step before them as its epilogue, which values are
// weights (parameters, per iteration inside a repeat), and the repeat
// structure (a body kept once, with its iteration count).
// Not decided: anything about tiles, layouts, memory or time.
//
// A graph is row-local when every step maps row r of its input to row r of
// its output: GEMMs whose right operand is a parameter, elementwise ops,
// and layernorm/softmax over the last axis. Attention is local to segments
// of rows: the S rows of one [..., S, D] matrix (Chain::segment_rows).
// Graphs with other ops are rejected here with an error naming the op, and
// graphs with an OCP FP8 tensor (e4m3, e5m2) with one naming the tensor.
#pragma once

#include "graph/graph.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tilec::compiler {

// An elementwise operation fused after a step; each rounds to `result`.
struct EpilogueOp {
  enum class Kind : std::uint8_t { AddBias, Gelu, Cast };
  Kind kind;
  std::string op_name;
  int weight = -1;  // AddBias: index into Chain::weights (a [cols] vector)
  graph::GeluApproximation approximation = graph::GeluApproximation::Tanh;
  StorageType result;
};

// The rows a value has. Space 0 is the token rows (Chain::rows, in
// segments of Chain::segment_rows when there are segments); another space
// has `rows` rows for each segment (what attention with a shared query
// leaves per segment), or, `shared`, `rows` rows that every segment uses
// (a parameter read as an activation, and what is computed from it alone).
struct RowSpace {
  std::int64_t rows = 0;
  bool shared = false;
  bool operator==(const RowSpace&) const = default;
};

struct Activation {
  std::string name;  // the value's name in the graph
  std::int64_t cols = 0;
  StorageType storage;
  int space = 0;  // index into Chain::spaces
  // A view: columns [view_offset, view_offset + cols) of activation
  // `view_of`, which a fused GEMM computes (-1: a value of its own).
  int view_of = -1;
  std::int64_t view_offset = 0;
};

// A parameter the chain reads: its shape as the step sees it ([K, N] for a
// GEMM weight, [cols] for a bias), and, inside a repeat, the leading axis
// of the whole parameter that iterations step through.
struct Weight {
  std::string parameter;  // the graph parameter's name (the binding)
  std::vector<std::int64_t> shape;
  StorageType storage;
  bool per_iteration = false;  // a repeat's sequence operand
  // A fused GEMM's weight or bias: these weights side by side along the
  // output columns, in order (`parameter` names them joined by '+').
  std::vector<int> joined;
  // Output columns: a bias's length, or N of [K, N] ([N, K] when transposed).
  std::int64_t columns(bool transposed) const {
    return shape.size() == 1 || transposed ? shape[0] : shape[1];
  }
};

enum class StepKind : std::uint8_t { Gemm, Map, LayerNorm, Softmax, Attention };

// A graph GEMM that a fused step computes: its name and its output columns.
struct FusedGemm {
  std::string op;
  std::int64_t first_column = 0;
  std::int64_t columns = 0;
};

struct Step {
  StepKind kind;
  std::string name;  // the graph op it starts from (a fused GEMM's: theirs joined by '+')
  int input = -1;    // activation indices
  int second_input = -1;  // Map: elementwise add of two activations; Attention: k
  int third_input = -1;   // Attention: v
  int output = -1;
  // Gemm: output = input[rows, K] x weights[weight] ([K, N], or [N, K] when
  // transposed), accumulated in FP32 and rounded to `result`.
  int weight = -1;
  bool transpose_weight = false;
  // A fused GEMM (sibling GEMMs of one input side by side): the graph
  // GEMMs it computes; empty for a GEMM of one graph op.
  std::vector<FusedGemm> fused;
  // Map: a parameter of one segment's rows x the columns added to every
  // segment (a position embedding), or -1.
  int table = -1;
  // LayerNorm: gamma and beta weights.
  int gamma = -1;
  int beta = -1;
  float epsilon = 0;
  // Attention: output = softmax(input k^T * scale) v within each segment,
  // per head (the columns of q, k, v and the output in `attention_heads`
  // equal slices).
  float attention_scale = 0;
  std::int64_t attention_heads = 1;
  // Attention whose q is shared by every segment (cross attention: a
  // learned query against each segment's keys).
  bool shared_query = false;
  // The step's own result type, before its epilogue.
  StorageType result;
  std::vector<EpilogueOp> epilogue;

  // Result type after the epilogue: the output activation's storage.
  StorageType final_storage() const { return epilogue.empty() ? result : epilogue.back().result; }
};

// Steps [first, last] run `count` times; iteration i reads slice i of
// every per-iteration weight. carried[k] = (activation at the body's
// start, activation at its end) for each carried value.
struct RepeatRegion {
  std::string name;
  int first_step = 0;
  int last_step = 0;
  std::int64_t count = 1;
  std::vector<std::pair<int, int>> carried;
};

struct Chain {
  std::int64_t rows = 0;  // token rows shared by every activation
  std::vector<std::int64_t> row_shape;  // the leading axes, e.g. [batch, 729]
  // Rows an attention step mixes (its S); 0 when no step mixes rows.
  std::int64_t segment_rows = 0;
  // The device holds each segment in whole panels (its last one padded);
  // without segments, the rows one after another.
  std::int64_t padded_segment_rows() const { return (segment_rows + 15) / 16 * 16; }
  std::int64_t device_rows() const { return segment_rows ? rows / segment_rows * padded_segment_rows() : rows; }
  std::vector<RowSpace> spaces{RowSpace{}};  // space 0: the token rows
  // Panels of a space's rows in a chunk of `chunk_panels` token panels.
  std::int64_t space_panels(int space, std::int64_t chunk_panels) const;
  std::vector<Activation> activations;
  std::vector<Weight> weights;
  std::vector<Step> steps;
  std::optional<RepeatRegion> repeat;
  // Host inputs and graph outputs: (binding name, activation index).
  std::vector<std::pair<std::string, int>> inputs;
  // A host input the chain reads as patches (a patchify op's result):
  // binding name -> the side of a patch and the input's [..., H, W, C].
  struct Patches {
    std::int64_t patch = 0;
    std::vector<std::int64_t> image_shape;
  };
  std::map<std::string, Patches> patched_inputs;
  // Parameters read as activations (shared rows): (binding name, activation).
  std::vector<std::pair<std::string, int>> parameter_inputs;
  std::vector<std::pair<std::string, int>> outputs;

  std::int64_t macs() const;  // of the GEMM steps, over every iteration
  // The repeat body's step whose output layout its final value keeps: its
  // last step, or back through maps (which keep their first input's layout)
  // to the body step that made that input.
  int carried_layout_step() const;
};

// Throws BadInput naming the op when the graph is not row-local or uses a
// construct the compiler does not support.
Chain build_chain(const graph::Graph& graph);

// GEMMs that read one activation, one after another, with weights and
// epilogues alike, become one GEMM over their weights side by side (one
// pass over the activation, fewer K parts to reduce); their results become
// views of its output (fuse_gemms.cpp). build_chain runs it.
void fuse_sibling_gemms(Chain& chain);

}  // namespace tilec::compiler
