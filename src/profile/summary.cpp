#include "profile/summary.h"

#include "profile/profile_codec.h"

#include "target/machine.h"

#include <algorithm>
#include <array>
#include <functional>

namespace tilec::profile {

namespace {

enum Activity : std::uint8_t { kCompute, kExchange, kSync };

std::optional<Activity> activity_of(sim::ProfileEventKind kind) {
  switch (kind) {
    case sim::ProfileEventKind::WorkerKernel: return kCompute;
    case sim::ProfileEventKind::SupervisorExchange: return kExchange;
    case sim::ProfileEventKind::SyncWait: return kSync;
    case sim::ProfileEventKind::Halt: return std::nullopt;
  }
  return std::nullopt;
}

struct Edge {
  std::uint64_t cycle;
  int delta;
  Activity activity;
};

}  // namespace

PhaseCycles& PhaseCycles::operator+=(const PhaseCycles& other) {
  compute += other.compute;
  exchange += other.exchange;
  sync += other.sync;
  idle += other.idle;
  return *this;
}

void for_each_phase_span(const std::vector<sim::ProfileEvent>& events, std::uint64_t cycles,
                         const std::function<void(std::uint64_t, std::uint64_t, Phase)>& visit) {
  std::vector<Edge> edges;
  edges.reserve(2 * events.size());
  for (const sim::ProfileEvent& event : events)
    if (std::optional<Activity> activity = activity_of(event.kind); activity && event.end > event.begin) {
      edges.push_back({std::min(event.begin, cycles), +1, *activity});
      edges.push_back({std::min(event.end, cycles), -1, *activity});
    }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.cycle < b.cycle; });

  std::array<int, 3> open{};
  std::uint64_t from = 0;
  auto attribute = [&](std::uint64_t to) {
    if (to == from) return;
    visit(from, to,
          open[kCompute] > 0    ? Phase::Compute
          : open[kExchange] > 0 ? Phase::Exchange
          : open[kSync] > 0     ? Phase::Sync
                                : Phase::Idle);
    from = to;
  };
  for (const Edge& edge : edges) {
    attribute(edge.cycle);
    open[edge.activity] += edge.delta;
  }
  attribute(cycles);
}

PhaseCycles tile_phases(const std::vector<sim::ProfileEvent>& events, std::uint64_t cycles) {
  PhaseCycles phases;
  for_each_phase_span(events, cycles, [&](std::uint64_t from, std::uint64_t to, Phase phase) {
    const std::uint64_t length = to - from;
    switch (phase) {
      case Phase::Compute: phases.compute += length; break;
      case Phase::Exchange: phases.exchange += length; break;
      case Phase::Sync: phases.sync += length; break;
      case Phase::Idle: phases.idle += length; break;
    }
  });
  return phases;
}

namespace {

std::vector<OpTotal> op_totals(const ProfileData& profile, std::uint64_t worker_cycles, const MachineModel& machine) {
  std::vector<OpTotal> ops(profile.events.labels.size());
  for (std::uint32_t label = 0; label < ops.size(); ++label) {
    ops[label].label = label;
    ops[label].name = profile.events.labels[label];
  }
  for (const std::vector<sim::ProfileEvent>& events : profile.events.tiles)
    for (const sim::ProfileEvent& event : events) {
      OpTotal& op = ops[event.op];
      if (event.kind == sim::ProfileEventKind::WorkerKernel) {
        op.calls += 1;
        op.worker_cycles += event.end - event.begin;
        op.amp_instructions += event.amp_instructions;
        op.amp_macs += event.amp_macs;
      } else if (event.kind == sim::ProfileEventKind::SupervisorExchange) {
        op.sends += 1;
        op.exchange_bytes += event.detail;
        op.exchange_cycles += event.end - event.begin;
      }
    }
  std::erase_if(ops, [](const OpTotal& op) { return op.calls == 0 && op.sends == 0; });
  for (OpTotal& op : ops) {
    op.share = static_cast<double>(op.worker_cycles) / static_cast<double>(std::max<std::uint64_t>(worker_cycles, 1));
    const double issue_slots = static_cast<double>(op.worker_cycles) / machine.issue_slots;
    op.amp_utilisation = issue_slots > 0 ? static_cast<double>(op.amp_instructions) / issue_slots : 0.0;
  }
  std::stable_sort(ops.begin(), ops.end(),
                   [](const OpTotal& a, const OpTotal& b) { return a.worker_cycles > b.worker_cycles; });
  return ops;
}

// Each tile's events fall into the superstep of the next sync they reach;
// the releases (a sync's end, the same on every tile) bound them.
std::vector<SuperstepTotal> superstep_totals(const ProfileData& profile, std::uint64_t syncs) {
  std::vector<SuperstepTotal> steps(syncs + 1);
  for (std::uint32_t s = 0; s < steps.size(); ++s) steps[s].index = s;
  std::vector<std::uint64_t> release(syncs, 0);
  for (const std::vector<sim::ProfileEvent>& events : profile.events.tiles) {
    std::size_t step = 0;
    for (const sim::ProfileEvent& event : events) {
      SuperstepTotal& total = steps[std::min<std::size_t>(step, syncs)];
      const std::uint64_t length = event.end - event.begin;
      switch (event.kind) {
        case sim::ProfileEventKind::WorkerKernel: total.worker_cycles += length; break;
        case sim::ProfileEventKind::SupervisorExchange:
          total.exchange_bytes += event.detail;
          total.exchange_cycles += length;
          break;
        case sim::ProfileEventKind::SyncWait:
          steps[event.detail].sync_cycles += length;
          release[event.detail] = std::max(release[event.detail], event.end);
          step = std::size_t{event.detail} + 1;
          break;
        case sim::ProfileEventKind::Halt: break;
      }
    }
  }
  std::uint64_t begin = 0;
  for (SuperstepTotal& step : steps) {
    const std::uint64_t end = step.index < syncs ? release[step.index] : profile.cycles;
    step.begin = begin;
    step.cycles = end > begin ? end - begin : 0;
    begin = std::max(begin, end);
  }
  return steps;
}

}  // namespace

