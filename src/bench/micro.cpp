#include "bench/micro.h"

#include "isa/assembler.h"
#include "package/program_package.h"
#include "sim/device.h"
#include "sim/fault.h"
#include "support/error.h"
#include "support/number_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <utility>

namespace tilec::bench {

namespace {

// Every file of bench/micro, for --micro-dir.
const char* const kBenchmarks[] = {
    "harness.s",  "worker_loop.s", "sync_cost.s",   "exchange_latency.s", "exchange_bandwidth.s", "amp_fp8.s",
    "amp_fp16.s", "amp_fp32.s",    "load_standard.s", "load_interleaved.s", "worker_start.s"};

using Words = std::array<std::uint32_t, 3>;

// One run of a benchmark: the simulator's result and the `measured` words
// each tile asked for left.
struct MicroRun {
  sim::RunResult result;
  std::vector<Words> words;
};

class MicroRunner {
 public:
  MicroRunner(const MicroSources& sources, const MachineModel& machine) : sources_(sources), machine_(machine) {}

  // Assembles `file` after its parameters, links it onto the first `tiles`
  // tiles, runs it, and reads the words of `read_tiles`.
  MicroRun run(const std::string& file, const std::vector<std::pair<std::string, std::int64_t>>& parameters,
               std::uint32_t tiles, const std::vector<std::uint32_t>& read_tiles) const {
    std::string text;
    for (const auto& [name, value] : parameters) text += fmt::format(".equ {}, {}\n", name, value);
    text += fmt::format(".include \"{}\"\n", file);
    const isa::FileReader reader = [this](const std::string& path) -> std::optional<std::string> {
      auto it = sources_.find(std::filesystem::path(path).filename().string());
      if (it == sources_.end()) return std::nullopt;
      return it->second;
    };
    isa::Object object = isa::assemble_text(text, "bench/micro/" + file + " parameters", reader);
    object.name = "bench/micro/" + file;
    const package::Package package = package::link_programs({object}, tiles, machine_);
    sim::Device device(package, machine_);
    sim::SimOptions options;
    options.record_profile = false;
    MicroRun run{device.run(options), {}};
    const auto& symbols = package.tiles[0].symbols;
    auto measured = std::find_if(symbols.begin(), symbols.end(),
                                 [](const package::Symbol& symbol) { return symbol.name == "measured"; });
    if (measured == symbols.end()) throw_bad_input("bench/micro/" + file, "no global 'measured' (harness.s)");
    for (std::uint32_t tile : read_tiles) {
      Words words{};
      for (std::uint32_t i = 0; i < words.size(); ++i) words[i] = device.read_word(tile, measured->address + 4 * i);
      run.words.push_back(words);
    }
    return run;
  }

