// The report schema: the reference's keys, stage strings, reading back what
// was written, the reference file itself, Markdown tables.
#include "bench/case_report.h"
#include "support/duration.h"
#include "support/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

namespace tilec::bench {
namespace {

using ::testing::HasSubstr;

// The reference sweep lives in the shared folder beside the repository (or
// beside the folder of worktrees holding it).
std::string reference_report() {
  for (std::filesystem::path folder = TILEC_SOURCE_DIR; folder.has_relative_path(); folder = folder.parent_path()) {
    const std::filesystem::path file = folder.parent_path() / "shared/reference/seed-sweep.json";
    if (std::filesystem::exists(file)) return file.string();
  }
  return std::string(TILEC_SOURCE_DIR) + "/../shared/reference/seed-sweep.json";
}
const std::string kReferenceReport = reference_report();

CaseReport passing_case() {
  CaseReport report;
  report.name = "fp8-b4-n1-256k";
  report.batch = 4;
  report.blocks = 1;
  report.precision = "fp8";
  report.budget_kib = 256;
  report.status = kPass;
  report.wall_seconds = 12.3456;
  report.stages = {{"compile_runtime", 270e-6}, {"construct_mid", 1.234}, {"lower_exchanges", 107.4}};
  report.cycles = 282876;
  report.maximum_absolute_error = 0.00390625;
  report.weight_bytes = 9934848;
  report.input_bytes = 3359232;
  report.renderer_cycles = 280000;
  report.target = "ipu21";
  report.workload = "siglip-mlp";
  report.estimated_cycles = 270000;
  report.efficiency = 0.543;
  report.device_microseconds = 188.584;
  report.peak_tile_bytes = 252944;
  report.package_bytes = 150000;
  report.out_of_tolerance = 0;
  report.nan_mismatches = 0;
  report.infinity_mismatches = 0;
  report.absolute_tolerance = 0.03;
  report.relative_tolerance = 0.05;
  report.maximum_relative_error = 0.0215;
  report.exact_absolute_error = 0.1712;
  report.exact_relative_error = 4.03;
  report.precision_absolute_error = 0.1717;
  report.precision_relative_error = 4.05;
  report.exact_reference_seconds = 5.2;
  report.bit_exact = false;
  report.differing_elements = 1234;
  report.plan_order_reference_seconds = 1.3;
  report.peak_rss_bytes = 2536956000;
  report.key = CaseKey{"xxh64:0000000000000001", "xxh64:0000000000000002", "target ipu21", "0.1.0",
                       "xxh64:0000000000000003"};
  report.outputs_digest = "xxh64:0000000000000004";
  report.compile_seconds = 0.92;
  report.simulate_seconds = 17.66;
  report.reference_seconds = 1.1;
  report.plan = "46 groups of 32 tiles";
  report.profile = "fp8-b4-n1-256k/profile.html";
  return report;
}

std::set<std::string> keys_of(const nlohmann::json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.insert(key);
  return keys;
}

TEST(CaseReport, HasEveryKeyOfEveryReferenceCaseInTheReferenceOrder) {
  std::ifstream file(kReferenceReport);
  ASSERT_TRUE(file) << kReferenceReport;
  const nlohmann::json reference = nlohmann::json::parse(file);
  ASSERT_TRUE(reference.is_array());
  ASSERT_FALSE(reference.empty());
  CaseReport rejected;
  rejected.name = "fp8-b1-n1-64k";
  rejected.status = kPlannerRejected;
  for (const CaseReport& report : {passing_case(), rejected}) {
    const nlohmann::ordered_json ours = case_json(report);
    const std::set<std::string> our_keys = keys_of(ours);
    for (const nlohmann::json& entry : reference)
      for (const std::string& key : keys_of(entry)) EXPECT_TRUE(our_keys.count(key)) << key;
    // The reference's keys come first, in its order.
    std::vector<std::string> first;
    for (const auto& [key, value] : ours.items()) first.push_back(key);
    EXPECT_EQ(std::vector<std::string>(first.begin(), first.begin() + 8),
              (std::vector<std::string>{"case", "batch", "blocks", "precision", "budget_kib", "status", "returncode",
                                        "wall_seconds"}));
  }
}

TEST(CaseReport, StagesAreDurationStringsInPipelineOrder) {
  const nlohmann::ordered_json json = case_json(passing_case());
  std::vector<std::string> names, texts;
  for (const auto& [stage, text] : json["stages"].items()) {
    names.push_back(stage);
    texts.push_back(text.get<std::string>());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"compile_runtime", "construct_mid", "lower_exchanges"}));
  EXPECT_EQ(texts, (std::vector<std::string>{"270µs", "1.23s", "107s"}));
  for (const std::string& text : texts) EXPECT_TRUE(parse_duration(text).has_value()) << text;
}

