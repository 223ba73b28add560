// `tilec run`, run as a user would: built-in data or .npy files, compiled
// or from a package; the report object; exit codes 0, 1 and 2.
#include "graph/json_format.h"
#include "graph/npy.h"
#include "graph/workloads.h"
#include "package/package_file.h"
#include "support/number_text.h"
#include "tilec_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace tilec::cli_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kSmallMlp = "--workload mlp --tokens 40 --width 32 --hidden 64";

void expect_one_line(const TilecRun& run, int exit_code, const std::string& start) {
  EXPECT_EQ(run.exit_code, exit_code);
  EXPECT_THAT(run.err, StartsWith("tilec: error: " + start));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

// y = gelu(x W1) W2 in FP16, with W1 and W2 both [256, 256]; `swapped`
// multiplies by W2 first instead: same inputs, other numbers.
std::string square_mlp(bool swapped) {
  const std::string first = swapped ? "W2" : "W1", second = swapped ? "W1" : "W2";
  return R"({"format": "tilec-graph", "version": 1,
  "inputs": [{"name": "x", "type": "f16", "shape": [1, 8, 256]}],
  "parameters": [{"name": "W1", "type": "f16", "shape": [256, 256]}, {"name": "W2", "type": "f16", "shape": [256, 256]}],
  "ops": [{"op": "gemm", "name": "gemm1", "a": "x", "b": ")" + first + R"(", "type": "f16"},
          {"op": "gelu", "name": "gelu", "x": "gemm1", "approximation": "tanh", "type": "f16"},
          {"op": "gemm", "name": "gemm2", "a": "gelu", "b": ")" + second + R"(", "type": "f16"}],
  "outputs": [{"name": "y", "value": "gemm2"}]})";
}

// A graph file and a directory of its inputs and parameters.
std::string graph_with_data(const std::string& name, bool swapped = false) {
  const std::string dir = fresh_directory(name);
  write_file(dir + "/graph.json", square_mlp(swapped));
  const graph::Graph graph = graph::load_graph_file(dir + "/graph.json");
  graph::TensorMap data = graph::generate_data(graph, 0);
  graph::write_tensor_dir(dir, {{"x", data.at("x")}}, graph::TensorRole::Input);
  graph::write_tensor_dir(dir, {{"W1", data.at("W1")}, {"W2", data.at("W2")}}, graph::TensorRole::Parameter);
  return dir;
}

TEST(RunCommand, JsonIsOneCaseOfTheReportWithTheRunsFigures) {
  const TilecRun run = run_tilec("run " + kSmallMlp + " --target ipu21:16 --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  for (const char* key : {"case", "batch", "blocks", "precision", "budget_kib", "status", "returncode", "wall_seconds",
                          "stages", "cycles", "maximumAbsoluteError", "weightBytes", "inputBytes", "diagnostic",
                          "renderer_cycles", "estimatedCycles", "efficiency", "peakTileBytes", "packageBytes",
                          "simulateSeconds", "compileSeconds"})
    EXPECT_TRUE(report.contains(key)) << key;
  EXPECT_EQ(report["case"], "fp8-b1-n1-default");
  EXPECT_EQ(report["status"], "pass");
  EXPECT_EQ(report["returncode"], 0);
  EXPECT_LE(report["maximumAbsoluteError"].get<double>(), 0.03);
  // 40 x 32 x 64 x 2 MACs at 128 FP8 MACs per tile per cycle on 16 tiles.
  EXPECT_NEAR(report["efficiency"].get<double>(), 40.0 * 32 * 64 * 2 / (128 * 16) / report["cycles"].get<double>(),
              1e-12);
  EXPECT_EQ(report["inputBytes"], 40 * 32);
  // The run is the process's only case: its peak resident memory, at least
  // the package and the 16 tiles' memories it held, and under a gigabyte.
  EXPECT_GT(report["peakRssBytes"].get<std::uint64_t>(), report["packageBytes"].get<std::uint64_t>());
  EXPECT_LT(report["peakRssBytes"].get<std::uint64_t>(), 1000000000u);
  EXPECT_EQ(run.err, "");
}

