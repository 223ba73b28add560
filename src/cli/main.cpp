// The `tilec` binary: one app, one subcommand per job.
#include "cli/commands.h"
#include "cli/usage_errors.h"
#include "support/error.h"
#include "support/output_path.h"
#include "support/parallel.h"
#include "support/span.h"
#include "support/version.h"

#include <fmt/core.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

int main(int argc, char** argv) {
  CLI::App app{"tilec: compile neural-network graphs onto a tile processor and simulate them"};
  app.set_version_flag("--version", std::string("tilec ") + tilec::kVersion);
  app.require_subcommand(1);
  int threads = 0;
  std::string trace_path;
  app.add_option("--threads", threads, "Host threads for tilec's own work (0 = every core)")
      ->check(tilec::cli::integer_in(0, 1024));
  app.add_option("--trace-json", trace_path,
                 "Write tilec's own timing spans as Chrome trace-event JSON to FILE");

  // Runs after the global options are read, before any subcommand's callback.
  bool trace_path_checked = false;
  app.parse_complete_callback([&] {
    tilec::set_thread_count(threads);
    if (!trace_path.empty()) tilec::check_output_file("--trace-json", trace_path);
    trace_path_checked = true;
  });

  tilec::cli::add_reference_command(app);
  tilec::cli::add_graph_commands(app);
  tilec::cli::add_isa_commands(app);
  tilec::cli::add_package_commands(app);
  tilec::cli::add_sim_command(app);
  tilec::cli::add_profile_commands(app);
  tilec::cli::add_compile_command(app);
  tilec::cli::add_run_command(app);
  tilec::cli::add_bench_command(app);
  tilec::cli::add_onnx_commands(app);

  int result = [&] {
    try {
      app.parse(argc, argv);
    } catch (const CLI::Success& success) {
      return app.exit(success);
    } catch (const CLI::ParseError& error) {
      std::fprintf(stderr, "tilec: error: %s\n", tilec::one_line(tilec::cli::usage_error_text(app, error)).c_str());
      return 2;
    } catch (const tilec::Error& error) {
      std::fprintf(stderr, "tilec: error: %s\n", error.what());
      return error.exit_code();
    } catch (const std::bad_alloc&) {
      // Large allocations say what they were for (host_allocation); this is any other.
      std::fprintf(stderr, "tilec: error: host memory: an allocation failed (the host is out of memory)\n");
      return 1;
    } catch (const std::exception& error) {
      std::fprintf(stderr, "tilec: internal error: %s\n", tilec::one_line(error.what()).c_str());
      return 1;
    }
    return 0;
  }();
  // Output that could not be written (a full disk under a redirection)
  // fails a run that did not fail otherwise.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "tilec: error: standard output: cannot write: %s\n", std::strerror(errno));
    result = result ? result : 1;
  }
  // Written whatever the outcome, so a failing run can still be profiled.
  if (!trace_path.empty() && trace_path_checked) {
    try {
      tilec::global_timeline().write_chrome_trace(trace_path);
    } catch (const tilec::Error& error) {
      std::fprintf(stderr, "tilec: error: %s\n", error.what());
      result = result ? result : error.exit_code();
    }
  }
  return result;
}
