// The Chrome trace export parses as JSON and holds every event once, with
// its tile, context, name and time.
#include "profile_test_support.h"
#include "support/error.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

namespace tilec::profile {
namespace {

TEST(ChromeTrace, HoldsEveryEventOfARealRun) {
  const ProfileData& profile = testing::mlp_profile();
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace(profile).json);
  ASSERT_TRUE(trace["traceEvents"].is_array());
  EXPECT_EQ(trace["otherData"]["cycles"], profile.cycles);

  std::size_t spans = 0, halts = 0;
  for (const auto& events : profile.events.tiles)
    for (const sim::ProfileEvent& event : events) (event.kind == sim::ProfileEventKind::Halt ? halts : spans) += 1;

  std::size_t complete = 0, instant = 0;
  std::map<int, std::string> process_names;
  std::set<std::pair<int, int>> named_threads;
  std::map<int, std::vector<nlohmann::json>> by_process;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    const std::string phase = event["ph"];
    const int pid = event["pid"].get<int>();
    const int tid = event.contains("tid") ? event["tid"].get<int>() : -1;
    if (phase == "M" && event["name"] == "process_name") process_names[pid] = event["args"]["name"];
    if (phase == "M" && event["name"] == "thread_name") named_threads.insert({pid, tid});
    if (phase == "X") ++complete;
    if (phase == "i") ++instant;
    if (phase == "X" || phase == "i") {
      by_process[pid].push_back(event);
      EXPECT_TRUE(named_threads.count({pid, tid})) << event.dump();
    }
  }
  EXPECT_EQ(complete, spans);
  EXPECT_EQ(instant, halts);
  EXPECT_GT(spans, 0u);

  const double microseconds_per_cycle = 1.0 / (profile.clock_ghz * 1e3);
  for (std::uint32_t tile = 0; tile < profile.tiles; ++tile) {
    const std::vector<sim::ProfileEvent>& events = profile.events.tiles[tile];
    if (events.empty()) {
      EXPECT_FALSE(process_names.count(tile + 1));
      continue;
    }
    EXPECT_EQ(process_names[tile + 1], fmt::format("tile {}", tile));
    const std::vector<nlohmann::json>& exported = by_process[tile + 1];
    ASSERT_EQ(exported.size(), events.size()) << "tile " << tile;
    for (std::size_t i = 0; i < events.size(); ++i) {
      const sim::ProfileEvent& event = events[i];
      const nlohmann::json& out = exported[i];
      EXPECT_EQ(out["tid"], event.context + 1);
      EXPECT_DOUBLE_EQ(out["ts"].get<double>(), static_cast<double>(event.begin) * microseconds_per_cycle);
      if (event.kind == sim::ProfileEventKind::Halt) {
        EXPECT_EQ(out["name"], "halt");
        continue;
      }
      EXPECT_EQ(out["name"], profile.events.labels[event.label]);
      EXPECT_DOUBLE_EQ(out["dur"].get<double>(), static_cast<double>(event.end - event.begin) * microseconds_per_cycle);
      EXPECT_EQ(out["args"]["begin_cycle"], event.begin);
      EXPECT_EQ(out["args"]["end_cycle"], event.end);
      if (event.kind == sim::ProfileEventKind::WorkerKernel && event.op != sim::kNoOpLabel) {
        EXPECT_EQ(out["args"]["op"], profile.events.labels[event.op]);
      }
    }
  }
}

TEST(ChromeTrace, EscapesNames) {
  ProfileData profile = testing::blank_profile(1, 100);
  profile.name = "a \"quoted\"\nname";
  profile.events.labels[4] = "k\\1\"";
  profile.events.tiles[0] = {testing::kernel(0, 0, 10), testing::send(10, 20), testing::sync_wait(20, 90, 0),
                             testing::halt(90)};
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace(profile).json);
  EXPECT_EQ(trace["otherData"]["profile"], profile.name);
  bool found = false;
  for (const nlohmann::json& event : trace["traceEvents"])
    if (event["ph"] == "X" && event["cat"] == "kernel") {
      EXPECT_EQ(event["name"], "k\\1\"");
      EXPECT_EQ(event["args"]["entry"], "0x4c100");
      found = true;
    } else if (event["ph"] == "X" && event["cat"] == "exchange") {
      EXPECT_EQ(event["args"]["bytes"], 40);
    } else if (event["ph"] == "X" && event["cat"] == "sync") {
      EXPECT_EQ(event["args"]["sync"], 0);
    }
  EXPECT_TRUE(found);
}

// Only the chosen tiles, and only events that overlap the chosen cycles,
// clipped to them.
TEST(ChromeTrace, TilesAndCyclesCutItDown) {
  const ProfileData& profile = testing::mlp_profile();
  ChromeTraceOptions options;
  options.tiles = {3, 0, 3};
  options.begin = profile.cycles / 4;
  options.end = profile.cycles / 2;
  const ChromeTrace trace = chrome_trace(profile, options);
  EXPECT_EQ(trace.tracks, ChromeTraceOptions::Tracks::Tiles);
  const double to_micros = 1.0 / (profile.clock_ghz * 1e3);
  std::map<int, std::size_t> spans;
  const nlohmann::json parsed = nlohmann::json::parse(trace.json);
  for (const nlohmann::json& event : parsed["traceEvents"]) {
    const int pid = event["pid"];
    EXPECT_TRUE(pid == 1 || pid == 4) << event.dump();
    if (event["ph"] != "X") continue;
    ++spans[pid];
    EXPECT_GE(event["ts"].get<double>(), static_cast<double>(options.begin) * to_micros - 1e-9);
    EXPECT_LE(event["ts"].get<double>() + event["dur"].get<double>(), static_cast<double>(options.end) * to_micros + 1e-9);
  }
  for (std::uint32_t tile : {0u, 3u}) {
    std::size_t overlapping = 0;
    for (const sim::ProfileEvent& event : profile.events.tiles[tile])
      if (event.kind != sim::ProfileEventKind::Halt && event.begin < options.end && event.end > options.begin) ++overlapping;
    EXPECT_GT(overlapping, 0u);
    EXPECT_EQ(spans[static_cast<int>(tile) + 1], overlapping) << "tile " << tile;
  }
}