TEST(RunCommand, SummaryAndOutputs) {
  const std::string dir = fresh_directory("run_outputs");
  const TilecRun run = run_tilec("run " + kSmallMlp + " --target ipu21:16 --outputs " + dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, StartsWith("run fp8-b1-n1-default: mlp 40x32x64 on ipu21:16\n"));
  EXPECT_THAT(run.out, HasSubstr("\n  simulate  "));
  EXPECT_THAT(run.out, HasSubstr("every element within 0.03 + 0.05 x |reference|\n"));
  EXPECT_THAT(run.out, HasSubstr("\n  status    pass in "));
  EXPECT_THAT(run.out, ::testing::ContainsRegex("\n  status    pass in [^\n]*, host peak RSS [0-9.]+ [kMG]B\n"));
  const graph::Tensor y = graph::read_npy_as_stored(dir + "/y.npy");
  EXPECT_EQ(y.type.shape, (graph::Shape{1, 40, 32}));
}

TEST(RunCommand, WritesTheProfileOfAPassingRun) {
  const std::string dir = fresh_directory("run_profile");
  const TilecRun run = run_tilec("run " + kSmallMlp + " --target ipu21:16 --json --profile " + dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report["profile"], dir + "/profile.html");
  EXPECT_THAT(file_text(dir + "/profile.html"), StartsWith("<!DOCTYPE html>"));
  const TilecRun query = run_tilec("profile query --json " + dir + "/profile.tprof");
  ASSERT_EQ(query.exit_code, 0) << query.err;
  EXPECT_EQ(nlohmann::json::parse(query.out)["cycles"], report["cycles"]);
}

TEST(RunCommand, RunsAPackageOnNpyData) {
  const std::string dir = graph_with_data("run_package");
  ASSERT_EQ(run_tilec("compile " + dir + "/graph.json --target ipu21:16 -o " + dir + "/model.tpk").exit_code, 0);
  const TilecRun compiled = run_tilec("run " + dir + "/graph.json --inputs " + dir + " --target ipu21:16 --json");
  const TilecRun packaged = run_tilec("run " + dir + "/graph.json --inputs " + dir + " --package " + dir + "/model.tpk --json");
  ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  ASSERT_EQ(packaged.exit_code, 0) << packaged.err;
  const nlohmann::json a = nlohmann::json::parse(compiled.out), b = nlohmann::json::parse(packaged.out);
  EXPECT_EQ(a["cycles"], b["cycles"]);
  EXPECT_EQ(a["maximumAbsoluteError"], b["maximumAbsoluteError"]);
  EXPECT_EQ(b["target"], "ipu21:16");
  EXPECT_EQ(b["stages"].size(), 0u);  // nothing compiled
  EXPECT_EQ(b["compileSeconds"], nullptr);
  EXPECT_EQ(a["estimatedCycles"], b["estimatedCycles"]);  // from the package's compile info
}

// The case a package runs is the one it was compiled for: its budget comes
// from the package.
TEST(RunCommand, APackageIsReportedWithItsOwnBudget) {
  const std::string dir = fresh_directory("run_package_budget");
  ASSERT_EQ(run_tilec("compile " + kSmallMlp + " --target ipu21:16 --budget-kib 16 -o " + dir + "/16k.tpk").exit_code, 0);
  ASSERT_EQ(run_tilec("compile " + kSmallMlp + " --target ipu21:16 -o " + dir + "/default.tpk").exit_code, 0);
  const TilecRun small = run_tilec("run " + kSmallMlp + " --package " + dir + "/16k.tpk --json");
  ASSERT_EQ(small.exit_code, 0) << small.err;
  const nlohmann::json report = nlohmann::json::parse(small.out);
  EXPECT_EQ(report["case"], "fp8-b1-n1-16k");
  EXPECT_EQ(report["budget_kib"], 16);
  const TilecRun whole = run_tilec("run " + kSmallMlp + " --package " + dir + "/default.tpk --json");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(nlohmann::json::parse(whole.out)["case"], "fp8-b1-n1-default");
  EXPECT_EQ(nlohmann::json::parse(whole.out)["budget_kib"], 0);
}

