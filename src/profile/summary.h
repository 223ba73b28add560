// What a profile adds up to: cycles by phase, worker-cycles by kernel, per
// tile figures, AMP utilisation and the roofline fraction. `tilec profile
// query` prints it and the HTML report shows it.
//
// Phase accounting (docs/profile-format.md, "Phases"): every tile's cycles
// [0, cycles) fall into exactly one phase, the first that applies:
//   compute   at least one worker runs a kernel;
//   exchange  the supervisor sends (a SupervisorExchange span);
//   sync      the supervisor waits at a sync (a SyncWait span);
//   idle      none of these: before the first event, gaps, after the halt.
// So compute + exchange + sync + idle = cycles on every tile.
#pragma once

#include "profile/profile.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tilec::profile {

struct PhaseCycles {
  std::uint64_t compute = 0;
  std::uint64_t exchange = 0;
  std::uint64_t sync = 0;
  std::uint64_t idle = 0;

  std::uint64_t total() const { return compute + exchange + sync + idle; }
  PhaseCycles& operator+=(const PhaseCycles& other);
};

struct KernelTotal {
  std::uint32_t label = 0;
  std::string name;
  std::uint64_t calls = 0;          // worker runs of the kernel
  std::uint64_t worker_cycles = 0;  // summed over workers and tiles
  double share = 0;                 // of every kernel's worker-cycles
};

// Worker runs of the kernels that serve one graph op (or fused ops): the
// op symbols' names, "" outside any.
struct OpTotal {
  std::uint32_t label = 0;
  std::string name;
  std::uint64_t calls = 0;
  std::uint64_t worker_cycles = 0;
  std::uint64_t amp_instructions = 0;
  std::uint64_t amp_macs = 0;
  // The sends that serve it: how many, their bytes and supervisor cycles.
  std::uint64_t sends = 0;
  std::uint64_t exchange_bytes = 0;
  std::uint64_t exchange_cycles = 0;
  double share = 0;  // of every kernel's worker-cycles
  // Share of the workers' issue slots (one in MachineModel::issue_slots
  // cycles each) that carried an AMP instruction.
  double amp_utilisation = 0;
};

// Where a superstep of the run falls in the compiler's schedule
// (package::Schedule).
struct SuperstepPlace {
  std::uint32_t chunk = 0;
  std::uint32_t step = 0;       // superstep of the chunk, the repeat body counted once
  std::int32_t iteration = -1;  // of the repeat; -1 outside it
};

// Superstep s: on every tile, from the release of sync s - 1 (the run's
// start for s = 0) to the release of sync s (the halt after the last sync).
struct SuperstepTotal {
  std::uint32_t index = 0;
  std::uint64_t begin = 0;  // cycle of the release that starts it
  std::uint64_t cycles = 0;
  std::uint64_t worker_cycles = 0;
  std::uint64_t exchange_bytes = 0;   // bytes sent
  std::uint64_t exchange_cycles = 0;  // tile-cycles of sends
  std::uint64_t sync_cycles = 0;      // tile-cycles waiting at its sync
  // The largest share of one tile's exchange bandwidth (bytes per cycle
  // over the superstep's cycles) its sends, and its arriving bytes, used.
  double busiest_send_share = 0;
  double busiest_receive_share = 0;
  std::optional<SuperstepPlace> place;  // unset when the schedule is not known
};

// One iteration of the repeat, over every chunk: its supersteps' figures,
// and worker-cycles by op.
struct IterationTotal {
  std::uint32_t iteration = 0;
  std::uint32_t supersteps = 0;
  std::uint64_t cycles = 0;
  std::uint64_t worker_cycles = 0;
  std::uint64_t exchange_bytes = 0;
  std::uint64_t sync_cycles = 0;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> ops;  // (op label, worker-cycles), most first
};