ProfileSummary summarize(const ProfileData& profile) {
  validate_profile(profile);
  ProfileSummary summary;
  summary.cycles = profile.cycles;
  summary.renderer_cycles = renderer_cycles(profile);
  summary.tiles = profile.tiles;

  std::vector<KernelTotal> kernels(profile.events.labels.size());
  for (std::uint32_t label = 0; label < kernels.size(); ++label) {
    kernels[label].label = label;
    kernels[label].name = profile.events.labels[label];
  }
  for (std::uint32_t tile = 0; tile < profile.tiles; ++tile) {
    const std::vector<sim::ProfileEvent>& events = profile.events.tiles[tile];
    const sim::TileStats& stats = profile.tile_stats[tile];
    TileSummary row;
    row.tile = tile;
    row.phases = tile_phases(events, profile.cycles);
    row.amp_macs = stats.total_amp_macs();
    row.halt_cycle = stats.halt_cycle;
    row.active = !events.empty();
    for (const sim::ProfileEvent& event : events) {
      if (event.kind == sim::ProfileEventKind::WorkerKernel) {
        row.worker_cycles += event.end - event.begin;
        kernels[event.label].calls += 1;
        kernels[event.label].worker_cycles += event.end - event.begin;
      } else if (event.kind == sim::ProfileEventKind::SyncWait) {
        summary.syncs = std::max<std::uint64_t>(summary.syncs, std::uint64_t{event.detail} + 1);
      }
    }
    summary.phases += row.phases;
    summary.worker_cycles += row.worker_cycles;
    summary.amp_macs += row.amp_macs;
    summary.exchange_bytes += stats.bytes_sent;
    summary.active_tiles += row.active ? 1 : 0;
    summary.tiles_by_index.push_back(row);
  }

  std::erase_if(kernels, [](const KernelTotal& kernel) { return kernel.calls == 0; });
  for (KernelTotal& kernel : kernels)
    kernel.share = static_cast<double>(kernel.worker_cycles) / static_cast<double>(std::max<std::uint64_t>(summary.worker_cycles, 1));
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const KernelTotal& a, const KernelTotal& b) { return a.worker_cycles > b.worker_cycles; });
  summary.kernels = std::move(kernels);
  const MachineModel machine = machine_by_name(profile.target);
  summary.ops = op_totals(profile, summary.worker_cycles, machine);
  summary.supersteps = superstep_totals(profile, summary.syncs);
  summary.iterations = iteration_totals(profile, summary.supersteps);
  summary.traffic = exchange_traffic(profile, summary.supersteps);

  const double capacity = static_cast<double>(profile.cycles) * profile.tiles;
  if (capacity > 0) {
    double amp_cycles = 0;
    for (const sim::TileStats& stats : profile.tile_stats)
      for (AmpPrecision precision : {AmpPrecision::Fp8, AmpPrecision::Fp16, AmpPrecision::Fp32})
        amp_cycles += static_cast<double>(stats.amp_macs[static_cast<std::size_t>(precision)]) /
                      machine.amp_macs_per_cycle(precision);
    summary.amp_utilisation = amp_cycles / capacity;
    if (profile.peak_macs_per_cycle > 0)
      summary.roofline_fraction = profile.graph_macs / (capacity * profile.peak_macs_per_cycle);
  }
  return summary;
}

std::vector<TileSummary> busiest_tiles(const ProfileSummary& summary, std::size_t count) {
  std::vector<TileSummary> tiles = summary.tiles_by_index;
  count = std::min(count, tiles.size());
  std::partial_sort(tiles.begin(), tiles.begin() + static_cast<std::ptrdiff_t>(count), tiles.end(),
                    [](const TileSummary& a, const TileSummary& b) {
                      return a.worker_cycles != b.worker_cycles ? a.worker_cycles > b.worker_cycles : a.tile < b.tile;
                    });
  tiles.resize(count);
  return tiles;
}

}  // namespace tilec::profile
