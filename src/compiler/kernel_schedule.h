// Software pipelining of a generated kernel loop (modulo scheduling).
//
// A loop body is given as instructions in program order, each with the
// registers it reads and writes. The scheduler overlaps successive
// iterations so that every bundle of the `rpt` body can pair a main-slot
// instruction (loads of a later iteration, the store of an earlier one)
// with a float-slot instruction, keeping every register dependence of the
// sequential loop:
//   - a read after a write issues at least one bundle after it;
//   - a write after a write issues at least one bundle after it;
//   - a write after a read may share the read's bundle (both instructions of
//     a bundle read their operands before either writes).
// Dependences between one iteration and the next are kept as well, so the
// results are bit-identical to running the body in order.
//
// The loop then runs as a prologue (the first stages of the first
// iterations), `iterations - (stages - 1)` repetitions of the body, and an
// epilogue (the last stages of the last iterations).
#pragma once

#include "isa/isa.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tilec::compiler {

// Register sets as bit masks: $a0..$a31 are bits 0..31, $m0..$m15 bits 32..47.
using RegisterMask = std::uint64_t;

constexpr RegisterMask a_reg(int index) { return RegisterMask{1} << index; }
constexpr RegisterMask a_pair(int first) { return RegisterMask{3} << first; }
constexpr RegisterMask a_quad(int first) { return RegisterMask{15} << first; }
constexpr RegisterMask m_reg(int index) { return RegisterMask{1} << (32 + index); }

struct KernelOp {
  isa::Slot slot = isa::Slot::Main;
  std::string text;  // assembly of the instruction
  RegisterMask reads = 0;
  RegisterMask writes = 0;
};

struct ModuloSchedule {
  int interval = 0;   // bundles per iteration in the steady state
  int stages = 1;     // iterations in flight
  std::vector<int> time;  // per op: its bundle in one iteration's schedule
  // Assembly lines: one bundle each.
  std::vector<std::string> prologue;
  std::vector<std::string> body;  // `interval` bundles
  std::vector<std::string> epilogue;
};

// The shortest interval (at least the busier slot's instruction count) at
// which `ops` schedule within `max_stages` stages; nullopt when none does
// up to the sequential length.
std::optional<ModuloSchedule> modulo_schedule(const std::vector<KernelOp>& ops, int max_stages);

// The body in program order, one instruction per bundle: the unpipelined
// loop (for comparison and for loops too short to pipeline).
std::vector<std::string> sequential_body(const std::vector<KernelOp>& ops);

}  // namespace tilec::compiler
