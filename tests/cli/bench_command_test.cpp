// `tilec bench`, run as a user would, on tiny grids of a 16-tile chip: the
// report files in the reference schema, resuming a stopped sweep,
// comparing with the reference report, bad flags.
#include "support/duration.h"
#include "tilec_process.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

namespace tilec::cli_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kTinyWorkload = "bench --workload mlp --tokens 40 --width 32 --hidden 64 --tiles 16 --no-profiles";
const std::string kTinyGrid = kTinyWorkload + " --batches 1,2 --budgets default,4";

// The reference sweep lives in the shared folder beside the repository (or
// beside the folder of worktrees holding it).
std::string reference_report() {
  for (std::filesystem::path folder = TILEC_SOURCE_DIR; folder.has_relative_path(); folder = folder.parent_path()) {
    const std::filesystem::path file = folder.parent_path() / "shared/reference/seed-sweep.json";
    if (std::filesystem::exists(file)) return file.string();
  }
  return std::string(TILEC_SOURCE_DIR) + "/../shared/reference/seed-sweep.json";
}

std::set<std::string> keys_of(const nlohmann::json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.insert(key);
  return keys;
}

TEST(BenchCommand, ReportHasTheReferenceSchema) {
  const std::string out = fresh_directory("bench_schema");
  const TilecRun run = run_tilec(kTinyGrid + " --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(file_text(out + "/report.json"));
  const nlohmann::json reference = nlohmann::json::parse(file_text(reference_report()));
  ASSERT_EQ(report.size(), 4u);
  std::set<std::string> statuses;
  for (const nlohmann::json& ours : report) {
    statuses.insert(ours["status"].get<std::string>());
    const std::set<std::string> our_keys = keys_of(ours);
    // Every key of every reference case, whatever its status.
    for (const nlohmann::json& theirs : reference)
      for (const std::string& key : keys_of(theirs)) EXPECT_TRUE(our_keys.count(key)) << ours["case"] << " " << key;
    for (const auto& [stage, text] : ours["stages"].items())
      EXPECT_TRUE(parse_duration(text.get<std::string>()).has_value()) << stage << " " << text;
  }
  EXPECT_EQ(statuses, (std::set<std::string>{"pass", "planner-rejected"}));
  EXPECT_EQ(report[0]["case"], "fp8-b1-n1-default");
  EXPECT_EQ(report[3]["case"], "fp8-b2-n1-4k");
  EXPECT_EQ(report[3]["returncode"], 1);
  EXPECT_THAT(report[3]["diagnostic"].back().get<std::string>(), StartsWith("compile: no plan fits"));

  const std::string markdown = file_text(out + "/report.md");
  EXPECT_THAT(markdown, HasSubstr("| fp8-b1-n1-default | pass | "));
  EXPECT_THAT(run.out, HasSubstr("| fp8-b2-n1-4k | planner-rejected | "));
  EXPECT_THAT(run.out, HasSubstr("4 cases: 4 run, 0 kept from an earlier sweep; "));
  EXPECT_THAT(run.out, HasSubstr(" a case; wrote "));
  // Progress on stderr, a few lines per case.
  EXPECT_THAT(run.err, HasSubstr("bench [1/4] fp8-b1-n1-default: compile (+"));
  EXPECT_THAT(run.err, HasSubstr("bench [4/4] fp8-b2-n1-4k: planner-rejected"));
  EXPECT_LE(std::count(run.err.begin(), run.err.end(), '\n'), 16);
}

TEST(BenchCommand, WritesAProfilePagePerPassingCase) {
  const std::string out = fresh_directory("bench_profiles");
  const TilecRun run = run_tilec(
      "bench --workload mlp --tokens 40 --width 32 --hidden 64 --tiles 16 --batches 1 --budgets default,4 --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(std::filesystem::exists(out + "/fp8-b1-n1-default/profile.html"));
  EXPECT_FALSE(std::filesystem::exists(out + "/fp8-b1-n1-4k/profile.html"));
  EXPECT_THAT(run.out, HasSubstr("| [fp8-b1-n1-default](fp8-b1-n1-default/profile.html) | pass |"));
  EXPECT_THAT(run.err, HasSubstr("bench [1/2] fp8-b1-n1-default: profile (+"));
  const TilecRun query = run_tilec("profile query " + out + "/fp8-b1-n1-default/profile.tprof");
  EXPECT_EQ(query.exit_code, 0) << query.err;
}

TEST(BenchCommand, StoppedSweepResumesWithoutRedoingFinishedCases) {
  const std::string out = fresh_directory("bench_resume");
  // What a sweep stopped after its first case leaves: that case's file.
  ASSERT_EQ(run_tilec(kTinyWorkload + " --batches 1 --budgets default --out " + out).exit_code, 0);
  const std::string finished = file_text(out + "/fp8-b1-n1-default/case.json");
  std::filesystem::remove(out + "/report.json");
  const TilecRun resumed = run_tilec(kTinyGrid + " --out " + out);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("4 cases: 3 run, 1 kept from an earlier sweep; "));
  EXPECT_THAT(resumed.err, HasSubstr("bench [1/4] fp8-b1-n1-default: finished earlier (pass"));
  EXPECT_EQ(file_text(out + "/fp8-b1-n1-default/case.json"), finished);
  const nlohmann::json report = nlohmann::json::parse(file_text(out + "/report.json"));
  ASSERT_EQ(report.size(), 4u);
  nlohmann::json record = nlohmann::json::parse(finished);
  record.erase("digest");  // the case file's seal
  EXPECT_EQ(report[0], record);
  // --force runs it again.
  const TilecRun forced = run_tilec(kTinyGrid + " --out " + out + " --force --quiet");
  EXPECT_THAT(forced.out, HasSubstr("4 cases: 4 run, 0 kept"));
  EXPECT_EQ(forced.err, "");
}

// A record edited by hand is not a finished case: it runs again, and the
// report gives the simulator's cycles.
TEST(BenchCommand, AHandEditedCaseRunsAgain) {
  const std::string out = fresh_directory("bench_edited");
  const std::string grid = kTinyWorkload + " --batches 1 --budgets default --out " + out;
  ASSERT_EQ(run_tilec(grid).exit_code, 0);
  const std::string path = out + "/fp8-b1-n1-default/case.json";
  nlohmann::ordered_json record = nlohmann::ordered_json::parse(file_text(path));
  const std::uint64_t cycles = record["cycles"];
  record["cycles"] = 1000;
  write_file(path, record.dump(2));
  const TilecRun resumed = run_tilec(grid);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("1 cases: 1 run, 0 kept from an earlier sweep; "));
  EXPECT_THAT(resumed.err, HasSubstr("case.json: was changed after it was written (its digest does not match)): running again"));
  EXPECT_EQ(nlohmann::json::parse(file_text(out + "/report.json"))[0]["cycles"], cycles);
}

