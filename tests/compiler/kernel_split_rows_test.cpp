// The split-column row kernels (kernels/row_stats.S, row_apply.S) on
// simulated tiles: the statistics and the results bit for bit against the
// host model of their arithmetic (split_rows_support.h), every worker's
// bundles against the cost model, and a row op split over several tiles'
// column parts against the graph's host reference.
#include "graph/builder.h"
#include "graph/reference.h"
#include "split_rows_support.h"

#include <gtest/gtest.h>

#include <random>

namespace tilec::compiler {
namespace {

using namespace testing;

// A row-major [rows][width] matrix of values of `type` (normal, mean `mean`,
// standard deviation `deviation`).
std::vector<float> random_matrix(std::int64_t rows, std::int64_t width, ElementType type, std::uint32_t seed,
                                 float mean = 0.5f, float deviation = 2.0f) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(mean, deviation);
  std::vector<float> x(static_cast<std::size_t>(rows * width));
  for (float& value : x) value = type == ElementType::F16 ? round_to_half(normal(random)) : normal(random);
  return x;
}

std::vector<float> random_vector(std::int64_t size, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(size));
  for (float& value : v) value = unit(random);
  return v;
}

// How many elements differ in their bits; reports the first few.
int count_mismatches(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what) {
  EXPECT_EQ(actual.size(), expected.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < std::min(actual.size(), expected.size()); ++i)
    if (bits_of(actual[i]) != bits_of(expected[i]) && ++bad <= 3)
      ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected " << expected[i];
  return bad;
}

void expect_statistics_bundles(RowKernel kernel, ElementType input, const SplitRun& run, const std::string& what) {
  ASSERT_EQ(run.result.worker_cycles.size(), run.shares.size()) << what;
  for (std::size_t w = 0; w < run.shares.size(); ++w)
    EXPECT_EQ(span_bundles(run.result.worker_cycles[w]),
              row_stats_worker_bundles(kernel, input, run.shares[w].half_panels, run.shares[w].columns))
        << what << " worker " << w;
}

void expect_apply_bundles(RowKernel kernel, ElementType input, ElementType output, const SplitRun& run,
                          std::int64_t slots, const std::string& what) {
  ASSERT_EQ(run.result.worker_cycles.size(), run.shares.size()) << what;
  for (std::size_t w = 0; w < run.shares.size(); ++w)
    EXPECT_EQ(span_bundles(run.result.worker_cycles[w]),
              row_apply_worker_bundles(kernel, input, output, run.shares[w].half_panels, run.shares[w].columns, slots))
        << what << " worker " << w;
}

// The statistics of every column range of a block, from the host model.
std::vector<SlotStatistics> model_ranges(RowKernel kernel, const RowBlock& block, int ranges) {
  std::vector<SlotStatistics> slots;
  for (int range = 0; range < ranges; ++range) {
    RowBlock part = block;
    part.first_column = block.first_column + block.columns * range / ranges;
    part.columns = split_row_range_columns(block.columns, ranges, range);
    slots.push_back(model_statistics(kernel, part));
  }
  return slots;
}

std::vector<float> all_records(const std::vector<SlotStatistics>& slots) {
  std::vector<float> records;
  for (const SlotStatistics& slot : slots) {
    std::vector<float> one = records_of(slot);
    records.insert(records.end(), one.begin(), one.end());
  }
  return records;
}

using KernelAndTypes = std::tuple<RowKernel, ElementType, ElementType>;

std::string name_of(RowKernel kernel, ElementType input, ElementType output) {
  return fmt::format("{}_{}_{}", kernel == RowKernel::LayerNorm ? "LayerNorm" : "Softmax", element_type_name(input),
                     element_type_name(output));
}

class SplitRowStatistics : public ::testing::TestWithParam<std::tuple<RowKernel, ElementType>> {};

