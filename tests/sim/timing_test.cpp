// Barrel-scheduling and synchronisation timing (docs/isa.md, "Issue" and
// "Timing summary"): the expected cycles below are worked out from the
// rules, not read off the simulator.
#include "sim_test_support.h"

#include <gtest/gtest.h>

#include <functional>

namespace tilec::sim {
namespace {

using namespace testing;

TEST(BarrelTiming, SupervisorAloneIssuesEverySixCycles) {
  Code code;
  for (int i = 0; i < 9; ++i) code.main(Opcode::Nop);
  code.main(Opcode::Halt);
  WordsRun run = run_for_words(code, 1);
  EXPECT_EQ(run.result.cycles, 54u);
  EXPECT_EQ(run.result.tiles[0].halt_cycle, 54u);
  EXPECT_EQ(run.result.tiles[0].bundles, 10u);
}

// The supervisor starts `workers` workers at `kernel` (xdone; set; run...).
// Returns the Code with the kernel appended after label `kernel`.
Code start_workers(int workers, const std::function<void(Code&)>& supervisor_tail,
                   const std::function<void(Code&)>& kernel) {
  Code code;
  code.main(Opcode::Xdone);  // cycle 0
  std::size_t set_at = code.size();
  code.set(1, 0);            // cycles 6 and 12
  code.set(0, kStandardData);
  for (int i = 0; i < workers; ++i) code.main(Opcode::Run, {1, 0});
  supervisor_tail(code);
  const std::uint32_t entry = code.here();
  code.at(set_at).main.operands[1] = static_cast<std::int32_t>(entry & 0xfffff);
  code.at(set_at + 1).main.operands[1] = static_cast<std::int32_t>(entry >> 16);
  kernel(code);
  return code;
}

TEST(BarrelTiming, OneWorkerIssuesEverySixCycles) {
  Code code = start_workers(
      1, [](Code& c) { c.main(Opcode::Wsync); c.main(Opcode::Halt); },
      [](Code& c) {
        c.main(Opcode::Getcount, {2});
        c.main(Opcode::Rpti, {10, 1});
        c.main(Opcode::Nop);
        c.main(Opcode::Getcount, {3});
        c.main(Opcode::Stw, {2, 0, 0});
        c.main(Opcode::Stw, {3, 0, 4});
        c.main(Opcode::Exit);
      });
  WordsRun run = run_for_words(code, 2);
  // xdone 0, set 6 12 18 24, run 30: worker 0 first issues at 36.
  EXPECT_EQ(run.words[0], 36u);
  EXPECT_EQ(run.words[1] - run.words[0], 6u * 12);  // getcount, rpti, 10 x nop
  // Exit at 36 + 6 x 15 = 126. The supervisor's wsync issued at 37 (cycle 36
  // is worker 0's) and waited; halt right after the exit.
  EXPECT_EQ(run.result.cycles, 127u);
}

TEST(BarrelTiming, SixWorkersFillEveryCycle) {
  constexpr int kLoop = 100;
  Code code = start_workers(
      6, [](Code& c) { c.main(Opcode::Wsync); c.main(Opcode::Halt); },
      [](Code& c) {
        c.main(Opcode::Rpti, {kLoop, 1});
        c.main(Opcode::Nop);
        c.main(Opcode::Exit);
      });
  WordsRun run = run_for_words(code, 1);
  // Runs at 30 (worker 0), then each next free slot: 37, 44, 51, 58, 65.
  // Worker k first issues at 36 + 7k and exits kLoop + 1 issues later.
  const std::uint64_t last_exit = 36 + 7 * 5 + 6 * (kLoop + 1);
  // Worker 0 exits first, freeing slot 0: wsync there, then halt right
  // after the last exit.
  EXPECT_EQ(run.result.cycles, last_exit + 1);
  // So each worker issued in every cycle of its slot: from worker 5's first
  // issue (71) to worker 0's exit (642) every cycle issued a bundle.
  EXPECT_EQ(run.result.tiles[0].bundles, 13u + 6 * (kLoop + 2));
}

TEST(BarrelTiming, SupervisorTakesTheOneFreeSlot) {
  Code code = start_workers(
      5,
      [](Code& c) {
        c.main(Opcode::Getcount, {2});
        for (int i = 0; i < 10; ++i) c.main(Opcode::Nop);
        c.main(Opcode::Getcount, {3});
        c.main(Opcode::Stw, {2, 0, 0});
        c.main(Opcode::Stw, {3, 0, 4});
        c.main(Opcode::Wsync);
        c.main(Opcode::Halt);
      },
      [](Code& c) {
        c.main(Opcode::Rpti, {200, 1});
        c.main(Opcode::Nop);
        c.main(Opcode::Exit);
      });
  WordsRun run = run_for_words(code, 2);
  // Runs at 30, 37, 44, 51, 58 own slots 0..4: the supervisor issues in slot 5.
  EXPECT_EQ(run.words[0], 65u);
  EXPECT_EQ(run.words[0] % 6, 5u);
  EXPECT_EQ(run.words[1] - run.words[0], 66u);
}

TEST(SyncTiming, ReleaseIs600CyclesAfterTheLastArrival) {
  // Tile 0 reaches its sync at cycle 0, tile 1 after 50 nops (cycle 300).
  Code fast;
  fast.main(Opcode::Sync);
  fast.main(Opcode::Getcount, {1});
  fast.set(0, kStandardData);
  fast.main(Opcode::Stw, {1, 0, 0});
  fast.main(Opcode::Halt);
  Code slow;
  for (int i = 0; i < 50; ++i) slow.main(Opcode::Nop);
  slow.main(Opcode::Sync);
  slow.main(Opcode::Getcount, {1});
  slow.set(0, kStandardData);
  slow.main(Opcode::Stw, {1, 0, 0});
  slow.main(Opcode::Halt);
  package::Package package = package_of(2, image(fast));
  package.tiles[1] = image(slow);
  package.bindings.push_back(dense_binding("t0", package::BindingRole::Output, f32_type({1}), 0, kStandardData));
  package.bindings.push_back(dense_binding("t1", package::BindingRole::Output, f32_type({1}), 1, kStandardData));
  Device device(package, ipu21_cut(2));
  RunResult result = device.run();
  auto word = [&](const char* name) {
    std::uint32_t value;
    std::memcpy(&value, device.read(name).bytes.data(), 4);
    return value;
  };
  EXPECT_EQ(word("t0"), 900u);
  EXPECT_EQ(word("t1"), 900u);
  EXPECT_EQ(result.syncs, 1u);
  EXPECT_EQ(result.tiles[0].sync_wait_cycles, 900u);
  EXPECT_EQ(result.tiles[1].sync_wait_cycles, 600u);
  EXPECT_EQ(result.cycles, 900u + 6 * 4);
}

TEST(SyncTiming, XwaitCountsFromTheLastRelease) {
  Code code;
  code.main(Opcode::Xwait, {100});
  code.main(Opcode::Getcount, {1});  // 100
  code.main(Opcode::Sync);           // 106: exchange phase ends, release 706
  code.main(Opcode::Xwait, {50});
  code.main(Opcode::Getcount, {2});  // 756
  code.set(0, kStandardData);
  code.main(Opcode::Stw, {1, 0, 0});
  code.main(Opcode::Stw, {2, 0, 4});
  code.main(Opcode::Halt);
  WordsRun run = run_for_words(code, 2);
  EXPECT_EQ(run.words[0], 100u);
  EXPECT_EQ(run.words[1], 756u);
}

TEST(SyncTiming, SyncWaitsForTheWorkers) {
  Code code = start_workers(
      1, [](Code& c) { c.main(Opcode::Sync); c.main(Opcode::Getcount, {2}); c.main(Opcode::Stw, {2, 0, 0}); c.main(Opcode::Halt); },
      [](Code& c) {
        c.main(Opcode::Rpti, {20, 1});
        c.main(Opcode::Nop);
        c.main(Opcode::Exit);
      });
  WordsRun run = run_for_words(code, 1);
  // Worker 0: first issue 36, exit at 36 + 6 x 21 = 162: the tile arrives at
  // 163 and is released at 763.
  EXPECT_EQ(run.words[0], 763u);
}

}  // namespace
}  // namespace tilec::sim
