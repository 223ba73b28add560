// `tilec bench --micro`: the microbenchmarks beside the machine's figures,
// as a table or JSON, on one machine or several, and their errors.
#include "tilec_process.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace tilec::cli_testing {
namespace {

TEST(MicroCommand, PrintsEachMeasuredFigureBesideTheMachines) {
  const TilecRun run = run_tilec("bench --micro --target ipu1 --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  EXPECT_NE(run.out.find("# Microbenchmarks on ipu1"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("| synchronization | global sync, seen by tile 0 of 1,216 | 600 | 600 | cycles | equal |"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("17 of 17 figures equal the machine's."), std::string::npos) << run.out;
}

TEST(MicroCommand, JsonCoversEveryMachineOfTheGrid) {
  const TilecRun run = run_tilec("bench --micro --json --target ipu21:16 --vary sync-cycles=600,1200");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("micro ipu21:16: synchronization"), std::string::npos) << run.err;
  const nlohmann::json reports = nlohmann::json::parse(run.out);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[1]["machine"], "ipu21:tiles=16,sync-cycles=1200");
  EXPECT_EQ(reports[1]["figures"][0]["measured"], 1200);
  for (const nlohmann::json& report : reports)
    for (const nlohmann::json& figure : report["figures"]) EXPECT_TRUE(figure["equal"].get<bool>()) << figure;
}

TEST(MicroCommand, AFigureThatDiffersExitsOne) {
  const std::string folder = fresh_directory("micro_sources");
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TILEC_SOURCE_DIR) + "/bench/micro"))
    std::filesystem::copy_file(entry.path(), folder + "/" + entry.path().filename().string());
  // One more issue inside the sync's bracket: the measured sync is 6 cycles long.
  std::string text = file_text(folder + "/sync_cost.s");
  text.replace(text.find("  sync\n"), 7, "  sync\n  nop\n");
  write_file(folder + "/sync_cost.s", text);
  const TilecRun run = run_tilec(fmt::format("bench --micro --quiet --target ipu21:8 --micro-dir {}", folder));
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.out.find("| 606 | 600 | cycles | DIFFERS |"), std::string::npos) << run.out;
  EXPECT_NE(run.err.find("2 of 14 measured figures differ"), std::string::npos) << run.err;
}

TEST(MicroCommand, BadFlagsAndSourcesAreOneLine) {
  expect_error_line_holding(run_tilec("bench --micro --micro-dir /nonexistent/micro"), "/nonexistent/micro/");
  expect_error_line_holding(run_tilec("bench --json"), "--json: goes with --micro");
  expect_error_line_holding(run_tilec("bench --micro --target ipu21:tiles=0"), "tiles");
  const std::string folder = fresh_directory("micro_bad_source");
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TILEC_SOURCE_DIR) + "/bench/micro"))
    std::filesystem::copy_file(entry.path(), folder + "/" + entry.path().filename().string());
  write_file(folder + "/worker_start.s", ".text\nmain:\n  halt $m1\n");
  expect_error_line_holding(run_tilec(fmt::format("bench --micro --quiet --micro-dir {}", folder)),
                            "worker_start.s:3:");
}

}  // namespace
}  // namespace tilec::cli_testing
