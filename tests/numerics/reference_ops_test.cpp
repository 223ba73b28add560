// Host reference kernels against plain double-precision loops.
#include "numerics/reference_ops.h"

#include "numerics/fp16.h"

#include "support/error.h"
#include "support/parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace tilec::reference {
namespace {

// Values in [-1, 1) from a fixed linear congruential sequence.
std::vector<float> test_values(std::size_t count, std::uint64_t seed) {
  std::vector<float> values(count);
  std::uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  for (float& value : values) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    value = static_cast<float>(static_cast<double>(state >> 40) * 0x1p-23 - 1.0);
  }
  return values;
}

struct GemmCase {
  std::int64_t m, n, k;
  bool transpose_a = false, transpose_b = false;
};

// Checks C against a double-precision product: each element within the
// worst-case FP32 summation error, k * 2^-24 * sum |a b|, of the exact value.
void expect_gemm_matches_double(const GemmCase& shape) {
  const auto [m, n, k, transpose_a, transpose_b] = shape;
  const auto a = test_values(static_cast<std::size_t>(m * k), 1);
  const auto b = test_values(static_cast<std::size_t>(k * n), 2);
  std::vector<float> c(static_cast<std::size_t>(m * n), std::numeric_limits<float>::quiet_NaN());
  gemm(a, b, c, m, n, k, transpose_a, transpose_b);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double exact = 0, magnitude = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double lhs = a[static_cast<std::size_t>(transpose_a ? p * m + i : i * k + p)];
        const double rhs = b[static_cast<std::size_t>(transpose_b ? j * k + p : p * n + j)];
        exact += lhs * rhs;
        magnitude += std::fabs(lhs * rhs);
      }
      const double bound = static_cast<double>(k + 1) * 0x1p-24 * magnitude;
      const double got = c[static_cast<std::size_t>(i * n + j)];
      ASSERT_LE(std::fabs(got - exact), bound)
          << m << "x" << n << "x" << k << " transposes " << transpose_a << transpose_b << " at (" << i
          << ", " << j << ")";
    }
}

TEST(ReferenceGemm, MatchesDoublePrecisionOnOddShapes) {
  for (bool transpose_a : {false, true})
    for (bool transpose_b : {false, true}) {
      for (GemmCase shape : {GemmCase{1, 1, 1}, GemmCase{17, 33, 65}, GemmCase{3, 5, 7}, GemmCase{1, 40, 30},
                             GemmCase{40, 1, 30}, GemmCase{9, 12, 2}, GemmCase{131, 1030, 19},
                             GemmCase{260, 9, 300}}) {
        shape.transpose_a = transpose_a;
        shape.transpose_b = transpose_b;
        expect_gemm_matches_double(shape);
        if (HasFatalFailure()) return;
      }
    }
}

TEST(ReferenceGemm, ExactOnSmallIntegers) {
  // [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]] = [[58,64],[139,154]]
  const std::vector<float> a{1, 2, 3, 4, 5, 6}, b{7, 8, 9, 10, 11, 12};
  std::vector<float> c(4);
  gemm(a, b, c, 2, 2, 3);
  EXPECT_EQ(c, (std::vector<float>{58, 64, 139, 154}));
  // The same with A stored transposed ([3,2]) and B stored transposed ([2,3]).
  const std::vector<float> a_t{1, 4, 2, 5, 3, 6}, b_t{7, 9, 11, 8, 10, 12};
  gemm(a_t, b_t, c, 2, 2, 3, true, true);
  EXPECT_EQ(c, (std::vector<float>{58, 64, 139, 154}));
}

TEST(ReferenceGemm, EmptyDepthGivesZeros) {
  std::vector<float> c(6, 1.0f);
  gemm({}, {}, c, 2, 3, 0);
  EXPECT_EQ(c, std::vector<float>(6, 0.0f));
}

TEST(ReferenceGemm, RejectsBuffersOfTheWrongSize) {
  std::vector<float> a(6), b(6), c(3);
  EXPECT_THROW(gemm(a, b, c, 2, 2, 3), Error);
}

std::vector<std::uint32_t> bits_of(const std::vector<float>& values) {
  std::vector<std::uint32_t> bits;
  for (float value : values) bits.push_back(std::bit_cast<std::uint32_t>(value));
  return bits;
}

