#include "numerics/reference_ops.h"

// GCC 12 flags Eigen's AVX-512 shuffles as possibly uninitialised (a false alarm).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "support/error.h"
#include "support/parallel.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <mutex>

namespace tilec::reference {

namespace {

using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMatrixMap = Eigen::Map<const RowMajorMatrix>;
using MatrixMap = Eigen::Map<RowMajorMatrix>;

// The output is cut into blocks of fixed size, each computed whole by one
// thread. How a block is summed depends only on its shape, so the result is
// the same for any thread count. Column blocks keep each packed slice of B
// small enough to be reused from cache across a block's rows.
constexpr std::int64_t kRowBlock = 128;
constexpr std::int64_t kColumnBlock = 1024;
// Below this in any dimension Eigen would switch to matrix-vector or
// coefficient-wise code, whose summation order can depend on data alignment;
// such thin blocks use a plain loop instead.
constexpr std::int64_t kSmallestEigenBlock = 8;

// Eigen sizes its depth blocking from the host's caches; fixed sizes make the
// summation order the same on every machine with the same vector width.
void pin_eigen_blocking() {
  static std::once_flag once;
  std::call_once(once, [] { Eigen::setCpuCacheSizes(32 * 1024, 1024 * 1024, 16 * 1024 * 1024); });
}

// C[block] = A[rows, :] x B[:, columns], summing over k in order.
template <typename LhsBlock, typename RhsBlock, typename OutBlock>
void multiply_plainly(const LhsBlock& lhs, const RhsBlock& rhs, OutBlock out) {
  for (Eigen::Index i = 0; i < out.rows(); ++i)
    for (Eigen::Index j = 0; j < out.cols(); ++j) {
      float sum = 0.0f;
      for (Eigen::Index p = 0; p < lhs.cols(); ++p) sum += lhs(i, p) * rhs(p, j);
      out(i, j) = sum;
    }
}

template <typename Lhs, typename Rhs>
void multiply_blocks(const Lhs& lhs, const Rhs& rhs, MatrixMap& out) {
  const std::int64_t m = out.rows(), n = out.cols(), k = lhs.cols();
  const std::int64_t row_blocks = (m + kRowBlock - 1) / kRowBlock;
  const std::int64_t column_blocks = (n + kColumnBlock - 1) / kColumnBlock;
  parallel_for(0, static_cast<std::size_t>(row_blocks * column_blocks), [&](std::size_t index) {
    const std::int64_t row = static_cast<std::int64_t>(index) / column_blocks * kRowBlock;
    const std::int64_t column = static_cast<std::int64_t>(index) % column_blocks * kColumnBlock;
    const std::int64_t rows = std::min(kRowBlock, m - row);
    const std::int64_t columns = std::min(kColumnBlock, n - column);
    auto lhs_block = lhs.middleRows(row, rows);
    auto rhs_block = rhs.middleCols(column, columns);
    auto out_block = out.block(row, column, rows, columns);
    if (std::min({rows, columns, k}) < kSmallestEigenBlock)
      multiply_plainly(lhs_block, rhs_block, out_block);
    else
      out_block.noalias() = lhs_block * rhs_block;
  });
}

template <typename Lhs>
void multiply_with_rhs(const Lhs& lhs, std::span<const float> b, std::int64_t n, std::int64_t k,
                       bool transpose_b, MatrixMap& out) {
  if (transpose_b)
    multiply_blocks(lhs, ConstMatrixMap(b.data(), n, k).transpose(), out);
  else
    multiply_blocks(lhs, ConstMatrixMap(b.data(), k, n), out);
}

}  // namespace

void gemm(std::span<const float> a, std::span<const float> b, std::span<float> c, std::int64_t m,
          std::int64_t n, std::int64_t k, bool transpose_a, bool transpose_b) {
  TILEC_CHECK(m >= 0 && n >= 0 && k >= 0, "gemm of negative size {}x{}x{}", m, n, k);
  TILEC_CHECK(static_cast<std::int64_t>(a.size()) == m * k &&
                  static_cast<std::int64_t>(b.size()) == k * n &&
                  static_cast<std::int64_t>(c.size()) == m * n,
              "gemm {}x{}x{} given buffers of {}, {} and {} floats", m, n, k, a.size(), b.size(),
              c.size());
  if (m == 0 || n == 0) return;
  pin_eigen_blocking();
  MatrixMap out(c.data(), m, n);
  if (transpose_a)
    multiply_with_rhs(ConstMatrixMap(a.data(), k, m).transpose(), b, n, k, transpose_b, out);
  else
    multiply_with_rhs(ConstMatrixMap(a.data(), m, k), b, n, k, transpose_b, out);
}

float gelu_tanh(float x) {
  const float sqrt_2_over_pi = 0.7978845608028654f;
  const float inner = sqrt_2_over_pi * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + std::tanh(inner));
}

