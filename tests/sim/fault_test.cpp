// Every fault of docs/isa.md raises a sim::Fault with one line naming the
// tile, the context, the pc, the bundle and what went wrong.
#include "sim/fault.h"
#include "sim_test_support.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>

namespace tilec::sim {
namespace {

using namespace testing;

// Runs the package and returns the fault's message ("" and a test failure
// when it runs cleanly).
std::string fault_of(const package::Package& package, SimOptions options = {},
                     const MachineModel& machine = MachineModel{}) {
  Device device(package, machine.name == ipu21().name ? ipu21_cut(static_cast<std::uint32_t>(package.tiles.size()))
                                                      : machine);
  try {
    device.run(options);
  } catch (const Fault& fault) {
    EXPECT_EQ(fault.kind(), ErrorKind::Failure);
    return fault.what();
  }
  ADD_FAILURE() << "the program ran without a fault";
  return "";
}

std::string fault_of(const Code& code, SimOptions options = {}) {
  return fault_of(package_of(1, image(code)), options);
}

Code halting() {
  Code code;
  code.main(Opcode::Halt);
  return code;
}

// A package where tile t runs codes[t].
package::Package tiles_running(const std::vector<Code>& codes) {
  package::Package package = package_of(static_cast<std::uint32_t>(codes.size()), image(codes[0]));
  for (std::size_t t = 1; t < codes.size(); ++t) package.tiles[t] = image(codes[t]);
  return package;
}

// ---- memory ----

// ---- the machine ----

TEST(MachineFaults, Fp8OnAMachineWhoseAmpHasNone) {
  Code code;
  code.flt(Opcode::Accz);
  code.flt(Opcode::Ampf8, {0, 4, 0, 0, 0});
  code.main(Opcode::Halt);
  package::Package package = package_of(1, image(code));
  const MachineModel mk2 = machine_by_name("ipu2:1");
  package.target = mk2.name;
  EXPECT_EQ(fault_of(package, {}, mk2),
            "tile 0, supervisor, pc 0x4c008 (amp.f8 $a0:3, $a4:5, 0, f143, f143): amp.f8 on a machine whose AMP takes "
            "no FP8 (its amp-types are f16/f32)");
}

TEST(MemoryFaults, AccessOutsideTheTileMemory) {
  Code code;
  code.main(Opcode::Ldw, {1, kZero, 0});
  EXPECT_EQ(fault_of(code), "tile 0, supervisor, pc 0x4c000 (ldw $m1, $mzero, 0): 32-bit load from 0x0, "
                            "outside the tile's memory (0x4c000-0xe8000)");
  Code past_end;
  past_end.set(1, 0xe7ff8);
  past_end.main(Opcode::St128, {0, 1, 0});
  EXPECT_EQ(fault_of(past_end), "tile 0, supervisor, pc 0x4c010 (st128 $a0:3, $m1, 0): 128-bit store to "
                                "0xe7ff8, outside the tile's memory (0x4c000-0xe8000)");
}

TEST(MemoryFaults, MisalignedAccessOnAWorker) {
  // Tile 12, worker 3: its argument is a misaligned address. The kernel
  // sits at 0x4c010, after a branch over it.
  Code code;
  int supervisor = code.label();
  code.branch(ins(Opcode::Br, {0}), 0, supervisor);
  code.main(Opcode::Nop);
  const std::uint32_t kernel = code.here();
  code.main(Opcode::Ld128, {0, 0, 0});
  code.main(Opcode::Rpti, {100, 1});  // so workers 0..2 still run when worker 3 starts
  code.main(Opcode::Nop);
  code.main(Opcode::Exit);
  code.bind(supervisor);
  code.main(Opcode::Xdone);
  code.set(1, kernel);
  code.set(2, kInterleavedData);
  for (int worker = 0; worker < 3; ++worker) code.main(Opcode::Run, {1, 2});
  code.set(2, kInterleavedData + 4);
  code.main(Opcode::Run, {1, 2});
  code.main(Opcode::Wsync);
  code.main(Opcode::Halt);
  std::vector<Code> codes(13, halting());
  codes[12] = code;
  EXPECT_EQ(kernel, 0x4c010u);
  EXPECT_EQ(fault_of(tiles_running(codes)),
            "tile 12, worker 3, pc 0x4c010 (ld128 $a0:3, $m0, 0): misaligned 128-bit load from 0x80004");
}

TEST(MemoryFaults, WideAccessToStandardMemory) {
  Code code;
  code.set(1, kStandardData);
  code.main(Opcode::St128, {0, 1, 0});
  EXPECT_EQ(fault_of(code), "tile 0, supervisor, pc 0x4c010 (st128 $a0:3, $m1, 0): 128-bit store to 0x60000 "
                            "in standard memory (128-bit accesses reach only interleaved memory)");
}

TEST(MemoryFaults, FaultCarriesItsPlace) {
  Code code;
  code.set(2, 0x4c001);
  code.main(Opcode::Ldhu, {1, 2, 0});
  Device device(package_of(1, image(code)), ipu21_cut(1));
  try {
    device.run();
    FAIL() << "no fault";
  } catch (const Fault& fault) {
    EXPECT_EQ(fault.tile(), 0u);
    EXPECT_EQ(fault.context(), kSupervisorContext);
    EXPECT_EQ(fault.pc(), 0x4c010u);
    EXPECT_EQ(fault.bundle(), "ldhu $m1, $m2, 0");
    EXPECT_EQ(fault.message(), "misaligned 16-bit load from 0x4c001");
  }
}

// Tile 0 syncs, then faults; tile 1 syncs and halts: the fault carries the
// run up to it, with the profile recorded so far.
TEST(MemoryFaults, FaultCarriesTheRunUpToIt) {
  Code faulting;
  faulting.main(Opcode::Sync);
  faulting.set(2, 0x4c001);
  faulting.main(Opcode::Ldhu, {1, 2, 0});
  Code halting_after_sync;
  halting_after_sync.main(Opcode::Sync);
  halting_after_sync.main(Opcode::Halt);
  Device device(tiles_running({faulting, halting_after_sync}), ipu21_cut(2));
  try {
    device.run();
    FAIL() << "no fault";
  } catch (const Fault& fault) {
    ASSERT_NE(fault.partial_run(), nullptr);
    const RunResult& run = *fault.partial_run();
    // The sync releases at 600; the load issues a few bundles later.
    EXPECT_GT(fault.cycle(), 600u);
    EXPECT_LT(fault.cycle(), 700u);
    EXPECT_EQ(run.syncs, 1u);
    EXPECT_EQ(run.cycles, fault.cycle() + 1);
    ASSERT_EQ(run.tiles.size(), 2u);
    EXPECT_EQ(run.tiles[0].halt_cycle, 0u);  // it never halted
    EXPECT_GE(run.tiles[1].halt_cycle, 600u);
    ASSERT_EQ(run.profile.tiles.size(), 2u);
    ASSERT_EQ(run.profile.tiles[0].size(), 1u);
    EXPECT_EQ(run.profile.tiles[0][0].kind, ProfileEventKind::SyncWait);
    ASSERT_EQ(run.profile.tiles[1].size(), 2u);
    EXPECT_EQ(run.profile.tiles[1][1].kind, ProfileEventKind::Halt);
  }
}

// ---- fetch and decode ----

TEST(FetchFaults, UndecodableBundles) {
  Code falls_off;
  falls_off.main(Opcode::Nop);  // then zeroed memory
  EXPECT_EQ(fault_of(falls_off), "tile 0, supervisor, pc 0x4c008 (bundle 0x0000000000000000): undecodable "
                                 "bundle: main-slot word 0x00000000 is not a main-slot instruction");
  // A main-slot opcode in the float slot.
  Code code;
  code.main(Opcode::Nop);
  package::Package package = package_of(1, image(code));
  auto bytes = std::make_shared<std::vector<std::uint8_t>>(*package.tiles[0].segments[0].bytes);
  (*bytes)[4] = static_cast<std::uint8_t>(Opcode::Nop);
  package.tiles[0].segments[0].bytes = bytes;
  EXPECT_EQ(fault_of(package), "tile 0, supervisor, pc 0x4c000 (bundle 0x0000000100000001): undecodable "
                               "bundle: float-slot word 0x00000001 is not a float-slot instruction");
}

TEST(FetchFaults, FetchFromInterleavedMemoryOutsideMemoryOrMisaligned) {
  auto jump_to = [](std::uint32_t target) {
    Code code;
    code.set(1, target);
    code.main(Opcode::Jr, {1});
    return code;
  };
  // What lies in interleaved memory is read and shown, though it cannot run.
  EXPECT_EQ(fault_of(jump_to(0x80000)),
            "tile 0, supervisor, pc 0x80000 (bundle 0x0000000000000000): fetch from interleaved memory at 0x80000 "
            "(code runs from standard memory)");
  Code halt_as_data(kInterleavedData + 0x100);
  halt_as_data.main(Opcode::Halt);
  EXPECT_EQ(fault_of(package_of(1, image(jump_to(halt_as_data.base()), {data_segment(".data", halt_as_data.base(),
                                                                                     halt_as_data.bytes())}))),
            "tile 0, supervisor, pc 0x80100 (halt): fetch from interleaved memory at 0x80100 (code runs from "
            "standard memory)");
  EXPECT_EQ(fault_of(jump_to(0x40000)),
            "tile 0, supervisor, pc 0x40000 (no instruction could be read): fetch from 0x40000, outside the tile's "
            "memory");
  EXPECT_EQ(fault_of(jump_to(0xe8000)),
            "tile 0, supervisor, pc 0xe8000 (no instruction could be read): fetch from 0xe8000, outside the tile's "
            "memory");
  EXPECT_EQ(fault_of(jump_to(0x4c004)),
            "tile 0, supervisor, pc 0x4c004 (no instruction could be read): misaligned pc 0x4c004 (bundles are "
            "8-byte aligned)");
}

// ---- contexts and control ----

TEST(ControlFaults, ControlInstructionInARptBody) {
  Code code;
  code.main(Opcode::Rpti, {2, 2});
  code.main(Opcode::Nop);
  int self = code.label();
  code.bind(self);
  code.branch(ins(Opcode::Br, {0}), 0, self);
  EXPECT_EQ(fault_of(code), "tile 0, supervisor, pc 0x4c010 (br .+0): control instruction br in a rpt body "
                            "(0x4c008..0x4c018)");
}

// The supervisor starts one worker at the kernel `body` builds.
Code with_worker(const std::function<void(Code&)>& body, const std::function<void(Code&)>& after_run) {
  Code code;
  code.main(Opcode::Xdone);
  std::size_t set_at = code.size();
  code.set(1, 0);
  code.main(Opcode::Run, {1, kZero});
  after_run(code);
  const std::uint32_t kernel = code.here();
  code.at(set_at).main.operands[1] = static_cast<std::int32_t>(kernel & 0xfffff);
  code.at(set_at + 1).main.operands[1] = static_cast<std::int32_t>(kernel >> 16);
  body(code);
  return code;
}

TEST(ControlFaults, SupervisorInstructionOnAWorkerAndExitOnTheSupervisor) {
  Code code = with_worker([](Code& c) { c.main(Opcode::Sync); },
                          [](Code& c) { c.main(Opcode::Wsync); c.main(Opcode::Halt); });
  EXPECT_EQ(fault_of(code), "tile 0, worker 0, pc 0x4c030 (sync): sync is a supervisor-only instruction");
  Code exit;
  exit.main(Opcode::Exit);
  EXPECT_EQ(fault_of(exit), "tile 0, supervisor, pc 0x4c000 (exit): exit on the supervisor (only workers may use it)");
}

TEST(ControlFaults, HaltWhileWorkersRun) {
  Code code = with_worker(
      [](Code& c) {
        c.main(Opcode::Rpti, {100, 1});
        c.main(Opcode::Nop);
        c.main(Opcode::Exit);
      },
      [](Code& c) { c.main(Opcode::Halt); });
  EXPECT_EQ(fault_of(code), "tile 0, supervisor, pc 0x4c020 (halt): halt while worker 0 still runs");
}

TEST(ControlFaults, RunInAnExchangePhase) {
  Code code;
  code.main(Opcode::Run, {kZero, kZero});
  EXPECT_EQ(fault_of(code), "tile 0, supervisor, pc 0x4c000 (run $mzero, $mzero): run in an exchange phase "
                            "(a superstep's exchange ends with xdone)");
}

TEST(ControlFaults, RunawayProgramTripsTheWatchdog) {
  Code code;
  int self = code.label();
  code.bind(self);
  code.branch(ins(Opcode::Br, {0}), 0, self);
  SimOptions options;
  options.watchdog_cycles = 1000;
  EXPECT_EQ(fault_of(code, options),
            "tile 0, supervisor, pc 0x4c000 (br .+0): watchdog: cycle 1002 is more than 1000 cycles after the "
            "last sync released the tile (cycle 0) without a sync or halt");
}

// The watchdog restarts at every sync; the run's cycle limit does not.
TEST(ControlFaults, AProgramThatSyncsForeverStopsAtTheCycleLimit) {
  Code code;
  int top = code.label();
  code.bind(top);
  code.main(Opcode::Sync);
  code.branch(ins(Opcode::Br, {0}), 0, top);
  SimOptions options;
  options.max_cycles = 100'000;
  // The sync that crosses the limit releases the tile past it: the branch
  // after it is the first bundle refused.
  const std::string fault = fault_of(code, options);
  const std::string start = "tile 0, supervisor, pc 0x4c008 (br .-1): cycle limit: the run reached cycle ";
  ASSERT_EQ(fault.rfind(start, 0), 0u) << fault;
  EXPECT_GE(std::stoull(fault.substr(start.size())), options.max_cycles) << fault;
  EXPECT_NE(fault.find(" without halting (the limit is 100000 cycles, --max-cycles)"), std::string::npos) << fault;
}

TEST(ControlFaults, TheCycleLimitIsTheFirstCycleNoBundleMayIssueIn) {
  Code code;
  code.main(Opcode::Rpti, {50, 1});
  code.main(Opcode::Nop);
  code.main(Opcode::Halt);
  Device device(package_of(1, image(code)), ipu21_cut(1));
  const std::uint64_t halt = device.run().cycles;  // the halt's issue cycle
  SimOptions options;
  options.max_cycles = halt + 1;
  EXPECT_EQ(device.run(options).cycles, halt);
  options.max_cycles = halt;
  EXPECT_EQ(fault_of(package_of(1, image(code)), options),
            fmt::format("tile 0, supervisor, pc 0x4c010 (halt): cycle limit: the run reached cycle {} without halting "
                        "(the limit is {} cycles, --max-cycles)",
                        halt, halt));
}

TEST(ControlFaults, WatchdogCountsFromTheLastSync) {
  // 150 nops per superstep, twice: fine with a 1000-cycle watchdog.
  Code code;
  for (int step = 0; step < 2; ++step) {
    code.main(Opcode::Rpti, {150, 1});
    code.main(Opcode::Nop);
    code.main(Opcode::Sync);
  }
  code.main(Opcode::Halt);
  SimOptions options;
  options.watchdog_cycles = 1000;
  Device device(package_of(1, image(code)), ipu21_cut(1));
  EXPECT_EQ(device.run(options).syncs, 2u);
}

// ---- exchange ----

// Tile `from` runs `sender`, tile `to` runs `receiver`, all others halt.
std::string exchange_fault(std::uint32_t tiles, const std::vector<std::pair<std::uint32_t, Code>>& programs,
                           std::vector<std::vector<std::uint32_t>> groups = {}) {
  std::vector<Code> codes(tiles, halting());
  for (const auto& [tile, code] : programs) codes[tile] = code;
  package::Package package = tiles_running(codes);
  package.exchange_groups = std::move(groups);
  return fault_of(package);
}

// set $m1, $m2, $m3 (6 bundles), then the exchange instruction at 0x4c030.
Code exchanging(Opcode opcode, std::uint32_t bytes, std::uint32_t peer, std::uint32_t wait = 0) {
  Code code;
  if (wait) code.main(Opcode::Xwait, {static_cast<std::int32_t>(wait)});
  code.set(1, kInterleavedData);
  code.set(2, bytes);
  code.set(3, peer);
  code.main(opcode, {1, 2, 3});
  code.main(Opcode::Xdone);
  code.main(Opcode::Halt);
  return code;
}

TEST(ExchangeFaults, CollidingReceivesNameBothSourcesAndTheCycle) {
  // Tiles 1 and 2 send 16 words at cycle 36; their first words reach tile 0 at 52.
  Code receiver;
  receiver.set(1, kInterleavedData);
  receiver.set(2, 64);
  receiver.set(3, 1);
  receiver.main(Opcode::Recv, {1, 2, 3});
  receiver.set(3, 2);
  receiver.main(Opcode::Recv, {1, 2, 3});
  receiver.main(Opcode::Xdone);
  receiver.main(Opcode::Halt);
  EXPECT_EQ(exchange_fault(3, {{0, receiver}, {1, exchanging(Opcode::Send, 64, 0)}, {2, exchanging(Opcode::Send, 64, 0)}}),
            "tile 2, supervisor, pc 0x4c030 (send $m1, $m2, $m3): colliding receives at tile 0 in cycle 52: "
            "data from tile 1 and tile 2 arrive in the same cycle");
  // Overlapping, not simultaneous: tile 2's xwait delays its send to cycle
  // 46, so its first word lands at 62 while tile 1's last lands at 67.
  EXPECT_EQ(exchange_fault(3, {{0, receiver}, {1, exchanging(Opcode::Send, 64, 0)}, {2, exchanging(Opcode::Send, 64, 0, 10)}}),
            "tile 2, supervisor, pc 0x4c038 (send $m1, $m2, $m3): colliding receives at tile 0 in cycle 62: "
            "data from tile 1 and tile 2 arrive in the same cycle");
}

TEST(ExchangeFaults, DataBeforeItsReceiveIsArmed) {
  EXPECT_EQ(exchange_fault(2, {{0, exchanging(Opcode::Send, 16, 1)}, {1, exchanging(Opcode::Recv, 16, 0, 100)}}),
            "tile 0, supervisor, pc 0x4c030 (send $m1, $m2, $m3): data for tile 1 arrives in cycle 52, before its "
            "receive is armed in cycle 136 (pc 0x4c038)");
}

TEST(ExchangeFaults, DataWithNoReceive) {
  Code idle;
  idle.main(Opcode::Xdone);
  idle.main(Opcode::Halt);
  EXPECT_EQ(exchange_fault(2, {{0, exchanging(Opcode::Send, 16, 1)}, {1, idle}}),
            "tile 0, supervisor, pc 0x4c030 (send $m1, $m2, $m3): data for tile 1 arrives in cycle 52 but tile 1 "
            "armed no receive for it");
}

TEST(ExchangeFaults, SendAndReceiveLengthsDiffer) {
  EXPECT_EQ(exchange_fault(2, {{0, exchanging(Opcode::Send, 16, 1)}, {1, exchanging(Opcode::Recv, 32, 0)}}),
            "tile 0, supervisor, pc 0x4c030 (send $m1, $m2, $m3): send of 16 bytes meets a receive of 32 bytes on "
            "tile 1 (pc 0x4c030)");
}

TEST(ExchangeFaults, ArmedReceiveGotNoData) {
  Code idle;
  idle.main(Opcode::Sync);
  idle.main(Opcode::Halt);
  Code receiver = exchanging(Opcode::Recv, 16, 0);
  EXPECT_EQ(exchange_fault(2, {{0, idle}, {1, receiver}}),
            "tile 1, supervisor, pc 0x4c030 (recv $m1, $m2, $m3): receive of 16 bytes from tile 0 got no data in "
            "this exchange phase");
}

TEST(ExchangeFaults, SendLengthNotAWholeNumberOfWords) {
  EXPECT_EQ(exchange_fault(2, {{0, exchanging(Opcode::Send, 6, 1)}}),
            "tile 0, supervisor, pc 0x4c030 (send $m1, $m2, $m3): send of 6 bytes: the length must be a multiple of 4");
}

TEST(ExchangeFaults, BuffersOutsideMemoryOrMisaligned) {
  Code outside;
  outside.set(2, 16);
  outside.main(Opcode::Send, {kZero, 2, kZero});
  EXPECT_EQ(fault_of(outside), "tile 0, supervisor, pc 0x4c010 (send $mzero, $m2, $mzero): send buffer 0x0..0x10 "
                               "lies outside the tile's memory (0x4c000-0xe8000)");
  Code misaligned;
  misaligned.set(1, kStandardData + 2);
  misaligned.set(2, 16);
  misaligned.main(Opcode::Recv, {1, 2, kZero});
  EXPECT_EQ(fault_of(misaligned), "tile 0, supervisor, pc 0x4c020 (recv $m1, $m2, $mzero): misaligned receive "
                                  "buffer at 0x60002 (exchange moves 32-bit words)");
}

TEST(ExchangeFaults, SendToNoSuchTileOrGroup) {
  EXPECT_EQ(exchange_fault(2, {{0, exchanging(Opcode::Send, 8, 2)}}),
            "tile 0, supervisor, pc 0x4c030 (send $m1, $m2, $m3): send to tile 2, outside 0..1");
  EXPECT_EQ(exchange_fault(2, {{0, exchanging(Opcode::Send, 8, 0x80000001u)}}, {{1}}),
            "tile 0, supervisor, pc 0x4c030 (send $m1, $m2, $m3): send to exchange group 1, but the package has 1 "
            "groups");
}

// $m7 = run, $m8 = stride, xpat at 0x4c020; then `opcode` of `bytes` at
// `address` (its registers set from 0x4c028, the instruction at 0x4c058).
Code patterned(std::uint32_t run, std::uint32_t stride, Opcode opcode = Opcode::Nop, std::uint32_t address = 0,
               std::uint32_t bytes = 0) {
  Code code;
  code.set(7, run);
  code.set(8, stride);
  code.main(Opcode::Xpat, {7, 8});
  if (opcode != Opcode::Nop) {
    code.set(1, address);
    code.set(2, bytes);
    code.set(3, 0);
    code.main(opcode, {1, 2, 3});
  }
  code.main(Opcode::Halt);
  return code;
}

TEST(ExchangeFaults, PatternRunOrStrideNotWholeWords) {
  EXPECT_EQ(fault_of(patterned(0, 16)), "tile 0, supervisor, pc 0x4c020 (xpat $m7, $m8): pattern run of 0 bytes: "
                                        "a run must be a positive multiple of 4");
  EXPECT_EQ(fault_of(patterned(6, 16)), "tile 0, supervisor, pc 0x4c020 (xpat $m7, $m8): pattern run of 6 bytes: "
                                        "a run must be a positive multiple of 4");
  EXPECT_EQ(fault_of(patterned(8, 18)), "tile 0, supervisor, pc 0x4c020 (xpat $m7, $m8): pattern stride of 18 "
                                        "bytes: the stride must be a multiple of 4");
}

TEST(ExchangeFaults, PatternStrideShorterThanItsRun) {
  EXPECT_EQ(fault_of(patterned(8, 4)), "tile 0, supervisor, pc 0x4c020 (xpat $m7, $m8): pattern stride of 4 bytes "
                                       "is shorter than its 8-byte run");
}

TEST(ExchangeFaults, PatternedLengthNotAWholeNumberOfRuns) {
  EXPECT_EQ(fault_of(patterned(8, 16, Opcode::Send, kInterleavedData, 12)),
            "tile 0, supervisor, pc 0x4c058 (send $m1, $m2, $m3): send of 12 bytes under a pattern of 8-byte runs: "
            "the length must be a whole number of runs");
  EXPECT_EQ(fault_of(patterned(8, 16, Opcode::Recv, kInterleavedData, 20)),
            "tile 0, supervisor, pc 0x4c058 (recv $m1, $m2, $m3): receive of 20 bytes under a pattern of 8-byte "
            "runs: the length must be a whole number of runs");
}

TEST(ExchangeFaults, PatternedRunOutsideMemoryOrMisaligned) {
  // The first run fits; the second starts at the end of memory.
  EXPECT_EQ(fault_of(patterned(8, 16, Opcode::Send, 0xe7ff0, 16)),
            "tile 0, supervisor, pc 0x4c058 (send $m1, $m2, $m3): send run 1 of 2 at 0xe8000..0xe8008 (8-byte runs "
            "every 16 bytes) lies outside the tile's memory (0x4c000-0xe8000)");
  // The last of three runs straddles the end.
  EXPECT_EQ(fault_of(patterned(8, 12, Opcode::Recv, 0xe7fe8, 24)),
            "tile 0, supervisor, pc 0x4c058 (recv $m1, $m2, $m3): receive run 2 of 3 at 0xe8000..0xe8008 (8-byte "
            "runs every 12 bytes) lies outside the tile's memory (0x4c000-0xe8000)");
  // A stride that runs off the 32-bit address space.
  EXPECT_EQ(fault_of(patterned(8, 0x80000000u, Opcode::Recv, kInterleavedData, 24)),
            "tile 0, supervisor, pc 0x4c058 (recv $m1, $m2, $m3): receive run 1 of 3 at 0x80080000..0x80080008 "
            "(8-byte runs every 2147483648 bytes) lies outside the tile's memory (0x4c000-0xe8000)");
  EXPECT_EQ(fault_of(patterned(8, 16, Opcode::Send, 0x1000, 16)),
            "tile 0, supervisor, pc 0x4c058 (send $m1, $m2, $m3): send run 0 of 2 at 0x1000..0x1008 (8-byte runs "
            "every 16 bytes) lies outside the tile's memory (0x4c000-0xe8000)");
  EXPECT_EQ(fault_of(patterned(8, 16, Opcode::Recv, kInterleavedData + 2, 16)),
            "tile 0, supervisor, pc 0x4c058 (recv $m1, $m2, $m3): misaligned receive buffer at 0x80002 (exchange "
            "moves 32-bit words)");
}

TEST(ExchangeFaults, ExchangeInAComputePhase) {
  Code code;
  code.main(Opcode::Xdone);
  code.main(Opcode::Recv, {1, 2, 3});
  EXPECT_EQ(fault_of(code), "tile 0, supervisor, pc 0x4c008 (recv $m1, $m2, $m3): recv in a compute phase (after "
                            "this superstep's xdone)");
}

TEST(ExchangeFaults, TileHaltsWhileOthersWaitAtASync) {
  Code syncing;
  syncing.main(Opcode::Nop);
  syncing.main(Opcode::Sync);
  syncing.main(Opcode::Halt);
  EXPECT_EQ(exchange_fault(3, {{1, syncing}}),
            "tile 0, supervisor, pc 0x4c000 (halt): halt while tile 1 waits at a sync (arrived in cycle 6)");
}

}  // namespace
}  // namespace tilec::sim