TEST(ReferenceGemm, BitIdenticalForAnyThreadCount) {
  const std::int64_t m = 300, n = 2100, k = 70;
  for (bool transpose_a : {false, true}) {
    const auto a = test_values(static_cast<std::size_t>(m * k), 3);
    const auto b = test_values(static_cast<std::size_t>(k * n), 4);
    std::vector<float> one(static_cast<std::size_t>(m * n)), two(one.size()), again(one.size());
    set_thread_count(1);
    gemm(a, b, one, m, n, k, transpose_a, false);
    set_thread_count(2);
    gemm(a, b, two, m, n, k, transpose_a, false);
    gemm(a, b, again, m, n, k, transpose_a, false);
    set_thread_count(0);
    EXPECT_EQ(bits_of(one), bits_of(two));
    EXPECT_EQ(bits_of(two), bits_of(again));
  }
}

// K in parts: each part's sums from +0 over its whole units of 16 k, added
// in K order; the same as summing sliced operands and adding the results.
TEST(ReferenceGemm, KPartsSumEachPartAndAddThemInOrder) {
  const std::int64_t m = 5, n = 70, k = 300;  // 19 units of 16 (the last of 12)
  for (bool transpose_a : {false, true})
    for (bool transpose_b : {false, true}) {
      const auto a = test_values(static_cast<std::size_t>(m * k), 21);
      const auto b = test_values(static_cast<std::size_t>(k * n), 22);
      auto at = [&](std::int64_t i, std::int64_t p) { return a[static_cast<std::size_t>(transpose_a ? p * m + i : i * k + p)]; };
      auto bt = [&](std::int64_t p, std::int64_t j) { return b[static_cast<std::size_t>(transpose_b ? j * k + p : p * n + j)]; };
      for (int parts : {1, 3, 19, 25}) {
        std::vector<float> split(static_cast<std::size_t>(m * n));
        gemm(a, b, split, m, n, k, transpose_a, transpose_b, parts);
        const std::int64_t units = 19;
        std::vector<float> expected(split.size(), 0.0f);
        bool first = true;
        for (int part = 0; part < parts; ++part) {
          const std::int64_t begin = std::min(k, units * part / parts * 16), end = std::min(k, units * (part + 1) / parts * 16);
          if (begin == end) continue;
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
              float sum = 0.0f;
              for (std::int64_t p = begin; p < end; ++p) sum = std::fma(at(i, p), bt(p, j), sum);
              float& c = expected[static_cast<std::size_t>(i * n + j)];
              c = first ? sum : c + sum;
            }
          first = false;
        }
        EXPECT_EQ(bits_of(split), bits_of(expected)) << parts << " parts";
      }
      std::vector<float> one(static_cast<std::size_t>(m * n)), three(one.size());
      gemm(a, b, one, m, n, k, transpose_a, transpose_b);
      gemm(a, b, three, m, n, k, transpose_a, transpose_b, 3);
      EXPECT_NE(bits_of(one), bits_of(three)) << "another order, other last bits somewhere";
    }
}

// The definition, bit for bit, on shapes whose rows and columns leave
// ragged edges in every block (the attention's 729 x 72 and 729 x 729).
TEST(ReferenceGemm, EdgesAreTheSequentialFusedSums) {
  for (const GemmCase& shape : {GemmCase{37, 72, 50}, GemmCase{5, 25, 300}, GemmCase{66, 729, 9, false, true},
                                 GemmCase{3, 17, 64, true, false}, GemmCase{130, 300, 17}, GemmCase{1, 1, 5}}) {
    const auto [m, n, k, transpose_a, transpose_b] = shape;
    const auto a = test_values(static_cast<std::size_t>(m * k), 31);
    const auto b = test_values(static_cast<std::size_t>(k * n), 32);
    std::vector<float> c(static_cast<std::size_t>(m * n)), expected(c.size());
    gemm(a, b, c, m, n, k, transpose_a, transpose_b);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        float sum = 0.0f;
        for (std::int64_t p = 0; p < k; ++p)
          sum = std::fma(a[static_cast<std::size_t>(transpose_a ? p * m + i : i * k + p)],
                         b[static_cast<std::size_t>(transpose_b ? j * k + p : p * n + j)], sum);
        expected[static_cast<std::size_t>(i * n + j)] = sum;
      }
    EXPECT_EQ(bits_of(c), bits_of(expected)) << m << "x" << n << "x" << k;
  }
}

