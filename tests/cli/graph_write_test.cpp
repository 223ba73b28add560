// `tilec graph write`: a built-in workload as a graph file that reads back
// as the workload's graph, and with --params its own data, which `tilec run
// FILE --inputs DIR` runs as `tilec run --workload` does.
#include "bench/workload_data.h"
#include "graph/equality.h"
#include "graph/json_format.h"
#include "graph/npy.h"
#include "graph/workloads.h"
#include "tilec_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace tilec::cli_testing {
namespace {

using ::testing::HasSubstr;

struct Written {
  std::string name;   // the workload
  std::string flags;  // its options, as given to graph write
  graph::MlpOptions options;
};

// Each workload with options that change its graph: blocks, biases, layers,
// no head, sizes, batch, precision, and a seed (which picks FP8 scales).
std::vector<Written> workloads_to_write() {
  auto with = [](auto&& set) {
    graph::MlpOptions options;
    set(options);
    return options;
  };
  return {
      {"mlp", "--blocks 3 --bias --tokens 4", with([](auto& o) { o.blocks = 3, o.bias = true, o.tokens = 4; })},
      {"mlp", "--fp8-scale -5 --precision fp8", with([](auto& o) { o.fp8_scale = -5; })},
      {"siglip-mlp", "--precision fp16 --batch 2", with([](auto& o) { o.precision = graph::Precision::Fp16, o.batch = 2; })},
      {"vit", "--seed 3", with([](auto& o) { o.seed = 3; })},
      {"vit", "--layers 3 --no-head --width 32 --hidden 48 --precision fp32",
       with([](auto& o) { o.layers = 3, o.head = false, o.width = 32, o.hidden = 48, o.precision = graph::Precision::Fp32; })},
      {"vit-layer", "--batch 2", with([](auto& o) { o.batch = 2; })},
      {"siglip-vit", "--precision fp16", with([](auto& o) { o.precision = graph::Precision::Fp16; })},
      {"siglip-vit-layer", "--precision fp16", with([](auto& o) { o.precision = graph::Precision::Fp16; })},
  };
}

TEST(GraphWrite, EveryWorkloadReadsBackAsItsGraph) {
  const std::string dir = fresh_directory("graph_write_round_trip");
  int written = 0;
  for (const Written& workload : workloads_to_write()) {
    const std::string file = fmt::format("{}/{}_{}.json", dir, workload.name, written++);
    const TilecRun run = run_tilec(fmt::format("graph write --workload {} {} -o {}", workload.name, workload.flags, file));
    ASSERT_EQ(run.exit_code, 0) << workload.flags << ": " << run.err;
    EXPECT_THAT(run.out, HasSubstr(" -> " + file + ": ")) << run.out;
    const graph::Graph built = graph::build_workload(workload.name, workload.options);
    EXPECT_EQ(graph::first_difference(graph::load_graph_file(file), built), "") << workload.name << " " << workload.flags;
  }
  // The seed reaches the graph: vit's FP8 scales differ between seeds 0 and 3.
  graph::MlpOptions seed3;
  seed3.seed = 3;
  EXPECT_NE(graph::first_difference(graph::build_workload("vit", {}), graph::build_workload("vit", seed3)), "");
}

std::map<std::string, graph::TensorType> source_types(const graph::Graph& graph) {
  std::map<std::string, graph::TensorType> types;
  for (const graph::Op* op : graph.inputs()) types.emplace(op->name, graph.type(op->results.at(0)));
  for (const graph::Op* op : graph.parameters()) types.emplace(op->name, graph.type(op->results.at(0)));
  return types;
}

TEST(GraphWrite, ParamsAreTheWorkloadsOwnData) {
  const std::string dir = fresh_directory("graph_write_params");
  const TilecRun run =
      run_tilec("graph write --workload vit-layer --batch 2 --seed 5 -o " + dir + "/layer.json --params " + dir + "/data");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("of data in " + dir + "/data"));
  graph::MlpOptions options;
  options.batch = 2;
  options.seed = 5;
  const bench::WorkloadData workload("vit-layer", options);
  const graph::Graph graph = graph::load_graph_file(dir + "/layer.json");
  const graph::TensorMap read = graph::read_tensor_dir(dir + "/data", source_types(graph));
  ASSERT_EQ(read.size(), workload.data().size());
  for (const auto& [name, tensor] : workload.data()) {
    ASSERT_TRUE(read.contains(name)) << name;
    EXPECT_EQ(read.at(name).type, tensor.type) << name;
    EXPECT_TRUE(read.at(name).bytes == tensor.bytes) << name << " differs from the workload's data";
  }
  // Its data rules matter: without them a weight would be drawn otherwise.
  EXPECT_FALSE(graph::generate_data(graph, 5).at("Wq").bytes == workload.data().at("Wq").bytes);
  const nlohmann::json manifest = nlohmann::json::parse(file_text(dir + "/data/manifest.json"));
  std::map<std::string, std::string> roles;
  for (const nlohmann::json& entry : manifest["tensors"]) roles[entry["name"]] = entry["role"];
  EXPECT_EQ(roles.at("x"), "input");
  EXPECT_EQ(roles.at("Wq"), "parameter");
  EXPECT_EQ(roles.size(), read.size());
}

