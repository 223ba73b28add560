// The HTML report in a real browser: headless Chromium loads a rendered
// 16-tile run, the page reports itself ready with no script errors and a
// painted timeline, and a screenshot is kept in the build directory
// (profile-browser-test/mlp-report.png, beside the pages) for people to
// look at.
#include "profile_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>

namespace tilec::profile {
namespace {

using ::testing::HasSubstr;

using testing::chromium;
using testing::kChromium;

std::filesystem::path output_directory() {
  const std::filesystem::path directory = std::filesystem::path(TILEC_BINARY).parent_path() / "profile-browser-test";
  std::filesystem::create_directories(directory);
  return directory;
}

// The attributes of the page's #tilec-status element, from a DOM dump.
std::string status_element(const std::string& dom) {
  const std::size_t at = dom.find("<div id=\"tilec-status\"");
  if (at == std::string::npos) return "";
  return dom.substr(at, dom.find('>', at) - at + 1);
}

long attribute_number(const std::string& element, const std::string& name) {
  std::smatch match;
  if (!std::regex_search(element, match, std::regex(name + "=\"([0-9]+)\""))) return -1;
  return std::stol(match[1]);
}

class Browser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kChromium)) GTEST_SKIP() << kChromium << " is not installed (scripts/bootstrap)";
    // One page per test: ctest runs tests in parallel.
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    report_ = (output_directory() / ("mlp-report-" + test + ".html")).string();
    testing::write_text(report_, render_html(testing::mlp_profile()).html);
  }
  std::string report_;
};

TEST_F(Browser, PageLoadsWithoutErrorsAndDrawsTheTimeline) {
  const testing::CommandResult result =
      chromium("--window-size=1400,1000 --virtual-time-budget=3000 --dump-dom 'file://" + report_ + "'", "dump_dom");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string status = status_element(result.out);
  ASSERT_FALSE(status.empty()) << result.out.substr(0, 2000);
  EXPECT_THAT(status, HasSubstr("data-ready=\"true\""));
  EXPECT_THAT(status, HasSubstr("data-errors=\"0\""));
  // 16 rows of kernels, sends and syncs: thousands of sampled pixels.
  EXPECT_GT(attribute_number(status, "data-timeline-painted"), 1000) << status;
  // The tables were filled from the data.
  EXPECT_THAT(result.out, HasSubstr("<td class=\"name\"><span class=\"swatch\""));
  EXPECT_THAT(result.out, HasSubstr("kernel library"));
  // The graph ops, and the exchange views: bars per superstep, the traffic
  // matrix (one cell per tile of the 16) and the heaviest transfers.
  EXPECT_THAT(result.out, HasSubstr("<th class=\"name\">graph op</th>"));
  EXPECT_THAT(result.out, HasSubstr("gemm1"));
  EXPECT_THAT(result.out, ::testing::ContainsRegex("<div id=\"superstep-chart\"><svg [^>]*><rect [^>]*><title>superstep 0 "));
  const std::size_t matrix = result.out.find("<table id=\"traffic-matrix\"");
  ASSERT_NE(matrix, std::string::npos);
  const std::string cells = result.out.substr(matrix, result.out.find("</table>", matrix) - matrix);
  std::size_t count = 0;
  for (std::size_t at = cells.find("<td "); at != std::string::npos; at = cells.find("<td ", at + 1)) ++count;
  EXPECT_EQ(count, 16u * 16u);
  EXPECT_THAT(result.out, HasSubstr("heaviest transfers: from"));
  // The liveness chart: a bar per superstep of the chunk body.
  EXPECT_THAT(result.out, ::testing::ContainsRegex("<div id=\"liveness-chart\"><svg [^>]*><rect [^>]*><title>superstep 0: "));
}

TEST_F(Browser, ScreenshotIsAPictureOfThePage) {
  const std::string png = (output_directory() / "mlp-report.png").string();
  std::filesystem::remove(png);
  const testing::CommandResult result = chromium(
      "--window-size=1400,2300 --hide-scrollbars --virtual-time-budget=3000 --screenshot='" + png + "' 'file://" +
          report_ + "'",
      "screenshot");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string bytes = testing::read_text(png);
  ASSERT_GT(bytes.size(), 24u);
  EXPECT_EQ(bytes.substr(0, 8), "\x89PNG\r\n\x1a\n");
  auto big_endian = [&](std::size_t at) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at])) << 24 |
           static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + 1])) << 16 |
           static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + 2])) << 8 |
           static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + 3]));
  };
  EXPECT_EQ(big_endian(16), 1400u);  // IHDR width
  EXPECT_EQ(big_endian(20), 2300u);  // IHDR height: the whole page, exchange views included
  // A blank page compresses to a few kilobytes; the report is far richer.
  EXPECT_GT(bytes.size(), 40'000u);
}

