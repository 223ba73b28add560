// Sweeps of a tiny grid on a 16-tile chip: the folder's files, resuming,
// parallel cases, progress lines.
#include "bench/sweep.h"
#include "graph/npy.h"
#include "support/error.h"
#include "support/host_memory.h"
#include "support/parallel.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tilec::bench {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

std::string fresh_directory(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/tilec_sweep_" + name;
  fs::remove_all(path);
  return path;
}

SweepOptions tiny_sweep(const std::string& out) {
  SweepOptions options;
  options.workload = "mlp";
  options.base.tokens = 40;
  options.base.width = 32;
  options.base.hidden = 64;
  options.batches = {1, 2};
  options.budgets_kib = {0, 4};  // 4 KiB: no plan fits
  options.machines = {{ipu21_cut(16), ""}};
  options.out_directory = out;
  options.profiles = false;
  return options;
}

// The tiny sweep's first case alone.
SweepOptions first_case_sweep(const std::string& out) {
  SweepOptions options = tiny_sweep(out);
  options.batches = {1};
  options.budgets_kib = {0};
  return options;
}

std::vector<std::string> names_of(const std::vector<CaseReport>& cases) {
  std::vector<std::string> names;
  for (const CaseReport& report : cases) names.push_back(report.name);
  return names;
}

std::string file_text(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

const std::vector<std::string> kTinyGrid{"fp8-b1-n1-default", "fp8-b1-n1-4k", "fp8-b2-n1-default", "fp8-b2-n1-4k"};

TEST(Sweep, GridIsInReportOrderWithoutDuplicates) {
  SweepOptions options;
  options.precisions = {graph::Precision::Fp8, graph::Precision::Fp16};
  options.batches = {4, 1};
  options.budgets_kib = {0, 256, 0};
  const std::vector<GridCase> grid = sweep_grid(options);
  std::vector<std::string> names;
  for (const GridCase& grid_case : grid) names.push_back(grid_case.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fp8-b4-n1-default", "fp8-b4-n1-256k", "fp8-b1-n1-default",
                                             "fp8-b1-n1-256k", "fp16-b4-n1-default", "fp16-b4-n1-256k",
                                             "fp16-b1-n1-default", "fp16-b1-n1-256k"}));
  EXPECT_EQ(grid[5].options.precision, graph::Precision::Fp16);
  EXPECT_EQ(grid[5].options.batch, 4);
  EXPECT_EQ(grid[5].budget_kib, 256u);
  // The default grid is the reference's: 15 cases.
  EXPECT_EQ(sweep_grid(SweepOptions{}).size(), 15u);
}

// A ViT tower's grid crosses layers where an MLP's crosses blocks; its
// names and labels say the layers, and the workload's own count is the default.
TEST(Sweep, ATowersGridCrossesLayers) {
  SweepOptions options;
  options.workload = "vit";
  options.batches = {1, 2};
  options.layers = {1, 2, 1};
  options.budgets_kib = {0};
  const std::vector<GridCase> grid = sweep_grid(options);
  std::vector<std::string> names, labels;
  for (const GridCase& grid_case : grid) {
    names.push_back(grid_case.name);
    labels.push_back(grid_case.workload);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"fp8-b1-l1-default", "fp8-b1-l2-default", "fp8-b2-l1-default",
                                             "fp8-b2-l2-default"}));
  EXPECT_EQ(labels, (std::vector<std::string>{"vit 16x32 layers 1", "vit 16x32 layers 2", "vit 16x32 layers 1",
                                              "vit 16x32 layers 2"}));
  EXPECT_EQ(grid[3].options.layers, 2);
  EXPECT_EQ(grid[3].options.batch, 2);

  options.workload = "siglip-vit";
  options.layers.clear();
  options.batches = {1};
  options.base.head = false;
  const std::vector<GridCase> tower = sweep_grid(options);
  ASSERT_EQ(tower.size(), 1u);
  EXPECT_EQ(tower[0].name, "fp8-b1-l27-default");
  EXPECT_EQ(tower[0].workload, "siglip-vit layers 27 no head");

  options.workload = "siglip-vit-layer";
  options.base.head = true;
  EXPECT_EQ(sweep_grid(options).at(0).name, "fp8-b1-default");
}