TEST_P(SplitRowStatistics, MatchTheModel) {
  const auto [kernel, input] = GetParam();
  for (auto [panels, width, ranges] : {std::tuple{1, 36, 3}, std::tuple{2, 37, 3}, std::tuple{3, 5, 1},
                                       std::tuple{4, 13, 6}, std::tuple{1, 1, 1}, std::tuple{2, 9, 2}}) {
    const std::vector<float> x = random_matrix(16 * panels, width, input, static_cast<std::uint32_t>(panels * 100 + width));
    const RowBlock block{&x, width, panels, 0, width};
    const std::string what = fmt::format("{} statistics, {} panels x {} columns in {} ranges",
                                         name_of(kernel, input, ElementType::F32), panels, width, ranges);
    const SplitRun run = run_statistics(kernel, input, block, ranges);
    count_mismatches(run.values, all_records(model_ranges(kernel, block, ranges)), what);
    expect_statistics_bundles(kernel, input, run, what);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryType, SplitRowStatistics,
                         ::testing::Combine(::testing::Values(RowKernel::LayerNorm, RowKernel::Softmax),
                                            ::testing::Values(ElementType::F32, ElementType::F16)),
                         [](const auto& info) {
                           return fmt::format("{}_{}", std::get<0>(info.param) == RowKernel::LayerNorm ? "LayerNorm" : "Softmax",
                                              element_type_name(std::get<1>(info.param)));
                         });

class SplitRowKernels : public ::testing::TestWithParam<KernelAndTypes> {};

TEST_P(SplitRowKernels, ApplyMatchesTheModel) {
  const auto [kernel, input, output] = GetParam();
  const float epsilon = 1e-6f;
  // A row of `width` columns whose statistics come in `parts` parts (the
  // host model's, as the tiles would send them); this tile holds columns
  // [first, first + columns) and writes them in `ranges` ranges.
  for (auto [panels, width, parts, first, columns, ranges] :
       {std::tuple{1, 72, 2, 36, 36, 3}, std::tuple{2, 100, 5, 3, 17, 3}, std::tuple{3, 140, 70, 0, 7, 1},
        std::tuple{1, 9, 1, 0, 9, 6}, std::tuple{4, 64, 3, 21, 1, 1}}) {
    const std::vector<float> x = random_matrix(16 * panels, width, input, static_cast<std::uint32_t>(width + parts));
    std::vector<SlotStatistics> slots;
    for (int part = 0; part < parts; ++part) {
      const std::int64_t begin = width * part / parts, end = width * (part + 1) / parts;
      slots.push_back(model_statistics(kernel, RowBlock{&x, width, panels, begin, end - begin}));
    }
    const RowBlock block{&x, width, panels, first, columns};
    const std::vector<float> gamma = random_vector(columns, 7), beta = random_vector(columns, 8);
    const std::string what = fmt::format("{} {} panels, {} slots, {} columns in {} ranges",
                                         name_of(kernel, input, output), panels, parts, columns, ranges);
    const SplitRun run = run_apply(kernel, input, output, block, ranges, slots, width, gamma, beta, epsilon);
    count_mismatches(run.values, model_apply(kernel, output, block, slots, width, gamma, beta, epsilon), what);
    expect_apply_bundles(kernel, input, output, run, parts, what);
  }
}

// The graph's host reference of a layernorm or softmax over [rows, width].
std::vector<float> graph_reference(RowKernel kernel, ElementType input, ElementType output, const std::vector<float>& x,
                                   std::int64_t rows, std::int64_t width, const std::vector<float>& gamma,
                                   const std::vector<float>& beta, float epsilon) {
  graph::GraphBuilder b;
  const graph::TensorType x_type{{rows, width}, {input, 0}}, vector_type{{width}, {ElementType::F32, 0}};
  graph::TensorMap tensors{{"x", graph::Tensor::from_floats(x_type, x)}};
  const graph::ValueId in = b.input("x", x_type);
  graph::ValueId result;
  if (kernel == RowKernel::LayerNorm) {
    tensors["gamma"] = graph::Tensor::from_floats(vector_type, gamma);
    tensors["beta"] = graph::Tensor::from_floats(vector_type, beta);
    result = b.layernorm("ln", in, b.parameter("gamma", vector_type), b.parameter("beta", vector_type), epsilon,
                         StorageType{output, 0});
  } else {
    result = b.softmax("sm", in, -1, StorageType{output, 0});
  }
  b.output("y", result);
  return graph::run_reference(b.graph(), tensors).outputs.at("y").to_floats();
}

// The bound on the difference from the reference, from the rounding of
// the two summation orders over a row of N columns (each sum of N terms is
// within (N - 1) 2^-24 of the sum of their magnitudes): with u = (2 N + 16)
// 2^-24, layernorm within u (|gamma| (A + |x - mean|) / sigma + |beta|), A
// the mean of the row's |x|; softmax within u |value|; FP16 results also
// one FP16 step of the larger of the two.
struct Bound {
  RowKernel kernel;
  ElementType output;
  std::int64_t width;
  float limit(float got, float want, float x, float mean, float mean_magnitude, float inverse, float gamma,
              float beta) const {
    const float u = std::ldexp(static_cast<float>(2 * width + 16), -24);
    float limit = kernel == RowKernel::LayerNorm
                      ? u * (std::fabs(gamma) * (mean_magnitude + std::fabs(x - mean)) * inverse + std::fabs(beta))
                      : u * std::fabs(want);
    if (output == ElementType::F16) {
      const std::uint16_t half = float_to_half(std::max(std::fabs(got), std::fabs(want)));
      limit += half_to_float(static_cast<std::uint16_t>(half + 1)) - half_to_float(half);
    }
    return limit;
  }
};

struct EndToEndCase {
  std::int64_t panels;
  std::int64_t width;
  std::vector<std::int64_t> part_columns;  // the tiles' column parts, in order
  float mean = 0.5f;
  // Each tile merges its own slots into one before the exchange, and the
  // slots it receives into one before the apply kernel.
  bool merge = false;
  // Column ranges of every tile's statistics and apply kernels (0: the
  // fastest for its part).
  int stats_ranges = 0;
  int apply_ranges = 0;
};

// The merge kernel on `slots`, checked against the host model.
SlotStatistics merged_on_tile(RowKernel kernel, std::int64_t panels, const std::vector<SlotStatistics>& slots,
                              std::int64_t total_columns, const std::string& what) {
  const MergeRun run = run_merge(kernel, panels, slots, total_columns);
  count_mismatches(run.records, records_of(model_merge(kernel, slots, total_columns)), what + " merge");
  EXPECT_EQ(run.result.worker_cycles.size(), run.shares.size()) << what;
  for (std::size_t w = 0; w < std::min(run.shares.size(), run.result.worker_cycles.size()); ++w)
    EXPECT_EQ(span_bundles(run.result.worker_cycles[w]),
              row_merge_worker_bundles(kernel, run.shares[w].quads, static_cast<std::int64_t>(slots.size())))
        << what << " merge worker " << w;
  return slot_of_records(run.records, 0, 16 * panels, total_columns);
}

// A row op over [16 P, width] split over tiles' column parts: each tile runs
// the statistics kernel on its part (its fastest ranges), the host copies
// every tile's slots into one buffer in part order (the exchange), each
// tile runs the apply kernel on its part.
void run_end_to_end(RowKernel kernel, ElementType input, ElementType output, const EndToEndCase& c) {
  const float epsilon = 1e-5f;
  const std::int64_t rows = 16 * c.panels;
  const std::vector<float> x =
      random_matrix(rows, c.width, input, static_cast<std::uint32_t>(c.width * 7 + c.panels), c.mean, 2.0f);
  const std::vector<float> gamma = random_vector(c.width, 3), beta = random_vector(c.width, 4);
  const std::string what = fmt::format("{} {} panels x {} columns in {} parts{}", name_of(kernel, input, output),
                                       c.panels, c.width, c.part_columns.size(), c.merge ? ", merged" : "");

  std::vector<SlotStatistics> slots;
  std::vector<RowBlock> blocks;
  for (std::int64_t begin = 0; std::int64_t columns : c.part_columns) {
    const RowBlock block{&x, c.width, c.panels, begin, columns};
    const int ranges = c.stats_ranges ? c.stats_ranges : fastest_row_stats_ranges(kernel, input, c.panels, columns);
    const SplitRun run = run_statistics(kernel, input, block, ranges);
    count_mismatches(run.values, all_records(model_ranges(kernel, block, ranges)), what + " statistics");
    expect_statistics_bundles(kernel, input, run, what);
    std::vector<SlotStatistics> own;
    for (int range = 0; range < ranges; ++range)
      own.push_back(slot_of_records(run.values, static_cast<std::size_t>(range * 32 * c.panels), rows,
                                    split_row_range_columns(columns, ranges, range)));
    if (c.merge) own = {merged_on_tile(kernel, c.panels, own, columns, what)};
    slots.insert(slots.end(), own.begin(), own.end());
    blocks.push_back(block);
    begin += columns;
  }
  ASSERT_EQ(blocks.back().first_column + blocks.back().columns, c.width) << what;

  const std::vector<float> reference =
      graph_reference(kernel, input, output, x, rows, c.width, gamma, beta, epsilon);
  const Bound bound{kernel, output, c.width};
  std::vector<float> mean_magnitude(static_cast<std::size_t>(rows), 0.0f);
  for (std::int64_t row = 0; row < rows; ++row) {
    double sum = 0;
    for (std::int64_t column = 0; column < c.width; ++column)
      sum += std::fabs(x[static_cast<std::size_t>(row * c.width + column)]);
    mean_magnitude[static_cast<std::size_t>(row)] = static_cast<float>(sum / static_cast<double>(c.width));
  }
  float worst = 0;  // the largest difference over its bound
  if (c.merge) slots = {merged_on_tile(kernel, c.panels, slots, c.width, what)};
  for (const RowBlock& block : blocks) {
    const auto first = static_cast<std::size_t>(block.first_column);
    const std::vector<float> part_gamma(gamma.begin() + static_cast<std::ptrdiff_t>(first),
                                        gamma.begin() + static_cast<std::ptrdiff_t>(first + static_cast<std::size_t>(block.columns)));
    const std::vector<float> part_beta(beta.begin() + static_cast<std::ptrdiff_t>(first),
                                       beta.begin() + static_cast<std::ptrdiff_t>(first + static_cast<std::size_t>(block.columns)));
    const auto slot_count = static_cast<std::int64_t>(slots.size());
    const int ranges =
        c.apply_ranges ? c.apply_ranges : fastest_row_apply_ranges(kernel, input, output, c.panels, block.columns, slot_count);
    const SplitRun run =
        run_apply(kernel, input, output, block, ranges, slots, c.width, part_gamma, part_beta, epsilon);
    count_mismatches(run.values, model_apply(kernel, output, block, slots, c.width, part_gamma, part_beta, epsilon),
                     what + " output");
    expect_apply_bundles(kernel, input, output, run, slot_count, what);
    for (std::int64_t row = 0; row < rows; ++row) {
      const CombinedRow combined = model_combine(kernel, slots, static_cast<std::size_t>(row), c.width, epsilon);
      for (std::int64_t column = 0; column < block.columns; ++column) {
        const std::size_t col = first + static_cast<std::size_t>(column);
        const float want = reference[static_cast<std::size_t>(row * c.width) + col];
        const float got = run.values[static_cast<std::size_t>(row * block.columns + column)];
        const float limit = bound.limit(got, want, block.at(row, column), combined.centre,
                                        mean_magnitude[static_cast<std::size_t>(row)], combined.inverse, gamma[col],
                                        beta[col]);
        worst = std::max(worst, std::fabs(got - want) / limit);
      }
    }
  }
  std::cerr << what << ": largest difference from the reference " << worst << " of the bound\n";
  EXPECT_LE(worst, 1.0f) << what;
}

TEST_P(SplitRowKernels, SplitOverTilesMatchesTheReference) {
  const auto [kernel, input, output] = GetParam();
  for (const EndToEndCase& c : {EndToEndCase{1, 144, {36, 36, 36, 36}}, EndToEndCase{2, 100, {40, 60}},
                                EndToEndCase{3, 77, {30, 1, 46}}, EndToEndCase{1, 1152, {288, 288, 288, 288}}})
    run_end_to_end(kernel, input, output, c);
}

TEST_P(SplitRowKernels, SplitOverTilesWithMergesMatchesTheReference) {
  const auto [kernel, input, output] = GetParam();
  for (EndToEndCase c : {EndToEndCase{1, 144, {36, 36, 36, 36}}, EndToEndCase{3, 77, {30, 1, 46}}}) {
    c.merge = true;
    run_end_to_end(kernel, input, output, c);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryType, SplitRowKernels,
                         ::testing::Combine(::testing::Values(RowKernel::LayerNorm, RowKernel::Softmax),
                                            ::testing::Values(ElementType::F32, ElementType::F16),
                                            ::testing::Values(ElementType::F32, ElementType::F16)),
                         [](const auto& info) {
                           return name_of(std::get<0>(info.param), std::get<1>(info.param), std::get<2>(info.param));
                         });

// Random blocks, parts, ranges, types and merges.
TEST(SplitRowKernels, RandomShapesMatchTheModel) {
  std::mt19937 random(2024);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(random); };
  const ElementType types[] = {ElementType::F16, ElementType::F32};
  for (int trial = 0; trial < 16; ++trial) {
    const RowKernel kernel = pick(0, 1) ? RowKernel::LayerNorm : RowKernel::Softmax;
    const ElementType input = types[pick(0, 1)], output = types[pick(0, 1)];
    EndToEndCase c{pick(1, 4), 0, {}};
    for (int part = pick(1, 5); part > 0; --part) c.part_columns.push_back(pick(6, 90));
    for (std::int64_t columns : c.part_columns) c.width += columns;
    c.merge = pick(0, 1) == 1;
    c.stats_ranges = pick(1, 6);
    c.apply_ranges = pick(1, 6);
    c.mean = static_cast<float>(pick(-20, 20));
    run_end_to_end(kernel, input, output, c);
  }
}

class SplitRowMerge : public ::testing::TestWithParam<RowKernel> {};

TEST_P(SplitRowMerge, MatchesTheModel) {
  const RowKernel kernel = GetParam();
  for (auto [panels, width, parts] : {std::tuple{1, 72, 3}, std::tuple{2, 100, 70}, std::tuple{3, 9, 1}}) {
    const std::vector<float> x = random_matrix(16 * panels, width, ElementType::F32, static_cast<std::uint32_t>(width + parts));
    std::vector<SlotStatistics> slots;
    for (int part = 0; part < parts; ++part) {
      const std::int64_t begin = width * part / parts, end = width * (part + 1) / parts;
      slots.push_back(model_statistics(kernel, RowBlock{&x, width, panels, begin, end - begin}));
    }
    merged_on_tile(kernel, panels, slots, width,
                   fmt::format("{} {} panels, {} slots", kernel == RowKernel::LayerNorm ? "layernorm" : "softmax",
                               panels, parts));
  }
}

INSTANTIATE_TEST_SUITE_P(BothKernels, SplitRowMerge, ::testing::Values(RowKernel::LayerNorm, RowKernel::Softmax),
                         [](const auto& info) { return info.param == RowKernel::LayerNorm ? "LayerNorm" : "Softmax"; });

TEST(SplitRowKernels, LayerNormOfLargeValuesKeepsItsPrecision) {
  // Rows far from zero: neither the parts' variances nor their combination
  // cancel.
  run_end_to_end(RowKernel::LayerNorm, ElementType::F32, ElementType::F32, EndToEndCase{1, 300, {100, 100, 100}, 3000.0f});
}

TEST(SplitRowKernels, SplitsShareTheBlockBetweenSixWorkers) {
  // 2 panels (4 half panels) in 3 ranges: 2 groups of 2 half panels.
  const std::vector<RowWorkerShare> shares = split_row_block(2, 10, 3);
  ASSERT_EQ(shares.size(), 6u);
  EXPECT_EQ(shares[4].first_half_panel, 2);
  EXPECT_EQ(shares[4].half_panels, 2);
  EXPECT_EQ(shares[4].first_column, 3);
  EXPECT_EQ(shares[4].columns, 3);
  EXPECT_EQ(shares[4].range, 1);
  EXPECT_EQ(split_row_range_columns(10, 3, 2), 4);
  // 1 panel in 1 range: two workers, half a panel each.
  EXPECT_EQ(split_row_block(1, 10, 1).size(), 2u);
  // The merge kernels: 1 panel in quads keeps four workers busy.
  const std::vector<RowQuadShare> quads = split_row_quads(1);
  ASSERT_EQ(quads.size(), 4u);
  EXPECT_EQ(quads[3].first_quad, 3);
  EXPECT_EQ(split_row_quads(2).back().quads, 2);
  EXPECT_THROW(split_row_block(1, 2, 3), Error);
  EXPECT_THROW(split_row_block(1, 10, 7), Error);
  EXPECT_THROW(split_row_block(0, 10, 1), Error);
}

}  // namespace
}  // namespace tilec::compiler
