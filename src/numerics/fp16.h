// IEEE binary16 conversions. float -> half rounds to nearest, ties to even;
// magnitudes that round beyond 65,504 become infinities; NaNs stay NaN
// (quiet, sign kept). half -> float is exact.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace tilec {

std::uint16_t float_to_half(float value);

namespace detail {
// Built at compile time, so it is usable from any static initialiser.
extern const std::array<float, 65536> half_to_float_table;
}

inline float half_to_float(std::uint16_t bits) { return detail::half_to_float_table[bits]; }

// The value rounded to FP16 and back: what storing a result as FP16 does to it.
inline float round_to_half(float value) { return half_to_float(float_to_half(value)); }

// The same conversions over arrays, bit for bit those above (vectorised
// where the host can). `halves` has room for values.size() elements.
void floats_to_halves(std::span<const float> values, std::uint16_t* halves);
void halves_to_floats(const std::uint16_t* halves, std::span<float> values);
void round_to_half(std::span<float> values);

}  // namespace tilec
