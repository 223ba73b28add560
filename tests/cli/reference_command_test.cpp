// `tilec reference`, run as a user would.
#include "graph/npy.h"
#include "tilec_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace tilec::cli_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

void expect_one_line_error(const TilecRun& run, const std::string& expected) {
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "tilec: error: " + expected + "\n");
}

nlohmann::json json_of(const TilecRun& run) {
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return nlohmann::json::parse(run.out);
}

TEST(ReferenceCommand, PrintsASummary) {
  const TilecRun run = run_tilec("reference --workload mlp --batch 2 --bias --seed 3");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, StartsWith("reference: mlp fp8 batch 2 blocks 1 bias seed 3\n"));
  EXPECT_THAT(run.out, HasSubstr("\n  x   input      f143(s=-8)[2,8,16]  256 bytes\n"));
  EXPECT_THAT(run.out, HasSubstr("\n  b1  parameter  f16[32]             64 bytes\n"));
  EXPECT_THAT(run.out, HasSubstr("\n  y   output     f16[2,8,16]         min "));
  EXPECT_THAT(run.out, HasSubstr("  rms "));
  EXPECT_THAT(run.out, HasSubstr("\n  16,384 MACs in "));
  EXPECT_EQ(run.err, "");
}

TEST(ReferenceCommand, JsonSummaryIsDeterministicAcrossThreadCounts) {
  const nlohmann::json one = json_of(run_tilec("--threads 1 reference --workload mlp --tokens 300 --json"));
  const nlohmann::json two = json_of(run_tilec("--threads 2 reference --workload mlp --tokens 300 --json"));
  ASSERT_EQ(one["outputs"].size(), 1u);
  const nlohmann::json& y = one["outputs"][0];
  EXPECT_EQ(y["name"], "y");
  EXPECT_EQ(y["type"], "f16[1,300,16]");
  EXPECT_EQ(y["shape"], nlohmann::json::array({1, 300, 16}));
  EXPECT_EQ(y["nonFinite"], 0);
  EXPECT_GT(y["rms"].get<double>(), 0.0);
  EXPECT_EQ(y["xxh64"], two["outputs"][0]["xxh64"]);
  EXPECT_EQ(one["macs"], 2 * 300 * 16 * 32);
  EXPECT_EQ(one["inputBytes"], 300 * 16);
  EXPECT_EQ(one["weightBytes"], 2 * 16 * 32);
  EXPECT_EQ(one["inputs"].size(), 3u);
  // Another seed gives other data.
  EXPECT_NE(json_of(run_tilec("reference --workload mlp --tokens 300 --json --seed 1"))["outputs"][0]["xxh64"],
            y["xxh64"]);
}

TEST(ReferenceCommand, RunsTheSmallVisionTower) {
  const std::string vit = "reference --workload vit --batch 2 --layers 3 --json";
  const nlohmann::json one = json_of(run_tilec("--threads 1 " + vit));
  const nlohmann::json two = json_of(run_tilec("--threads 2 " + vit));
  EXPECT_EQ(one["run"], "vit fp8 batch 2 layers 3 seed 0");
  ASSERT_EQ(one["outputs"].size(), 1u);
  const nlohmann::json& embedding = one["outputs"][0];
  EXPECT_EQ(embedding["name"], "embedding");
  EXPECT_EQ(embedding["type"], "f16[2,16]");
  EXPECT_EQ(embedding["nonFinite"], 0);
  EXPECT_GT(embedding["rms"].get<double>(), 0.1);
  EXPECT_EQ(embedding["xxh64"], two["outputs"][0]["xxh64"]);
  EXPECT_EQ(one["inputs"][0]["name"], "image");
  EXPECT_EQ(one["inputBytes"], 2 * 8 * 8 * 3 * 2);
  const nlohmann::json tokens = json_of(run_tilec("reference --workload vit --no-head --precision fp16 --json"));
  EXPECT_EQ(tokens["outputs"][0]["name"], "tokens");
  EXPECT_EQ(tokens["outputs"][0]["type"], "f16[1,16,16]");
  // The dump holds the workload's own data: the layernorm gains are near 1.
  const std::string dir = fresh_directory("reference_vit_dump");
  const nlohmann::json dumped = json_of(run_tilec(vit + " --dump " + dir));
  EXPECT_EQ(dumped["outputs"][0]["xxh64"], embedding["xxh64"]);
  const graph::Tensor gains = graph::read_npy(dir + "/ln1_gamma.npy", {{3, 16}, {ElementType::F32, 0}});
  for (float gain : gains.to_floats()) EXPECT_NEAR(gain, 1.0f, 0.15f);
  const nlohmann::json again = json_of(run_tilec("reference --json --graph " + dir + "/graph.json --inputs " + dir));
  EXPECT_EQ(again["outputs"][0]["xxh64"], embedding["xxh64"]);
  const nlohmann::json layer = json_of(run_tilec("reference --workload vit-layer --width 32 --json"));
  EXPECT_EQ(layer["run"], "vit-layer fp8 batch 1 seed 0");
  EXPECT_EQ(layer["outputs"][0]["type"], "f16[1,16,32]");
}

