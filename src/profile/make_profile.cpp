// Gathering a profile from a run, and the span the renderer shows.
#include "profile/profile.h"
#include "profile/run_tally.h"
#include "support/error.h"

#include <algorithm>
#include <utility>

namespace tilec::profile {

ProfileData make_profile(std::string name, const package::Package& package, const MachineModel& machine,
                         sim::RunResult run, double graph_macs, std::uint32_t peak_macs_per_cycle) {
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
  profile.tile_stats = std::move(run.tiles);
  profile.events = std::move(run.profile);
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

CycleSpan renderer_span(const ProfileData& profile) { return SpanTally::of(profile).span(profile.cycles); }

std::uint64_t renderer_cycles(const ProfileData& profile) {
  CycleSpan span = renderer_span(profile);
  return span.end - span.begin;
}

}  // namespace tilec::profile