// A faulting run's profile: the page says where it faulted and draws the
// mark, with no script error; a screenshot is kept beside the pages.
TEST_F(Browser, FaultIsMarked) {
  ProfileData profile = testing::mlp_profile();
  profile.fault = FaultMark{3, 2, 0x4e018, profile.cycles / 2, "ld128 $a0:3, $m2, 0",
                            "tile 3, worker 2, pc 0x4e018 (ld128 $a0:3, $m2, 0): misaligned 128-bit load from 0x80004"};
  const std::string page = (output_directory() / "fault-report.html").string();
  testing::write_text(page, render_html(profile).html);
  const testing::CommandResult result =
      chromium("--window-size=1400,1000 --virtual-time-budget=3000 --dump-dom 'file://" + page + "'", "fault_dom");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string status = status_element(result.out);
  EXPECT_THAT(status, HasSubstr("data-ready=\"true\""));
  EXPECT_THAT(status, HasSubstr("data-errors=\"0\""));
  EXPECT_THAT(result.out, ::testing::ContainsRegex("<div id=\"fault\"><b>The run faulted</b> in cycle [0-9,]+ on tile 3, worker 2, at 0x4e018"));
  const std::string png = (output_directory() / "fault-report.png").string();
  std::filesystem::remove(png);
  const testing::CommandResult shot = chromium(
      "--window-size=1400,700 --hide-scrollbars --virtual-time-budget=3000 --screenshot='" + png + "' 'file://" + page + "'",
      "fault_screenshot");
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  EXPECT_GT(std::filesystem::file_size(png), 20'000u);
}

// A page cut short by its event limit draws the part it holds and says so.
TEST_F(Browser, CutTimelineSaysWhatItHolds) {
  const std::string whole = render_html(testing::mlp_profile()).html;
  PageOptions options;
  const std::size_t events = whole.find("\"events\":");
  options.event_limit_bytes = (whole.find("</script>", events) - events) / 3;  // about a third of them
  const Page cut = render_html(testing::mlp_profile(), options);
  ASSERT_TRUE(cut.cut);
  const std::string page = (output_directory() / "cut-report.html").string();
  testing::write_text(page, cut.html);
  const testing::CommandResult result =
      chromium("--window-size=1400,1000 --virtual-time-budget=3000 --dump-dom 'file://" + page + "'", "cut_dom");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string status = status_element(result.out);
  EXPECT_THAT(status, HasSubstr("data-errors=\"0\""));
  EXPECT_THAT(status, ::testing::Not(HasSubstr("data-timeline-painted=\"0\"")));
  EXPECT_THAT(result.out, HasSubstr("of the run only, to keep the page small enough to open"));
}

// A run with nothing in it (no events, no regions, no cycles) still gives a
// working page.
TEST_F(Browser, EmptyProfileLoadsWithoutErrors) {
  const std::string empty = (output_directory() / "empty-report.html").string();
  testing::write_text(empty, render_html(testing::blank_profile(1, 0)).html);
  const testing::CommandResult result =
      chromium("--virtual-time-budget=3000 --dump-dom 'file://" + empty + "'", "empty");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string status = status_element(result.out);
  EXPECT_THAT(status, HasSubstr("data-ready=\"true\""));
  EXPECT_THAT(status, HasSubstr("data-errors=\"0\""));
}

// Every control the page offers, driven by synthetic events: zoom, pan,
// scroll, row height, grouping, hover in every section, selection, keys,
// memory zoom. None may raise a script error, and each redraw reports its
// time.
constexpr const char* kInteractions = R"(<script>
window.addEventListener('load', function () {
  const overlay = document.getElementById('timeline-overlay');
  const box = overlay.getBoundingClientRect();
  const at = function (x, y) { return { clientX: box.left + x, clientY: box.top + y, bubbles: true, cancelable: true }; };
  const wheel = function (x, y, extra) { overlay.dispatchEvent(new WheelEvent('wheel', Object.assign(at(x, y), extra))); tilecDrawNow(); };
  const mouse = function (target, type, x, y) { target.dispatchEvent(new MouseEvent(type, at(x, y))); tilecDrawNow(); };
  wheel(600, 200, { deltaY: -500 });
  wheel(600, 200, { deltaY: 300, shiftKey: true });
  wheel(600, 200, { deltaY: -800, altKey: true });
  wheel(600, 200, { deltaY: 900, altKey: true });
  mouse(overlay, 'mousemove', 500, 120);
  mouse(overlay, 'mousedown', 500, 120);
  mouse(overlay, 'mousemove', 420, 160);
  mouse(window, 'mouseup', 420, 160);
  mouse(overlay, 'mousedown', 700, 300);
  mouse(window, 'mouseup', 700, 300);
  mouse(overlay, 'dblclick', 700, 300);
  ['w', 's', 'a', 'd', 'ArrowDown', 'ArrowUp', 'f'].forEach(function (key) {
    overlay.dispatchEvent(new KeyboardEvent('keydown', { key: key, bubbles: true })); tilecDrawNow();
  });
  const group = document.getElementById('group');
  ['64', '32', '8', '1', '0'].forEach(function (value) {
    group.value = value; group.dispatchEvent(new Event('change')); tilecDrawNow();
    mouse(overlay, 'mousemove', 640, 240);
  });
  ['zoom-in', 'zoom-out', 'rows-in', 'rows-out', 'fit'].forEach(function (id) { document.getElementById(id).click(); tilecDrawNow(); });
  const balance = document.getElementById('balance'), bb = balance.getBoundingClientRect();
  balance.dispatchEvent(new MouseEvent('mousemove', { clientX: bb.left + bb.width / 2, clientY: bb.top + 20, bubbles: true }));
  balance.dispatchEvent(new MouseEvent('click', { clientX: bb.left + bb.width - 5, clientY: bb.top + 20, bubbles: true }));
  const memory = document.getElementById('memory'), mb = memory.getBoundingClientRect();
  memory.dispatchEvent(new MouseEvent('mousemove', { clientX: mb.left + 12, clientY: mb.top + 30, bubbles: true }));
  memory.dispatchEvent(new MouseEvent('mousemove', { clientX: mb.left + mb.width / 2, clientY: mb.top + 30, bubbles: true }));
  const zoom = document.getElementById('memory-zoom');
  zoom.checked = true; zoom.dispatchEvent(new Event('change'));
  memory.dispatchEvent(new MouseEvent('mousemove', { clientX: mb.left + mb.width / 3, clientY: mb.top + 30, bubbles: true }));
  const input = document.getElementById('tile-input');
  input.value = '7'; input.dispatchEvent(new Event('change'));
  window.dispatchEvent(new Event('resize')); tilecDrawNow();
  document.body.setAttribute('data-interactions', location.hash.includes('tile=7') ? 'done' : 'tile not selected');
});
</script>)";

