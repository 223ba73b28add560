// Each file in src/cli adds one group of subcommands to the `tilec` app.
// A command's callback throws tilec::Error on failure; main() turns it into a
// one-line message and the exit code (0 ok, 1 failure, 2 bad input or usage).
#pragma once

#include <CLI/CLI.hpp>

namespace tilec::cli {

void add_reference_command(CLI::App& app);
void add_graph_commands(CLI::App& app);
void add_isa_commands(CLI::App& app);
void add_package_commands(CLI::App& app);
void add_sim_command(CLI::App& app);
void add_profile_commands(CLI::App& app);
void add_compile_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_onnx_commands(CLI::App& app);

}  // namespace tilec::cli