// A package carries its plan's summation order: run --package checks the
// device bit for bit against the plan-order reference, K split included.
TEST(RunCommand, APackageIsCheckedBitForBitInItsOwnOrder) {
  const std::string dir = fresh_directory("run_package_bit_exact");
  ASSERT_EQ(run_tilec("compile " + kSmallMlp + " --target ipu21:16 --budget-kib 8 -o " + dir + "/8k.tpk").exit_code, 0);
  const TilecRun inspect = run_tilec("package inspect " + dir + "/8k.tpk");
  EXPECT_THAT(inspect.out, HasSubstr("K split       gemm1: cuts [0,16,32], partials f32"));
  const TilecRun run = run_tilec("run " + kSmallMlp + " --package " + dir + "/8k.tpk --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report["bitExact"], true);
  EXPECT_EQ(report["differingElements"], 0);
  EXPECT_TRUE(report["planOrderReferenceSeconds"].is_number());
  const TilecRun text = run_tilec("run " + kSmallMlp + " --package " + dir + "/8k.tpk");
  EXPECT_THAT(text.out, HasSubstr("plan order bit-exact: every output element equals the plan-order reference"));
}

// --fp16-partials sends the partial sums an FP8 cast would otherwise keep
// in FP32 as FP16; the case says so in its name and is still bit-exact in
// its own order. A package's partial sums are fixed: the flag is refused.
TEST(RunCommand, Fp16PartialsAreAskedForByFlag) {
  const std::string dir = fresh_directory("run_fp16_partials");
  const std::string compile = "compile " + kSmallMlp + " --target ipu21:16 --budget-kib 8 -o " + dir;
  ASSERT_EQ(run_tilec(compile + "/f32.tpk").exit_code, 0);
  ASSERT_EQ(run_tilec(compile + "/f16.tpk --fp16-partials").exit_code, 0);
  EXPECT_THAT(run_tilec("package inspect " + dir + "/f32.tpk").out, HasSubstr("partials f32"));
  const TilecRun inspect = run_tilec("package inspect " + dir + "/f16.tpk");
  EXPECT_THAT(inspect.out, HasSubstr("partials f16"));
  EXPECT_THAT(inspect.out, Not(HasSubstr("partials f32")));
  const TilecRun run = run_tilec("run " + kSmallMlp + " --target ipu21:16 --budget-kib 8 --fp16-partials --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report["case"], "fp8-b1-n1-8k-fp16-partials");
  EXPECT_EQ(report["bitExact"], true);
  const TilecRun refused = run_tilec("run " + kSmallMlp + " --package " + dir + "/f32.tpk --fp16-partials");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("--fp16-partials: applies when compiling, not to --package"));
}

// A NaN in x makes NaNs in its row of y, on the device and in the
// reference alike: they agree.
TEST(RunCommand, NaNWhereTheReferenceHasNaNAgrees) {
  const std::string dir = graph_with_data("run_nan");
  graph::Tensor x = graph::read_npy_as_stored(dir + "/x.npy");
  std::vector<float> values = x.to_floats();
  values[5] = NAN;
  graph::write_npy(dir + "/x.npy", graph::Tensor::from_floats(x.type, values));
  const TilecRun run = run_tilec("run " + dir + "/graph.json --inputs " + dir + " --target ipu21:16 --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report["status"], "pass");
  EXPECT_EQ(report["outOfTolerance"], 0);
  EXPECT_EQ(report["nanMismatches"], 0);
  EXPECT_EQ(report["infinityMismatches"], 0);
  EXPECT_TRUE(report["maximumAbsoluteError"].is_number());
}

TEST(RunCommand, WrongNumbersExitOne) {
  // The package computes gelu(x W1) W2; the graph says gelu(x W2) W1.
  const std::string dir = graph_with_data("run_wrong", true);
  write_file(dir + "/original.json", square_mlp(false));
  ASSERT_EQ(run_tilec("compile " + dir + "/original.json --target ipu21:16 -o " + dir + "/model.tpk").exit_code, 0);
  const TilecRun run = run_tilec("run " + dir + "/graph.json --inputs " + dir + " --package " + dir + "/model.tpk --json");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, StartsWith("tilec: error: graph-default: "));
  EXPECT_THAT(run.err, HasSubstr(" of 2,048 output elements out of tolerance"));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report["status"], "failed");
  EXPECT_EQ(report["returncode"], 1);
  EXPECT_GT(report["outOfTolerance"].get<int>(), 0);
}

