// layernorm and softmax in a plan's order: the arithmetic of the device's
// row kernels (kernels/layernorm.S, softmax.S, row_stats.S, row_apply.S,
// row_merge.S), in FP32, row by row.
#include "numerics/reference_ops.h"

#include "support/error.h"
#include "numerics/row_tasks.h"
#include "support/parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tilec::reference {

namespace {

// s / c as the kernels divide: q0 = s (1/c), then Markstein's correction
// with the exact residual s - q0 c.
float divide_by_count(float s, float c) {
  const float r = 1.0f / c;
  const float q0 = s * r;
  const float residual = std::fma(q0, -c, s);
  return std::fma(residual, r, q0);
}

// One slot of one row: layernorm's mean and M2, or softmax's largest value
// m and sum l, over `count` columns.
struct Slot {
  float first = 0;
  float second = 0;
  float count = 0;
};

// The statistics kernels' two passes over x[0, count).
Slot statistics(bool layernorm, const float* x, std::int64_t count) {
  Slot slot;
  slot.count = static_cast<float>(count);
  if (layernorm) {
    float sum = 0.0f;
    for (std::int64_t c = 0; c < count; ++c) sum += x[c];
    slot.first = divide_by_count(sum, slot.count);
    for (std::int64_t c = 0; c < count; ++c) {
      const float d = x[c] - slot.first;
      slot.second += d * d;
    }
    return slot;
  }
  slot.first = -std::numeric_limits<float>::infinity();
  for (std::int64_t c = 0; c < count; ++c) slot.first = std::fmax(slot.first, x[c]);
  for (std::int64_t c = 0; c < count; ++c) slot.second += std::exp(x[c] - slot.first);
  return slot;
}

// The slots combined in slot order, as the merge kernels and the start of
// the apply kernels combine them, for a row of `total` columns.
Slot merge(bool layernorm, const std::vector<Slot>& slots, float total) {
  Slot merged;
  merged.count = total;
  if (layernorm) {
    float s = 0.0f, m2 = 0.0f;
    for (const Slot& slot : slots) {
      s = std::fma(slot.first, slot.count, s);
      m2 += slot.second;
    }
    merged.first = divide_by_count(s, total);
    for (const Slot& slot : slots) {
      const float d = slot.first - merged.first;
      m2 = std::fma(d * slot.count, d, m2);
    }
    merged.second = m2;
    return merged;
  }
  merged.first = -std::numeric_limits<float>::infinity();
  for (const Slot& slot : slots) merged.first = std::fmax(merged.first, slot.first);
  for (const Slot& slot : slots) merged.second = std::fma(slot.second, std::exp(slot.first - merged.first), merged.second);
  return merged;
}

// The row's centre (mean or m) and the statistics' slot as the apply (or
// whole-row) kernel uses it.
Slot row_statistics(bool layernorm, const float* x, std::int64_t width, const RowSplit& split) {
  if (split.cuts.empty()) return statistics(layernorm, x, width);
  std::vector<Slot> parts;
  for (std::size_t p = 0; p + 1 < split.cuts.size(); ++p) {
    const float* part = x + split.cuts[p];
    const std::int64_t columns = split.cuts[p + 1] - split.cuts[p];
    if (split.ranges == 1) {
      parts.push_back(statistics(layernorm, part, columns));
      continue;
    }
    std::vector<Slot> ranges;
    for (int r = 0; r < split.ranges; ++r) {
      const std::int64_t begin = columns * r / split.ranges, end = columns * (r + 1) / split.ranges;
      ranges.push_back(statistics(layernorm, part + begin, end - begin));
    }
    parts.push_back(merge(layernorm, ranges, static_cast<float>(columns)));
  }
  const float total = static_cast<float>(width);
  if (split.merge_received) parts = {merge(layernorm, parts, total)};
  return merge(layernorm, parts, total);
}

void check_split(const RowSplit& split, std::int64_t width, const char* op) {
  if (split.ranges < 1) throw_bad_input(op, "{} column ranges per part", split.ranges);
  if (split.cuts.empty()) return;
  if (split.cuts.size() < 2 || split.cuts.front() != 0 || split.cuts.back() != width ||
      std::adjacent_find(split.cuts.begin(), split.cuts.end(), std::greater_equal<>()) != split.cuts.end())
    throw_bad_input(op, "the column cuts must increase from 0 to the width {}", width);
}

}  // namespace

void layernorm(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta,
               std::span<float> out, std::int64_t width, float epsilon, const RowSplit& split) {
  check_split(split, width, "layernorm split");
  TILEC_CHECK(width > 0 && x.size() % static_cast<std::size_t>(width) == 0 && out.size() == x.size() &&
                  static_cast<std::int64_t>(gamma.size()) == width && static_cast<std::int64_t>(beta.size()) == width,
              "layernorm over rows of {} given {} values, {} outputs, {} gamma and {} beta", width, x.size(),
              out.size(), gamma.size(), beta.size());
  for_each_row(static_cast<std::int64_t>(x.size()) / width, [&](std::int64_t row) {
    const float* in = x.data() + row * width;
    float* result = out.data() + row * width;
    const Slot slot = row_statistics(true, in, width, split);
    const float variance = divide_by_count(slot.second, static_cast<float>(width));
    const float inverse = 1.0f / std::sqrt(variance + epsilon);
    for (std::int64_t i = 0; i < width; ++i) result[i] = ((in[i] - slot.first) * inverse) * gamma[i] + beta[i];
  });
}

void softmax(std::span<const float> x, std::span<float> out, std::int64_t width, const RowSplit& split) {
  check_split(split, width, "softmax split");
  TILEC_CHECK(width > 0 && x.size() % static_cast<std::size_t>(width) == 0 && out.size() == x.size(),
              "softmax over rows of {} given {} values and {} outputs", width, x.size(), out.size());
  for_each_row(static_cast<std::int64_t>(x.size()) / width, [&](std::int64_t row) {
    const float* in = x.data() + row * width;
    float* result = out.data() + row * width;
    const Slot slot = row_statistics(false, in, width, split);
    const float inverse = 1.0f / slot.second;
    for (std::int64_t i = 0; i < width; ++i) result[i] = std::exp(in[i] - slot.first) * inverse;
  });
}

}  // namespace tilec::reference
