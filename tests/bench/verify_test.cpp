// The tolerance rule, the roofline and the bytes bindings occupy.
#include "bench/device_figures.h"
#include "bench/verify.h"
#include "graph/workloads.h"
#include "support/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace tilec::bench {
namespace {

using ::testing::HasSubstr;

graph::Tensor f32_tensor(graph::Shape shape, std::vector<float> values) {
  return graph::Tensor::from_floats(graph::TensorType{std::move(shape), StorageType{ElementType::F32, 0}}, values);
}

TEST(Verify, ElementsWithinTheAbsoluteAndRelativeToleranceVote) {
  const graph::TensorMap reference{{"y", f32_tensor({2, 2}, {0.0f, 1.0f, -2.0f, 10.0f})}};
  // Allowed: 0.03, 0.08, 0.13, 0.53.
  const Comparison inside = compare_outputs({{"y", f32_tensor({2, 2}, {0.029f, 1.079f, -2.129f, 10.52f})}}, reference);
  EXPECT_TRUE(inside.passed());
  EXPECT_EQ(inside.elements, 4);
  EXPECT_NEAR(*inside.maximum_absolute_error, 0.52, 1e-5);

  const Comparison outside = compare_outputs({{"y", f32_tensor({2, 2}, {0.031f, 1.0f, -2.0f, 9.4f})}}, reference);
  EXPECT_FALSE(outside.passed());
  EXPECT_EQ(outside.out_of_tolerance, 2);
  EXPECT_NEAR(*outside.maximum_absolute_error, 0.6, 1e-5);
  // The element furthest beyond its tolerance: y[1,1], 0.07 over.
  EXPECT_EQ(outside.worst, "y[1,1]: device 9.4 reference 10");
}

TEST(Verify, ANaNAgainstANumberIsOutOfTolerance) {
  const graph::TensorMap reference{{"y", f32_tensor({3}, {1.0f, 2.0f, NAN})}};
  const Comparison comparison = compare_outputs({{"y", f32_tensor({3}, {NAN, 2.0f, 3.0f})}}, reference);
  EXPECT_EQ(comparison.out_of_tolerance, 2);
  EXPECT_EQ(comparison.nan_mismatches, 2);
  EXPECT_EQ(comparison.infinity_mismatches, 0);
  EXPECT_FALSE(comparison.maximum_absolute_error.has_value());
  EXPECT_THAT(comparison.worst, HasSubstr("y[0]: device nan"));
}

// Where the reference is NaN a NaN agrees, and the same infinity where it is
// infinite; an infinity against anything else is out, however wide the
// tolerance of an infinite reference would be.
TEST(Verify, NaNAgreesWithNaNAndAnInfinityWithItself) {
  const graph::TensorMap reference{{"y", f32_tensor({4}, {NAN, INFINITY, -INFINITY, 5.0f})}};
  const Comparison same = compare_outputs({{"y", f32_tensor({4}, {NAN, INFINITY, -INFINITY, 5.01f})}}, reference);
  EXPECT_TRUE(same.passed());
  EXPECT_NEAR(*same.maximum_absolute_error, 0.01, 1e-6);
  const Comparison other = compare_outputs({{"y", f32_tensor({4}, {NAN, 1e30f, INFINITY, INFINITY})}}, reference);
  EXPECT_EQ(other.out_of_tolerance, 3);
  EXPECT_EQ(other.infinity_mismatches, 3);
  EXPECT_EQ(other.nan_mismatches, 0);
  EXPECT_FALSE(other.maximum_absolute_error.has_value());
  EXPECT_EQ(other.worst, "y[1]: device 1e+30 reference inf");
}

TEST(Verify, TheRuleAndTheRelativeErrorFollowTheTolerances) {
  const graph::TensorMap reference{{"y", f32_tensor({3}, {0.01f, 1.0f, -4.0f})}};
  const graph::TensorMap device{{"y", f32_tensor({3}, {0.02f, 1.04f, -4.0f})}};
  const Comparison workload = compare_outputs(device, reference);
  EXPECT_TRUE(workload.passed());
  // Relative errors where |reference| >= 0.03: y[1] (0.04), not y[0] (1.0).
  EXPECT_NEAR(*workload.maximum_relative_error, 0.04, 1e-6);
  const Comparison strict = compare_outputs(device, reference, ToleranceRule{0.001, 0.01});
  EXPECT_EQ(strict.out_of_tolerance, 2);
  EXPECT_EQ(strict.worst, "y[1]: device 1.04 reference 1");
  const Comparison relative_only = compare_outputs(device, reference, ToleranceRule{0, 0.05});
  EXPECT_EQ(relative_only.out_of_tolerance, 1);  // y[0], twice its reference
  EXPECT_NEAR(*relative_only.maximum_relative_error, 1.0, 1e-6);
}

TEST(Verify, ErrorAgainstTheExactReference) {
  const graph::TensorMap values{{"y", f32_tensor({4}, {0.5f, -2.0f, 0.006f, NAN})}};
  const graph::ExactOutputs exact{{"y", {0.25, -2.5, 0.002, 1.0}}};
  const ExactError error = exact_error(values, exact, 0.03);
  EXPECT_DOUBLE_EQ(error.absolute, 0.5);  // y[1]; the NaN is left out
  EXPECT_DOUBLE_EQ(error.relative, 1.0);  // y[0]; y[2] is below the floor
  EXPECT_NEAR(exact_error(values, exact, 0).relative, 2.0, 1e-6);  // y[2] counts without a floor
}

TEST(Verify, MissingOrMistypedOutputsAreBadInput) {
  const graph::TensorMap reference{{"y", f32_tensor({2}, {1.0f, 2.0f})}};
  try {
    compare_outputs({}, reference);
    ADD_FAILURE();
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "output 'y': the device has no such output");
  }
  try {
    compare_outputs({{"y", f32_tensor({1, 2}, {1.0f, 2.0f})}}, reference);
    ADD_FAILURE();
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "output 'y': the device's is f32[1,2] but the reference's is f32[2]");
  }
}

