// Phase accounting, kernel totals, utilisation and the query's text and
// JSON, on hand-made events (figures worked out by hand) and on a real run
// (invariants that must hold for any run).
#include "profile/query_report.h"
#include "profile/summary.h"
#include "profile_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

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
  profile.events.tiles[0] = {kernel(0, 0, 40, 4), kernel(1, 0, 40, 4), send(40, 50), sync_wait(50, 70, 0),
                             kernel(0, 70, 90, 5), halt(90)};
  profile.events.tiles[1] = {kernel(2, 10, 30, 5), sync_wait(30, 70, 0), halt(100)};
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

// Kernels attributed to ops 6 (fc1) and 7 (fc2), one outside every task.
TEST(Summary, OpsAndSupersteps) {
  ProfileData profile = blank_profile(2, 100);
  sim::ProfileEvent fc1 = kernel(0, 0, 40, 4, 6), fc1_too = kernel(1, 0, 40, 4, 6), fc2 = kernel(0, 70, 90, 5, 7);
  fc1.amp_instructions = 5;
  fc1.amp_macs = 5 * 128;
  fc1_too.amp_instructions = 3;
  fc1_too.amp_macs = 3 * 128;
  profile.events.tiles[0] = {fc1, fc1_too, send(40, 50), sync_wait(50, 70, 0), fc2, halt(90)};
  profile.events.tiles[1] = {kernel(2, 10, 30, 5), sync_wait(30, 70, 0), halt(100)};
  profile.tile_stats[0].halt_cycle = 90;
  profile.tile_stats[1].halt_cycle = 100;
  const ProfileSummary summary = summarize(profile);
  ASSERT_EQ(summary.ops.size(), 3u);
  EXPECT_EQ(summary.ops[0].name, "fc1");
  EXPECT_EQ(summary.ops[0].calls, 2u);
  EXPECT_EQ(summary.ops[0].worker_cycles, 80u);
  EXPECT_EQ(summary.ops[0].amp_instructions, 8u);
  EXPECT_EQ(summary.ops[0].amp_macs, 8u * 128);
  // 8 AMP instructions in 80 worker-cycles, one issue slot in 6 each.
  EXPECT_DOUBLE_EQ(summary.ops[0].amp_utilisation, 8.0 / (80.0 / 6));
  EXPECT_DOUBLE_EQ(summary.ops[0].share, 80.0 / 120.0);
  // fc2 and the unattributed kernel tie at 20: their label order.
  EXPECT_EQ(summary.ops[1].name, "");
  EXPECT_EQ(summary.ops[2].name, "fc2");
  EXPECT_EQ(summary.ops[2].worker_cycles, 20u);
  // Superstep 0 until the release at 70, superstep 1 from there to the end.
  ASSERT_EQ(summary.supersteps.size(), 2u);
  EXPECT_EQ(summary.supersteps[0].begin, 0u);
  EXPECT_EQ(summary.supersteps[0].cycles, 70u);
  EXPECT_EQ(summary.supersteps[0].worker_cycles, 100u);
  EXPECT_EQ(summary.supersteps[0].exchange_bytes, 40u);
  EXPECT_EQ(summary.supersteps[0].exchange_cycles, 10u);
  EXPECT_EQ(summary.supersteps[0].sync_cycles, 20u + 40u);
  EXPECT_EQ(summary.supersteps[1].begin, 70u);
  EXPECT_EQ(summary.supersteps[1].cycles, 30u);
  EXPECT_EQ(summary.supersteps[1].worker_cycles, 20u);
  EXPECT_EQ(summary.supersteps[1].sync_cycles, 0u);

  const std::string text = query_text(profile, summary, 1);
  EXPECT_THAT(text, ::testing::ContainsRegex("fc1 +2 +80 +66.7% +1,024 +60.0%"));
  EXPECT_THAT(text, ::testing::ContainsRegex("\\(no op\\) +1 +20"));
  EXPECT_THAT(text, HasSubstr("longest supersteps (1 of 2)"));
  EXPECT_THAT(text, ::testing::ContainsRegex("\n +0 +0 +70 +100 +40 +10 +60 +14.3% +14.3%\n"));
  const nlohmann::json report = query_json(profile, summary, 1);
  EXPECT_EQ(report["ops"][0]["name"], "fc1");
  EXPECT_EQ(report["ops"][0]["amp_macs"], 1024);
  EXPECT_EQ(report["supersteps"].size(), 2u);
  EXPECT_EQ(report["supersteps"][1]["cycles"], 30);
}

