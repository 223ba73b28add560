// One case start to finish on a 16-tile chip: passing, rejected by the
// planner, out of tolerance, faulting, and stopped by bad input.
#include "bench/device_figures.h"
#include "bench/run_case.h"
#include "bench/workload_data.h"
#include "compiler/compile.h"
#include "profile/profile.h"
#include "profile/summary.h"
#include "support/duration.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace tilec::bench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

graph::MlpOptions small_mlp() {
  graph::MlpOptions options;
  options.tokens = 40;
  options.width = 32;
  options.hidden = 64;
  return options;
}

struct SmallCase {
  WorkloadData data{"mlp", small_mlp()};
  CaseRequest request;
  std::vector<std::string> phases;

  explicit SmallCase(std::uint32_t budget_kib = 0) {
    request.identity = workload_case("mlp", small_mlp(), budget_kib);
    request.identity.target = "ipu21:16";
    request.graph = &data.graph();
    request.data = &data.data();
    request.reference = [this]() -> const ReferenceOutputs& { return data.reference(); };
    request.compile.machine = ipu21_cut(16);
    request.compile.budget_bytes = budget_kib * 1024;
    request.on_stage = [this](std::string_view stage, double elapsed) {
      EXPECT_GE(elapsed, 0.0);
      const std::string phase(case_phase(stage));
      if (phases.empty() || phases.back() != phase) phases.push_back(phase);
    };
  }
};

TEST(RunCase, PassingCaseReportsEveryFigure) {
  SmallCase small;
  const CaseOutcome outcome = run_case(small.request);
  const CaseReport& report = outcome.report;
  ASSERT_EQ(report.status, kPass) << ::testing::PrintToString(report.diagnostic);
  EXPECT_EQ(report.name, "fp8-b1-n1-default");
  EXPECT_EQ(report.returncode, 0);
  EXPECT_FALSE(outcome.error.has_value());
  EXPECT_TRUE(report.diagnostic.empty());
  ASSERT_EQ(report.stages.size(), compiler::kStages.size());
  for (std::size_t i = 0; i < report.stages.size(); ++i) EXPECT_EQ(report.stages[i].first, compiler::kStages[i]);
  ASSERT_TRUE(report.cycles && report.estimated_cycles && report.efficiency && report.peak_tile_bytes);
  EXPECT_GT(*report.cycles, 0u);
  EXPECT_NEAR(*report.efficiency, roofline_cycles(small.data.graph(), ipu21_cut(16)) / *report.cycles, 1e-12);
  ASSERT_TRUE(report.device_microseconds);
  EXPECT_DOUBLE_EQ(*report.device_microseconds, static_cast<double>(*report.cycles) / (ipu21().clock_ghz * 1e3));
  EXPECT_EQ(report.maximum_absolute_error.has_value(), true);
  EXPECT_LE(*report.maximum_absolute_error, 0.03);
  EXPECT_EQ(report.out_of_tolerance, 0);
  EXPECT_EQ(report.bit_exact, true);
  EXPECT_EQ(report.differing_elements, 0);
  // x (40 x 32 FP8) is stored once; W1 and W2 at least once each.
  EXPECT_EQ(report.input_bytes, 40 * 32);
  EXPECT_GE(*report.weight_bytes, 2 * 32 * 64);
  EXPECT_GT(*report.package_bytes, 0u);
  EXPECT_FALSE(report.plan.empty());
  EXPECT_THAT(small.phases, ElementsAre("compile", "simulate", "check"));
  EXPECT_EQ(outcome.outputs.count("y"), 1u);
  EXPECT_GE(report.wall_seconds, *report.compile_seconds);
  // Without a profile folder no profile is written, but the renderer's span is known.
  EXPECT_EQ(report.profile, "");
  ASSERT_TRUE(report.renderer_cycles.has_value());
  EXPECT_LE(*report.renderer_cycles, *report.cycles);
  EXPECT_GT(*report.renderer_cycles, 0u);
}

