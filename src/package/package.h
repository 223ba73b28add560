// A package: everything the device needs to run a compiled graph.
//
// One image per tile (segments of code and data at fixed addresses, an entry
// point, symbols), the exchange groups that multicast sends name, the
// bindings that say where each host-visible tensor lives (which tile, which
// address, which elements), and each tile's memory map as the compiler
// planned it. Tensor data is not part of a package: inputs and parameters
// are loaded into the bound places before a run, outputs read after it.
#pragma once

#include "graph/graph.h"
#include "graph/summation_order.h"
#include "target/machine.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::package {

// 2: the summation order follows the bindings. 3: op symbols. 4: region
// lifetimes.
constexpr std::uint32_t kFormatVersion = 5;

struct Segment {
  std::string name;  // ".text", ".kernels", ".args", ...
  std::uint32_t address = 0;
  // Shared between tiles whose segments are byte-identical.
  std::shared_ptr<const std::vector<std::uint8_t>> bytes;
  bool executable = false;

  std::uint32_t size() const { return bytes ? static_cast<std::uint32_t>(bytes->size()) : 0; }
};

// An Op symbol covers bytes that serve one graph op (or ops fused into
// one: "blocks/fc1+gelu"): the argument blocks of a kernel task, or a run of
// the supervisor's sends; the profile attributes the workers started on
// those blocks, and those sends, to it.
enum class SymbolKind : std::uint8_t { Function, Kernel, Data, Op };

struct Symbol {
  std::string name;
  std::uint32_t address = 0;
  std::uint32_t size = 0;
  SymbolKind kind = SymbolKind::Function;
};

// What the compiler put where on a tile, for the profile's memory map and to
// check the simulator's use of memory against the plan.
enum class RegionKind : std::uint8_t { Code, Arguments, Tensor, ExchangeBuffer, Scratch };

struct Region {
  std::string name;  // tensor or kernel name
  std::uint32_t address = 0;
  std::uint32_t size = 0;
  RegionKind kind = RegionKind::Tensor;
  // The supersteps of the chunk body (the repeat body counted once) it is
  // live in, first to last; -1 and -1: resident, the whole run.
  std::int32_t first_superstep = -1;
  std::int32_t last_superstep = -1;
  // The graph op or ops it serves (an op symbol's spelling: "blocks/fc1"),
  // "" for code and arguments.
  std::string op;

  bool resident() const { return first_superstep < 0; }
};

struct TileImage {
  std::uint32_t entry = 0;
  std::vector<Segment> segments;
  std::vector<Symbol> symbols;
  std::vector<Region> regions;
  // Largest number of bytes in use at once on this tile, code included,
  // as the compiler planned it.
  std::uint32_t peak_bytes = 0;
};

enum class BindingRole : std::uint8_t { Input, Parameter, Output };

// A rectangular block of a tensor stored densely on one tile: element at
// index i (start <= i < start + size, per axis) lives at
//   address + sum_k (i_k - start_k) * strides_k * element_bytes.
struct Piece {
  std::uint32_t tile = 0;
  std::uint32_t address = 0;
  std::vector<std::int64_t> start;
  std::vector<std::int64_t> size;
  std::vector<std::int64_t> strides;  // in elements
};

// "input", "parameter", "output".
std::string_view binding_role_name(BindingRole role);

struct Binding {
  std::string name;
  BindingRole role = BindingRole::Input;
  graph::TensorType type;
  // Inputs and outputs: every element in exactly one piece. Parameters may
  // cover elements several times (replication); every copy is written.
  std::vector<Piece> pieces;
};

// The run the compiler scheduled, for reading a profile by its plan: each
// chunk runs `supersteps` (the repeat body counted once), the repeat body
// `repeat_count` times over; a sync separates consecutive ones. Zeros: not
// known (a package built by hand).
struct Schedule {
  std::uint32_t supersteps = 0;  // per chunk
  std::uint32_t chunks = 0;
  // The plan's tile groups: group g is tiles [g * group_size, (g + 1) * group_size).
  std::uint32_t groups = 0;
  std::uint32_t group_size = 0;
  std::string repeat;  // the repeat's name, "" without one
  std::int32_t repeat_first = -1;  // its body's supersteps of a chunk, first to last
  std::int32_t repeat_last = -1;
  std::uint32_t repeat_count = 0;

  bool known() const { return supersteps > 0; }
  bool operator==(const Schedule&) const = default;
  // Supersteps the whole run takes: one sync fewer than this.
  std::uint64_t run_supersteps() const;
};

struct Package {
  std::string target = "ipu21";  // machine_by_name() spelling
  std::vector<TileImage> tiles;  // one per tile of the target
  std::vector<std::vector<std::uint32_t>> exchange_groups;
  Schedule schedule;
  std::vector<Binding> bindings;
  // Free-form facts from the compiler (graph name, budget, estimated
  // cycles...), kept as JSON text.
  std::string compile_info = "{}";
  // The order the plan sums in, for the plan-order reference
  // (graph::run_reference with it): every gemm whose K the plan splits.
  graph::SummationOrder summation_order;
};

// A package for `model` with every tile idle (no segments, entry 0) and no
// exchange groups or bindings: the starting point for building one.
Package make_empty_package(const MachineModel& model);

}  // namespace tilec::package
