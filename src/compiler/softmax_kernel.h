// The generated softmax kernels: scaled, partial (unnormalised, with the
// rows' statistics), and the three phases of a softmax whose columns are
// split between workers (RowVariant::form). Workers take half panels of 8
// rows (two FP32 quads) as the fixed kernels of kernels/softmax.S do; each
// pass over the columns is a software-pipelined loop (kernel_writer.h).
//
// docs/kernels.md ("Softmax") gives each form's argument block, the
// statistics layout and the arithmetic; the shape of the generated code is
// exposed so that the cost model counts the bundles the kernel issues.
#pragma once

#include "compiler/kernel_library.h"
#include "compiler/kernel_writer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tilec::compiler {

// What a loop of a softmax kernel runs over.
enum class SoftmaxTrip : std::uint8_t { Columns, OutputColumns, Chunks };

struct SoftmaxShape {
  int entry = 0;       // from the entry to the empty check, the check included
  int half_panel = 0;  // straight-line bundles per half panel, the loop back included
  std::vector<std::pair<SoftmaxTrip, LoopShape>> loops;  // per half panel
  int exit = 1;
};

SoftmaxShape softmax_shape(const RowVariant& variant);

// Assembly of a generated variant (variant.generated()), defining `name`.
std::string softmax_source(const std::string& name, const RowVariant& variant);

// Bundles one worker issues for `half_panels` half panels: `columns` the
// columns it reads (C, or its chunk's), `output_columns` those a normalised
// softmax writes (C'), `chunks` the chunk count K of a split softmax.
std::int64_t softmax_worker_bundles(const SoftmaxShape& shape, std::int64_t half_panels, std::int64_t columns,
                                    std::int64_t output_columns, std::int64_t chunks);

// Bytes of a softmax's statistics for `panels` panels: per 4 rows, 4 FP32
// m then 4 FP32 l (32 bytes a quad, 128 a panel), panels one after another.
constexpr std::int64_t softmax_stats_bytes(std::int64_t panels) { return 128 * panels; }

}  // namespace tilec::compiler
