// Real profiles for the profile tests: the small MLP compiled for a 16-tile
// chip and simulated (once per test binary), and hand-made profiles whose
// figures can be worked out by hand.
#pragma once

#include "compiler/compile.h"
#include "graph/cost.h"
#include "graph/workloads.h"
#include "profile/profile.h"
#include "sim/device.h"

#include <fmt/format.h>

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tilec::profile::testing {

struct MlpRun {
  package::Package package;
  MachineModel machine;
  sim::RunResult run;
  double graph_macs = 0;
  std::uint32_t peak = 0;
};

// A small MLP, seeded data from generate_data(graph, 7).
inline graph::Graph mlp_graph() {
  graph::MlpOptions mlp;
  mlp.tokens = 40;
  mlp.width = 32;
  mlp.hidden = 64;
  return graph::build_workload("mlp", mlp);
}

inline const MlpRun& mlp_run() {
  static const MlpRun result = [] {
    graph::Graph graph = mlp_graph();
    compiler::CompileOptions options;
    options.machine = ipu21_cut(16);
    MlpRun run;
    run.machine = options.machine;
    run.package = compiler::compile(graph, options).package;
    sim::Device device(run.package, run.machine);
    for (const auto& [name, tensor] : graph::generate_data(graph, 7)) device.write(name, tensor);
    run.run = device.run();
    run.graph_macs = static_cast<double>(graph::graph_macs(graph));
    run.peak = run.machine.amp_macs_per_cycle(AmpPrecision::Fp8);
    return run;
  }();
  return result;
}

// The 16-tile MLP run as a profile.
inline const ProfileData& mlp_profile() {
  static const ProfileData profile = [] {
    const MlpRun& run = mlp_run();
    return make_profile("mlp-16", run.package, run.machine, run.run, run.graph_macs, run.peak);
  }();
  return profile;
}

inline sim::ProfileEvent event(sim::ProfileEventKind kind, std::uint8_t context, std::uint64_t begin,
                               std::uint64_t end, std::uint32_t label, std::uint32_t detail = 0) {
  sim::ProfileEvent e;
  e.kind = kind;
  e.context = context;
  e.begin = begin;
  e.end = end;
  e.label = label;
  e.detail = detail;
  return e;
}
inline sim::ProfileEvent kernel(std::uint8_t worker, std::uint64_t begin, std::uint64_t end, std::uint32_t label = 4,
                                std::uint32_t op = sim::kNoOpLabel) {
  sim::ProfileEvent e = event(sim::ProfileEventKind::WorkerKernel, worker, begin, end, label, 0x4c100);
  e.op = op;
  return e;
}
inline sim::ProfileEvent send(std::uint64_t begin, std::uint64_t end) {
  return event(sim::ProfileEventKind::SupervisorExchange, sim::kSupervisorContext, begin, end, sim::kExchangeLabel,
               static_cast<std::uint32_t>(4 * (end - begin)));
}
inline sim::ProfileEvent sync_wait(std::uint64_t begin, std::uint64_t end, std::uint32_t index) {
  return event(sim::ProfileEventKind::SyncWait, sim::kSupervisorContext, begin, end, sim::kSyncLabel, index);
}
inline sim::ProfileEvent halt(std::uint64_t cycle) {
  return event(sim::ProfileEventKind::Halt, sim::kSupervisorContext, cycle, cycle, sim::kHaltLabel);
}

// A valid profile of `tiles` tiles of ipu21:N with no events yet; labels
// "exchange", "sync", "halt", "" (no op), then 4 "gemm", 5 "gelu" (kernels)
// and 6 "fc1", 7 "fc2" (ops).
inline ProfileData blank_profile(std::uint32_t tiles, std::uint64_t cycles) {
  ProfileData profile;
  profile.name = "hand-made";
  profile.target = fmt::format("ipu21:{}", tiles);
  profile.tiles = tiles;
  profile.clock_ghz = 1.5;
  profile.cycles = cycles;
  profile.graph_macs = 0;
  profile.peak_macs_per_cycle = 128;
  profile.tile_stats.resize(tiles);
  profile.events.labels = {"exchange", "sync", "halt", "", "gemm", "gelu", "fc1", "fc2"};
  profile.events.tiles.resize(tiles);
  return profile;
}

inline std::string read_text(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs a shell command line, capturing both streams through files named
// after `name` in the test's temporary directory.
inline CommandResult run_command(const std::string& command, const std::string& name) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string base = ::testing::TempDir() + "/tilec_profile_cmd_" + test->test_suite_name() + "_" + test->name() +
                           "_" + name;
  const int status = std::system(fmt::format("{} >'{}.out' 2>'{}.err'", command, base, base).c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_text(base + ".out");
  result.err = read_text(base + ".err");
  return result;
}

// `tilec ARGUMENTS` with the built binary.
inline CommandResult run_tilec(const std::string& arguments, const std::string& name) {
  return run_command(fmt::format("'{}' {}", TILEC_BINARY, arguments), name);
}

// How many times `what` stands in `text` (overlaps counted).
inline std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

constexpr const char* kChromium = "/usr/bin/chromium";

// Headless Chromium with `arguments`, in a fresh profile directory per
// launch so that nothing carries over.
inline CommandResult chromium(const std::string& arguments, const std::string& name) {
  std::string user_data = ::testing::TempDir() + "/tilec_chromium_XXXXXX";
  EXPECT_NE(mkdtemp(user_data.data()), nullptr);
  const CommandResult result = run_command(
      fmt::format("timeout 60 {} --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
                  "--disable-background-networking --disable-component-update --disable-sync "
                  "--user-data-dir='{}' {}",
                  kChromium, user_data, arguments),
      name);
  std::filesystem::remove_all(user_data);
  return result;
}

}  // namespace tilec::profile::testing
