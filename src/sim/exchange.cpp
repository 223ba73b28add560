#include "sim/exchange.h"

#include "support/parallel.h"

#include <algorithm>
#include <cstring>
#include <optional>

namespace tilec::sim {

namespace {

// One send as one receiver sees it: landing in cycles first .. first +
// cycles - 1, the machine's exchange bytes a cycle.
struct Delivery {
  std::uint32_t source;
  std::uint32_t send;  // index into the source's sends
  std::uint64_t first;
  std::uint32_t cycles;

  std::uint64_t last() const { return first + cycles - 1; }
};

// A fault found while the receivers are resolved in parallel; the
// disassembly is added afterwards, on one thread.
struct ExchangeFault {
  std::uint32_t tile;
  std::uint32_t pc;
  std::string message;
};

std::vector<std::vector<Delivery>> deliveries_by_receiver(
    const std::vector<TileState>& tiles, const MachineModel& machine,
    const std::vector<std::vector<std::uint32_t>>& groups) {
  std::vector<std::vector<Delivery>> inbound(tiles.size());
  for (std::uint32_t source = 0; source < tiles.size(); ++source) {
    const std::vector<SendRecord>& sends = tiles[source].sends;
    for (std::uint32_t index = 0; index < sends.size(); ++index) {
      const SendRecord& send = sends[index];
      auto deliver = [&](std::uint32_t receiver) {
        inbound[receiver].push_back(Delivery{source, index,
                                             send.cycle + machine.exchange_latency(source, receiver),
                                             (send.bytes + machine.exchange_bytes_per_cycle - 1) /
                                                 machine.exchange_bytes_per_cycle});
      };
      if (send.destination >> 31) {
        for (std::uint32_t receiver : groups[send.destination & 0xffffu]) deliver(receiver);
      } else {
        deliver(send.destination);
      }
    }
  }
  return inbound;
}

std::optional<ExchangeFault> find_collision(const std::vector<TileState>& tiles,
                                            std::uint32_t receiver, std::vector<Delivery> inbound) {
  std::sort(inbound.begin(), inbound.end(), [](const Delivery& a, const Delivery& b) {
    return std::tie(a.first, a.source, a.send) < std::tie(b.first, b.source, b.send);
  });
  // Deliveries still arriving, in the order they started.
  std::vector<const Delivery*> arriving;
  for (const Delivery& delivery : inbound) {
    std::erase_if(arriving, [&](const Delivery* other) { return other->last() < delivery.first; });
    if (!arriving.empty()) {
      const Delivery& other = *arriving.front();
      return ExchangeFault{
          delivery.source, tiles[delivery.source].sends[delivery.send].pc,
          fmt::format("colliding receives at tile {} in cycle {}: data from tile {} and tile {} "
                      "arrive in the same cycle",
                      receiver, delivery.first, other.source, delivery.source)};
    }
    arriving.push_back(&delivery);
  }
  return std::nullopt;
}

// Matches the deliveries to the receiver's armed receives, source by
// source in order; on success writes the data and notes when it landed.
std::optional<ExchangeFault> deliver(std::vector<TileState>& tiles, std::uint32_t receiver,
                                     const std::vector<Delivery>& inbound) {
  TileState& tile = tiles[receiver];
  std::vector<std::uint32_t> receives(tile.recvs.size());
  for (std::uint32_t i = 0; i < receives.size(); ++i) receives[i] = i;
  std::stable_sort(receives.begin(), receives.end(), [&](std::uint32_t a, std::uint32_t b) {
    return tile.recvs[a].source < tile.recvs[b].source;
  });

  // Both lists are ordered by source, then by send or arming order.
  std::vector<std::pair<const Delivery*, const RecvRecord*>> matched;
  std::size_t d = 0, r = 0;
  while (d < inbound.size() || r < receives.size()) {
    const Delivery* delivery = d < inbound.size() ? &inbound[d] : nullptr;
    const RecvRecord* receive = r < receives.size() ? &tile.recvs[receives[r]] : nullptr;
    if (delivery && (!receive || delivery->source < receive->source)) {
      const SendRecord& send = tiles[delivery->source].sends[delivery->send];
      return ExchangeFault{delivery->source, send.pc,
                           fmt::format("data for tile {} arrives in cycle {} but tile {} armed no "
                                       "receive for it",
                                       receiver, delivery->first, receiver)};
    }
    if (!delivery || receive->source < delivery->source) {
      return ExchangeFault{receiver, receive->pc,
                           fmt::format("receive of {} bytes from tile {} got no data in this "
                                       "exchange phase",
                                       receive->bytes, receive->source)};
    }
    const SendRecord& send = tiles[delivery->source].sends[delivery->send];
    if (send.bytes != receive->bytes)
      return ExchangeFault{delivery->source, send.pc,
                           fmt::format("send of {} bytes meets a receive of {} bytes on tile {} "
                                       "(pc {:#x})",
                                       send.bytes, receive->bytes, receiver, receive->pc)};
    if (delivery->first < receive->cycle)
      return ExchangeFault{delivery->source, send.pc,
                           fmt::format("data for tile {} arrives in cycle {}, before its receive is "
                                       "armed in cycle {} (pc {:#x})",
                                       receiver, delivery->first, receive->cycle, receive->pc)};
    matched.emplace_back(delivery, receive);
    ++d;
    ++r;
  }

  for (const auto& [delivery, receive] : matched) {
    const TileState& source = tiles[delivery->source];
    const SendRecord& send = source.sends[delivery->send];
    const std::uint8_t* bytes = source.payload.data() + send.payload_offset;
    const ExchangePattern& pattern = receive->pattern;
    if (pattern.contiguous()) {
      std::memcpy(tile.at(receive->address), bytes, send.bytes);
      tile.wrote(receive->address, send.bytes);
    } else {
      // Scattered: the wire's bytes in order, run by run.
      for (std::uint32_t run = 0; run < send.bytes / pattern.run; ++run) {
        const std::uint32_t address = receive->address + run * pattern.stride;
        std::memcpy(tile.at(address), bytes + std::size_t{run} * pattern.run, pattern.run);
        tile.wrote(address, pattern.run);
      }
    }
    tile.stats.bytes_received += send.bytes;
    tile.landed = std::max(tile.landed, delivery->last() + 1);
  }
  return std::nullopt;
}

}  // namespace

void resolve_exchange(std::vector<TileState>& tiles, const MachineModel& machine,
                      const std::vector<std::vector<std::uint32_t>>& groups) {
  std::vector<std::vector<Delivery>> inbound = deliveries_by_receiver(tiles, machine, groups);
  std::vector<std::optional<ExchangeFault>> faults(tiles.size());
  parallel_for(0, tiles.size(), [&](std::size_t receiver) {
    auto index = static_cast<std::uint32_t>(receiver);
    tiles[receiver].landed = 0;
    if (inbound[receiver].empty() && tiles[receiver].recvs.empty()) return;
    faults[receiver] = find_collision(tiles, index, inbound[receiver]);
    if (!faults[receiver]) faults[receiver] = deliver(tiles, index, inbound[receiver]);
  });
  for (std::optional<ExchangeFault>& fault : faults) {
    if (!fault) continue;
    TileState& tile = tiles[fault->tile];
    Fault raised(fault->tile, kSupervisor, fault->pc, bundle_text_at(tile, fault->pc), std::move(fault->message));
    raised.set_cycle(tile.stop_cycle);  // found as the phase's exchange resolves, at the tile's xdone
    throw raised;
  }
}

}  // namespace tilec::sim
