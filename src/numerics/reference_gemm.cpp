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

// C = the sequential sums over k in [k_begin, k_end), each from +0; lhs is
// [m][k] and rhs [k][n] (the kernel's orders).
void sums_over(const float* lhs, const float* rhs, std::span<float> c, std::int64_t m, std::int64_t n,
               std::int64_t k, std::int64_t k_begin, std::int64_t k_end) {
  std::fill(c.begin(), c.end(), 0.0f);
  // Each task owns a block of C: the result cannot depend on the threads.
  for_each_block(m, n, [&](std::int64_t row0, std::int64_t column0, std::int64_t rows, std::int64_t columns) {
    for (std::int64_t depth0 = k_begin; depth0 < k_end; depth0 += kDepthBlock) {
      const std::int64_t depth = std::min(kDepthBlock, k_end - depth0);
      for (std::int64_t j = 0; j < columns; j += kMicroColumns)
        for (std::int64_t r = 0; r < rows; r += kMicroRows) {
          const float* a_block = lhs + (row0 + r) * k + depth0;
          const float* b_block = rhs + depth0 * n + column0 + j;
          float* c_block = c.data() + (row0 + r) * n + column0 + j;
          const std::int64_t micro_rows = std::min<std::int64_t>(kMicroRows, rows - r);
          const std::int64_t micro_columns = std::min<std::int64_t>(kMicroColumns, columns - j);
          if (micro_rows == kMicroRows && micro_columns == kMicroColumns)
            micro_kernel(a_block, k, b_block, n, c_block, n, depth);
          else
            edge_kernel(a_block, k, b_block, n, c_block, n, micro_rows, micro_columns, depth);
        }
    }
  });
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
    sums_over(lhs, rhs, c, m, n, k, 0, k);
    return;
  }
  // Parts of whole units of 16 k, as balanced as a plan splits them; empty
  // parts add nothing.
  const std::int64_t units = (k + kSplitUnit - 1) / kSplitUnit;
  std::vector<float> part_sums(c.size());
  bool first = true;
  for (int part = 0; part < k_parts; ++part) {
    const std::int64_t k_begin = std::min(k, units * part / k_parts * kSplitUnit);
    const std::int64_t k_end = std::min(k, units * (part + 1) / k_parts * kSplitUnit);
    if (k_begin == k_end) continue;
    sums_over(lhs, rhs, first ? c : std::span<float>(part_sums), m, n, k, k_begin, k_end);
    if (!first)
      for (std::size_t i = 0; i < c.size(); ++i) c[i] += part_sums[i];
    first = false;
  }
  if (first) std::fill(c.begin(), c.end(), 0.0f);
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
