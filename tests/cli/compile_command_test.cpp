// `tilec compile`, run as a user would: packages written, summaries, the
// planner's diagnostic, bad input.
#include "compiler/compile.h"
#include "graph/json_format.h"
#include "graph/workloads.h"
#include "package/package_file.h"
#include "support/duration.h"
#include "tilec_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace tilec::cli_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kSmallMlp = "--workload mlp --tokens 40 --width 32 --hidden 64 --target ipu21:16";

void expect_one_line_error(const TilecRun& run, int exit_code, const std::string& expected) {
  EXPECT_EQ(run.exit_code, exit_code);
  EXPECT_EQ(run.err, "tilec: error: " + expected + "\n");
  EXPECT_EQ(run.out, "");
}

TEST(CompileCommand, WritesAPackageAndSummarises) {
  const std::string dir = fresh_directory("compile_writes");
  const TilecRun run = run_tilec("compile " + kSmallMlp + " -o " + dir + "/model.tpk");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, StartsWith("compiled fp8-b1-n1-default: mlp 40x32x64 for ipu21:16 in "));
  EXPECT_THAT(run.out, HasSubstr("\n  plan      "));
  EXPECT_THAT(run.out, HasSubstr(" bytes per tile of a budget of 638,976\n"));
  EXPECT_THAT(run.out, HasSubstr("\n  package   " + dir + "/model.tpk, "));
  const package::Package package = package::read_package(dir + "/model.tpk");
  EXPECT_EQ(package.target, "ipu21:16");
  EXPECT_EQ(package.tiles.size(), 16u);
  EXPECT_EQ(run.err, "");
}

TEST(CompileCommand, JsonSummaryHasPlanEstimatePeakStagesAndSize) {
  const std::string dir = fresh_directory("compile_json");
  const TilecRun run = run_tilec("compile " + kSmallMlp + " --budget-kib 12 --json -o " + dir + "/model.tpk");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json summary = nlohmann::json::parse(run.out);
  EXPECT_EQ(summary["case"], "fp8-b1-n1-12k");
  EXPECT_EQ(summary["budget_kib"], 12);
  EXPECT_FALSE(summary["plan"].get<std::string>().empty());
  EXPECT_GT(summary["estimatedCycles"].get<double>(), 0);
  EXPECT_LE(summary["peakTileBytes"].get<std::uint32_t>(), 12u * 1024);
  EXPECT_EQ(summary["packageBytes"].get<std::uintmax_t>(), std::filesystem::file_size(dir + "/model.tpk"));
  EXPECT_GT(summary["searchEstimatedCycles"].get<double>(), 0);
  EXPECT_EQ(summary["stages"].size(), compiler::kStages.size());
  for (const auto& [stage, text] : summary["stages"].items())
    EXPECT_TRUE(parse_duration(text.get<std::string>()).has_value()) << stage;
  EXPECT_EQ(summary["inputBytes"], 40 * 32);
}

TEST(CompileCommand, WritesToADevice) {
  // /dev/null has no size to ask of it: the summary gives the bytes written.
  const TilecRun run = run_tilec("compile " + kSmallMlp + " --json -o /dev/null");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json summary = nlohmann::json::parse(run.out);
  const TilecRun encoded = run_tilec("compile " + kSmallMlp + " --json");
  ASSERT_EQ(encoded.exit_code, 0) << encoded.err;
  EXPECT_GT(summary["packageBytes"].get<std::uintmax_t>(), 0u);
  EXPECT_EQ(summary["packageBytes"], nlohmann::json::parse(encoded.out)["packageBytes"]);
}