TEST(RunCase, PassingCaseWritesItsProfile) {
  SmallCase small;
  const std::string directory = ::testing::TempDir() + "/tilec_run_case_profile/case";
  std::filesystem::remove_all(directory);
  small.request.profile_directory = directory;
  const CaseOutcome outcome = run_case(small.request);
  ASSERT_EQ(outcome.report.status, kPass);
  EXPECT_EQ(outcome.report.profile, directory + "/profile.html");
  EXPECT_THAT(small.phases, ElementsAre("compile", "simulate", "check", "profile"));
  const profile::ProfileData profile = profile::read_profile(directory + "/profile.tprof");
  EXPECT_EQ(profile.name, "fp8-b1-n1-default");
  EXPECT_EQ(profile.cycles, *outcome.report.cycles);
  EXPECT_EQ(outcome.report.renderer_cycles, profile::renderer_cycles(profile));
  EXPECT_GT(std::filesystem::file_size(directory + "/profile.html"), 0u);
  // The phases are the profile's, per active tile.
  const profile::ProfileSummary summary = profile::summarize(profile);
  ASSERT_TRUE(outcome.report.compute_cycles && outcome.report.exchange_cycles && outcome.report.sync_cycles);
  EXPECT_DOUBLE_EQ(*outcome.report.compute_cycles,
                   static_cast<double>(summary.phases.compute) / summary.active_tiles);
  EXPECT_DOUBLE_EQ(*outcome.report.exchange_cycles,
                   static_cast<double>(summary.phases.exchange) / summary.active_tiles);
  EXPECT_DOUBLE_EQ(*outcome.report.sync_cycles, static_cast<double>(summary.phases.sync) / summary.active_tiles);

  // Without a profile to write, the events are tallied as the run goes and
  // never kept: the same figures.
  SmallCase unprofiled;
  const CaseReport tallied = run_case(unprofiled.request).report;
  EXPECT_EQ(tallied.cycles, outcome.report.cycles);
  EXPECT_EQ(tallied.renderer_cycles, outcome.report.renderer_cycles);
  EXPECT_EQ(tallied.compute_cycles, outcome.report.compute_cycles);
  EXPECT_EQ(tallied.exchange_cycles, outcome.report.exchange_cycles);
  EXPECT_EQ(tallied.sync_cycles, outcome.report.sync_cycles);
}

// At 8 KiB the plan splits both GEMMs' K over tiles, gemm1's partial sums
// in FP32; at 6 KiB the same grids fit only with them in FP16.
TEST(RunCase, SplitSumsAreBitExactAgainstThePlanOrderReference) {
  SmallCase small(8);
  const CaseOutcome outcome = run_case(small.request);
  ASSERT_EQ(outcome.report.status, kPass) << ::testing::PrintToString(outcome.report.diagnostic);
  EXPECT_THAT(outcome.report.plan, HasSubstr("gemm1 4x2, gemm2 2x4"));
  EXPECT_EQ(outcome.report.bit_exact, true);
  EXPECT_EQ(outcome.report.differing_elements, 0);
  EXPECT_TRUE(outcome.report.plan_order_reference_seconds.has_value());
  // The standard reference sums K in one part: the device is not its bits.
  EXPECT_GT(graph::differing_elements(outcome.outputs, small.data.reference().outputs), 0);
}

// The default sweep's kinds of case on small chips: FP8 and FP16, one and
// two blocks, batch 1 and 2, the whole tile and a budget that splits K.
TEST(RunCase, SweepKindsOfCaseAreBitExact) {
  for (graph::Precision precision : {graph::Precision::Fp8, graph::Precision::Fp16})
    for (std::int64_t blocks : {1, 2})
      for (std::int64_t batch : {1, 2})
        for (std::uint32_t tiles : {16u, 64u})
          for (std::uint32_t budget_kib : {0u, 8u}) {
            graph::MlpOptions options = small_mlp();
            options.precision = precision;
            options.blocks = blocks;
            options.batch = batch;
            WorkloadData data{"mlp", options};
            CaseRequest request;
            request.identity = workload_case("mlp", options, budget_kib);
            request.graph = &data.graph();
            request.data = &data.data();
            request.reference = [&]() -> const ReferenceOutputs& { return data.reference(); };
            request.compile.machine = ipu21_cut(tiles);
            request.compile.budget_bytes = budget_kib * 1024;
            const CaseOutcome outcome = run_case(request);
            const std::string where = fmt::format("{} on {} tiles: {}", outcome.report.name, tiles, outcome.report.plan);
            ASSERT_EQ(outcome.report.status, kPass) << where;
            EXPECT_EQ(outcome.report.differing_elements, 0) << where;
            // 8 KiB leaves no plan that sums K on one tile.
            if (budget_kib == 8) { EXPECT_TRUE(outcome.report.plan_order_reference_seconds.has_value()) << where; }
          }
}