TEST(CaseReport, ReadsBackWhatItWrites) {
  const CaseReport original = passing_case();
  const CaseReport again = case_from_json(nlohmann::ordered_json::parse(case_json(original).dump()), "case.json");
  EXPECT_EQ(case_json(again), case_json(original));
  EXPECT_EQ(again.cycles, original.cycles);
  EXPECT_EQ(again.stages.size(), 3u);
  EXPECT_NEAR(again.stages[1].second, 1.23, 1e-9);
  EXPECT_DOUBLE_EQ(again.wall_seconds, 12.346);  // written to the millisecond
  EXPECT_EQ(again.key, original.key);
  EXPECT_EQ(again.exact_relative_error, 4.03);
  EXPECT_EQ(again.absolute_tolerance, 0.03);
  EXPECT_EQ(again.bit_exact, false);
  EXPECT_EQ(again.differing_elements, 1234);
  EXPECT_EQ(again.plan_order_reference_seconds, 1.3);
  EXPECT_EQ(again.peak_rss_bytes, 2536956000u);
  CaseReport unmeasured = original;
  unmeasured.peak_rss_bytes.reset();
  EXPECT_TRUE(case_json(unmeasured)["peakRssBytes"].is_null());
  EXPECT_FALSE(case_from_json(case_json(unmeasured), "case.json").peak_rss_bytes.has_value());
}

// A ViT tower's layers and head are written after its workload and read
// back; the MLP's are null.
TEST(CaseReport, ATowersLayersAndHeadReadBack) {
  EXPECT_TRUE(case_json(passing_case())["layers"].is_null());
  EXPECT_TRUE(case_json(passing_case())["head"].is_null());
  CaseReport tower = passing_case();
  tower.name = "fp8-b1-l27-default";
  tower.blocks.reset();
  tower.workload = "siglip-vit layers 27 no head";
  tower.layers = 27;
  tower.head = false;
  const nlohmann::ordered_json json = case_json(tower);
  std::vector<std::string> keys;
  for (const auto& [key, value] : json.items()) keys.push_back(key);
  const auto workload = std::find(keys.begin(), keys.end(), "workload");
  ASSERT_LE(workload + 3, keys.end());
  EXPECT_EQ(std::vector<std::string>(workload + 1, workload + 3), (std::vector<std::string>{"layers", "head"}));
  const CaseReport again = case_from_json(nlohmann::ordered_json::parse(json.dump()), "case.json");
  EXPECT_EQ(again.layers, 27);
  EXPECT_EQ(again.head, false);
  EXPECT_FALSE(again.blocks.has_value());
  EXPECT_EQ(case_json(again), json);
}

TEST(CaseReport, ReadsTheReferenceSweep) {
  const std::vector<CaseReport> cases = read_report_file(kReferenceReport);
  ASSERT_EQ(cases.size(), 15u);
  int passed = 0;
  for (const CaseReport& report : cases) {
    passed += report.passed();
    EXPECT_FALSE(report.stages.empty()) << report.name;
    if (report.passed()) { EXPECT_TRUE(report.cycles.has_value()) << report.name; }
    if (report.status == kPlannerRejected) { EXPECT_FALSE(report.diagnostic.empty()) << report.name; }
  }
  EXPECT_EQ(passed, 9);
}

