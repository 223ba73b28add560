#include "cli/commands.h"

namespace tilec::cli {

void add_graph_commands(CLI::App& app) {
  CLI::App* graph = app.add_subcommand("graph", "Check and show graph files");
  graph->require_subcommand(1);
  graph->add_subcommand("check", "Validate a graph file");
  graph->add_subcommand("show", "List a graph's ops with shapes, parameter bytes and MACs");
}

}  // namespace tilec::cli
