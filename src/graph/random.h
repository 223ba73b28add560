// The data generator for built-in workloads: seeded Gaussian values that are
// bit-identical on every machine (only IEEE-exact arithmetic: + - * / sqrt,
// no libm), documented in docs/graph-format.md.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace tilec::graph {

// `count` samples of N(0, sigma^2) from the stream named `stream` (a tensor
// name) under `seed`; different streams are independent.
std::vector<float> gaussian(std::uint64_t seed, std::string_view stream, std::size_t count,
                            float sigma);

}  // namespace tilec::graph