TEST(BenchCommand, ComparesWithTheReferenceReport) {
  const std::string out = fresh_directory("bench_compare");
  const TilecRun run = run_tilec(kTinyGrid + " --quiet --out " + out + " --compare " + reference_report());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("| case | old status | new status | old cycles | new cycles | cycles new/old |"));
  // The tiny case has the name of the reference's first case: side by side.
  EXPECT_THAT(run.out, HasSubstr("| fp8-b1-n1-default | pass | pass | 225,672 | "));
  EXPECT_THAT(run.out, HasSubstr("| fp8-b2-n1-4k | - | planner-rejected | - | - |  |"));
  EXPECT_THAT(run.out, HasSubstr("only in old: "));
}

TEST(BenchCommand, BadFlagsExitTwoBeforeRunning) {
  const std::string out = fresh_directory("bench_flags");
  const auto expect_error = [&](const std::string& flags, const std::string& message) {
    const TilecRun run = run_tilec(kTinyGrid + " --out " + out + " " + flags);
    EXPECT_EQ(run.exit_code, 2) << flags;
    EXPECT_EQ(run.err, "tilec: error: " + message + "\n") << flags;
    EXPECT_EQ(run.out, "");
  };
  expect_error("--batches 1,0", "--batches 0: must be an integer >= 1");
  expect_error("--precisions fp8,fp7", "--precisions fp7: must be fp8, fp16 or fp32");
  expect_error("--budgets 64,huge", "--budgets huge: must be an integer >= 0");
  expect_error("--jobs 0", "--jobs 0: must be an integer >= 1");
  expect_error("--target ipu21:8", "--tiles: give one of --tiles, --target and --targets");
  expect_error("--vary exchange-bytes", "--vary exchange-bytes: expected field=value,value,... such as exchange-bytes=4,8,16");
  expect_error("--vary exchange-bytes=4,6", "target ipu21:16,exchange-bytes=6: exchange-bytes: 6 is not a multiple of 4 in 4..256 (the exchange moves 32-bit words)");
  expect_error("--vary warp=1", "target ipu21:16,warp=1: unknown field 'warp' (the fields: tiles, tiles-per-column, "
                                "standard-begin, standard-end, interleaved-begin, interleaved-end, standard-load-bytes, "
                                "interleaved-load-bytes, exchange-bytes, exchange-base-latency, exchange-hop-latency, "
                                "sync-cycles, clock-ghz, amp-types, amp-f8-macs, amp-f16-macs, amp-f32-macs, workers)");
  expect_error("--compare " + out + "/none.json", out + "/none.json: cannot open");
  EXPECT_FALSE(std::filesystem::exists(out + "/report.json"));
  const TilecRun no_tiles = run_tilec("bench --tiles 0 --out " + out);
  EXPECT_EQ(no_tiles.exit_code, 2);
  EXPECT_EQ(no_tiles.err, "tilec: error: --tiles 0: must be an integer from 1 to 1472\n");
  const TilecRun siglip = run_tilec("bench --workload siglip-mlp --tokens 5 --out " + out);
  EXPECT_EQ(siglip.exit_code, 2);
  EXPECT_EQ(siglip.err, "tilec: error: --tokens 5: applies to workload mlp only, not siglip-mlp\n");
}

