// Progress of a long `compile` or `run` on stderr: the stage, the elapsed
// time and the cycles simulated so far. On a terminal it is one line,
// rewritten in place and cleared at the end; elsewhere (with --progress) a
// line per stage and at most one cycle count a second, plus the last.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace tilec::cli {

// "--progress": report progress even when stderr is not a terminal.
void add_progress_flag(CLI::App& command, bool& progress);

class Progress {
 public:
  // Reports when `asked` or stderr is a terminal; silent otherwise.
  explicit Progress(bool asked);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return enabled_; }
  // A stage begins: a compiler stage, "simulate", "reference"...
  void stage(std::string_view name);
  void cycles(std::uint64_t simulated);
  // Clears the terminal's line (before the command prints its summary).
  void finish();

 private:
  void show(bool always);
  double elapsed() const;

  bool enabled_ = false;
  bool terminal_ = false;
  std::mutex mutex_;
  std::string stage_;
  std::uint64_t cycles_ = 0;
  std::uint64_t shown_cycles_ = 0;
  bool have_cycles_ = false;
  double last_shown_ = -1;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace tilec::cli
