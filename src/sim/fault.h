// A simulator fault: the program did something the machine forbids. It names
// the tile, the context, the pc and the disassembled bundle, in one line:
//   tile 12, worker 3, pc 0x4c010 (ld128 $a0:3, $m2, 0): misaligned 128-bit load from 0x80004
#pragma once

#include "support/error.h"

#include <cstdint>
#include <string>

namespace tilec::sim {

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

 private:
  std::uint32_t tile_;
  int context_;
  std::uint32_t pc_;
  std::string bundle_;
};

}  // namespace tilec::sim
