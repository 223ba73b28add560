// Stages schedule_provisional_exchanges and lower_exchanges: when each
// transfer moves, and the exchange code that moves it.
//
// Needs: the LIR's transfers (group-relative), the group plan, and the
// machine's exchange figures.
// Does: for every phase and every group, turns transfers into per-tile
// actions on absolute tiles, receives first (armed in order of source,
// which keeps each source's receives in its send order), then sends at
// planned cycles: a greedy list schedule in which a send starts when its
// tile is free, every receiver's port is free (4 bytes a cycle, one sender
// at a time) and every receiver has armed its receives; a tile may send
// out of list order except to a receiver it already owes an earlier send
// (ties rotate round the group, so an all-to-all takes one round per peer),
// with the supervisor's own instruction time counted exactly as the emitted
// code will spend it. A phase mixing fan-outs is also scheduled widest
// first (each pass of one fan-out, receives armed to match), and every
// phase in rounds (its small sends greedily, then each tile's sends
// strictly by rotation, no receiver taking a later round's piece before an
// earlier round's). Where a tile spends long arming its receives first,
// each order is scheduled again with receives armed between sends: each
// tile arms them in the order the first schedule landed them, before each
// send those already due to land (and its own piece) and as many more as
// fit while the send waits for its cycle, the rest after its last send. The
// shortest schedule is kept. Multicast sends name exchange groups (tile
// lists, shared by the package).
// Produces: per phase and tile, the ordered actions with planned cycles,
// the exchange groups, and each phase's length.
#pragma once

#include "compiler/lir.h"
#include "target/machine.h"

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace tilec::compiler {

struct ExchangeAction {
  enum class Kind : std::uint8_t { Receive, Send };
  Kind kind = Kind::Receive;
  int transfer = -1;        // index into Lir::transfers
  std::uint32_t peer = 0;   // receive: source tile; send: destination tile, or kMulticast | group
  std::uint32_t start = 0;  // send: planned issue cycle after the phase's release
};

constexpr std::uint32_t kMulticast = 0x80000000u;

// Supervisor bundles that may come between a phase's release and its first
// exchange action (loop bookkeeping, a branch); the schedule starts every
// phase's actions after them.
constexpr std::uint32_t kPhasePrologueBundles = 8;

// What the supervisor holds in its exchange registers: values already set
// need no instruction (the emitter and the scheduler share this).
struct ExchangeRegisters {
  std::int64_t length = -1;
  std::int64_t peer = -1;
  std::int64_t run = -1;     // of the last pattern set
  std::int64_t stride = -1;
  // After a send or recv: it may become sendn or recvn, which step the
  // address past its bytes (to this place; none after a patterned one) and
  // the peer by up to kMostPeerStep.
  bool can_step = false;
  std::optional<Place> stepped_address;
};

constexpr std::int64_t kMostPeerStep = 2047;  // sendn's and recvn's simm12

// The supervisor's code for one action: the address (setzi, then its chunk
// and iteration offsets) unless the previous send or recv steps to it, the
// length, and the peer unless the previous one steps to it, when they
// changed; for a patterned end, its run and stride when they changed and an
// xpat; a send's xwait; the recv or send.
struct ActionCode {
  bool set_address = false, set_length = false, set_peer = false, set_run = false, set_stride = false;
  bool pattern = false;
  bool step_previous = false;  // the previous send or recv takes its stepping form ...
  std::int32_t peer_step = 0;  // ... and steps its peer by this much
  int bundles = 0;
};

// Identical stepping receives one after another (the same length and peer
// step, nothing set up between them) are armed in a hardware loop of one
// bundle, `rpti count, 1` before the recvn, once at least kLoopedReceives
// run together: count - 2 bundles less code, one bundle more time (so a
// plan loops them only when its code does not fit otherwise).
constexpr int kLoopedReceives = 3;
constexpr int kMostLoopedReceives = 4095;  // rpti's count
struct ReceiveLoop {
  std::size_t first = 0;  // of a tile's receives in a phase, in arming order
  int count = 0;
};
// The loops of a tile's receives, from their codes in arming order.
std::vector<ReceiveLoop> receive_loops(const std::vector<ActionCode>& codes);

// The orders in which a phase's sends are scheduled: the transfers' (a tile
// may still send out of it, greedily), widest multicasts first (likewise),
// or strictly by rotation, the offset from the sender to the (first)
// receiver round the group, so an all-to-all runs as rounds in which every
// tile sends to the tile that far on.
enum class SendOrder : std::uint8_t { List, WidestFirst, Rounds };
constexpr SendOrder kSendOrders[] = {SendOrder::List, SendOrder::WidestFirst, SendOrder::Rounds};

// A tile's sends of one phase in `order` (stable: sends with equal keys keep
// the transfers' order).
void order_sends(const Lir& lir, std::vector<int>& sends, SendOrder order);
// A tile's receives of one phase in the order it arms them: by source, then
// in the source's send order (which keeps each source's receives in its
// send order).
void order_receives(const Lir& lir, std::vector<int>& receives, SendOrder order);

// The code for one action, and the registers after it.
ActionCode exchange_action_code(const ExchangeAction& action, const Transfer& transfer, ExchangeRegisters& registers);

struct ExchangePlan {
  // actions[phase][tile]
  std::vector<std::vector<std::vector<ExchangeAction>>> actions;
  std::vector<std::vector<std::uint32_t>> groups;
  std::vector<std::uint32_t> phase_cycles;  // the longest tile's exchange time per phase
  // tile_cycles[phase][tile]: when the tile's last send or receive ends
  // (0 in a phase with no exchange).
  std::vector<std::vector<std::uint32_t>> tile_cycles;
  bool loop_receives = false;  // receive runs armed in loops (receive_loops)
};

ExchangePlan schedule_exchanges(const Lir& lir, const MachineModel& machine, bool loop_receives);

}  // namespace tilec::compiler