// A point the workload does not take is refused before its name (which
// has no blocks for a tower, no layers for an MLP) could hide it.
TEST(Sweep, AGridPointTheWorkloadDoesNotTakeIsBadInput) {
  const auto expect_refused = [](const SweepOptions& options, const std::string& message) {
    try {
      sweep_grid(options);
      ADD_FAILURE() << "no error for " << options.workload;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::BadInput);
      EXPECT_THAT(error.what(), HasSubstr(message));
    }
  };
  SweepOptions tower;
  tower.workload = "vit";
  tower.blocks = {1, 2};
  expect_refused(tower, "workload 'vit': blocks is an option of the MLP workloads");
  SweepOptions mlp;
  mlp.layers = {2};
  expect_refused(mlp, "workload 'siglip-mlp': layers and head are options of workloads 'siglip-vit' and 'vit'");
  SweepOptions layer;
  layer.workload = "vit-layer";
  layer.layers = {3};
  expect_refused(layer, "workload 'vit-layer': it is one encoder layer, without the head");
}

// The small tower, one and two layers: every case passes, says its layers
// and head, and keeps the MLP's keys with blocks null.
TEST(Sweep, RunsATowerCasePerLayerCount) {
  const std::string out = fresh_directory("tower");
  SweepOptions options;
  options.workload = "vit";
  options.batches = {1};
  options.layers = {1, 2};
  options.budgets_kib = {0};
  options.machines = {{ipu21_cut(16), ""}};
  options.out_directory = out;
  options.profiles = false;
  const SweepResult result = run_sweep(options);
  ASSERT_EQ(names_of(result.cases), (std::vector<std::string>{"fp8-b1-l1-default", "fp8-b1-l2-default"}));
  for (std::size_t i = 0; i < 2; ++i) {
    const CaseReport& report = result.cases[i];
    EXPECT_EQ(report.status, kPass) << ::testing::PrintToString(report.diagnostic);
    EXPECT_EQ(report.layers, static_cast<std::int64_t>(i + 1));
    EXPECT_EQ(report.head, true);
    EXPECT_FALSE(report.blocks.has_value());
    EXPECT_EQ(report.batch, 1);
    EXPECT_EQ(report.workload, fmt::format("vit 16x32 layers {}", i + 1));
    ASSERT_TRUE(report.key.has_value());
    EXPECT_THAT(report.key->options, HasSubstr(fmt::format(", layers {}, head", i + 1)));
    EXPECT_TRUE(report.cycles.has_value());
  }
  // Two layers run longer than one.
  EXPECT_GT(*result.cases[1].cycles, *result.cases[0].cycles);
  EXPECT_NE(result.cases[0].key->graph, result.cases[1].key->graph);
  EXPECT_THAT(file_text(out + "/report.md"),
              HasSubstr("# tilec sweep: vit 16x32 layers 1, vit 16x32 layers 2 on ipu21:16 (2 of 2 cases)\n"));
  EXPECT_THAT(file_text(out + "/report.md"), HasSubstr("| fp8-b1-l2-default | pass | "));
  EXPECT_EQ(run_sweep(options).kept, 2);
  // Without the head: other cases under the same names, run again.
  options.base.head = false;
  const SweepResult headless = run_sweep(options);
  EXPECT_EQ(headless.ran, 2);
  EXPECT_EQ(headless.cases[0].head, false);
  EXPECT_EQ(headless.cases[0].workload, "vit 16x32 layers 1 no head");
}

