// Gathering a profile from a run, and the span the renderer shows.
#include "profile/profile.h"
#include "support/error.h"

#include <algorithm>

namespace tilec::profile {

ProfileData make_profile(std::string name, const package::Package& package, const MachineModel& machine,
                         const sim::RunResult& run, double graph_macs, std::uint32_t peak_macs_per_cycle) {
  if (run.tiles.size() != machine.tiles)
    throw_failure("", "the run has {} tiles but machine {} has {}", run.tiles.size(), machine.name, machine.tiles);
  if (run.profile.tiles.size() != machine.tiles)
    throw_failure("", "the run recorded no profile (simulate with SimOptions::record_profile)");
  if (package.tiles.size() != machine.tiles)
    throw_failure("", "the package has {} tiles but machine {} has {}", package.tiles.size(), machine.name,
                  machine.tiles);
  ProfileData profile;
  profile.name = std::move(name);
  profile.target = machine.name;
  profile.tiles = machine.tiles;
  profile.clock_ghz = machine.clock_ghz;
  profile.cycles = run.cycles;
  profile.graph_macs = graph_macs;
  profile.peak_macs_per_cycle = peak_macs_per_cycle;
  profile.tile_stats = run.tiles;
  profile.events = run.profile;
  profile.regions = package.tiles.front().regions;
  profile.exchange_groups = package.exchange_groups;
  profile.schedule = package.schedule;
  for (const package::TileImage& image : package.tiles)
    profile.peak_tile_bytes = std::max(profile.peak_tile_bytes, image.peak_bytes);
  return profile;
}

FaultMark fault_mark(const sim::Fault& fault) {
  return FaultMark{fault.tile(), static_cast<std::uint32_t>(fault.context()), fault.pc(), fault.cycle(), fault.bundle(),
                   fault.what()};
}

namespace {

// The largest halt cycle; the run's cycles when no tile halted.
std::uint64_t last_halt(const ProfileData& profile) {
  bool any = false;
  std::uint64_t last = 0;
  for (const std::vector<sim::ProfileEvent>& events : profile.events.tiles)
    for (const sim::ProfileEvent& event : events)
      if (event.kind == sim::ProfileEventKind::Halt) {
        any = true;
        last = std::max(last, event.begin);
      }
  return any ? last : profile.cycles;
}

// The run starts with a sync when every tile that did anything began with a
// wait at the run's first sync (sync 0); the span then starts at the
// earliest event that followed that wait on any tile. 0 otherwise.
std::uint64_t first_event_after_initial_sync(const ProfileData& profile) {
  bool any_tile = false;
  std::uint64_t first_after = profile.cycles;
  for (const std::vector<sim::ProfileEvent>& events : profile.events.tiles) {
    if (events.empty()) continue;
    const sim::ProfileEvent& first = events.front();
    if (first.kind != sim::ProfileEventKind::SyncWait || first.detail != 0) return 0;
    any_tile = true;
    if (events.size() > 1) first_after = std::min(first_after, events[1].begin);
  }
  return any_tile ? first_after : 0;
}

}  // namespace

CycleSpan renderer_span(const ProfileData& profile) {
  CycleSpan span;
  span.end = last_halt(profile);
  span.begin = std::min(first_event_after_initial_sync(profile), span.end);
  return span;
}

std::uint64_t renderer_cycles(const ProfileData& profile) {
  CycleSpan span = renderer_span(profile);
  return span.end - span.begin;
}

}  // namespace tilec::profile
