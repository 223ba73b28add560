// The simulated device: a package loaded into every tile's memory, host
// tensors scattered into and gathered from their bindings, and cycle-level
// runs of every tile (docs/isa.md is the machine being simulated).
//
// A run starts every tile's supervisor at its image's entry at cycle 0 and
// ends when every tile has halted. Memory persists between runs (a second
// run starts from the registers' reset state but sees what the first left
// in memory). Runs are deterministic: outputs, cycles and every statistic
// are the same on every run and any number of host threads.
//
// Where docs/isa.md leaves a cycle open, the simulator counts as follows:
// - a worker started by `run` in cycle t first issues in its slot's first
//   cycle after t; a worker's `exit` in cycle t frees its slot from t + 1,
//   and a `wsync` (or `sync`) waiting for it goes on from t + 1;
// - after a `send` of L bytes in cycle t the supervisor issues again no
//   earlier than t + L/4 (and t + 6);
// - received bytes are written to memory when the receiver's exchange phase
//   ends; its `xdone` (or a `sync` or `halt` ending the phase) completes in
//   the cycle after its last armed word arrived;
// - a tile arrives at a sync when its `sync` has issued, its workers have
//   exited and its data has landed; all tiles resume at the release, 600
//   cycles after the last arrival;
// - exchange buffers are whole 32-bit words at word-aligned addresses; a
//   send or receive of 0 bytes does nothing;
// - a tile with no code and entry 0 is idle: it takes no part in the run.
#pragma once

#include "graph/tensor.h"
#include "package/package.h"
#include "sim/profile_events.h"
#include "target/machine.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tilec::sim {

// The default run-wide cycle limit: 100 times the longest workload tilec
// ships (the 27-layer SigLIP tower, about 10 M cycles).
constexpr std::uint64_t kDefaultMaxCycles = 1'000'000'000;

struct SimOptions {
  bool record_profile = true;
  std::uint64_t watchdog_cycles = 0;  // 0 = the machine's
  // No bundle issues in cycle max_cycles or later: a program that never
  // halts faults there even when it keeps syncing (the watchdog restarts at
  // every sync). At least 1.
  std::uint64_t max_cycles = kDefaultMaxCycles;
  // Called with the cycles simulated so far: after each global sync (the
  // cycle it released at) and once at the end (the run's cycles), on the
  // thread that called run(). For progress reports.
  std::function<void(std::uint64_t cycles)> on_progress;
  // With record_profile: when set, the events go here instead of into
  // RunResult::profile (which then holds only the labels), a superstep at a
  // time so that a long run never holds them all: after each global sync,
  // and at the end, each tile's events since the last call, in the order
  // of Profile::tiles, on the thread that called run().
  std::function<void(std::uint32_t tile, const std::vector<ProfileEvent>& events)> on_events;
};

struct TileStats {
  std::uint64_t halt_cycle = 0;
  std::uint64_t bundles = 0;  // bundles issued by every context
  // AMP multiply-accumulates by precision, indexed by AmpPrecision.
  std::array<std::uint64_t, 3> amp_macs{};
  std::uint64_t bytes_loaded = 0;
  std::uint64_t bytes_stored = 0;
  std::uint64_t bytes_sent = 0;      // each send's bytes once, however many receivers
  std::uint64_t bytes_received = 0;
  std::uint64_t sync_wait_cycles = 0;  // from each `sync` to its release
  // Memory the tile used: per class (standard, interleaved), the bytes from
  // the class's start to one past the highest byte touched by its image,
  // bound tensors, loads, stores and receives; summed over the two classes.
  std::uint32_t memory_bytes = 0;

  std::uint64_t total_amp_macs() const { return amp_macs[0] + amp_macs[1] + amp_macs[2]; }
};

struct RunResult {
  std::uint64_t cycles = 0;  // the largest halt cycle over every tile
  std::uint64_t syncs = 0;   // global syncs completed
  std::vector<TileStats> tiles;
  Profile profile;  // empty unless SimOptions::record_profile; no events with SimOptions::on_events

  std::uint64_t total_bundles() const;
  std::uint64_t total_amp_macs() const;
};

class DeviceState;

class Device {
 public:
  // Loads every tile's image into its memory. BadInput when the package
  // does not fit the machine (tile count, segments outside memory, code
  // outside standard memory, bindings naming missing tiles or addresses).
  Device(const package::Package& package, const MachineModel& machine);
  ~Device();
  Device(Device&&) noexcept;
  Device& operator=(Device&&) noexcept;

  // Scatters `data` into every piece of the binding (every copy, for a
  // replicated parameter). BadInput on an unknown name or a type mismatch.
  void write(const std::string& binding, const graph::Tensor& data);
  // Gathers the binding's elements from tile memory.
  graph::Tensor read(const std::string& binding) const;
  // The 32-bit word at `address` of a tile's memory, for programs that
  // leave their results there (bench/micro). BadInput outside the tile.
  std::uint32_t read_word(std::uint32_t tile, std::uint32_t address) const;

  // Runs every tile until all have halted; throws sim::Fault on a fault.
  RunResult run(const SimOptions& options = {});

  const MachineModel& machine() const;

 private:
  std::unique_ptr<DeviceState> state_;
};

}  // namespace tilec::sim