// Every point on each machine: names carry the machine, and twice the
// exchange bandwidth halves an active tile's exchange cycles.
TEST(BenchCommand, VaryCrossesTheMachinesWithTheGrid) {
  const std::string out = fresh_directory("bench_vary");
  const TilecRun run = run_tilec(kTinyWorkload + " --batches 1,2 --budgets default --vary exchange-bytes=4,8 --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(file_text(out + "/report.json"));
  ASSERT_EQ(report.size(), 4u);
  EXPECT_EQ(report[0]["case"], "fp8-b1-n1-default@exchange-bytes=4");
  EXPECT_EQ(report[1]["case"], "fp8-b1-n1-default@exchange-bytes=8");
  EXPECT_EQ(report[0]["target"], "ipu21:16");
  EXPECT_EQ(report[1]["target"], "ipu21:tiles=16,exchange-bytes=8");
  for (std::size_t i = 0; i < report.size(); i += 2) {
    EXPECT_EQ(report[i]["status"], "pass");
    EXPECT_EQ(report[i + 1]["status"], "pass");
    EXPECT_LT(report[i + 1]["exchangeCycles"].get<double>(), report[i]["exchangeCycles"].get<double>());
    EXPECT_LE(report[i + 1]["cycles"].get<double>(), report[i]["cycles"].get<double>());
  }
  EXPECT_THAT(run.out, HasSubstr("## Machines"));
  EXPECT_THAT(run.out, ::testing::ContainsRegex("\\| fp8-b1-n1-default \\| [0-9,]+ \\| [0-9,]+ \\| [0-9,]+ \\| [0-9,]+ \\| -[0-9.]+% \\| -[0-9.]+% \\|"));
  EXPECT_THAT(file_text(out + "/report.md"), HasSubstr("| point | exchange-bytes=4 cycles | exchange | exchange-bytes=8 cycles |"));
  // --targets: each machine named by its spelling; an override list stays whole.
  const std::string two = fresh_directory("bench_targets");
  const TilecRun targets = run_tilec("bench --workload mlp --tokens 40 --width 32 --hidden 64 --no-profiles --batches 1 "
                                     "--budgets default --targets ipu21:16,ipu21:tiles=16,sync-cycles=1200 --out " + two);
  ASSERT_EQ(targets.exit_code, 0) << targets.err;
  const nlohmann::json both = nlohmann::json::parse(file_text(two + "/report.json"));
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[1]["case"], "fp8-b1-n1-default@ipu21:tiles=16,sync-cycles=1200");
  EXPECT_GT(both[1]["cycles"].get<double>(), both[0]["cycles"].get<double>());
}