float gelu_erf(float x) {
  const float one_over_sqrt_2 = 0.7071067811865476f;
  return 0.5f * x * (1.0f + std::erf(x * one_over_sqrt_2));
}

namespace {

// Rows are independent, so splitting them over threads cannot change a bit.
template <typename RowBody>
void for_each_row(std::int64_t rows, RowBody&& body) {
  constexpr std::int64_t kRowsPerTask = 64;
  const std::int64_t tasks = (rows + kRowsPerTask - 1) / kRowsPerTask;
  parallel_for(0, static_cast<std::size_t>(tasks), [&](std::size_t task) {
    const std::int64_t first = static_cast<std::int64_t>(task) * kRowsPerTask;
    for (std::int64_t row = first; row < std::min(rows, first + kRowsPerTask); ++row) body(row);
  });
}

std::int64_t row_count(std::size_t size, std::int64_t width, const char* op) {
  TILEC_CHECK(width > 0 && static_cast<std::int64_t>(size) % width == 0,
              "{} over rows of {} given {} values", op, width, size);
  return static_cast<std::int64_t>(size) / width;
}

}  // namespace

void layernorm(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta,
               std::span<float> out, std::int64_t width, float epsilon) {
  const std::int64_t rows = row_count(x.size(), width, "layernorm");
  TILEC_CHECK(out.size() == x.size() && static_cast<std::int64_t>(gamma.size()) == width &&
                  static_cast<std::int64_t>(beta.size()) == width,
              "layernorm of {} values given {} outputs, {} gamma and {} beta", x.size(), out.size(),
              gamma.size(), beta.size());
  for_each_row(rows, [&](std::int64_t row) {
    const float* in = x.data() + row * width;
    float* result = out.data() + row * width;
    // Two passes: the variance of deviations from the mean does not cancel.
    float sum = 0.0f;
    for (std::int64_t i = 0; i < width; ++i) sum += in[i];
    const float mean = sum / static_cast<float>(width);
    float squares = 0.0f;
    for (std::int64_t i = 0; i < width; ++i) squares += (in[i] - mean) * (in[i] - mean);
    const float variance = squares / static_cast<float>(width);
    const float inverse_deviation = 1.0f / std::sqrt(variance + epsilon);
    for (std::int64_t i = 0; i < width; ++i)
      result[i] = (in[i] - mean) * inverse_deviation * gamma[i] + beta[i];
  });
}

void softmax(std::span<const float> x, std::span<float> out, std::int64_t width) {
  const std::int64_t rows = row_count(x.size(), width, "softmax");
  TILEC_CHECK(out.size() == x.size(), "softmax of {} values given {} outputs", x.size(), out.size());
  for_each_row(rows, [&](std::int64_t row) {
    const float* in = x.data() + row * width;
    float* result = out.data() + row * width;
    // Subtracting the largest value keeps every exponential in (0, 1].
    const float largest = *std::max_element(in, in + width);
    float sum = 0.0f;
    for (std::int64_t i = 0; i < width; ++i) {
      result[i] = std::exp(in[i] - largest);
      sum += result[i];
    }
    for (std::int64_t i = 0; i < width; ++i) result[i] /= sum;
  });
}

}  // namespace tilec::reference
