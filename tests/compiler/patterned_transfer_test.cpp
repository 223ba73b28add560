// Patterned transfers through the exchange stages: a hand-made LIR of
// blocks moved between column-major pieces of different row ranges,
// merged (merge_copies, eliminate), scheduled, lowered to xpat / recv /
// send, emitted as whole supervisor programs and simulated; every byte
// lands where its (row, column) says, and every send issues at the cycle
// the schedule planned for it.
#include "compiler/dump.h"
#include "compiler/exchange_schedule.h"
#include "compiler/lowering.h"
#include "compiler/mid.h"
#include "compiler/storage.h"
#include "compiler/tile_code.h"
#include "sim/device.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

namespace tilec::compiler {
namespace {

using isa::Opcode;

// FP8 pieces of 4 columns in 16-row panels: A and D hold rows 0..32 (2
// panels), B rows 0..48 (3 panels); C is a 4 x 16-row staging block.
constexpr std::uint32_t kColumns = 4;
constexpr std::uint32_t kRowsA = 32, kRowsB = 48, kRowsC = 16;
constexpr int kA = 0, kB = 1, kC = 2, kD = 3;
constexpr std::uint32_t kAddressA = 0x80000, kAddressB = 0x80100, kAddressC = 0x80200, kAddressD = 0x80300;
constexpr int kGroups = 2, kGroupSize = 3;

struct TwoGroups {
  MidProgram mid;
  Lir lir;

  TwoGroups() {
    mid.groups.group_size = kGroupSize;
    mid.groups.groups = kGroups;
    lir.mid = &mid;
    lir.phases = 1;
    add_buffer("A", kColumns * kRowsA, kAddressA);
    add_buffer("B", kColumns * kRowsB, kAddressB);
    add_buffer("C", kColumns * kRowsC, kAddressC);
    add_buffer("D", kColumns * kRowsA, kAddressD);
  }

  void add_buffer(const char* name, std::uint32_t bytes, std::uint32_t address) {
    Buffer buffer;
    buffer.name = name;
    buffer.bytes = bytes;
    buffer.lifetime.resident = true;
    buffer.address = address;
    lir.buffers.push_back(buffer);
  }

