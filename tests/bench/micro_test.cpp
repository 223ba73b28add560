// The microbenchmarks of bench/micro: each measured figure equals what the
// machine description implies, on every preset and under overrides.
#include "bench/micro.h"

#include "sim/fault.h"
#include "support/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace tilec::bench {
namespace {

const MicroFigure& figure_named(const std::vector<MicroFigure>& figures, const std::string& part) {
  auto it = std::find_if(figures.begin(), figures.end(),
                         [&](const MicroFigure& figure) { return figure.name.find(part) != std::string::npos; });
  if (it == figures.end()) throw std::runtime_error("no figure named " + part);
  return *it;
}

TEST(Microbenchmarks, EveryFigureEqualsItsPresetsOnEveryPreset) {
  const MicroSources sources = built_in_micro_sources();
  for (const char* preset : {"ipu21", "bow", "ipu2", "ipu1"}) {
    SCOPED_TRACE(preset);
    const MachineModel machine = machine_by_name(preset);
    const std::vector<MicroFigure> figures = run_micro(sources, machine);
    std::set<std::string> tables;
    for (const MicroFigure& figure : figures) {
      EXPECT_TRUE(figure.matches()) << figure.name << ": measured " << figure.measured << ", machine "
                                    << figure.implied;
      tables.insert(figure.table);
    }
    EXPECT_EQ(tables.size(), 6u);
    EXPECT_EQ(figures.size(), 17u);
    // The figures the shared machine model states, independently of the description.
    EXPECT_EQ(figure_named(figures, "seen by tile 0").measured, 600);
    EXPECT_EQ(figure_named(figures, "(1 column)").measured, 18);
    EXPECT_EQ(figure_named(figures, "into the 3 receivers").measured, 12);
    EXPECT_EQ(figure_named(figures, "amp.f16").measured, 64);
    EXPECT_EQ(figure_named(figures, "amp.f32").measured, 16);
    EXPECT_EQ(figure_named(figures, "amp.f8").measured, machine.amp_fp8 ? 128 : 0);
    EXPECT_EQ(figure_named(figures, "standard memory").measured, 8);
    EXPECT_EQ(figure_named(figures, "interleaved memory").measured, 16);
  }
}

TEST(Microbenchmarks, MeasuredFiguresFollowOverriddenFields) {
  const MachineModel machine = machine_by_name(
      "ipu21:tiles=256,tiles-per-column=16,sync-cycles=1200,exchange-bytes=8,exchange-base-latency=20,"
      "exchange-hop-latency=3");
  const std::vector<MicroFigure> figures = run_micro(built_in_micro_sources(), machine);
  for (const MicroFigure& figure : figures) EXPECT_TRUE(figure.matches()) << figure.name;
  EXPECT_EQ(figure_named(figures, "seen by tile 255").measured, 1200);
  EXPECT_EQ(figure_named(figures, "tile 0 to tile 1 (0 columns)").measured, 20);
  EXPECT_EQ(figure_named(figures, "tile 0 to tile 16 (1 column)").measured, 23);
  EXPECT_EQ(figure_named(figures, "tile 0 to tile 240 (15 columns)").measured, 20 + 3 * 15);
  EXPECT_EQ(figure_named(figures, "tile 0 to tile 1, out of tile 0").measured, 8);
  EXPECT_EQ(figure_named(figures, "into each receiver").measured, 8);
}

TEST(Microbenchmarks, ASmallMachineRunsWhatFitsIt) {
  const std::vector<MicroFigure> figures = run_micro(built_in_micro_sources(), machine_by_name("ipu21:1"));
  for (const MicroFigure& figure : figures) {
    EXPECT_TRUE(figure.matches()) << figure.name;
    EXPECT_NE(figure.table, "exchange latency");
    EXPECT_NE(figure.table, "exchange bandwidth");
  }
  EXPECT_EQ(figures.size(), 7u);
}

TEST(Microbenchmarks, TheBuiltInSourcesAreTheFilesOfBenchMicro) {
  EXPECT_EQ(micro_sources_from(std::string(TILEC_SOURCE_DIR) + "/bench/micro"), built_in_micro_sources());
}

TEST(Microbenchmarks, BadSourcesAndFaultsNameTheBenchmark) {
  const MachineModel machine = machine_by_name("ipu21:8");
  MicroSources sources = built_in_micro_sources();
  sources["sync_cost.s"] += "  bogus $m1\n";
  try {
    run_micro(sources, machine);
    ADD_FAILURE() << "a bad source ran";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("bench/micro/sync_cost.s:"), std::string::npos) << error.what();
  }
  sources = built_in_micro_sources();
  // Loads that start at the end of the tile's memory fault.
  const std::string good = sources.at("load_standard.s");
  sources["load_standard.s"].replace(good.find("setzi $m2, buffer"), 17, "setzi $m2, 0xE8000");
  EXPECT_THROW(run_micro(sources, machine), sim::Fault);
  EXPECT_THROW(micro_sources_from("/nonexistent/micro"), Error);
}

TEST(Microbenchmarks, TheTableSaysWhetherEachFigureEqualsTheMachines) {
  std::vector<MicroFigure> figures = {{"synchronization", "global sync", "cycles", 600, 600, "sync-cycles"},
                                      {"exchange latency", "one word", "cycles", 17, 18, "exchange-base-latency"}};
  const std::string text = micro_markdown(figures, ipu21());
  EXPECT_NE(text.find("| synchronization | global sync | 600 | 600 | cycles | equal | sync-cycles |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| 17 | 18 | cycles | DIFFERS |"), std::string::npos) << text;
  EXPECT_NE(text.find("1 of 2 figures equal"), std::string::npos) << text;
  const nlohmann::json json = micro_json(figures, ipu21());
  EXPECT_EQ(json["machine"], "ipu21");
  EXPECT_EQ(json["figures"][1]["equal"], false);
  EXPECT_EQ(json["figures"][1]["measured"], 17);
}

}  // namespace
}  // namespace tilec::bench
