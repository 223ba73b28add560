// The attention kernels (kernels/attention.S) on one simulated tile.
//
// Two host computations: the reference's order (scores by sequential fused
// multiply-adds over d from +0, times scale; the largest; exponentials
// summed in key order; each divided by the sum; the output summed over the
// keys in one sequence) and the kernel's own order (the same probabilities,
// the output summed in four lanes over the item's key panels, then
// (lane 0 + lane 1) + (lane 2 + lane 3)). The kernel must equal its own
// order bit for bit, and the reference within the rounding of the two
// orders. Every worker's bundles must equal the cost model's count.
#include "compiler/cost_model.h"
#include "kernel_harness.h"
#include "numerics/fp16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace tilec::compiler {
namespace {

using testing::DataPlaces;
using testing::KernelHarness;
using testing::KernelResult;
using testing::KernelRun;

struct AttentionCase {
  ElementType input = ElementType::F16;
  ElementType output = ElementType::F16;
  std::int64_t items = 3;
  std::int64_t s = 20;  // rows per item
  std::int64_t d = 24;
  std::int64_t e = 12;
  int workers = 6;
  std::int64_t spare_panels = 0;  // panels after the last row
  float scale = 0.25f;
  // Each worker's {first row, rows}; empty: all rows split between `workers`.
  std::vector<std::pair<std::int64_t, std::int64_t>> worker_rows;
};

std::vector<std::pair<std::int64_t, std::int64_t>> worker_rows(const AttentionCase& c) {
  if (!c.worker_rows.empty()) return c.worker_rows;
  const std::int64_t rows = c.items * c.s;
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (int worker = 0; worker < c.workers; ++worker)
    out.emplace_back(rows * worker / c.workers, rows * (worker + 1) / c.workers - rows * worker / c.workers);
  return out;
}

std::string kernel_name(const AttentionCase& c) {
  return fmt::format("attention_{}_{}", element_type_name(c.input), element_type_name(c.output));
}

std::string describe(const AttentionCase& c) {
  return fmt::format("{} S={} items={} D={} E={} workers={}", kernel_name(c), c.s, c.items, c.d, c.e,
                     worker_rows(c).size());
}

KernelLibrary attention_kernels() {
  KernelLibrary library;
  for (ElementType input : {ElementType::F16, ElementType::F32})
    for (ElementType output : {ElementType::F16, ElementType::F32}) library.attention(AttentionVariant{input, output});
  return library;
}

const KernelHarness& harness() {
  static const KernelHarness instance{attention_kernels()};
  return instance;
}

// A [rows][columns] matrix stored in the panel format with `panels` panels.
struct PanelMatrix {
  std::int64_t columns = 0, panels = 0;
  std::vector<float> values;  // [16 panels][columns], the padding rows included

  float at(std::int64_t row, std::int64_t column) const {
    return values[static_cast<std::size_t>(row * columns + column)];
  }
  std::vector<std::uint8_t> stored(ElementType type) const {
    const std::size_t bytes = element_bytes(type);
    std::vector<std::uint8_t> out(values.size() * bytes);
    for (std::int64_t row = 0; row < 16 * panels; ++row)
      for (std::int64_t column = 0; column < columns; ++column) {
        const std::size_t at_byte = static_cast<std::size_t>((column * panels + row / 16) * 16 + row % 16) * bytes;
        const float value = at(row, column);
        if (type == ElementType::F16) {
          const std::uint16_t half = float_to_half(value);
          std::memcpy(&out[at_byte], &half, 2);
        } else {
          std::memcpy(&out[at_byte], &value, 4);
        }
      }
    return out;
  }
};

// Gaussian values rounded to `type` in rows [0, rows); the padding rows
// hold `padding`.
PanelMatrix random_matrix(std::mt19937& random, std::int64_t rows, std::int64_t columns, std::int64_t panels,
                          ElementType type, float padding) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  PanelMatrix m{columns, panels, std::vector<float>(static_cast<std::size_t>(16 * panels * columns), padding)};
  for (std::int64_t row = 0; row < rows; ++row)
    for (std::int64_t column = 0; column < columns; ++column) {
      float value = normal(random);
      if (type == ElementType::F16) value = round_to_half(value);
      m.values[static_cast<std::size_t>(row * columns + column)] = value;
    }
  return m;
}