TEST(ChromeTrace, BadTilesAndCyclesAreBadInput) {
  const ProfileData& profile = testing::mlp_profile();
  ChromeTraceOptions options;
  options.tiles = {16};
  EXPECT_THROW(chrome_trace(profile, options), Error);
  options.tiles = {};
  options.begin = profile.cycles;
  EXPECT_THROW(chrome_trace(profile, options), Error);
}

// Two columns of 64 tiles; tile 0 computes for half the run on one worker,
// tile 64 sends for a tenth of it.
TEST(ChromeTrace, ColumnsCountTheirTilesInEachPhase) {
  ProfileData profile = testing::blank_profile(128, 100);
  profile.events.tiles[0] = {testing::kernel(0, 0, 50), testing::halt(100)};
  profile.events.tiles[64] = {testing::send(0, 10), testing::halt(100)};
  profile.tile_stats[0].halt_cycle = profile.tile_stats[64].halt_cycle = 100;
  ChromeTraceOptions options;
  options.tracks = ChromeTraceOptions::Tracks::Columns;
  const ChromeTrace trace = chrome_trace(profile, options);
  EXPECT_EQ(trace.tracks, ChromeTraceOptions::Tracks::Columns);
  std::map<std::pair<int, std::string>, std::vector<nlohmann::json>> counters;
  std::set<std::string> processes;
  const nlohmann::json parsed = nlohmann::json::parse(trace.json);
  for (const nlohmann::json& event : parsed["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "process_name") processes.insert(event["args"]["name"]);
    if (event["ph"] == "C") counters[{event["pid"].get<int>(), event["name"].get<std::string>()}].push_back(event["args"]);
  }
  EXPECT_EQ(processes, (std::set<std::string>{"column 0 (tiles 0-63, 64 exported)", "column 1 (tiles 64-127, 64 exported)"}));
  // One sample a cycle for a 100-cycle run.
  const std::vector<nlohmann::json>& first = counters[std::make_pair(1, std::string("tiles"))];
  ASSERT_EQ(first.size(), 100u);
  EXPECT_EQ(first[10]["compute"], 1.0);
  EXPECT_EQ(first[10]["idle"], 63.0);
  EXPECT_EQ(first[60]["compute"], 0.0);
  const std::vector<nlohmann::json>& workers = counters[std::make_pair(1, std::string("busy workers"))];
  const std::vector<nlohmann::json>& second = counters[std::make_pair(2, std::string("tiles"))];
  ASSERT_EQ(workers.size(), 100u);
  ASSERT_EQ(second.size(), 100u);
  EXPECT_EQ(workers[10]["workers"], 1.0);
  EXPECT_EQ(second[5]["exchange"], 1.0);
  EXPECT_EQ(second[50]["exchange"], 0.0);
}

// Two plan groups of 48 tiles and 32 tiles past them: a process each, the
// phases of their tiles counted as for columns.
TEST(ChromeTrace, GroupsFollowThePlansTileGroups) {
  ProfileData profile = testing::blank_profile(128, 100);
  profile.schedule = package::Schedule{3, 1, 2, 48, "", -1, -1, 0};
  profile.events.tiles[50] = {testing::kernel(0, 0, 50), testing::halt(100)};
  profile.tile_stats[50].halt_cycle = 100;
  ChromeTraceOptions options;
  options.tracks = ChromeTraceOptions::Tracks::Groups;
  const ChromeTrace trace = chrome_trace(profile, options);
  EXPECT_EQ(trace.tracks, ChromeTraceOptions::Tracks::Groups);
  std::set<std::string> processes;
  std::vector<nlohmann::json> second;
  const nlohmann::json parsed = nlohmann::json::parse(trace.json);
  for (const nlohmann::json& event : parsed["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "process_name") processes.insert(event["args"]["name"]);
    if (event["ph"] == "C" && event["pid"] == 2 && event["name"] == "tiles") second.push_back(event["args"]);
  }
  EXPECT_EQ(processes, (std::set<std::string>{"group 0 (tiles 0-47, 48 exported)", "group 1 (tiles 48-95, 48 exported)",
                                              "outside the plan's groups (tiles 96-127, 32 exported)"}));
  ASSERT_EQ(second.size(), 100u);
  EXPECT_EQ(second[10]["compute"], 1.0);
  EXPECT_EQ(second[10]["idle"], 47.0);
  // Without a schedule there are no groups to follow.
  profile.schedule = package::Schedule{};
  EXPECT_THROW(chrome_trace(profile, options), Error);
}

// Auto keeps a track per tile until the output passes its limit.
TEST(ChromeTrace, AutoTurnsToColumnsPastItsLimit) {
  const ProfileData& profile = testing::mlp_profile();
  ChromeTraceOptions options;
  EXPECT_EQ(chrome_trace(profile, options).tracks, ChromeTraceOptions::Tracks::Tiles);
  options.auto_limit_bytes = 1000;
  const ChromeTrace trace = chrome_trace(profile, options);
  EXPECT_EQ(trace.tracks, ChromeTraceOptions::Tracks::Columns);
  EXPECT_NO_THROW({ const nlohmann::json parsed = nlohmann::json::parse(trace.json); });
}

}  // namespace
}  // namespace tilec::profile