const std::string kTinyTower = "bench --workload vit --tiles 16 --batches 1 --no-profiles";

// The small ViT tower, one and two layers: a case per count, named by it,
// with every key an MLP case has and its layers; the default budget alone.
TEST(BenchCommand, RunsTheTowerByLayersWithTheMlpKeys) {
  const std::string out = fresh_directory("bench_tower");
  const TilecRun run = run_tilec(kTinyTower + " --layers 1,2 --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(file_text(out + "/report.json"));
  ASSERT_EQ(report.size(), 2u);
  const std::string mlp_out = fresh_directory("bench_tower_mlp");
  ASSERT_EQ(run_tilec(kTinyWorkload + " --batches 1 --budgets default --out " + mlp_out).exit_code, 0);
  const std::set<std::string> mlp_keys = keys_of(nlohmann::json::parse(file_text(mlp_out + "/report.json")).at(0));
  for (std::size_t i = 0; i < 2; ++i) {
    const nlohmann::json& tower = report[i];
    EXPECT_EQ(keys_of(tower), mlp_keys);
    EXPECT_EQ(tower["case"], fmt::format("fp8-b1-l{}-default", i + 1));
    EXPECT_EQ(tower["status"], "pass");
    EXPECT_EQ(tower["layers"], i + 1);
    EXPECT_EQ(tower["head"], true);
    EXPECT_TRUE(tower["blocks"].is_null());
    EXPECT_EQ(tower["batch"], 1);
    EXPECT_EQ(tower["budget_kib"], 0);
    EXPECT_EQ(tower["workload"], fmt::format("vit 16x32 layers {}", i + 1));
    EXPECT_GT(tower["cycles"].get<std::uint64_t>(), 0u);
    EXPECT_FALSE(tower["stages"].empty());
    EXPECT_GT(tower["compileSeconds"].get<double>(), 0.0);
  }
  EXPECT_THAT(file_text(out + "/report.md"), HasSubstr("| fp8-b1-l1-default | pass | "));
  EXPECT_THAT(run.out, HasSubstr("| fp8-b1-l2-default | pass | "));
  EXPECT_THAT(run.out, HasSubstr("2 cases: 2 run, 0 kept from an earlier sweep; "));
}

// --width and --hidden as `run` takes them; the workload's own layers by
// default; --budgets as given.
TEST(BenchCommand, SizesTheToyTowerAndItsLayer) {
  const std::string out = fresh_directory("bench_tower_sized");
  const TilecRun run =
      run_tilec(kTinyTower + " --width 32 --hidden 48 --precisions fp16 --budgets default,64 --quiet --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json towers = nlohmann::json::parse(file_text(out + "/report.json"));
  ASSERT_EQ(towers.size(), 2u);
  EXPECT_EQ(towers[0]["case"], "fp16-b1-l2-default");
  EXPECT_EQ(towers[1]["case"], "fp16-b1-l2-64k");
  EXPECT_EQ(towers[1]["budget_kib"], 64);
  EXPECT_EQ(towers[0]["workload"], "vit 32x48 layers 2");
  const std::string layer_out = fresh_directory("bench_tower_layer");
  const TilecRun layer = run_tilec("bench --workload vit-layer --tiles 16 --batches 1,2 --no-profiles --quiet --out " +
                                   layer_out);
  ASSERT_EQ(layer.exit_code, 0) << layer.err;
  const nlohmann::json cases = nlohmann::json::parse(file_text(layer_out + "/report.json"));
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[1]["case"], "fp8-b2-default");
  EXPECT_TRUE(cases[1]["layers"].is_null());
  EXPECT_EQ(cases[1]["workload"], "vit-layer 16x32");
}

// Resuming keeps a tower case only for the same layers and head: other
// --layers are other cases, and --no-head runs the same names again.
TEST(BenchCommand, ChangedLayersOrHeadRunsAgain) {
  const std::string out = fresh_directory("bench_tower_resume");
  ASSERT_EQ(run_tilec(kTinyTower + " --layers 1 --out " + out).exit_code, 0);
  const TilecRun more = run_tilec(kTinyTower + " --layers 1,2 --out " + out);
  ASSERT_EQ(more.exit_code, 0) << more.err;
  EXPECT_THAT(more.out, HasSubstr("2 cases: 1 run, 1 kept from an earlier sweep; "));
  EXPECT_THAT(more.err, HasSubstr("bench [1/2] fp8-b1-l1-default: finished earlier (pass"));
  const TilecRun headless = run_tilec(kTinyTower + " --layers 1,2 --no-head --out " + out);
  ASSERT_EQ(headless.exit_code, 0) << headless.err;
  EXPECT_THAT(headless.out, HasSubstr("2 cases: 2 run, 0 kept from an earlier sweep; "));
  EXPECT_THAT(headless.err, HasSubstr("bench [2/2] fp8-b1-l2-default: found a case of vit 16x32 layers 2 on "
                                      "ipu21:16: running again"));
  const nlohmann::json report = nlohmann::json::parse(file_text(out + "/report.json"));
  EXPECT_EQ(report[1]["head"], false);
  EXPECT_EQ(report[1]["workload"], "vit 16x32 layers 2 no head");
  EXPECT_THAT(report[1]["key"]["options"].get<std::string>(), HasSubstr(", layers 2, no head"));
  const TilecRun again = run_tilec(kTinyTower + " --layers 1,2 --no-head --quiet --out " + out);
  EXPECT_THAT(again.out, HasSubstr("2 cases: 0 run, 2 kept from an earlier sweep; "));
}

// --fp16-partials reaches every case: its name and its key say so.
TEST(BenchCommand, Fp16PartialsNameTheirCases) {
  const std::string out = fresh_directory("bench_fp16_partials");
  const TilecRun run = run_tilec(kTinyWorkload + " --batches 1 --budgets default --fp16-partials --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("fp8-b1-n1-default-fp16-partials"));
  const nlohmann::json report = nlohmann::json::parse(file_text(out + "/report.json"));
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0]["case"], "fp8-b1-n1-default-fp16-partials");
  EXPECT_THAT(report[0]["key"]["options"].get<std::string>(), HasSubstr(", fp16 partial sums anywhere"));
}

