// `tilec profile query|render|export|compare`: read a profile file (.tprof,
// docs/profile-format.md) and summarise it, render it as one HTML page,
// export it as a Chrome trace, or compare it with another.
#include "cli/commands.h"
#include "cli/usage_errors.h"
#include "profile/compare.h"
#include "profile/profile.h"
#include "profile/query_report.h"
#include "profile/summary.h"
#include "support/error.h"
#include "support/output_path.h"
#include "support/span.h"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

namespace tilec::cli {

namespace {

struct ProfileCommandOptions {
  std::string profile;
  std::string other;  // compare: B
  std::string output;
  bool json = false;
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
  const profile::ProfileSummary summary = profile::summarize(data);
  if (options.json)
    fmt::print("{}\n", profile::query_json(data, summary, options.top).dump(2));
  else
    fmt::print("{}", profile::query_text(data, summary, options.top));
}

void render(const ProfileCommandOptions& options) {
  check_output_file("-o", options.output);
  profile::ProfileData data;
  {
    Span span("read_profile");
    data = profile::read_profile(options.profile);
  }
  std::string html;
  {
    Span span("render_html");
    html = profile::render_html(data);
  }
  write_text(options.output, html);
}

void export_trace(const ProfileCommandOptions& options) {
  check_output_file("--chrome", options.output);
  write_text(options.output, profile::chrome_trace(profile::read_profile(options.profile)));
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
  query_command->add_option("--top", options->top, "How many of the busiest tiles and longest supersteps to list")
      ->check(integer_in(0));
  query_command->callback([options] { query(*options); });

  CLI::App* render_command = add_profile_subcommand(
      *group, "render", "Write one self-contained HTML page: timeline, kernels, memory map", options);
  render_command->add_option("-o,--output", options->output, "HTML file to write")->required();
  render_command->callback([options] { render(*options); });

  CLI::App* export_command =
      add_profile_subcommand(*group, "export", "Export as Chrome trace-event JSON (chrome://tracing, Perfetto)", options);
  export_command->add_option("--chrome", options->output, "Trace file to write")->required();
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