  void transfer(int source, int destination, Place from, BytePattern from_pattern, Place to,
                BytePattern to_pattern, std::uint32_t bytes, const char* what) {
    Transfer t;
    t.source_tile = source;
    t.destination_tiles = {destination};
    t.source = from;
    t.destination = to;
    t.source_pattern = from_pattern;
    t.destination_pattern = to_pattern;
    t.bytes = bytes;
    t.what = what;
    lir.transfers.push_back(std::move(t));
  }
};

Place at(int buffer, std::uint32_t offset) { return Place{buffer, offset, 0, 0}; }

// 16 rows of each column: runs of 16 bytes, one column (a piece's rows) apart.
constexpr BytePattern kRowsOfA{16, kRowsA};
constexpr BytePattern kRowsOfB{16, kRowsB};
constexpr BytePattern kContiguous{};

void add_block_moves(TwoGroups& plan) {
  // Rows 16..32 of D on tile 0 to rows 16..32 of B on tiles 1 and 2 (one
  // multicast once merged: same bytes, same patterns).
  plan.transfer(0, 1, at(kD, 16), kRowsOfA, at(kB, 16), kRowsOfB, 64, "D rows 16..32 -> B");
  plan.transfer(0, 2, at(kD, 16), kRowsOfA, at(kB, 16), kRowsOfB, 64, "D rows 16..32 -> B");
  // Rows 0..16 of A's columns 0, 1 and then 1, 2 into tile 1's C: a
  // contiguous merge would read columns 0..3 instead.
  plan.transfer(0, 1, at(kA, 0), kRowsOfA, at(kC, 0), kContiguous, 32, "A cols 0,1 -> C");
  plan.transfer(0, 1, at(kA, 32), kRowsOfA, at(kC, 32), kContiguous, 32, "A cols 1,2 -> C");
  // Tile 0's C into rows 0..16 of tile 2's B.
  plan.transfer(0, 2, at(kC, 0), kContiguous, at(kB, 0), kRowsOfB, 64, "C -> B rows 0..16");
  // Tile 1, which receives under a pattern, also sends under one: rows
  // 0..16 of its A's columns 0, 1 into tile 2's C.
  plan.transfer(1, 2, at(kA, 0), kRowsOfA, at(kC, 0), kContiguous, 32, "A cols 0,1 -> C");
}

std::uint8_t initial_byte(std::uint32_t tile, int buffer, std::uint32_t index) {
  return static_cast<std::uint8_t>(tile * 131 + static_cast<std::uint32_t>(buffer) * 59 + index * 7 + 1);
}

std::vector<std::uint8_t> initial_bytes(std::uint32_t tile, int buffer, std::uint32_t size) {
  std::vector<std::uint8_t> bytes(size);
  for (std::uint32_t i = 0; i < size; ++i) bytes[i] = initial_byte(tile, buffer, i);
  return bytes;
}

package::Binding bytes_binding(const std::string& name, std::uint32_t tile, std::uint32_t address,
                               std::uint32_t size) {
  package::Piece piece{tile, address, {0}, {size}, {1}};
  return package::Binding{name, package::BindingRole::Output, graph::TensorType{{size}, {ElementType::F143, 0}},
                          {piece}};
}

struct Lowered {
  ExchangePlan plan;
  ExchangeCode exchange;
  std::vector<TileCode> programs;
  MemoryMap map;
};

Lowered lower(const Lir& lir, const MachineModel& machine) {
  Lowered lowered;
  lowered.plan = schedule_exchanges(lir, machine, false);
  lowered.map.code_address = machine.standard.begin;
  lowered.map.arguments_address = machine.standard.begin + 0x8000;
  const isa::Image library;
  TileCodeContext context{lir, lowered.plan, library, machine, &lowered.map};
  lowered.exchange = lower_exchanges(context);
  std::vector<TileArguments> arguments = prepare_tile_code(context);
  lowered.programs = emit_tile_code(context, lowered.exchange, arguments);
  return lowered;
}

TEST(PatternedTransfers, MergeKeepsPatternsExact) {
  TwoGroups plan;
  add_block_moves(plan);
  merge_copies(plan.lir);
  eliminate(plan.lir);
  // The two sends of D's rows 16..32 became one multicast; nothing else merged.
  ASSERT_EQ(plan.lir.transfers.size(), 5u);
  int multicasts = 0;
  for (const Transfer& transfer : plan.lir.transfers) {
    if (transfer.destination_tiles.size() < 2) continue;
    ++multicasts;
    EXPECT_EQ(transfer.destination_tiles, (std::vector<int>{1, 2}));
    EXPECT_EQ(transfer.source_pattern, kRowsOfA);
    EXPECT_EQ(transfer.destination_pattern, kRowsOfB);
    EXPECT_EQ(transfer.bytes, 64u);
  }
  EXPECT_EQ(multicasts, 1);
  // Dumps show each end's pattern as [run/stride].
  const std::string dump = dump_lir(plan.lir);
  EXPECT_NE(dump.find("phase 0 send 0 64 bytes D+16 [16/32] -> 1,2 at B+16 [16/48]  (D rows 16..32 -> B)"),
            std::string::npos)
      << dump;
  EXPECT_NE(dump.find("phase 0 send 0 64 bytes C+0 -> 2 at B+0 [16/48]  (C -> B rows 0..16)"), std::string::npos)
      << dump;
}

TEST(PatternedTransfers, MergeDoesNotMulticastDifferentPatterns) {
  TwoGroups landing;
  landing.transfer(0, 1, at(kA, 0), kRowsOfA, at(kB, 0), kRowsOfB, 64, "to 1");
  landing.transfer(0, 2, at(kA, 0), kRowsOfA, at(kB, 0), BytePattern{16, kRowsA}, 64, "to 2");
  merge_copies(landing.lir);
  EXPECT_EQ(landing.lir.transfers.size(), 2u);
  TwoGroups leaving;
  leaving.transfer(0, 1, at(kA, 0), kRowsOfA, at(kC, 0), kContiguous, 64, "to 1");
  leaving.transfer(0, 2, at(kA, 0), kContiguous, at(kC, 0), kContiguous, 64, "to 2");
  merge_copies(leaving.lir);
  EXPECT_EQ(leaving.lir.transfers.size(), 2u);
}

TEST(PatternedTransfers, LoweringCountsWhatTheScheduleCounted) {
  TwoGroups plan;
  add_block_moves(plan);
  merge_copies(plan.lir);
  const MachineModel machine = ipu21_cut(kGroups * kGroupSize);
  Lowered lowered = lower(plan.lir, machine);
  for (std::uint32_t tile = 0; tile < machine.tiles; ++tile) {
    ExchangeRegisters registers;
    int counted = 0, patterned = 0;
    for (const ExchangeAction& action : lowered.plan.actions[0][tile]) {
      const Transfer& transfer = plan.lir.transfers[static_cast<std::size_t>(action.transfer)];
      counted += exchange_action_code(action, transfer, registers).bundles;
      const bool send = action.kind == ExchangeAction::Kind::Send;
      patterned += !(send ? transfer.source_pattern : transfer.destination_pattern).contiguous();
    }
    const std::vector<isa::Instruction>& code = lowered.exchange[0][tile];
    EXPECT_EQ(static_cast<int>(code.size()), counted) << "tile " << tile;
    auto is_xpat = [](const isa::Instruction& instruction) { return instruction.opcode == Opcode::Xpat; };
    EXPECT_EQ(std::count_if(code.begin(), code.end(), is_xpat), patterned) << "tile " << tile;
  }
  // Tile 4 (group 1's tile 1): two contiguous receives, the first stepping
  // the address to the second's; a patterned one, which steps the peer to
  // the send's tile; then a patterned send that keeps the run register and
  // sets the stride.
  std::uint32_t send_start = 0;
  for (const ExchangeAction& action : lowered.plan.actions[0][4])
    if (action.kind == ExchangeAction::Kind::Send) send_start = action.start;
  std::string text;
  for (const isa::Instruction& instruction : lowered.exchange[0][4]) text += isa::instruction_text(instruction) + "\n";
  EXPECT_EQ(text, fmt::format("setzi $m1, {}\nsetzi $m2, 32\nsetzi $m3, 3\nrecvn $m1, $m2, $m3, 0\n"
                              "recv $m1, $m2, $m3\n"
                              "setzi $m1, {}\nsetzi $m2, 64\nsetzi $m7, 16\nsetzi $m8, 48\nxpat $m7, $m8\n"
                              "recvn $m1, $m2, $m3, 2\n"
                              "setzi $m1, {}\nsetzi $m2, 32\nsetzi $m8, 32\nxpat $m7, $m8\nxwait {}\n"
                              "send $m1, $m2, $m3\n",
                              kAddressC, kAddressB + 16, kAddressA, send_start));
  const std::string actions = dump_exchanges(plan.lir, lowered.plan, 4);
  EXPECT_NE(actions.find("    receive 64 bytes [16/48] from tile 3: D rows 16..32 -> B\n"), std::string::npos) << actions;
  EXPECT_NE(actions.find(fmt::format("    send 32 bytes [16/32] to tile 5 at cycle {}: A cols 0,1 -> C\n", send_start)),
            std::string::npos)
      << actions;
}

TEST(PatternedTransfers, LandExactlyAndSendAtTheirPlannedCycles) {
  TwoGroups plan;
  add_block_moves(plan);
  merge_copies(plan.lir);
  eliminate(plan.lir);
  const MachineModel machine = ipu21_cut(kGroups * kGroupSize);
  Lowered lowered = lower(plan.lir, machine);

  package::Package package;
  package.target = machine.name;
  package.exchange_groups = lowered.plan.groups;
  for (std::uint32_t tile = 0; tile < machine.tiles; ++tile) {
    package::TileImage image;
    image.entry = lowered.map.code_address;
    auto bytes = [](std::vector<std::uint8_t> data) {
      return std::make_shared<const std::vector<std::uint8_t>>(std::move(data));
    };
    image.segments.push_back({".text", lowered.map.code_address, bytes(lowered.programs[tile].code), true});
    image.segments.push_back({".a", kAddressA, bytes(initial_bytes(tile, kA, kColumns * kRowsA)), false});
    image.segments.push_back({".c", kAddressC, bytes(initial_bytes(tile, kC, kColumns * kRowsC)), false});
    image.segments.push_back({".d", kAddressD, bytes(initial_bytes(tile, kD, kColumns * kRowsA)), false});
    package.tiles.push_back(std::move(image));
    package.bindings.push_back(bytes_binding(fmt::format("b{}", tile), tile, kAddressB, kColumns * kRowsB));
    package.bindings.push_back(bytes_binding(fmt::format("c{}", tile), tile, kAddressC, kColumns * kRowsC));
  }
  sim::Device device(package, machine);
  sim::RunResult run = device.run();

  for (std::uint32_t group = 0; group < kGroups; ++group) {
    const std::uint32_t t0 = group * kGroupSize, t1 = t0 + 1, t2 = t0 + 2;
    // Element (row, column) of a 2-panel piece (A or D) as loaded.
    auto element = [&](std::uint32_t tile, int buffer, std::uint32_t row, std::uint32_t column) {
      return initial_byte(tile, buffer, column * kRowsA + row);
    };
    std::vector<std::uint8_t> b1(kColumns * kRowsB, 0), b2(kColumns * kRowsB, 0);
    std::vector<std::uint8_t> c1(kColumns * kRowsC), c2 = initial_bytes(t2, kC, kColumns * kRowsC);
    const std::uint32_t c1_columns[kColumns] = {0, 1, 1, 2};
    for (std::uint32_t column = 0; column < kColumns; ++column)
      for (std::uint32_t row = 0; row < 16; ++row) {
        b1[column * kRowsB + 16 + row] = b2[column * kRowsB + 16 + row] = element(t0, kD, 16 + row, column);
        b2[column * kRowsB + row] = initial_byte(t0, kC, column * kRowsC + row);
        c1[column * kRowsC + row] = element(t0, kA, row, c1_columns[column]);
        if (column < 2) c2[column * kRowsC + row] = element(t1, kA, row, column);
      }
    EXPECT_EQ(device.read(fmt::format("b{}", t1)).bytes, b1) << "group " << group;
    EXPECT_EQ(device.read(fmt::format("b{}", t2)).bytes, b2) << "group " << group;
    EXPECT_EQ(device.read(fmt::format("c{}", t1)).bytes, c1) << "group " << group;
    EXPECT_EQ(device.read(fmt::format("c{}", t2)).bytes, c2) << "group " << group;
  }

  // Each send's exchange span starts at its planned cycle (phase 0 starts at 0).
  for (std::uint32_t tile = 0; tile < machine.tiles; ++tile) {
    std::vector<std::uint64_t> planned, issued;
    for (const ExchangeAction& action : lowered.plan.actions[0][tile])
      if (action.kind == ExchangeAction::Kind::Send) planned.push_back(action.start);
    for (const sim::ProfileEvent& event : run.profile.tiles[tile])
      if (event.kind == sim::ProfileEventKind::SupervisorExchange) issued.push_back(event.begin);
    EXPECT_EQ(issued, planned) << "tile " << tile;
  }
}

}  // namespace
}  // namespace tilec::compiler
