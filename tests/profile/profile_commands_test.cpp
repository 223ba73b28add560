// `tilec profile query|render|export|compare` as a user runs them: outputs, exit
// codes and one-line errors.
#include "profile_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

namespace tilec::profile {
namespace {

using testing::run_tilec;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Named after the running test: ctest runs tests as parallel processes.
std::string temp_path(const std::string& name) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "/tilec_profile_cli_" + test->test_suite_name() + "_" + test->name() + "_" + name;
}

const std::string& profile_file() {
  static const std::string path = [] {
    const std::string file = temp_path("mlp.tprof");
    write_profile(file, testing::mlp_profile());
    return file;
  }();
  return path;
}

void expect_one_line_error(const testing::CommandResult& result, int exit_code, const std::string& expected) {
  EXPECT_EQ(result.exit_code, exit_code) << result.err;
  EXPECT_THAT(result.err, StartsWith("tilec: error: "));
  EXPECT_THAT(result.err, HasSubstr(expected));
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_EQ(result.out, "");
}

TEST(ProfileCommands, QueryPrintsTotals) {
  const testing::CommandResult result = run_tilec("profile query " + profile_file() + " --top 2", "query");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, StartsWith("profile mlp-16: ipu21:16, 16 tiles"));
  EXPECT_THAT(result.out, HasSubstr("AMP utilisation"));
  EXPECT_THAT(result.out, HasSubstr("roofline fraction"));
  EXPECT_THAT(result.out, ::testing::ContainsRegex("\nphase +tile-cycles +share\ncompute "));
  EXPECT_THAT(result.out, ::testing::ContainsRegex("\nkernel +calls +worker-cycles +share\n"));
  EXPECT_THAT(result.out, HasSubstr("busiest tiles (2 of 16, by busy worker-cycles)"));
  for (const std::string& label : testing::mlp_profile().events.labels) {
    if (label.rfind("gemm", 0) == 0) { EXPECT_THAT(result.out, HasSubstr(label)); }
  }
}