// The workload's rule is blind where |y| < 0.03: a package computing other
// numbers passes on small data. --atol and --rtol set a rule that sees it.
TEST(RunCommand, AtolAndRtolSetThePassRule) {
  const std::string dir = graph_with_data("run_tolerance", true);
  graph::Tensor x = graph::read_npy_as_stored(dir + "/x.npy");
  std::vector<float> values = x.to_floats();
  for (float& value : values) value /= 64;
  graph::write_npy(dir + "/x.npy", graph::Tensor::from_floats(x.type, values));
  write_file(dir + "/original.json", square_mlp(false));
  ASSERT_EQ(run_tilec("compile " + dir + "/original.json --target ipu21:16 -o " + dir + "/model.tpk").exit_code, 0);
  const std::string run = "run " + dir + "/graph.json --inputs " + dir + " --package " + dir + "/model.tpk --json";
  const TilecRun blind = run_tilec(run);
  ASSERT_EQ(blind.exit_code, 0) << blind.err;
  const nlohmann::json passed = nlohmann::json::parse(blind.out);
  EXPECT_EQ(passed["absoluteTolerance"], 0.03);
  EXPECT_EQ(passed["relativeTolerance"], 0.05);
  EXPECT_GT(passed["maximumAbsoluteError"].get<double>(), 0.001);
  const TilecRun strict = run_tilec(run + " --atol 0.001 --rtol 0.05");
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_THAT(strict.err, HasSubstr("out of tolerance (|device - reference| > 0.001 + 0.05 x |reference|)"));
  const nlohmann::json failed = nlohmann::json::parse(strict.out);
  EXPECT_EQ(failed["status"], "failed");
  EXPECT_EQ(failed["absoluteTolerance"], 0.001);
  expect_one_line(run_tilec(run + " --rtol -1"), 2, "--rtol: must be a number >= 0, not -1\n");
}

// Errors against the exact (FP64, unrounded) reference: the device's, and
// the reference's own, which is what the graph's precision costs. An FP8
// graph loses far more to its types than the device adds to them.
TEST(RunCommand, ErrorsAgainstExactValues) {
  const TilecRun fp8 = run_tilec("run " + kSmallMlp + " --target ipu21:16 --json");
  ASSERT_EQ(fp8.exit_code, 0) << fp8.err;
  const nlohmann::json report = nlohmann::json::parse(fp8.out);
  const double device = report["exactAbsoluteError"], precision = report["precisionAbsoluteError"];
  EXPECT_GT(precision, 10 * report["maximumAbsoluteError"].get<double>());
  // |device - exact| <= |device - reference| + |reference - exact|.
  EXPECT_LE(device, report["maximumAbsoluteError"].get<double>() + precision);
  EXPECT_GT(report["exactRelativeError"].get<double>(), 0);
  EXPECT_GT(report["maximumRelativeError"].get<double>(), 0);
  const TilecRun fp32 = run_tilec("run " + kSmallMlp + " --precision fp32 --target ipu21:16 --json");
  ASSERT_EQ(fp32.exit_code, 0) << fp32.err;
  EXPECT_LT(nlohmann::json::parse(fp32.out)["precisionAbsoluteError"].get<double>(), 1e-5);
}

// Progress goes to stderr on a terminal, or with --progress: each stage
// with the elapsed time, then the cycles simulated.
TEST(RunCommand, ProgressShowsStagesTimeAndCycles) {
  const TilecRun run = run_tilec("run " + kSmallMlp + " --target ipu21:16 --json --progress");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::uint64_t cycles = nlohmann::json::parse(run.out)["cycles"];
  EXPECT_THAT(run.err, StartsWith("tilec: compile: compile_runtime (0."));
  EXPECT_THAT(run.err, HasSubstr("\ntilec: compile: construct_mid ("));
  EXPECT_THAT(run.err, ::testing::MatchesRegex(
                           "(.|\n)*\ntilec: simulate \\([0-9.]+ s\\), " + grouped(static_cast<std::int64_t>(cycles)) +
                           " cycles\n(.|\n)*"));
  EXPECT_THAT(run.err, HasSubstr("\ntilec: check: reference ("));
  // Not asked for, and stderr is a file: nothing.
  EXPECT_EQ(run_tilec("run " + kSmallMlp + " --target ipu21:16").err, "");
  const TilecRun compile = run_tilec("compile " + kSmallMlp + " --target ipu21:16 --progress");
  ASSERT_EQ(compile.exit_code, 0) << compile.err;
  EXPECT_THAT(compile.err, HasSubstr("tilec: compile: build_tile_images ("));
  EXPECT_THAT(compile.out, StartsWith("compiled "));
}

