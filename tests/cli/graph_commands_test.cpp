// `tilec graph check|show|workloads`, run as a user would.
#include "tilec_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tilec::cli_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* kGood = R"({
  "format": "tilec-graph", "version": 1,
  "inputs": [{"name": "x", "type": "f16", "shape": [2, 8]}],
  "parameters": [{"name": "w", "type": "f143", "scale": -6, "shape": [8, 4]}],
  "ops": [
    {"op": "gemm", "name": "h", "a": "x", "b": "w", "type": "f16"},
    {"op": "gelu", "name": "y", "x": "h"}
  ],
  "outputs": ["y"]
})";

std::string graph_file(const std::string& name, const std::string& text) {
  const std::string path = fresh_directory("graph_" + name) + "/" + name + ".json";
  write_file(path, text);
  return path;
}

// A bad file exits 2 with exactly one line on stderr: "tilec: error: " + expected.
void expect_one_line_error(const TilecRun& run, const std::string& expected) {
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "tilec: error: " + expected + "\n");
  EXPECT_EQ(run.out, "");
}

TEST(GraphCheck, AcceptsAValidFile) {
  const TilecRun run = run_tilec("graph check " + graph_file("good", kGood));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "ok: 2 ops, 1 input, 1 parameter, 1 output; 64 MACs\n");
  EXPECT_EQ(run.err, "");
}

TEST(GraphCheck, MalformedJsonGivesLineAndColumn) {
  const std::string path = graph_file("malformed", "{\n  \"format\": \"tilec-graph\",\n  oops\n}");
  const TilecRun run = run_tilec("graph check " + path);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, StartsWith("tilec: error: " + path + ":3:3: syntax error while parsing object key"));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

TEST(GraphCheck, UnknownOp) {
  std::string text = kGood;
  text.replace(text.find("\"gelu\""), 6, "\"selu\"");
  const std::string path = graph_file("unknown_op", text);
  expect_one_line_error(run_tilec("graph check " + path),
                        path + ": op 'y': unknown op 'selu' (ops: gemm, gelu, add, sub, mul, div, pow, sqrt, erf, "
                               "tanh, relu, sigmoid, exp, cast, layernorm, softmax, attention, reduce_mean, "
                               "reduce_sum, reduce_max, transpose, concat, slice, gather, patchify, reshape, repeat)");
}

TEST(GraphCheck, ShapeMismatch) {
  std::string text = kGood;
  text.replace(text.find("[8, 4]"), 6, "[6, 4]");
  const std::string path = graph_file("shape_mismatch", text);
  expect_one_line_error(run_tilec("graph check " + path),
                        path + ": op 'h': operand 'b' has shape [6,4] but operand 'a' needs K = 8");
}

TEST(GraphCheck, MissingFile) {
  const std::string path = ::testing::TempDir() + "/no_such_graph.json";
  expect_one_line_error(run_tilec("graph check " + path), path + ": cannot open the graph file");
}

TEST(GraphCheck, AFolderIsNotAGraphFile) {
  const std::string path = fresh_directory("graph_folder");
  expect_one_line_error(run_tilec("graph check " + path), path + ": is a folder, not a graph file");
}

// The default attention scale is 1/sqrt of a head's width, D / heads.
TEST(GraphShow, AttentionNotesItsHeadsAndTheScaleTheyImply) {
  const TilecRun run = run_tilec("graph show " + std::string(TILEC_SOURCE_DIR) + "/examples/encoder_block.json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // q is [4, 64, 256] in 4 heads: 1/sqrt(64).
  EXPECT_THAT(run.out, HasSubstr(" 4 heads, scale 1/sqrt(64)\n"));
}

TEST(GraphShow, ListsTheWorkloadWithMacsAndBytes) {
  const TilecRun run = run_tilec("graph show --workload siglip-mlp --fp8-scale -7");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, StartsWith("graph: siglip-mlp fp8 batch 1 blocks 1\n"));
  EXPECT_THAT(run.out, HasSubstr("gemm1      gemm       x, W1          f16[1,729,4304]         3,614,533,632"));
  EXPECT_THAT(run.out, HasSubstr("gelu_f143  cast       gelu           f143(s=-4)[1,729,4304]"));
  EXPECT_THAT(run.out, HasSubstr("output: y = gemm2 f16[1,729,1152]\n"));
  EXPECT_THAT(run.out,
              HasSubstr("total: 7,229,067,264 MACs; inputs 839,808 bytes; parameters 9,916,416 bytes\n"));
}