// A flag the workload does not take: one line naming it, exit 2, nothing run.
TEST(BenchCommand, FlagsTheWorkloadDoesNotTakeExitTwo) {
  const std::string out = fresh_directory("bench_tower_flags");
  const auto expect_error = [&](const std::string& flags, const std::string& message) {
    const TilecRun run = run_tilec("bench --tiles 16 --quiet --out " + out + " " + flags);
    EXPECT_EQ(run.exit_code, 2) << flags;
    EXPECT_EQ(run.err, "tilec: error: " + message + "\n") << flags;
    EXPECT_EQ(run.out, "") << flags;
  };
  expect_error("--workload vit --blocks 1,2", "--blocks 2: applies to workload siglip-mlp or mlp only, not vit");
  expect_error("--workload mlp --layers 2", "--layers 2: applies to workload siglip-vit or vit only, not mlp");
  expect_error("--workload vit-layer --layers 2",
               "--layers 2: applies to workload siglip-vit or vit only, not vit-layer");
  expect_error("--workload siglip-vit-layer --no-head",
               "--no-head: applies to workload siglip-vit or vit only, not siglip-vit-layer");
  expect_error("--workload siglip-mlp --no-head",
               "--no-head: applies to workload siglip-vit or vit only, not siglip-mlp");
  expect_error("--workload siglip-vit --width 64",
               "--width 64: applies to workload mlp, vit or vit-layer only, not siglip-vit");
  expect_error("--workload vit --bias", "--bias: applies to workload siglip-mlp or mlp only, not vit");
  expect_error("--workload vit --tokens 4", "--tokens 4: applies to workload mlp only, not vit");
  expect_error("--workload vit --layers 1,0", "--layers 0: must be an integer >= 1");
  EXPECT_FALSE(std::filesystem::exists(out + "/report.json"));
}

}  // namespace
}  // namespace tilec::cli_testing
