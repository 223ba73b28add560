// Phase accounting, kernel totals, utilisation and the query's text and
// JSON, on hand-made events (figures worked out by hand) and on a real run
// (invariants that must hold for any run).
#include "profile/query_report.h"
#include "profile/summary.h"
#include "profile_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tilec::profile {
namespace {

using testing::blank_profile;
using testing::halt;
using testing::kernel;
using testing::send;
using testing::sync_wait;
using ::testing::HasSubstr;

TEST(TilePhases, ComputeWinsOverExchangeWinsOverSync) {
  // 0-10 idle; 10-30 a send; 20-50 worker 0, 40-60 worker 1 (compute
  // 20-60 whatever else happens); 55-80 a sync wait (60-80 is sync);
  // 80-100 idle after the halt.
  const std::vector<sim::ProfileEvent> events = {send(10, 30), kernel(0, 20, 50), kernel(1, 40, 60),
                                                 sync_wait(55, 80, 0), halt(80)};
  const PhaseCycles phases = tile_phases(events, 100);
  EXPECT_EQ(phases.compute, 40u);
  EXPECT_EQ(phases.exchange, 10u);
  EXPECT_EQ(phases.sync, 20u);
  EXPECT_EQ(phases.idle, 30u);
  EXPECT_EQ(phases.total(), 100u);
}

TEST(TilePhases, NoEventsIsAllIdle) {
  const PhaseCycles phases = tile_phases({}, 77);
  EXPECT_EQ(phases.idle, 77u);
  EXPECT_EQ(phases.total(), 77u);
}

ProfileData two_tile_profile() {
  ProfileData profile = blank_profile(2, 100);
  profile.events.tiles[0] = {kernel(0, 0, 40, 3), kernel(1, 0, 40, 3), send(40, 50), sync_wait(50, 70, 0),
                             kernel(0, 70, 90, 4), halt(90)};
  profile.events.tiles[1] = {kernel(2, 10, 30, 4), sync_wait(30, 70, 0), halt(100)};
  profile.tile_stats[0].amp_macs = {128 * 50, 0, 0};  // 50 AMP-cycles at the FP8 peak
  profile.tile_stats[1].amp_macs = {0, 64 * 30, 0};   // 30 at the FP16 peak
  profile.tile_stats[0].bytes_sent = 40;
  profile.tile_stats[0].halt_cycle = 90;
  profile.tile_stats[1].halt_cycle = 100;
  profile.graph_macs = 128 * 40;
  return profile;
}

TEST(Summary, KernelsPhasesAndUtilisation) {
  const ProfileSummary summary = summarize(two_tile_profile());
  EXPECT_EQ(summary.cycles, 100u);
  EXPECT_EQ(summary.active_tiles, 2u);
  EXPECT_EQ(summary.syncs, 1u);
  EXPECT_EQ(summary.exchange_bytes, 40u);
  // Tile 0: compute 0-40 and 70-90, exchange 40-50, sync 50-70, idle 90-100.
  // Tile 1: idle 0-10, compute 10-30, sync 30-70, idle 70-100.
  EXPECT_EQ(summary.phases.compute, 60u + 20u);
  EXPECT_EQ(summary.phases.exchange, 10u);
  EXPECT_EQ(summary.phases.sync, 20u + 40u);
  EXPECT_EQ(summary.phases.idle, 10u + 40u);
  // gemm: two workers x 40; gelu: 20 + 20.
  ASSERT_EQ(summary.kernels.size(), 2u);
  EXPECT_EQ(summary.kernels[0].name, "gemm");
  EXPECT_EQ(summary.kernels[0].calls, 2u);
  EXPECT_EQ(summary.kernels[0].worker_cycles, 80u);
  EXPECT_DOUBLE_EQ(summary.kernels[0].share, 80.0 / 120.0);
  EXPECT_EQ(summary.kernels[1].name, "gelu");
  EXPECT_EQ(summary.kernels[1].worker_cycles, 40u);
  EXPECT_EQ(summary.worker_cycles, 120u);
  // (50 + 30) AMP-cycles over 100 cycles x 2 tiles.
  EXPECT_DOUBLE_EQ(summary.amp_utilisation, 80.0 / 200.0);
  ASSERT_TRUE(summary.roofline_fraction.has_value());
  EXPECT_DOUBLE_EQ(*summary.roofline_fraction, 40.0 / 200.0);
  const std::vector<TileSummary> busiest = busiest_tiles(summary, 5);
  ASSERT_EQ(busiest.size(), 2u);
  EXPECT_EQ(busiest[0].tile, 0u);
  EXPECT_EQ(busiest[0].worker_cycles, 100u);
  EXPECT_EQ(busiest[1].worker_cycles, 20u);
}

TEST(Summary, NoPeakMeansNoRoofline) {
  ProfileData profile = two_tile_profile();
  profile.peak_macs_per_cycle = 0;
  EXPECT_FALSE(summarize(profile).roofline_fraction.has_value());
}

TEST(Summary, RealRunAddsUp) {
  const ProfileData& profile = testing::mlp_profile();
  const ProfileSummary summary = summarize(profile);
  EXPECT_EQ(summary.phases.total(), profile.cycles * profile.tiles);
  std::uint64_t worker_cycles = 0, macs = 0;
  for (const auto& events : profile.events.tiles)
    for (const sim::ProfileEvent& event : events)
      if (event.kind == sim::ProfileEventKind::WorkerKernel) worker_cycles += event.end - event.begin;
  for (const sim::TileStats& stats : profile.tile_stats) macs += stats.total_amp_macs();
  EXPECT_GT(worker_cycles, 0u);
  EXPECT_EQ(summary.worker_cycles, worker_cycles);
  std::uint64_t kernel_sum = 0;
  double shares = 0;
  for (const KernelTotal& kernel : summary.kernels) {
    kernel_sum += kernel.worker_cycles;
    shares += kernel.share;
  }
  EXPECT_EQ(kernel_sum, worker_cycles);
  EXPECT_NEAR(shares, 1.0, 1e-12);
  for (std::size_t i = 1; i < summary.kernels.size(); ++i)
    EXPECT_GE(summary.kernels[i - 1].worker_cycles, summary.kernels[i].worker_cycles);
  // Every MAC of this FP8 graph is an FP8 MAC: the brief's formula.
  EXPECT_EQ(summary.amp_macs, macs);
  EXPECT_DOUBLE_EQ(summary.amp_utilisation,
                   static_cast<double>(macs) / (static_cast<double>(profile.cycles) * profile.tiles * 128));
  EXPECT_DOUBLE_EQ(*summary.roofline_fraction,
                   profile.graph_macs / (static_cast<double>(profile.cycles) * profile.tiles * 128));
  // The sync time the phases see is at most what the tiles waited.
  std::uint64_t waited = 0;
  for (const sim::TileStats& stats : profile.tile_stats) waited += stats.sync_wait_cycles;
  EXPECT_LE(summary.phases.sync, waited);
  const std::vector<TileSummary> busiest = busiest_tiles(summary, 3);
  ASSERT_EQ(busiest.size(), 3u);
  for (const TileSummary& tile : summary.tiles_by_index) EXPECT_LE(tile.worker_cycles, busiest[0].worker_cycles);
}

TEST(QueryReport, TextNamesEveryKernelAndPhase) {
  const ProfileData profile = two_tile_profile();
  const std::string text = query_text(profile, summarize(profile), 1);
  EXPECT_THAT(text, HasSubstr("profile hand-made: ipu21:2, 2 tiles (2 ran a program), 1.5 GHz"));
  EXPECT_THAT(text, HasSubstr("cycles 100 (0.1 us), renderer cycles 100, 1 sync, 40 bytes exchanged"));
  EXPECT_THAT(text, HasSubstr("AMP utilisation 40.0% (8,320 MACs executed)"));
  EXPECT_THAT(text, HasSubstr("roofline fraction 20.0%"));
  EXPECT_THAT(text, ::testing::ContainsRegex("compute +80 +40.0%"));
  EXPECT_THAT(text, ::testing::ContainsRegex("sync +60 +30.0%"));
  EXPECT_THAT(text, ::testing::ContainsRegex("gemm +2 +80 +66.7%"));
  EXPECT_THAT(text, ::testing::ContainsRegex("gelu +2 +40 +33.3%"));
  EXPECT_THAT(text, HasSubstr("busiest tiles (1 of 2, by busy worker-cycles)"));
  EXPECT_THAT(text, ::testing::ContainsRegex("\n +0 +100 +60 +10 +20 +10 +6,400 +90\n"));
}

TEST(QueryReport, JsonHoldsTheSameFigures) {
  const ProfileData profile = two_tile_profile();
  const nlohmann::json report = query_json(profile, summarize(profile), 1);
  EXPECT_EQ(report["cycles"], 100);
  EXPECT_EQ(report["phases"]["compute"], 80);
  EXPECT_EQ(report["phases"]["idle"], 50);
  EXPECT_EQ(report["kernels"][0]["name"], "gemm");
  EXPECT_EQ(report["kernels"][0]["worker_cycles"], 80);
  EXPECT_DOUBLE_EQ(report["amp_utilisation"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(report["roofline_fraction"].get<double>(), 0.2);
  ASSERT_EQ(report["busiest_tiles"].size(), 1u);
  EXPECT_EQ(report["busiest_tiles"][0]["tile"], 0);
  ASSERT_EQ(report["tiles_by_index"].size(), 2u);
  EXPECT_EQ(report["tiles_by_index"][1]["phases"]["sync"], 40);
  ProfileData no_peak = profile;
  no_peak.peak_macs_per_cycle = 0;
  EXPECT_TRUE(query_json(no_peak, summarize(no_peak), 1)["roofline_fraction"].is_null());
}

}  // namespace
}  // namespace tilec::profile
