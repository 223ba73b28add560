// Exchange between tiles: arrival timing, multicast groups, latency over
// columns, payloads read at send time, and byte patterns (xpat).
#include "sim_test_support.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace tilec::sim {
namespace {

using namespace testing;

constexpr std::uint32_t kBuffer = kStandardData + 0x100;
constexpr std::uint32_t kGroupBit = 0x80000000u;

std::vector<std::uint32_t> counting_words(std::uint32_t count, std::uint32_t first) {
  std::vector<std::uint32_t> words(count);
  for (std::uint32_t i = 0; i < count; ++i) words[i] = first + i;
  return words;
}

// $m1 = address, $m2 = bytes, $m3 = peer, then `opcode` $m1, $m2, $m3.
void exchange(Code& code, Opcode opcode, std::uint32_t address, std::uint32_t bytes, std::uint32_t peer) {
  code.set(1, address);
  code.set(2, bytes);
  code.set(3, peer);
  code.main(opcode, {1, 2, 3});
}

// $m7 = run, $m8 = stride, then xpat $m7, $m8 (5 bundles).
void pattern(Code& code, std::uint32_t run, std::uint32_t stride) {
  code.set(7, run);
  code.set(8, stride);
  code.main(Opcode::Xpat, {7, 8});
}

// Records the cycle in word `slot` of kStandardData.
void record_cycle(Code& code, int slot) {
  code.main(Opcode::Getcount, {4});
  code.set(5, kStandardData);
  code.main(Opcode::Stw, {4, 5, 4 * slot});
}

struct Tiles {
  std::vector<Code> codes;
  std::vector<std::vector<std::uint32_t>> groups;
  std::vector<std::vector<std::uint8_t>> buffers;  // initial bytes at kBuffer, per tile
};

struct Outcome {
  RunResult result;
  std::vector<std::vector<std::uint32_t>> cycles;  // per tile: recorded cycles
  std::vector<std::vector<std::uint32_t>> buffers; // per tile: words at kBuffer
};

// On the first `machine_tiles` tiles of ipu21, with `overrides` of its
// fields ("exchange-bytes=8").
Outcome run_tiles(const Tiles& tiles, std::uint32_t machine_tiles, std::size_t buffer_words,
                  const std::string& overrides = "") {
  const auto count = static_cast<std::uint32_t>(tiles.codes.size());
  const MachineModel machine =
      machine_by_name(fmt::format("ipu21:tiles={}{}{}", machine_tiles, overrides.empty() ? "" : ",", overrides));
  package::Package package;
  package.target = machine.name;
  for (std::uint32_t t = 0; t < machine_tiles; ++t) {
    if (t < count) {
      std::vector<package::Segment> data;
      if (t < tiles.buffers.size()) data.push_back(data_segment(".buffer", kBuffer, tiles.buffers[t]));
      package.tiles.push_back(image(tiles.codes[t], std::move(data)));
    } else {
      Code idle;
      idle.main(Opcode::Halt);
      package.tiles.push_back(image(idle));
    }
  }
  package.exchange_groups = tiles.groups;
  for (std::uint32_t t = 0; t < count; ++t) {
    package.bindings.push_back(dense_binding(fmt::format("cycles{}", t), package::BindingRole::Output,
                                             f32_type({4}), t, kStandardData));
    package.bindings.push_back(dense_binding(fmt::format("buffer{}", t), package::BindingRole::Output,
                                             f32_type({static_cast<std::int64_t>(buffer_words)}), t, kBuffer));
  }
  Device device(package, machine);
  Outcome outcome;
  outcome.result = device.run();
  auto words = [&](const std::string& name) {
    graph::Tensor tensor = device.read(name);
    std::vector<std::uint32_t> out(tensor.bytes.size() / 4);
    std::memcpy(out.data(), tensor.bytes.data(), tensor.bytes.size());
    return out;
  };
  for (std::uint32_t t = 0; t < count; ++t) {
    outcome.cycles.push_back(words(fmt::format("cycles{}", t)));
    outcome.buffers.push_back(words(fmt::format("buffer{}", t)));
  }
  return outcome;
}

// Tile 0 sends `bytes` of counting words to tile 1 (sets at 0..30, the send
// at 36); each records the cycle after its exchange.
Tiles point_to_point(std::uint32_t bytes) {
  Tiles tiles;
  tiles.codes.resize(2);
  tiles.buffers = {as_bytes(counting_words(16, 100))};
  exchange(tiles.codes[0], Opcode::Send, kBuffer, bytes, 1);
  record_cycle(tiles.codes[0], 0);
  tiles.codes[0].main(Opcode::Xdone);
  tiles.codes[0].main(Opcode::Halt);
  exchange(tiles.codes[1], Opcode::Recv, kBuffer, bytes, 0);  // armed at 36
  tiles.codes[1].main(Opcode::Xdone);
  record_cycle(tiles.codes[1], 0);
  tiles.codes[1].main(Opcode::Halt);
  return tiles;
}

TEST(Exchange, PointToPointTiming) {
  Outcome outcome = run_tiles(point_to_point(64), 2, 16);
  EXPECT_EQ(outcome.cycles[0][0], 36u + 16);  // 16 words leave, one a cycle
  // Word 15 arrives at 36 + 15 + 16 (same column): xdone lets the
  // supervisor go on the cycle after.
  EXPECT_EQ(outcome.cycles[1][0], 36u + 15 + 16 + 1);
  EXPECT_EQ(outcome.buffers[1], counting_words(16, 100));
  EXPECT_EQ(outcome.result.tiles[0].bytes_sent, 64u);
  EXPECT_EQ(outcome.result.tiles[1].bytes_received, 64u);
}

// A machine that moves 8 bytes a cycle: the send leaves, and lands, in
// half the cycles; the latency is the same.
TEST(Exchange, WiderExchangeMovesMoreBytesACycle) {
  Outcome outcome = run_tiles(point_to_point(64), 2, 16, "exchange-bytes=8");
  EXPECT_EQ(outcome.cycles[0][0], 36u + 8);
  EXPECT_EQ(outcome.cycles[1][0], 36u + 7 + 16 + 1);
  EXPECT_EQ(outcome.buffers[1], counting_words(16, 100));
  // 20 bytes at 8 a cycle take 3 cycles, less than the supervisor's 6
  // between issues: the time is the issue's.
  EXPECT_EQ(run_tiles(point_to_point(20), 2, 16, "exchange-bytes=8").cycles[0][0], 36u + 6);
}

TEST(Exchange, HaltEndsTheExchangePhaseOnceTheDataIsIn) {
  Tiles tiles;
  tiles.codes.resize(2);
  tiles.buffers = {as_bytes(counting_words(16, 100))};
  exchange(tiles.codes[0], Opcode::Send, kBuffer, 64, 1);  // send at 36
  tiles.codes[0].main(Opcode::Halt);                        // 52
  exchange(tiles.codes[1], Opcode::Recv, kBuffer, 64, 0);   // armed at 36
  tiles.codes[1].main(Opcode::Halt);                        // 42, data in at 68
  Outcome outcome = run_tiles(tiles, 2, 16);
  EXPECT_EQ(outcome.result.tiles[0].halt_cycle, 52u);
  EXPECT_EQ(outcome.result.tiles[1].halt_cycle, 36u + 15 + 16 + 1);
  EXPECT_EQ(outcome.result.cycles, 68u);
  EXPECT_EQ(outcome.buffers[1], counting_words(16, 100));
}

TEST(Exchange, MulticastGroupDeliversToEveryMember) {
  Tiles tiles;
  tiles.codes.resize(4);
  tiles.groups = {{2, 3}, {1, 3}};
  tiles.buffers = {as_bytes(counting_words(8, 7))};
  exchange(tiles.codes[0], Opcode::Send, kBuffer, 32, kGroupBit | 1);  // to tiles 1 and 3
  tiles.codes[0].main(Opcode::Xdone);
  tiles.codes[0].main(Opcode::Halt);
  for (std::uint32_t t : {1u, 3u}) {
    exchange(tiles.codes[t], Opcode::Recv, kBuffer, 32, 0);
    tiles.codes[t].main(Opcode::Xdone);
    tiles.codes[t].main(Opcode::Halt);
  }
  tiles.codes[2].main(Opcode::Xdone);
  tiles.codes[2].main(Opcode::Halt);
  Outcome outcome = run_tiles(tiles, 4, 8);
  EXPECT_EQ(outcome.buffers[1], counting_words(8, 7));
  EXPECT_EQ(outcome.buffers[3], counting_words(8, 7));
  EXPECT_EQ(outcome.buffers[2], std::vector<std::uint32_t>(8, 0));
  EXPECT_EQ(outcome.result.tiles[0].bytes_sent, 32u);  // once, for both receivers
  EXPECT_EQ(outcome.result.tiles[3].bytes_received, 32u);
}

TEST(Exchange, LatencyGrowsWithColumnDistance) {
  // Tile 129 is two columns of 64 away from tile 0: 16 + 2 x 2 cycles.
  Tiles tiles;
  tiles.codes.resize(130);
  exchange(tiles.codes[0], Opcode::Send, kBuffer, 4, 129);  // send at 36
  tiles.codes[0].main(Opcode::Xdone);
  tiles.codes[0].main(Opcode::Halt);
  for (std::uint32_t t = 1; t < 129; ++t) {
    tiles.codes[t].main(Opcode::Xdone);
    tiles.codes[t].main(Opcode::Halt);
  }
  exchange(tiles.codes[129], Opcode::Recv, kBuffer, 4, 0);  // armed at 36
  tiles.codes[129].main(Opcode::Xdone);                     // 42
  record_cycle(tiles.codes[129], 0);
  tiles.codes[129].main(Opcode::Halt);
  Outcome outcome = run_tiles(tiles, 130, 1);
  EXPECT_EQ(outcome.cycles[129][0], 36u + 20 + 1);
}

TEST(Exchange, PayloadIsReadWhenTheSendIssues) {
  Tiles tiles;
  tiles.codes.resize(2);
  tiles.buffers = {as_bytes(counting_words(4, 1))};
  exchange(tiles.codes[0], Opcode::Send, kBuffer, 16, 1);
  tiles.codes[0].main(Opcode::Stw, {2, 1, 0});  // word 0 = 16 (the length) while in flight
  tiles.codes[0].main(Opcode::Xdone);
  tiles.codes[0].main(Opcode::Halt);
  exchange(tiles.codes[1], Opcode::Recv, kBuffer, 16, 0);
  tiles.codes[1].main(Opcode::Xdone);
  tiles.codes[1].main(Opcode::Halt);
  Outcome outcome = run_tiles(tiles, 2, 4);
  EXPECT_EQ(outcome.buffers[1], counting_words(4, 1));
  EXPECT_EQ(outcome.buffers[0][0], 16u);
}

TEST(Exchange, ReceivesFromOneSourceMatchItsSendsInOrder) {
  Tiles tiles;
  tiles.codes.resize(2);
  tiles.buffers = {as_bytes(counting_words(6, 50))};
  exchange(tiles.codes[0], Opcode::Send, kBuffer, 8, 1);      // words 50 51
  exchange(tiles.codes[0], Opcode::Send, kBuffer + 8, 16, 1); // words 52..55
  tiles.codes[0].main(Opcode::Xdone);
  tiles.codes[0].main(Opcode::Halt);
  exchange(tiles.codes[1], Opcode::Recv, kBuffer + 16, 8, 0);
  exchange(tiles.codes[1], Opcode::Recv, kBuffer, 16, 0);
  tiles.codes[1].main(Opcode::Xdone);
  tiles.codes[1].main(Opcode::Halt);
  Outcome outcome = run_tiles(tiles, 2, 6);
  EXPECT_EQ(outcome.buffers[1], (std::vector<std::uint32_t>{52, 53, 54, 55, 50, 51}));
}

TEST(Exchange, SteppingFormsMoveToTheNextAddressAndPeer) {
  // Tile 0 sends words 10..13 to tile 1, then 14..17 to tile 3 with one
  // sendn setting both up; tile 2 receives 4 words from tile 0 into its
  // buffer's end and nothing else. Tile 1 takes words from 0 and then (a
  // recvn's step of 2) from tile 2 into consecutive words.
  Tiles tiles;
  tiles.codes.resize(4);
  const std::vector<std::uint32_t> zeros(8, 0);
  tiles.buffers = {as_bytes(counting_words(8, 10)), as_bytes(zeros), as_bytes(counting_words(8, 70)), as_bytes(zeros)};
  // 16 bytes at kBuffer with `peer`, then the stepping form's next 16.
  auto two_steps = [](Code& code, Opcode stepping, Opcode plain, std::uint32_t peer) {
    code.set(1, kBuffer);
    code.set(2, 16);
    code.set(3, peer);
    code.main(stepping, {1, 2, 3, 2});
    code.main(plain, {1, 2, 3});
    code.main(Opcode::Xdone);
    code.main(Opcode::Halt);
  };
  two_steps(tiles.codes[0], Opcode::Sendn, Opcode::Send, 1);
  two_steps(tiles.codes[1], Opcode::Recvn, Opcode::Recv, 0);
  tiles.codes[2].main(Opcode::Xwait, {200});
  exchange(tiles.codes[2], Opcode::Send, kBuffer, 16, 1);
  tiles.codes[2].main(Opcode::Xdone);
  tiles.codes[2].main(Opcode::Halt);
  exchange(tiles.codes[3], Opcode::Recv, kBuffer, 16, 0);
  tiles.codes[3].main(Opcode::Xdone);
  tiles.codes[3].main(Opcode::Halt);
  Outcome outcome = run_tiles(tiles, 4, 8);
  EXPECT_EQ(outcome.buffers[1], (std::vector<std::uint32_t>{10, 11, 12, 13, 70, 71, 72, 73}));
  EXPECT_EQ(std::vector<std::uint32_t>(outcome.buffers[3].begin(), outcome.buffers[3].begin() + 4),
            (std::vector<std::uint32_t>{14, 15, 16, 17}));
  EXPECT_EQ(outcome.result.tiles[0].bytes_sent, 32u);
}

// Words `first`, `first` + 1, ... laid out as runs of `run` words every
// `stride` words in a buffer of `words` words (zero elsewhere).
std::vector<std::uint32_t> scattered(std::uint32_t words, std::uint32_t run, std::uint32_t stride,
                                     std::uint32_t count, std::uint32_t first) {
  std::vector<std::uint32_t> out(words, 0);
  for (std::uint32_t i = 0; i < count; ++i) out[i / run * stride + i % run] = first + i;
  return out;
}

TEST(Exchange, PatternedSendGathersItsRunsForAContiguousReceive) {
  Tiles tiles;
  tiles.codes.resize(2);
  tiles.buffers = {as_bytes(counting_words(16, 100))};
  pattern(tiles.codes[0], 8, 24);                           // bundles 0..4
  exchange(tiles.codes[0], Opcode::Send, kBuffer, 24, 1);   // send at 66: words 0-1, 6-7, 12-13
  record_cycle(tiles.codes[0], 0);
  tiles.codes[0].main(Opcode::Xdone);
  tiles.codes[0].main(Opcode::Halt);
  exchange(tiles.codes[1], Opcode::Recv, kBuffer, 24, 0);
  tiles.codes[1].main(Opcode::Xdone);
  record_cycle(tiles.codes[1], 0);
  tiles.codes[1].main(Opcode::Halt);
  Outcome outcome = run_tiles(tiles, 2, 16);
  std::vector<std::uint32_t> expected = {100, 101, 106, 107, 112, 113};
  expected.resize(16, 0);
  EXPECT_EQ(outcome.buffers[1], expected);
  // Timing as for 6 contiguous words: 4 bytes a cycle, the same latency.
  EXPECT_EQ(outcome.cycles[0][0], 66u + 6);
  EXPECT_EQ(outcome.cycles[1][0], 66u + 5 + 16 + 1);
  EXPECT_EQ(outcome.result.tiles[0].bytes_sent, 24u);
  EXPECT_EQ(outcome.result.tiles[1].bytes_received, 24u);
}

TEST(Exchange, ContiguousSendScattersIntoAPatternedReceive) {
  Tiles tiles;
  tiles.codes.resize(2);
  tiles.buffers = {as_bytes(counting_words(6, 100))};
  tiles.codes[0].main(Opcode::Xwait, {100});  // after the receive is armed at 66
  exchange(tiles.codes[0], Opcode::Send, kBuffer, 24, 1);
  tiles.codes[0].main(Opcode::Xdone);
  tiles.codes[0].main(Opcode::Halt);
  pattern(tiles.codes[1], 8, 24);
  exchange(tiles.codes[1], Opcode::Recv, kBuffer, 24, 0);
  tiles.codes[1].main(Opcode::Xdone);
  tiles.codes[1].main(Opcode::Halt);
  Outcome outcome = run_tiles(tiles, 2, 16);
  EXPECT_EQ(outcome.buffers[1], scattered(16, 2, 6, 6, 100));
}

TEST(Exchange, BothEndsPatternedIndependently) {
  // Three 2-word runs every 6 words leave; two 3-word runs every 5 words land.
  Tiles tiles;
  tiles.codes.resize(2);
  tiles.buffers = {as_bytes(counting_words(16, 100))};
  pattern(tiles.codes[0], 8, 24);
  exchange(tiles.codes[0], Opcode::Send, kBuffer, 24, 1);
  tiles.codes[0].main(Opcode::Xdone);
  tiles.codes[0].main(Opcode::Halt);
  pattern(tiles.codes[1], 12, 20);
  exchange(tiles.codes[1], Opcode::Recv, kBuffer, 24, 0);
  tiles.codes[1].main(Opcode::Xdone);
  tiles.codes[1].main(Opcode::Halt);
  Outcome outcome = run_tiles(tiles, 2, 16);
  EXPECT_EQ(outcome.buffers[1],
            (std::vector<std::uint32_t>{100, 101, 106, 0, 0, 107, 112, 113, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(Exchange, PatternedMulticastMeetsEachReceiversOwnLayout) {
  Tiles tiles;
  tiles.codes.resize(3);
  tiles.groups = {{1, 2}};
  tiles.buffers = {as_bytes(counting_words(16, 100))};
  pattern(tiles.codes[0], 4, 8);                                         // every other word
  exchange(tiles.codes[0], Opcode::Send, kBuffer, 32, kGroupBit | 0);    // words 0, 2, ..., 14
  tiles.codes[0].main(Opcode::Xdone);
  tiles.codes[0].main(Opcode::Halt);
  exchange(tiles.codes[1], Opcode::Recv, kBuffer, 32, 0);
  pattern(tiles.codes[2], 16, 32);
  exchange(tiles.codes[2], Opcode::Recv, kBuffer, 32, 0);
  for (std::uint32_t t : {1u, 2u}) {
    tiles.codes[t].main(Opcode::Xdone);
    tiles.codes[t].main(Opcode::Halt);
  }
  Outcome outcome = run_tiles(tiles, 3, 16);
  std::vector<std::uint32_t> evens = {100, 102, 104, 106, 108, 110, 112, 114};
  std::vector<std::uint32_t> contiguous = evens;
  contiguous.resize(16, 0);
  EXPECT_EQ(outcome.buffers[1], contiguous);
  EXPECT_EQ(outcome.buffers[2], (std::vector<std::uint32_t>{100, 102, 104, 106, 0, 0, 0, 0, 108, 110, 112, 114, 0, 0, 0, 0}));
  EXPECT_EQ(outcome.result.tiles[0].bytes_sent, 32u);
}

TEST(Exchange, APatternGoesToTheNextSendOrRecvOnly) {
  // Tile 0 patterns its receive; its send after it is contiguous again.
  Tiles tiles;
  tiles.codes.resize(2);
  tiles.buffers = {as_bytes(counting_words(16, 100)), as_bytes(counting_words(16, 200))};
  pattern(tiles.codes[0], 8, 16);
  exchange(tiles.codes[0], Opcode::Recv, kBuffer + 32, 16, 1);  // armed at 66
  exchange(tiles.codes[0], Opcode::Send, kBuffer, 16, 1);       // at 108
  tiles.codes[0].main(Opcode::Xdone);
  tiles.codes[0].main(Opcode::Halt);
  exchange(tiles.codes[1], Opcode::Recv, kBuffer + 32, 16, 0);  // armed at 36
  tiles.codes[1].main(Opcode::Xwait, {100});
  exchange(tiles.codes[1], Opcode::Send, kBuffer, 16, 0);       // at 136
  tiles.codes[1].main(Opcode::Xdone);
  tiles.codes[1].main(Opcode::Halt);
  Outcome outcome = run_tiles(tiles, 2, 16);
  std::vector<std::uint32_t> tile0 = counting_words(16, 100);
  tile0[8] = 200, tile0[9] = 201, tile0[12] = 202, tile0[13] = 203;
  EXPECT_EQ(outcome.buffers[0], tile0);
  std::vector<std::uint32_t> tile1 = counting_words(16, 200);
  tile1[8] = 100, tile1[9] = 101, tile1[10] = 102, tile1[11] = 103;
  EXPECT_EQ(outcome.buffers[1], tile1);
}

TEST(Exchange, APatternWaitsAcrossASyncForItsSend) {
  Tiles tiles;
  tiles.codes.resize(2);
  tiles.buffers = {as_bytes(counting_words(16, 100))};
  pattern(tiles.codes[0], 4, 16);
  tiles.codes[0].main(Opcode::Sync);
  exchange(tiles.codes[0], Opcode::Send, kBuffer, 16, 1);  // words 0, 4, 8, 12
  tiles.codes[0].main(Opcode::Xdone);
  tiles.codes[0].main(Opcode::Halt);
  tiles.codes[1].main(Opcode::Sync);
  exchange(tiles.codes[1], Opcode::Recv, kBuffer, 16, 0);
  tiles.codes[1].main(Opcode::Xdone);
  tiles.codes[1].main(Opcode::Halt);
  Outcome outcome = run_tiles(tiles, 2, 4);
  EXPECT_EQ(outcome.buffers[1], (std::vector<std::uint32_t>{100, 104, 108, 112}));
}

TEST(Exchange, APatternedReceiveUsesMemoryUpToItsLastRunOnly) {
  // Three 8-byte runs every 64 bytes from the start of interleaved memory:
  // the last byte written is at 0x80000 + 2 * 64 + 8, not 3 * 64.
  Tiles tiles;
  tiles.codes.resize(2);
  tiles.buffers = {as_bytes(counting_words(6, 100))};
  tiles.codes[0].main(Opcode::Xwait, {100});  // after the receive is armed at 66
  exchange(tiles.codes[0], Opcode::Send, kBuffer, 24, 1);
  tiles.codes[0].main(Opcode::Xdone);
  tiles.codes[0].main(Opcode::Halt);
  pattern(tiles.codes[1], 8, 64);
  exchange(tiles.codes[1], Opcode::Recv, kInterleavedData, 24, 0);
  tiles.codes[1].main(Opcode::Xdone);
  tiles.codes[1].main(Opcode::Halt);
  Outcome outcome = run_tiles(tiles, 2, 1);
  const std::uint32_t code_bytes = static_cast<std::uint32_t>(tiles.codes[1].size()) * isa::kBundleBytes;
  EXPECT_EQ(outcome.result.tiles[1].memory_bytes, code_bytes + 2 * 64 + 8);
}

}  // namespace
}  // namespace tilec::sim
