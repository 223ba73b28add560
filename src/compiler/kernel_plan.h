// Stage plan_kernels: which kernel each task runs and how six workers
// share it.
//
// Needs: the LIR's tasks (after eliminate) and the chain's types.
// Does: picks each task's kernel variant (registering it with the kernel
// library) and splits its work between the six workers: GEMM tasks by
// 16x16 output blocks (as evenly as whole blocks allow), combine tasks by
// columns or panels (with `split_combines`, a combine whose columns would
// not share evenly may become two tasks: combine_kernel.h), row tasks by
// panels, attention tasks by query rows. Prices each task as the cost
// model prices its kernel over those shares (Task::cycles). Writes every
// worker's argument block as words; addresses stay symbolic (places) until storage is
// placed.
// Leaves for later: assembling the variants (compile_kernels), addresses
// (place_storage), patching moving addresses (the supervisor code).
#pragma once

#include "compiler/kernel_library.h"
#include "compiler/lir.h"

namespace tilec::compiler {

// Whether plan_kernels, splitting combines, would split any.
bool splits_combines(const Lir& lir);

// Returns whether it split any combine.
bool plan_kernels(Lir& lir, KernelLibrary& library, bool split_combines);


// Bytes of argument blocks the busiest tile needs.
std::uint32_t argument_bytes(const Lir& lir, int tiles_per_group);

}  // namespace tilec::compiler
