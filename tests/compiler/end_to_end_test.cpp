// Compile, simulate, compare: small graphs on small chips, every output
// element checked against the host reference.
#include "compiler/compile.h"
#include "graph/reference.h"
#include "graph/workloads.h"
#include "sim/device.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tilec::compiler {
namespace {

struct Outcome {
  double max_error = 0;
  std::int64_t bad = 0;
  std::uint64_t cycles = 0;
  CompileResult compiled;
};

Outcome compile_and_run(const graph::Graph& graph, CompileOptions options) {
  Outcome outcome;
  outcome.compiled = compile(graph, options);
  graph::TensorMap data = graph::generate_data(graph, 7);
  sim::Device device(outcome.compiled.package, options.machine);
  for (const auto& [name, tensor] : data) device.write(name, tensor);
  sim::RunResult run = device.run();
  outcome.cycles = run.cycles;
  graph::ReferenceResult reference = graph::run_reference(graph, data);
  for (const auto& [name, expected] : reference.outputs) {
    graph::Tensor actual = device.read(name);
    std::vector<float> want = expected.to_floats(), got = actual.to_floats();
    for (std::size_t i = 0; i < want.size(); ++i) {
      double error = std::fabs(static_cast<double>(got[i]) - want[i]);
      if (!(error <= 0.03 + 0.05 * std::fabs(want[i]))) ++outcome.bad;
      if (!(error <= outcome.max_error)) outcome.max_error = std::isnan(error) ? INFINITY : error;
    }
  }
  return outcome;
}

graph::MlpOptions small_mlp(graph::Precision precision) {
  graph::MlpOptions options;
  options.precision = precision;
  options.tokens = 40;
  options.width = 32;
  options.hidden = 64;
  return options;
}

TEST(EndToEnd, SmallFp8MlpMatchesTheReference) {
  graph::Graph graph = graph::build_workload("mlp", small_mlp(graph::Precision::Fp8));
  CompileOptions options;
  options.machine = ipu21_cut(16);
  Outcome outcome = compile_and_run(graph, options);
  for (const std::string& line : outcome.compiled.log) std::cerr << line << "\n";
  std::cerr << "cycles " << outcome.cycles << " max error " << outcome.max_error << "\n";
  EXPECT_EQ(outcome.bad, 0) << "max error " << outcome.max_error;
  EXPECT_GT(outcome.cycles, 0u);
}

}  // namespace
}  // namespace tilec::compiler
