// report.html: the sweep's figures as inline SVG charts that a browser
// draws, with the reference dashed beside them and the machines compared.
#include "bench/report_html.h"

#include "../profile/profile_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace tilec::bench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

CaseReport point(const std::string& name, std::int64_t batch, std::uint32_t budget_kib, std::uint64_t cycles,
                 double exchange) {
  CaseReport report;
  report.name = name;
  report.precision = "fp8";
  report.batch = batch;
  report.budget_kib = budget_kib;
  report.status = "pass";
  report.cycles = cycles;
  report.efficiency = 1000.0 / static_cast<double>(cycles);
  report.compute_cycles = static_cast<double>(cycles) / 2;
  report.exchange_cycles = exchange;
  report.sync_cycles = static_cast<double>(cycles) / 4;
  return report;
}

std::vector<CaseReport> varied_sweep() {
  return {point("fp8-b1-n1-default@exchange-bytes=4", 1, 0, 5000, 800),
          point("fp8-b1-n1-default@exchange-bytes=8", 1, 0, 4600, 400),
          point("fp8-b1-n1-64k@exchange-bytes=4", 1, 64, 9000, 2000),
          point("fp8-b1-n1-64k@exchange-bytes=8", 1, 64, 8000, 1000)};
}

TEST(ReportHtml, ChartsEveryFigureWithoutScriptOrNetwork) {
  const std::string page = report_html(varied_sweep(), "sweep <b>");
  EXPECT_THAT(page, ::testing::StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(page, HasSubstr("<h1>sweep &lt;b&gt;</h1>"));
  for (const char* outside : {"<script", "http://", "https://", "<link", "url("}) EXPECT_THAT(page, Not(HasSubstr(outside)));
  // Cycles and efficiency against the budget, the phases, and two against the varied field.
  EXPECT_EQ(profile::testing::occurrences(page, "<svg"), 5u);
  EXPECT_THAT(page, HasSubstr("Cycles against exchange-bytes"));
  EXPECT_THAT(page, HasSubstr(">fp8 b1 @exchange-bytes=8</text>"));
  EXPECT_THAT(page, HasSubstr("<title>fp8-b1-n1-64k@exchange-bytes=8 exchange: 1,000 cycles</title>"));
  EXPECT_THAT(page, HasSubstr("<title>fp8-b1-n1-default, 8: 400</title>"));  // exchange against the field
  EXPECT_THAT(page, Not(HasSubstr("stroke-dasharray")));
  // One machine: no machine charts.
  EXPECT_EQ(profile::testing::occurrences(report_html({point("fp8-b1-n1-default", 1, 0, 5000, 800)}, "one"), "<svg"), 3u);
}

TEST(ReportHtml, TheReferenceIsDashedOnTheSameAxes) {
  std::vector<CaseReport> ours = {point("fp8-b1-n1-default", 1, 0, 5000, 800), point("fp8-b1-n1-64k", 1, 64, 9000, 2000)};
  CaseReport theirs = point("fp8-b1-n1-default", 1, 0, 20000, 0);
  theirs.precision = "";
  const std::string page = report_html(ours, "against", {theirs});
  EXPECT_THAT(page, HasSubstr("stroke-dasharray"));
  EXPECT_THAT(page, HasSubstr(">fp8 b1 (reference)</text>"));
  EXPECT_THAT(page, HasSubstr("<title>fp8 b1 (reference), default: 20,000</title>"));
}

// Headless Chromium draws the page: a screenshot far from blank.
TEST(ReportHtml, ABrowserDrawsIt) {
  if (!std::filesystem::exists(profile::testing::kChromium)) GTEST_SKIP() << "chromium is not installed";
  const std::filesystem::path directory = std::filesystem::path(TILEC_BINARY).parent_path() / "bench-browser-test";
  std::filesystem::create_directories(directory);
  const std::string page = (directory / "report.html").string(), png = (directory / "report.png").string();
  profile::testing::write_text(page, report_html(varied_sweep(), "a varied sweep"));
  const profile::testing::CommandResult dom =
      profile::testing::chromium("--virtual-time-budget=2000 --dump-dom 'file://" + page + "'", "dom");
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_EQ(profile::testing::occurrences(dom.out, "<svg"), 5u);
  std::filesystem::remove(png);
  const profile::testing::CommandResult shot = profile::testing::chromium(
      "--window-size=900,1600 --hide-scrollbars --virtual-time-budget=2000 --screenshot='" + png + "' 'file://" + page + "'",
      "shot");
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  EXPECT_GT(std::filesystem::file_size(png), 30'000u);
}

}  // namespace
}  // namespace tilec::bench