TEST(GraphShow, ShowsAFileAndRepeatBodies) {
  const TilecRun file = run_tilec("graph show " + graph_file("show", kGood));
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_THAT(file.out, HasSubstr("\n  h   gemm       x, w      f16[2,4]           64\n"));
  const TilecRun repeat = run_tilec("graph show --workload mlp --blocks 3 --precision fp32");
  ASSERT_EQ(repeat.exit_code, 0) << repeat.err;
  EXPECT_THAT(repeat.out, HasSubstr("\n  blocks   repeat     x, W1, W2  f32[1,8,16]   24,576  x3 (1 carried, 2 sequence, 0 invariant)\n"));
  EXPECT_THAT(repeat.out, HasSubstr("\n    gemm1  gemm       x, W1      f32[1,8,32]    4,096\n"));
}

TEST(GraphShow, JsonOutputIsAGraphFile) {
  const TilecRun shown = run_tilec("graph show --workload mlp --blocks 2 --bias --json");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const std::string path = graph_file("shown", shown.out);
  const TilecRun check = run_tilec("graph check " + path);
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(check.out, "ok: 2 ops, 1 input, 4 parameters, 1 output; 16,384 MACs\n");
  // Writing what was read gives the same text.
  EXPECT_EQ(run_tilec("graph show --json " + path).out, shown.out);
}

TEST(GraphShow, UsageErrors) {
  expect_one_line_error(run_tilec("graph show"), "graph show: give a graph FILE or --workload NAME (one of them)");
  expect_one_line_error(run_tilec("graph show " + graph_file("both", kGood) + " --workload mlp"),
                        "graph show: give a graph FILE or --workload NAME (one of them)");
  expect_one_line_error(run_tilec("graph show " + graph_file("batch", kGood) + " --batch 2"),
                        "--batch: applies to --workload only");
  expect_one_line_error(run_tilec("graph show --workload mlp --blocks 0"), "--blocks 0: must be an integer >= 1");
  expect_one_line_error(run_tilec("graph show --workload transformer"),
                        "workload 'transformer': unknown workload (workloads: siglip-mlp, mlp, siglip-vit, vit, "
                        "siglip-vit-layer, vit-layer)");
  expect_one_line_error(run_tilec("graph show --workload siglip-mlp --tokens 4"),
                        "--tokens 4: applies to workload mlp only, not siglip-mlp");
}

TEST(GraphShow, TheVisionTower) {
  const TilecRun run = run_tilec("graph show --workload siglip-vit --precision fp16");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, StartsWith("graph: siglip-vit fp16 batch 1 layers 27\n"));
  EXPECT_THAT(run.out, HasSubstr("\n  patches           patchify   image "));
  EXPECT_THAT(run.out, HasSubstr(" x27 (1 carried, 16 sequence, 0 invariant)\n"));
  EXPECT_THAT(run.out, HasSubstr("\n    attention       attention  q, k, v "));
  EXPECT_THAT(run.out, HasSubstr("16 heads, scale 0.11785114\n"));
  EXPECT_THAT(run.out, HasSubstr("\n  embedding         reshape    head_residual "));
  EXPECT_THAT(run.out, HasSubstr("\noutput: embedding = embedding f16[1,1152]\n"));
  EXPECT_THAT(run.out, HasSubstr("\ntotal: 335,173,224,960 MACs; inputs 884,736 bytes; parameters 856,"));
  const TilecRun tokens = run_tilec("graph show --workload vit --no-head --layers 3 --batch 2 --precision fp32");
  ASSERT_EQ(tokens.exit_code, 0) << tokens.err;
  EXPECT_THAT(tokens.out, StartsWith("graph: vit fp32 batch 2 layers 3 no head\n"));
  EXPECT_THAT(tokens.out, HasSubstr("\noutput: tokens = post_ln f32[2,16,16]\n"));
}