TEST(RunCase, ADeviceThatRoundsItsPartialSumsOtherwiseIsNotBitExact) {
  SmallCase fp32_partials(8), fp16_partials(8);
  fp16_partials.request.compile.fp16_partials_anywhere = true;
  const package::Package planned = compiler::compile(fp32_partials.data.graph(), fp32_partials.request.compile).package;
  package::Package device = compiler::compile(fp16_partials.data.graph(), fp16_partials.request.compile).package;
  const reference::KSplit& planned_split = planned.summation_order.gemms.at("gemm1");
  const reference::KSplit& device_split = device.summation_order.gemms.at("gemm1");
  // The same cuts and combine orders; only the device's partials are FP16.
  ASSERT_EQ(planned_split.cuts, device_split.cuts);
  ASSERT_EQ(planned_split.orders, device_split.orders);
  ASSERT_FALSE(planned_split.half_partials);
  ASSERT_TRUE(device_split.half_partials);
  fp16_partials.request.package = &device;
  const CaseOutcome own = run_case(fp16_partials.request);
  ASSERT_EQ(own.report.status, kPass);
  EXPECT_EQ(own.report.bit_exact, true);
  // The reference told that the device sums as the FP32 plan does.
  device.summation_order = planned.summation_order;
  const CaseOutcome told = run_case(fp16_partials.request);
  EXPECT_EQ(told.report.status, kPass);
  EXPECT_EQ(told.report.bit_exact, false);
  EXPECT_GT(told.report.differing_elements.value_or(0), 0);
}

TEST(RunCase, NoPlanFittingTheBudgetIsAPlannerRejection) {
  SmallCase small(4);
  const CaseOutcome outcome = run_case(small.request);
  const CaseReport& report = outcome.report;
  EXPECT_EQ(report.status, kPlannerRejected);
  EXPECT_EQ(report.returncode, 1);
  EXPECT_EQ(report.name, "fp8-b1-n1-4k");
  EXPECT_FALSE(report.cycles.has_value());
  ASSERT_FALSE(report.stages.empty());
  EXPECT_EQ(report.stages.front().first, "compile_runtime");
  // The stages that ran, then the compiler's one-line error.
  ASSERT_GE(report.diagnostic.size(), 2u);
  EXPECT_THAT(report.diagnostic.front(), StartsWith("compile_runtime: close time.wall="));
  EXPECT_THAT(report.diagnostic.back(), StartsWith("compile: no plan fits the budget of 4096 bytes per tile"));
  ASSERT_TRUE(outcome.error.has_value());
  EXPECT_EQ(outcome.error->exit_code(), 1);
}

TEST(RunCase, OutputsOutOfToleranceFail) {
  SmallCase small;
  // A reference that differs from the device's y by 0.5 everywhere.
  ReferenceOutputs shifted = small.data.reference();
  graph::Tensor& y = shifted.outputs.at("y");
  std::vector<float> values = y.to_floats();
  for (float& value : values) value += 0.5f;
  y = graph::Tensor::from_floats(y.type, values);
  small.request.reference = [&]() -> const ReferenceOutputs& { return shifted; };
  const std::string directory = ::testing::TempDir() + "/tilec_run_case_failed_profile";
  std::filesystem::remove_all(directory);
  small.request.profile_directory = directory;
  const CaseOutcome outcome = run_case(small.request);
  EXPECT_EQ(outcome.report.status, kFailed);
  // The run completed: its profile is written all the same.
  EXPECT_EQ(outcome.report.profile, directory + "/profile.html");
  EXPECT_EQ(profile::read_profile(directory + "/profile.tprof").cycles, *outcome.report.cycles);
  EXPECT_EQ(outcome.report.returncode, 1);
  EXPECT_EQ(outcome.report.out_of_tolerance, 40 * 32);
  EXPECT_GE(*outcome.report.maximum_absolute_error, 0.45);
  EXPECT_TRUE(outcome.report.cycles.has_value());
  EXPECT_THAT(outcome.report.diagnostic.back(),
              HasSubstr("fp8-b1-n1-default: 1,280 of 1,280 output elements out of tolerance"));
  EXPECT_THAT(outcome.report.diagnostic.back(), HasSubstr("; worst y["));
}

