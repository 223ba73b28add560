#include "profile/query_report.h"

#include "package/inspect.h"
#include "profile/profile_codec.h"
#include "support/number_text.h"
#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace tilec::profile {

namespace {

using nlohmann::json;

double fraction(std::uint64_t part, std::uint64_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string percent(double value) { return fmt::format("{:.1f}%", 100 * value); }

json phases_json(const PhaseCycles& phases) {
  return {{"compute", phases.compute}, {"exchange", phases.exchange}, {"sync", phases.sync}, {"idle", phases.idle}};
}

json tile_json(const TileSummary& tile) {
  return {{"tile", tile.tile},
          {"active", tile.active},
          {"worker_cycles", tile.worker_cycles},
          {"amp_macs", tile.amp_macs},
          {"halt_cycle", tile.halt_cycle},
          {"phases", phases_json(tile.phases)}};
}

// A multicast peer's exchange group; nullopt for a single tile.
std::optional<std::uint32_t> multicast_group(std::uint32_t peer) {
  if (!(peer & sim::kMulticastPeer)) return std::nullopt;
  return peer & ~sim::kMulticastPeer;
}

// "tile 5", or "group 3 (64 tiles)" for a multicast.
std::string peer_text(const ProfileData& profile, std::uint32_t peer) {
  const std::optional<std::uint32_t> group = multicast_group(peer);
  if (!group) return fmt::format("tile {}", peer);
  return fmt::format("group {} ({} tiles)", *group, profile.exchange_groups[*group].size());
}

json peer_json(const ProfileData& profile, std::uint32_t peer) {
  const std::optional<std::uint32_t> group = multicast_group(peer);
  if (!group) return {{"tile", peer}};
  return {{"group", *group}, {"tiles", profile.exchange_groups[*group]}};
}

}  // namespace

std::string place_text(const ProfileData& profile, const SuperstepTotal& step) {
  if (!step.place) return "";
  std::string text = profile.schedule.chunks > 1 ? fmt::format("chunk {} ", step.place->chunk) : "";
  if (step.place->iteration >= 0) text += fmt::format("{}[{}] ", profile.schedule.repeat, step.place->iteration);
  return text + fmt::format("step {}", step.place->step);
}

json place_json(const SuperstepTotal& step) {
  if (!step.place) return nullptr;
  return {{"chunk", step.place->chunk}, {"step", step.place->step}, {"iteration", step.place->iteration}};
}

json kernel_json(const KernelTotal& kernel) {
  return {{"name", kernel.name},
          {"calls", kernel.calls},
          {"worker_cycles", kernel.worker_cycles},
          {"share", kernel.share}};
}

json op_json(const OpTotal& op) {
  return {{"name", op.name},
          {"calls", op.calls},
          {"worker_cycles", op.worker_cycles},
          {"share", op.share},
          {"amp_instructions", op.amp_instructions},
          {"amp_macs", op.amp_macs},
          {"amp_utilisation", op.amp_utilisation},
          {"sends", op.sends},
          {"exchange_bytes", op.exchange_bytes},
          {"exchange_cycles", op.exchange_cycles}};
}

json traffic_matrix_json(const ExchangeTraffic& traffic) {
  return {{"tiles_per_cell", traffic.tiles_per_cell}, {"cells", traffic.cells}, {"bytes", traffic.cell_bytes}};
}

namespace {

// Workers and sends outside every op symbol (hand-written code, staged weights).
std::string op_display_name(const OpTotal& op) { return op.name.empty() ? "(no op)" : op.name; }
std::string op_label_text(const ProfileData& profile, std::uint32_t label) {
  return label == sim::kNoOpLabel ? "(no op)" : profile.events.labels[label];
}

}  // namespace

std::string query_text(const ProfileData& profile, const ProfileSummary& summary, std::size_t top) {
  std::string text;
  auto line = [&](const std::string& content) { text += content + "\n"; };
  const double microseconds = static_cast<double>(summary.cycles) / (profile.clock_ghz * 1e3);
  line(fmt::format("profile {}: {}, {} tiles ({} ran a program), {} GHz", profile.name, profile.target,
                   grouped(summary.tiles), grouped(summary.active_tiles), profile.clock_ghz));
  line(fmt::format("cycles {} ({:.1f} us), renderer cycles {}, {} sync{}, {} bytes exchanged", grouped(summary.cycles),
                   microseconds, grouped(summary.renderer_cycles), summary.syncs, summary.syncs == 1 ? "" : "s",
                   grouped(summary.exchange_bytes)));
  if (profile.fault)
    line(fmt::format("FAULT in cycle {} (the profile runs up to it): {}", grouped(profile.fault->cycle),
                     profile.fault->message));
  line(fmt::format("AMP utilisation {} ({} MACs executed)", percent(summary.amp_utilisation), grouped(summary.amp_macs)));
  if (summary.roofline_fraction)
    line(fmt::format("roofline fraction {} (graph {} MACs at {} MACs per tile per cycle)",
                     percent(*summary.roofline_fraction), grouped(static_cast<std::uint64_t>(profile.graph_macs)),
                     profile.peak_macs_per_cycle));
  else
    line("roofline fraction: none (the graph has no GEMM peak)");

  const std::uint64_t tile_cycles = summary.phases.total();
  line("");
  line(fmt::format("{:<10} {:>16} {:>7}", "phase", "tile-cycles", "share"));
  const std::pair<const char*, std::uint64_t> phases[] = {{"compute", summary.phases.compute},
                                                          {"exchange", summary.phases.exchange},
                                                          {"sync", summary.phases.sync},
                                                          {"idle", summary.phases.idle}};
  for (const auto& [name, cycles] : phases)
    line(fmt::format("{:<10} {:>16} {:>7}", name, grouped(cycles), percent(fraction(cycles, tile_cycles))));

  line("");
  std::size_t name_width = 6;
  for (const KernelTotal& kernel : summary.kernels) name_width = std::max(name_width, kernel.name.size());
  line(fmt::format("{:<{}} {:>9} {:>16} {:>7}", "kernel", name_width, "calls", "worker-cycles", "share"));
  for (const KernelTotal& kernel : summary.kernels)
    line(fmt::format("{:<{}} {:>9} {:>16} {:>7}", kernel.name, name_width, grouped(kernel.calls),
                     grouped(kernel.worker_cycles), percent(kernel.share)));
  if (summary.kernels.empty()) line("(no kernel ran)");

  if (!summary.ops.empty()) {
    line("");
    std::size_t op_width = 2;
    for (const OpTotal& op : summary.ops) op_width = std::max(op_width, op_display_name(op).size());
    line(fmt::format("{:<{}} {:>9} {:>16} {:>7} {:>18} {:>7} {:>14} {:>12}", "op", op_width, "calls", "worker-cycles",
                     "share", "AMP MACs", "AMP", "bytes sent", "send cycles"));
    for (const OpTotal& op : summary.ops)
      line(fmt::format("{:<{}} {:>9} {:>16} {:>7} {:>18} {:>7} {:>14} {:>12}", op_display_name(op), op_width,
                       grouped(op.calls), grouped(op.worker_cycles), percent(op.share), grouped(op.amp_macs),
                       percent(op.amp_utilisation), grouped(op.exchange_bytes), grouped(op.exchange_cycles)));
  }

  if (summary.supersteps.size() > 1) {
    std::vector<SuperstepTotal> longest = summary.supersteps;
    const std::size_t shown = std::min(top, longest.size());
    std::stable_sort(longest.begin(), longest.end(),
                     [](const SuperstepTotal& a, const SuperstepTotal& b) { return a.cycles > b.cycles; });
    longest.resize(shown);
    line("");
    line(fmt::format("longest supersteps ({} of {})", shown, summary.supersteps.size()));
    const bool placed = summary.supersteps.front().place.has_value();
    line(fmt::format("{:>9} {:>12} {:>10} {:>16} {:>14} {:>14} {:>14} {:>7} {:>7}{}", "superstep", "begin", "cycles",
                     "worker-cycles", "bytes sent", "send cycles", "sync cycles", "out", "in", placed ? "  where" : ""));
    for (const SuperstepTotal& step : longest)
      line(fmt::format("{:>9} {:>12} {:>10} {:>16} {:>14} {:>14} {:>14} {:>7} {:>7}{}", step.index, grouped(step.begin),
                       grouped(step.cycles), grouped(step.worker_cycles), grouped(step.exchange_bytes),
                       grouped(step.exchange_cycles), grouped(step.sync_cycles), percent(step.busiest_send_share),
                       percent(step.busiest_receive_share), placed ? "  " + place_text(profile, step) : ""));
    line("(out, in: the busiest tile's share of its exchange bandwidth over the superstep)");
  }

  if (!summary.iterations.empty()) {
    line("");
    line(fmt::format("repeat {} by iteration ({} supersteps each)", profile.schedule.repeat,
                     profile.schedule.repeat_last - profile.schedule.repeat_first + 1));
    line(fmt::format("{:>9} {:>12} {:>16} {:>14} {:>14}  {}", "iteration", "cycles", "worker-cycles", "bytes sent",
                     "sync cycles", "busiest op"));
    for (const IterationTotal& iteration : summary.iterations)
      line(fmt::format("{:>9} {:>12} {:>16} {:>14} {:>14}  {}", iteration.iteration, grouped(iteration.cycles),
                       grouped(iteration.worker_cycles), grouped(iteration.exchange_bytes),
                       grouped(iteration.sync_cycles),
                       iteration.ops.empty() ? std::string("-")
                                             : fmt::format("{} ({})", op_label_text(profile, iteration.ops[0].first),
                                                           percent(fraction(iteration.ops[0].second,
                                                                            iteration.worker_cycles)))));
  }

  if (!summary.traffic.pairs.empty()) {
    const std::size_t shown = std::min(top, summary.traffic.pairs.size());
    line("");
    line(fmt::format("heaviest transfers ({} of {} source-peer pairs, {} bytes)", shown,
                     grouped(summary.traffic.pairs.size()), grouped(summary.exchange_bytes)));
    line(fmt::format("{:>6}  {:<24} {:>14} {:>8} {:>15}  {}", "source", "to", "bytes", "sends", "first superstep",
                     "for op"));
    for (std::size_t i = 0; i < shown; ++i) {
      const PeerTraffic& pair = summary.traffic.pairs[i];
      line(fmt::format("{:>6}  {:<24} {:>14} {:>8} {:>15}  {}", pair.source, peer_text(profile, pair.peer),
                       grouped(pair.bytes), grouped(pair.sends), pair.first_superstep,
                       op_label_text(profile, pair.op)));
    }
  }

  const std::vector<TileSummary> busiest = busiest_tiles(summary, top);
  if (!busiest.empty()) {
    line("");
    line(fmt::format("busiest tiles ({} of {}, by busy worker-cycles)", busiest.size(), grouped(summary.tiles)));
    line(fmt::format("{:>5} {:>14} {:>10} {:>10} {:>10} {:>10} {:>14} {:>10}", "tile", "worker-cycles", "compute",
                     "exchange", "sync", "idle", "AMP MACs", "halt"));
    for (const TileSummary& tile : busiest)
      line(fmt::format("{:>5} {:>14} {:>10} {:>10} {:>10} {:>10} {:>14} {:>10}", tile.tile, grouped(tile.worker_cycles),
                       grouped(tile.phases.compute), grouped(tile.phases.exchange), grouped(tile.phases.sync),
                       grouped(tile.phases.idle), grouped(tile.amp_macs), grouped(tile.halt_cycle)));
  }
  return text;
}

json totals_json(const ProfileData& profile, const ProfileSummary& summary) {
  return {{"name", profile.name},
          {"target", profile.target},
          {"active_tiles", summary.active_tiles},
          {"clock_ghz", profile.clock_ghz},
          {"syncs", summary.syncs},
          {"exchange_bytes", summary.exchange_bytes},
          {"worker_cycles", summary.worker_cycles},
          {"amp_macs", summary.amp_macs},
          {"amp_utilisation", summary.amp_utilisation},
          {"roofline_fraction", summary.roofline_fraction ? json(*summary.roofline_fraction) : json(nullptr)},
          {"graph_macs", profile.graph_macs},
          {"peak_macs_per_cycle", profile.peak_macs_per_cycle},
          {"phases", phases_json(summary.phases)},
          {"fault", fault_json(profile.fault)}};
}

json query_json(const ProfileData& profile, const ProfileSummary& summary, std::size_t top) {
  json kernels = json::array();
  for (const KernelTotal& kernel : summary.kernels) kernels.push_back(kernel_json(kernel));
  json ops = json::array();
  for (const OpTotal& op : summary.ops) ops.push_back(op_json(op));
  json supersteps = json::array();
  for (const SuperstepTotal& step : summary.supersteps)
    supersteps.push_back({{"index", step.index},
                          {"begin", step.begin},
                          {"cycles", step.cycles},
                          {"worker_cycles", step.worker_cycles},
                          {"exchange_bytes", step.exchange_bytes},
                          {"exchange_cycles", step.exchange_cycles},
                          {"sync_cycles", step.sync_cycles},
                          {"busiest_send_share", step.busiest_send_share},
                          {"busiest_receive_share", step.busiest_receive_share},
                          {"place", place_json(step)}});
  json iterations = json::array();
  for (const IterationTotal& iteration : summary.iterations) {
    json ops = json::array();
    for (const auto& [label, cycles] : iteration.ops)
      ops.push_back({{"name", profile.events.labels[label]}, {"worker_cycles", cycles}});
    iterations.push_back({{"iteration", iteration.iteration},
                          {"supersteps", iteration.supersteps},
                          {"cycles", iteration.cycles},
                          {"worker_cycles", iteration.worker_cycles},
                          {"exchange_bytes", iteration.exchange_bytes},
                          {"sync_cycles", iteration.sync_cycles},
                          {"ops", std::move(ops)}});
  }
  json transfers = json::array();
  for (std::size_t i = 0; i < std::min(top, summary.traffic.pairs.size()); ++i) {
    const PeerTraffic& pair = summary.traffic.pairs[i];
    transfers.push_back({{"source", pair.source},
                         {"to", peer_json(profile, pair.peer)},
                         {"bytes", pair.bytes},
                         {"sends", pair.sends},
                         {"first_superstep", pair.first_superstep},
                         {"op", profile.events.labels[pair.op]}});
  }
  json tiles = json::array();
  for (const TileSummary& tile : summary.tiles_by_index) tiles.push_back(tile_json(tile));
  json busiest = json::array();
  for (const TileSummary& tile : busiest_tiles(summary, top)) busiest.push_back(tile_json(tile));
  json report = totals_json(profile, summary);
  report.update({{"tiles", summary.tiles},
                 {"cycles", summary.cycles},
                 {"renderer_cycles", summary.renderer_cycles},
                 {"kernels", std::move(kernels)},
                 {"ops", std::move(ops)},
                 {"supersteps", std::move(supersteps)},
                 {"schedule", package::schedule_json(profile.schedule)},
                 {"iterations", std::move(iterations)},
                 {"heaviest_transfers", std::move(transfers)},
                 {"traffic_matrix", traffic_matrix_json(summary.traffic)},
                 {"busiest_tiles", std::move(busiest)},
                 {"tiles_by_index", std::move(tiles)}});
  return report;
}

}  // namespace tilec::profile
