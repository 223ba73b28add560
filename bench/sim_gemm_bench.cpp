// Simulator speed on the full chip: 1,472 tiles, each running an FP8 GEMM of
// 96 x 64 x 400 = 2,457,600 MACs on all six workers (tests/sim/gemm_program.h).
// Reports simulated bundles per host second and the AMP's MACs per cycle.
#include "../tests/sim/gemm_program.h"
#include "graph/tensor.h"
#include "sim/device.h"

#include <benchmark/benchmark.h>

#include <random>

namespace {

using namespace tilec;
using namespace tilec::sim;
using namespace tilec::sim::testing;

graph::Tensor random_codes(graph::TensorType type, std::uint32_t seed) {
  graph::Tensor tensor = graph::Tensor::zeros(std::move(type));
  std::mt19937 random(seed);
  for (std::uint8_t& code : tensor.bytes) code = static_cast<std::uint8_t>(random() & 0x3f);
  return tensor;
}

void BM_SimGemmFullChip(benchmark::State& state) {
  GemmShape shape;
  shape.tiles = ipu21().tiles;
  Device device(gemm_package(shape), ipu21());
  const std::int64_t m = GemmShape::kRows, n = shape.columns(), k = shape.k, tiles = shape.tiles;
  device.write("a", random_codes({{tiles, m, k}, {ElementType::F143, 0}}, 1));
  device.write("b", random_codes({{tiles, k, n}, {ElementType::F143, 0}}, 2));
  SimOptions options;
  options.record_profile = state.range(0) != 0;
  RunResult result;
  for (auto _ : state) result = device.run(options);

  double bundles = static_cast<double>(result.total_bundles());
  state.counters["bundles/s"] = benchmark::Counter(bundles, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["cycles"] = static_cast<double>(result.cycles);
  state.counters["MACs/cycle/tile"] =
      static_cast<double>(result.total_amp_macs()) / static_cast<double>(result.cycles) / shape.tiles;
}
BENCHMARK(BM_SimGemmFullChip)->ArgName("profile")->Arg(0)->Arg(1)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(2);

}  // namespace

BENCHMARK_MAIN();