TEST(RunCase, SimulatorFaultIsAFault) {
  SmallCase small;
  package::Package package = compiler::compile(small.data.graph(), small.request.compile).package;
  // An undecodable bundle at tile 0's entry.
  package::TileImage& tile = package.tiles.at(0);
  for (package::Segment& segment : tile.segments) {
    if (!segment.executable || tile.entry < segment.address || tile.entry >= segment.address + segment.size())
      continue;
    auto bytes = std::make_shared<std::vector<std::uint8_t>>(*segment.bytes);
    std::fill_n(bytes->begin() + (tile.entry - segment.address), 8, 0xff);
    segment.bytes = bytes;
  }
  small.request.package = &package;
  const CaseOutcome outcome = run_case(small.request);
  EXPECT_EQ(outcome.report.status, kFault);
  EXPECT_EQ(outcome.report.returncode, 1);
  EXPECT_TRUE(outcome.report.stages.empty());  // nothing compiled
  EXPECT_THAT(outcome.report.diagnostic.back(), StartsWith("tile 0, supervisor, pc "));
}

// The last bundle of tile 0's supervisor program (its halt) made
// undecodable: the run faults at its very end, and its profile up to the
// fault is written and marks it.
TEST(RunCase, FaultingCaseWritesItsProfileUpToTheFault) {
  SmallCase small;
  package::Package package = compiler::compile(small.data.graph(), small.request.compile).package;
  package::TileImage& tile = package.tiles.at(0);
  for (package::Segment& segment : tile.segments) {
    if (segment.name != ".text") continue;
    auto bytes = std::make_shared<std::vector<std::uint8_t>>(*segment.bytes);
    std::fill(bytes->end() - 8, bytes->end(), 0xff);
    segment.bytes = bytes;
  }
  const std::string directory = ::testing::TempDir() + "/tilec_run_case_fault_profile/case";
  std::filesystem::remove_all(directory);
  small.request.package = &package;
  small.request.profile_directory = directory;
  const CaseOutcome outcome = run_case(small.request);
  EXPECT_EQ(outcome.report.status, kFault);
  const profile::ProfileData profile = profile::read_profile(directory + "/profile.tprof");
  ASSERT_TRUE(profile.fault.has_value());
  EXPECT_EQ(profile.fault->tile, 0u);
  EXPECT_EQ(profile.fault->context, sim::kSupervisorContext);
  EXPECT_EQ(profile.fault->message, outcome.report.diagnostic.back());
  EXPECT_GT(profile.fault->cycle, 1000u);
  EXPECT_EQ(profile.cycles, profile.fault->cycle + 1);
  // Everything before the fault is there: the kernels of every tile.
  EXPECT_GT(profile::summarize(profile).worker_cycles, 0u);
  std::ifstream page(directory + "/profile.html");
  const std::string html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_THAT(html, HasSubstr("\"fault\":{\"bundle\":"));
}

TEST(RunCase, MissingDataStopsTheCaseWithBadInput) {
  SmallCase small;
  graph::TensorMap partial = small.data.data();
  partial.erase("W2");
  small.request.data = &partial;
  const CaseOutcome outcome = run_case(small.request);
  EXPECT_EQ(outcome.report.status, kError);
  EXPECT_EQ(outcome.report.returncode, 2);
  EXPECT_EQ(outcome.report.diagnostic.back(), "binding 'W2': the package needs it but no data was given");
}

graph::MlpOptions workload_point(graph::Precision precision, std::int64_t batch, std::int64_t blocks,
                                 std::optional<std::int64_t> layers = std::nullopt) {
  graph::MlpOptions options;
  options.precision = precision;
  options.batch = batch;
  options.blocks = blocks;
  options.layers = layers;
  return options;
}

