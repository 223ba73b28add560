// The host reference checked independently: tests/graph/check_siglip_reference.py
// decodes the dumped FP8 data itself and recomputes the MLP in NumPy with the
// same per-op rounding (see the script for what it compares and why).
#include "graph/npy.h"
#include "tilec_process.h"

#include <gmock/gmock.h>
#include <filesystem>
#include <gtest/gtest.h>

namespace tilec::cli_testing {
namespace {

using ::testing::HasSubstr;

struct CheckerRun {
  int exit_code;
  std::string output;
};

CheckerRun run_checker(const std::string& directory, int row_stride) {
  const std::string output = directory + "/checker.txt";
  const std::string command =
      fmt::format("/usr/bin/python3 {}/tests/graph/check_siglip_reference.py {} --row-stride {} >{} 2>&1",
                  TILEC_SOURCE_DIR, directory, row_stride, output);
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, file_text(output)};
}

TEST(ReferenceNumpy, SmallFp8MlpAgrees) {
  const std::string dir = fresh_directory("numpy_small");
  const TilecRun run =
      run_tilec("reference --workload mlp --batch 2 --tokens 24 --width 48 --hidden 96 --seed 5 --intermediates "
                "--dump " + dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const CheckerRun check = run_checker(dir, 1);
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_THAT(check.output, HasSubstr("gelu_f143: 0 of 4608 elements differ"));
  EXPECT_THAT(check.output, HasSubstr("gemm2: 0 of "));
  EXPECT_THAT(check.output, HasSubstr("y end to end: 0 of "));
}

TEST(ReferenceNumpy, TheCheckerCatchesAWrongOutput) {
  const std::string dir = fresh_directory("numpy_wrong");
  ASSERT_EQ(run_tilec("reference --workload mlp --batch 2 --dump " + dir).exit_code, 0);
  // Move one element of y by 0.05.
  graph::Tensor y = graph::read_npy_as_stored(dir + "/y.npy");
  std::vector<float> values = y.to_floats();
  values[7] += 0.05f + 0.05f * std::abs(values[7]);
  graph::write_npy(dir + "/y.npy", graph::Tensor::from_floats(y.type, values));
  const CheckerRun check = run_checker(dir, 1);
  EXPECT_EQ(check.exit_code, 1) << check.output;
  EXPECT_THAT(check.output, HasSubstr("y end to end: 1 of "));
}

// The acceptance run: SigLIP MLP at batch 4, every 16th token row recomputed.
TEST(ReferenceNumpy, SiglipBatch4Agrees) {
  const std::string dir = fresh_directory("numpy_siglip_b4");
  const TilecRun run = run_tilec("reference --workload siglip-mlp --batch 4 --intermediates --dump " + dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("reference: siglip-mlp fp8 batch 4 blocks 1 seed 0\n"));
  EXPECT_THAT(run.out, HasSubstr("  y   output     f16[4,729,1152]"));
  EXPECT_THAT(run.out, HasSubstr("28,916,269,056 MACs in "));
  const CheckerRun check = run_checker(dir, 16);
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_THAT(check.output, HasSubstr("checking 183 token rows"));
  EXPECT_THAT(check.output, HasSubstr("gemm1: 0 of "));
  EXPECT_THAT(check.output, HasSubstr("gelu: 0 of "));
  EXPECT_THAT(check.output, HasSubstr("gelu_f143: 0 of "));
  EXPECT_THAT(check.output, HasSubstr("gemm2: 0 of "));
  // NumPy's computation agrees with tilec's reference bit for bit (max 0 < 1e-3).
  EXPECT_THAT(check.output, HasSubstr("y end to end: 0 of "));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tilec::cli_testing
