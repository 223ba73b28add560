// Chrome trace-event JSON of a profile. Per tile: one process per tile
// (pid = tile + 1, named "tile N"), one thread per context (tid = context +
// 1: workers 1-6, the supervisor 7), a complete ("X") event per kernel, send
// and sync wait, an instant ("i") event per halt. Per column: one process
// per tile column with counter ("C") events. Times are microseconds at the
// profile's clock; every event also carries its cycles in `args`.
#include "profile/profile.h"
#include "profile/profile_codec.h"
#include "profile/summary.h"
#include "support/error.h"
#include "target/machine.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <iterator>

namespace tilec::profile {

namespace {

// Counter samples per column over the exported cycles: enough to see every
// superstep of a sweep case, few enough that a full chip stays a few MB.
constexpr std::uint64_t kColumnBuckets = 2000;

std::string context_name(unsigned context) {
  return context == sim::kSupervisorContext ? "supervisor" : fmt::format("worker {}", context);
}

class TraceWriter {
 public:
  TraceWriter(const ProfileData& profile, const ChromeTraceOptions& options)
      : profile_(profile), options_(options), end_(std::min(options.end, profile.cycles)),
        microseconds_per_cycle_(1.0 / (profile.clock_ghz * 1e3)) {
    for (const std::string& label : profile.events.labels) quoted_labels_.push_back(nlohmann::json(label).dump());
    if (options.tiles.empty()) {
      for (std::uint32_t tile = 0; tile < profile.tiles; ++tile) tiles_.push_back(tile);
    } else {
      tiles_ = options.tiles;
      std::sort(tiles_.begin(), tiles_.end());
      tiles_.erase(std::unique(tiles_.begin(), tiles_.end()), tiles_.end());
    }
  }

  std::string tiles() {
    open();
    for (std::uint32_t tile : tiles_) tile_process(tile);
    return close();
  }

  // One process per band of tiles: a tile column, or a plan group.
  std::string bands(ChromeTraceOptions::Tracks tracks) {
    open();
    const MachineModel machine = machine_by_name(profile_.target);
    const bool columns = tracks == ChromeTraceOptions::Tracks::Columns;
    const package::Schedule& plan = profile_.schedule;
    // Tiles past the plan's groups form one more band.
    auto band_of = [&](std::uint32_t tile) {
      return columns ? machine.column(tile) : std::min(tile / plan.group_size, plan.groups);
    };
    for (std::size_t first = 0; first < tiles_.size();) {
      std::size_t last = first;
      const std::uint32_t band = band_of(tiles_[first]);
      while (last < tiles_.size() && band_of(tiles_[last]) == band) ++last;
      const std::string name = columns ? fmt::format("column {}", band)
                               : band < plan.groups ? fmt::format("group {}", band)
                                                    : std::string("outside the plan's groups");
      band_process(band, name, first, last);
      first = last;
    }
    return close();
  }

 private:
  void open() {
    out_.clear();
    first_ = true;
    fmt::format_to(write(), R"({{"displayTimeUnit":"ns","otherData":{{"profile":{},"target":{},"clock_ghz":{},"cycles":{},"begin_cycle":{},"end_cycle":{}}},)",
                   nlohmann::json(profile_.name).dump(), nlohmann::json(profile_.target).dump(), profile_.clock_ghz,
                   profile_.cycles, options_.begin, end_);
    out_ += "\"traceEvents\":[";
  }
  std::string close() {
    out_ += "]}\n";
    return std::move(out_);
  }
  std::back_insert_iterator<std::string> write() { return std::back_inserter(out_); }
  void separate() {
    if (!first_) out_ += ",\n";
    first_ = false;
  }
  double micros(std::uint64_t cycle) const { return static_cast<double>(cycle) * microseconds_per_cycle_; }

  void name_process(std::uint32_t pid, const std::string& name, std::uint32_t order) {
    separate();
    fmt::format_to(write(), R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":{}}}}},)", pid,
                   nlohmann::json(name).dump());
    fmt::format_to(write(), R"({{"ph":"M","pid":{},"name":"process_sort_index","args":{{"sort_index":{}}}}})", pid,
                   order);
  }

