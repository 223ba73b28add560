// The data generator for built-in workloads: seeded Gaussian values that are
// bit-identical on every machine (only IEEE-exact arithmetic: + - * / sqrt,
// no libm), documented in docs/numerics.md ("Workload data generator").
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace tilec::graph {

// `count` samples of N(mean, sigma^2) from the stream named `stream` (a
// tensor name) under `seed`; different streams are independent. The first n
// samples do not depend on `count`, and a mean of 0 adds nothing.
std::vector<float> gaussian(std::uint64_t seed, std::string_view stream, std::size_t count,
                            float sigma, float mean = 0.0f);
// The same into `samples` (count = its size), for a caller reusing memory.
void gaussian_into(std::uint64_t seed, std::string_view stream, std::span<float> samples, float sigma,
                   float mean = 0.0f);

// The natural logarithm the generator uses, for positive normal doubles:
// built from + - * / only, so it gives the same bits everywhere.
double portable_log(double x);

}  // namespace tilec::graph