TEST(Sweep, WritesEveryCaseAndTheReports) {
  const std::string out = fresh_directory("writes");
  std::vector<std::string> lines;
  SweepOptions options = tiny_sweep(out);
  options.progress = [&](const std::string& line) { lines.push_back(line); };
  const SweepResult result = run_sweep(options);
  EXPECT_EQ(result.ran, 4);
  EXPECT_EQ(result.kept, 0);
  ASSERT_EQ(names_of(result.cases), kTinyGrid);
  EXPECT_EQ(result.cases[0].status, kPass);
  EXPECT_EQ(result.cases[1].status, kPlannerRejected);
  EXPECT_EQ(result.cases[2].status, kPass);
  EXPECT_EQ(result.cases[3].status, kPlannerRejected);
  EXPECT_EQ(result.cases[0].workload, "mlp 40x32x64");
  EXPECT_EQ(result.cases[0].target, "ipu21:16");
  EXPECT_EQ(result.cases[2].batch, 2);

  const std::vector<CaseReport> written = read_report_file(out + "/report.json");
  EXPECT_EQ(names_of(written), kTinyGrid);
  EXPECT_EQ(case_json(written[2]), case_json(result.cases[2]));
  for (const std::string& name : kTinyGrid) EXPECT_TRUE(fs::exists(out + "/" + name + "/case.json")) << name;
  std::ifstream markdown(out + "/report.md");
  std::string text((std::istreambuf_iterator<char>(markdown)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("| fp8-b2-n1-4k | planner-rejected |"));

  // Progress: a few lines per case, each naming the case.
  EXPECT_LE(lines.size(), 4u * 4u);
  for (const std::string& line : lines) EXPECT_THAT(line, MatchesRegex("bench \\[[1-4]/4\\] fp8-b[12]-n1-[a-z0-9]+: .*"));
  EXPECT_THAT(lines, ::testing::Contains("bench [1/4] fp8-b1-n1-default: compile (+0.0s)"));
}

TEST(Sweep, PassingCasesGetAProfilePage) {
  const std::string out = fresh_directory("profiles");
  SweepOptions options = tiny_sweep(out);
  options.batches = {1};
  options.profiles = true;
  const SweepResult result = run_sweep(options);
  ASSERT_EQ(names_of(result.cases), (std::vector<std::string>{"fp8-b1-n1-default", "fp8-b1-n1-4k"}));
  EXPECT_EQ(result.cases[0].profile, "fp8-b1-n1-default/profile.html");
  EXPECT_TRUE(fs::exists(out + "/fp8-b1-n1-default/profile.html"));
  EXPECT_TRUE(fs::exists(out + "/fp8-b1-n1-default/profile.tprof"));
  EXPECT_EQ(result.cases[1].profile, "");
  EXPECT_FALSE(fs::exists(out + "/fp8-b1-n1-4k/profile.html"));
  EXPECT_EQ(read_report_file(out + "/report.json")[0].profile, "fp8-b1-n1-default/profile.html");
}

TEST(Sweep, ResumesWithoutRedoingFinishedCases) {
  const std::string out = fresh_directory("resume");
  // An earlier sweep that was stopped after its first case.
  SweepOptions options = first_case_sweep(out);
  const SweepResult first = run_sweep(options);
  ASSERT_EQ(first.ran, 1);
  const std::string record = file_text(out + "/fp8-b1-n1-default/case.json");
  ASSERT_TRUE(first.cases[0].key);
  EXPECT_FALSE(first.cases[0].key->package.empty());
  EXPECT_FALSE(first.cases[0].outputs_digest.empty());
  EXPECT_TRUE(fs::exists(out + "/fp8-b1-n1-default/outputs/y.npy"));

  options = tiny_sweep(out);
  const SweepResult resumed = run_sweep(options);
  EXPECT_EQ(resumed.kept, 1);
  EXPECT_EQ(resumed.ran, 3);
  ASSERT_EQ(names_of(resumed.cases), kTinyGrid);
  EXPECT_EQ(case_json(resumed.cases[0]), case_json(first.cases[0]));
  EXPECT_EQ(file_text(out + "/fp8-b1-n1-default/case.json"), record);
  EXPECT_EQ(case_json(read_report_file(out + "/report.json")[0]), case_json(first.cases[0]));

  // Everything finished: nothing runs again, planner rejections included.
  const SweepResult again = run_sweep(options);
  EXPECT_EQ(again.kept, 4);
  EXPECT_EQ(again.ran, 0);
  EXPECT_EQ(case_json(again.cases[3]), case_json(resumed.cases[3]));

  // --force runs everything again.
  options.force = true;
  const SweepResult forced = run_sweep(options);
  EXPECT_EQ(forced.ran, 4);
  EXPECT_EQ(forced.kept, 0);
}

// A sweep with FP16 partial sums names its cases apart, runs them under
// another key, and keeps no case of the sweep without them.
TEST(Sweep, Fp16PartialsAreCasesOfTheirOwn) {
  const std::string out = fresh_directory("fp16_partials");
  SweepOptions options = first_case_sweep(out);
  const SweepResult plain = run_sweep(options);
  ASSERT_EQ(plain.ran, 1);
  options.fp16_partials = true;
  const SweepResult half = run_sweep(options);
  EXPECT_EQ(half.ran, 1);
  EXPECT_EQ(half.kept, 0);
  ASSERT_EQ(names_of(half.cases), std::vector<std::string>{"fp8-b1-n1-default-fp16-partials"});
  ASSERT_TRUE(half.cases[0].key && plain.cases[0].key);
  EXPECT_THAT(half.cases[0].key->options, HasSubstr("fp16 partial sums anywhere"));
  EXPECT_NE(half.cases[0].key->options, plain.cases[0].key->options);
  EXPECT_TRUE(half.cases[0].passed());
  EXPECT_EQ(half.cases[0].bit_exact, true);
}

// A hand-edited record, outputs that are not the ones reported, and a
// record made under other options are all run again.
TEST(Sweep, ResumesOnlyWhatTheKeyAndTheDigestsVouchFor) {
  const std::string out = fresh_directory("edited");
  SweepOptions options = tiny_sweep(out);
  options.budgets_kib = {0};
  const SweepResult first = run_sweep(options);
  ASSERT_EQ(first.ran, 2);
  const std::string b1 = out + "/fp8-b1-n1-default", b2 = out + "/fp8-b2-n1-default";
  // Fewer cycles, written by hand into the record.
  std::string record = file_text(b1 + "/case.json");
  const std::string cycles = fmt::format("\"cycles\": {}", *first.cases[0].cycles);
  ASSERT_NE(record.find(cycles), std::string::npos);
  record.replace(record.find(cycles), cycles.size(), "\"cycles\": 1");
  std::ofstream(b1 + "/case.json") << record;
  // Other outputs under an intact record.
  graph::Tensor y = graph::read_npy_as_stored(b2 + "/outputs/y.npy");
  y.bytes[0] ^= 1;
  graph::write_npy(b2 + "/outputs/y.npy", y);
  std::vector<std::string> lines;
  options.progress = [&](const std::string& line) { lines.push_back(line); };
  const SweepResult second = run_sweep(options);
  EXPECT_EQ(second.kept, 0);
  EXPECT_EQ(second.ran, 2);
  EXPECT_EQ(second.cases[0].cycles, first.cases[0].cycles);
  EXPECT_THAT(lines, ::testing::Contains(HasSubstr("was changed after it was written")));
  EXPECT_THAT(lines, ::testing::Contains(HasSubstr("its stored outputs are not those it reported")));

  // A record that another cycle limit produced (same workload and target).
  options.max_cycles = 1'000'000;
  lines.clear();
  const SweepResult third = run_sweep(options);
  EXPECT_EQ(third.kept, 0);
  EXPECT_THAT(lines, ::testing::Contains(HasSubstr("found a case made by another graph, data, options, tilec or "
                                                   "package: running again")));
  EXPECT_EQ(run_sweep(options).kept, 2);
}

TEST(Sweep, RunsAgainCasesOfAnotherSweepOrHalfWritten) {
  const std::string out = fresh_directory("other");
  SweepOptions options = tiny_sweep(out);
  options.batches = {1};
  run_sweep(options);
  // Same names, other target: not the same case.
  CaseReport other = read_report_file(out + "/report.json")[0];
  other.target = "ipu21:32";
  write_text_atomically(out + "/fp8-b1-n1-default/case.json", sealed_case_text(other));
  // A file cut short.
  std::ofstream(out + "/fp8-b1-n1-4k/case.json") << "{\"case\": \"fp8-b1";
  std::vector<std::string> lines;
  options.progress = [&](const std::string& line) { lines.push_back(line); };
  const SweepResult result = run_sweep(options);
  EXPECT_EQ(result.ran, 2);
  EXPECT_EQ(result.cases[0].target, "ipu21:16");
  EXPECT_THAT(lines, ::testing::Contains(HasSubstr("found a case of mlp 40x32x64 on ipu21:32: running again")));
  EXPECT_THAT(lines, ::testing::Contains(HasSubstr("unusable earlier result")));
}

TEST(Sweep, ParallelCasesGiveTheSameFigures) {
  SweepOptions serial = tiny_sweep(fresh_directory("serial"));
  SweepOptions parallel = tiny_sweep(fresh_directory("parallel"));
  parallel.jobs = 3;
  const SweepResult one = run_sweep(serial), three = run_sweep(parallel);
  ASSERT_EQ(names_of(three.cases), kTinyGrid);
  for (std::size_t i = 0; i < one.cases.size(); ++i) {
    EXPECT_EQ(one.cases[i].status, three.cases[i].status);
    EXPECT_EQ(one.cases[i].cycles, three.cases[i].cycles);
    EXPECT_EQ(one.cases[i].maximum_absolute_error, three.cases[i].maximum_absolute_error);
  }
}

// Cases run at once share the host's threads evenly, so that no case is
// timed against another's work.
TEST(Sweep, EachCaseRunAtOnceTakesAnEvenShareOfTheThreads) {
  EXPECT_EQ(threads_per_case(2, 2), 1);
  EXPECT_EQ(threads_per_case(8, 3), 2);
  EXPECT_EQ(threads_per_case(1, 4), 1);
  EXPECT_EQ(threads_per_case(6, 1), 6);
  SweepOptions options = tiny_sweep(fresh_directory("shares"));
  options.jobs = 2;
  const SweepResult shared = run_sweep(options);
  EXPECT_EQ(shared.case_threads, threads_per_case(thread_count(), 2));
  // Cases that share the process have no peak resident memory of their own.
  for (const CaseReport& report : shared.cases) EXPECT_FALSE(report.peak_rss_bytes.has_value()) << report.name;
  options.jobs = 1;
  options.force = true;
  const SweepResult alone = run_sweep(options);
  EXPECT_EQ(alone.case_threads, thread_count());
  // One at a time, each has (where the host lets the mark restart).
  if (restart_peak_resident()) {
    for (const CaseReport& report : alone.cases) EXPECT_GT(report.peak_rss_bytes.value_or(0), 0u) << report.name;
  }
}

// By default a case for every two threads, as far as memory holds the
// workload's allowance a case, at least one.
TEST(Sweep, DefaultJobsGiveEachCaseTwoThreadsAndItsMemory) {
  constexpr std::uint64_t kGibibyteInKib = 1024 * 1024;
  const std::uint64_t mlp = case_memory_kib("siglip-mlp");
  EXPECT_EQ(mlp, 3 * kGibibyteInKib / 2);
  EXPECT_EQ(default_jobs(2, 64 * kGibibyteInKib, mlp), 1);
  EXPECT_EQ(default_jobs(1, 64 * kGibibyteInKib, mlp), 1);
  EXPECT_EQ(default_jobs(16, 64 * kGibibyteInKib, mlp), 8);
  EXPECT_EQ(default_jobs(16, 6 * kGibibyteInKib, mlp), 4);
  EXPECT_EQ(default_jobs(16, 0, mlp), 1);
  // A tower's case needs more: the same host runs fewer at once.
  const std::uint64_t tower = case_memory_kib("siglip-vit");
  EXPECT_EQ(tower, 4 * kGibibyteInKib);
  EXPECT_EQ(case_memory_kib("vit"), tower);
  EXPECT_EQ(default_jobs(16, 6 * kGibibyteInKib, tower), 1);
  EXPECT_EQ(default_jobs(16, 17 * kGibibyteInKib, tower), 4);
}

TEST(Sweep, AFailingCaseDoesNotStopTheOthers) {
  SweepOptions options = tiny_sweep(fresh_directory("failing"));
  options.budgets_kib = {0};
  options.blocks = {1};
  options.base.fp8_scale = 99;  // out of range: every case's workload is bad input
  options.precisions = {graph::Precision::Fp8};
  const SweepResult result = run_sweep(options);
  ASSERT_EQ(result.cases.size(), 2u);
  for (const CaseReport& report : result.cases) {
    EXPECT_EQ(report.status, kError);
    EXPECT_EQ(report.returncode, 2);
    EXPECT_THAT(report.diagnostic.back(), HasSubstr("FP8 scale 99"));
  }
}

TEST(Sweep, AnUnusableFolderIsAnError) {
  const std::string file = fresh_directory("file");
  std::ofstream(file) << "not a folder";
  SweepOptions options = tiny_sweep(file + "/out");
  EXPECT_THROW(run_sweep(options), Error);
}

}  // namespace
}  // namespace tilec::bench
