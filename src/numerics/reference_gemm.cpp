// The host reference GEMM.
//
// Its summation order is part of its definition: every output is the
// sequential sum over k = 0, 1, ..., K-1 of a fused multiply-add,
//   c = fma(a[k], b[k], c), starting from +0.
// That is what the device's AMP does when one accumulator covers all of K
// (the products of FP8 and FP16 values are exact in FP32, so a fused and a
// separate multiply-add agree), so a plan without a K split reproduces the
// reference bit for bit. The kernel below keeps that order while blocking
// for caches: K is walked in increasing blocks and each block continues from
// the sums the previous one left in C.
#include "numerics/reference_ops.h"

#include "numerics/fp16.h"
#include "support/error.h"
#include "support/parallel.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace tilec::reference {

namespace {

constexpr std::int64_t kRowBlock = 64;      // rows of C per task
constexpr std::int64_t kColumnBlock = 256;  // columns of C per task
constexpr std::int64_t kDepthBlock = 256;   // k per pass over a task's C
constexpr std::int64_t kSplitUnit = 16;    // k per unit of a K split (the device's panel)
constexpr int kMicroRows = 4;
constexpr int kMicroColumns = 64;

// C[rows, columns] continues its sums over `depth` steps of k:
// a is [rows][lda] (k contiguous), b is [depth][ldb] (columns contiguous).
// The lanes of a vector are different columns, so vectorising changes no
// output's order.
#if defined(__AVX512F__)
void micro_kernel(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
                  std::int64_t depth) {
  constexpr int kVectors = kMicroColumns / 16;
  __m512 sums[kMicroRows][kVectors];
  for (int r = 0; r < kMicroRows; ++r)
    for (int v = 0; v < kVectors; ++v) sums[r][v] = _mm512_loadu_ps(c + r * ldc + 16 * v);
  for (std::int64_t k = 0; k < depth; ++k) {
    __m512 row[kVectors];
    for (int v = 0; v < kVectors; ++v) row[v] = _mm512_loadu_ps(b + k * ldb + 16 * v);
    for (int r = 0; r < kMicroRows; ++r) {
      const __m512 value = _mm512_set1_ps(a[r * lda + k]);
      for (int v = 0; v < kVectors; ++v) sums[r][v] = _mm512_fmadd_ps(value, row[v], sums[r][v]);
    }
  }
  for (int r = 0; r < kMicroRows; ++r)
    for (int v = 0; v < kVectors; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, sums[r][v]);
}
#elif defined(__AVX2__) && defined(__FMA__)
void micro_kernel(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
                  std::int64_t depth) {
  // Two passes of 32 columns keep the sums in the 16 vector registers.
  for (int half = 0; half < 2; ++half) {
    constexpr int kVectors = kMicroColumns / 16;
    const int offset = half * kMicroColumns / 2;
    __m256 sums[kMicroRows][kVectors];
    for (int r = 0; r < kMicroRows; ++r)
      for (int v = 0; v < kVectors; ++v) sums[r][v] = _mm256_loadu_ps(c + r * ldc + offset + 8 * v);
    for (std::int64_t k = 0; k < depth; ++k) {
      __m256 row[kVectors];
      for (int v = 0; v < kVectors; ++v) row[v] = _mm256_loadu_ps(b + k * ldb + offset + 8 * v);
      for (int r = 0; r < kMicroRows; ++r) {
        const __m256 value = _mm256_set1_ps(a[r * lda + k]);
        for (int v = 0; v < kVectors; ++v) sums[r][v] = _mm256_fmadd_ps(value, row[v], sums[r][v]);
      }
    }
    for (int r = 0; r < kMicroRows; ++r)
      for (int v = 0; v < kVectors; ++v) _mm256_storeu_ps(c + r * ldc + offset + 8 * v, sums[r][v]);
  }
}
#else
void micro_kernel(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
                  std::int64_t depth) {
  for (int r = 0; r < kMicroRows; ++r)
    for (int j = 0; j < kMicroColumns; ++j) {
      float sum = c[r * ldc + j];
      for (std::int64_t k = 0; k < depth; ++k) sum = std::fma(a[r * lda + k], b[k * ldb + j], sum);
      c[r * ldc + j] = sum;
    }
}
#endif

// The same sums for a ragged edge.
#if defined(__AVX512F__)
void edge_kernel(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
                 std::int64_t rows, std::int64_t columns, std::int64_t depth) {
  // 16 columns at a time, the last ones masked; lanes are columns, so each
  // output is still its own sequence of fused multiply-adds.
  for (std::int64_t j = 0; j < columns; j += 16) {
    const auto mask = static_cast<__mmask16>((1u << std::min<std::int64_t>(16, columns - j)) - 1u);
    for (std::int64_t r = 0; r < rows; r += kMicroRows) {
      const int count = static_cast<int>(std::min<std::int64_t>(kMicroRows, rows - r));
      __m512 sums[kMicroRows];
      for (int q = 0; q < count; ++q) sums[q] = _mm512_maskz_loadu_ps(mask, c + (r + q) * ldc + j);
      for (std::int64_t k = 0; k < depth; ++k) {
        const __m512 row = _mm512_maskz_loadu_ps(mask, b + k * ldb + j);
        for (int q = 0; q < count; ++q)
          sums[q] = _mm512_fmadd_ps(_mm512_set1_ps(a[(r + q) * lda + k]), row, sums[q]);
      }
      for (int q = 0; q < count; ++q) _mm512_mask_storeu_ps(c + (r + q) * ldc + j, mask, sums[q]);
    }
  }
}
#else
void edge_kernel(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
                 std::int64_t rows, std::int64_t columns, std::int64_t depth) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < columns; ++j) {
      float sum = c[r * ldc + j];
      for (std::int64_t k = 0; k < depth; ++k) sum = std::fma(a[r * lda + k], b[k * ldb + j], sum);
      c[r * ldc + j] = sum;
    }
}
#endif