// Memory addresses differ from run to run; the bits must not.
TEST(ReferenceGemm, BitIdenticalWhateverTheDataAlignment) {
  for (const GemmCase& shape : {GemmCase{37, 45, 29}, GemmCase{5, 7, 11}, GemmCase{3, 5, 7}, GemmCase{4, 6, 8},
                                 GemmCase{1, 33, 20}, GemmCase{33, 1, 20}, GemmCase{150, 70, 3}}) {
    const auto [m, n, k, transpose_a, transpose_b] = shape;
    const auto a = test_values(static_cast<std::size_t>(m * k), 9);
    const auto b = test_values(static_cast<std::size_t>(k * n), 10);
    std::vector<std::uint32_t> first;
    for (std::size_t offset = 0; offset < 4; ++offset) {
      std::vector<float> a_at(offset + a.size()), b_at(offset + b.size()), c_at(offset + static_cast<std::size_t>(m * n));
      std::copy(a.begin(), a.end(), a_at.begin() + static_cast<std::ptrdiff_t>(offset));
      std::copy(b.begin(), b.end(), b_at.begin() + static_cast<std::ptrdiff_t>(offset));
      gemm(std::span(a_at).subspan(offset), std::span(b_at).subspan(offset), std::span(c_at).subspan(offset), m, n, k);
      const auto bits = bits_of(std::vector<float>(c_at.begin() + static_cast<std::ptrdiff_t>(offset), c_at.end()));
      if (offset == 0) first = bits;
      EXPECT_EQ(bits, first) << m << "x" << n << "x" << k << " offset " << offset;
    }
  }
}

double gelu_tanh_double(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
double gelu_erf_double(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

TEST(ReferenceGelu, KnownValues) {
  EXPECT_EQ(gelu_tanh(0.0f), 0.0f);
  EXPECT_EQ(gelu_erf(0.0f), 0.0f);
  EXPECT_NEAR(gelu_tanh(1.0f), 0.8411919906082768, 1e-7);
  EXPECT_NEAR(gelu_tanh(-1.0f), -0.15880800939172324, 1e-7);
  EXPECT_NEAR(gelu_tanh(2.0f), 1.9545976940871754, 2e-7);
  EXPECT_NEAR(gelu_erf(1.0f), 0.8413447460685429, 1e-7);
  EXPECT_NEAR(gelu_erf(-1.0f), -0.15865525393145707, 1e-7);
  EXPECT_NEAR(gelu_erf(2.0f), 1.9544997361036416, 2e-7);
  // Far out, GELU is the identity on the right and zero on the left.
  EXPECT_EQ(gelu_tanh(20.0f), 20.0f);
  EXPECT_EQ(gelu_erf(20.0f), 20.0f);
  EXPECT_EQ(gelu_tanh(-20.0f), 0.0f);
  EXPECT_EQ(gelu_erf(-20.0f), 0.0f);
}

TEST(ReferenceGelu, CloseToDoublePrecisionEverywhere) {
  for (float x = -8.0f; x <= 8.0f; x += 1.0f / 64) {
    EXPECT_NEAR(gelu_tanh(x), gelu_tanh_double(x), 4e-7 * std::fmax(1.0, std::fabs(x))) << x;
    EXPECT_NEAR(gelu_erf(x), gelu_erf_double(x), 4e-7 * std::fmax(1.0, std::fabs(x))) << x;
  }
}

TEST(ReferenceLayerNorm, MatchesDoublePrecision) {
  const std::int64_t width = 37, rows = 150;
  auto x = test_values(static_cast<std::size_t>(width * rows), 5);
  for (float& value : x) value = value * 3.0f + 10.0f;  // an offset mean tests the two passes
  const auto gamma = test_values(static_cast<std::size_t>(width), 6);
  const auto beta = test_values(static_cast<std::size_t>(width), 7);
  std::vector<float> out(x.size());
  layernorm(x, gamma, beta, out, width, 1e-5f);
  for (std::int64_t row = 0; row < rows; ++row) {
    double mean = 0, variance = 0;
    for (std::int64_t i = 0; i < width; ++i) mean += x[static_cast<std::size_t>(row * width + i)];
    mean /= width;
    for (std::int64_t i = 0; i < width; ++i) {
      const double deviation = x[static_cast<std::size_t>(row * width + i)] - mean;
      variance += deviation * deviation;
    }
    variance /= width;
    for (std::int64_t i = 0; i < width; ++i) {
      const std::size_t at = static_cast<std::size_t>(row * width + i);
      const double expected = (x[at] - mean) / std::sqrt(variance + 1e-5) * gamma[static_cast<std::size_t>(i)] +
                              beta[static_cast<std::size_t>(i)];
      ASSERT_NEAR(out[at], expected, 2e-5) << row << ", " << i;
    }
  }
}

TEST(ReferenceLayerNorm, ConstantRowGivesBeta) {
  const std::vector<float> x(8, 3.5f), gamma(4, 2.0f), beta{1, 2, 3, 4};
  std::vector<float> out(8);
  layernorm(x, gamma, beta, out, 4, 1e-6f);
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4}));
}

