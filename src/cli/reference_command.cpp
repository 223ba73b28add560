#include "cli/commands.h"

namespace tilec::cli {

void add_reference_command(CLI::App& app) {
  app.add_subcommand("reference", "Run a graph or workload on the host reference (FP32)");
}

}  // namespace tilec::cli
