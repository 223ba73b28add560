// One head of attention in a plan's order: the arithmetic of the device's
// scaled softmax kernels, the P V GEMM on the AMP and the attention merge.
#include "numerics/reference_ops.h"

#include "numerics/fp16.h"
#include "support/error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tilec::reference {

namespace {

// w / l as the merge kernel divides: q0 = w RN(1/l), then Markstein's
// correction with the exact remainder.
float divide(float w, float l) {
  const float r = 1.0f / l;
  const float q0 = w * r;
  return std::fma(std::fma(-q0, l, w), r, q0);
}

// One key block of one row: p over its keys, and the row's statistics.
struct BlockRow {
  float largest = 0;
  float sum = 0;
};

// The scaled softmax of row `scores` over keys [0, count), in `chunks`
// chunks: m = RN(scale x max) per chunk, their max; e = exp(RN(scale x s) -
// m); l per chunk from +0, the chunks' l added from +0 in chunk order. p is
// e x RN(1/l) (normalised) or e, rounded to the probabilities' type.
BlockRow block_softmax(const float* scores, std::int64_t count, int chunks, float scale, bool normalised,
                       bool half, float* p) {
  BlockRow row;
  row.largest = -std::numeric_limits<float>::infinity();
  for (int chunk = 0; chunk < chunks; ++chunk) {
    float largest = -std::numeric_limits<float>::infinity();
    for (std::int64_t j = count * chunk / chunks; j < count * (chunk + 1) / chunks; ++j)
      largest = std::fmax(largest, scores[j]);
    row.largest = std::fmax(row.largest, scale * largest);
  }
  for (int chunk = 0; chunk < chunks; ++chunk) {
    float sum = 0.0f;
    for (std::int64_t j = count * chunk / chunks; j < count * (chunk + 1) / chunks; ++j) {
      p[j] = std::exp(scale * scores[j] - row.largest);
      sum += p[j];
    }
    row.sum += sum;
  }
  const float inverse = 1.0f / row.sum;
  for (std::int64_t j = 0; j < count; ++j) {
    const float value = normalised ? p[j] * inverse : p[j];
    p[j] = half ? round_to_half(value) : value;
  }
  return row;
}

}  // namespace

void attention_head(std::span<const float> scores, std::span<const float> v, std::span<float> out, std::int64_t s,
                    std::int64_t t, std::int64_t e, float scale, const AttentionSplit& split) {
  const std::vector<std::int64_t>& cuts = split.key_cuts;
  if (split.softmax_chunks < 1) throw_bad_input("attention split", "{} softmax chunks", split.softmax_chunks);
  if (cuts.size() < 2 || cuts.front() != 0 || cuts.back() != t ||
      std::adjacent_find(cuts.begin(), cuts.end(), std::greater_equal<>()) != cuts.end())
    throw_bad_input("attention split", "the key cuts must increase from 0 to the keys {}", t);
  TILEC_CHECK(static_cast<std::int64_t>(scores.size()) == s * t && static_cast<std::int64_t>(v.size()) == t * e &&
                  static_cast<std::int64_t>(out.size()) == s * e,
              "attention of {} x {} keys x {} given {}, {} and {} floats", s, t, e, scores.size(), v.size(), out.size());
  const std::size_t blocks = cuts.size() - 1;
  const bool normalised = blocks == 1;
  // Per block: each row's statistics and its partial O = P V (FP32).
  std::vector<std::vector<BlockRow>> statistics(blocks, std::vector<BlockRow>(static_cast<std::size_t>(s)));
  std::vector<std::vector<float>> partials(blocks);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::int64_t first = cuts[b], count = cuts[b + 1] - cuts[b];
    std::vector<float> p(static_cast<std::size_t>(s * count));
    for (std::int64_t r = 0; r < s; ++r)
      statistics[b][static_cast<std::size_t>(r)] =
          block_softmax(scores.data() + r * t + first, count, split.softmax_chunks, scale, normalised,
                        split.half_probabilities, p.data() + r * count);
    partials[b].resize(static_cast<std::size_t>(s * e));
    gemm(p, v.subspan(static_cast<std::size_t>(first * e), static_cast<std::size_t>(count * e)), partials[b], s, e,
         count);
  }
  if (normalised) {
    std::copy(partials[0].begin(), partials[0].end(), out.begin());
    return;
  }
  // The merge: M, the weights w_b = exp(m_b - M), L = sum of w_b l_b by
  // fused multiply-adds, u_b = w_b / L, out = sum of u_b O_b likewise.
  for (std::int64_t r = 0; r < s; ++r) {
    const auto row = static_cast<std::size_t>(r);
    float largest = -std::numeric_limits<float>::infinity(), total = 0.0f;
    for (std::size_t b = 0; b < blocks; ++b) largest = std::fmax(largest, statistics[b][row].largest);
    std::vector<float> weights(blocks);
    for (std::size_t b = 0; b < blocks; ++b) {
      weights[b] = std::exp(statistics[b][row].largest - largest);
      total = std::fma(weights[b], statistics[b][row].sum, total);
    }
    for (float& weight : weights) weight = divide(weight, total);
    for (std::int64_t c = 0; c < e; ++c) {
      float value = 0.0f;
      for (std::size_t b = 0; b < blocks; ++b)
        value = std::fma(weights[b], partials[b][static_cast<std::size_t>(r * e + c)], value);
      out[static_cast<std::size_t>(r * e + c)] = value;
    }
  }
}

}  // namespace tilec::reference
