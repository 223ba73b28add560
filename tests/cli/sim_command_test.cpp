// `tilec sim`, run as the user runs it: a package file and a tensor
// directory in, output tensors and the run's figures out; faults and bad
// arguments as one-line errors with their exit codes.
#include "../sim/sim_test_support.h"
#include "graph/npy.h"
#include "package/package_file.h"

#include <fmt/format.h>
#include "tilec_process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <unistd.h>

namespace tilec::sim {
namespace {

using namespace testing;

struct CommandResult {
  int exit_code;
  std::string output;  // stdout, then stderr
};

CommandResult run_tilec(const std::string& arguments) {
  const tilec::cli_testing::TilecRun run = tilec::cli_testing::run_tilec(arguments);
  return {run.exit_code, run.out + run.err};
}

std::filesystem::path scratch(const std::string& name) {
  auto path = std::filesystem::temp_directory_path() / ("tilec_sim_cli_" + std::to_string(getpid()) + "_" + name);
  std::filesystem::remove_all(path);
  return path;
}

// y = x * w, four FP32 lanes, on tile 1 of two.
package::Package multiply_package() {
  Code code;
  code.set(1, kInterleavedData);
  code.main(Opcode::Ld128, {0, 1, 0});
  code.main(Opcode::Ld128, {4, 1, 16});
  code.flt(Opcode::F32v4mul, {8, 0, 4});
  code.main(Opcode::St128, {8, 1, 32});
  code.main(Opcode::Halt);
  package::Package package = package_of(2, package::TileImage{});
  package.tiles[1] = image(code);
  package.bindings = {dense_binding("x", package::BindingRole::Input, f32_type({4}), 1, kInterleavedData),
                      dense_binding("w", package::BindingRole::Parameter, f32_type({4}), 1, kInterleavedData + 16),
                      dense_binding("y", package::BindingRole::Output, f32_type({4}), 1, kInterleavedData + 32)};
  return package;
}

TEST(SimCommand, RunsAPackageOnTensorsFromADirectory) {
  const auto file = scratch("multiply.tpk");
  package::write_package(multiply_package(), file.string());
  const auto inputs = scratch("inputs"), outputs = scratch("outputs");
  std::vector<float> x = {1.5f, -2.0f, 3.0f, 0.25f}, w = {2.0f, 2.0f, -1.0f, 8.0f};
  graph::write_tensor_dir(inputs.string(), {{"x", graph::Tensor::from_floats(f32_type({4}), x)}}, graph::TensorRole::Input);
  graph::write_tensor_dir(inputs.string(), {{"w", graph::Tensor::from_floats(f32_type({4}), w)}}, graph::TensorRole::Parameter);
  CommandResult run = run_tilec(fmt::format("sim {} --inputs {} --outputs {} --json", file.string(),
                                            inputs.string(), outputs.string()));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  nlohmann::json report = nlohmann::json::parse(run.output);
  EXPECT_EQ(report["target"], "ipu21:2");
  EXPECT_EQ(report["cycles"], 36);
  EXPECT_EQ(report["bundles"], 7);
  graph::TensorMap out = graph::read_tensor_dir(outputs.string(), {{"y", f32_type({4})}});
  EXPECT_EQ(out.at("y").to_floats(), (std::vector<float>{3.0f, -4.0f, -3.0f, 2.0f}));

  CommandResult text = run_tilec(fmt::format("sim {} --inputs {}", file.string(), inputs.string()));
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_EQ(text.output.rfind("36 cycles on ipu21:2 (0 syncs): 7 bundles", 0), 0u) << text.output;
  for (const auto& path : {file, inputs, outputs}) std::filesystem::remove_all(path);
}

TEST(SimCommand, FaultsAndBadArgumentsAreOneLineErrors) {
  package::Package faulty = multiply_package();
  Code code;
  code.set(1, kInterleavedData + 8);
  code.main(Opcode::Ld128, {0, 1, 0});
  faulty.tiles[1] = image(code);
  const auto file = scratch("faulty.tpk");
  package::write_package(faulty, file.string());
  const auto inputs = scratch("inputs");
  graph::write_tensor_dir(inputs.string(), {{"x", graph::Tensor::zeros(f32_type({4}))}, {"w", graph::Tensor::zeros(f32_type({4}))}},
                          graph::TensorRole::Input);
  CommandResult fault = run_tilec(fmt::format("sim {} --inputs {}", file.string(), inputs.string()));
  EXPECT_EQ(fault.exit_code, 1);
  EXPECT_EQ(fault.output,
            "tilec: error: tile 1, supervisor, pc 0x4c010 (ld128 $a0:3, $m1, 0): misaligned 128-bit load from 0x80008\n");

  CommandResult missing = run_tilec(fmt::format("sim {}", file.string()));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.output, "tilec: error: --inputs: the package needs 2 tensors (x, w): give --inputs DIR\n");
  CommandResult target = run_tilec(fmt::format("sim {} --inputs {} --target ipu21:3", file.string(), inputs.string()));
  EXPECT_EQ(target.exit_code, 2);
  EXPECT_EQ(target.output, "tilec: error: package: has 2 tile images but target 'ipu21:3' has 3 tiles\n");
  for (const auto& path : {file, inputs}) std::filesystem::remove_all(path);
}

// The watchdog restarts at every sync: only the run's cycle limit stops a
// program that syncs forever.
TEST(SimCommand, MaxCyclesStopsAProgramThatSyncsForever) {
  Code code;
  int top = code.label();
  code.bind(top);
  code.main(Opcode::Sync);
  code.branch(ins(Opcode::Br, {0}), 0, top);
  const auto file = scratch("forever.tpk");
  package::write_package(package_of(1, image(code)), file.string());
  CommandResult run = run_tilec(fmt::format("sim {} --max-cycles 5000", file.string()));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.output.rfind("tilec: error: tile 0, supervisor, pc 0x4c008 (br .-1): cycle limit: the run reached "
                             "cycle ",
                             0),
            0u)
      << run.output;
  EXPECT_NE(run.output.find(" without halting (the limit is 5000 cycles, --max-cycles)\n"), std::string::npos)
      << run.output;
  std::filesystem::remove_all(file);
}

}  // namespace
}  // namespace tilec::sim
