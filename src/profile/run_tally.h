// A run's phase totals and renderer span, gathered from its events batch by
// batch: from a whole profile, or from the simulator as it runs
// (sim::SimOptions::on_events), so that a run whose profile nobody writes
// never holds its events.
#pragma once

#include "profile/profile.h"
#include "profile/summary.h"

#include <cstdint>
#include <vector>

namespace tilec::profile {

// Batches of one tile come in the order of sim::Profile::tiles, none
// straddling another's span (a sync's release ends every batch the
// simulator hands over).

// The renderer's span and the active tiles: a scan of each event.
class SpanTally {
 public:
  explicit SpanTally(std::uint32_t tiles);
  // Every event of a profile, one tile at a time.
  static SpanTally of(const ProfileData& profile);
  void add(std::uint32_t tile, const std::vector<sim::ProfileEvent>& events);
  // renderer_span() of the events so far, for a run of `cycles`.
  CycleSpan span(std::uint64_t cycles) const;
  std::uint32_t active_tiles() const;  // tiles with any event

 private:
  struct TileStart {
    std::uint64_t events = 0;
    bool starts_with_initial_sync = false;
    std::uint64_t second_begin = 0;  // when events >= 2
  };
  std::vector<TileStart> tiles_;
  bool any_halt_ = false;
  std::uint64_t last_halt_ = 0;
};

// The span, and each tile's phases.
class RunTally {
 public:
  explicit RunTally(std::uint32_t tiles);
  // Every event of a profile, one tile at a time.
  static RunTally of(const ProfileData& profile);

  void add(std::uint32_t tile, const std::vector<sim::ProfileEvent>& events);

  // Summed over every tile for a run of `cycles`: idle is what no event
  // covers up to `cycles`.
  PhaseCycles phases(std::uint64_t cycles) const;
  std::uint32_t active_tiles() const { return span_.active_tiles(); }
  CycleSpan renderer_span(std::uint64_t cycles) const { return span_.span(cycles); }

 private:
  std::vector<PhaseCycles> busy_;  // compute, exchange and sync; idle follows from the run's cycles
  SpanTally span_;
};

}  // namespace tilec::profile