struct Expected {
  std::vector<float> kernel_order;     // [rows][E], FP32 sums before the output rounding
  std::vector<float> reference_order;  // likewise
  std::vector<float> magnitude;        // sum over t of p[t] |v[t][e]|
};

Expected expected_outputs(const AttentionCase& c, const PanelMatrix& q, const PanelMatrix& k, const PanelMatrix& v) {
  const std::int64_t rows = c.items * c.s;
  Expected out;
  out.kernel_order.resize(static_cast<std::size_t>(rows * c.e));
  out.reference_order.resize(out.kernel_order.size());
  out.magnitude.resize(out.kernel_order.size());
  std::vector<float> p(static_cast<std::size_t>(c.s));
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t first_key = r / c.s * c.s;
    float largest = -std::numeric_limits<float>::infinity();
    for (std::int64_t t = 0; t < c.s; ++t) {
      float dot = 0.0f;
      for (std::int64_t i = 0; i < c.d; ++i) dot = std::fma(q.at(r, i), k.at(first_key + t, i), dot);
      p[static_cast<std::size_t>(t)] = dot * c.scale;
      largest = std::max(largest, p[static_cast<std::size_t>(t)]);
    }
    float sum = 0.0f;
    for (float& value : p) {
      value = std::exp(value - largest);
      sum += value;
    }
    for (float& value : p) value /= sum;
    const std::int64_t first_panel = first_key / 16, panels = (first_key % 16 + c.s - 1) / 16 + 1;
    for (std::int64_t column = 0; column < c.e; ++column) {
      const std::size_t at = static_cast<std::size_t>(r * c.e + column);
      float sequential = 0.0f, magnitude = 0.0f;
      for (std::int64_t t = 0; t < c.s; ++t) {
        const float value = v.at(first_key + t, column);
        sequential = std::fma(p[static_cast<std::size_t>(t)], value, sequential);
        magnitude += p[static_cast<std::size_t>(t)] * std::fabs(value);
      }
      // The kernel: every key of the item's panels, p = 0 outside the item.
      float lanes[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (std::int64_t i = 0; i < 16 * panels; ++i) {
        const std::int64_t t = 16 * first_panel + i - first_key;
        const float probability = t >= 0 && t < c.s ? p[static_cast<std::size_t>(t)] : 0.0f;
        lanes[i % 4] = std::fma(probability, v.at(16 * first_panel + i, column), lanes[i % 4]);
      }
      out.kernel_order[at] = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
      out.reference_order[at] = sequential;
      out.magnitude[at] = magnitude;
    }
  }
  return out;
}

struct AttentionOutcome {
  std::vector<float> actual;  // [rows][E]
  Expected expected;
  KernelResult result;
};

