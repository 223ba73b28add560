// `tilec profile render`: the report template (report_template.html) with
// the page's data inlined as one JSON object. The page needs nothing else:
// no network, no files.
#include "profile/liveness.h"
#include "profile/profile.h"
#include "profile/profile_codec.h"
#include "profile/query_report.h"
#include "profile/report_template.h"
#include "profile/summary.h"
#include "support/error.h"
#include "target/machine.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <xxhash.h>

#include <cmath>
#include <iterator>

namespace tilec::profile {

std::string kernel_colour(std::string_view name) {
  // Hues 0-360 less the 40 degrees around exchange's amber (38).
  constexpr double kAmberFrom = 18, kAmberWidth = 40;
  const std::uint64_t hash = XXH64(name.data(), name.size(), 0);
  double hue = static_cast<double>(hash % 3200) / 10.0;
  if (hue >= kAmberFrom) hue += kAmberWidth;
  // HSL at saturation 0.65 and lightness 0.42: dark enough for white text.
  constexpr double kSaturation = 0.65, kLightness = 0.42;
  const double chroma = kSaturation * std::min(kLightness, 1 - kLightness);
  auto channel = [&](double n) {
    const double k = std::fmod(n + hue / 30.0, 12.0);
    const double value = kLightness - chroma * std::max(-1.0, std::min({k - 3, 9 - k, 1.0}));
    return static_cast<int>(std::lround(255 * value));
  };
  return fmt::format("#{:02x}{:02x}{:02x}", channel(0), channel(8), channel(4));
}

namespace {

using nlohmann::json;

// The heaviest source-peer pairs the page lists.
constexpr std::size_t kPageTransfers = 12;

// Per-tile figures on the page, one flat array with this stride.
constexpr const char* kTileStatFields[] = {
    "halt_cycle",   "bundles",    "amp_macs_fp8",   "amp_macs_fp16",    "amp_macs_fp32",
    "bytes_loaded", "bytes_stored", "bytes_sent",   "bytes_received",   "sync_wait_cycles",
    "worker_cycles", "compute",   "exchange",       "sync",             "idle"};

void append_tile_stats(std::string& out, const ProfileData& profile, const ProfileSummary& summary) {
  auto write = std::back_inserter(out);
  out += '[';
  for (std::uint32_t tile = 0; tile < profile.tiles; ++tile) {
    const sim::TileStats& s = profile.tile_stats[tile];
    const TileSummary& t = summary.tiles_by_index[tile];
    fmt::format_to(write, "{}{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", tile ? "," : "", s.halt_cycle, s.bundles,
                   s.amp_macs[0], s.amp_macs[1], s.amp_macs[2], s.bytes_loaded, s.bytes_stored, s.bytes_sent,
                   s.bytes_received, s.sync_wait_cycles, t.worker_cycles, t.phases.compute, t.phases.exchange,
                   t.phases.sync, t.phases.idle);
  }
  out += ']';
}

// An event on the page: kind, context, begin, end, label, detail, op.
template <typename Out>
Out write_event(Out out, const sim::ProfileEvent& event, std::uint64_t begin, std::uint64_t end) {
  return fmt::format_to(out, "{},{},{},{},{},{},{}", static_cast<unsigned>(event.kind),
                        static_cast<unsigned>(event.context), begin, end, event.label, event.detail, event.op);
}

// Whether `event` shows within [span.begin, span.end): it overlaps it, or
// it is a halt inside it.
bool shows_in(const sim::ProfileEvent& event, const CycleSpan& span) {
  return event.begin == event.end ? event.begin >= span.begin && event.begin <= span.end
                                  : event.end > span.begin && event.begin < span.end;
}

void append_events(std::string& out, const ProfileData& profile, const CycleSpan& span) {
  auto write = std::back_inserter(out);
  out += '[';
  for (std::size_t tile = 0; tile < profile.events.tiles.size(); ++tile) {
    out += tile ? ",[" : "[";
    bool first = true;
    for (const sim::ProfileEvent& event : profile.events.tiles[tile]) {
      if (!shows_in(event, span)) continue;
      if (!first) out += ',';
      write = write_event(write, event, std::max(event.begin, span.begin), std::min(event.end, span.end));
      first = false;
    }
    out += ']';
  }
  out += ']';
}

// The timeline's span: the one asked for, or the run's, cut short where
// its events pass the limit (measured in bins of the run, so that the span
// ends on a bin's edge).
struct TimelineChoice {
  CycleSpan span;
  bool cut = false;
};

TimelineChoice choose_timeline(const ProfileData& profile, const PageOptions& options) {
  const CycleSpan run = renderer_span(profile);
  const bool whole_run = options.begin == 0 && options.end == std::numeric_limits<std::uint64_t>::max();
  if (!whole_run) {
    const CycleSpan asked{std::max(options.begin, run.begin), std::min(options.end, run.end)};
    if (asked.begin >= asked.end)
      throw_bad_input("--cycles", "cycles {}:{} hold none of the run's {}:{}", options.begin, options.end, run.begin,
                      run.end);
    return {asked, false};
  }
  constexpr std::uint64_t kBins = 4096;
  const std::uint64_t width = std::max<std::uint64_t>(1, (run.end - run.begin + kBins - 1) / kBins);
  std::vector<std::uint64_t> bytes(kBins + 1, 0);
  std::uint64_t total = 0;
  fmt::memory_buffer text;
  for (const std::vector<sim::ProfileEvent>& events : profile.events.tiles)
    for (const sim::ProfileEvent& event : events) {
      if (!shows_in(event, run)) continue;
      text.clear();
      write_event(std::back_inserter(text), event, event.begin, event.end);
      const std::uint64_t size = text.size() + 1;  // and its comma
      bytes[std::min(kBins, (std::max(event.begin, run.begin) - run.begin) / width)] += size;
      total += size;
    }
  if (total <= options.event_limit_bytes) return {run, false};
  std::uint64_t kept = 0, bins = 0;
  while (bins < kBins && (bins == 0 || kept + bytes[bins] <= options.event_limit_bytes)) kept += bytes[bins++];
  return {{run.begin, std::min(run.end, run.begin + bins * width)}, true};
}

// The page's data. Events and per-tile figures are written directly: they
// are nearly all of it, and building them as json values would take most of
// the render time for a full chip.
std::string page_data(const ProfileData& profile, const TimelineChoice& timeline) {
  const ProfileSummary summary = summarize(profile);
  const MachineModel machine = machine_by_name(profile.target);
  const CycleSpan span = renderer_span(profile);
  // The query's figures, with each name's label and colour.
  json kernels = json::array();
  auto labelled = [](json figures, std::uint32_t label, const std::string& name) {
    figures.update({{"label", label}, {"colour", kernel_colour(name)}});
    return figures;
  };
  for (const KernelTotal& kernel : summary.kernels)
    kernels.push_back(labelled(kernel_json(kernel), kernel.label, kernel.name));
  json ops = json::array();
  for (const OpTotal& op : summary.ops) ops.push_back(labelled(op_json(op), op.label, op.name));
  // Per superstep: [begin, cycles, bytes sent, busiest out share, busiest in
  // share, its place in the schedule].
  json supersteps = json::array();
  for (const SuperstepTotal& step : summary.supersteps)
    supersteps.push_back({step.begin, step.cycles, step.exchange_bytes, step.busiest_send_share, step.busiest_receive_share,
                          place_text(profile, step)});
  const nlohmann::json query = query_json(profile, summary, kPageTransfers);
  json regions = regions_json(profile.regions);
  json head = totals_json(profile, summary);
  head.update({
      {"tiles", profile.tiles},
      {"cycles", profile.cycles},
      {"renderer", {{"begin", span.begin}, {"end", span.end}}},
      {"timeline", {{"begin", timeline.span.begin}, {"end", timeline.span.end}, {"cut", timeline.cut}}},
      {"peak_tile_bytes", profile.peak_tile_bytes},
      {"memory", {{"begin", machine.memory_begin}, {"end", machine.memory_end}, {"standard_end", machine.standard.end}}},
      {"labels", profile.events.labels},
      {"kernels", std::move(kernels)},
      {"ops", std::move(ops)},
      {"supersteps", std::move(supersteps)},
      {"traffic_matrix", traffic_matrix_json(summary.traffic)},
      {"liveness", liveness_json(liveness(profile))},
      {"heaviest_transfers", query["heaviest_transfers"]},
      {"no_op_label", sim::kNoOpLabel},
      {"regions", std::move(regions)},
      {"tile_stat_fields", kTileStatFields},
  });
  std::string out = head.dump();
  out.pop_back();  // the closing brace: the bulky members follow
  out += ",\"tile_stats\":";
  append_tile_stats(out, profile, summary);
  out += ",\"events\":";
  append_events(out, profile, timeline.span);
  out += '}';
  return out;
}

// Inside <script>, "</script" or "<!--" in a string would end or confuse
// the element: every '<' becomes the JSON escape \u003c (only strings can
// hold one).
std::string script_safe(const std::string& json_text) {
  std::string out;
  out.reserve(json_text.size());
  for (char c : json_text) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

}  // namespace

Page render_html(const ProfileData& profile, const PageOptions& options) {
  const std::string_view page = report_template();
  const std::size_t at = page.find(kProfileDataPlaceholder);
  TILEC_CHECK(at != std::string_view::npos && page.find(kProfileDataPlaceholder, at + 1) == std::string_view::npos,
              "the report template must hold its data placeholder exactly once");
  const TimelineChoice timeline = choose_timeline(profile, options);
  const std::string data = script_safe(page_data(profile, timeline));
  Page result{{}, timeline.span, timeline.cut};
  result.html.reserve(page.size() + data.size());
  result.html.append(page.substr(0, at));
  result.html.append(data);
  result.html.append(page.substr(at + kProfileDataPlaceholder.size()));
  return result;
}

std::string cut_timeline_note(const Page& page, const std::string& profile_path) {
  return fmt::format("note: the page's timeline holds cycles {}:{} only, to stay under {} MB of events; "
                     "`tilec profile render {} --cycles A:B -o PAGE` shows another span",
                     page.timeline.begin, page.timeline.end, PageOptions{}.event_limit_bytes / 1'000'000, profile_path);
}

}  // namespace tilec::profile
