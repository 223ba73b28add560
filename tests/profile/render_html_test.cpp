// The HTML report: one self-contained page whose inlined data is the
// profile's, safe whatever the names in it.
#include "profile/report_template.h"
#include "profile/summary.h"
#include "profile_test_support.h"
#include "support/error.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace tilec::profile {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The page's data, as the page's script reads it.
nlohmann::json page_data(const std::string& html) {
  const std::string open = "<script id=\"profile-data\" type=\"application/json\">";
  const std::size_t begin = html.find(open);
  EXPECT_NE(begin, std::string::npos);
  const std::size_t end = html.find("</script>", begin);
  return nlohmann::json::parse(html.substr(begin + open.size(), end - begin - open.size()));
}

TEST(RenderHtml, IsOneSelfContainedPage) {
  const std::string html = render_html(testing::mlp_profile()).html;
  EXPECT_THAT(html, ::testing::StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(html, Not(HasSubstr(std::string(kProfileDataPlaceholder))));
  // Nothing fetched: no external scripts, styles, fonts, images or URLs.
  for (const char* outside : {"<script src", "<link", "@import", "url(", "http://", "https://", "<img", "<iframe"})
    EXPECT_THAT(html, Not(HasSubstr(outside))) << outside;
  EXPECT_THAT(html, HasSubstr("window.tilecReady = true"));
  EXPECT_THAT(html, HasSubstr("<canvas id=\"timeline\">"));
  EXPECT_EQ(html, render_html(testing::mlp_profile()).html);  // deterministic
}

TEST(RenderHtml, InlinesTheProfilesData) {
  const ProfileData& profile = testing::mlp_profile();
  const nlohmann::json data = page_data(render_html(profile).html);
  EXPECT_EQ(data["name"], profile.name);
  EXPECT_EQ(data["tiles"], profile.tiles);
  EXPECT_EQ(data["cycles"], profile.cycles);
  EXPECT_EQ(data["labels"].get<std::vector<std::string>>(), profile.events.labels);
  EXPECT_EQ(data["renderer"]["end"].get<std::uint64_t>() - data["renderer"]["begin"].get<std::uint64_t>(),
            renderer_cycles(profile));
  EXPECT_EQ(data["memory"]["begin"], ipu21().memory_begin);
  EXPECT_EQ(data["memory"]["end"], ipu21().memory_end);
  ASSERT_EQ(data["events"].size(), profile.tiles);
  for (std::size_t tile = 0; tile < profile.tiles; ++tile) {
    const std::vector<sim::ProfileEvent>& events = profile.events.tiles[tile];
    const nlohmann::json& flat = data["events"][tile];
    ASSERT_EQ(flat.size(), 7 * events.size());
    for (std::size_t i = 0; i < events.size(); ++i) {
      EXPECT_EQ(flat[7 * i], static_cast<int>(events[i].kind));
      EXPECT_EQ(flat[7 * i + 1], events[i].context);
      EXPECT_EQ(flat[7 * i + 2], events[i].begin);
      EXPECT_EQ(flat[7 * i + 3], events[i].end);
      EXPECT_EQ(flat[7 * i + 4], events[i].label);
      EXPECT_EQ(flat[7 * i + 6], events[i].op);
    }
  }
  // Every op the summary has, with its colour from its name.
  const ProfileSummary ops_summary = summarize(profile);
  ASSERT_EQ(data["ops"].size(), ops_summary.ops.size());
  for (std::size_t i = 0; i < ops_summary.ops.size(); ++i) {
    EXPECT_EQ(data["ops"][i]["name"], ops_summary.ops[i].name);
    EXPECT_EQ(data["ops"][i]["worker_cycles"], ops_summary.ops[i].worker_cycles);
    EXPECT_EQ(data["ops"][i]["colour"], kernel_colour(ops_summary.ops[i].name));
  }
  const std::size_t fields = data["tile_stat_fields"].size();
  ASSERT_EQ(data["tile_stats"].size(), fields * profile.tiles);
  const ProfileSummary summary = summarize(profile);
  for (std::size_t tile = 0; tile < profile.tiles; ++tile) {
    auto field = [&](const std::string& name) {
      const auto& names = data["tile_stat_fields"];
      const std::size_t index = std::find(names.begin(), names.end(), name) - names.begin();
      EXPECT_LT(index, fields) << name;
      return data["tile_stats"][tile * fields + index].get<std::uint64_t>();
    };
    EXPECT_EQ(field("halt_cycle"), profile.tile_stats[tile].halt_cycle);
    EXPECT_EQ(field("amp_macs_fp8"), profile.tile_stats[tile].amp_macs[0]);
    EXPECT_EQ(field("compute"), summary.tiles_by_index[tile].phases.compute);
    EXPECT_EQ(field("idle"), summary.tiles_by_index[tile].phases.idle);
  }
  ASSERT_EQ(data["kernels"].size(), summary.kernels.size());
  for (std::size_t i = 0; i < summary.kernels.size(); ++i) {
    EXPECT_EQ(data["kernels"][i]["name"], summary.kernels[i].name);
    EXPECT_EQ(data["kernels"][i]["worker_cycles"], summary.kernels[i].worker_cycles);
    EXPECT_EQ(data["kernels"][i]["colour"], kernel_colour(summary.kernels[i].name));
  }
  ASSERT_EQ(data["regions"].size(), profile.regions.size());
  EXPECT_EQ(data["regions"][0]["name"], profile.regions[0].name);
}

// The hue of '#rrggbb', in degrees.
double hue_of(const std::string& colour) {
  const double r = std::stoi(colour.substr(1, 2), nullptr, 16) / 255.0, g = std::stoi(colour.substr(3, 2), nullptr, 16) / 255.0,
               b = std::stoi(colour.substr(5, 2), nullptr, 16) / 255.0;
  const double high = std::max({r, g, b}), low = std::min({r, g, b}), range = high - low;
  const double hue = high == r ? std::fmod((g - b) / range, 6.0) : high == g ? (b - r) / range + 2 : (r - g) / range + 4;
  return std::fmod(60 * hue + 360, 360);
}

// A kernel's colour depends on its name alone (so pages of different runs
// agree), names spread over the hues, and none is exchange's amber.
TEST(RenderHtml, KernelColoursComeFromTheirNames) {
  ProfileData profile = testing::mlp_profile();
  const nlohmann::json before = page_data(render_html(profile).html);
  // Another run: the busiest kernel's name and the quietest's swapped, so
  // each name changes rank.
  ASSERT_GE(before["kernels"].size(), 2u);
  std::swap(profile.events.labels[before["kernels"].front()["label"].get<std::size_t>()],
            profile.events.labels[before["kernels"].back()["label"].get<std::size_t>()]);
  const nlohmann::json after = page_data(render_html(profile).html);
  ASSERT_EQ(after["kernels"].front()["name"], before["kernels"].back()["name"]);
  std::map<std::string, std::string> colours;
  for (const nlohmann::json& kernel : before["kernels"]) colours[kernel["name"]] = kernel["colour"];
  for (const nlohmann::json& kernel : after["kernels"]) EXPECT_EQ(colours.at(kernel["name"]), kernel["colour"]);
  std::set<std::string> distinct;
  for (int i = 0; i < 200; ++i) {
    const std::string colour = kernel_colour(fmt::format("combine_{}", i));
    ASSERT_THAT(colour, ::testing::MatchesRegex("#[0-9a-f]{6}"));
    const double hue = hue_of(colour);
    EXPECT_TRUE(hue < 18 || hue > 58) << colour << " hue " << hue;
    distinct.insert(colour);
  }
  EXPECT_GT(distinct.size(), 150u);
}

// Bytes of the page's event data, the part the limit is on.
std::size_t event_bytes(const std::string& html) {
  const std::size_t at = html.find("\"events\":");
  return html.find("</script>", at) - at;
}

std::uint64_t events_in(const nlohmann::json& data, std::uint64_t from, std::uint64_t to) {
  std::uint64_t n = 0;
  for (const nlohmann::json& tile : data["events"])
    for (std::size_t i = 0; i < tile.size(); i += 7) {
      const std::uint64_t begin = tile[i + 2], end = tile[i + 3];
      EXPECT_GE(begin, from);
      EXPECT_LE(end, to);
      ++n;
    }
  return n;
}

TEST(RenderHtml, ATimelinePastTheLimitIsCutShortAndTheTablesStayWhole) {
  const ProfileData& profile = testing::mlp_profile();
  const Page whole = render_html(profile);
  EXPECT_FALSE(whole.cut);
  const CycleSpan run = renderer_span(profile);
  EXPECT_EQ(whole.timeline.begin, run.begin);
  EXPECT_EQ(whole.timeline.end, run.end);

  PageOptions options;
  options.event_limit_bytes = event_bytes(whole.html) / 3;
  const Page cut = render_html(profile, options);
  ASSERT_TRUE(cut.cut);
  EXPECT_EQ(cut.timeline.begin, run.begin);
  EXPECT_LT(cut.timeline.end, run.end);
  EXPECT_GT(cut.timeline.end, run.begin);
  EXPECT_LE(event_bytes(cut.html), options.event_limit_bytes * 11 / 10);
  const nlohmann::json data = page_data(cut.html);
  EXPECT_TRUE(data["timeline"]["cut"].get<bool>());
  EXPECT_EQ(data["timeline"]["end"], cut.timeline.end);
  EXPECT_GT(events_in(data, cut.timeline.begin, cut.timeline.end), 0u);
  // The tables are the whole run's.
  const nlohmann::json full = page_data(whole.html);
  for (const char* table : {"worker_cycles", "ops", "kernels", "supersteps", "liveness"})
    EXPECT_EQ(data[table], full[table]) << table;
  EXPECT_THAT(cut_timeline_note(cut, "p.tprof"), HasSubstr(fmt::format("holds cycles {}:{} only", run.begin, cut.timeline.end)));
}

TEST(RenderHtml, ACycleRangeChoosesTheTimeline) {
  const ProfileData& profile = testing::mlp_profile();
  const CycleSpan run = renderer_span(profile);
  PageOptions options;
  options.begin = run.begin + (run.end - run.begin) / 4;
  options.end = run.begin + (run.end - run.begin) / 2;
  const Page page = render_html(profile, options);
  EXPECT_FALSE(page.cut);
  EXPECT_EQ(page.timeline.begin, options.begin);
  EXPECT_EQ(page.timeline.end, options.end);
  const nlohmann::json data = page_data(page.html);
  const std::uint64_t shown = events_in(data, options.begin, options.end);
  EXPECT_GT(shown, 0u);
  EXPECT_LT(shown, events_in(page_data(render_html(profile).html), 0, run.end));
  options.begin = run.end + 1;
  options.end = run.end + 10;
  EXPECT_THROW(render_html(profile, options), Error);
}

TEST(RenderHtml, NamesCannotBreakOutOfTheScript) {
  ProfileData profile = testing::mlp_profile();
  profile.name = "</script><script>window.tilecErrors.push('injected')</script><!--";
  profile.events.labels[4] = "<b>kernel</b>";
  const std::string html = render_html(profile).html;
  const std::string page(report_template());
  EXPECT_EQ(testing::occurrences(html, "</script>"), testing::occurrences(page, "</script>"));
  EXPECT_EQ(testing::occurrences(html, "<!--"), testing::occurrences(page, "<!--"));
  const nlohmann::json data = page_data(html);
  EXPECT_EQ(data["name"], profile.name);
  EXPECT_EQ(data["labels"][4], "<b>kernel</b>");
}

TEST(RenderHtml, RefusesAnInvalidProfile) {
  ProfileData profile = testing::mlp_profile();
  profile.events.tiles[0].front().label = 9999;
  try {
    render_html(profile);
    ADD_FAILURE();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput);
    EXPECT_THAT(std::string(error.what()), HasSubstr("label 9999 is out of range"));
  }
}

}  // namespace
}  // namespace tilec::profile
