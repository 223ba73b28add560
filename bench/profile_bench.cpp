// The profile tools on a full-chip run: siglip-mlp (batch 1, FP8) compiled
// with the default options and simulated once (1,472 tiles, about 66K
// cycles and 30 events per tile), then rendered to HTML, exported as a
// Chrome trace, summarised, and written and read as a profile file.
// Target: render_html well under a second.
#include "compiler/compile.h"
#include "graph/cost.h"
#include "graph/workloads.h"
#include "profile/profile.h"
#include "profile/profile_file.h"
#include "profile/summary.h"
#include "sim/device.h"

#include <benchmark/benchmark.h>

namespace {

using namespace tilec;

const profile::ProfileData& full_chip_profile() {
  static const profile::ProfileData data = [] {
    const graph::Graph graph = graph::build_workload("siglip-mlp", {});
    const compiler::CompileOptions options;
    const package::Package package = compiler::compile(graph, options).package;
    sim::Device device(package, options.machine);
    for (const auto& [name, tensor] : graph::generate_data(graph, 7)) device.write(name, tensor);
    const sim::RunResult run = device.run();
    return profile::make_profile("fp8-b1-n1-default", package, options.machine, run,
                                 static_cast<double>(graph::graph_macs(graph)),
                                 options.machine.amp_macs_per_cycle(AmpPrecision::Fp8));
  }();
  return data;
}

std::int64_t event_count(const profile::ProfileData& data) {
  std::int64_t events = 0;
  for (const auto& tile : data.events.tiles) events += static_cast<std::int64_t>(tile.size());
  return events;
}

void BM_RenderHtmlFullChip(benchmark::State& state) {
  const profile::ProfileData& data = full_chip_profile();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string html = profile::render_html(data).html;
    bytes = html.size();
    benchmark::DoNotOptimize(html);
  }
  state.counters["html_bytes"] = static_cast<double>(bytes);
  state.counters["events"] = static_cast<double>(event_count(data));
}
BENCHMARK(BM_RenderHtmlFullChip)->Unit(benchmark::kMillisecond);

// Arg 0: a track per tile; 1: per tile column.
void BM_ChromeTraceFullChip(benchmark::State& state) {
  const profile::ProfileData& data = full_chip_profile();
  profile::ChromeTraceOptions options;
  options.tracks = state.range(0) ? profile::ChromeTraceOptions::Tracks::Columns : profile::ChromeTraceOptions::Tracks::Tiles;
  std::size_t bytes = 0;
  for (auto _ : state) {
    profile::ChromeTrace trace = profile::chrome_trace(data, options);
    bytes = trace.json.size();
    benchmark::DoNotOptimize(trace);
  }
  state.counters["trace_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ChromeTraceFullChip)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_SummarizeFullChip(benchmark::State& state) {
  const profile::ProfileData& data = full_chip_profile();
  for (auto _ : state) benchmark::DoNotOptimize(profile::summarize(data));
}
BENCHMARK(BM_SummarizeFullChip)->Unit(benchmark::kMillisecond);

void BM_EncodeProfileFileFullChip(benchmark::State& state) {
  const profile::ProfileData& data = full_chip_profile();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::vector<std::uint8_t> file = profile::encode_profile_file(data);
    bytes = file.size();
    benchmark::DoNotOptimize(file);
  }
  state.counters["file_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_EncodeProfileFileFullChip)->Unit(benchmark::kMillisecond);

void BM_DecodeProfileFileFullChip(benchmark::State& state) {
  const std::vector<std::uint8_t> file = profile::encode_profile_file(full_chip_profile());
  for (auto _ : state) benchmark::DoNotOptimize(profile::decode_profile_file(file, "bench.tprof"));
}
BENCHMARK(BM_DecodeProfileFileFullChip)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
