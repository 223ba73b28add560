#include "profile/liveness.h"

#include "profile/profile_codec.h"
#include "support/number_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace tilec::profile {

namespace {

bool live_in(const package::Region& region, std::int64_t superstep) {
  return region.resident() || (region.first_superstep <= superstep && superstep <= region.last_superstep);
}

// Bytes covered by at least one of the ranges [begin, end).
std::uint64_t union_bytes(std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges) {
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t bytes = 0, reached = 0;
  for (const auto& [begin, end] : ranges) {
    const std::uint64_t from = std::max(begin, reached);
    if (end > from) bytes += end - from;
    reached = std::max(reached, end);
  }
  return bytes;
}

}  // namespace

Liveness liveness(const ProfileData& profile) {
  Liveness memory;
  std::int64_t supersteps = 1;
  for (const package::Region& region : profile.regions)
    supersteps = std::max<std::int64_t>(supersteps, std::int64_t{region.last_superstep} + 1);
  for (std::int64_t s = 0; s < supersteps; ++s) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
    for (const package::Region& region : profile.regions)
      if (live_in(region, s)) ranges.emplace_back(region.address, std::uint64_t{region.address} + region.size);
    memory.live_bytes.push_back(union_bytes(std::move(ranges)));
    if (memory.live_bytes.back() > memory.peak_live_bytes) {
      memory.peak_live_bytes = memory.live_bytes.back();
      memory.peak_superstep = static_cast<std::uint32_t>(s);
    }
  }
  for (const package::Region& region : profile.regions)
    if (region.size > 0 && live_in(region, memory.peak_superstep))
      memory.live_at_peak.push_back(LiveRegion{region.name, region.kind, region.size, region.resident(), region.op});
  std::stable_sort(memory.live_at_peak.begin(), memory.live_at_peak.end(),
                   [](const LiveRegion& a, const LiveRegion& b) { return a.bytes > b.bytes; });
  std::map<std::string, LiveOp> by_op;
  for (const LiveRegion& region : memory.live_at_peak) {
    LiveOp& op = by_op[region.op];
    op.op = region.op;
    op.bytes += region.bytes;
    op.regions += 1;
  }
  for (auto& [name, op] : by_op) memory.live_at_peak_by_op.push_back(std::move(op));
  std::stable_sort(memory.live_at_peak_by_op.begin(), memory.live_at_peak_by_op.end(),
                   [](const LiveOp& a, const LiveOp& b) { return a.bytes > b.bytes; });
  memory.planned_peak_bytes = profile.peak_tile_bytes;
  for (std::uint32_t tile = 0; tile < profile.tile_stats.size(); ++tile)
    if (profile.tile_stats[tile].memory_bytes > memory.observed_peak_bytes) {
      memory.observed_peak_bytes = profile.tile_stats[tile].memory_bytes;
      memory.observed_peak_tile = tile;
    }
  return memory;
}

std::string liveness_text(const Liveness& memory, std::size_t top) {
  std::string text;
  auto line = [&](const std::string& content) { text += content + "\n"; };
  line(fmt::format("memory per tile: planned peak {} bytes (the extent the compiler placed); observed {} bytes "
                   "(tile {}, the extent it touched){}",
                   grouped(memory.planned_peak_bytes), grouped(memory.observed_peak_bytes), memory.observed_peak_tile,
                   memory.observed_peak_bytes == memory.planned_peak_bytes ? ": equal" : ": they differ"));
  line(fmt::format("live bytes per superstep of the chunk body (every tile alike); the peak, {} bytes, in superstep {}",
                   grouped(memory.peak_live_bytes), memory.peak_superstep));
  const std::uint64_t most = std::max<std::uint64_t>(memory.peak_live_bytes, 1);
  for (std::size_t s = 0; s < memory.live_bytes.size(); ++s) {
    const auto bar = static_cast<std::size_t>(40 * memory.live_bytes[s] / most);
    line(fmt::format("{:>9} {:>12} {}", s, grouped(memory.live_bytes[s]), std::string(bar, '#')));
  }
  const std::size_t shown = std::min(top, memory.live_at_peak.size());
  line(fmt::format("live at the peak ({} of {} regions)", shown, memory.live_at_peak.size()));
  for (std::size_t i = 0; i < shown; ++i) {
    const LiveRegion& region = memory.live_at_peak[i];
    line(fmt::format("  {:<32} {:<16} {:>10} bytes{}{}", region.name, region_kind_name(region.kind),
                     grouped(region.bytes), region.resident ? "  resident" : "",
                     region.op.empty() ? "" : "  op " + region.op));
  }
  const std::size_t ops = std::min(top, memory.live_at_peak_by_op.size());
  line(fmt::format("live at the peak by op ({} of {}; a region inside another counts in both)", ops,
                   memory.live_at_peak_by_op.size()));
  for (std::size_t i = 0; i < ops; ++i) {
    const LiveOp& op = memory.live_at_peak_by_op[i];
    line(fmt::format("  {:<40} {:>10} bytes in {} regions", op.op.empty() ? "(no op: code, arguments, records)" : op.op,
                     grouped(op.bytes), op.regions));
  }
  return text;
}

nlohmann::json liveness_json(const Liveness& memory) {
  nlohmann::json live = nlohmann::json::array();
  for (const LiveRegion& region : memory.live_at_peak)
    live.push_back({{"name", region.name},
                    {"kind", region_kind_name(region.kind)},
                    {"bytes", region.bytes},
                    {"resident", region.resident},
                    {"op", region.op}});
  nlohmann::json by_op = nlohmann::json::array();
  for (const LiveOp& op : memory.live_at_peak_by_op)
    by_op.push_back({{"op", op.op}, {"bytes", op.bytes}, {"regions", op.regions}});
  return {{"live_bytes", memory.live_bytes},
          {"peak_superstep", memory.peak_superstep},
          {"peak_live_bytes", memory.peak_live_bytes},
          {"live_at_peak", std::move(live)},
          {"live_at_peak_by_op", std::move(by_op)},
          {"planned_peak_bytes", memory.planned_peak_bytes},
          {"observed_peak_bytes", memory.observed_peak_bytes},
          {"observed_peak_tile", memory.observed_peak_tile}};
}

}  // namespace tilec::profile
