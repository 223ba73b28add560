#include "numerics/reference_ops.h"

#include "support/error.h"
#include "support/parallel.h"

#include <algorithm>
#include <cmath>

namespace tilec::reference {

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