// Runs body(row0, column0, rows, columns) for every kRowBlock x
// kColumnBlock block of an m x n result, the blocks in parallel.
template <typename Body>
void for_each_block(std::int64_t m, std::int64_t n, Body&& body) {
  const std::int64_t row_blocks = (m + kRowBlock - 1) / kRowBlock;
  const std::int64_t column_blocks = (n + kColumnBlock - 1) / kColumnBlock;
  parallel_for(0, static_cast<std::size_t>(row_blocks * column_blocks), [&](std::size_t task) {
    const std::int64_t row0 = static_cast<std::int64_t>(task) / column_blocks * kRowBlock;
    const std::int64_t column0 = static_cast<std::int64_t>(task) % column_blocks * kColumnBlock;
    body(row0, column0, std::min(kRowBlock, m - row0), std::min(kColumnBlock, n - column0));
  });
}

// Columns [column_begin, column_end) of C = the sequential sums over k in
// [k_begin, k_end), each from +0, into `out` (those columns only, rows of
// `ldo` floats); lhs is [m][k] and rhs [k][n] (the kernel's orders).
void sums_over(const float* lhs, const float* rhs, float* out, std::int64_t ldo, std::int64_t m, std::int64_t n,
               std::int64_t k, std::int64_t column_begin, std::int64_t column_end, std::int64_t k_begin,
               std::int64_t k_end) {
  const std::int64_t width = column_end - column_begin;
  for (std::int64_t r = 0; r < m; ++r) std::fill_n(out + r * ldo, width, 0.0f);
  // Each task owns a block of C: the result cannot depend on the threads.
  for_each_block(m, width, [&](std::int64_t row0, std::int64_t column0, std::int64_t rows, std::int64_t columns) {
    for (std::int64_t depth0 = k_begin; depth0 < k_end; depth0 += kDepthBlock) {
      const std::int64_t depth = std::min(kDepthBlock, k_end - depth0);
      for (std::int64_t j = 0; j < columns; j += kMicroColumns)
        for (std::int64_t r = 0; r < rows; r += kMicroRows) {
          const float* a_block = lhs + (row0 + r) * k + depth0;
          const float* b_block = rhs + depth0 * n + column_begin + column0 + j;
          float* c_block = out + (row0 + r) * ldo + column0 + j;
          const std::int64_t micro_rows = std::min<std::int64_t>(kMicroRows, rows - r);
          const std::int64_t micro_columns = std::min<std::int64_t>(kMicroColumns, columns - j);
          if (micro_rows == kMicroRows && micro_columns == kMicroColumns)
            micro_kernel(a_block, k, b_block, n, c_block, ldo, depth);
          else
            edge_kernel(a_block, k, b_block, n, c_block, ldo, micro_rows, micro_columns, depth);
        }
    }
  });
}