// An MLP's names say its blocks, a ViT tower's its layers (the workload's
// own when unset), one encoder layer's neither.
TEST(RunCase, CaseNames) {
  EXPECT_EQ(workload_case("siglip-mlp", workload_point(graph::Precision::Fp8, 4, 1), 0).name, "fp8-b4-n1-default");
  EXPECT_EQ(workload_case("mlp", workload_point(graph::Precision::Fp16, 1, 12), 256).name, "fp16-b1-n12-256k");
  EXPECT_EQ(workload_case("siglip-vit", workload_point(graph::Precision::Fp8, 1, 1), 0).name, "fp8-b1-l27-default");
  EXPECT_EQ(workload_case("vit", workload_point(graph::Precision::Fp8, 2, 1), 0).name, "fp8-b2-l2-default");
  EXPECT_EQ(workload_case("vit", workload_point(graph::Precision::Fp32, 1, 1, 5), 64).name, "fp32-b1-l5-64k");
  EXPECT_EQ(workload_case("siglip-vit-layer", workload_point(graph::Precision::Fp8, 1, 1), 0).name, "fp8-b1-default");
  EXPECT_EQ(workload_case("vit-layer", workload_point(graph::Precision::Fp16, 3, 1), 8).name, "fp16-b3-8k");
}

TEST(RunCase, WorkloadCasesSayWhatTheWorkloadVaries) {
  const CaseReport mlp = workload_case("mlp", workload_point(graph::Precision::Fp8, 2, 3), 0);
  EXPECT_EQ(mlp.batch, 2);
  EXPECT_EQ(mlp.blocks, 3);
  EXPECT_FALSE(mlp.layers || mlp.head);
  graph::MlpOptions tokens_only = workload_point(graph::Precision::Fp16, 1, 1, 4);
  tokens_only.head = false;
  const CaseReport tower = workload_case("vit", tokens_only, 128);
  EXPECT_EQ(tower.precision, "fp16");
  EXPECT_EQ(tower.budget_kib, 128u);
  EXPECT_FALSE(tower.blocks.has_value());
  EXPECT_EQ(tower.layers, 4);
  EXPECT_EQ(tower.head, false);
  const CaseReport layer = workload_case("vit-layer", workload_point(graph::Precision::Fp8, 1, 1), 0);
  EXPECT_FALSE(layer.blocks || layer.layers || layer.head);
}

// A tower's layers and head are part of its key's options, so that a case
// another count or head produced is not taken for this one.
TEST(RunCase, KeyOptionsSayATowersLayersAndHead) {
  SmallCase small;
  const std::string mlp = case_options_text(small.request);
  EXPECT_EQ(mlp.find("layers"), std::string::npos);
  CaseRequest tower = small.request;
  tower.identity = workload_case("vit", workload_point(graph::Precision::Fp8, 1, 1, 2), 0);
  const std::string two = case_options_text(tower);
  EXPECT_THAT(two, HasSubstr(", layers 2, head"));
  tower.identity.layers = 3;
  const std::string three = case_options_text(tower);
  tower.identity.head = false;
  const std::string headless = case_options_text(tower);
  EXPECT_THAT(headless, HasSubstr(", layers 3, no head"));
  EXPECT_NE(two, three);
  EXPECT_NE(three, headless);
  EXPECT_NE(expected_key(small.request), expected_key(tower));
}

TEST(RunCase, StageTimesSumEveryRunOfAStageInPipelineOrder) {
  Timeline timeline;
  timeline.add(SpanRecord{"place_storage", 0, 0, 0.5, 0, 0});
  timeline.add(SpanRecord{"construct_mid", 0, 0, 1.0, 0, 0});
  timeline.add(SpanRecord{"place_storage", 0, 0, 0.25, 0, 0});
  timeline.add(SpanRecord{"nested", 1, 0, 9.0, 0, 0});
  timeline.add(SpanRecord{"simulate", 0, 0, 3.0, 0, 0});
  const auto stages = stage_times(timeline);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0], (std::pair<std::string, double>{"construct_mid", 1.0}));
  EXPECT_EQ(stages[1], (std::pair<std::string, double>{"place_storage", 0.75}));
}

}  // namespace
}  // namespace tilec::bench
