// Every graph in examples/ compiles, runs and matches the host reference,
// as the examples' README shows it.
#include "tilec_process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace tilec::cli_testing {
namespace {

TEST(Examples, EveryGraphRunsAndPasses) {
  int graphs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TILEC_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".json") continue;
    ++graphs;
    const TilecRun run = run_tilec("run " + entry.path().string() + " --seed 1 --target ipu21:64 --json");
    ASSERT_EQ(run.exit_code, 0) << entry.path() << ": " << run.err;
    EXPECT_EQ(nlohmann::json::parse(run.out)["status"], "pass") << entry.path();
  }
  EXPECT_GE(graphs, 1);
}

}  // namespace
}  // namespace tilec::cli_testing
