#include "compiler/exchange_schedule.h"

#include "support/error.h"
#include "support/parallel.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <tuple>
#include <unordered_map>

namespace tilec::compiler {

namespace {

constexpr std::uint32_t kIssue = 6;  // cycles between two supervisor bundles
// How many of a tile's pending sends the scheduler weighs at each step (the
// first one always among them), and how many receivers in all, bounding its
// time on long send lists and wide multicasts.
constexpr std::size_t kSendWindow = 16;
constexpr std::size_t kReceiverWindow = 64;
constexpr std::uint32_t kRoundsStrayBytes = 256;
// A phase is scheduled again with receives armed between sends where a tile
// spends this long arming them first.
constexpr std::uint32_t kLongArming = 240;

int set_register_bundles(std::uint32_t value) { return value < (1u << 20) ? 1 : 2; }

// How far round the group a send goes: from its tile to its (first)
// receiver.
int rotation(const Transfer& transfer, int group_size) {
  return (transfer.destination_tiles.front() - transfer.source_tile + group_size) % group_size;
}

class GroupPhaseScheduler {
 public:
  GroupPhaseScheduler(const Lir& lir, const MachineModel& machine, ExchangePlan& plan, int phase, int group,
                      std::map<std::vector<std::uint32_t>, int>& group_ids)
      : lir_(lir), machine_(machine), plan_(plan), phase_(phase), group_(group), group_ids_(group_ids) {}

  void schedule(const std::vector<int>& transfers) {
    base_ = static_cast<std::uint32_t>(group_ * lir_.mid->groups.group_size);
    // Widest multicasts first (each needs all its receivers free at once,
    // which single sends placed before it keep fragmenting) wins where the
    // receivers bound the phase, list order where the senders do, and
    // strict rounds where an all-to-all's greedy choices collide: the phase
    // is scheduled each way that applies and keeps the shortest.
    number_groups(transfers);
    std::vector<std::size_t> fanouts;  // the phase's, widest first
    for (int index : transfers) fanouts.push_back(lir_.transfers[static_cast<std::size_t>(index)].destination_tiles.size());
    std::sort(fanouts.begin(), fanouts.end(), std::greater<>());
    fanouts.erase(std::unique(fanouts.begin(), fanouts.end()), fanouts.end());
    std::vector<SendOrder> orders{SendOrder::List};  // on a tie, the earlier order
    if (fanouts.size() > 1) orders.push_back(SendOrder::WidestFirst);
    orders.push_back(SendOrder::Rounds);
    // Each order with every receive armed first, then, where a tile spends
    // long arming them (and receives are not armed in loops), again with
    // receives armed between sends, in the order the first schedule landed
    // them.
    std::vector<Schedule> schedules(orders.size() * 2);
    parallel_for(0, orders.size(), [&](std::size_t k) {
      schedules[k] = run(transfers, orders[k], fanouts, nullptr);
      if (!plan_.loop_receives && schedules[k].longest_arming >= kLongArming)
        schedules[orders.size() + k] = run(transfers, orders[k], fanouts, &schedules[k].landing_order);
    });
    Schedule& best = *std::min_element(schedules.begin(), schedules.end(), [](const Schedule& a, const Schedule& b) {
      return a.cycles < b.cycles;
    });
    for (std::size_t tile = 0; tile < best.actions.size(); ++tile)
      plan_.actions[static_cast<std::size_t>(phase_)][base_ + tile] = std::move(best.actions[tile]);
    plan_.phase_cycles[static_cast<std::size_t>(phase_)] = std::max(plan_.phase_cycles[static_cast<std::size_t>(phase_)], best.cycles);
    std::copy(best.tile_cycles.begin(), best.tile_cycles.end(),
              plan_.tile_cycles[static_cast<std::size_t>(phase_)].begin() + base_);
  }

 private:
  struct Schedule {
    std::vector<std::vector<ExchangeAction>> actions;  // by group-relative tile
    std::vector<std::uint32_t> tile_cycles;             // when each tile's last action ends
    std::uint32_t cycles = UINT32_MAX;  // (a schedule not run never wins)
    std::vector<std::vector<int>> landing_order;  // each tile's receives by when they land
    std::uint32_t longest_arming = 0;             // receives armed first: the most cycles a tile spends on them
  };

