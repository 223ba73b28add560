// Host reference kernels: FP32 arithmetic on plain row-major float arrays
// (and FP64 forms for the exact reference). The graph interpreter
// (graph/reference.h) calls these and rounds each FP32 result to its
// storage type. Multithreaded where the work is large.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tilec::reference {

// C[M,N] = A[M,K] x B[K,N], A and B row-major with the given transposes (a
// transposed A is stored [K,M], a transposed B [N,K]). Each output is the
// sequential FP32 sum over k of fused multiply-adds, starting from +0: the
// order the device's AMP sums in (see reference_gemm.cpp). Cache-blocked and
// multithreaded; the result does not depend on the thread count.
// With k_parts > 1, K is cut into that many balanced parts of whole units of
// 16 k, each part summed so from +0, and the partial sums added in K order:
// what a plan that splits K over tiles computes. The same numbers summed in
// another valid order: a measure of how much a graph's outputs depend on it.
void gemm(std::span<const float> a, std::span<const float> b, std::span<float> c,
          std::int64_t m, std::int64_t n, std::int64_t k, bool transpose_a = false,
          bool transpose_b = false, int k_parts = 1);

// How a plan that splits K over tiles sums each output of a GEMM: K in
// explicit parts, each summed from +0 in k order as above; each part's sum
// rounded to FP16 first when the parts travel as FP16; then, per range of
// output columns, the parts added in FP32 in that range's order, in passes
// of `pass_parts` (the first pass adds that many parts, each later one the
// running sum and pass_parts - 1 more), the running sum rounded to FP16
// between passes when the parts travel as FP16.
struct KSplit {
  // Part p sums k in [cuts[p], cuts[p + 1]); the cuts run from 0 to K in
  // increasing order (an empty part adds nothing).
  std::vector<std::int64_t> cuts;
  bool half_partials = false;
  // Output columns [begin, end) add the parts in the order `parts` (each
  // part once); columns that no range covers add them in K order.
  struct Columns {
    std::int64_t begin = 0;
    std::int64_t end = 0;
    std::vector<int> parts;
    bool operator==(const Columns&) const = default;
  };
  std::vector<Columns> orders;
  int pass_parts = 0;  // 0: one pass adds every part; else at least 2
  bool operator==(const KSplit&) const = default;
  int parts() const { return cuts.empty() ? 0 : static_cast<int>(cuts.size()) - 1; }
};

// C as above with K summed as `split` says. A split of one part is the
// plain gemm. An invalid split (cuts not from 0 to K in order, an order
// that is not a permutation of the parts, a range outside [0, N) or
// overlapping another) is a BadInput naming what is wrong.
void gemm(std::span<const float> a, std::span<const float> b, std::span<float> c, std::int64_t m,
          std::int64_t n, std::int64_t k, bool transpose_a, bool transpose_b, const KSplit& split);

// K cut into `parts` balanced parts of whole units of 16 k (the last part
// ragged), added in K order: what `gemm`'s k_parts sums.
KSplit balanced_k_split(std::int64_t k, int parts);

// The same product in FP64, for the exact reference (graph/reference.h):
// each output summed in k order without rounding to FP32. Multithreaded; the
// result does not depend on the thread count.
void gemm(std::span<const double> a, std::span<const double> b, std::span<double> c, std::int64_t m,
          std::int64_t n, std::int64_t k, bool transpose_a = false, bool transpose_b = false);

// tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
float gelu_tanh(float x);
double gelu_tanh(double x);
// exact: 0.5 x (1 + erf(x / sqrt(2))).
float gelu_erf(float x);
double gelu_erf(double x);

// Over rows of length `width`: out = (x - mean) / sqrt(var + epsilon) * gamma + beta.
// The FP64 forms compute the same formulas in FP64.
void layernorm(std::span<const float> x, std::span<const float> gamma,
               std::span<const float> beta, std::span<float> out, std::int64_t width,
               float epsilon);
void layernorm(std::span<const double> x, std::span<const double> gamma, std::span<const double> beta,
               std::span<double> out, std::int64_t width, double epsilon);

// How a compiled plan computes layernorm's and softmax's row statistics
// (docs/kernels.md, "LayerNorm", "Softmax", "Split-column row kernels"):
// whole rows on one tile, or the columns in parts whose statistics are
// combined as the kernels combine them. Divisions by a column count are
// the kernels' (a reciprocal, then Markstein's correction); softmax
// multiplies by the reciprocal of its sum.
struct RowSplit {
  // Empty: whole rows. Else the column parts in slot order: part p covers
  // [cuts[p], cuts[p + 1]), the cuts increasing from 0 to the width.
  std::vector<std::int64_t> cuts;
  // Each part's statistics are its `ranges` sub-ranges' (of c columns:
  // range r covers [c r / R, c (r + 1) / R) of them), merged.
  int ranges = 1;
  // The parts' statistics are merged into one slot before they are applied.
  bool merge_received = false;
  bool operator==(const RowSplit&) const = default;
};

// layernorm and softmax (below) as a plan computes them. BadInput for a
// split whose cuts are not increasing from 0 to the width, or ranges < 1.
void layernorm(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta,
               std::span<float> out, std::int64_t width, float epsilon, const RowSplit& split);
void softmax(std::span<const float> x, std::span<float> out, std::int64_t width, const RowSplit& split);

// How a compiled plan computes one head of attention from its scores
// (docs/kernels.md, "Attention on the AMP", "Scaled and partial softmax",
// "Attention merge"): the keys in blocks, each block's softmax of scale x S
// over `softmax_chunks` column chunks, the probabilities rounded to FP16
// when the operands are FP16, O = P V per block, and several blocks' partial
// results merged by their statistics.
struct AttentionSplit {
  // Key block b covers keys [key_cuts[b], key_cuts[b + 1]), from 0 to T.
  std::vector<std::int64_t> key_cuts;
  int softmax_chunks = 1;
  bool half_probabilities = false;
  bool operator==(const AttentionSplit&) const = default;
};

// out[S, E] = attention of unscaled scores[S, T] (q k^T, FP32) over v[T, E]
// with `scale`, as `split` says; FP32 results, before the output's rounding.
// BadInput for key cuts that do not increase from 0 to T, or chunks < 1.
void attention_head(std::span<const float> scores, std::span<const float> v, std::span<float> out, std::int64_t s,
                    std::int64_t t, std::int64_t e, float scale, const AttentionSplit& split);

// Over rows of length `width` (the softmax axis made innermost by the caller).
void softmax(std::span<const float> x, std::span<float> out, std::int64_t width);
void softmax(std::span<const double> x, std::span<double> out, std::int64_t width);

}  // namespace tilec::reference
