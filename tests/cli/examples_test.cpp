// Every graph in examples/ compiles, runs on its target and matches the host
// reference, as the examples' README shows it.
#include "tilec_process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

namespace tilec::cli_testing {
namespace {

struct Example {
  std::string file;    // in examples/
  std::string target;  // what it runs on
  // The `graph write` flags that give the file, or empty. A written file
  // must stay what they give, and runs on the data --params writes beside
  // it (the workload's data rules); any other runs on --seed 1 data.
  std::string written_by;
};

const std::vector<Example>& examples() {
  static const std::vector<Example> table = {
      {"encoder_block.json", "ipu21:64", ""},
      // The full-size layer fits only the whole chip. With --seed data its
      // layernorm gains are near 0 and every query attends almost uniformly,
      // so a device that ignored q and k would pass: it runs on its own data.
      {"siglip_encoder_layer.json", "ipu21", "--workload siglip-vit-layer --precision fp16"},
  };
  return table;
}

std::string example_path(const std::string& file) { return std::string(TILEC_SOURCE_DIR) + "/examples/" + file; }

TEST(Examples, EveryGraphHasATarget) {
  std::set<std::string> listed;
  for (const Example& example : examples()) {
    listed.insert(example.file);
    EXPECT_TRUE(std::filesystem::exists(example_path(example.file))) << example.file;
  }
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TILEC_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".json") continue;
    EXPECT_TRUE(listed.contains(entry.path().filename().string()))
        << entry.path() << " has no target in tests/cli/examples_test.cpp";
  }
}

// One test per example, so that ctest runs them side by side.
void run_example(const std::string& file) {
  const auto found = std::find_if(examples().begin(), examples().end(),
                                  [&](const Example& example) { return example.file == file; });
  ASSERT_NE(found, examples().end()) << file;
  const Example& example = *found;
  const std::string path = example_path(example.file);
  std::string data = "--seed 1";
  if (!example.written_by.empty()) {
    const std::string dir = fresh_directory("example_" + std::filesystem::path(example.file).stem().string());
    const TilecRun write = run_tilec("graph write " + example.written_by + " -o " + dir + "/graph.json --params " + dir + "/data");
    ASSERT_EQ(write.exit_code, 0) << write.err;
    ASSERT_TRUE(file_text(dir + "/graph.json") == file_text(path))
        << example.file << " is not what `tilec graph write " << example.written_by << "` writes";
    data = "--inputs " + dir + "/data";
  }
  const TilecRun run = run_tilec("run " + path + " " + data + " --target " + example.target + " --json");
  ASSERT_EQ(run.exit_code, 0) << example.file << ": " << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report["status"], "pass") << example.file;
  // The device's bits are the plan-order reference's, every element.
  EXPECT_EQ(report["bitExact"], true) << example.file;
  EXPECT_EQ(report["differingElements"], 0) << example.file;
  EXPECT_EQ(report["target"], example.target) << example.file;
}

TEST(Examples, EncoderBlockRunsAndPasses) { run_example("encoder_block.json"); }

TEST(Examples, SiglipEncoderLayerRunsAndPassesOnTheFullChip) { run_example("siglip_encoder_layer.json"); }

}  // namespace
}  // namespace tilec::cli_testing