  // The sends one pass schedules: of one fan-out (0: any), or only the
  // small ones. A pass in rounds weighs only each tile's next send;
  // otherwise a window of them.
  struct Pass {
    std::size_t fanout = 0;
    bool small_only = false;
    bool in_rounds = false;
    bool takes(const Transfer& transfer) const {
      return (fanout == 0 || transfer.destination_tiles.size() == fanout) &&
             (!small_only || transfer.bytes <= kRoundsStrayBytes);
    }
    std::size_t window() const { return in_rounds ? 1 : kSendWindow; }
  };

  // A tile's receives armed between its sends: in `order`, the first `next`
  // armed so far, and when each is armed (as scheduled before `next`; after
  // it, projected from the supervisor's next free cycle on); the first
  // `due` already have a send scheduled into them, so the tile's next send
  // waits until they are armed.
  struct Arming {
    std::vector<int> order;
    std::vector<std::uint32_t> armed_at;
    std::vector<ExchangeRegisters> registers_after;  // the supervisor's, as each is armed (projected)
    std::size_t next = 0, due = 0;
    bool stale = true;
  };

  // In list order; widest first, one pass per fan-out (`fanouts`, widest
  // first); or in rounds: the small sends greedily, then the rest strictly
  // in each tile's rotation order. Every tile arms all its receives before
  // its first send or, given `arming_order` (each tile's receives in the
  // order it arms them), between its sends: before a send, the receives
  // due and as many more as fit while the send waits for its cycle; the
  // rest after its last send.
  Schedule run(const std::vector<int>& transfers, SendOrder order, const std::vector<std::size_t>& fanouts,
               const std::vector<std::vector<int>>* arming_order) {
    std::vector<Pass> passes;
    if (order == SendOrder::WidestFirst)
      for (std::size_t fanout : fanouts) passes.push_back(Pass{fanout});
    if (order == SendOrder::Rounds) passes = {Pass{0, true}, Pass{0, false, true}};
    else passes.push_back(Pass{});  // any fan-out (the only pass in list order)
    const int group_size = lir_.mid->groups.group_size;
    const auto size = static_cast<std::size_t>(group_size);
    Schedule result;
    result.actions.resize(size);
    auto actions = [&](int tile) -> std::vector<ExchangeAction>& { return result.actions[static_cast<std::size_t>(tile)]; };
    const auto transfer_of = [&](int index) -> const Transfer& { return lir_.transfers[static_cast<std::size_t>(index)]; };
    const auto receive = [&](int index) {
      return ExchangeAction{ExchangeAction::Kind::Receive, index, absolute(transfer_of(index).source_tile), 0};
    };
    std::vector<std::vector<int>> sends(size);
    std::vector<std::vector<int>> receives(size);
    for (int index : transfers) {
      const Transfer& transfer = transfer_of(index);
      sends[static_cast<std::size_t>(transfer.source_tile)].push_back(index);
      for (int tile : transfer.destination_tiles) receives[static_cast<std::size_t>(tile)].push_back(index);
    }
    for (std::vector<int>& list : sends) order_sends(lir_, list, order);
    // Receives armed first, ordered by source (then by the source's order):
    // armed[tile] is when all are. Or armed between sends (`arming`).
    std::vector<std::uint32_t> armed(size, kIssue * kPhasePrologueBundles);
    std::vector<ExchangeRegisters> registers(size);
    std::vector<Arming> arming(arming_order ? size : 0);
    // Between sends: where each transfer's receive is in each of its
    // receivers' arming order, by the transfer's place in `transfers`.
    std::unordered_map<int, std::size_t> place_of;
    std::vector<std::vector<std::size_t>> arming_position(arming_order ? transfers.size() : 0);
    for (std::size_t k = 0; arming_order && k < transfers.size(); ++k) {
      place_of.emplace(transfers[k], k);
      arming_position[k].resize(transfer_of(transfers[k]).destination_tiles.size());
    }
    for (int tile = 0; tile < group_size; ++tile) {
      auto& list = receives[static_cast<std::size_t>(tile)];
      if (arming_order) {
        Arming& state = arming[static_cast<std::size_t>(tile)];
        state.order = (*arming_order)[static_cast<std::size_t>(tile)];
        for (std::size_t k = 0; k < state.order.size(); ++k) {
          const std::vector<int>& receivers = transfer_of(state.order[k]).destination_tiles;
          const auto j = static_cast<std::size_t>(std::find(receivers.begin(), receivers.end(), tile) - receivers.begin());
          arming_position[place_of.at(state.order[k])][j] = k;
        }
        state.armed_at.resize(state.order.size());
        state.registers_after.resize(state.order.size());
        continue;
      }
      order_receives(lir_, list, order);
      std::uint32_t time = kIssue * kPhasePrologueBundles;
      std::vector<ActionCode> codes;
      for (int index : list) {
        codes.push_back(exchange_action_code(receive(index), transfer_of(index), registers[static_cast<std::size_t>(tile)]));
        time += kIssue * static_cast<std::uint32_t>(codes.back().bundles);
        actions(tile).push_back(receive(index));
      }
      // Each loop's rpti issues before its receives.
      if (plan_.loop_receives) time += kIssue * static_cast<std::uint32_t>(receive_loops(codes).size());
      armed[static_cast<std::size_t>(tile)] = time;
    }
    result.longest_arming = *std::max_element(armed.begin(), armed.end()) - kIssue * kPhasePrologueBundles;
    std::vector<std::uint32_t> ready(armed);  // when the tile's supervisor can issue its next send
    std::vector<std::uint32_t> port_free(size, 0);
    std::uint32_t longest = *std::max_element(armed.begin(), armed.end());
    // `time` after the tile arms its k-th receive (between sends), with the
    // registers `held` then.
    const auto arm = [&](int tile, std::size_t k, std::uint32_t time, ExchangeRegisters& held) {
      const int index = arming[static_cast<std::size_t>(tile)].order[k];
      return time + kIssue * static_cast<std::uint32_t>(exchange_action_code(receive(index), transfer_of(index), held).bundles);
    };
    const auto projected = [&](int tile) -> Arming& {
      Arming& state = arming[static_cast<std::size_t>(tile)];
      if (state.stale) {
        ExchangeRegisters held = registers[static_cast<std::size_t>(tile)];
        std::uint32_t time = ready[static_cast<std::size_t>(tile)];
        for (std::size_t k = state.next; k < state.order.size(); ++k) {
          state.armed_at[k] = time = arm(tile, k, time, held);
          state.registers_after[k] = held;
        }
        state.stale = false;
      }
      return state;
    };
    // When the receive of `receiver` (a transfer's j-th, `positions` its
    // places in the arming orders) is armed.
    const auto receive_armed = [&](int receiver, const std::vector<std::size_t>* positions, std::size_t j) {
      if (!positions) return armed[static_cast<std::size_t>(receiver)];
      return projected(receiver).armed_at[(*positions)[j]];
    };
    struct Candidate {
      ExchangeAction action;
      ExchangeRegisters registers;
      std::uint32_t start = 0;
      std::size_t position = 0;  // in pending[tile]
      std::size_t armed_before = 0;  // between sends: the tile's receives armed before this send
    };
    // Sends: greedy, earliest feasible start first. A tile may send in any
    // order that keeps its sends to each receiver in list order (receives
    // from one source match its sends in order); among its sends free to go
    // it takes the earliest to start, ties going round the group from the
    // next tile (in an all-to-all every tile then targets a different
    // receiver). A send's feasible start only ever grows as others are
    // scheduled, so a lazy queue works: pop the earliest, recompute it, and
    // schedule it if it did not move.
    std::vector<std::vector<int>> pending(sends);
    std::vector<std::vector<std::pair<std::uint32_t, int>>> landings(size);  // (cycle, transfer) by receiver
    auto evaluate_send = [&](int tile, std::size_t position, bool placing) {
      int index = pending[static_cast<std::size_t>(tile)][position];
      const Transfer& transfer = transfer_of(index);
      Candidate candidate{ExchangeAction{ExchangeAction::Kind::Send, index, destination(index, transfer), 0},
                          registers[static_cast<std::size_t>(tile)], 0, position};
      std::uint32_t start = 0;  // as the receivers allow
      const std::vector<std::size_t>* positions = arming_order ? &arming_position[place_of.at(index)] : nullptr;
      for (std::size_t j = 0; j < transfer.destination_tiles.size(); ++j) {
        const int receiver = transfer.destination_tiles[j];
        std::uint32_t latency = machine_.exchange_latency(absolute(transfer.source_tile), absolute(receiver));
        std::uint32_t need = std::max(port_free[static_cast<std::size_t>(receiver)], receive_armed(receiver, positions, j));
        if (need > latency) start = std::max(start, need - latency);
      }
      // The send itself is the last bundle: it issues once the receives due,
      // the set-up and the xwait before it have issued.
      std::uint32_t time = ready[static_cast<std::size_t>(tile)];
      if (arming_order) {
        const Arming& state = projected(tile);
        candidate.armed_before = std::max(state.next, state.due);
        // A tile sending to itself arms that receive first.
        for (std::size_t j = 0; j < transfer.destination_tiles.size(); ++j)
          if (transfer.destination_tiles[j] == tile) candidate.armed_before = std::max(candidate.armed_before, (*positions)[j] + 1);
        if (candidate.armed_before > state.next) {
          time = state.armed_at[candidate.armed_before - 1];
          candidate.registers = state.registers_after[candidate.armed_before - 1];
        }
      }
      ExchangeRegisters after = candidate.registers;
      const int bundles = exchange_action_code(candidate.action, transfer, after).bundles;
      candidate.start = std::max(start, time + kIssue * static_cast<std::uint32_t>(bundles - 1));
      // Then, on placing it, as many more receives as leave it at its start.
      if (placing && arming_order) {
        for (; candidate.armed_before < arming[static_cast<std::size_t>(tile)].order.size(); ++candidate.armed_before) {
          ExchangeRegisters held = candidate.registers;
          const std::uint32_t armed_more = arm(tile, candidate.armed_before, time, held);
          ExchangeRegisters then = held;
          if (armed_more + kIssue * static_cast<std::uint32_t>(exchange_action_code(candidate.action, transfer, then).bundles - 1) >
              candidate.start)
            break;
          time = armed_more;
          candidate.registers = held;
        }
        after = candidate.registers;
        exchange_action_code(candidate.action, transfer, after);
      }
      candidate.registers = after;
      return candidate;
    };
    // Receivers of the pending sends before the one looked at, marked with
    // the evaluation's number.
    std::vector<std::uint32_t> owed(static_cast<std::size_t>(group_size), 0);
    std::uint32_t evaluation = 0;
    auto evaluate = [&](int tile, const Pass& pass) {
      const std::vector<int>& list = pending[static_cast<std::size_t>(tile)];
      ++evaluation;
      std::optional<Candidate> best;
      int best_rotation = 0;
      std::size_t receivers_weighed = 0, weighed = 0;
      for (std::size_t position = 0; position < list.size() && weighed < pass.window(); ++position) {
        const Transfer& transfer = lir_.transfers[static_cast<std::size_t>(list[position])];
        const bool in_pass = pass.takes(transfer);
        if (in_pass) {
          receivers_weighed += transfer.destination_tiles.size();
          if (weighed++ > 0 && receivers_weighed > kReceiverWindow) break;
        }
        bool free_to_go = std::none_of(transfer.destination_tiles.begin(), transfer.destination_tiles.end(),
                                       [&](int r) { return owed[static_cast<std::size_t>(r)] == evaluation; });
        for (int r : transfer.destination_tiles) owed[static_cast<std::size_t>(r)] = evaluation;
        if (!free_to_go || !in_pass) continue;
        Candidate candidate = evaluate_send(tile, position, false);
        int candidate_rotation = rotation(transfer, group_size);
        if (!best || candidate.start < best->start ||
            (candidate.start == best->start && candidate_rotation < best_rotation)) {
          best = candidate;
          best_rotation = candidate_rotation;
        }
      }
      return best;
    };
    // (round, start, tile): ties go to the lower tile. In a pass by rounds
    // a tile's k-th send is of round k, and no send is placed before an
    // earlier round's, so a receiver takes its pieces round by round.
    using Entry = std::tuple<std::uint32_t, std::uint32_t, int>;
    for (const Pass& pass : passes) {
      std::vector<std::uint32_t> round(static_cast<std::size_t>(group_size), 0);
      const auto entry = [&](std::uint32_t start, int tile) {
        return Entry{pass.in_rounds ? round[static_cast<std::size_t>(tile)] : 0, start, tile};
      };
      std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
      for (int tile = 0; tile < group_size; ++tile)
        if (std::optional<Candidate> candidate = evaluate(tile, pass)) queue.push(entry(candidate->start, tile));
      while (!queue.empty()) {
        const auto [round_of_entry, start, tile] = queue.top();
        queue.pop();
        std::optional<Candidate> candidate = evaluate(tile, pass);
        if (!candidate) continue;
        if (candidate->start > start) {
          queue.push(entry(candidate->start, tile));
          continue;
        }
        ++round[static_cast<std::size_t>(tile)];
        const Transfer& transfer = transfer_of(candidate->action.transfer);
        if (arming_order) {
          candidate = evaluate_send(tile, candidate->position, true);
          Arming& state = arming[static_cast<std::size_t>(tile)];
          ExchangeRegisters held = registers[static_cast<std::size_t>(tile)];
          std::uint32_t time = ready[static_cast<std::size_t>(tile)];
          for (; state.next < candidate->armed_before; ++state.next) {
            state.armed_at[state.next] = time = arm(tile, state.next, time, held);
            actions(tile).push_back(receive(state.order[state.next]));
          }
          state.stale = true;
        }
        candidate->action.start = candidate->start;
        actions(tile).push_back(candidate->action);
        registers[static_cast<std::size_t>(tile)] = candidate->registers;
        const std::uint32_t cycles =
            (transfer.bytes + machine_.exchange_bytes_per_cycle - 1) / machine_.exchange_bytes_per_cycle;
        ready[static_cast<std::size_t>(tile)] = candidate->start + std::max(cycles, kIssue);
        for (std::size_t j = 0; j < transfer.destination_tiles.size(); ++j) {
          const int receiver = transfer.destination_tiles[j];
          std::uint32_t latency = machine_.exchange_latency(absolute(transfer.source_tile), absolute(receiver));
          port_free[static_cast<std::size_t>(receiver)] = candidate->start + latency + cycles;
          longest = std::max(longest, candidate->start + latency + cycles);
          landings[static_cast<std::size_t>(receiver)].emplace_back(candidate->start + latency, candidate->action.transfer);
          if (arming_order) {
            Arming& state = arming[static_cast<std::size_t>(receiver)];
            state.due = std::max(state.due, arming_position[place_of.at(candidate->action.transfer)][j] + 1);
          }
        }
        longest = std::max(longest, ready[static_cast<std::size_t>(tile)]);
        std::vector<int>& list = pending[static_cast<std::size_t>(tile)];
        list.erase(list.begin() + static_cast<std::ptrdiff_t>(candidate->position));
        if (std::optional<Candidate> next = evaluate(tile, pass)) queue.push(entry(next->start, tile));
      }
    }
    for (const std::vector<int>& list : pending) TILEC_CHECK(list.empty(), "a send was left unscheduled");
    // Between sends: the receives left, after the tile's last send.
    for (int tile = 0; arming_order && tile < group_size; ++tile) {
      Arming& state = arming[static_cast<std::size_t>(tile)];
      std::uint32_t& time = armed[static_cast<std::size_t>(tile)] = ready[static_cast<std::size_t>(tile)];
      for (; state.next < state.order.size(); ++state.next) {
        time = arm(tile, state.next, time, registers[static_cast<std::size_t>(tile)]);
        actions(tile).push_back(receive(state.order[state.next]));
      }
      longest = std::max(longest, time);
    }
    result.cycles = longest;
    result.tile_cycles.resize(size);
    result.landing_order.resize(size);
    for (std::size_t tile = 0; tile < size; ++tile) {
      result.tile_cycles[tile] = std::max({armed[tile], ready[tile], port_free[tile]});
      std::stable_sort(landings[tile].begin(), landings[tile].end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (const auto& landing : landings[tile]) result.landing_order[tile].push_back(landing.second);
    }
    return result;
  }

  std::uint32_t absolute(int tile) const { return base_ + static_cast<std::uint32_t>(tile); }

  // The phase's multicasts name exchange groups, numbered in transfer order
  // (a tile list already named keeps its number).
  void number_groups(const std::vector<int>& transfers) {
    for (int index : transfers) {
      const Transfer& transfer = lir_.transfers[static_cast<std::size_t>(index)];
      if (transfer.destination_tiles.size() == 1) continue;
      std::vector<std::uint32_t> tiles;
      tiles.reserve(transfer.destination_tiles.size());
      for (int tile : transfer.destination_tiles) tiles.push_back(absolute(tile));
      auto [it, inserted] = group_ids_.emplace(tiles, static_cast<int>(plan_.groups.size()));
      if (inserted) plan_.groups.push_back(std::move(tiles));
      multicast_destinations_.emplace(index, kMulticast | static_cast<std::uint32_t>(it->second));
    }
  }
  std::uint32_t destination(int index, const Transfer& transfer) const {
    if (transfer.destination_tiles.size() == 1) return absolute(transfer.destination_tiles.front());
    return multicast_destinations_.at(index);
  }

  const Lir& lir_;
  const MachineModel& machine_;
  ExchangePlan& plan_;
  int phase_;
  int group_;
  std::map<std::vector<std::uint32_t>, int>& group_ids_;
  std::unordered_map<int, std::uint32_t> multicast_destinations_;  // by transfer
  std::uint32_t base_ = 0;
};

}  // namespace

void order_sends(const Lir& lir, std::vector<int>& sends, SendOrder order) {
  const auto transfer = [&](int index) -> const Transfer& { return lir.transfers[static_cast<std::size_t>(index)]; };
  if (order == SendOrder::WidestFirst)
    std::stable_sort(sends.begin(), sends.end(), [&](int a, int b) {
      return transfer(a).destination_tiles.size() > transfer(b).destination_tiles.size();
    });
  if (order == SendOrder::Rounds) {
    // Small pieces (a rearrange riding a reduction's phase) go before the
    // rounds rather than delaying one.
    const auto key = [&](int index) {
      return std::pair(transfer(index).bytes > kRoundsStrayBytes, rotation(transfer(index), lir.mid->groups.group_size));
    };
    std::stable_sort(sends.begin(), sends.end(), [&](int a, int b) { return key(a) < key(b); });
  }
}

void order_receives(const Lir& lir, std::vector<int>& receives, SendOrder order) {
  order_sends(lir, receives, order);
  std::stable_sort(receives.begin(), receives.end(), [&](int a, int b) {
    return lir.transfers[static_cast<std::size_t>(a)].source_tile < lir.transfers[static_cast<std::size_t>(b)].source_tile;
  });
}

std::vector<ReceiveLoop> receive_loops(const std::vector<ActionCode>& codes) {
  // Receive k's recv is a recvn of step p when receive k + 1 steps it; it
  // runs on into receive k + 1's when that one sets nothing up.
  auto steps_by = [&](std::size_t k) -> std::optional<std::int32_t> {
    if (k + 1 >= codes.size() || !codes[k + 1].step_previous) return std::nullopt;
    return codes[k + 1].peer_step;
  };
  std::vector<ReceiveLoop> loops;
  std::size_t first = 0;
  while (first < codes.size()) {
    std::size_t last = first;
    const std::optional<std::int32_t> step = steps_by(first);
    while (step && last + 1 < codes.size() && codes[last + 1].bundles == 1 && steps_by(last + 1) == step &&
           static_cast<int>(last - first + 1) < kMostLoopedReceives)
      ++last;
    const int count = static_cast<int>(last - first + 1);
    if (count >= kLoopedReceives) loops.push_back({first, count});
    first = last + 1;
  }
  return loops;
}

ActionCode exchange_action_code(const ExchangeAction& action, const Transfer& transfer, ExchangeRegisters& registers) {
  const bool send = action.kind == ExchangeAction::Kind::Send;
  const Place& place = send ? transfer.source : transfer.destination;
  const BytePattern& pattern = send ? transfer.source_pattern : transfer.destination_pattern;
  ActionCode code;
  const std::optional<Place>& stepped = registers.stepped_address;
  if (stepped && stepped->buffer == place.buffer && stepped->offset == place.offset &&
      stepped->chunk_stride == place.chunk_stride && stepped->iteration_stride == place.iteration_stride) {
    code.step_previous = true;
  } else {
    code.set_address = true;
    code.bundles += 1 + (place.chunk_stride ? 1 : 0) + (place.iteration_stride ? 1 : 0);
  }
  if (registers.length != transfer.bytes) {
    code.set_length = true;
    code.bundles += set_register_bundles(transfer.bytes);
    registers.length = transfer.bytes;
  }
  if (registers.peer != action.peer) {
    const std::int64_t step = static_cast<std::int64_t>(action.peer) - registers.peer;
    if (registers.can_step && step >= -kMostPeerStep && step <= kMostPeerStep) {
      code.step_previous = true;
      code.peer_step = static_cast<std::int32_t>(step);
    } else {
      code.set_peer = true;
      code.bundles += set_register_bundles(action.peer);
    }
    registers.peer = action.peer;
  }
  if (!pattern.contiguous()) {
    if (registers.run != pattern.run) {
      code.set_run = true;
      code.bundles += set_register_bundles(pattern.run);
      registers.run = pattern.run;
    }
    if (registers.stride != pattern.stride) {
      code.set_stride = true;
      code.bundles += set_register_bundles(pattern.stride);
      registers.stride = pattern.stride;
    }
    code.pattern = true;
    code.bundles += 1;  // xpat
  }
  if (send) code.bundles += 1;  // xwait
  code.bundles += 1;            // the recv or send
  registers.can_step = true;
  registers.stepped_address.reset();
  if (pattern.contiguous()) registers.stepped_address = place.plus(transfer.bytes);
  return code;
}

ExchangePlan schedule_exchanges(const Lir& lir, const MachineModel& machine, bool loop_receives) {
  ExchangePlan plan;
  plan.loop_receives = loop_receives;
  const GroupPlan& groups = lir.mid->groups;
  plan.actions.assign(static_cast<std::size_t>(lir.phases),
                      std::vector<std::vector<ExchangeAction>>(machine.tiles));
  plan.phase_cycles.assign(static_cast<std::size_t>(lir.phases), 0);
  plan.tile_cycles.assign(static_cast<std::size_t>(lir.phases), std::vector<std::uint32_t>(machine.tiles, 0));
  std::vector<std::vector<int>> by_phase(static_cast<std::size_t>(lir.phases));
  for (std::size_t index = 0; index < lir.transfers.size(); ++index)
    by_phase[static_cast<std::size_t>(lir.transfers[index].phase)].push_back(static_cast<int>(index));
  std::map<std::vector<std::uint32_t>, int> group_ids;
  for (int phase = 0; phase < lir.phases; ++phase) {
    if (by_phase[static_cast<std::size_t>(phase)].empty()) continue;
    for (int group = 0; group < groups.groups; ++group) {
      GroupPhaseScheduler scheduler(lir, machine, plan, phase, group, group_ids);
      scheduler.schedule(by_phase[static_cast<std::size_t>(phase)]);
    }
  }
  TILEC_CHECK(plan.groups.size() < 0x10000, "{} exchange groups exceed the 65,536 a send can name", plan.groups.size());
  return plan;
}

}  // namespace tilec::compiler
