#include "cli/progress.h"

#include "bench/run_case.h"
#include "support/number_text.h"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>

namespace tilec::cli {

void add_progress_flag(CLI::App& command, bool& progress) {
  command.add_flag("--progress", progress,
                   "Report the stage, the elapsed time and the cycles simulated so far on stderr, even when it is not "
                   "a terminal (on a terminal it is always shown)");
}

Progress::Progress(bool asked) : terminal_(::isatty(STDERR_FILENO) == 1) { enabled_ = asked || terminal_; }

Progress::~Progress() { finish(); }

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::stage(std::string_view name) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  const std::string_view phase = bench::case_phase(name);
  const std::string text = phase == name ? std::string(name) : fmt::format("{}: {}", phase, name);
  // The last cycle count of a simulation that just ended.
  if (!terminal_ && have_cycles_ && cycles_ != shown_cycles_) show(true);
  stage_ = text;
  have_cycles_ = false;
  show(true);
}

void Progress::cycles(std::uint64_t simulated) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  cycles_ = simulated;
  have_cycles_ = true;
  show(false);
}

// On a terminal, at most ten updates a second; elsewhere one a second.
void Progress::show(bool always) {
  const double now = elapsed();
  if (!always && now - last_shown_ < (terminal_ ? 0.1 : 1.0)) return;
  last_shown_ = now;
  shown_cycles_ = cycles_;
  std::string line = fmt::format("tilec: {} ({:.1f} s)", stage_, now);
  if (have_cycles_) line += fmt::format(", {} cycles", grouped(static_cast<std::int64_t>(cycles_)));
  if (terminal_)
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
  else
    std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  if (!terminal_ && have_cycles_ && cycles_ != shown_cycles_) show(true);
  have_cycles_ = false;
  if (terminal_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  enabled_ = false;
}

}  // namespace tilec::cli