// Every column of C in one range with its order of parts: the split's
// ranges, and K order wherever they leave a gap.
std::vector<KSplit::Columns> column_orders(const KSplit& split, std::int64_t n) {
  const int parts = split.parts();
  std::vector<KSplit::Columns> ranges = split.orders;
  std::sort(ranges.begin(), ranges.end(), [](const auto& x, const auto& y) { return x.begin < y.begin; });
  std::vector<int> k_order(static_cast<std::size_t>(parts));
  for (int p = 0; p < parts; ++p) k_order[static_cast<std::size_t>(p)] = p;
  std::vector<KSplit::Columns> all;
  std::int64_t covered = 0;
  for (const KSplit::Columns& range : ranges) {
    if (range.begin < covered || range.end > n || range.begin >= range.end)
      throw_bad_input("gemm K split", "column range [{}, {}) is empty, outside [0, {}) or overlaps another",
                      range.begin, range.end, n);
    std::vector<bool> seen(static_cast<std::size_t>(parts), false);
    for (int part : range.parts) {
      if (part < 0 || part >= parts || seen[static_cast<std::size_t>(part)])
        throw_bad_input("gemm K split", "the order of columns [{}, {}) is not a permutation of its {} parts",
                        range.begin, range.end, parts);
      seen[static_cast<std::size_t>(part)] = true;
    }
    if (static_cast<int>(range.parts.size()) != parts)
      throw_bad_input("gemm K split", "the order of columns [{}, {}) names {} of its {} parts", range.begin,
                      range.end, range.parts.size(), parts);
    if (range.begin > covered) all.push_back(KSplit::Columns{covered, range.begin, k_order});
    all.push_back(range);
    covered = range.end;
  }
  if (covered < n) all.push_back(KSplit::Columns{covered, n, k_order});
  return all;
}

// The operands in the kernel's orders: A rows with k contiguous, B rows of
// k with columns contiguous (transposed into `a_rows`, `b_rows` if need be).
template <typename T>
std::pair<const T*, const T*> kernel_order(std::span<const T> a, std::span<const T> b, std::int64_t m, std::int64_t n,
                                           std::int64_t k, bool transpose_a, bool transpose_b, std::vector<T>& a_rows,
                                           std::vector<T>& b_rows) {
  const T* lhs = a.data();
  const T* rhs = b.data();
  if (transpose_a) {
    a_rows.resize(static_cast<std::size_t>(m * k));
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t i = 0; i < m; ++i) a_rows[static_cast<std::size_t>(i * k + p)] = a[static_cast<std::size_t>(p * m + i)];
    lhs = a_rows.data();
  }
  if (transpose_b) {
    b_rows.resize(static_cast<std::size_t>(k * n));
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t p = 0; p < k; ++p) b_rows[static_cast<std::size_t>(p * n + j)] = b[static_cast<std::size_t>(j * k + p)];
    rhs = b_rows.data();
  }
  return {lhs, rhs};
}

// Whether a column's running sum is rounded to FP16 once `added` of its
// `parts` parts are in: at the end of a pass that leaves parts to add.
bool rounds_after(const KSplit& split, std::size_t added, std::size_t parts) {
  if (!split.half_partials || split.pass_parts < 2 || added >= parts) return false;
  const std::size_t pass = static_cast<std::size_t>(split.pass_parts);
  return added >= pass && (added - pass) % (pass - 1) == 0;
}

// C = the parts' sums of `split` added per column in its range's order, a
// strip of columns at a time (every part's sums of the strip first, at the
// kernel's full width), so the parts' sums need little memory.
void split_sums(const float* lhs, const float* rhs, std::span<float> c, std::int64_t m, std::int64_t n,
                std::int64_t k, const KSplit& split) {
  const int parts = split.parts();
  const std::vector<KSplit::Columns> ranges = column_orders(split, n);
  std::vector<const std::vector<int>*> order_of(static_cast<std::size_t>(n));
  for (const KSplit::Columns& range : ranges)
    for (std::int64_t j = range.begin; j < range.end; ++j) order_of[static_cast<std::size_t>(j)] = &range.parts;
  for (std::int64_t strip = 0; strip < n; strip += kColumnBlock) {
    const std::int64_t width = std::min(kColumnBlock, n - strip);
    const std::size_t part_floats = static_cast<std::size_t>(m * width);
    std::vector<float> sums(part_floats * static_cast<std::size_t>(parts));
    for (int p = 0; p < parts; ++p) {
      float* part = sums.data() + part_floats * static_cast<std::size_t>(p);
      sums_over(lhs, rhs, part, width, m, n, k, strip, strip + width, split.cuts[static_cast<std::size_t>(p)],
                split.cuts[static_cast<std::size_t>(p) + 1]);
      if (split.half_partials) round_to_half(std::span<float>(part, part_floats));
    }
    parallel_for(0, static_cast<std::size_t>(m), [&](std::size_t row) {
      float* out = c.data() + static_cast<std::int64_t>(row) * n + strip;
      const float* first = sums.data() + row * static_cast<std::size_t>(width);
      for (std::int64_t j = 0; j < width; ++j) {
        const std::vector<int>& order = *order_of[static_cast<std::size_t>(strip + j)];
        float total = first[part_floats * static_cast<std::size_t>(order[0]) + static_cast<std::size_t>(j)];
        for (std::size_t i = 1; i < order.size(); ++i) {
          total += first[part_floats * static_cast<std::size_t>(order[i]) + static_cast<std::size_t>(j)];
          if (rounds_after(split, i + 1, order.size())) total = round_to_half(total);
        }
        out[j] = total;
      }
    });
  }
}

}  // namespace

