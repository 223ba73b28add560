// --target takes every machine description: presets, overrides and machine
// files; a machine without FP8 refuses FP8 graphs; a bad description is
// one line and exit 2.
#include "tilec_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>


namespace tilec::cli {
namespace {

using ::testing::HasSubstr;
using namespace cli_testing;

// The acceptance run: the MLP block in FP16 on the whole GC2.
TEST(MachineTarget, Ipu1RunsTheMlpInFp16AndRefusesFp8) {
  const TilecRun fp16 = run_tilec("run --workload siglip-mlp --precision fp16 --target ipu1");
  ASSERT_EQ(fp16.exit_code, 0) << fp16.err;
  EXPECT_THAT(fp16.out, HasSubstr("siglip-mlp on ipu1\n"));
  EXPECT_THAT(fp16.out, ::testing::ContainsRegex("simulate  [0-9,]+ cycles, [0-9.]+ µs on the device"));
  EXPECT_THAT(fp16.out, HasSubstr("status    pass"));
  expect_error_line_holding(run_tilec("run --workload siglip-mlp --precision fp8 --target ipu1"),
                        "--target: ipu1 has no FP8 AMP (its amp-types are f16/f32), but 'x' is f143");
}

TEST(MachineTarget, OverridesAndFilesReachThePackage) {
  const std::string package = ::testing::TempDir() + "/tilec_machine_target.tpk";
  const TilecRun compiled =
      run_tilec("compile --workload mlp --target ipu21:tiles=16,exchange-bytes=8,sync-cycles=1200 -o " + package);
  ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  const TilecRun inspected = run_tilec("package inspect " + package);
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  EXPECT_THAT(inspected.out, HasSubstr("target        ipu21:tiles=16,exchange-bytes=8,sync-cycles=1200 (16 tiles"));
  EXPECT_THAT(inspected.out, HasSubstr("exchange 8 B/cycle (latency 16 + 2 a column), sync 1200 cycles"));
  const TilecRun ran = run_tilec("run --workload mlp --target ipu21:tiles=16,exchange-bytes=8,sync-cycles=1200");
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  const TilecRun from_file = run_tilec(std::string("run --workload mlp --precision fp16 --target ") +
                                       TILEC_SOURCE_DIR + "/machines/mk1.json");
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_THAT(from_file.out, HasSubstr("mlp 8x16x32 on ipu21:tiles=1216,"));
}

TEST(MachineTarget, BadDescriptionsAreOneLineAndExitTwo) {
  const std::string file = ::testing::TempDir() + "/tilec_bad_machine.json";
  write_file(file, "{\"tiles\": 16, \"exchange-bytes\": 0}");
  expect_error_line_holding(run_tilec("compile --workload mlp -o x.tpk --target " + file),
                        file + ": exchange-bytes: 0 is not a multiple of 4 in 4..256");
  expect_error_line_holding(run_tilec("run --workload mlp --target ipu21:tiles=0"),
                        "target ipu21:tiles=0: tiles: 0 is outside 1..4096");
  expect_error_line_holding(run_tilec("run --workload mlp --target ipu21:warp=9"), "unknown field 'warp'");
  expect_error_line_holding(run_tilec("run --workload mlp --target ipu21:standard-end=0x90000"),
                        "standard memory 0x4c000..0x90000 and interleaved memory 0x80000..0xe8000 overlap");
  expect_error_line_holding(run_tilec("bench --target ipu21:amp-f16-macs=32 --out x"),
                        "amp-f16-macs: 32 cannot be honoured");
}

}  // namespace
}  // namespace tilec::cli