TEST(DeviceFigures, RooflineOfTheSiglipMlpIs38368CyclesPerBatchItemAndBlock) {
  graph::MlpOptions options;
  options.fp8_scale = 0;  // no data to look at
  options.batch = 2;
  options.blocks = 3;
  const graph::Graph graph = graph::build_workload("siglip-mlp", options);
  // 2 x 729 x 1152 x 4304 MACs / (128 x 1472) = 38,367.9 per batch item and block.
  const double per_item = 7229067264.0 / (128 * 1472);
  EXPECT_EQ(std::lround(per_item), 38368);
  EXPECT_NEAR(roofline_cycles(graph, ipu21()), per_item * 2 * 3, 1e-6);
  EXPECT_EQ(dominant_precision(graph), AmpPrecision::Fp8);
  // Four times fewer tiles, four times the bound; FP16 takes twice the FP8 cycles.
  EXPECT_NEAR(roofline_cycles(graph, ipu21_cut(368)), 4 * per_item * 2 * 3, 1e-6);
  options.precision = graph::Precision::Fp16;
  options.fp8_scale.reset();
  const graph::Graph fp16 = graph::build_workload("siglip-mlp", options);
  EXPECT_NEAR(roofline_cycles(fp16, ipu21()), 2 * per_item * 2 * 3, 1e-6);
  EXPECT_EQ(dominant_precision(fp16), AmpPrecision::Fp16);
}

TEST(DeviceFigures, BindingBytesCountEveryReplicatedCopy) {
  package::Package package;
  const graph::TensorType w{{4, 8}, StorageType{ElementType::F16, 0}};
  package::Binding weights{"W", package::BindingRole::Parameter, w, {}};
  // The whole tensor on two tiles, plus its first row on a third.
  weights.pieces.push_back({0, 0x80000, {0, 0}, {4, 8}, {8, 1}});
  weights.pieces.push_back({1, 0x80000, {0, 0}, {4, 8}, {8, 1}});
  weights.pieces.push_back({2, 0x80000, {0, 0}, {1, 8}, {8, 1}});
  package::Binding input{"x", package::BindingRole::Input, graph::TensorType{{16}, StorageType{ElementType::F143, -3}}, {}};
  input.pieces.push_back({0, 0x90000, {0}, {16}, {1}});
  package.bindings = {weights, input};
  EXPECT_EQ(binding_bytes(package, package::BindingRole::Parameter), 2 * 64 + 16);
  EXPECT_EQ(binding_bytes(package, package::BindingRole::Input), 16);
  EXPECT_EQ(binding_bytes(package, package::BindingRole::Output), 0);

  package.tiles.resize(3);
  package.tiles[1].peak_bytes = 5000;
  package.tiles[2].peak_bytes = 300;
  EXPECT_EQ(peak_tile_bytes(package), 5000u);
}

}  // namespace
}  // namespace tilec::bench