// Two columns of 64 tiles: tile 0 sends 400 bytes to tile 64, tile 1
// multicasts 40 to tiles 0, 65 and 66.
// Two chunks of 4 supersteps, the body 1-2 run three times: 8 a chunk.
TEST(Summary, SuperstepsFallInTheSchedulesPlaces) {
  const package::Schedule schedule{4, 2, 1, 2, "layers", 1, 2, 3};
  ASSERT_EQ(schedule.run_supersteps(), 16u);
  const std::vector<SuperstepPlace> places = superstep_places(schedule, 16);
  ASSERT_EQ(places.size(), 16u);
  auto same = [](const SuperstepPlace& place, std::uint32_t chunk, std::uint32_t step, std::int32_t iteration) {
    return place.chunk == chunk && place.step == step && place.iteration == iteration;
  };
  EXPECT_TRUE(same(places[0], 0, 0, -1));
  EXPECT_TRUE(same(places[1], 0, 1, 0));
  EXPECT_TRUE(same(places[2], 0, 2, 0));
  EXPECT_TRUE(same(places[3], 0, 1, 1));
  EXPECT_TRUE(same(places[6], 0, 2, 2));
  EXPECT_TRUE(same(places[7], 0, 3, -1));
  EXPECT_TRUE(same(places[8], 1, 0, -1));
  EXPECT_TRUE(same(places[15], 1, 3, -1));
  EXPECT_EQ(superstep_places(schedule, 5).size(), 5u);  // a run cut short
  EXPECT_TRUE(superstep_places(schedule, 17).empty());  // more than it schedules
  EXPECT_TRUE(superstep_places(package::Schedule{}, 1).empty());
}

// A repeat of two supersteps run twice between two others: per iteration,
// its supersteps' figures and its kernels by op.
TEST(Summary, IterationsTotalTheirSupersteps) {
  ProfileData profile = blank_profile(1, 100);
  profile.schedule = package::Schedule{4, 1, 1, 1, "layers", 1, 2, 2};
  profile.events.tiles[0] = {kernel(0, 0, 5, 4, 6),    sync_wait(5, 10, 0),  kernel(0, 10, 20, 4, 6),
                             sync_wait(20, 25, 1),     kernel(1, 25, 28, 5, 7), send(28, 30),
                             sync_wait(30, 40, 2),     kernel(0, 40, 46, 4, 6), sync_wait(46, 50, 3),
                             sync_wait(50, 60, 4),     kernel(0, 60, 61, 4, 6), halt(61)};
  profile.tile_stats[0].halt_cycle = 61;
  const ProfileSummary summary = summarize(profile);
  ASSERT_EQ(summary.supersteps.size(), 6u);
  ASSERT_TRUE(summary.supersteps[3].place);
  EXPECT_EQ(summary.supersteps[3].place->iteration, 1);
  EXPECT_EQ(summary.supersteps[5].place->step, 3u);
  ASSERT_EQ(summary.iterations.size(), 2u);
  const IterationTotal& first = summary.iterations[0];
  EXPECT_EQ(first.supersteps, 2u);
  EXPECT_EQ(first.cycles, 30u);  // from sync 0's release at 10 to sync 2's at 40
  EXPECT_EQ(first.worker_cycles, 13u);
  EXPECT_EQ(first.exchange_bytes, summary.supersteps[2].exchange_bytes);
  EXPECT_EQ(first.sync_cycles, 15u);
  ASSERT_EQ(first.ops.size(), 2u);
  EXPECT_EQ(first.ops[0], (std::pair<std::uint32_t, std::uint64_t>{6, 10}));
  EXPECT_EQ(first.ops[1], (std::pair<std::uint32_t, std::uint64_t>{7, 3}));
  EXPECT_EQ(summary.iterations[1].worker_cycles, 6u);
  EXPECT_THAT(query_text(profile, summary, 10), HasSubstr("repeat layers by iteration (2 supersteps each)"));
  EXPECT_THAT(query_text(profile, summary, 10), HasSubstr("layers[1] step 2"));
  const nlohmann::json report = query_json(profile, summary, 10);
  EXPECT_EQ(report["iterations"][0]["ops"][0]["worker_cycles"], 10u);
  EXPECT_EQ(report["supersteps"][3]["place"]["iteration"], 1);
}

