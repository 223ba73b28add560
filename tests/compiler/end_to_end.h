// Compile, simulate, compare: the harness of the end-to-end tests.
#pragma once

#include "compiler/compile.h"
#include "graph/reference.h"
#include "graph/workloads.h"
#include "sim/device.h"
#include "target/machine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace tilec::compiler {

struct Outcome {
  double max_error = 0;
  std::int64_t bad = 0;
  std::uint64_t cycles = 0;
  std::uint32_t most_memory = 0;  // the simulator's largest per-tile use
  // Output elements whose bits differ from the plan-order reference.
  std::int64_t differing = 0;
  CompileResult compiled;
};

inline Outcome compile_and_run(const graph::Graph& graph, CompileOptions options, const graph::DataRules& rules = {}) {
  Outcome outcome;
  outcome.compiled = compile(graph, options);
  // The data the workload chose its FP8 scales for (MlpOptions::seed).
  graph::TensorMap data = graph::generate_data(graph, 0, rules);
  sim::Device device(outcome.compiled.package, options.machine);
  for (const auto& [name, tensor] : data) device.write(name, tensor);
  sim::RunResult run = device.run();
  outcome.cycles = run.cycles;
  for (const sim::TileStats& tile : run.tiles) outcome.most_memory = std::max(outcome.most_memory, tile.memory_bytes);
  graph::ReferenceResult reference = graph::run_reference(graph, data);
  graph::TensorMap outputs;
  for (const auto& [name, expected] : reference.outputs) {
    graph::Tensor actual = outputs.emplace(name, device.read(name)).first->second;
    std::vector<float> want = expected.to_floats(), got = actual.to_floats();
    for (std::size_t i = 0; i < want.size(); ++i) {
      double error = std::fabs(static_cast<double>(got[i]) - want[i]);
      if (!(error <= 0.03 + 0.05 * std::fabs(want[i]))) ++outcome.bad;
      if (!(error <= outcome.max_error)) outcome.max_error = std::isnan(error) ? INFINITY : error;
    }
  }
  const graph::SummationOrder& order = outcome.compiled.package.summation_order;
  outcome.differing = graph::differing_elements(
      outputs, order.empty() ? reference.outputs : graph::run_reference(graph, data, order).outputs);
  return outcome;
}

inline graph::MlpOptions small_mlp(graph::Precision precision) {
  graph::MlpOptions options;
  options.precision = precision;
  options.tokens = 40;
  options.width = 32;
  options.hidden = 64;
  return options;
}

// A repeat of FP16 MLP blocks: 4 x width x hidden bytes of weights a block.
inline graph::Graph fp16_blocks(std::int64_t blocks, std::int64_t tokens, std::int64_t width, std::int64_t hidden,
                                bool bias = false) {
  graph::MlpOptions options;
  options.precision = graph::Precision::Fp16;
  options.blocks = blocks;
  options.tokens = tokens;
  options.width = width;
  options.hidden = hidden;
  options.bias = bias;
  return graph::build_workload("mlp", options);
}

inline CompileOptions on_tiles(std::uint32_t tiles) {
  CompileOptions options;
  options.machine = ipu21_cut(tiles);
  return options;
}

inline void expect_matches(const graph::Graph& graph, const CompileOptions& options) {
  Outcome outcome = compile_and_run(graph, options);
  EXPECT_EQ(outcome.bad, 0) << "max error " << outcome.max_error << " with " << outcome.compiled.plan;
  EXPECT_EQ(outcome.differing, 0) << "elements that differ from the plan-order reference with "
                                  << outcome.compiled.plan;
  EXPECT_GT(outcome.cycles, 0u);
  // The memory the simulator sees used is what the compiler planned, to the byte.
  EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << outcome.compiled.plan;
}

}  // namespace tilec::compiler