TEST(GraphShow, WorkloadFlagsThatDoNotApplyNameTheFlag) {
  const std::string show = "graph show --workload ";
  expect_one_line_error(run_tilec(show + "siglip-vit --blocks 2"),
                        "--blocks 2: applies to workload siglip-mlp or mlp only, not siglip-vit");
  expect_one_line_error(run_tilec(show + "vit --bias"), "--bias: applies to workload siglip-mlp or mlp only, not vit");
  expect_one_line_error(run_tilec(show + "vit --fp8-scale -3"),
                        "--fp8-scale -3: applies to workload siglip-mlp or mlp only, not vit");
  expect_one_line_error(run_tilec(show + "siglip-vit --width 64"),
                        "--width 64: applies to workload mlp, vit or vit-layer only, not siglip-vit");
  expect_one_line_error(run_tilec(show + "vit --tokens 4"), "--tokens 4: applies to workload mlp only, not vit");
  expect_one_line_error(run_tilec(show + "mlp --layers 2"), "--layers 2: applies to workload siglip-vit or vit only, not mlp");
  expect_one_line_error(run_tilec(show + "vit-layer --no-head"),
                        "--no-head: applies to workload siglip-vit or vit only, not vit-layer");
  expect_one_line_error(run_tilec(show + "siglip-vit-layer --hidden 8"),
                        "--hidden 8: applies to workload mlp, vit or vit-layer only, not siglip-vit-layer");
  expect_one_line_error(run_tilec(show + "siglip-mlp --no-head"),
                        "--no-head: applies to workload siglip-vit or vit only, not siglip-mlp");
  expect_one_line_error(run_tilec(show + "vit --layers 0"), "--layers 0: must be an integer >= 1");
  expect_one_line_error(run_tilec(show + "vit --layers x"), "--layers x: must be an integer >= 1");
  expect_one_line_error(run_tilec(show + "vit --width 15"), "workload: heads 2 do not divide width 15");
  expect_one_line_error(run_tilec("graph show " + graph_file("layers", kGood) + " --layers 2"),
                        "--layers: applies to --workload only");
  expect_one_line_error(run_tilec("graph show " + graph_file("no_head", kGood) + " --no-head"),
                        "--no-head: applies to --workload only");
}

// Built-in workloads obey the 2^40-element limit of graph files.
TEST(GraphShow, HugeWorkloadFlagsAreBadInput) {
  expect_one_line_error(run_tilec("graph show --workload siglip-mlp --batch 99999999999"),
                        "workload: x has shape [99999999999,729,1152]: more than 2^40 elements");
  expect_one_line_error(run_tilec("compile --workload mlp --width 1000000000 --hidden 4304"),
                        "workload: W1 has shape [1,1000000000,4304]: more than 2^40 elements");
}

TEST(GraphWorkloads, ListsTheBuiltInWorkloads) {
  const TilecRun run = run_tilec("graph workloads");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.out, StartsWith("siglip-mlp   SigLIP So400m/14 MLP block"));
  EXPECT_THAT(run.out, HasSubstr("\nmlp          "));
  EXPECT_THAT(run.out, HasSubstr("\nsiglip-vit   SigLIP So400m/14 vision tower"));
  EXPECT_THAT(run.out, HasSubstr("\nvit          "));
}

TEST(GraphHelp, SaysWhatEachFlagMeansAndItsDefault) {
  const TilecRun run = run_tilec("reference --help");
  EXPECT_EQ(run.exit_code, 0);
  for (const char* text : {"--batch", "(default 1)", "--fp8-scale", "(default auto)", "--precision",
                           "(default fp8)", "--dump", "--json", "--seed", "(default 0)", "siglip-mlp"})
    EXPECT_THAT(run.out, HasSubstr(text));
}

}  // namespace
}  // namespace tilec::cli_testing