TEST(CompileCommand, CompilesAGraphFile) {
  const std::string dir = fresh_directory("compile_graph");
  graph::save_graph_file(dir + "/mlp.json", graph::build_workload("mlp", graph::MlpOptions{}));
  const TilecRun run = run_tilec("compile " + dir + "/mlp.json --target ipu21:16 --budget-kib 64 --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json summary = nlohmann::json::parse(run.out);
  EXPECT_EQ(summary["case"], "mlp-64k");
  EXPECT_EQ(summary["package"], nullptr);
  EXPECT_GT(summary["packageBytes"].get<int>(), 0);
}

TEST(CompileCommand, NoFittingPlanIsTheCompilersOneLineDiagnostic) {
  const TilecRun run = run_tilec("compile " + kSmallMlp + " --budget-kib 4");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, StartsWith("tilec: error: compile: no plan fits the budget of 4096 bytes per tile: "));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

TEST(CompileCommand, BadInputIsOneLine) {
  expect_one_line_error(run_tilec("compile " + kSmallMlp + " --budget-kib x"), 2,
                        "--budget-kib x: must be an integer >= 0");
  expect_one_line_error(run_tilec("compile " + kSmallMlp + " --budget-kib 625"), 2,
                        "--budget-kib 625: is more than a tile's 624 KiB");
  expect_one_line_error(run_tilec("compile --workload mlp --target ipu22"), 2,
                        "target: unknown target 'ipu22' (presets: ipu21, bow, ipu2, ipu1; or PRESET:N, PRESET:field=value,..., or a machine file FILE.json)");
  expect_one_line_error(run_tilec("compile"), 2, "compile: give a GRAPH file or --workload NAME (one of them)");
  expect_one_line_error(run_tilec("compile g.json --workload mlp"), 2,
                        "compile: give a GRAPH file or --workload NAME (one of them)");
  const TilecRun missing = run_tilec("compile /nonexistent/g.json");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, StartsWith("tilec: error: /nonexistent/g.json"));
}

// The device has no OCP FP8 arithmetic: such a graph is refused before any
// work, by compile and by run alike.
TEST(CompileCommand, OcpFp8GraphsAreRefused) {
  const std::string dir = fresh_directory("compile_ocp");
  write_file(dir + "/e4m3.json", R"({"format": "tilec-graph", "version": 1,
    "inputs": [{"name": "x", "type": "e4m3", "shape": [1, 16, 32]}],
    "parameters": [{"name": "W", "type": "e4m3", "shape": [32, 32]}],
    "ops": [{"op": "gemm", "name": "g", "a": "x", "b": "W", "type": "f32"}],
    "outputs": [{"name": "y", "value": "g"}]})");
  const std::string refusal = "tensor 'x': is e4m3, which the device cannot compute: its FP8 types are f143 and f152";
  expect_one_line_error(run_tilec("compile " + dir + "/e4m3.json --target ipu21:16"), 2, refusal);
  expect_one_line_error(run_tilec("run " + dir + "/e4m3.json --seed 1 --target ipu21:16"), 2, refusal);
}

}  // namespace
}  // namespace tilec::cli_testing

namespace tilec::cli_testing {
namespace {

TEST(CompileCommand, DumpsTheIrAfterAStage) {
  const TilecRun mid = run_tilec("compile " + kSmallMlp + " --dump-after construct_mid");
  ASSERT_EQ(mid.exit_code, 0) << mid.err;
  EXPECT_THAT(mid.out, StartsWith("mid: "));
  EXPECT_THAT(mid.out, HasSubstr(" gemm gemm1 "));
  const TilecRun code = run_tilec("compile " + kSmallMlp + " --dump-after emit_tile_code");
  ASSERT_EQ(code.exit_code, 0) << code.err;
  EXPECT_THAT(code.out, HasSubstr("halt"));
  const TilecRun wrong = run_tilec("compile " + kSmallMlp + " --dump-after no_such_stage");
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_THAT(wrong.err, StartsWith("tilec: error: --dump-after: unknown stage 'no_such_stage' (the stages are "));
}

TEST(CompileCommand, OneKPartKeepsEverySumInOneAccumulator) {
  const TilecRun run = run_tilec("compile " + kSmallMlp + " --max-k-parts 1 --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json summary = nlohmann::json::parse(run.out);
  const std::string plan = summary["plan"];
  EXPECT_THAT(plan, HasSubstr("gemm1 "));
  for (std::size_t at = plan.find('x'); at != std::string::npos; at = plan.find('x', at + 1))
    if (std::isdigit(static_cast<unsigned char>(plan[at - 1]))) { EXPECT_EQ(plan[at + 1], '1') << plan; }
  EXPECT_EQ(run_tilec("compile " + kSmallMlp + " --max-k-parts 0").exit_code, 2);
}

}  // namespace
}  // namespace tilec::cli_testing
