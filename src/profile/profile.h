// A profile: what every tile did during one simulated run, with the
// compiler's memory map, saved as a documented file (docs/profile-format.md)
// that `tilec profile query|render|export` read.
#pragma once

#include "package/package.h"
#include "sim/device.h"
#include "sim/fault.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::profile {

// Where a faulting run stopped (sim::Fault): its profile runs up to here.
struct FaultMark {
  std::uint32_t tile = 0;
  std::uint32_t context = 0;  // 0-5 a worker, 6 the supervisor
  std::uint32_t pc = 0;
  std::uint64_t cycle = 0;
  std::string bundle;   // the disassembled bundle, "" when none could be read
  std::string message;  // the fault's whole one-line message
};

struct ProfileData {
  std::string name;          // e.g. the case: "fp8-b1-n1-default"
  std::string target;        // machine_by_name() spelling
  std::uint32_t tiles = 0;
  double clock_ghz = 0;
  std::uint64_t cycles = 0;  // the run's cycles (largest halt cycle)
  // Roofline: total MACs the graph needs and the AMP peak per tile per cycle
  // for its precision (0 when the graph has no GEMM).
  double graph_macs = 0;
  std::uint32_t peak_macs_per_cycle = 0;
  std::vector<sim::TileStats> tile_stats;
  sim::Profile events;
  // Tile 0's planned memory map (every tile uses the same addresses).
  std::vector<package::Region> regions;
  // The package's exchange groups, for the members of a multicast send.
  std::vector<std::vector<std::uint32_t>> exchange_groups;
  // The run as the compiler scheduled it: chunks, plan groups, the repeat.
  package::Schedule schedule;
  std::uint32_t peak_tile_bytes = 0;
  std::optional<FaultMark> fault;
};

// Gathers a profile from a run of `package`; for a faulting run, give the
// fault's partial_run() and the fault (fault_mark). Move the run in to
// keep one copy of its events.
ProfileData make_profile(std::string name, const package::Package& package, const MachineModel& machine,
                         sim::RunResult run, double graph_macs, std::uint32_t peak_macs_per_cycle);

FaultMark fault_mark(const sim::Fault& fault);

void write_profile(const std::string& path, const ProfileData& profile);
// BadInput (one line, naming the file) for anything malformed.
ProfileData read_profile(const std::string& path);

// The span the renderer shows: from the first event after the initial sync
// (if the run starts with one) to the last halt.
std::uint64_t renderer_cycles(const ProfileData& profile);

// The same span's ends, in cycles of the run: renderer_cycles() is
// end - begin. Without an initial sync, begin is 0; without halts, end is
// `cycles`.
struct CycleSpan {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};
CycleSpan renderer_span(const ProfileData& profile);

// A kernel's colour on every page ('#rrggbb'): a hue from a hash of its
// name, so the same name looks the same whatever else a run holds; never
// the amber band of exchange.
std::string kernel_colour(std::string_view name);

// What the page's timeline holds (docs/profile-format.md, "render"); the
// tables always cover the whole run.
struct PageOptions {
  // The timeline's cycles [begin, end): events overlapping them, clipped to
  // them. Left at the whole run, the span stops short once its events pass
  // `event_limit_bytes` of page text, so that a browser can open the page.
  std::uint64_t begin = 0;
  std::uint64_t end = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t event_limit_bytes = 50'000'000;
};

struct Page {
  std::string html;
  CycleSpan timeline;  // the cycles the timeline holds
  bool cut = false;    // the event limit ended the timeline early
};

// One self-contained HTML page (no network): timeline, kernel breakdown,
// memory map. BadInput for a cycle range that holds none of the run.
Page render_html(const ProfileData& profile, const PageOptions& options = {});
// A cut page's one-line note: the cycles its timeline holds, and how to see
// others.
std::string cut_timeline_note(const Page& page, const std::string& profile_path);

// What a Chrome trace export holds (docs/profile-format.md, "export").
struct ChromeTraceOptions {
  std::vector<std::uint32_t> tiles;  // the tiles exported; empty: every tile
  // The cycles [begin, end): events overlapping them, clipped to them.
  std::uint64_t begin = 0;
  std::uint64_t end = std::numeric_limits<std::uint64_t>::max();
  // Tiles: one process per tile, every event. Columns: one process per
  // tile column, counters of its tiles in each phase and its busy workers.
  // Groups: the same per plan group (the profile's schedule). Auto: tiles,
  // unless that is more than `auto_limit_bytes`, then columns.
  enum class Tracks : std::uint8_t { Auto, Tiles, Columns, Groups } tracks = Tracks::Auto;
  std::uint64_t auto_limit_bytes = 50'000'000;
};

struct ChromeTrace {
  std::string json;
  ChromeTraceOptions::Tracks tracks = ChromeTraceOptions::Tracks::Tiles;  // what it holds (Auto decided)
};

// Chrome trace-event JSON (chrome://tracing, Perfetto). BadInput for a
// tile the profile lacks or an empty cycle range.
ChromeTrace chrome_trace(const ProfileData& profile, const ChromeTraceOptions& options = {});

}  // namespace tilec::profile