AttentionOutcome run_attention(const AttentionCase& c) {
  const std::int64_t rows = c.items * c.s, panels = (rows + 15) / 16 + c.spare_panels;
  std::mt19937 random(static_cast<std::uint32_t>(rows * 7919 + c.d * 31 + c.e));
  // Padding rows of q and k may hold anything (their scores are masked);
  // those of v must be finite.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  PanelMatrix q = random_matrix(random, rows, c.d, panels, c.input, nan);
  PanelMatrix k = random_matrix(random, rows, c.d, panels, c.input, nan);
  PanelMatrix v = random_matrix(random, rows, c.e, panels, c.input, 1000.0f);

  const std::uint32_t in_bytes = element_bytes(c.input), out_bytes = element_bytes(c.output);
  const auto out_size = static_cast<std::uint32_t>(16 * panels * c.e) * out_bytes;
  DataPlaces places;
  const std::uint32_t q_at = places.take(static_cast<std::uint32_t>(q.values.size()) * in_bytes);
  const std::uint32_t k_at = places.take(static_cast<std::uint32_t>(k.values.size()) * in_bytes);
  const std::uint32_t v_at = places.take(static_cast<std::uint32_t>(v.values.size()) * in_bytes);
  const std::uint32_t out_at = places.take(out_size);
  KernelRun run{kernel_name(c), {}, {{q_at, q.stored(c.input)}, {k_at, k.stored(c.input)}, {v_at, v.stored(c.input)}},
                {{out_at, out_size}}};
  std::uint32_t scale_bits;
  std::memcpy(&scale_bits, &c.scale, 4);
  for (auto [first_row, count] : worker_rows(c)) {
    const auto first = static_cast<std::uint32_t>(first_row), last = static_cast<std::uint32_t>(first_row + count);
    const std::uint32_t scratch = places.take(static_cast<std::uint32_t>(attention_scratch_bytes(c.s)));
    run.blocks.push_back({first, last - first, static_cast<std::uint32_t>(c.s), static_cast<std::uint32_t>(c.d),
                          static_cast<std::uint32_t>(c.e), static_cast<std::uint32_t>(panels), q_at, k_at, v_at,
                          out_at, scale_bits, scratch});
  }

  AttentionOutcome outcome;
  outcome.result = harness().run(run);
  outcome.expected = expected_outputs(c, q, k, v);
  const std::vector<std::uint8_t>& bytes = outcome.result.outputs[0];
  outcome.actual.resize(static_cast<std::size_t>(rows * c.e));
  for (std::int64_t row = 0; row < rows; ++row)
    for (std::int64_t column = 0; column < c.e; ++column) {
      const std::size_t at = static_cast<std::size_t>((column * panels + row / 16) * 16 + row % 16) * out_bytes;
      float value;
      if (c.output == ElementType::F16) {
        std::uint16_t half;
        std::memcpy(&half, &bytes[at], 2);
        value = half_to_float(half);
      } else {
        std::memcpy(&value, &bytes[at], 4);
      }
      outcome.actual[static_cast<std::size_t>(row * c.e + column)] = value;
    }
  return outcome;
}

float rounded(float value, ElementType type) { return type == ElementType::F16 ? round_to_half(value) : value; }

// Distance from |value| to the next FP16 value above.
float fp16_step(float value) {
  const std::uint16_t half = float_to_half(std::fabs(value));
  return half_to_float(static_cast<std::uint16_t>(half + 1)) - half_to_float(half);
}

// Bit for bit against the kernel's order; against the reference's order
// within the two orders' rounding: each sums at most S + 16 terms with one
// rounding per term, so they differ by at most (2 S + 32) 2^-24 x the sum
// of |p v| (plus an FP16 step when the output is FP16).
// Returns the largest difference between the two orders, in 2^-24 x the
// sum of |p v|.
double check(const AttentionCase& c, const AttentionOutcome& outcome) {
  int bad = 0;
  double worst = 0.0;  // the largest difference from the reference order, in 2^-24 x sum |p v|
  std::vector<bool> computed(outcome.actual.size(), false);
  for (auto [first, count] : worker_rows(c))
    std::fill_n(computed.begin() + first * c.e, count * c.e, true);
  for (std::size_t i = 0; i < outcome.actual.size(); ++i) {
    if (!computed[i]) continue;
    const float got = outcome.actual[i];
    const float own = rounded(outcome.expected.kernel_order[i], c.output);
    if (std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(own) && ++bad <= 3)
      ADD_FAILURE() << describe(c) << ": element " << i << " (row " << i / c.e << ", column " << i % c.e << ") is "
                    << got << ", the kernel's order gives " << own;
    const float reference = outcome.expected.reference_order[i];
    const double unit = std::ldexp(static_cast<double>(outcome.expected.magnitude[i]), -24);
    const double difference = std::fabs(static_cast<double>(outcome.expected.kernel_order[i]) - reference);
    if (unit > 0) worst = std::max(worst, difference / unit);
    double tolerance = static_cast<double>(2 * c.s + 32) * unit;
    if (c.output == ElementType::F16) tolerance += fp16_step(reference);
    if (std::fabs(static_cast<double>(got) - rounded(reference, c.output)) > tolerance && ++bad <= 3)
      ADD_FAILURE() << describe(c) << ": element " << i << " is " << got << ", the reference gives " << reference;
  }
  EXPECT_EQ(bad, 0) << describe(c);
  EXPECT_LT(worst, static_cast<double>(2 * c.s + 32)) << describe(c);
  return worst;
}

