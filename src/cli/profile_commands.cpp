// `tilec profile query|render|export|compare`: read a profile file (.tprof,
// docs/profile-format.md) and summarise it, render it as one HTML page,
// export it as a Chrome trace, or compare it with another.
#include "cli/commands.h"
#include "cli/usage_errors.h"
#include "profile/compare.h"
#include "profile/liveness.h"
#include "profile/profile.h"
#include "profile/query_report.h"
#include "profile/summary.h"
#include "support/error.h"
#include "support/output_path.h"
#include "support/span.h"

#include <fmt/core.h>

#include <cerrno>
#include <charconv>
#include <limits>
#include <cstring>
#include <fstream>
#include <memory>
#include <tuple>

namespace tilec::cli {

namespace {

struct ProfileCommandOptions {
  std::string profile;
  std::string other;  // compare: B
  std::string tiles, cycles, aggregate;  // export; cycles also render
  std::string output;
  bool json = false;
  bool memory = false;  // query: memory over time instead
  std::size_t top = 10;
};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (out) out.close();
  if (!out) throw_bad_input(path, "cannot write: {}", std::strerror(errno));
}

void query(const ProfileCommandOptions& options) {
  const profile::ProfileData data = profile::read_profile(options.profile);
  if (options.memory) {
    const profile::Liveness memory = profile::liveness(data);
    if (options.json)
      fmt::print("{}\n", profile::liveness_json(memory).dump(2));
    else
      fmt::print("{}", profile::liveness_text(memory, options.top));
    return;
  }
  const profile::ProfileSummary summary = profile::summarize(data);
  if (options.json)
    fmt::print("{}\n", profile::query_json(data, summary, options.top).dump(2));
  else
    fmt::print("{}", profile::query_text(data, summary, options.top));
}

std::uint64_t parse_count(const std::string& text, const char* flag, const std::string& whole, const char* form) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw_bad_input(flag, "'{}' is not {}", whole, form);
  return value;
}

// "0-63,100" -> 0..63 and 100.
std::vector<std::uint32_t> parse_tile_list(const std::string& text) {
  constexpr const char* kForm = "a list of tiles and ranges such as 0-63,100";
  std::vector<std::uint32_t> tiles;
  std::size_t from = 0;
  while (from <= text.size()) {
    const std::size_t comma = std::min(text.find(',', from), text.size());
    const std::string item = text.substr(from, comma - from);
    const std::size_t dash = item.find('-');
    const std::uint64_t first = parse_count(item.substr(0, dash), "--tiles", text, kForm);
    const std::uint64_t last = dash == std::string::npos ? first : parse_count(item.substr(dash + 1), "--tiles", text, kForm);
    if (last < first) throw_bad_input("--tiles", "range {} runs backwards", item);
    if (last >= std::numeric_limits<std::uint32_t>::max() || last - first > (1u << 20))
      throw_bad_input("--tiles", "range {} is larger than any chip", item);
    for (std::uint64_t tile = first; tile <= last; ++tile) tiles.push_back(static_cast<std::uint32_t>(tile));
    from = comma + 1;
  }
  return tiles;
}

// "A:B", "A:" or ":B" -> [A, B), either end open.
std::pair<std::uint64_t, std::uint64_t> parse_cycle_range(const std::string& text) {
  constexpr const char* kForm = "a cycle range A:B (either end may be left out)";
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos) throw_bad_input("--cycles", "'{}' is not {}", text, kForm);
  const std::string begin = text.substr(0, colon), end = text.substr(colon + 1);
  std::pair<std::uint64_t, std::uint64_t> range{0, std::numeric_limits<std::uint64_t>::max()};
  if (!begin.empty()) range.first = parse_count(begin, "--cycles", text, kForm);
  if (!end.empty()) range.second = parse_count(end, "--cycles", text, kForm);
  if (range.second <= range.first) throw_bad_input("--cycles", "{} ends before it begins", text);
  return range;
}

void render(const ProfileCommandOptions& options) {
  check_output_file("-o", options.output);
  profile::PageOptions page_options;
  if (!options.cycles.empty()) std::tie(page_options.begin, page_options.end) = parse_cycle_range(options.cycles);
  profile::ProfileData data;
  {
    Span span("read_profile");
    data = profile::read_profile(options.profile);
  }
  profile::Page page;
  {
    Span span("render_html");
    page = profile::render_html(data, page_options);
  }
  write_text(options.output, page.html);
  if (page.cut) fmt::print(stderr, "{}\n", profile::cut_timeline_note(page, options.profile));
}

