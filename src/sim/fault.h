// A simulator fault: the program did something the machine forbids. It names
// the tile, the context, the pc and the disassembled bundle, in one line:
//   tile 12, worker 3, pc 0x4c010 (ld128 $a0:3, $m2, 0): misaligned 128-bit load from 0x80004
#pragma once

#include "support/error.h"

#include <cstdint>
#include <memory>
#include <string>

namespace tilec::sim {

struct RunResult;

// "supervisor" or "worker 3" (context numbers as in profile_events.h).
std::string context_name(int context);

class Fault : public tilec::Error {
 public:
  // `bundle` is the disassembled bundle, empty when none could be read
  // (the message then says so).
  Fault(std::uint32_t tile, int context, std::uint32_t pc, std::string bundle,
        std::string message);

  std::uint32_t tile() const { return tile_; }
  int context() const { return context_; }
  std::uint32_t pc() const { return pc_; }
  const std::string& bundle() const { return bundle_; }
  // The cycle it happened in, once the device has set it.
  std::uint64_t cycle() const { return cycle_; }
  void set_cycle(std::uint64_t cycle) { cycle_ = cycle; }
  // The run up to the fault (statistics and, when recorded, the profile),
  // attached by the device; nullptr before.
  const std::shared_ptr<const RunResult>& partial_run() const { return partial_run_; }
  void set_partial_run(std::shared_ptr<const RunResult> run) { partial_run_ = std::move(run); }

 private:
  std::uint32_t tile_;
  int context_;
  std::uint32_t pc_;
  std::string bundle_;
  std::uint64_t cycle_ = 0;
  std::shared_ptr<const RunResult> partial_run_;
};

}  // namespace tilec::sim