// Bytes one tile sent to one peer (a tile, or sim::kMulticastPeer | group)
// for one op over the run.
struct PeerTraffic {
  std::uint32_t source = 0;
  std::uint32_t peer = 0;
  std::uint32_t op = sim::kNoOpLabel;  // the op symbol of the sends (Profile::labels)
  std::uint64_t bytes = 0;  // sent once, however many tiles a multicast reaches
  std::uint64_t sends = 0;
  std::uint32_t first_superstep = 0;
};

constexpr std::uint32_t kTrafficTileCells = 64;

struct ExchangeTraffic {
  std::vector<PeerTraffic> pairs;  // most bytes first (ties: source, then peer)
  // Bytes arriving, multicasts counted at every member, between cells of
  // `tiles_per_cell` tiles (a tile up to kTrafficTileCells tiles, a tile
  // column beyond): [source cell x cells + destination cell].
  std::uint32_t tiles_per_cell = 1;
  std::uint32_t cells = 0;
  std::vector<std::uint64_t> cell_bytes;
};

struct TileSummary {
  std::uint32_t tile = 0;
  PhaseCycles phases;
  std::uint64_t worker_cycles = 0;  // busy worker-cycles, every kernel
  std::uint64_t amp_macs = 0;
  std::uint64_t halt_cycle = 0;
  bool active = false;  // ran a program (has events)
};

struct ProfileSummary {
  std::uint64_t cycles = 0;
  std::uint64_t renderer_cycles = 0;
  std::uint32_t tiles = 0;
  std::uint32_t active_tiles = 0;
  std::uint64_t syncs = 0;           // global syncs of the run
  std::uint64_t exchange_bytes = 0;  // bytes sent, each send once
  PhaseCycles phases;                // summed over every tile
  std::uint64_t worker_cycles = 0;
  std::uint64_t amp_macs = 0;
  // AMP-cycles the executed MACs need at the machine's peak for each
  // precision, over cycles x tiles: MACs / (cycles x tiles x peak) when all
  // MACs are of one precision.
  double amp_utilisation = 0;
  // graph_macs / (cycles x tiles x peak_macs_per_cycle); unset without a
  // peak (a graph without GEMMs) or without cycles.
  std::optional<double> roofline_fraction;
  std::vector<KernelTotal> kernels;  // most worker-cycles first
  std::vector<OpTotal> ops;          // most worker-cycles first
  std::vector<SuperstepTotal> supersteps;  // in order
  std::vector<IterationTotal> iterations;  // the repeat's, in order; none without one
  ExchangeTraffic traffic;
  std::vector<TileSummary> tiles_by_index;
};

enum class Phase : std::uint8_t { Compute, Exchange, Sync, Idle };

// One tile's [0, cycles) as consecutive spans, each in the phase the rules
// above give it: visit(from, to, phase) in order, from < to.
void for_each_phase_span(const std::vector<sim::ProfileEvent>& events, std::uint64_t cycles,
                         const std::function<void(std::uint64_t, std::uint64_t, Phase)>& visit);

// The phases of one tile's events over [0, cycles).
PhaseCycles tile_phases(const std::vector<sim::ProfileEvent>& events, std::uint64_t cycles);

// BadInput when the profile is not valid (validate_profile).
ProfileSummary summarize(const ProfileData& profile);

// The run's exchange by source and peer and by tile column, and each
// superstep's busiest_*_share (traffic.cpp).
ExchangeTraffic exchange_traffic(const ProfileData& profile, std::vector<SuperstepTotal>& supersteps);

// The places of the run's first `count` supersteps in `schedule`; empty
// when it is not known or schedules fewer (iterations.cpp).
std::vector<SuperstepPlace> superstep_places(const package::Schedule& schedule, std::size_t count);

// Sets each superstep's place, and totals the repeat's iterations, when the
// profile's schedule accounts for the run's supersteps.
std::vector<IterationTotal> iteration_totals(const ProfileData& profile, std::vector<SuperstepTotal>& supersteps);

// The `count` tiles with the most busy worker-cycles (ties: lower tile
// first), most first.
std::vector<TileSummary> busiest_tiles(const ProfileSummary& summary, std::size_t count);

}  // namespace tilec::profile
