// Workload data: a SplitMix64 counter stream keyed by the seed and the FNV-1a
// hash of the stream name, turned into Gaussians by the Marsaglia polar
// method. Every step is integer arithmetic or an IEEE-754 double operation
// that is correctly rounded (+ - * / sqrt), so the numbers are the same on
// any conforming machine and compiler (the build forbids fused multiply-add
// contraction). docs/numerics.md states the algorithm in full.
#include "graph/random.h"

#include "support/error.h"
#include "support/parallel.h"

#include <bit>
#include <cmath>

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>
#endif

namespace tilec::graph {

namespace {

constexpr std::uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;
// ln 2 in two parts; the high part has few bits so exponent * high is exact.
constexpr double kLn2High = 0x1.62e42fefa3800p-1;
constexpr double kLn2Low = 0x1.ef35793c76730p-45;

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

// Word k (k = 1, 2, ...) of a stream is mix64(key + k * gamma): SplitMix64
// started from `key`. Pair j of the polar method takes words 2j+1 and 2j+2,
// each as the double (word >> 11) * 2^-52 - 1, uniform in [-1, 1).
// Pairs are drawn in blocks; blocks are independent, so both passes over
// them run in parallel and still give the sequential method's samples.
constexpr std::uint64_t kPairsPerBlock = 1 << 16;

// Where one block's samples go: sample 2p and 2p + 1 for its accepted pair
// p (counted over the whole stream), those below `count` only.
struct BlockOutput {
  std::uint64_t first_pair;  // the number of accepted pairs before the block
  std::uint64_t count;
  double scale, offset;
  float* samples;

  void write(std::uint64_t pair, double unit_x, double unit_y) const {
    const double units[2] = {unit_x, unit_y};
    for (std::uint64_t i = 0; i < 2 && 2 * pair + i < count; ++i) {
      // Without a mean the samples are exactly those of N(0, sigma^2), -0 included.
      const double sample = units[i] * scale;
      samples[2 * pair + i] = static_cast<float>(offset == 0.0 ? sample : offset + sample);
    }
  }
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
  return exponent * kLn2High + (exponent * kLn2Low + log_m);
}

namespace {

#if defined(__AVX512F__) && defined(__AVX512DQ__)
// Eight pairs at a time, a lane each, every operation the scalar code's
// (integer arithmetic, and IEEE + - * / sqrt, which vectors round alike).
constexpr std::uint64_t kLanes = 8;

// Zero-masked forms: the plain intrinsics trip g++ 12's uninitialised-value warning.
__m512i shift_right(__m512i z, unsigned bits) { return _mm512_maskz_srli_epi64(0xff, z, bits); }
__m512i shift_left(__m512i z, unsigned bits) { return _mm512_maskz_slli_epi64(0xff, z, bits); }

__m512i mix64(__m512i z) {
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, shift_right(z, 30)), _mm512_set1_epi64(0xbf58476d1ce4e5b9ll));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, shift_right(z, 27)), _mm512_set1_epi64(0x94d049bb133111ebll));
  return _mm512_xor_si512(z, shift_right(z, 31));
}

__m512d signed_unit(__m512i word) {
  const __m512d high = _mm512_cvtepu64_pd(shift_right(word, 11));  // below 2^53: exact
  return _mm512_sub_pd(_mm512_mul_pd(high, _mm512_set1_pd(0x1p-52)), _mm512_set1_pd(1.0));
}

struct Points {
  __m512d x, y, radius2;
  __mmask8 accepted;
};

Points points(std::uint64_t key, std::uint64_t first) {
  const __m512i pair = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(first)), _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
  const __m512i word_x = _mm512_add_epi64(shift_left(pair, 1), _mm512_set1_epi64(1));
  const __m512i gamma = _mm512_set1_epi64(static_cast<long long>(kGoldenGamma));
  const __m512i base = _mm512_set1_epi64(static_cast<long long>(key));
  Points p;
  p.x = signed_unit(mix64(_mm512_add_epi64(base, _mm512_mullo_epi64(word_x, gamma))));
  p.y = signed_unit(mix64(_mm512_add_epi64(base, _mm512_mullo_epi64(_mm512_add_epi64(word_x, _mm512_set1_epi64(1)), gamma))));
  p.radius2 = _mm512_add_pd(_mm512_mul_pd(p.x, p.x), _mm512_mul_pd(p.y, p.y));
  p.accepted = _mm512_cmp_pd_mask(p.radius2, _mm512_set1_pd(1.0), _CMP_LT_OQ) &
               _mm512_cmp_pd_mask(p.radius2, _mm512_setzero_pd(), _CMP_NEQ_OQ);
  return p;
}

// portable_log, lane by lane (rejected lanes compute nonsense, unused).
__m512d portable_log(__m512d x) {
  const __m512i bits = _mm512_castpd_si512(x);
  __m512i exponent = _mm512_sub_epi64(_mm512_and_si512(shift_right(bits, 52), _mm512_set1_epi64(0x7ff)),
                                      _mm512_set1_epi64(1023));
  __m512d m = _mm512_castsi512_pd(_mm512_or_si512(_mm512_and_si512(bits, _mm512_set1_epi64(0x000fffffffffffffll)),
                                                  _mm512_set1_epi64(0x3ff0000000000000ll)));
  const __mmask8 high = _mm512_cmp_pd_mask(m, _mm512_set1_pd(1.4142135623730951), _CMP_GT_OQ);
  m = _mm512_mask_mul_pd(m, high, m, _mm512_set1_pd(0.5));
  exponent = _mm512_mask_add_epi64(exponent, high, exponent, _mm512_set1_epi64(1));
  const __m512d one = _mm512_set1_pd(1.0);
  const __m512d t = _mm512_div_pd(_mm512_sub_pd(m, one), _mm512_add_pd(m, one));
  const __m512d t2 = _mm512_mul_pd(t, t);
  __m512d series = _mm512_set1_pd(1.0 / 23);
  for (int k = 21; k >= 1; k -= 2) series = _mm512_add_pd(_mm512_mul_pd(series, t2), _mm512_set1_pd(1.0 / k));
  const __m512d log_m = _mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(2.0), t), series);
  const __m512d e = _mm512_cvtepi64_pd(exponent);
  return _mm512_add_pd(_mm512_mul_pd(e, _mm512_set1_pd(kLn2High)),
                       _mm512_add_pd(_mm512_mul_pd(e, _mm512_set1_pd(kLn2Low)), log_m));
}

