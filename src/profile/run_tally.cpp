#include "profile/run_tally.h"

#include "support/error.h"

#include <algorithm>
#include <limits>

namespace tilec::profile {

namespace {

template <typename Tally>
Tally tally_of(const ProfileData& profile) {
  Tally tally(static_cast<std::uint32_t>(profile.events.tiles.size()));
  for (std::uint32_t tile = 0; tile < profile.events.tiles.size(); ++tile) tally.add(tile, profile.events.tiles[tile]);
  return tally;
}

}  // namespace

SpanTally::SpanTally(std::uint32_t tiles) : tiles_(tiles) {}

SpanTally SpanTally::of(const ProfileData& profile) { return tally_of<SpanTally>(profile); }

void SpanTally::add(std::uint32_t tile, const std::vector<sim::ProfileEvent>& events) {
  TILEC_CHECK(tile < tiles_.size(), "events of tile {} in a run of {} tiles", tile, tiles_.size());
  if (events.empty()) return;
  TileStart& start = tiles_[tile];
  if (start.events == 0) {
    const sim::ProfileEvent& first = events.front();
    start.starts_with_initial_sync = first.kind == sim::ProfileEventKind::SyncWait && first.detail == 0;
  }
  // The tile's second event: this batch's first or second.
  if (start.events == 1)
    start.second_begin = events.front().begin;
  else if (start.events == 0 && events.size() > 1)
    start.second_begin = events[1].begin;
  start.events += events.size();
  for (const sim::ProfileEvent& event : events)
    if (event.kind == sim::ProfileEventKind::Halt) {
      any_halt_ = true;
      last_halt_ = std::max(last_halt_, event.begin);
    }
}

// The run starts with a sync when every tile that did anything began with a
// wait at the run's first sync (sync 0); the span then starts at the
// earliest event that followed that wait on any tile. It ends at the last
// halt, or at `cycles` without one.
CycleSpan SpanTally::span(std::uint64_t cycles) const {
  CycleSpan span;
  span.end = any_halt_ ? last_halt_ : cycles;
  bool any_tile = false, initial_sync = true;
  std::uint64_t first_after = cycles;
  for (const TileStart& start : tiles_) {
    if (start.events == 0) continue;
    initial_sync = initial_sync && start.starts_with_initial_sync;
    any_tile = true;
    if (start.events > 1) first_after = std::min(first_after, start.second_begin);
  }
  span.begin = std::min(any_tile && initial_sync ? first_after : 0, span.end);
  return span;
}

std::uint32_t SpanTally::active_tiles() const {
  return static_cast<std::uint32_t>(
      std::count_if(tiles_.begin(), tiles_.end(), [](const TileStart& start) { return start.events > 0; }));
}

RunTally::RunTally(std::uint32_t tiles) : busy_(tiles), span_(tiles) {}

RunTally RunTally::of(const ProfileData& profile) { return tally_of<RunTally>(profile); }

void RunTally::add(std::uint32_t tile, const std::vector<sim::ProfileEvent>& events) {
  span_.add(tile, events);
  PhaseCycles& busy = busy_[tile];
  // The batch's own spans: what it leaves idle is counted once, at the end.
  for_each_phase_span(events, std::numeric_limits<std::uint64_t>::max(),
                      [&](std::uint64_t from, std::uint64_t to, Phase phase) {
                        const std::uint64_t length = to - from;
                        switch (phase) {
                          case Phase::Compute: busy.compute += length; break;
                          case Phase::Exchange: busy.exchange += length; break;
                          case Phase::Sync: busy.sync += length; break;
                          case Phase::Idle: break;
                        }
                      });
}

PhaseCycles RunTally::phases(std::uint64_t cycles) const {
  PhaseCycles total;
  for (const PhaseCycles& busy : busy_) {
    total += busy;
    total.idle += cycles - std::min(cycles, busy.total());
  }
  return total;
}

}  // namespace tilec::profile
