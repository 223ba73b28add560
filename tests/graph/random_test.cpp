// The workload data generator: fixed numbers, Gaussian statistics and
// independent streams.
#include "graph/random.h"
#include "graph/tensor.h"
#include "support/error.h"

#include "support/parallel.h"

#include <gtest/gtest.h>

#include <bit>
#include <span>
#include <cmath>
#include <cstdint>
#include <vector>

namespace tilec::graph {
namespace {

std::vector<std::uint32_t> bits_of(const std::vector<float>& values) {
  std::vector<std::uint32_t> bits;
  for (float value : values) bits.push_back(std::bit_cast<std::uint32_t>(value));
  return bits;
}

// These bits were also reproduced by a separate implementation of the
// algorithm in docs/numerics.md. A change here changes every workload's data.
TEST(Random, GoldenSamples) {
  EXPECT_EQ(bits_of(gaussian(0, "x", 8, 1.0f)),
            (std::vector<std::uint32_t>{0xbe556b01, 0x3f2053cf, 0xbe147d86, 0xbf2d37d1, 0xbfd8a916, 0x400e8373,
                                        0x3e2a4065, 0xbed1ffd2}));
  EXPECT_EQ(bits_of(gaussian(42, "W1", 8, 0.0625f)),
            (std::vector<std::uint32_t>{0xbd669a97, 0x3d598dd1, 0x3dabe6c0, 0xbd9e7aa1, 0xbd9bd0e0, 0x3d74e5b9,
                                        0x3c8a4d9d, 0x3ddfe106}));
  EXPECT_EQ(bits_of(gaussian(42, "x", 5, 0.25f)),
            (std::vector<std::uint32_t>{0x3f1c5f65, 0xbd80a7f8, 0x3e99e94e, 0xbc8efc65, 0xbf3899c9}));
  EXPECT_EQ(bits_of(gaussian(~0ull, "", 3, 1.0f)), (std::vector<std::uint32_t>{0xbfb2fe07, 0x3f6fe6a3, 0xbea9f849}));
}

// Samples far into long streams, and a hash of every one, as the algorithm
// drawn one pair after another gives them: drawing in parallel blocks (of
// 2^16 pairs) must not change a bit, whatever the thread count.
TEST(Random, LongStreamsAreTheSequentialMethodsSamples) {
  struct Case {
    std::uint64_t seed;
    const char* stream;
    std::size_t count;
    float sigma, mean;
    std::vector<std::pair<std::size_t, std::uint32_t>> samples;
    std::uint64_t hash;
  };
  const Case cases[] = {
      {0, "W1", 5'000'000, 0.0625f, 0.0f,
       {{0, 0x3de2dc74}, {999'999, 0xbc3446ad}, {1'048'575, 0xbddfa6f6}, {1'048'576, 0x3d9716ab},
        {2'500'001, 0x3bddce81}, {4'999'999, 0xbd4fd01e}},
       0x48055f1b991d0675},
      {7, "ln1_gamma", 3'000'001, 0.02f, 1.0f,
       {{0, 0x3f759e3d}, {1, 0x3f76896c}, {1'048'576, 0x3f80db57}, {3'000'000, 0x3f838ed3}},
       0x5317802b38153e13},
  };
  for (const int threads : {1, 2})
  for (const Case& c : cases) {
    set_thread_count(threads);
    const std::vector<float> values = gaussian(c.seed, c.stream, c.count, c.sigma, c.mean);
    set_thread_count(0);
    ASSERT_EQ(values.size(), c.count);
    for (const auto& [index, bits] : c.samples) EXPECT_EQ(std::bit_cast<std::uint32_t>(values[index]), bits) << index;
    std::uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a over the samples' bits
    for (float value : values) {
      hash ^= std::bit_cast<std::uint32_t>(value);
      hash *= 0x100000001b3ull;
    }
    EXPECT_EQ(hash, c.hash) << c.stream;
  }
}

TEST(Random, PrefixesDoNotDependOnTheCount) {
  const auto many = gaussian(7, "w", 1001, 0.5f);
  for (std::size_t count : {0u, 1u, 2u, 3u, 100u, 1000u}) {
    const auto few = gaussian(7, "w", count, 0.5f);
    ASSERT_EQ(few.size(), count);
    EXPECT_EQ(bits_of(few), bits_of(std::vector<float>(many.begin(), many.begin() + count)));
  }
}

TEST(Random, DrawingIntoABufferGivesTheSameSamplesAndTouchesNothingElse) {
  const std::vector<float> expected = gaussian(7, "w1", 10001, 0.5f, 1.0f);
  std::vector<float> buffer(10005, 42.0f);  // a reused buffer, longer than the tensor
  gaussian_into(7, "w1", std::span<float>(buffer).first(10001), 0.5f, 1.0f);
  EXPECT_EQ(bits_of(expected), bits_of(std::vector<float>(buffer.begin(), buffer.begin() + 10001)));
  for (std::size_t i = 10001; i < buffer.size(); ++i) EXPECT_EQ(buffer[i], 42.0f) << i;
}

TEST(Random, SigmaOnlyScales) {
  const auto unit = gaussian(3, "s", 1000, 1.0f);
  const auto quarter = gaussian(3, "s", 1000, 0.25f);
  for (std::size_t i = 0; i < unit.size(); ++i) EXPECT_EQ(quarter[i], unit[i] * 0.25f);
}

struct Moments {
  double mean = 0, deviation = 0, kurtosis = 0, within_one_sigma = 0;
};

Moments moments_of(const std::vector<float>& values) {
  Moments result;
  const double n = static_cast<double>(values.size());
  for (float value : values) result.mean += value;
  result.mean /= n;
  double second = 0, fourth = 0;
  for (float value : values) {
    const double d = value - result.mean;
    second += d * d;
    fourth += d * d * d * d;
  }
  second /= n;
  result.deviation = std::sqrt(second);
  result.kurtosis = fourth / n / (second * second);
  for (float value : values) result.within_one_sigma += std::fabs(value - result.mean) < result.deviation;
  result.within_one_sigma /= n;
  return result;
}

// Bounds are about five standard errors for a million samples.
TEST(Random, MillionSamplesLookGaussian) {
  const auto samples = gaussian(2024, "W2", 1'000'000, 0.0625f);
  const Moments m = moments_of(samples);
  EXPECT_NEAR(m.mean, 0.0, 5 * 0.0625 / 1000);
  EXPECT_NEAR(m.deviation, 0.0625, 5 * 0.0625 / std::sqrt(2e6));
  EXPECT_NEAR(m.kurtosis, 3.0, 5 * std::sqrt(24.0 / 1e6));
  EXPECT_NEAR(m.within_one_sigma, 0.682689, 5 * std::sqrt(0.6827 * 0.3173 / 1e6));
  // Tails: 4-sigma values occur at the expected rate (6.3e-5).
  int beyond_four = 0;
  for (float value : samples) beyond_four += std::fabs(value) > 4 * 0.0625f;
  EXPECT_GT(beyond_four, 25);
  EXPECT_LT(beyond_four, 110);
}

double correlation(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

TEST(Random, StreamsAndSeedsAreIndependent) {
  const std::size_t n = 1'000'000;
  const double bound = 5 / std::sqrt(static_cast<double>(n));
  const auto w1 = gaussian(1, "W1", n, 1.0f);
  EXPECT_LT(std::fabs(correlation(w1, gaussian(1, "W2", n, 1.0f))), bound);
  EXPECT_LT(std::fabs(correlation(w1, gaussian(2, "W1", n, 1.0f))), bound);
  EXPECT_LT(std::fabs(correlation(w1, gaussian(1, "W1 ", n, 1.0f))), bound);
  // Neighbours within a stream, including the two halves of a polar pair.
  const std::vector<float> head(w1.begin(), w1.end() - 1), tail(w1.begin() + 1, w1.end());
  EXPECT_LT(std::fabs(correlation(head, tail)), bound);
  // Independent is not uncorrelated only: squares of pair halves too.
  std::vector<float> even_squares, odd_squares;
  for (std::size_t i = 0; i + 1 < n; i += 2) {
    even_squares.push_back(w1[i] * w1[i] - 1);
    odd_squares.push_back(w1[i + 1] * w1[i + 1] - 1);
  }
  EXPECT_LT(std::fabs(correlation(even_squares, odd_squares)), 5 / std::sqrt(n / 2.0));
}

TEST(Random, PortableLogAgreesWithTheCLibrary) {
  EXPECT_EQ(portable_log(1.0), 0.0);
  std::uint64_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    // Positive normal doubles of every exponent, and the generator's (0, 1).
    const double x = i % 2 ? std::bit_cast<double>((state >> 2) % 0x7fe0000000000000ull + 0x0010000000000000ull)
                           : static_cast<double>(state >> 11) * 0x1p-53 + 0x1p-60;
    const double expected = std::log(x);
    ASSERT_LE(std::fabs(portable_log(x) - expected), 2 * std::fabs(expected) * 0x1p-52 + 0x1p-1074) << x;
  }
  EXPECT_NEAR(portable_log(std::nextafter(1.0, 0.0)), -0x1p-53, 0x1p-105);
  EXPECT_NEAR(portable_log(0x1p-1022), -1022 * std::log(2.0), 1e-12);
}

// More than any host can hold: a one-line failure saying what was asked for.
TEST(HostMemory, AnAllocationTheHostCannotMakeSaysWhatItWasFor) {
  auto failure = [](auto&& allocate) -> std::string {
    try {
      allocate();
    } catch (const Error& error) {
      EXPECT_EQ(error.exit_code(), 1);
      return error.what();
    }
    return "no error";
  };
  EXPECT_EQ(failure([] { gaussian(0, "x", std::size_t{1} << 60, 1.0f); }),
            "host memory: cannot allocate 4,611,686,018,427,387,904 bytes for 1,152,921,504,606,846,976 samples of 'x'");
  EXPECT_EQ(failure([] { Tensor::zeros({{1 << 30, 1 << 30}, {ElementType::F32, 0}}); }),
            "host memory: cannot allocate 4,611,686,018,427,387,904 bytes for a f32[1073741824,1073741824] tensor");
}

}  // namespace
}  // namespace tilec::graph