TEST(RunCommand, NoFittingPlanExitsOneWithItsReport) {
  const TilecRun run = run_tilec("run " + kSmallMlp + " --target ipu21:16 --budget-kib 4 --json");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, StartsWith("tilec: error: compile: no plan fits the budget of 4096 bytes per tile"));
  const nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report["status"], "planner-rejected");
  EXPECT_EQ(report["case"], "fp8-b1-n1-4k");
  EXPECT_THAT(report["diagnostic"].back().get<std::string>(), StartsWith("compile: no plan fits"));
}

TEST(RunCommand, CorruptedPackageExitsTwo) {
  const std::string dir = fresh_directory("run_corrupt");
  ASSERT_EQ(run_tilec("compile " + kSmallMlp + " --target ipu21:16 -o " + dir + "/model.tpk").exit_code, 0);
  std::string bytes = file_text(dir + "/model.tpk");
  bytes[bytes.size() / 2] ^= 0x5a;
  write_file(dir + "/model.tpk", bytes);
  const TilecRun run = run_tilec("run " + kSmallMlp + " --package " + dir + "/model.tpk");
  expect_one_line(run, 2, dir + "/model.tpk: ");
  EXPECT_EQ(run.out, "");
  expect_one_line(run_tilec("run " + kSmallMlp + " --package " + dir + "/none.tpk"), 2,
                  dir + "/none.tpk: cannot open");
}

// A package is checked against the graph it runs: a host input relabelled
// a parameter and copied to a second tile (stored twice, counted as
// weights) is refused, as is a binding of another type.
TEST(RunCommand, APackageMustBindTheGraphsTensorsAsTheGraphDoes) {
  const std::string dir = fresh_directory("run_relabelled");
  ASSERT_EQ(run_tilec("compile " + kSmallMlp + " --target ipu21:16 -o " + dir + "/model.tpk").exit_code, 0);
  const package::Package compiled = package::read_package(dir + "/model.tpk");
  package::Package relabelled = compiled;
  for (package::Binding& binding : relabelled.bindings)
    if (binding.name == "x") {
      binding.role = package::BindingRole::Parameter;
      package::Piece copy = binding.pieces.front();
      copy.tile = 15;  // the plan leaves tile 15 without work
      binding.pieces.push_back(copy);
    }
  package::write_package(relabelled, dir + "/relabelled.tpk");
  expect_one_line(run_tilec("run " + kSmallMlp + " --package " + dir + "/relabelled.tpk"), 2,
                  "binding 'x': is bound as parameter, but it is the graph's input\n");
  package::Package retyped = compiled;
  for (package::Binding& binding : retyped.bindings)
    if (binding.name == "W1") binding.type.storage.scale = -8;
  package::write_package(retyped, dir + "/retyped.tpk");
  const TilecRun run = run_tilec("run " + kSmallMlp + " --package " + dir + "/retyped.tpk");
  expect_one_line(run, 2, "binding 'W1': is f143(s=-8)[32,64], but the graph's parameter is f143(s=-9)[32,64]\n");
  EXPECT_EQ(run.out, "");
}

TEST(RunCommand, MaxCyclesFaultsALongRunNamingItsPlace) {
  const TilecRun run = run_tilec("run " + kSmallMlp + " --target ipu21:16 --max-cycles 1000 --json");
  expect_one_line(run, 1, "tile ");
  EXPECT_THAT(run.err, HasSubstr("cycle limit: the run reached cycle "));
  EXPECT_THAT(run.err, HasSubstr(" without halting (the limit is 1000 cycles, --max-cycles)\n"));
  EXPECT_EQ(nlohmann::json::parse(run.out)["status"], "fault");
  EXPECT_EQ(run_tilec("run " + kSmallMlp + " --target ipu21:16 --max-cycles 1000000").exit_code, 0);
}

TEST(RunCommand, MissingInputFileExitsTwo) {
  const std::string dir = graph_with_data("run_missing");
  std::filesystem::remove(dir + "/W2.npy");
  const TilecRun run = run_tilec("run " + dir + "/graph.json --inputs " + dir + " --target ipu21:16");
  expect_one_line(run, 2, dir + ": no file 'W2.npy' for tensor 'W2'");
  EXPECT_EQ(run.out, "");
}