TEST(CaseReport, BadFilesAreOneLineBadInput) {
  const std::string directory = ::testing::TempDir() + "/tilec_case_report";
  std::filesystem::create_directories(directory);
  const auto expect_error = [&](const std::string& text, const std::string& message) {
    const std::string path = directory + "/report.json";
    std::ofstream(path) << text;
    try {
      read_report_file(path);
      ADD_FAILURE() << "no error for " << text;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::BadInput);
      EXPECT_THAT(error.what(), HasSubstr(message));
      EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos);
    }
  };
  expect_error("{\"case\": 1}", "report.json: a report is a JSON array of cases");
  expect_error("[{\"status\": \"pass\"}]", "report.json: a case has no 'case'");
  expect_error("[{\"case\": \"a\", \"status\": \"pass\", \"stages\": {\"eliminate\": \"fast\"}}]",
               "report.json: case 'a': stage 'eliminate' has no duration like \"1.33ms\"");
  expect_error("[{\"case\": \"a\", \"status\": \"pass\", \"cycles\": \"many\"}]",
               "report.json: case 'a': key 'cycles' has the wrong type");
  expect_error("[1, 2", "report.json: not JSON");
  try {
    read_report_file(directory + "/missing.json");
    ADD_FAILURE();
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), directory + "/missing.json: cannot open");
  }
}

TEST(CaseReport, MarkdownHasARowPerCaseAndTheDiagnostics) {
  CaseReport rejected;
  rejected.name = "fp8-b1-n1-64k";
  rejected.status = kPlannerRejected;
  rejected.diagnostic = {"construct_mid: close time.wall=1.00s time.busy=1.00s", "compile: no plan fits"};
  const std::string text = report_markdown({passing_case(), rejected}, "sweep");
  EXPECT_THAT(text, HasSubstr("# sweep\n"));
  EXPECT_THAT(text, HasSubstr("| [fp8-b4-n1-256k](fp8-b4-n1-256k/profile.html) | pass | 282,876 | 188.6 | 54.3% | 0.003906 | "
                              "0.0215 | no (1,234 differ) | 0.1712 | 0.1717 | 252,944 | 0.92 | 17.66 | 12.3 | 2.54 GB |\n"));
  EXPECT_THAT(text, HasSubstr("| fp8-b1-n1-64k | planner-rejected | - | - | - | - | - | - | - | - | - | - | - | 0.0 | - |\n"));
  CaseReport exact = passing_case();
  exact.bit_exact = true;
  exact.differing_elements = 0;
  EXPECT_THAT(report_markdown({exact}, "sweep"), HasSubstr("| 0.0215 | yes | 0.1712 |"));
  EXPECT_THAT(text, HasSubstr("## fp8-b1-n1-64k (planner-rejected)\n\n```\nconstruct_mid: close time.wall=1.00s "
                              "time.busy=1.00s\ncompile: no plan fits\n```\n"));
}

TEST(CaseReport, ComparisonShowsRatiosSideBySide) {
  CaseReport before = passing_case(), after = passing_case();
  before.cycles = 827508;
  before.wall_seconds = 324.6;
  before.maximum_absolute_error = 0.0062;
  after.cycles = 206877;
  after.wall_seconds = 32.46;
  CaseReport only_old = passing_case();
  only_old.name = "fp8-b1-n1-128k";
  const std::string text = compare_markdown({before, only_old}, {after}, "old.json", "new.json");
  EXPECT_THAT(text, HasSubstr("old: old.json\nnew: new.json\n"));
  EXPECT_THAT(text, HasSubstr("| fp8-b4-n1-256k | pass | pass | 827,508 | 206,877 | 0.25x | 324.6 | 32.5 | 0.10x | "
                              "0.0062 | 0.003906 |\n"));
  EXPECT_THAT(text, HasSubstr("only in old: fp8-b1-n1-128k\n"));
}

TEST(CaseReport, WritesFilesWhole) {
  const std::string path = ::testing::TempDir() + "/tilec_atomic.json";
  write_text_atomically(path, "first");
  write_text_atomically(path, "second");
  std::ifstream file(path);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "second");
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
  EXPECT_THROW(write_text_atomically("/nonexistent-dir/x.json", "x"), Error);
}

}  // namespace
}  // namespace tilec::bench