// --k-parts: the same graph with its GEMMs summed in parts, compared with
// the plain run: in a stack of four FP8 blocks some outputs move.
TEST(ReferenceCommand, KPartsReportsTheDriftOfAnotherSummationOrder) {
  const std::string mlp = "reference --workload mlp --tokens 128 --width 512 --hidden 1024 --json ";
  const nlohmann::json deep = json_of(run_tilec(mlp + "--blocks 4 --k-parts 8"));
  const nlohmann::json& drift = deep["orderDrift"];
  EXPECT_EQ(drift["kParts"], 8);
  EXPECT_EQ(drift["elements"], 128 * 512);
  EXPECT_GT(drift["maximumAbsoluteError"].get<double>(), 0.0);
  EXPECT_FALSE(json_of(run_tilec(mlp))["orderDrift"].is_object());
  const TilecRun text = run_tilec("reference --workload mlp --k-parts 2");
  EXPECT_THAT(text.out, HasSubstr("\n  with every GEMM's K summed in 2 parts: "));
  EXPECT_THAT(text.out, HasSubstr(" of 128 output elements beyond 0.03 + 0.05 x |reference|, max abs difference "));
}

TEST(ReferenceCommand, DumpedGraphAndDataRunAgain) {
  const std::string dir = fresh_directory("reference_dump");
  const nlohmann::json first =
      json_of(run_tilec("reference --workload mlp --blocks 3 --precision fp16 --json --dump " + dir));
  for (const char* file : {"x.npy", "W1.npy", "W2.npy", "y.npy", "manifest.json", "graph.json"})
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + file)) << file;
  const nlohmann::json manifest = nlohmann::json::parse(file_text(dir + "/manifest.json"));
  EXPECT_EQ(manifest["tensors"].size(), 4u);
  const nlohmann::json again = json_of(run_tilec("reference --json --graph " + dir + "/graph.json --inputs " + dir));
  EXPECT_EQ(again["outputs"][0]["xxh64"], first["outputs"][0]["xxh64"]);
  EXPECT_EQ(again["run"], dir + "/graph.json");
}

TEST(ReferenceCommand, BadNpyHeaderIsOneLine) {
  const std::string dir = fresh_directory("reference_bad_npy");
  ASSERT_EQ(run_tilec("reference --workload mlp --dump " + dir).exit_code, 0);
  std::string bytes = file_text(dir + "/x.npy");
  bytes.replace(bytes.find("descr"), 5, "DESCR");
  write_file(dir + "/x.npy", bytes);
  const TilecRun run = run_tilec("reference --graph " + dir + "/graph.json --inputs " + dir);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, StartsWith("tilec: error: " + dir + "/x.npy"));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

TEST(ReferenceCommand, MissingInputTensorIsOneLine) {
  const std::string dir = fresh_directory("reference_missing");
  ASSERT_EQ(run_tilec("reference --workload mlp --dump " + dir).exit_code, 0);
  std::filesystem::remove(dir + "/W2.npy");
  const TilecRun run = run_tilec("reference --graph " + dir + "/graph.json --inputs " + dir);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("W2"));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

TEST(ReferenceCommand, AnUnwritableDumpIsAFailure) {
  // The inputs were fine; writing the results was not: exit 1.
  const std::string dir = fresh_directory("reference_unwritable");
  std::filesystem::create_directory(dir + "/graph.json");
  const TilecRun run = run_tilec("reference --workload mlp --dump " + dir);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err, "tilec: error: " + dir + "/graph.json: cannot open the file for writing\n");
}

TEST(ReferenceCommand, OutOfRangeFlagsAreOneLine) {
  const std::string run = "reference --workload siglip-mlp ";
  expect_one_line_error(run_tilec(run + "--batch 0"), "--batch 0: must be an integer >= 1");
  expect_one_line_error(run_tilec(run + "--batch two"), "--batch two: must be an integer >= 1");
  expect_one_line_error(run_tilec(run + "--blocks 0"), "--blocks 0: must be an integer >= 1");
  expect_one_line_error(run_tilec(run + "--precision fp4"), "--precision fp4: must be fp8, fp16 or fp32");
  expect_one_line_error(run_tilec(run + "--fp8-scale big"), "--fp8-scale big: must be an integer or auto");
  expect_one_line_error(run_tilec(run + "--fp8-scale 99"), "workload: FP8 scale 99 is beyond +-64");
  expect_one_line_error(run_tilec(run + "--precision fp16 --fp8-scale 2"),
                        "workload: an FP8 scale applies to fp8 precision only, not fp16");
  expect_one_line_error(run_tilec(run + "--seed -1"), "--seed -1: must be an integer >= 0");
}

TEST(ReferenceCommand, UsageErrorsAreOneLine) {
  expect_one_line_error(run_tilec("reference"), "reference: give --workload NAME or --graph FILE (one of them)");
  expect_one_line_error(run_tilec("reference --graph g.json"),
                        "--inputs: a GRAPH file needs --inputs DIR with its inputs and parameters, or --seed N for "
                        "generated data");
  expect_one_line_error(run_tilec("reference --graph g.json --inputs d --seed 2"),
                        "--seed: a GRAPH file takes its data from --inputs DIR or --seed N, not both");
  expect_one_line_error(run_tilec("reference --workload mlp --inputs d"), "--inputs: applies to --graph only");
  expect_one_line_error(run_tilec("reference --workload mlp --intermediates"), "--intermediates: needs --dump DIR");
  expect_one_line_error(run_tilec("reference --workload mlp --k-parts 1"), "--k-parts 1: must be an integer from 2 to 64");
  expect_one_line_error(run_tilec("reference --workload mlp --k-parts x"), "--k-parts x: must be an integer from 2 to 64");
  expect_one_line_error(run_tilec("reference --graph g.json --inputs d --precision fp16"),
                        "--precision: applies to --workload only");
}

}  // namespace
}  // namespace tilec::cli_testing
