// make_profile gathers a run faithfully; renderer_cycles crops an initial
// sync and nothing else.
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

TEST(MakeProfile, GathersTheRunThePackageAndTheMachine) {
  const testing::MlpRun& run = testing::mlp_run();
  const ProfileData& profile = testing::mlp_profile();
  EXPECT_EQ(profile.name, "mlp-16");
  EXPECT_EQ(profile.target, "ipu21:16");
  EXPECT_EQ(profile.tiles, 16u);
  EXPECT_EQ(profile.clock_ghz, run.machine.clock_ghz);
  EXPECT_EQ(profile.cycles, run.run.cycles);
  EXPECT_EQ(profile.graph_macs, run.graph_macs);
  EXPECT_EQ(profile.peak_macs_per_cycle, 128u);
  ASSERT_EQ(profile.tile_stats.size(), 16u);
  for (std::size_t tile = 0; tile < 16; ++tile) {
    EXPECT_EQ(profile.tile_stats[tile].halt_cycle, run.run.tiles[tile].halt_cycle);
    EXPECT_EQ(profile.tile_stats[tile].total_amp_macs(), run.run.tiles[tile].total_amp_macs());
    EXPECT_EQ(profile.events.tiles[tile].size(), run.run.profile.tiles[tile].size());
  }
  EXPECT_EQ(profile.events.labels, run.run.profile.labels);
  ASSERT_EQ(profile.regions.size(), run.package.tiles[0].regions.size());
  EXPECT_FALSE(profile.regions.empty());
  std::uint32_t peak = 0;
  for (const package::TileImage& image : run.package.tiles) peak = std::max(peak, image.peak_bytes);
  EXPECT_EQ(profile.peak_tile_bytes, peak);
  EXPECT_GT(peak, 0u);
}

TEST(MakeProfile, RefusesARunWithoutEvents) {
  const testing::MlpRun& run = testing::mlp_run();
  sim::RunResult without = run.run;
  without.profile = {};
  EXPECT_THROW(make_profile("x", run.package, run.machine, without, 0, 0), tilec::Error);
  EXPECT_THROW(make_profile("x", run.package, ipu21_cut(8), run.run, 0, 0), tilec::Error);
}

// Our programs start computing at once: the renderer shows the whole run.
TEST(RendererCycles, WithoutAnInitialSyncIsTheRunsCycles) {
  const ProfileData& profile = testing::mlp_profile();
  EXPECT_EQ(renderer_cycles(profile), profile.cycles);
  EXPECT_EQ(renderer_span(profile).begin, 0u);
}

TEST(RendererCycles, CropsAnInitialSyncOnEveryTile) {
  ProfileData profile = blank_profile(3, 1000);
  profile.events.tiles[0] = {sync_wait(0, 700, 0), kernel(0, 710, 900), halt(990)};
  profile.events.tiles[1] = {sync_wait(100, 700, 0), send(705, 720), halt(950)};
  // Tile 2 runs no program: it has no say.
  EXPECT_EQ(renderer_span(profile).begin, 705u);
  EXPECT_EQ(renderer_span(profile).end, 990u);
  EXPECT_EQ(renderer_cycles(profile), 990u - 705u);
}

TEST(RendererCycles, NoCropWhenOneTileDidSomethingBeforeTheSync) {
  ProfileData profile = blank_profile(2, 1000);
  profile.events.tiles[0] = {sync_wait(0, 700, 0), kernel(0, 710, 900), halt(1000)};
  profile.events.tiles[1] = {kernel(2, 0, 50), sync_wait(50, 700, 0), halt(800)};
  EXPECT_EQ(renderer_cycles(profile), 1000u);
}

TEST(RendererCycles, EndsAtTheLastHalt) {
  ProfileData profile = blank_profile(2, 1000);
  profile.events.tiles[0] = {kernel(0, 0, 900), halt(950)};
  profile.events.tiles[1] = {kernel(0, 0, 400), halt(420)};
  EXPECT_EQ(renderer_cycles(profile), 950u);
  // Without any halt (an empty run) the span is the whole run.
  EXPECT_EQ(renderer_cycles(blank_profile(2, 1000)), 1000u);
}

}  // namespace
}  // namespace tilec::profile