void gemm(std::span<const float> a, std::span<const float> b, std::span<float> c, std::int64_t m,
          std::int64_t n, std::int64_t k, bool transpose_a, bool transpose_b, int k_parts) {
  TILEC_CHECK(m >= 0 && n >= 0 && k >= 0, "gemm of negative size {}x{}x{}", m, n, k);
  TILEC_CHECK(k_parts >= 1, "gemm in {} K parts", k_parts);
  TILEC_CHECK(static_cast<std::int64_t>(a.size()) == m * k &&
                  static_cast<std::int64_t>(b.size()) == k * n &&
                  static_cast<std::int64_t>(c.size()) == m * n,
              "gemm {}x{}x{} given buffers of {}, {} and {} floats", m, n, k, a.size(), b.size(),
              c.size());
  if (m == 0 || n == 0) return;
  std::vector<float> a_rows, b_rows;
  const auto [lhs, rhs] = kernel_order(a, b, m, n, k, transpose_a, transpose_b, a_rows, b_rows);
  if (k_parts == 1) {
    sums_over(lhs, rhs, c.data(), n, m, n, k, 0, n, 0, k);
    return;
  }
  split_sums(lhs, rhs, c, m, n, k, balanced_k_split(k, k_parts));
}

void gemm(std::span<const float> a, std::span<const float> b, std::span<float> c, std::int64_t m, std::int64_t n,
          std::int64_t k, bool transpose_a, bool transpose_b, const KSplit& split) {
  const int parts = split.parts();
  if (parts < 1 || split.cuts.front() != 0 || split.cuts.back() != k ||
      !std::is_sorted(split.cuts.begin(), split.cuts.end()))
    throw_bad_input("gemm K split", "the cuts must run from 0 to K = {} in increasing order", k);
  if (split.pass_parts < 0 || split.pass_parts == 1)
    throw_bad_input("gemm K split", "passes of {} parts (0 for one pass, else at least 2)", split.pass_parts);
  if (parts == 1) {
    gemm(a, b, c, m, n, k, transpose_a, transpose_b, 1);
    return;
  }
  TILEC_CHECK(static_cast<std::int64_t>(a.size()) == m * k && static_cast<std::int64_t>(b.size()) == k * n &&
                  static_cast<std::int64_t>(c.size()) == m * n,
              "gemm {}x{}x{} given buffers of {}, {} and {} floats", m, n, k, a.size(), b.size(), c.size());
  if (m == 0 || n == 0) return;
  std::vector<float> a_rows, b_rows;
  const auto [lhs, rhs] = kernel_order(a, b, m, n, k, transpose_a, transpose_b, a_rows, b_rows);
  split_sums(lhs, rhs, c, m, n, k, split);
}

KSplit balanced_k_split(std::int64_t k, int parts) {
  TILEC_CHECK(parts >= 1, "gemm in {} K parts", parts);
  const std::int64_t units = (k + kSplitUnit - 1) / kSplitUnit;
  KSplit split;
  for (int part = 0; part <= parts; ++part) split.cuts.push_back(std::min(k, units * part / parts * kSplitUnit));
  return split;
}

void gemm(std::span<const double> a, std::span<const double> b, std::span<double> c, std::int64_t m, std::int64_t n,
          std::int64_t k, bool transpose_a, bool transpose_b) {
  TILEC_CHECK(static_cast<std::int64_t>(a.size()) == m * k && static_cast<std::int64_t>(b.size()) == k * n &&
                  static_cast<std::int64_t>(c.size()) == m * n,
              "gemm {}x{}x{} given buffers of {}, {} and {} doubles", m, n, k, a.size(), b.size(), c.size());
  std::fill(c.begin(), c.end(), 0.0);
  if (m == 0 || n == 0) return;
  std::vector<double> a_rows, b_rows;
  const auto [lhs, rhs] = kernel_order(a, b, m, n, k, transpose_a, transpose_b, a_rows, b_rows);
  // Each task owns a block of C and walks k in order for each output.
  for_each_block(m, n, [&](std::int64_t row0, std::int64_t column0, std::int64_t rows, std::int64_t columns) {
    for (std::int64_t depth0 = 0; depth0 < k; depth0 += kDepthBlock) {
      const std::int64_t depth = std::min(kDepthBlock, k - depth0);
      for (std::int64_t r = row0; r < row0 + rows; ++r) {
        double* out = c.data() + r * n + column0;
        for (std::int64_t p = depth0; p < depth0 + depth; ++p) {
          const double value = lhs[r * k + p];
          const double* row = rhs + p * n + column0;
          for (std::int64_t j = 0; j < columns; ++j) out[j] += value * row[j];
        }
      }
    }
  });
}

}  // namespace tilec::reference