TEST_F(Browser, InteractionsRaiseNoErrors) {
  std::string html = testing::read_text(report_);
  html.insert(html.rfind("</body>"), kInteractions);
  const std::string driven = (output_directory() / "interactions-report.html").string();
  testing::write_text(driven, html);
  const testing::CommandResult result =
      chromium("--window-size=1400,1000 --virtual-time-budget=3000 --dump-dom 'file://" + driven + "'", "interactions");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string status = status_element(result.out);
  EXPECT_THAT(status, HasSubstr("data-errors=\"0\"")) << result.out.substr(0, 3000);
  EXPECT_THAT(status, HasSubstr("data-last-draw-ms="));
  EXPECT_THAT(result.out, HasSubstr("data-interactions=\"done\""));
}

TEST_F(Browser, ScriptErrorsAreReportedOnThePage) {
  std::string html = testing::read_text(report_);
  html.insert(html.rfind("</body>"), "<script>tilecMissingFunction();</script>");
  const std::string broken = (output_directory() / "broken-report.html").string();
  testing::write_text(broken, html);
  const testing::CommandResult result =
      chromium("--virtual-time-budget=3000 --dump-dom 'file://" + broken + "'", "broken");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(status_element(result.out), HasSubstr("data-errors=\"1\""));
  EXPECT_THAT(result.out, HasSubstr("tilecMissingFunction is not defined"));
}

}  // namespace
}  // namespace tilec::profile
