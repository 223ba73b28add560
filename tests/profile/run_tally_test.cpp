// RunTally: the phases and renderer span of a run, the same whether its
// events come whole, in batches, or from the simulator as it runs.
#include "profile/run_tally.h"

#include "profile_test_support.h"
#include "support/error.h"

#include <gtest/gtest.h>

namespace tilec::profile {
namespace {

using testing::blank_profile;
using testing::halt;
using testing::kernel;
using testing::send;
using testing::sync_wait;

void expect_same(const RunTally& a, const RunTally& b, std::uint64_t cycles) {
  const PhaseCycles pa = a.phases(cycles), pb = b.phases(cycles);
  EXPECT_EQ(pa.compute, pb.compute);
  EXPECT_EQ(pa.exchange, pb.exchange);
  EXPECT_EQ(pa.sync, pb.sync);
  EXPECT_EQ(pa.idle, pb.idle);
  EXPECT_EQ(a.active_tiles(), b.active_tiles());
  EXPECT_EQ(a.renderer_span(cycles).begin, b.renderer_span(cycles).begin);
  EXPECT_EQ(a.renderer_span(cycles).end, b.renderer_span(cycles).end);
}

// Each tile's events cut after every sync wait, as the simulator hands them over.
RunTally tally_in_batches(const ProfileData& profile) {
  RunTally tally(profile.tiles);
  for (std::uint32_t tile = 0; tile < profile.tiles; ++tile) {
    std::vector<sim::ProfileEvent> batch;
    for (const sim::ProfileEvent& event : profile.events.tiles[tile]) {
      batch.push_back(event);
      if (event.kind == sim::ProfileEventKind::SyncWait) {
        tally.add(tile, batch);
        batch.clear();
      }
    }
    tally.add(tile, batch);
  }
  return tally;
}

TEST(RunTally, AgreesWithTheSummaryOfAWholeProfile) {
  const ProfileData& profile = testing::mlp_profile();
  const RunTally tally = RunTally::of(profile);
  const ProfileSummary summary = summarize(profile);
  const PhaseCycles phases = tally.phases(profile.cycles);
  EXPECT_EQ(phases.compute, summary.phases.compute);
  EXPECT_EQ(phases.exchange, summary.phases.exchange);
  EXPECT_EQ(phases.sync, summary.phases.sync);
  EXPECT_EQ(phases.idle, summary.phases.idle);
  EXPECT_GT(phases.compute, 0u);
  EXPECT_GT(phases.exchange, 0u);
  EXPECT_GT(phases.sync, 0u);
  EXPECT_EQ(tally.active_tiles(), summary.active_tiles);
  EXPECT_EQ(tally.renderer_span(profile.cycles).end, profile.cycles);
}

TEST(RunTally, BatchesCutAtSyncsAddUpToTheWhole) {
  const ProfileData& profile = testing::mlp_profile();
  ASSERT_GE(summarize(profile).syncs, 1u);
  expect_same(tally_in_batches(profile), RunTally::of(profile), profile.cycles);

  // The initial sync alone in the first batch: the crop still finds the
  // event after it.
  ProfileData cropped = blank_profile(3, 2000);
  cropped.events.tiles[0] = {sync_wait(0, 700, 0), kernel(0, 710, 900), sync_wait(900, 1500, 1),
                             kernel(1, 1500, 1600), halt(1990)};
  cropped.events.tiles[1] = {sync_wait(100, 700, 0), send(705, 720), sync_wait(720, 1500, 1), halt(1950)};
  const RunTally batched = tally_in_batches(cropped);
  EXPECT_EQ(batched.renderer_span(2000).begin, 705u);
  EXPECT_EQ(batched.renderer_span(2000).end, 1990u);
  EXPECT_EQ(batched.phases(2000).compute, 290u);
  EXPECT_EQ(batched.phases(2000).exchange, 15u);
  EXPECT_EQ(batched.phases(2000).sync, 700u + 600u + 600u + 780u);
  expect_same(batched, RunTally::of(cropped), 2000);
}

TEST(RunTally, OfTheSimulatorsBatchesMatchesTheRecordedProfile) {
  const testing::MlpRun& run = testing::mlp_run();
  const graph::Graph graph = testing::mlp_graph();
  sim::Device device(run.package, run.machine);
  for (const auto& [name, tensor] : graph::generate_data(graph, 7)) device.write(name, tensor);
  RunTally streamed(run.machine.tiles);
  int batches = 0;
  sim::SimOptions options;
  options.on_events = [&](std::uint32_t tile, const std::vector<sim::ProfileEvent>& events) {
    streamed.add(tile, events);
    ++batches;
  };
  const sim::RunResult result = device.run(options);
  EXPECT_TRUE(result.profile.tiles.empty());
  EXPECT_EQ(result.cycles, run.run.cycles);
  EXPECT_GT(batches, static_cast<int>(run.machine.tiles));
  expect_same(streamed, RunTally::of(testing::mlp_profile()), result.cycles);
}

TEST(RunTally, RefusesATileOutsideTheRun) {
  RunTally tally(2);
  EXPECT_THROW(tally.add(2, {halt(10)}), tilec::Error);
}

}  // namespace
}  // namespace tilec::profile
