// Writing a generated kernel as assembly text while counting the bundles
// each part issues, so that a cost model built from the counts is the code.
//
// Straight-line code is given as instructions in program order with the
// registers they read and write (kernel_schedule.h's KernelOp) and packed
// into bundles: each instruction goes to the first bundle after those it
// depends on whose slot is free. Loops are `rpt` loops over a body that is
// software-pipelined by modulo_schedule (at most two stages, so any trip
// count >= 1 runs them: the count register holds trips - (stages - 1)).
#pragma once

#include "compiler/kernel_schedule.h"

#include <string>
#include <vector>

namespace tilec::compiler {

// A pseudo register read by loads and written by stores in straight-line
// code, so that packing keeps memory accesses in program order.
constexpr RegisterMask kMemory = RegisterMask{1} << 48;

KernelOp main_op(std::string text, RegisterMask writes, RegisterMask reads);
KernelOp float_op(std::string text, RegisterMask writes, RegisterMask reads);

// Straight-line ops packed into bundles (assembly lines, one bundle each).
std::vector<std::string> pack_bundles(const std::vector<KernelOp>& ops);

// A pipelined loop's bundles: `outside` (prologue, the rpt, epilogue) once,
// then `interval` per trip after the first `stages - 1`.
struct LoopShape {
  int interval = 0;
  int stages = 1;
  int outside = 0;
  std::int64_t bundles(std::int64_t trips) const { return outside + (trips - (stages - 1)) * interval; }
};

class KernelWriter {
 public:
  // Starts the kernel: section, global symbol, entry label.
  explicit KernelWriter(const std::string& name);

  // Emits code; each returns the bundles it added.
  int pack(const std::vector<KernelOp>& ops);
  int line(const std::string& bundle);
  void label(const std::string& name);
  // A pipelined rpt loop over `body`; `count` is the register holding the
  // trip count less (stages - 1) (see count_offset).
  LoopShape loop(const std::vector<KernelOp>& body, const std::string& count);

  // The kernel text, closed with its .size.
  std::string finish();

 private:
  std::string name_;
  std::string text_;
};

// The schedule a loop body gets (as KernelWriter::loop emits it), for
// setting up its count register before the loop is written.
LoopShape loop_shape(const std::vector<KernelOp>& body);

// Quad Q is $a(4Q):(4Q+3): its register mask and name; a pair's name.
inline RegisterMask quad_mask(int q) { return a_quad(4 * q); }
std::string quad_name(int q);
std::string pair_name(int first);

}  // namespace tilec::compiler