TEST(RunCommand, MismatchedNpyShapeExitsTwo) {
  const std::string dir = graph_with_data("run_shape");
  std::filesystem::remove(dir + "/manifest.json");
  const graph::TensorType wrong{{1, 8, 128}, StorageType{ElementType::F16, 0}};
  graph::write_npy(dir + "/x.npy", graph::Tensor::zeros(wrong));
  const TilecRun run = run_tilec("run " + dir + "/graph.json --inputs " + dir + " --target ipu21:16");
  expect_one_line(run, 2, dir + "/x.npy: ");
  EXPECT_THAT(run.err, HasSubstr("shape"));
  EXPECT_EQ(run.out, "");
}

TEST(RunCommand, UsageErrorsExitTwo) {
  expect_one_line(run_tilec("run"), 2, "run: give a GRAPH file or --workload NAME (one of them)");
  expect_one_line(run_tilec("run g.json"), 2, "--inputs: a GRAPH file needs --inputs DIR");
  expect_one_line(run_tilec("run g.json --inputs d --seed 1"), 2, "--seed: a GRAPH file takes its data from");
  expect_one_line(run_tilec("compile g.json --seed 1 -o m.tpk"), 2, "--seed: applies to --workload only here");
  expect_one_line(run_tilec("run --workload mlp --package p.tpk --budget-kib 8"), 2,
                  "--budget-kib: applies when compiling, not to --package");
}

// A graph file without data files runs on generated data: the seed picks
// the numbers, and the same seed gives the same output.
TEST(RunCommand, GraphFileOnGeneratedData) {
  const std::string dir = graph_with_data("run_generated");
  const std::string run = "run " + dir + "/graph.json --target ipu21:16 --json --outputs ";
  const TilecRun first = run_tilec(run + dir + "/first --seed 7");
  const TilecRun again = run_tilec(run + dir + "/again --seed 7");
  const TilecRun other = run_tilec(run + dir + "/other --seed 8");
  for (const TilecRun* each : {&first, &again, &other}) {
    ASSERT_EQ(each->exit_code, 0) << each->err;
    EXPECT_EQ(nlohmann::json::parse(each->out)["status"], "pass");
  }
  const auto output = [&](const std::string& name) { return file_text(dir + "/" + name + "/y.npy"); };
  EXPECT_EQ(output("first"), output("again"));
  EXPECT_NE(output("first"), output("other"));
}

// Self-attention between projections, from a graph file, on generated data.
TEST(RunCommand, AttentionGraphFile) {
  const std::string dir = fresh_directory("run_attention");
  write_file(dir + "/attention.json", R"({"format": "tilec-graph", "version": 1,
  "inputs": [{"name": "x", "type": "f16", "shape": [2, 32, 64]}],
  "parameters": [{"name": "Wq", "type": "f16", "shape": [64, 32]}, {"name": "Wk", "type": "f16", "shape": [64, 32]},
                 {"name": "Wv", "type": "f16", "shape": [64, 32]}, {"name": "Wo", "type": "f16", "shape": [32, 64]}],
  "ops": [{"op": "gemm", "name": "q", "a": "x", "b": "Wq", "type": "f16"},
          {"op": "gemm", "name": "k", "a": "x", "b": "Wk", "type": "f16"},
          {"op": "gemm", "name": "v", "a": "x", "b": "Wv", "type": "f16"},
          {"op": "attention", "name": "attention", "q": "q", "k": "k", "v": "v"},
          {"op": "gemm", "name": "o", "a": "attention", "b": "Wo", "type": "f16"},
          {"op": "add", "name": "residual", "a": "o", "b": "x"}],
  "outputs": [{"name": "y", "value": "residual"}]})");
  const TilecRun run = run_tilec("run " + dir + "/attention.json --seed 3 --target ipu21:16 --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report["status"], "pass");
  EXPECT_GT(report["cycles"].get<double>(), 0.0);
}

// The one full-chip test: the reference's first case, on the chip it names.
TEST(RunCommand, SiglipBatchOneOnTheFullChip) {
  const TilecRun run = run_tilec("run --workload siglip-mlp --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report["status"], "pass");
  EXPECT_EQ(report["target"], "ipu21");
  EXPECT_EQ(report["inputBytes"], 839808);  // x stored once, FP8
  EXPECT_LE(report["maximumAbsoluteError"].get<double>(), 0.03);
  // Efficiency: 38,368 cycles per batch item at the roofline (workload.md).
  EXPECT_NEAR(report["efficiency"].get<double>() * report["cycles"].get<double>(), 38368.0, 0.5);
  EXPECT_LT(report["cycles"].get<double>(), 225672);  // the reference's cycles
}

}  // namespace
}  // namespace tilec::cli_testing
