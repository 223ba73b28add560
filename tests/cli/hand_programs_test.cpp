// Hand-written programs on the simulator: `tilec asm FILE... -o prog.tpk`
// links them into a package, one per tile or one for every tile, and
// `tilec sim` runs it, faults and all.
#include "tilec_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tilec::cli {
namespace {

using ::testing::HasSubstr;
using namespace cli_testing;

std::string example(const std::string& name) { return std::string(TILEC_SOURCE_DIR) + "/examples/asm/" + name; }
std::string package_path(const std::string& name) { return ::testing::TempDir() + "/tilec_hand_" + name + ".tpk"; }

// Links and runs; the simulator's figures.
nlohmann::json linked_and_run(const std::string& sources, const std::string& target, const std::string& name) {
  const TilecRun linked = run_tilec("asm " + sources + " -o " + package_path(name) + " --target " + target);
  EXPECT_EQ(linked.exit_code, 0) << linked.err;
  const TilecRun ran = run_tilec("sim " + package_path(name) + " --json");
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  return nlohmann::json::parse(ran.out);
}

// Tile 0 sends 16 bytes to tile 1: three setzi bundles put the send at
// cycle 18; its last word lands 3 cycles and 16 of latency later, and the
// receiver's xdone and halt follow.
TEST(HandPrograms, TwoTilesExchangeAsTheMachineSays) {
  const nlohmann::json pair = linked_and_run(example("send.s") + " " + example("recv.s"), "ipu21:2", "pair");
  EXPECT_EQ(pair["cycles"], 18 + 3 + 16 + 1);
  EXPECT_EQ(pair["bytes_sent"], 16);
  // Twice the bandwidth: the words land in 2 cycles, not 4.
  const nlohmann::json wide =
      linked_and_run(example("send.s") + " " + example("recv.s"), "ipu21:tiles=2,exchange-bytes=8", "wide");
  EXPECT_EQ(wide["cycles"], 18 + 1 + 16 + 1);
  const TilecRun listed = run_tilec("package inspect " + package_path("pair"));
  EXPECT_THAT(listed.out, HasSubstr("target        ipu21:2 (2 tiles, 2 with code)"));
}

// One program on every tile, choosing its part by gettile; tile 0
// multicasts to the group the source declares.
TEST(HandPrograms, OneProgramOnEveryTileWithAnExchangeGroup) {
  const TilecRun linked = run_tilec("asm " + example("multicast.s") + " -o " + package_path("cast") + " --target ipu21:4");
  ASSERT_EQ(linked.exit_code, 0) << linked.err;
  EXPECT_EQ(linked.out, "linked 1 program for 4 tiles of ipu21:4 (1 exchange groups) into " + package_path("cast") + "\n");
  const TilecRun ran = run_tilec("sim " + package_path("cast") + " --json");
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(nlohmann::json::parse(ran.out)["bytes_sent"], 16);  // once, however many receive it
  const TilecRun fewer =
      run_tilec("asm " + example("multicast.s") + " -o " + package_path("cast3") + " --target ipu21:8 --tiles 4");
  ASSERT_EQ(fewer.exit_code, 0) << fewer.err;
  EXPECT_THAT(run_tilec("package inspect " + package_path("cast3")).out, HasSubstr("(8 tiles, 4 with code)"));
}

TEST(HandPrograms, FaultsAndBadProgramsAreOneLine) {
  const std::string short_recv = ::testing::TempDir() + "/tilec_hand_short.s";
  write_file(short_recv, ".data\n.align 16\nin: .zero 16\n.text\n.global main\nmain:\n  setzi $m1, in\n  setzi $m2, 12\n"
                         "  setzi $m3, 0\n  recv $m1, $m2, $m3\n  xdone\n  halt\n");
  const TilecRun linked = run_tilec("asm " + example("send.s") + " " + short_recv + " -o " + package_path("bad") +
                                    " --target ipu21:2");
  ASSERT_EQ(linked.exit_code, 0) << linked.err;
  const TilecRun faulted = run_tilec("sim " + package_path("bad"));
  EXPECT_EQ(faulted.exit_code, 1);
  EXPECT_EQ(faulted.err,
            "tilec: error: tile 0, supervisor, pc 0x4c018 (send $m1, $m2, $m3): send of 16 bytes meets a receive of "
            "12 bytes on tile 1 (pc 0x4c018)\n");
  const std::string no_main = ::testing::TempDir() + "/tilec_hand_nomain.s";
  write_file(no_main, ".text\nstart:\n  halt\n");
  expect_error_line_holding(run_tilec("asm " + no_main + " -o " + package_path("x") + " --target ipu21:2"),
                            no_main + ": no global 'main'");
  expect_error_line_holding(run_tilec("asm " + example("send.s") + " " + example("recv.s") + " -o " +
                                      package_path("x") + " --target ipu21:2 --tiles 3"),
                            "--tiles: 2 programs run on tiles 0-1, one each");
  expect_error_line_holding(run_tilec("asm " + example("send.s") + " " + example("recv.s") + " " + example("recv.s") +
                                      " -o " + package_path("x") + " --target ipu21:2"),
                            "3 tiles of programs, but ipu21:2 has 2 tiles");
  const std::string far_group = ::testing::TempDir() + "/tilec_hand_group.s";
  write_file(far_group, ".exchange_group 5\n.text\n.global main\nmain:\n  halt\n");
  expect_error_line_holding(run_tilec("asm " + far_group + " -o " + package_path("x") + " --target ipu21:2"),
                            "exchange group 0: tile 5 does not exist (ipu21:2 has 2 tiles)");
  expect_error_line_holding(run_tilec("asm " + example("send.s") + " " + example("recv.s")),
                            "asm: one file at a time without -o");
}

}  // namespace
}  // namespace tilec::cli