void expect_bundles(const AttentionCase& c, const AttentionOutcome& outcome) {
  const auto ranges = worker_rows(c);
  ASSERT_EQ(outcome.result.worker_cycles.size(), ranges.size());
  for (std::size_t worker = 0; worker < ranges.size(); ++worker)
    EXPECT_EQ(static_cast<std::int64_t>((outcome.result.worker_cycles[worker] + 4) / 6),
              attention_worker_bundles(c.input, c.output, ranges[worker].first, ranges[worker].second, c.s, c.d, c.e))
        << describe(c) << " worker " << worker;
}

class AttentionKernels : public ::testing::TestWithParam<std::tuple<ElementType, ElementType>> {};

TEST_P(AttentionKernels, MatchBothOrdersAndTheCostModel) {
  AttentionCase c;
  std::tie(c.input, c.output) = GetParam();
  struct Shape {
    std::int64_t items, s, d, e;
    int workers;
    std::int64_t spare_panels;
  };
  for (Shape shape : {Shape{3, 20, 24, 12, 6, 0}, Shape{2, 37, 8, 40, 5, 1}, Shape{2, 32, 16, 16, 4, 0},
                      Shape{5, 7, 3, 5, 3, 0}, Shape{1, 50, 1, 1, 1, 2}, Shape{4, 16, 33, 7, 2, 0},
                      Shape{1, 3, 5, 2, 6, 0}}) {
    c.items = shape.items;
    c.s = shape.s;
    c.d = shape.d;
    c.e = shape.e;
    c.workers = shape.workers;
    c.spare_panels = shape.spare_panels;
    AttentionOutcome outcome = run_attention(c);
    check(c, outcome);
    expect_bundles(c, outcome);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryType, AttentionKernels,
                         ::testing::Combine(::testing::Values(ElementType::F32, ElementType::F16),
                                            ::testing::Values(ElementType::F32, ElementType::F16)),
                         [](const auto& info) {
                           return fmt::format("{}_{}", element_type_name(std::get<0>(info.param)),
                                              element_type_name(std::get<1>(info.param)));
                         });

TEST(AttentionKernels, FindTheItemOfAFirstRowFarIntoTheBuffer) {
  // 1200 items of 13 rows; workers start inside items, on odd and even
  // rows, where first / 13 rounds up (15000) and down (15550).
  AttentionCase c;
  c.items = 1200;
  c.s = 13;
  c.d = 2;
  c.e = 3;
  c.worker_rows = {{15000, 7}, {15550, 30}, {13, 1}, {15599, 1}};
  AttentionOutcome outcome = run_attention(c);
  check(c, outcome);
  expect_bundles(c, outcome);
}

TEST(AttentionKernels, TileCyclesFollowTheCostModel) {
  for (ElementType input : {ElementType::F16, ElementType::F32}) {
    AttentionCase c;
    c.input = input;
    c.output = ElementType::F16;
    c.items = 2;
    c.s = 45;
    c.d = 64;
    c.e = 64;
    AttentionOutcome outcome = run_attention(c);
    const double worst = check(c, outcome);
    const double model = attention_tile_cycles(c.input, c.output, c.items * c.s, c.s, c.d, c.e);
    const auto cycles = static_cast<double>(outcome.result.stats.halt_cycle);
    std::cerr << describe(c) << ": " << outcome.result.stats.halt_cycle << " cycles, model " << model
              << "; the two orders differ by up to " << worst << " x 2^-24 x sum |p v|\n";
    EXPECT_NEAR(model / cycles, 1.0, 0.03) << describe(c);
  }
}

TEST(AttentionKernels, RejectsOtherTypes) {
  KernelLibrary library;
  EXPECT_THROW(library.attention(AttentionVariant{ElementType::F143, ElementType::F16}), Error);
}

}  // namespace
}  // namespace tilec::compiler
