// Exchange between tiles: arrival timing, multicast groups, latency over
// columns, and payloads read at send time.
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

Outcome run_tiles(const Tiles& tiles, std::uint32_t machine_tiles, std::size_t buffer_words) {
  const auto count = static_cast<std::uint32_t>(tiles.codes.size());
  package::Package package;
  package.target = ipu21_cut(machine_tiles).name;
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
  Device device(package, ipu21_cut(machine_tiles));
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

TEST(Exchange, PointToPointTiming) {
  Tiles tiles;
  tiles.codes.resize(2);
  tiles.buffers = {as_bytes(counting_words(16, 100))};
  exchange(tiles.codes[0], Opcode::Send, kBuffer, 64, 1);  // sets at 0..30, send at 36
  record_cycle(tiles.codes[0], 0);                          // 36 + 16 words
  tiles.codes[0].main(Opcode::Xdone);
  tiles.codes[0].main(Opcode::Halt);
  exchange(tiles.codes[1], Opcode::Recv, kBuffer, 64, 0);   // armed at 36
  tiles.codes[1].main(Opcode::Xdone);                       // 42
  record_cycle(tiles.codes[1], 0);
  tiles.codes[1].main(Opcode::Halt);
  Outcome outcome = run_tiles(tiles, 2, 16);
  EXPECT_EQ(outcome.cycles[0][0], 36u + 16);
  // Word 15 arrives at 36 + 15 + 16 (same column): xdone lets the
  // supervisor go on the cycle after.
  EXPECT_EQ(outcome.cycles[1][0], 36u + 15 + 16 + 1);
  EXPECT_EQ(outcome.buffers[1], counting_words(16, 100));
  EXPECT_EQ(outcome.result.tiles[0].bytes_sent, 64u);
  EXPECT_EQ(outcome.result.tiles[1].bytes_received, 64u);
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

}  // namespace
}  // namespace tilec::sim