TEST(ProfileCommands, QueryJsonIsOneObject) {
  const testing::CommandResult result = run_tilec("profile query " + profile_file() + " --json --top 3", "query_json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out);
  EXPECT_EQ(report["cycles"], testing::mlp_profile().cycles);
  EXPECT_EQ(report["busiest_tiles"].size(), 3u);
  EXPECT_EQ(report["tiles_by_index"].size(), 16u);
  EXPECT_FALSE(report["kernels"].empty());
}

TEST(ProfileCommands, RenderWritesTheReport) {
  const std::string html = temp_path("report.html");
  std::remove(html.c_str());
  const testing::CommandResult result = run_tilec("profile render " + profile_file() + " -o " + html, "render");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(testing::read_text(html), render_html(testing::mlp_profile()).html);
}

TEST(ProfileCommands, ExportWritesAChromeTrace) {
  const std::string trace = temp_path("trace.json");
  std::remove(trace.c_str());
  const testing::CommandResult result = run_tilec("profile export " + profile_file() + " --chrome " + trace, "export");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json parsed = nlohmann::json::parse(testing::read_text(trace));
  EXPECT_FALSE(parsed["traceEvents"].empty());
}

TEST(ProfileCommands, MissingOrBadFilesAreBadInput) {
  const std::string missing = temp_path("missing.tprof");
  expect_one_line_error(run_tilec("profile query " + missing, "missing"), 2, missing + ": cannot open");
  const std::string junk = temp_path("junk.tprof");
  testing::write_text(junk, "not a profile at all, but long enough for a header\n");
  expect_one_line_error(run_tilec("profile render " + junk + " -o " + temp_path("x.html"), "junk"), 2,
                        junk + ": not a tilec profile (bad magic)");
  expect_one_line_error(run_tilec("profile export " + junk + " --chrome " + temp_path("x.json"), "junk_export"), 2,
                        "bad magic");
}

// Bad input, as for every command that writes a file, checked before the
// profile is read.
TEST(ProfileCommands, UnwritableOutputIsBadInput) {
  const std::string output = temp_path("no/such/dir/report.html");
  expect_one_line_error(run_tilec("profile render " + profile_file() + " -o " + output, "unwritable"), 2,
                        "-o " + output + ": there is no folder '");
}

TEST(ProfileCommands, UsageErrorsExitTwo) {
  EXPECT_EQ(run_tilec("profile render " + profile_file(), "no_output").exit_code, 2);
  EXPECT_EQ(run_tilec("profile export " + profile_file(), "no_chrome").exit_code, 2);
  EXPECT_EQ(run_tilec("profile query " + profile_file() + " --top -1", "negative_top").exit_code, 2);
  EXPECT_EQ(run_tilec("profile", "no_subcommand").exit_code, 2);
  EXPECT_EQ(run_tilec("profile compare " + profile_file(), "compare_one").exit_code, 2);
}

TEST(ProfileCommands, ExportFiltersAndTheirErrors) {
  const std::string trace = temp_path("cut.json");
  const testing::CommandResult cut =
      run_tilec("profile export " + profile_file() + " --chrome " + trace + " --tiles 0-1,5 --cycles 100:", "cut");
  ASSERT_EQ(cut.exit_code, 0) << cut.err;
  std::set<int> pids;
  const nlohmann::json parsed = nlohmann::json::parse(testing::read_text(trace));
  for (const nlohmann::json& event : parsed["traceEvents"])
    pids.insert(event["pid"].get<int>());
  EXPECT_EQ(pids, (std::set<int>{1, 2, 6}));
  const testing::CommandResult columns =
      run_tilec("profile export " + profile_file() + " --chrome " + trace + " --aggregate columns", "columns");
  ASSERT_EQ(columns.exit_code, 0) << columns.err;
  EXPECT_THAT(testing::read_text(trace), HasSubstr("\"ph\":\"C\""));
  const std::string out = " --chrome " + temp_path("bad.json");
  const std::pair<const char*, const char*> bad[] = {
      {"--tiles 3-x", "--tiles: '3-x' is not a list of tiles and ranges such as 0-63,100"},
      {"--tiles 9-2", "--tiles: range 9-2 runs backwards"},
      {"--tiles 16", "--tiles: tile 16 does not exist (the profile has tiles 0-15)"},
      {"--cycles 40", "--cycles: '40' is not a cycle range A:B"},
      {"--cycles 50:40", "--cycles: 50:40 ends before it begins"},
      {"--cycles 99999999:", "--cycles: cycles from 99999999 hold none of the run's"}};
  for (std::size_t i = 0; i < std::size(bad); ++i)
    expect_one_line_error(run_tilec("profile export " + profile_file() + out + " " + bad[i].first, fmt::format("bad_{}", i)),
                          2, bad[i].second);
  EXPECT_EQ(run_tilec("profile export " + profile_file() + out + " --aggregate rows", "aggregate").exit_code, 2);
  const testing::CommandResult groups =
      run_tilec("profile export " + profile_file() + " --chrome " + trace + " --aggregate groups", "groups");
  ASSERT_EQ(groups.exit_code, 0) << groups.err;
  EXPECT_THAT(testing::read_text(trace), HasSubstr("\"name\":\"group 0 (tiles 0-"));
}

TEST(ProfileCommands, RenderTakesACycleRange) {
  const std::string html = temp_path("span.html");
  const testing::CommandResult result =
      run_tilec("profile render " + profile_file() + " -o " + html + " --cycles 100:900", "span");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");  // a chosen span is not a cut one
  PageOptions options;
  options.begin = 100;
  options.end = 900;
  EXPECT_EQ(testing::read_text(html), render_html(testing::mlp_profile(), options).html);
  expect_one_line_error(run_tilec("profile render " + profile_file() + " -o " + html + " --cycles 9:x", "bad_span"), 2,
                        "--cycles: '9:x' is not a cycle range A:B");
  expect_one_line_error(
      run_tilec("profile render " + profile_file() + " -o " + html + " --cycles 99999999:", "empty_span"), 2,
      "--cycles: cycles 99999999:18446744073709551615 hold none of the run's");
}

TEST(ProfileCommands, CompareOfARunWithItselfChangesNothing) {
  const std::string html = temp_path("same.html");
  const testing::CommandResult result =
      run_tilec("profile compare " + profile_file() + " " + profile_file() + " --json -o " + html, "compare_same");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out);
  for (const char* section : {"totals", "phases", "ops", "kernels"}) {
    ASSERT_FALSE(report[section].empty()) << section;
    for (const nlohmann::json& row : report[section]) {
      EXPECT_EQ(row["delta"], 0.0) << section << " " << row["name"];
      if (row["a"] != 0.0) {
        EXPECT_EQ(row["ratio"], 1.0) << section << " " << row["name"];
      }
    }
  }
  EXPECT_THAT(testing::read_text(html), HasSubstr("<table id=\"ops\">"));
}

TEST(ProfileCommands, CompareNamesBothBadFiles) {
  const std::string missing = temp_path("missing.tprof");
  expect_one_line_error(run_tilec("profile compare " + profile_file() + " " + missing, "compare_missing"), 2,
                        missing + ": cannot open");
  expect_one_line_error(
      run_tilec("profile compare " + profile_file() + " " + profile_file() + " -o " + temp_path("no/dir/d.html"),
                "compare_unwritable"),
      2, "there is no folder");
}

}  // namespace
}  // namespace tilec::profile
