// What makes a package loadable: the checks the reader runs on every file
// and the writer runs before writing one.
//
// Target: the name parses (machine_by_name), names the machine checked
//   against, and there is one tile image per tile.
// Tiles: every segment, symbol and region lies inside the tile's memory;
//   segments have names and do not overlap; executable segments lie in
//   standard memory (code cannot run from interleaved memory), start on a
//   bundle boundary and hold whole bundles; the entry point is 8-byte
//   aligned inside an executable segment, or 0 on a tile with no executable
//   segment (an idle tile); the planned peak fits in memory; kinds are known.
// Exchange groups: not empty, existing tiles, no tile twice.
// Schedule: when known, its groups fit the tiles and its repeat lies within
//   a chunk's supersteps (check_schedule, also for profiles).
// Bindings: a unique non-empty name, known role and element type; an FP8
//   scale within kMinScale..kMaxScale and none on other types; positive
//   extents; a tensor that fits in the device's memory; at least one piece.
//   Each piece: an existing tile; start/size/strides as long as the rank;
//   inside the tensor's shape; strides that keep its elements apart (see
//   piece_layout.h); every byte inside the tile's memory. Inputs and outputs
//   hold every element exactly once, parameters at least once.
// Memory: no byte of a tile is bound twice (inputs, parameters and outputs
//   never alias one another) or bound inside a segment.
//
// Each failure is a BadInput tilec::Error naming the place: "tile 12: ...",
// "binding 'x': piece 3: ...", "exchange group 2: ...".
#pragma once

#include "package/package.h"

namespace tilec::package {

constexpr int kMinScale = -64;
constexpr int kMaxScale = 64;

void validate(const Package& package, const MachineModel& model);

// BadInput naming `where` for a known schedule that does not fit `model`.
void check_schedule(const Schedule& schedule, const MachineModel& model, const std::string& where = "schedule");

// The package runs `graph`: one binding per graph input, parameter and
// output and none else, each with the graph's role and type (element,
// scale, shape). With validate()'s coverage rule, a host input is then
// stored exactly once (machine-model rule 6). BadInput naming the binding.
void check_bindings_match(const Package& package, const graph::Graph& graph);
// Against the package's own target, machine_by_name(package.target).
void validate(const Package& package);

namespace detail {
// The binding and memory checks above, for validate().
void validate_bindings(const Package& package, const MachineModel& model);
}  // namespace detail

}  // namespace tilec::package
