// Workload data: a SplitMix64 counter stream keyed by the seed and the FNV-1a
// hash of the stream name, turned into Gaussians by the Marsaglia polar
// method. Every step is integer arithmetic or an IEEE-754 double operation
// that is correctly rounded (+ - * / sqrt), so the numbers are the same on
// any conforming machine and compiler (the build forbids fused multiply-add
// contraction). docs/numerics.md states the algorithm in full.
#include "graph/random.h"

#include "support/error.h"

#include <bit>
#include <cmath>

namespace tilec::graph {

namespace {

constexpr std::uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;

// SplitMix64's output function.
std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// Word k of a stream is mix64(key + (k + 1) * gamma): SplitMix64 started
// from `key`.
class SplitMixStream {
 public:
  explicit SplitMixStream(std::uint64_t key) : state_(key) {}

  // Uniform in [-1, 1): the top 53 bits as a multiple of 2^-52, minus 1.
  double next_signed_unit() {
    state_ += kGoldenGamma;
    const std::uint64_t word = mix64(state_);
    return static_cast<double>(word >> 11) * 0x1p-52 - 1.0;
  }

 private:
  std::uint64_t state_;
};

}  // namespace

double portable_log(double x) {
  // x = m * 2^e with m in [sqrt(1/2), sqrt(2)).
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
  int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  double m = std::bit_cast<double>((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  if (m > 1.4142135623730951) {
    m *= 0.5;
    exponent += 1;
  }
  // ln m = 2 atanh(t) = 2 (t + t^3/3 + t^5/5 + ...), t = (m - 1) / (m + 1),
  // |t| <= 0.1716: terms to t^23 leave an error below 2^-60 of the result.
  const double t = (m - 1.0) / (m + 1.0);
  const double t2 = t * t;
  double series = 1.0 / 23;
  for (int k = 21; k >= 1; k -= 2) series = series * t2 + 1.0 / k;
  const double log_m = 2.0 * t * series;
  // ln 2 in two parts; the high part has few bits so exponent * high is exact.
  constexpr double kLn2High = 0x1.62e42fefa3800p-1;
  constexpr double kLn2Low = 0x1.ef35793c76730p-45;
  return exponent * kLn2High + (exponent * kLn2Low + log_m);
}

std::vector<float> gaussian(std::uint64_t seed, std::string_view stream, std::size_t count, float sigma) {
  SplitMixStream uniform(mix64(mix64(seed) ^ fnv1a64(stream)));
  std::vector<float> samples;
  host_allocation(std::uint64_t{count + 1} * sizeof(float), fmt::format("{} samples of '{}'", grouped(static_cast<std::int64_t>(count)), stream),
                  [&] { samples.reserve(count + 1); });
  const double scale = sigma;
  while (samples.size() < count) {
    // Marsaglia polar method: a point uniform in the unit disc (but not its
    // centre) gives two independent standard normals.
    double x, y, radius2;
    do {
      x = uniform.next_signed_unit();
      y = uniform.next_signed_unit();
      radius2 = x * x + y * y;
    } while (radius2 >= 1.0 || radius2 == 0.0);
    const double factor = std::sqrt(-2.0 * portable_log(radius2) / radius2);
    samples.push_back(static_cast<float>(x * factor * scale));
    samples.push_back(static_cast<float>(y * factor * scale));
  }
  samples.resize(count);
  return samples;
}

}  // namespace tilec::graph
