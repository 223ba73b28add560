// Per-op attribution end to end: the compiler names each task's graph ops in
// op symbols, the simulator tags each worker run and send with its op, and
// `tilec profile query|compare` total them by op.
#include "profile_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <sstream>

namespace tilec::profile {
namespace {

using testing::run_tilec;
using ::testing::HasSubstr;

std::string temp_dir(const std::string& name) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "/tilec_ops_" + test->name() + "_" + name;
}

// `tilec run ARGUMENTS --profile DIR`, then the profile's query as JSON.
nlohmann::json run_and_query(const std::string& arguments, const std::string& dir, const std::string& name) {
  const testing::CommandResult run = run_tilec(arguments + " --profile " + dir, "run_" + name);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const testing::CommandResult query = run_tilec("profile query " + dir + "/profile.tprof --json", "query_" + name);
  EXPECT_EQ(query.exit_code, 0) << query.err;
  return nlohmann::json::parse(query.out);
}

// The graph ops the query's op names cover ("fc1+gelu" covers fc1 and gelu);
// checks that the ops' worker-cycles add up to the run's.
std::set<std::string> covered_ops(const nlohmann::json& report) {
  std::set<std::string> names;
  std::uint64_t worker_cycles = 0;
  for (const nlohmann::json& op : report["ops"]) {
    worker_cycles += op["worker_cycles"].get<std::uint64_t>();
    std::stringstream joined(op["name"].get<std::string>());
    for (std::string name; std::getline(joined, name, '+');) names.insert(name);
  }
  EXPECT_EQ(worker_cycles, report["worker_cycles"].get<std::uint64_t>());
  return names;
}

TEST(OpAttribution, EncoderBlockNamesEachOfItsOps) {
  const nlohmann::json report = run_and_query(
      fmt::format("run '{}/examples/encoder_block.json' --seed 1 --target ipu21:16", TILEC_SOURCE_DIR), temp_dir("enc"),
      "enc");
  const std::set<std::string> names = covered_ops(report);
  for (const char* op : {"q", "k", "v", "attention", "o", "fc1", "fc2", "ln1", "ln2"})
    EXPECT_TRUE(names.contains(op)) << op << " missing from " << ::testing::PrintToString(names);
  EXPECT_FALSE(names.contains("")) << "a worker served no op";
}

// A repeat's body is compiled once; the profile's schedule tells its
// iterations apart: each has the body's supersteps and the same ops, and
// they and the supersteps outside the repeat add up to the run.
TEST(OpAttribution, RepeatIterationsAreToldApart) {
  const nlohmann::json report =
      run_and_query("run --workload vit --no-head --layers 3 --target ipu21:16", temp_dir("vit"), "vit");
  const nlohmann::json& repeat = report["schedule"]["repeat"];
  ASSERT_TRUE(repeat.is_object()) << report["schedule"].dump();
  EXPECT_EQ(repeat["name"], "layers");
  EXPECT_EQ(repeat["count"], 3);
  const std::uint64_t body = repeat["last_superstep"].get<std::uint64_t>() - repeat["first_superstep"].get<std::uint64_t>() + 1;
  EXPECT_EQ(report["supersteps"].size(), report["schedule"]["run_supersteps"].get<std::size_t>());
  ASSERT_EQ(report["iterations"].size(), 3u);
  std::uint64_t outside = 0, inside = 0;
  for (const nlohmann::json& step : report["supersteps"])
    if (step["place"]["iteration"].get<int>() < 0) outside += step["worker_cycles"].get<std::uint64_t>();
  for (const nlohmann::json& iteration : report["iterations"]) {
    EXPECT_EQ(iteration["supersteps"], body);
    std::uint64_t by_op = 0;
    std::set<std::string> names;
    for (const nlohmann::json& op : iteration["ops"]) {
      by_op += op["worker_cycles"].get<std::uint64_t>();
      names.insert(op["name"].get<std::string>());
    }
    EXPECT_EQ(by_op, iteration["worker_cycles"].get<std::uint64_t>());
    EXPECT_TRUE(names.contains("layers/attention")) << ::testing::PrintToString(names);
    inside += iteration["worker_cycles"].get<std::uint64_t>();
  }
  EXPECT_EQ(inside + outside, report["worker_cycles"].get<std::uint64_t>());
}

// The acceptance run on the full chip: the MLP block at batch 1, at
// the default budget and at 64 KiB, and what the budget cost by op.
TEST(OpAttribution, SiglipMlpOpsAndWhatTheBudgetCosts) {
  const std::string wide = temp_dir("default"), narrow = temp_dir("64k");
  const nlohmann::json report = run_and_query("run --workload siglip-mlp --batch 1", wide, "default");
  const std::set<std::string> names = covered_ops(report);
  for (const char* op : {"gemm1", "gelu", "gemm2"})
    EXPECT_TRUE(names.contains(op)) << op << " missing from " << ::testing::PrintToString(names);
  std::uint64_t macs = 0;
  for (const nlohmann::json& op : report["ops"]) macs += op["amp_macs"].get<std::uint64_t>();
  EXPECT_EQ(macs, report["amp_macs"].get<std::uint64_t>());

  run_and_query("run --workload siglip-mlp --batch 1 --budget-kib 64", narrow, "64k");
  const testing::CommandResult compare =
      run_tilec("profile compare " + wide + "/profile.tprof " + narrow + "/profile.tprof", "compare");
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_THAT(compare.out, HasSubstr("A fp8-b1-n1-default\nB fp8-b1-n1-64k\n"));
  EXPECT_THAT(compare.out, ::testing::ContainsRegex("\nops +A +B +B - A +B / A"));
  EXPECT_THAT(compare.out, ::testing::ContainsRegex("\ngemm1 +[0-9,]+ +[0-9,]+ +[-+][0-9,]+ +[0-9.]+x\n"));
  EXPECT_THAT(compare.out, ::testing::ContainsRegex("\ncycles +[0-9,]+ +[0-9,]+ +[-+][0-9,]+ +[0-9.]+x\n"));
}

}  // namespace
}  // namespace tilec::profile
