// Host reference speed on the SigLIP So400m MLP block: its two FP32 GEMMs at
// batch 1 and 4 ([729b x 1152] x [1152 x 4304] and [729b x 4304] x [4304 x 1152]),
// the whole block on the reference interpreter, and the workload data
// generator filling a weight tensor.
#include "graph/cost.h"
#include "graph/random.h"
#include "graph/reference.h"
#include "graph/workloads.h"
#include "numerics/reference_ops.h"
#include "support/parallel.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

namespace {

constexpr std::int64_t kTokens = 729, kWidth = 1152, kMlpWidth = 4304;

std::vector<float> bench_values(std::size_t count) {
  std::vector<float> values(count);
  std::uint32_t state = 12345;
  for (float& value : values) {
    state = state * 1664525u + 1013904223u;
    value = static_cast<float>(state >> 8) * 0x1p-24f - 0.5f;
  }
  return values;
}

void run_gemm(benchmark::State& state, std::int64_t k, std::int64_t n) {
  const std::int64_t m = kTokens * state.range(0);
  const auto a = bench_values(static_cast<std::size_t>(m * k));
  const auto b = bench_values(static_cast<std::size_t>(k * n));
  std::vector<float> c(static_cast<std::size_t>(m * n));
  for (auto _ : state) {
    tilec::reference::gemm(a, b, c, m, n, k);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(m * n * k),
                                                 benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}

// x @ W1: [729b, 1152] x [1152, 4304].
void BM_MlpUpProjection(benchmark::State& state) { run_gemm(state, kWidth, kMlpWidth); }
// h @ W2: [729b, 4304] x [4304, 1152].
void BM_MlpDownProjection(benchmark::State& state) { run_gemm(state, kMlpWidth, kWidth); }

BENCHMARK(BM_MlpUpProjection)->ArgName("batch")->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MlpDownProjection)->ArgName("batch")->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

// Seeded Gaussian data: one W1 (1152 x 4304 = 4.96M samples), and 10M.
// The whole SigLIP MLP on the host reference interpreter, FP32, as
// `tilec reference --workload siglip-mlp --batch N --precision fp32` runs it.
void BM_SiglipMlpReference(benchmark::State& state) {
  tilec::graph::MlpOptions options;
  options.batch = state.range(0);
  options.precision = tilec::graph::Precision::Fp32;
  const tilec::graph::Graph graph = tilec::graph::build_workload("siglip-mlp", options);
  const tilec::graph::TensorMap data = tilec::graph::generate_data(graph, 0);
  for (auto _ : state) benchmark::DoNotOptimize(tilec::graph::run_reference(graph, data));
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(tilec::graph::graph_macs(graph)),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SiglipMlpReference)->ArgName("batch")->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_GaussianSamples(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(tilec::graph::gaussian(1, "W1", count, 0.0625f));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

BENCHMARK(BM_GaussianSamples)->Arg(kWidth * kMlpWidth)->Arg(10'000'000)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  tilec::set_thread_count(0);  // every core, or TILEC_THREADS
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
