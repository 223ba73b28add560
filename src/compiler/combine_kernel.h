// The combine kernels: one generated kernel per CombineVariant, summing its
// partial inputs and applying its stages (bias, GELU, casts) to 8 elements
// per group, software-pipelined (compiler/kernel_schedule.h).
//
// The argument block, operand layouts and the lanes each variant computes
// in are described in docs/kernels.md ("Combine kernels"). The shape of the
// generated loop is exposed so that the cost model counts the bundles the
// kernel really issues.
#pragma once

#include "compiler/kernel_library.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

namespace tilec::compiler {

struct CombineShape {
  int unroll = 1;           // groups of 8 elements per loop iteration
  bool per_column = false;  // a loop per column (the bias changes), else one over every column
  bool pipelined = true;    // false: the body in program order (no schedule fits)
  int interval = 0;         // bundles per loop iteration
  int stages = 1;           // iterations in flight
  int prologue = 0;         // bundles before each loop...
  int epilogue = 0;         // ...and after it
  int entry = 0;            // bundles from the entry to the first column (argument loads, counts)
  int column_setup = 0;     // bundles per column before its prologue (bias), `rpt` included
  int column_end = 0;       // bundles per column after its epilogue (loop back)
  int exit = 1;
  // Instructions per group of 8 elements in each slot: the loop cannot
  // issue fewer bundles per group than the busier slot's count.
  int main_ops = 0;
  int float_ops = 0;

  double bundles_per_8() const { return static_cast<double>(interval) / unroll; }
  int ideal_bundles_per_8() const { return std::max(main_ops, float_ops); }
};

CombineShape combine_shape(const CombineVariant& variant);

// Assembly of the variant's kernel, defining the global symbol `name`.
std::string combine_source(const std::string& name, const CombineVariant& variant);

// Bundles one worker issues for `columns` columns of `groups` groups of 8
// elements each (whole panels: `groups` even).
std::int64_t combine_worker_bundles(const CombineShape& shape, std::int64_t columns, std::int64_t groups);

// How the six workers share a combine run over `columns` columns of
// `column_elements` elements (the columns back to back): whole columns, or
// where whole columns would leave a worker one more than another,
// - without a bias stage (one loop over every column) 16-element panels
//   of all the columns, each worker a run of them;
// - with one (the bias reloads per column), where it is faster
//   (cost_model.h), two runs: whole columns, as many as share evenly, then
//   the rest, each column's panels shared by the workers on it
//   (`rows_split`).
// A worker's share: `columns` columns of `groups` groups of 8 elements
// from element `offset`, its bias from column `bias_column`.
struct CombineShare {
  std::int64_t columns = 0;
  std::int64_t groups = 0;
  std::int64_t offset = 0;
  std::int64_t bias_column = 0;
};
using CombineShares = std::array<CombineShare, kWorkers>;  // a worker's each (none: zero columns)
CombineShares combine_shares(const CombineVariant& variant, std::int64_t columns, std::int64_t column_elements,
                             bool rows_split);
// Whether the kernel loops per column (a bias stage reloads per column).
bool combine_loops_per_column(const CombineVariant& variant);

}  // namespace tilec::compiler