  void tile_process(std::uint32_t tile) {
    const std::vector<sim::ProfileEvent>& events = profile_.events.tiles[tile];
    if (events.empty()) return;
    const std::uint32_t pid = tile + 1;
    name_process(pid, fmt::format("tile {}", tile), tile);
    bool used[sim::kSupervisorContext + 1] = {};
    for (const sim::ProfileEvent& event : events) used[event.context] = true;
    for (unsigned context = 0; context <= sim::kSupervisorContext; ++context)
      if (used[context])
        fmt::format_to(write(),
                       ",\n"
                       R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":"{}"}}}},)"
                       R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})",
                       pid, context + 1, context_name(context), pid, context + 1,
                       context == sim::kSupervisorContext ? 0 : context + 1);
    for (const sim::ProfileEvent& event : events) {
      if (event.kind == sim::ProfileEventKind::Halt) {
        if (event.begin < options_.begin || event.begin > end_) continue;
        separate();
        fmt::format_to(write(), R"({{"ph":"i","s":"t","pid":{},"tid":{},"name":"halt","cat":"halt","ts":{},"args":{{"cycle":{}}}}})",
                       pid, event.context + 1, micros(event.begin), event.begin);
        continue;
      }
      const std::uint64_t begin = std::max(event.begin, options_.begin), end = std::min(event.end, end_);
      if (begin >= end && !(event.begin == event.end && event.begin >= options_.begin && event.begin < end_)) continue;
      separate();
      fmt::format_to(write(), R"({{"ph":"X","pid":{},"tid":{},"name":{},"cat":"{}","ts":{},"dur":{},"args":{{"begin_cycle":{},"end_cycle":{})",
                     pid, event.context + 1, quoted_labels_[event.label], event_kind_name(event.kind), micros(begin),
                     micros(end - begin), event.begin, event.end);
      switch (event.kind) {
        case sim::ProfileEventKind::WorkerKernel:
          fmt::format_to(write(), R"(,"entry":"{:#x}")", event.detail);
          if (event.op != sim::kNoOpLabel) fmt::format_to(write(), R"(,"op":{})", quoted_labels_[event.op]);
          break;
        case sim::ProfileEventKind::SupervisorExchange: fmt::format_to(write(), R"(,"bytes":{})", event.detail); break;
        case sim::ProfileEventKind::SyncWait: fmt::format_to(write(), R"(,"sync":{})", event.detail); break;
        case sim::ProfileEventKind::Halt: break;
      }
      out_ += "}}";
    }
  }

  // Tiles [first, last) of tiles_, all in `band`: per bucket of cycles,
  // how many of them were in each phase and how many workers were busy, on
  // average.
  void band_process(std::uint32_t band, const std::string& name, std::size_t first, std::size_t last) {
    const std::uint64_t span = end_ - options_.begin;
    const std::uint64_t width = std::max<std::uint64_t>(1, (span + kColumnBuckets - 1) / kColumnBuckets);
    const std::size_t buckets = static_cast<std::size_t>((span + width - 1) / width);
    std::vector<std::array<double, 4>> phases(buckets, std::array<double, 4>{});
    std::vector<double> workers(buckets, 0);
    // Adds `length`-weighted `value` over [from, to) into the buckets it meets.
    auto spread = [&](std::uint64_t from, std::uint64_t to, auto&& add) {
      from = std::max(from, options_.begin);
      to = std::min(to, end_);
      for (std::uint64_t at = from; at < to;) {
        const std::size_t bucket = static_cast<std::size_t>((at - options_.begin) / width);
        const std::uint64_t bucket_end = std::min(end_, options_.begin + (bucket + 1) * width);
        const std::uint64_t until = std::min(to, bucket_end);
        add(bucket, static_cast<double>(until - at));
        at = until;
      }
    };
    for (std::size_t i = first; i < last; ++i) {
      const std::vector<sim::ProfileEvent>& events = profile_.events.tiles[tiles_[i]];
      for_each_phase_span(events, profile_.cycles, [&](std::uint64_t from, std::uint64_t to, Phase phase) {
        spread(from, to, [&](std::size_t bucket, double length) { phases[bucket][static_cast<int>(phase)] += length; });
      });
      for (const sim::ProfileEvent& event : events)
        if (event.kind == sim::ProfileEventKind::WorkerKernel)
          spread(event.begin, event.end, [&](std::size_t bucket, double length) { workers[bucket] += length; });
    }
    const std::uint32_t pid = band + 1;
    name_process(pid, fmt::format("{} (tiles {}-{}, {} exported)", name, tiles_[first], tiles_[last - 1], last - first),
                 band);
    for (std::size_t bucket = 0; bucket < buckets; ++bucket) {
      const std::uint64_t from = options_.begin + bucket * width;
      const double length = static_cast<double>(std::min(end_, from + width) - from);
      const std::array<double, 4>& p = phases[bucket];
      separate();
      fmt::format_to(write(), R"({{"ph":"C","pid":{},"name":"tiles","ts":{},"args":{{"compute":{:.3g},"exchange":{:.3g},"sync":{:.3g},"idle":{:.3g}}}}},)",
                     pid, micros(from), p[0] / length, p[1] / length, p[2] / length, p[3] / length);
      fmt::format_to(write(), R"({{"ph":"C","pid":{},"name":"busy workers","ts":{},"args":{{"workers":{:.3g}}}}})", pid,
                     micros(from), workers[bucket] / length);
    }
  }

  const ProfileData& profile_;
  const ChromeTraceOptions& options_;
  const std::uint64_t end_;
  const double microseconds_per_cycle_;
  std::vector<std::string> quoted_labels_;
  std::vector<std::uint32_t> tiles_;
  std::string out_;
  bool first_ = true;
};

}  // namespace

ChromeTrace chrome_trace(const ProfileData& profile, const ChromeTraceOptions& options) {
  validate_profile(profile);
  for (std::uint32_t tile : options.tiles)
    if (tile >= profile.tiles)
      throw_bad_input("--tiles", "tile {} does not exist (the profile has tiles 0-{})", tile, profile.tiles - 1);
  const bool whole_run = options.begin == 0 && options.end == std::numeric_limits<std::uint64_t>::max();
  if (!whole_run && options.begin >= std::min(options.end, profile.cycles))
    throw_bad_input("--cycles", "cycles from {} hold none of the run's 0:{}", options.begin, profile.cycles);
  using Tracks = ChromeTraceOptions::Tracks;
  if (options.tracks == Tracks::Groups && !profile.schedule.known())
    throw_bad_input("--aggregate", "groups: the profile records no plan groups (its package has no schedule)");
  TraceWriter writer(profile, options);
  if (options.tracks == Tracks::Columns || options.tracks == Tracks::Groups)
    return {writer.bands(options.tracks), options.tracks};
  std::string json = writer.tiles();
  if (options.tracks == Tracks::Auto && json.size() > options.auto_limit_bytes)
    return {writer.bands(Tracks::Columns), Tracks::Columns};
  return {std::move(json), Tracks::Tiles};
}

}  // namespace tilec::profile