 private:
  const MicroSources& sources_;
  const MachineModel& machine_;
};

// The counter's bracket around the timed part, less the one issue between
// words 0 and 1 (the cost of reading the counter itself).
std::int64_t bracket(const Words& words) {
  return std::int64_t(words[2]) - words[1] - (std::int64_t(words[1]) - words[0]);
}

void add_sync(const MicroRunner& runner, const MachineModel& machine, std::vector<MicroFigure>& figures) {
  const std::uint32_t last = machine.tiles - 1;
  const MicroRun run = runner.run("sync_cost.s", {}, machine.tiles, {0, last});
  for (std::size_t i = 0; i < run.words.size() && (i == 0 || last != 0); ++i)
    figures.push_back({"synchronization", fmt::format("global sync, seen by tile {} of {}", i == 0 ? 0 : last,
                                                      grouped(machine.tiles)),
                       "cycles", double(bracket(run.words[i])), double(machine.sync_cycles), "sync-cycles"});
}

void add_latency(const MicroRunner& runner, const MachineModel& machine, std::vector<MicroFigure>& figures) {
  const std::uint32_t columns = (machine.tiles + machine.tiles_per_column - 1) / machine.tiles_per_column;
  std::vector<std::uint32_t> peers;
  if (machine.tiles_per_column >= 2) peers.push_back(1);
  for (std::uint32_t distance : {1u, 2u, columns - 1})
    if (distance >= 1 && distance < columns) peers.push_back(distance * machine.tiles_per_column);
  if (machine.tiles < 2) peers.clear();
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  for (std::uint32_t peer : peers) {
    const MicroRun run = runner.run("exchange_latency.s", {{"PEER", peer}}, peer + 1, {0, peer});
    // The send issues one issue after word 1; the receiver's next issue
    // comes the cycle after the word landed.
    const std::int64_t send = std::int64_t(run.words[0][1]) + (std::int64_t(run.words[0][1]) - run.words[0][0]);
    const std::uint32_t distance = machine.column(peer) - machine.column(0);
    figures.push_back({"exchange latency",
                       fmt::format("one word, tile 0 to tile {} ({} column{})", peer, distance, distance == 1 ? "" : "s"),
                       "cycles", double(std::int64_t(run.words[1][2]) - send - 1),
                       double(machine.exchange_latency(0, peer)),
                       fmt::format("exchange-base-latency + exchange-hop-latency x {}", distance)});
  }
}

void add_bandwidth(const MicroRunner& runner, const MachineModel& machine, std::vector<MicroFigure>& figures) {
  constexpr std::int64_t kSmall = 4096, kLarge = 8192;
  const double rate = machine.exchange_bytes_per_cycle;
  if (machine.tiles < 4) return;  // the source declares the group of tiles 1-3
  for (const int multicast : {0, 1}) {
    const std::uint32_t receivers = multicast ? 3 : 1;
    std::vector<std::uint32_t> read(receivers + 1);
    for (std::uint32_t i = 0; i <= receivers; ++i) read[i] = i;
    const MicroRun small = runner.run("exchange_bandwidth.s", {{"BYTES", kSmall}, {"MULTICAST", multicast}},
                                      receivers + 1, read);
    const MicroRun large = runner.run("exchange_bandwidth.s", {{"BYTES", kLarge}, {"MULTICAST", multicast}},
                                      receivers + 1, read);
    auto slope = [&](int tile, int to) {
      const std::int64_t small_cycles = std::int64_t(small.words[tile][to]) - small.words[0][0];
      const std::int64_t large_cycles = std::int64_t(large.words[tile][to]) - large.words[0][0];
      return double(kLarge - kSmall) / double(large_cycles - small_cycles);
    };
    const std::string how = multicast ? "multicast to tiles 1-3" : "tile 0 to tile 1";
    figures.push_back({"exchange bandwidth", how + ", out of tile 0", "bytes a cycle", slope(0, 1), rate,
                       "exchange-bytes"});
    double together = 0, least = slope(1, 2);
    for (std::uint32_t tile = 1; tile <= receivers; ++tile) {
      together += slope(tile, 2);
      least = std::min(least, slope(tile, 2));
    }
    figures.push_back({"exchange bandwidth", how + (multicast ? ", into each receiver" : ", into tile 1"),
                       "bytes a cycle", least, rate, "exchange-bytes"});
    if (multicast)
      figures.push_back({"exchange bandwidth", how + ", into the 3 receivers together", "bytes a cycle", together,
                         3 * rate, "3 x exchange-bytes: one send lands on every receiver"});
  }
}

// Slope of a statistic against the bracket, between two counts.
template <typename Statistic>
double worker_slope(const MicroRunner& runner, const std::string& file, Statistic statistic) {
  const MicroRun small = runner.run(file, {{"COUNT", 256}}, 1, {0});
  const MicroRun large = runner.run(file, {{"COUNT", 1024}}, 1, {0});
  return double(statistic(large.result.tiles[0]) - statistic(small.result.tiles[0])) /
         double(bracket(large.words[0]) - bracket(small.words[0]));
}

void add_amp(const MicroRunner& runner, const MachineModel& machine, std::vector<MicroFigure>& figures) {
  const std::pair<AmpPrecision, const char*> types[] = {
      {AmpPrecision::Fp8, "fp8"}, {AmpPrecision::Fp16, "fp16"}, {AmpPrecision::Fp32, "fp32"}};
  for (const auto& [precision, type] : types) {
    const std::string file = fmt::format("amp_{}.s", type);
    const auto macs = [precision](const sim::TileStats& stats) { return stats.amp_macs[int(precision)]; };
    const bool supported = precision != AmpPrecision::Fp8 || machine.amp_fp8;
    double measured = 0;
    if (supported) {
      measured = worker_slope(runner, file, macs);
    } else {
      // The machine implies a fault; any other outcome is a wrong answer.
      try {
        runner.run(file, {{"COUNT", 256}}, 1, {0});
        measured = -1;
      } catch (const sim::Fault& fault) {
        if (std::string_view(fault.what()).find("amp.f8") == std::string_view::npos) throw;
      }
    }
    figures.push_back({"arithmetic throughput", fmt::format("amp.f{} on six workers", type + 2), "MACs a cycle",
                       measured, double(supported ? machine.amp_macs_per_cycle(precision) : 0),
                       supported ? fmt::format("amp-f{}-macs", type + 2) : "amp-types has no f8: amp.f8 faults (0)"});
  }
}

void add_loads(const MicroRunner& runner, const MachineModel& machine, std::vector<MicroFigure>& figures) {
  const auto loaded = [](const sim::TileStats& stats) { return stats.bytes_loaded; };
  for (const MemoryClass* memory : {&machine.standard, &machine.interleaved})
    figures.push_back({"memory bandwidth",
                       fmt::format("{} memory, {} on six workers", memory->name,
                                   memory->kind == MemoryClassKind::Standard ? "ld64pi" : "ld128pi"),
                       "bytes a cycle", worker_slope(runner, fmt::format("load_{}.s", memory->name), loaded),
                       double(memory->load_bytes_per_cycle), fmt::format("{}-load-bytes", memory->name)});
}

void add_workers(const MicroRunner& runner, const MachineModel& machine, std::vector<MicroFigure>& figures) {
  const MicroRun small = runner.run("worker_start.s", {{"COUNT", 16}}, 1, {0});
  const MicroRun large = runner.run("worker_start.s", {{"COUNT", 64}}, 1, {0});
  figures.push_back({"thread scheduling", "start an empty worker and wait for it (run, wsync)", "cycles",
                     double(bracket(large.words[0]) - bracket(small.words[0])) / 48.0,
                     double(2 * machine.issue_slots),
                     "2 supervisor issues of 6 cycles: the worker starts and exits between them"});
}

std::string number_text(double value) {
  if (value == static_cast<double>(static_cast<std::int64_t>(value))) return grouped(static_cast<std::int64_t>(value));
  return fmt::format("{:.4g}", value);
}

}  // namespace

MicroSources built_in_micro_sources() {
  MicroSources sources;
  for (const auto& [name, text] : embedded_micro_sources()) sources.emplace(name, std::string(text));
  return sources;
}

MicroSources micro_sources_from(const std::string& directory) {
  MicroSources sources;
  for (const char* name : kBenchmarks) {
    const std::string path = (std::filesystem::path(directory) / name).string();
    std::optional<std::string> text = isa::read_file_text(path);
    if (!text) throw_bad_input(path, "cannot be read: --micro-dir needs every benchmark of bench/micro");
    sources.emplace(name, std::move(*text));
  }
  return sources;
}

std::vector<MicroFigure> run_micro(const MicroSources& sources, const MachineModel& machine,
                                   const std::function<void(const std::string&)>& progress) {
  const MicroRunner runner(sources, machine);
  std::vector<MicroFigure> figures;
  const std::pair<const char*, void (*)(const MicroRunner&, const MachineModel&, std::vector<MicroFigure>&)> tables[] = {
      {"synchronization", add_sync},         {"exchange latency", add_latency}, {"exchange bandwidth", add_bandwidth},
      {"arithmetic throughput", add_amp},    {"memory bandwidth", add_loads},   {"thread scheduling", add_workers}};
  for (const auto& [name, add] : tables) {
    if (progress) progress(fmt::format("{}: {}", machine.name, name));
    add(runner, machine, figures);
  }
  return figures;
}

std::string micro_markdown(const std::vector<MicroFigure>& figures, const MachineModel& machine) {
  std::string text = fmt::format("# Microbenchmarks on {}\n\n", machine.name);
  text += "| table | what | measured | machine | unit | | from |\n| --- | --- | ---: | ---: | --- | --- | --- |\n";
  for (const MicroFigure& figure : figures)
    text += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", figure.table, figure.name, number_text(figure.measured),
                        number_text(figure.implied), figure.unit, figure.matches() ? "equal" : "DIFFERS", figure.because);
  const auto differ = std::count_if(figures.begin(), figures.end(), [](const MicroFigure& f) { return !f.matches(); });
  text += fmt::format("\n{} of {} figures equal the machine's.\n", figures.size() - differ, figures.size());
  return text;
}

nlohmann::json micro_json(const std::vector<MicroFigure>& figures, const MachineModel& machine) {
  nlohmann::json rows = nlohmann::json::array();
  for (const MicroFigure& figure : figures)
    rows.push_back({{"table", figure.table}, {"what", figure.name}, {"unit", figure.unit},
                    {"measured", figure.measured}, {"machine", figure.implied}, {"from", figure.because},
                    {"equal", figure.matches()}});
  return {{"machine", machine.name}, {"figures", rows}};
}

}  // namespace tilec::bench