TEST(Summary, TrafficBySourcePeerAndColumn) {
  ProfileData profile = blank_profile(128, 1000);
  profile.exchange_groups = {{0, 65, 66}};
  sim::ProfileEvent to_64 = send(0, 100), to_group = send(0, 10);
  to_64.peer = 64;
  to_64.op = 6;  // fc1
  to_group.peer = sim::kMulticastPeer | 0;
  profile.events.tiles[0] = {to_64, halt(1000)};
  profile.events.tiles[1] = {to_group, halt(1000)};
  profile.tile_stats[0].halt_cycle = profile.tile_stats[1].halt_cycle = 1000;
  profile.tile_stats[0].bytes_sent = 400;
  profile.tile_stats[1].bytes_sent = 40;
  const ProfileSummary summary = summarize(profile);
  const ExchangeTraffic& traffic = summary.traffic;
  ASSERT_EQ(traffic.pairs.size(), 2u);
  EXPECT_EQ(traffic.pairs[0].source, 0u);
  EXPECT_EQ(traffic.pairs[0].peer, 64u);
  EXPECT_EQ(traffic.pairs[0].bytes, 400u);
  EXPECT_EQ(traffic.pairs[1].source, 1u);
  EXPECT_EQ(traffic.pairs[1].peer, sim::kMulticastPeer);
  EXPECT_EQ(traffic.pairs[1].bytes, 40u);
  ASSERT_EQ(traffic.cells, 2u);
  EXPECT_EQ(traffic.tiles_per_cell, 64u);
  EXPECT_EQ(traffic.cell_bytes, (std::vector<std::uint64_t>{40, 400 + 2 * 40, 0, 0}));
  // 400 bytes over 1,000 cycles at 4 bytes a cycle, out of tile 0 and into tile 64.
  ASSERT_EQ(summary.supersteps.size(), 1u);
  EXPECT_DOUBLE_EQ(summary.supersteps[0].busiest_send_share, 0.1);
  EXPECT_DOUBLE_EQ(summary.supersteps[0].busiest_receive_share, 0.1);
  const std::string text = query_text(profile, summary, 5);
  EXPECT_THAT(text, HasSubstr("heaviest transfers (2 of 2 source-peer pairs, 440 bytes)"));
  EXPECT_THAT(text, ::testing::ContainsRegex("\n +0  tile 64 +400 +1 +0  fc1\n +1  group 0 \\(3 tiles\\) +40 +1 +0  \\(no op\\)\n"));
  const nlohmann::json report = query_json(profile, summary, 5);
  EXPECT_EQ(report["heaviest_transfers"][1]["to"]["tiles"], (std::vector<std::uint32_t>{0, 65, 66}));
  EXPECT_EQ(report["traffic_matrix"]["bytes"][1], 480);
  EXPECT_EQ(report["heaviest_transfers"][0]["op"], "fc1");
  // fc1's sends, as the op's own figures.
  ASSERT_EQ(summary.ops.size(), 2u);
  const OpTotal& fc1 = summary.ops[0].name == "fc1" ? summary.ops[0] : summary.ops[1];
  EXPECT_EQ(fc1.sends, 1u);
  EXPECT_EQ(fc1.exchange_bytes, 400u);
  EXPECT_EQ(fc1.exchange_cycles, 100u);
}

TEST(QueryReport, AFaultIsNamedFirst) {
  ProfileData profile = two_tile_profile();
  profile.fault = FaultMark{1, 6, 0x4c010, 95, "halt", "tile 1, supervisor, pc 0x4c010 (halt): halt while workers run"};
  const ProfileSummary summary = summarize(profile);
  EXPECT_THAT(query_text(profile, summary, 1),
              HasSubstr("\nFAULT in cycle 95 (the profile runs up to it): tile 1, supervisor, pc 0x4c010 (halt): halt "
                        "while workers run\n"));
  EXPECT_EQ(query_json(profile, summary, 1)["fault"]["cycle"], 95);
  EXPECT_TRUE(query_json(two_tile_profile(), summary, 1)["fault"].is_null());
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
  // Every worker serves a graph op of the MLP, and the ops' figures add up.
  std::uint64_t op_sum = 0, op_macs = 0;
  std::set<std::string> op_names;
  for (const OpTotal& op : summary.ops) {
    op_sum += op.worker_cycles;
    op_macs += op.amp_macs;
    op_names.insert(op.name);
  }
  EXPECT_EQ(op_sum, worker_cycles);
  EXPECT_EQ(op_macs, macs);
  // Every send serves a graph op too (no weights are staged here).
  std::uint64_t op_bytes = 0, bytes_sent = 0;
  for (const OpTotal& op : summary.ops) {
    op_bytes += op.exchange_bytes;
    if (op.name.empty()) {
      EXPECT_EQ(op.sends, 0u) << "a send served no op";
    }
  }
  for (const sim::TileStats& stats : profile.tile_stats) bytes_sent += stats.bytes_sent;
  EXPECT_EQ(op_bytes, bytes_sent);
  EXPECT_GT(op_bytes, 0u);
  EXPECT_FALSE(op_names.contains("")) << "a worker served no op";
  EXPECT_TRUE(op_names.contains("gemm1")) << ::testing::PrintToString(op_names);
  EXPECT_TRUE(op_names.contains("gemm2")) << ::testing::PrintToString(op_names);
  // Supersteps cover the run.
  std::uint64_t superstep_cycles = 0, superstep_workers = 0;
  for (const SuperstepTotal& step : summary.supersteps) {
    superstep_cycles += step.cycles;
    superstep_workers += step.worker_cycles;
  }
  EXPECT_EQ(superstep_cycles, profile.cycles);
  EXPECT_EQ(superstep_workers, worker_cycles);
  EXPECT_EQ(summary.supersteps.size(), summary.syncs + 1);
  // Every byte sent is in the traffic, and no tile beats its bandwidth.
  std::uint64_t pair_bytes = 0, sent = 0;
  for (const PeerTraffic& pair : summary.traffic.pairs) pair_bytes += pair.bytes;
  for (const sim::TileStats& stats : profile.tile_stats) sent += stats.bytes_sent;
  EXPECT_EQ(pair_bytes, sent);
  EXPECT_GT(sent, 0u);
  for (const SuperstepTotal& step : summary.supersteps) {
    EXPECT_LE(step.busiest_send_share, 1.0) << "superstep " << step.index;
    EXPECT_LE(step.busiest_receive_share, 1.0) << "superstep " << step.index;
  }
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
