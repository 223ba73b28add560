#include "numerics/reference_ops.h"

#include "support/error.h"
#include "numerics/row_tasks.h"
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

double gelu_tanh(double x) {
  const double sqrt_2_over_pi = 0.7978845608028654;
  const double inner = sqrt_2_over_pi * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(inner));
}

double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x * 0.7071067811865476)); }

namespace {

std::int64_t row_count(std::size_t size, std::int64_t width, const char* op) {
  TILEC_CHECK(width > 0 && static_cast<std::int64_t>(size) % width == 0,
              "{} over rows of {} given {} values", op, width, size);
  return static_cast<std::int64_t>(size) / width;
}

// One body for FP32 and FP64: the FP32 form is the reference's definition.
template <typename T>
void layernorm_rows(std::span<const T> x, std::span<const T> gamma, std::span<const T> beta, std::span<T> out,
                    std::int64_t width, T epsilon) {
  const std::int64_t rows = row_count(x.size(), width, "layernorm");
  TILEC_CHECK(out.size() == x.size() && static_cast<std::int64_t>(gamma.size()) == width &&
                  static_cast<std::int64_t>(beta.size()) == width,
              "layernorm of {} values given {} outputs, {} gamma and {} beta", x.size(), out.size(),
              gamma.size(), beta.size());
  for_each_row(rows, [&](std::int64_t row) {
    const T* in = x.data() + row * width;
    T* result = out.data() + row * width;
    // Two passes: the variance of deviations from the mean does not cancel.
    T sum = 0;
    for (std::int64_t i = 0; i < width; ++i) sum += in[i];
    const T mean = sum / static_cast<T>(width);
    T squares = 0;
    for (std::int64_t i = 0; i < width; ++i) squares += (in[i] - mean) * (in[i] - mean);
    const T variance = squares / static_cast<T>(width);
    const T inverse_deviation = T(1) / std::sqrt(variance + epsilon);
    for (std::int64_t i = 0; i < width; ++i)
      result[i] = (in[i] - mean) * inverse_deviation * gamma[i] + beta[i];
  });
}

template <typename T>
void softmax_rows(std::span<const T> x, std::span<T> out, std::int64_t width) {
  const std::int64_t rows = row_count(x.size(), width, "softmax");
  TILEC_CHECK(out.size() == x.size(), "softmax of {} values given {} outputs", x.size(), out.size());
  for_each_row(rows, [&](std::int64_t row) {
    const T* in = x.data() + row * width;
    T* result = out.data() + row * width;
    // Subtracting the largest value keeps every exponential in (0, 1].
    const T largest = *std::max_element(in, in + width);
    T sum = 0;
    for (std::int64_t i = 0; i < width; ++i) {
      result[i] = std::exp(in[i] - largest);
      sum += result[i];
    }
    for (std::int64_t i = 0; i < width; ++i) result[i] /= sum;
  });
}

}  // namespace

void layernorm(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta,
               std::span<float> out, std::int64_t width, float epsilon) {
  layernorm_rows(x, gamma, beta, out, width, epsilon);
}

void layernorm(std::span<const double> x, std::span<const double> gamma, std::span<const double> beta,
               std::span<double> out, std::int64_t width, double epsilon) {
  layernorm_rows(x, gamma, beta, out, width, epsilon);
}

void softmax(std::span<const float> x, std::span<float> out, std::int64_t width) { softmax_rows(x, out, width); }

void softmax(std::span<const double> x, std::span<double> out, std::int64_t width) { softmax_rows(x, out, width); }

}  // namespace tilec::reference