void export_trace(const ProfileCommandOptions& options) {
  check_output_file("--chrome", options.output);
  profile::ChromeTraceOptions trace;
  if (!options.tiles.empty()) trace.tiles = parse_tile_list(options.tiles);
  if (!options.cycles.empty()) std::tie(trace.begin, trace.end) = parse_cycle_range(options.cycles);
  using Tracks = profile::ChromeTraceOptions::Tracks;
  if (options.aggregate == "columns") trace.tracks = Tracks::Columns;
  else if (options.aggregate == "groups") trace.tracks = Tracks::Groups;
  else if (options.aggregate == "tiles") trace.tracks = Tracks::Tiles;
  const profile::ChromeTrace result = profile::chrome_trace(profile::read_profile(options.profile), trace);
  write_text(options.output, result.json);
  if (result.tracks == Tracks::Columns && options.aggregate.empty())
    fmt::print(stderr,
               "note: one track per tile is over {} MB here, so the trace has one per tile column; "
               "--tiles or --cycles cut it down, --aggregate tiles keeps every tile\n",
               trace.auto_limit_bytes / 1'000'000);
}

void compare(const ProfileCommandOptions& options) {
  if (!options.output.empty()) check_output_file("-o", options.output);
  const profile::Comparison comparison =
      profile::compare_profiles(profile::read_profile(options.profile), profile::read_profile(options.other));
  if (!options.output.empty()) write_text(options.output, profile::comparison_html(comparison));
  if (options.json)
    fmt::print("{}\n", profile::comparison_json(comparison).dump(2));
  else
    fmt::print("{}", profile::comparison_text(comparison));
}

CLI::App* add_profile_subcommand(CLI::App& group, const char* name, const char* description,
                                 std::shared_ptr<ProfileCommandOptions>& options) {
  options = std::make_shared<ProfileCommandOptions>();
  CLI::App* command = group.add_subcommand(name, description);
  command->add_option("PROFILE", options->profile, "Profile file (.tprof)")->required();
  return command;
}

}  // namespace

void add_profile_commands(CLI::App& app) {
  CLI::App* group = app.add_subcommand("profile", "Summarise, render, export or compare simulated runs' profiles");
  group->require_subcommand(1);
  std::shared_ptr<ProfileCommandOptions> options;

  CLI::App* query_command =
      add_profile_subcommand(*group, "query", "Totals by kernel, graph op, phase, superstep and tile; utilisation and roofline", options);
  query_command->add_flag("--json", options->json, "Print one JSON object");
  query_command->add_flag("--memory", options->memory,
                          "Memory over time instead: live bytes per superstep, what is live at the peak, and the "
                          "peak the simulator observed");
  query_command->add_option("--top", options->top, "How many of the busiest tiles and longest supersteps to list")
      ->check(integer_in(0));
  query_command->callback([options] { query(*options); });

  CLI::App* render_command = add_profile_subcommand(
      *group, "render", "Write one self-contained HTML page: timeline, kernels, memory map", options);
  render_command->add_option("-o,--output", options->output, "HTML file to write")->required();
  render_command->add_option("--cycles", options->cycles,
                             "The timeline's cycles A:B (default: the run, cut short past 50 MB of events)");
  render_command->callback([options] { render(*options); });

  CLI::App* export_command =
      add_profile_subcommand(*group, "export", "Export as Chrome trace-event JSON (chrome://tracing, Perfetto)", options);
  export_command->add_option("--chrome", options->output, "Trace file to write")->required();
  export_command->add_option("--tiles", options->tiles, "Only these tiles: 0-63,100");
  export_command->add_option("--cycles", options->cycles, "Only cycles A:B (events clipped to them)");
  export_command->add_option("--aggregate", options->aggregate,
                             "tiles: a track per tile; columns or groups: counters per tile column or plan group "
                             "(default: tiles unless over 50 MB, then columns)")
      ->check(CLI::IsMember({"tiles", "columns", "groups"}));
  export_command->callback([options] { export_trace(*options); });

  CLI::App* compare_command = add_profile_subcommand(
      *group, "compare", "Two runs side by side: cycles by total, phase, graph op and kernel, largest movers first",
      options);
  compare_command->add_option("OTHER", options->other, "The profile to compare with (B; PROFILE is A)")->required();
  compare_command->add_option("-o,--output", options->output, "Also write the comparison as an HTML page");
  compare_command->add_flag("--json", options->json, "Print one JSON object");
  compare_command->callback([options] { compare(*options); });
}

}  // namespace tilec::cli
