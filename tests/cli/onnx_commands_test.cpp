#include "tilec_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace tilec::cli_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kNodeTests = "/usr/share/libonnx-testdata/data/node/";

TEST(OnnxCommands, ImportWritesAGraphAndItsParameters) {
  const std::string dir = fresh_directory("onnx_import");
  const TilecRun run = run_tilec("import " + kNodeTests + "test_gemm_default_no_bias/model.onnx -o " + dir +
                                 "/graph.json --params " + dir + "/params");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("1 ops, 2 inputs, 0 parameters, 1 outputs"));
  EXPECT_EQ(run_tilec("graph check " + dir + "/graph.json").exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(dir + "/params/manifest.json"));
}

TEST(OnnxCommands, BadModelsExitTwoWithOneLine) {
  const std::string dir = fresh_directory("onnx_bad");
  const std::string model = file_text(kNodeTests + "test_gemm_alpha/model.onnx");
  write_file(dir + "/truncated.onnx", model.substr(0, model.size() / 2));
  for (const std::string& arguments :
       {"import " + dir + "/truncated.onnx -o " + dir + "/g.json", "graph show " + dir + "/truncated.onnx",
        "compile " + dir + "/truncated.onnx", "import " + kNodeTests + "test_abs/model.onnx -o " + dir + "/g.json",
        "import " + kNodeTests + "test_gemm_alpha/model.onnx -o " + dir + "/g.json --shape a=1,2,3",
        "import " + kNodeTests + "test_gemm_alpha/model.onnx -o " + dir + "/g.json --shape a=3,x"}) {
    const TilecRun run = run_tilec(arguments);
    EXPECT_EQ(run.exit_code, 2) << arguments << "\n" << run.err;
    EXPECT_THAT(run.err, StartsWith("tilec: error: ")) << arguments;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
  EXPECT_THAT(run_tilec("import " + kNodeTests + "test_abs/model.onnx -o " + dir + "/g.json").err,
              HasSubstr("node 'y' (Abs): tilec does not import this op"));
}

TEST(OnnxCommands, ReferenceAndRunTakeAModel) {
  const TilecRun reference = run_tilec("reference --graph " + kNodeTests + "test_softmax_axis_2/model.onnx --seed 1");
  EXPECT_EQ(reference.exit_code, 0) << reference.err;
  const TilecRun run = run_tilec("run " + kNodeTests + "test_softmax_axis_2/model.onnx --seed 1 --target ipu21:16");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("status    pass"));
  // What the compiler cannot plan fails with its one line (exit 1).
  const TilecRun relu = run_tilec("compile " + kNodeTests + "test_relu/model.onnx");
  EXPECT_EQ(relu.exit_code, 1);
  EXPECT_EQ(std::count(relu.err.begin(), relu.err.end(), '\n'), 1) << relu.err;
}

TEST(OnnxCommands, NodeTestTableCountsEachVerdict) {
  const TilecRun run = run_tilec("onnx-test " + kNodeTests + "test_softmax_axis_2 " + kNodeTests + "test_relu " +
                                 kNodeTests + "test_abs");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("Softmax                                1 |         1         0           0 |           1           0           0"));
  EXPECT_THAT(run.out, HasSubstr("Relu                                   1 |         1         0           0 |           0           0           1"));
  EXPECT_THAT(run.out, HasSubstr("Abs                                    1 |         0         0           1 |"));
  EXPECT_EQ(run_tilec("onnx-test --strict " + kNodeTests + "test_abs").exit_code, 1);
}

}  // namespace
}  // namespace tilec::cli_testing
