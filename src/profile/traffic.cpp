// Who sent how much to whom: per source and peer, between cells of tiles, and the
// busiest tile's share of its exchange bandwidth in each superstep.
#include "profile/summary.h"
#include "target/machine.h"

#include <algorithm>
#include <map>
#include <span>
#include <tuple>

namespace tilec::profile {

ExchangeTraffic exchange_traffic(const ProfileData& profile, std::vector<SuperstepTotal>& supersteps) {
  const MachineModel machine = machine_by_name(profile.target);
  ExchangeTraffic traffic;
  traffic.tiles_per_cell = profile.tiles <= kTrafficTileCells ? 1 : machine.tiles_per_column;
  traffic.cells = (profile.tiles + traffic.tiles_per_cell - 1) / traffic.tiles_per_cell;
  traffic.cell_bytes.assign(std::size_t{traffic.cells} * traffic.cells, 0);
  // Per superstep, bytes each tile sent and received.
  std::vector<std::map<std::uint32_t, std::uint64_t>> sent(supersteps.size()), received(supersteps.size());
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, PeerTraffic> pairs;

  for (std::uint32_t source = 0; source < profile.tiles; ++source) {
    std::uint32_t step = 0;
    for (const sim::ProfileEvent& event : profile.events.tiles[source]) {
      if (event.kind == sim::ProfileEventKind::SyncWait) step = event.detail + 1;
      if (event.kind != sim::ProfileEventKind::SupervisorExchange) continue;
      const std::uint32_t at = std::min<std::uint32_t>(step, static_cast<std::uint32_t>(supersteps.size() - 1));
      PeerTraffic& pair = pairs[{source, event.peer, event.op}];
      if (pair.sends == 0) pair = PeerTraffic{source, event.peer, event.op, 0, 0, at};
      pair.bytes += event.detail;
      pair.sends += 1;
      sent[at][source] += event.detail;
      const std::uint32_t single[] = {event.peer};
      const std::span<const std::uint32_t> members =
          event.peer & sim::kMulticastPeer ? std::span<const std::uint32_t>(profile.exchange_groups[event.peer & ~sim::kMulticastPeer])
                                           : std::span<const std::uint32_t>(single);
      for (std::uint32_t destination : members) {
        received[at][destination] += event.detail;
        traffic.cell_bytes[std::size_t{source / traffic.tiles_per_cell} * traffic.cells +
                           destination / traffic.tiles_per_cell] += event.detail;
      }
    }
  }

  for (std::size_t s = 0; s < supersteps.size(); ++s) {
    const double capacity = static_cast<double>(supersteps[s].cycles) * machine.exchange_bytes_per_cycle;
    if (capacity <= 0) continue;
    for (const auto& [tile, bytes] : sent[s])
      supersteps[s].busiest_send_share = std::max(supersteps[s].busiest_send_share, static_cast<double>(bytes) / capacity);
    for (const auto& [tile, bytes] : received[s])
      supersteps[s].busiest_receive_share =
          std::max(supersteps[s].busiest_receive_share, static_cast<double>(bytes) / capacity);
  }

  for (const auto& [key, pair] : pairs) traffic.pairs.push_back(pair);
  std::stable_sort(traffic.pairs.begin(), traffic.pairs.end(),
                   [](const PeerTraffic& a, const PeerTraffic& b) { return a.bytes > b.bytes; });
  return traffic;
}

}  // namespace tilec::profile