std::uint64_t accepted_in_block(std::uint64_t key, std::uint64_t block) {
  std::uint64_t count = 0;
  for (std::uint64_t pair = block * kPairsPerBlock; pair < (block + 1) * kPairsPerBlock; pair += kLanes)
    count += static_cast<std::uint64_t>(std::popcount(static_cast<unsigned>(points(key, pair).accepted)));
  return count;
}

void block_samples(std::uint64_t key, std::uint64_t block, const BlockOutput& out) {
  std::uint64_t next = out.first_pair;
  for (std::uint64_t pair = block * kPairsPerBlock; pair < (block + 1) * kPairsPerBlock && 2 * next < out.count;
       pair += kLanes) {
    const Points p = points(key, pair);
    if (p.accepted == 0) continue;
    const __m512d factor =
        _mm512_maskz_sqrt_pd(0xff, _mm512_div_pd(_mm512_mul_pd(_mm512_set1_pd(-2.0), portable_log(p.radius2)), p.radius2));
    alignas(64) double x[kLanes], y[kLanes];
    _mm512_store_pd(x, _mm512_mul_pd(p.x, factor));
    _mm512_store_pd(y, _mm512_mul_pd(p.y, factor));
    for (std::uint64_t lane = 0; lane < kLanes; ++lane)
      if (p.accepted >> lane & 1u) out.write(next++, x[lane], y[lane]);
  }
}
#else
struct Point {
  double x, y, radius2;
};

double signed_unit(std::uint64_t word) { return static_cast<double>(word >> 11) * 0x1p-52 - 1.0; }

Point point(std::uint64_t key, std::uint64_t pair) {
  const double x = signed_unit(mix64(key + (2 * pair + 1) * kGoldenGamma));
  const double y = signed_unit(mix64(key + (2 * pair + 2) * kGoldenGamma));
  return {x, y, x * x + y * y};
}

// The polar method keeps points inside the unit disc but not its centre.
bool accepted(const Point& p) { return p.radius2 < 1.0 && p.radius2 != 0.0; }

std::uint64_t accepted_in_block(std::uint64_t key, std::uint64_t block) {
  std::uint64_t count = 0;
  for (std::uint64_t pair = block * kPairsPerBlock; pair < (block + 1) * kPairsPerBlock; ++pair)
    count += accepted(point(key, pair));
  return count;
}

void block_samples(std::uint64_t key, std::uint64_t block, const BlockOutput& out) {
  std::uint64_t next = out.first_pair;
  for (std::uint64_t pair = block * kPairsPerBlock; pair < (block + 1) * kPairsPerBlock && 2 * next < out.count;
       ++pair) {
    const Point p = point(key, pair);
    if (!accepted(p)) continue;
    const double factor = std::sqrt(-2.0 * portable_log(p.radius2) / p.radius2);
    out.write(next++, p.x * factor, p.y * factor);
  }
}
#endif

}  // namespace

std::vector<float> gaussian(std::uint64_t seed, std::string_view stream, std::size_t count, float sigma,
                            float mean) {
  std::vector<float> samples;
  host_allocation(std::uint64_t{count} * sizeof(float), fmt::format("{} samples of '{}'", grouped(static_cast<std::int64_t>(count)), stream),
                  [&] { samples.resize(count); });
  gaussian_into(seed, stream, samples, sigma, mean);
  return samples;
}

void gaussian_into(std::uint64_t seed, std::string_view stream, std::span<float> samples, float sigma, float mean) {
  const std::uint64_t key = mix64(mix64(seed) ^ fnv1a64(stream));
  const std::uint64_t count = samples.size();
  const std::uint64_t pairs = (count + 1) / 2;
  // Pass 1: the accepted pairs of each block, until there are enough (at
  // least pi/4 of the pairs are accepted, so 4/3 of what remains suffices
  // nearly always).
  std::vector<std::uint64_t> first_pair{0};  // of each block, and past the last
  while (first_pair.back() < pairs) {
    const std::size_t begin = first_pair.size() - 1;
    const std::size_t more = static_cast<std::size_t>((pairs - first_pair.back()) * 4 / 3 / kPairsPerBlock + 1);
    std::vector<std::uint64_t> counts(more);
    parallel_for(0, more, [&](std::size_t i) { counts[i] = accepted_in_block(key, begin + i); });
    for (std::uint64_t accepted_pairs : counts) first_pair.push_back(first_pair.back() + accepted_pairs);
  }
  // Pass 2: each block's samples, in parallel.
  parallel_for(0, first_pair.size() - 1, [&](std::size_t block) {
    block_samples(key, block, {first_pair[block], count, sigma, mean, samples.data()});
  });
}

}  // namespace tilec::graph
