#include "profile/run_tally.h"

#include "support/error.h"

#include <algorithm>
#include <limits>

namespace tilec::profile {

RunTally::RunTally(std::uint32_t tiles) : tiles_(tiles) {}

RunTally RunTally::of(const ProfileData& profile) {
  RunTally tally(static_cast<std::uint32_t>(profile.events.tiles.size()));
  for (std::uint32_t tile = 0; tile < profile.events.tiles.size(); ++tile)
    tally.add(tile, profile.events.tiles[tile]);
  return tally;
}

void RunTally::add(std::uint32_t tile, const std::vector<sim::ProfileEvent>& events) {
  TILEC_CHECK(tile < tiles_.size(), "events of tile {} in a run of {} tiles", tile, tiles_.size());
  if (events.empty()) return;
  TileTally& tally = tiles_[tile];
  // The batch's own spans: what it leaves idle is counted once, at the end.
  for_each_phase_span(events, std::numeric_limits<std::uint64_t>::max(),
                      [&](std::uint64_t from, std::uint64_t to, Phase phase) {
                        const std::uint64_t length = to - from;
                        switch (phase) {
                          case Phase::Compute: tally.busy.compute += length; break;
                          case Phase::Exchange: tally.busy.exchange += length; break;
                          case Phase::Sync: tally.busy.sync += length; break;
                          case Phase::Idle: break;
                        }
                      });
  if (tally.events == 0) {
    const sim::ProfileEvent& first = events.front();
    tally.starts_with_initial_sync = first.kind == sim::ProfileEventKind::SyncWait && first.detail == 0;
  }
  // The tile's second event: this batch's first or second.
  if (tally.events == 1)
    tally.second_begin = events.front().begin;
  else if (tally.events == 0 && events.size() > 1)
    tally.second_begin = events[1].begin;
  tally.events += events.size();
  for (const sim::ProfileEvent& event : events)
    if (event.kind == sim::ProfileEventKind::Halt) {
      any_halt_ = true;
      last_halt_ = std::max(last_halt_, event.begin);
    }
}

PhaseCycles RunTally::phases(std::uint64_t cycles) const {
  PhaseCycles total;
  for (const TileTally& tally : tiles_) {
    total += tally.busy;
    total.idle += cycles - std::min(cycles, tally.busy.total());
  }
  return total;
}

std::uint32_t RunTally::active_tiles() const {
  return static_cast<std::uint32_t>(
      std::count_if(tiles_.begin(), tiles_.end(), [](const TileTally& tally) { return tally.events > 0; }));
}

// The run starts with a sync when every tile that did anything began with a
// wait at the run's first sync (sync 0); the span then starts at the
// earliest event that followed that wait on any tile.
CycleSpan RunTally::renderer_span(std::uint64_t cycles) const {
  CycleSpan span;
  span.end = any_halt_ ? last_halt_ : cycles;
  bool any_tile = false, initial_sync = true;
  std::uint64_t first_after = cycles;
  for (const TileTally& tally : tiles_) {
    if (tally.events == 0) continue;
    initial_sync = initial_sync && tally.starts_with_initial_sync;
    any_tile = true;
    if (tally.events > 1) first_after = std::min(first_after, tally.second_begin);
  }
  span.begin = std::min(any_tile && initial_sync ? first_after : 0, span.end);
  return span;
}

}  // namespace tilec::profile
