// The Chrome trace export parses as JSON and holds every event once, with
// its tile, context, name and time.
#include "profile_test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

namespace tilec::profile {
namespace {

TEST(ChromeTrace, HoldsEveryEventOfARealRun) {
  const ProfileData& profile = testing::mlp_profile();
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace(profile));
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
      if (event.kind == sim::ProfileEventKind::WorkerKernel && event.op != sim::kNoOpLabel)
        EXPECT_EQ(out["args"]["op"], profile.events.labels[event.op]);
    }
  }
}

TEST(ChromeTrace, EscapesNames) {
  ProfileData profile = testing::blank_profile(1, 100);
  profile.name = "a \"quoted\"\nname";
  profile.events.labels[4] = "k\\1\"";
  profile.events.tiles[0] = {testing::kernel(0, 0, 10), testing::send(10, 20), testing::sync_wait(20, 90, 0),
                             testing::halt(90)};
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace(profile));
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

}  // namespace
}  // namespace tilec::profile
