// Stage schedule_provisional_exchanges alone: hand-made transfers on one
// group, checked against the rules the simulator enforces.
#include "compiler/exchange_schedule.h"
#include "compiler/mid.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace tilec::compiler {
namespace {

struct OneGroup {
  MidProgram mid;
  Lir lir;

  explicit OneGroup(int tiles) {
    mid.groups.group_size = tiles;
    mid.groups.groups = 1;
    lir.mid = &mid;
    lir.phases = 1;
  }

  void transfer(int source, std::vector<int> destinations, std::uint32_t bytes) {
    Transfer t;
    t.source_tile = source;
    t.destination_tiles = std::move(destinations);
    t.bytes = bytes;
    t.what = fmt::format("{} -> {}", source, t.destination_tiles.front());
    lir.transfers.push_back(std::move(t));
  }
};

// The pieces of a reduce-scatter over 8 tiles: every tile sends one piece
// to each other tile, listed by destination. Each tile can receive one piece
// at a time, so 7 rounds are needed; a schedule that keeps each tile's list
// order needs about twice as many.
TEST(ExchangeSchedule, AllToAllTakesOneRoundPerPeer) {
  constexpr int kTiles = 8;
  constexpr std::uint32_t kBytes = 1152;
  OneGroup group(kTiles);
  for (int source = 0; source < kTiles; ++source)
    for (int destination = 0; destination < kTiles; ++destination)
      if (destination != source) group.transfer(source, {destination}, kBytes);
  const MachineModel machine = ipu21_cut(16);
  const ExchangePlan plan = schedule_exchanges(group.lir, machine, false);
  const std::uint32_t round = kBytes / 4;
  EXPECT_GE(plan.phase_cycles[0], (kTiles - 1) * round);
  // Rounds, plus set-up and latency: well under one extra round per peer.
  EXPECT_LE(plan.phase_cycles[0], (kTiles - 1) * round + 2 * round) << plan.phase_cycles[0];
}

// Every tile arms its receives from one source in the order that source
// sends them (the receiver matches them in order).
void expect_sends_in_arming_order(const ExchangePlan& plan, int tiles) {
  for (int tile = 0; tile < tiles; ++tile) {
    std::vector<std::pair<std::uint32_t, int>> armed;  // (source, transfer)
    for (const ExchangeAction& action : plan.actions[0][static_cast<std::size_t>(tile)])
      if (action.kind == ExchangeAction::Kind::Receive) armed.emplace_back(action.peer, action.transfer);
    for (std::size_t k = 1; k < armed.size(); ++k) {
      if (armed[k].first != armed[k - 1].first) continue;
      const auto sent_at = [&](int transfer) {
        const auto& sends = plan.actions[0][armed[k].first];
        return std::find_if(sends.begin(), sends.end(), [&](const ExchangeAction& action) {
                 return action.kind == ExchangeAction::Kind::Send && action.transfer == transfer;
               }) - sends.begin();
      };
      EXPECT_LT(sent_at(armed[k - 1].second), sent_at(armed[k].second)) << "tile " << tile;
    }
  }
}

// Each receive is armed before its piece lands: the supervisor's time
// through each tile's actions as its code spends it (set-up bundles, every
// send at its planned cycle, the supervisor held while the send's bytes
// leave), against each piece's landing cycle.
void expect_pieces_land_after_their_receives(const Lir& lir, const ExchangePlan& plan, const MachineModel& machine,
                                             int tiles) {
  constexpr std::uint32_t kIssue = 6;
  std::map<std::pair<int, int>, std::uint32_t> armed;  // (tile, transfer): the cycle its receive is armed
  for (int tile = 0; tile < tiles; ++tile) {
    ExchangeRegisters registers;
    std::uint32_t time = kIssue * kPhasePrologueBundles;
    for (const ExchangeAction& action : plan.actions[0][static_cast<std::size_t>(tile)]) {
      const Transfer& transfer = lir.transfers[static_cast<std::size_t>(action.transfer)];
      const std::uint32_t bundles = static_cast<std::uint32_t>(exchange_action_code(action, transfer, registers).bundles);
      if (action.kind == ExchangeAction::Kind::Receive) {
        armed[{tile, action.transfer}] = time += kIssue * bundles;
        continue;
      }
      EXPECT_GE(action.start, time + kIssue * (bundles - 1)) << "tile " << tile << " cannot send on time";
      time = action.start + std::max(transfer.bytes / 4, kIssue);
    }
  }
  for (int tile = 0; tile < tiles; ++tile)
    for (const ExchangeAction& action : plan.actions[0][static_cast<std::size_t>(tile)]) {
      if (action.kind != ExchangeAction::Kind::Send) continue;
      for (int receiver : lir.transfers[static_cast<std::size_t>(action.transfer)].destination_tiles)
        EXPECT_GE(action.start + machine.exchange_latency(static_cast<std::uint32_t>(tile), static_cast<std::uint32_t>(receiver)),
                  armed.at({receiver, action.transfer}))
            << "tile " << tile << " to tile " << receiver;
    }
}

// Each of 24 tiles multicasts a piece to the 23 others, each receive
// patterned (three bundles or more). Armed first, every tile spends over
// 400 cycles arming before its first send, and the phase waits for them
// (3,598 cycles); armed between sends, a tile arms first only the receives
// due before its send, and the phase is nearly its busiest tile's data
// (3,186 against 3,072). Beside them, two cases a tile must arm a receive
// before a send that could go earlier: a piece already scheduled to land
// while the send's bytes leave (tile 24's to 25, as 25 sends 4 KB to 26),
// and its own piece (tile 27's to itself).
TEST(ExchangeSchedule, ReceivesArmedBetweenSendsStartThePhaseEarly) {
  constexpr int kTiles = 24, kGroup = kTiles + 4;
  constexpr std::uint32_t kPiece = 512;
  OneGroup group(kGroup);
  const auto patterned = [&] { group.lir.transfers.back().destination_pattern = BytePattern{16, 48}; };
  for (int source = 0; source < kTiles; ++source) {
    std::vector<int> others;
    for (int tile = 0; tile < kTiles; ++tile)
      if (tile != source) others.push_back(tile);
    group.transfer(source, others, kPiece);
    patterned();
  }
  group.transfer(kTiles, {kTiles + 1}, 64);
  patterned();
  group.transfer(kTiles + 1, {kTiles + 2}, 4096);
  patterned();
  group.transfer(kTiles + 3, {kTiles + 3}, kPiece);
  patterned();
  const MachineModel machine = ipu21_cut(kGroup);
  // Receives armed in loops are armed first: the schedule of old.
  const ExchangePlan first = schedule_exchanges(group.lir, machine, true);
  const ExchangePlan between = schedule_exchanges(group.lir, machine, false);
  const std::uint32_t data = (kTiles - 1) * kPiece / 4 + kPiece / 4;  // tile 5's
  EXPECT_GE(between.phase_cycles[0], data);
  EXPECT_LE(between.phase_cycles[0] + 300, first.phase_cycles[0])
      << between.phase_cycles[0] << " against " << first.phase_cycles[0];
  int late_receives = 0;  // armed after a send of their tile
  for (const auto& actions : between.actions[0]) {
    bool sent = false;
    for (const ExchangeAction& action : actions) {
      sent |= action.kind == ExchangeAction::Kind::Send;
      late_receives += sent && action.kind == ExchangeAction::Kind::Receive;
    }
  }
  EXPECT_GT(late_receives, 0);
  expect_pieces_land_after_their_receives(group.lir, between, machine, kGroup);
  expect_pieces_land_after_their_receives(group.lir, first, machine, kGroup);
  expect_sends_in_arming_order(between, kGroup);
}

// A reduce-scatter as a GEMM's reduction lays it out: 20 parts on every
// 9th tile, each receiver owed pieces of its own size (7 columns or 6), and
// small rearranged pieces riding the same phase. Greedily, a tile sends
// whichever piece can go first, and the pieces a receiver takes early keep
// others waiting (7,662 cycles here); in rounds, each tile sends to the
// tile k parts on in round k and every receiver takes its pieces round by
// round, so the phase is its busiest receiver's bytes and a little set-up
// (6,866 against 6,384).
TEST(ExchangeSchedule, UnevenReduceScatterRunsInRounds) {
  constexpr int kParts = 20, kStride = 9;
  OneGroup group(kParts * kStride);
  const auto tile = [](int part) { return 3 + kStride * part; };
  const auto piece = [](int part) -> std::uint32_t { return part < 8 ? 1344 : 1152; };
  for (int source = 0; source < kParts; ++source) {
    for (int destination = 0; destination < kParts; ++destination)
      if (destination != source) group.transfer(tile(source), {tile(destination)}, piece(destination));
    group.transfer(tile(source), {tile((source + 3) % kParts) + 1}, 224);
  }
  const ExchangePlan plan = schedule_exchanges(group.lir, ipu21_cut(kParts * kStride), false);
  const std::uint32_t busiest_receiver = (kParts - 1) * piece(0) / 4;
  EXPECT_GE(plan.phase_cycles[0], busiest_receiver);
  EXPECT_LE(plan.phase_cycles[0], busiest_receiver + 600) << plan.phase_cycles[0];
  expect_sends_in_arming_order(plan, kParts * kStride);
}

// Sends to one receiver keep the order it arms them in, even when a later
// send to another tile goes first.
TEST(ExchangeSchedule, SendsToOneReceiverKeepTheirOrder) {
  OneGroup group(4);
  group.transfer(1, {0}, 4096);     // 0: keeps tile 0 busy
  group.transfer(2, {0}, 64);       // 1: first to 0 from tile 2
  group.transfer(2, {3}, 64);       // 2: could go at once
  group.transfer(2, {0, 3}, 64);    // 3: multicast
  group.transfer(2, {0}, 128);      // 4: last to 0
  const ExchangePlan plan = schedule_exchanges(group.lir, ipu21_cut(16), false);
  std::vector<int> order;
  for (const ExchangeAction& action : plan.actions[0][2])
    if (action.kind == ExchangeAction::Kind::Send) order.push_back(action.transfer);
  ASSERT_EQ(order.size(), 4u);
  EXPECT_LT(std::find(order.begin(), order.end(), 2), std::find(order.begin(), order.end(), 1));
  expect_sends_in_arming_order(plan, 4);
  // The planned starts grow along the tile's list.
  std::uint32_t previous = 0;
  for (const ExchangeAction& action : plan.actions[0][2])
    if (action.kind == ExchangeAction::Kind::Send) {
      EXPECT_GE(action.start, previous);
      previous = action.start;
    }
}

// A phase mixing multicasts into overlapping groups with single sends (one
// found by a random search over 16-tile phases). A multicast needs all its
// receivers free at once; in list order the single sends landing first
// keep breaking into it (2,994 cycles). Widest first, the phase is 2,466.
TEST(ExchangeSchedule, WideMulticastsGoFirstWhereThatIsShorter) {
  struct Move {
    int source;
    std::vector<int> destinations;
    std::uint32_t bytes;
  };
  const std::vector<Move> moves{
      {0, {13}, 1792},
      {1, {8}, 64},
      {2, {4}, 768},
      {2, {11}, 1152},
      {2, {14}, 1280},
      {3, {1}, 1152},
      {3, {13}, 192},
      {3, {2}, 2112},
      {3, {0, 1, 3, 4, 11}, 1792},
      {6, {11}, 1664},
      {6, {13}, 832},
      {6, {2}, 1920},
      {6, {12}, 704},
      {7, {13}, 1792},
      {7, {6}, 576},
      {7, {0, 1, 7, 9, 10, 12, 15}, 448},
      {8, {9}, 832},
      {8, {12}, 832},
      {8, {4}, 1536},
      {8, {3}, 128},
      {9, {6}, 128},
      {9, {6}, 640},
      {9, {2}, 256},
      {9, {0, 1, 3, 4, 11}, 1856},
      {10, {6}, 256},
      {11, {0}, 1856},
      {11, {5}, 384},
      {13, {9}, 2240},
      {13, {6}, 128},
      {13, {1, 9, 10, 14}, 1408},
      {14, {6}, 832},
      {14, {1}, 2560},
      {14, {7}, 2432},
      {14, {13}, 768}
  };
  OneGroup group(16);
  for (const Move& move : moves) group.transfer(move.source, move.destinations, move.bytes);
  const ExchangePlan plan = schedule_exchanges(group.lir, ipu21_cut(16), false);
  EXPECT_EQ(plan.phase_cycles[0], 2466u);
  expect_sends_in_arming_order(plan, 16);
}

// Receive codes in arming order: the first sets everything up; `steps`
// more each step the one before to the next peer by `step`.
std::vector<ActionCode> stepping_receives(int steps, std::int32_t step) {
  std::vector<ActionCode> codes{ActionCode{.set_address = true, .set_length = true, .set_peer = true, .bundles = 4}};
  for (int i = 0; i < steps; ++i) codes.push_back(ActionCode{.step_previous = true, .peer_step = step, .bundles = 1});
  return codes;
}

// Receive k is a recvn of the step receive k + 1 gives it; identical ones
// that nothing separates form a loop once there are kLoopedReceives.
TEST(ReceiveLoops, IdenticalSteppingReceivesLoop) {
  // Receives 0-3 are `recvn ..., 1`; receive 4 a plain recv.
  std::vector<ReceiveLoop> loops = receive_loops(stepping_receives(4, 1));
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0].first, 0u);
  EXPECT_EQ(loops[0].count, 4);
  // Two recvn alone are not worth a loop.
  EXPECT_TRUE(receive_loops(stepping_receives(2, 1)).empty());
  // A receive that sets its length up splits the run: 0-1 and 2-4, of which
  // only the second is long enough.
  std::vector<ActionCode> split = stepping_receives(6, 1);
  split[2].set_length = true;
  split[2].bundles = 2;
  loops = receive_loops(split);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0].first, 2u);
  EXPECT_EQ(loops[0].count, 4);
  // Another step is another instruction: 0-2 step 1, 3-6 step -2.
  std::vector<ActionCode> turns = stepping_receives(7, 1);
  for (std::size_t k = 4; k < turns.size(); ++k) turns[k].peer_step = -2;
  loops = receive_loops(turns);
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_EQ(loops[0].first, 0u);
  EXPECT_EQ(loops[0].count, 3);
  EXPECT_EQ(loops[1].first, 3u);
  EXPECT_EQ(loops[1].count, 4);
}

}  // namespace
}  // namespace tilec::compiler
