// Every usage error CLI11 finds is one line, `tilec: error: FLAG: WHAT`,
// with exit 2: unknown flags and commands, stray arguments, missing and
// malformed values, numbers out of range.
#include "tilec_process.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace tilec::cli_testing {
namespace {

TEST(UsageErrors, AreOneLineNamingTheFlagOrArgument) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--threads -1 graph workloads", "--threads: must be an integer from 0 to 1024, not -1"},
      {"--threads many graph workloads", "--threads: must be an integer from 0 to 1024, not many"},
      {"run --foo", "--foo: 'tilec run' has no such flag (see tilec run --help)"},
      {"package inspect m.tpk --tile -1", "--tile: must be an integer from 0 to 4294967295, not -1"},
      {"reference graph.json", "graph.json: 'tilec reference' takes a graph file as --graph FILE"},
      {"graph check a.json b.json", "b.json: 'tilec graph check' takes no more arguments (see tilec graph check --help)"},
      {"frobnicate", "frobnicate: 'tilec' has no such command (commands: reference, graph, isa, asm, disasm, package, "
                     "sim, profile, compile, run, bench, import, onnx-test)"},
      {"graph", "tilec graph: give a command (check, show, write, workloads)"},
      {"sim", "PACKAGE: is required (see tilec sim --help)"},
      {"run --workload", "--workload: needs a value (NAME)"},
      {"compile --workload mlp --max-k-parts 99", "--max-k-parts: must be an integer from 1 to 64, not 99"},
      {"run --workload mlp --max-cycles 1e9", "--max-cycles: must be an integer >= 1, not 1e9"},
      {"profile query p.tprof --top -1", "--top: must be an integer >= 0, not -1"},
      {"package inspect m.tpk --disasm", "--disasm: needs --tile"},
  };
  for (const auto& [arguments, error] : cases) {
    const TilecRun run = run_tilec(arguments);
    EXPECT_EQ(run.exit_code, 2) << arguments;
    EXPECT_EQ(run.err, "tilec: error: " + error + "\n") << arguments;
    EXPECT_EQ(run.out, "") << arguments;
  }
}

TEST(UsageErrors, HelpAndVersionStillExitZero) {
  const TilecRun help = run_tilec("run --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--max-cycles"), std::string::npos);
  const TilecRun version = run_tilec("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out, "tilec 0.1.0\n");
}

}  // namespace
}  // namespace tilec::cli_testing