TEST(ReferenceSoftmax, MatchesDoublePrecisionAndSumsToOne) {
  const std::int64_t width = 29, rows = 140;
  auto x = test_values(static_cast<std::size_t>(width * rows), 8);
  for (float& value : x) value *= 12.0f;
  std::vector<float> out(x.size());
  softmax(x, out, width);
  for (std::int64_t row = 0; row < rows; ++row) {
    double total = 0, sum = 0;
    for (std::int64_t i = 0; i < width; ++i) total += std::exp(static_cast<double>(x[static_cast<std::size_t>(row * width + i)]));
    for (std::int64_t i = 0; i < width; ++i) {
      const std::size_t at = static_cast<std::size_t>(row * width + i);
      ASSERT_NEAR(out[at], std::exp(static_cast<double>(x[at])) / total, 1e-6) << row << ", " << i;
      sum += out[at];
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

TEST(ReferenceSoftmax, StableForLargeInputs) {
  const std::vector<float> x{1000.0f, 1001.0f, -1000.0f, 88.0f, 89.0f, 90.0f};
  std::vector<float> out(6);
  softmax(x, out, 3);
  const double e = std::exp(1.0);
  EXPECT_NEAR(out[0], 1 / (1 + e), 1e-7);
  EXPECT_NEAR(out[1], e / (1 + e), 1e-7);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_NEAR(out[5], 1 / (1 + 1 / e + 1 / (e * e)), 1e-7);
}

TEST(ReferenceRows, RejectWidthsThatDoNotDivideTheData) {
  std::vector<float> x(10), out(10), gamma(3), beta(3);
  EXPECT_THROW(softmax(x, out, 3), Error);
  EXPECT_THROW(layernorm(x, gamma, beta, out, 3, 1e-6f), Error);
}


// Each part summed from +0 in k order, rounded to FP16 when asked, then
// added per column range in its order: the definition, written out.
TEST(ReferenceGemm, ExplicitKSplitsSumEachRangeInItsOrder) {
  const std::int64_t m = 6, n = 40, k = 70;
  const auto a = test_values(static_cast<std::size_t>(m * k), 31);
  const auto b = test_values(static_cast<std::size_t>(k * n), 32);
  for (bool half : {false, true}) {
    const KSplit split{{0, 16, 16, 50, 70}, half, {{0, 10, {2, 0, 1, 3}}, {25, 40, {3, 1, 2, 0}}}};
    std::vector<float> c(static_cast<std::size_t>(m * n));
    gemm(a, b, c, m, n, k, false, false, split);
    std::vector<float> expected(c.size());
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        std::vector<float> parts;
        for (int p = 0; p < 4; ++p) {
          float sum = 0.0f;
          for (std::int64_t q = split.cuts[static_cast<std::size_t>(p)]; q < split.cuts[static_cast<std::size_t>(p) + 1]; ++q)
            sum = std::fma(a[static_cast<std::size_t>(i * k + q)], b[static_cast<std::size_t>(q * n + j)], sum);
          parts.push_back(half ? round_to_half(sum) : sum);
        }
        const std::vector<int> order = j < 10 ? std::vector<int>{2, 0, 1, 3}
                                       : j >= 25 ? std::vector<int>{3, 1, 2, 0}
                                                 : std::vector<int>{0, 1, 2, 3};
        float total = parts[static_cast<std::size_t>(order[0])];
        for (std::size_t o = 1; o < order.size(); ++o) total += parts[static_cast<std::size_t>(order[o])];
        expected[static_cast<std::size_t>(i * n + j)] = total;
      }
    EXPECT_EQ(bits_of(c), bits_of(expected)) << (half ? "FP16 partials" : "FP32 partials");
  }
}

// In passes of 3 parts, FP16 partials' running sum is rounded to FP16
// after parts 3 and 5 (a pass that leaves parts to add), not after the
// last; FP32 partials are the same in any passes.
TEST(ReferenceGemm, PassesRoundTheRunningSumOfHalfPartials) {
  const std::int64_t m = 5, n = 24, k = 96;
  const auto a = test_values(static_cast<std::size_t>(m * k), 33);
  const auto b = test_values(static_cast<std::size_t>(k * n), 34);
  const std::vector<std::int64_t> cuts{0, 16, 32, 48, 64, 80, 96};
  for (bool half : {false, true}) {
    KSplit split{cuts, half, {{0, 24, {5, 3, 0, 1, 4, 2}}}};
    std::vector<float> one_pass(static_cast<std::size_t>(m * n)), passes(one_pass.size());
    gemm(a, b, one_pass, m, n, k, false, false, split);
    split.pass_parts = 3;
    gemm(a, b, passes, m, n, k, false, false, split);
    std::vector<float> expected(passes.size());
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        float total = 0.0f;
        for (std::size_t o = 0; o < 6; ++o) {
          const int p = split.orders[0].parts[o];
          float sum = 0.0f;
          for (std::int64_t q = cuts[static_cast<std::size_t>(p)]; q < cuts[static_cast<std::size_t>(p) + 1]; ++q)
            sum = std::fma(a[static_cast<std::size_t>(i * k + q)], b[static_cast<std::size_t>(q * n + j)], sum);
          total = o == 0 ? (half ? round_to_half(sum) : sum) : total + (half ? round_to_half(sum) : sum);
          if (half && (o == 2 || o == 4)) total = round_to_half(total);
        }
        expected[static_cast<std::size_t>(i * n + j)] = total;
      }
    EXPECT_EQ(bits_of(passes), bits_of(expected)) << (half ? "FP16 partials" : "FP32 partials");
    if (half) {
      EXPECT_NE(bits_of(passes), bits_of(one_pass)) << "the roundings between passes change nothing";
    } else {
      EXPECT_EQ(bits_of(passes), bits_of(one_pass));
    }
  }
}

TEST(ReferenceGemm, BalancedSplitsAreTheKPartsOfGemm) {
  EXPECT_EQ(balanced_k_split(300, 3).cuts, (std::vector<std::int64_t>{0, 96, 192, 300}));
  const std::int64_t m = 3, n = 20, k = 300;
  const auto a = test_values(static_cast<std::size_t>(m * k), 41);
  const auto b = test_values(static_cast<std::size_t>(k * n), 42);
  std::vector<float> by_parts(static_cast<std::size_t>(m * n)), by_split(by_parts.size());
  gemm(a, b, by_parts, m, n, k, false, true, 5);
  gemm(a, b, by_split, m, n, k, false, true, balanced_k_split(k, 5));
  EXPECT_EQ(bits_of(by_parts), bits_of(by_split));
}

TEST(ReferenceGemm, InvalidKSplitsAreRejected) {
  const std::vector<float> a(8), b(8);
  std::vector<float> c(4);
  auto message = [&](const KSplit& split) {
    try {
      gemm(a, b, c, 2, 2, 4, false, false, split);
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_EQ(message(KSplit{{0, 3}, false, {}}), "gemm K split: the cuts must run from 0 to K = 4 in increasing order");
  EXPECT_EQ(message(KSplit{{0, 3, 2, 4}, false, {}}),
            "gemm K split: the cuts must run from 0 to K = 4 in increasing order");
  EXPECT_EQ(message(KSplit{{0, 2, 4}, false, {{0, 1, {0, 0}}}}),
            "gemm K split: the order of columns [0, 1) is not a permutation of its 2 parts");
  EXPECT_EQ(message(KSplit{{0, 2, 4}, false, {{0, 1, {1}}}}),
            "gemm K split: the order of columns [0, 1) names 1 of its 2 parts");
  EXPECT_EQ(message(KSplit{{0, 2, 4}, false, {{0, 2, {1, 0}}, {1, 2, {0, 1}}}}),
            "gemm K split: column range [1, 2) is empty, outside [0, 2) or overlaps another");
  EXPECT_EQ(message(KSplit{{0, 2, 4}, true, {}, 1}), "gemm K split: passes of 1 parts (0 for one pass, else at least 2)");
}

// The row kernels' arithmetic: statistics per part (sub-ranges merged),
// combined in slot order, divisions by counts as the kernels divide, and
// softmax by the reciprocal of its sum. Splitting and merging change the
// numbers only in their last bits.
TEST(ReferenceRows, SplitRowsFollowTheKernelsArithmetic) {
  const std::int64_t width = 37;
  const auto x = test_values(static_cast<std::size_t>(4 * width), 51);
  const auto gamma = test_values(static_cast<std::size_t>(width), 52);
  const auto beta = test_values(static_cast<std::size_t>(width), 53);
  std::vector<float> whole(x.size()), reciprocal(x.size());
  softmax(x, whole, width, RowSplit{});
  for (std::int64_t row = 0; row < 4; ++row) {
    const float* in = x.data() + row * width;
    float largest = -INFINITY, sum = 0.0f;
    for (std::int64_t i = 0; i < width; ++i) largest = std::fmax(largest, in[i]);
    for (std::int64_t i = 0; i < width; ++i) sum += std::exp(in[i] - largest);
    for (std::int64_t i = 0; i < width; ++i)
      reciprocal[static_cast<std::size_t>(row * width + i)] = std::exp(in[i] - largest) * (1.0f / sum);
  }
  EXPECT_EQ(bits_of(whole), bits_of(reciprocal));
  for (const RowSplit& split : {RowSplit{{0, 10, 37}, 1, false}, RowSplit{{0, 5, 20, 37}, 3, true}}) {
    std::vector<float> norm(x.size()), norm_whole(x.size()), soft(x.size());
    layernorm(x, gamma, beta, norm, width, 1e-5f, split);
    layernorm(x, gamma, beta, norm_whole, width, 1e-5f, RowSplit{});
    softmax(x, soft, width, split);
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_NEAR(norm[i], norm_whole[i], 1e-5f) << i;
      EXPECT_NEAR(soft[i], whole[i], 1e-6f) << i;
    }
  }
  std::vector<float> out(x.size());
  EXPECT_THROW(softmax(x, out, width, RowSplit{{0, 20, 20, 37}, 1, false}), Error);
  EXPECT_THROW(layernorm(x, gamma, beta, out, width, 1e-5f, RowSplit{{0, 36}, 1, false}), Error);
  EXPECT_THROW(softmax(x, out, width, RowSplit{{}, 0, false}), Error);
}


// One key block in one chunk is the scaled softmax with a reciprocal, then
// P V; several blocks merged by their statistics, or more chunks, change
// only the last bits; FP16 probabilities are rounded before P V.
TEST(ReferenceAttention, PlanOrderHeadsFollowTheKernels) {
  const std::int64_t s = 5, t = 23, e = 7;
  const float scale = 0.35f;
  const auto scores = test_values(static_cast<std::size_t>(s * t), 61);
  const auto v = test_values(static_cast<std::size_t>(t * e), 62);
  std::vector<float> one(static_cast<std::size_t>(s * e)), expected(one.size());
  attention_head(scores, v, one, s, t, e, scale, AttentionSplit{{0, t}, 1, false});
  std::vector<float> p(static_cast<std::size_t>(s * t));
  for (std::int64_t r = 0; r < s; ++r) {
    float largest = -INFINITY, sum = 0.0f;
    for (std::int64_t j = 0; j < t; ++j) largest = std::fmax(largest, scores[static_cast<std::size_t>(r * t + j)]);
    largest = scale * largest;
    for (std::int64_t j = 0; j < t; ++j) sum += std::exp(scale * scores[static_cast<std::size_t>(r * t + j)] - largest);
    for (std::int64_t j = 0; j < t; ++j)
      p[static_cast<std::size_t>(r * t + j)] =
          std::exp(scale * scores[static_cast<std::size_t>(r * t + j)] - largest) * (1.0f / sum);
  }
  gemm(p, v, expected, s, e, t);
  EXPECT_EQ(bits_of(one), bits_of(expected));
  for (const AttentionSplit& split : {AttentionSplit{{0, 16, 23}, 1, false}, AttentionSplit{{0, t}, 3, false},
                                      AttentionSplit{{0, 5, 16, 23}, 2, true}}) {
    std::vector<float> other(one.size());
    attention_head(scores, v, other, s, t, e, scale, split);
    for (std::size_t i = 0; i < one.size(); ++i) EXPECT_NEAR(other[i], one[i], split.half_probabilities ? 2e-3 : 1e-6);
  }
  EXPECT_THROW(attention_head(scores, v, one, s, t, e, scale, AttentionSplit{{0, 20}, 1, false}), Error);
  EXPECT_THROW(attention_head(scores, v, one, s, t, e, scale, AttentionSplit{{0, t}, 0, false}), Error);
}

}  // namespace
}  // namespace tilec::reference