// The written file with its data runs as the workload does: the same cycles
// and the same output bytes.
TEST(GraphWrite, RunsAsTheWorkloadRuns) {
  const std::string dir = fresh_directory("graph_write_run");
  ASSERT_EQ(run_tilec("graph write --workload vit -o " + dir + "/vit.json --params " + dir + "/data").exit_code, 0);
  const TilecRun file = run_tilec("run " + dir + "/vit.json --inputs " + dir + "/data --target ipu21:16 --json --outputs " +
                                  dir + "/file_out");
  const TilecRun workload = run_tilec("run --workload vit --target ipu21:16 --json --outputs " + dir + "/workload_out");
  ASSERT_EQ(file.exit_code, 0) << file.err;
  ASSERT_EQ(workload.exit_code, 0) << workload.err;
  const nlohmann::json file_report = nlohmann::json::parse(file.out), workload_report = nlohmann::json::parse(workload.out);
  EXPECT_EQ(file_report["status"], "pass");
  EXPECT_EQ(workload_report["status"], "pass");
  EXPECT_GT(file_report["cycles"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(file_report["cycles"], workload_report["cycles"]);
  const std::string embedding = file_text(dir + "/file_out/embedding.npy");
  EXPECT_FALSE(embedding.empty());
  EXPECT_TRUE(embedding == file_text(dir + "/workload_out/embedding.npy")) << "the outputs differ";
}

// A bad flag or path exits 2 with one line, and nothing is written.
TEST(GraphWrite, BadInputIsOneLineAndWritesNothing) {
  const std::string dir = fresh_directory("graph_write_errors");
  const std::string file = dir + "/g.json", params_file = dir + "/a_file";
  write_file(params_file, "x");
  for (const auto& [arguments, error] : std::vector<std::pair<std::string, std::string>>{
           {"-o " + file, "graph write: needs --workload NAME"},
           {"--workload vit", "--output: is required (see tilec graph write --help)"},
           {"--workload vit -o " + dir, "-o " + dir + ": is a folder, not a file"},
           {"--workload vit -o " + dir + "/none/g.json", "-o " + dir + "/none/g.json: there is no folder '" + dir +
                                                             "/none' to write it in"},
           {"--workload vit -o " + file + " --params " + params_file, "--params " + params_file + ": is a file, not a folder"},
           {"--workload nope -o " + file, "workload 'nope': unknown workload (workloads: siglip-mlp, mlp, siglip-vit, "
                                          "vit, siglip-vit-layer, vit-layer)"},
           {"--workload vit --blocks 2 -o " + file, "--blocks 2: applies to workload siglip-mlp or mlp only, not vit"},
           {"--workload vit --width 15 -o " + file, "workload: heads 2 do not divide width 15"},
           {"--workload vit --seed -1 -o " + file, "--seed -1: must be an integer >= 0"}}) {
    const TilecRun run = run_tilec("graph write " + arguments);
    EXPECT_EQ(run.exit_code, 2) << arguments;
    EXPECT_EQ(run.err, "tilec: error: " + error + "\n") << arguments;
    EXPECT_EQ(run.out, "") << arguments;
    EXPECT_FALSE(std::filesystem::exists(file)) << arguments << ": wrote the graph file";
  }
}

}  // namespace
}  // namespace tilec::cli_testing
