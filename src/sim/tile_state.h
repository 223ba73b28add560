// The simulated state of one tile: its memory, seven contexts, predecoded
// code, the exchange it did in the current superstep, and its statistics.
// A tile's state is touched only by the thread simulating that tile, except
// in exchange resolution, which runs between the parallel phases.
#pragma once

#include "sim/code_cache.h"
#include "sim/device.h"
#include "sim/fault.h"
#include "sim/profile_events.h"

#include <array>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace tilec::sim {

constexpr int kWorkers = 6;
constexpr int kSlots = 6;
constexpr int kSupervisor = kSupervisorContext;  // index of the supervisor in TileState::contexts
constexpr std::uint32_t kAllWorkers = (1u << kWorkers) - 1;

// Machine numbers the hot loop needs, flattened out of the MachineModel.
struct SimConfig {
  std::uint32_t tiles = 0;
  std::uint32_t memory_begin = 0;
  std::uint32_t memory_bytes = 0;
  std::uint32_t interleaved_begin = 0;
  std::uint32_t interleaved_bytes = 0;
  std::uint32_t standard_begin = 0;
  std::uint32_t standard_bytes = 0;
  std::uint32_t exchange_groups = 0;
  std::uint32_t exchange_bytes_per_cycle = 4;  // a send's bytes leave, and land, at this rate
  bool amp_fp8 = true;                         // the AMP takes FP8 (amp.f8)
  std::uint64_t watchdog_cycles = 0;
  const float* fp8_tables[2] = {nullptr, nullptr};  // decoded codes of f143, f152
};

// Cycles `bytes` take to leave a tile, or to land on one.
inline std::uint32_t exchange_cycles(const SimConfig& config, std::uint32_t bytes) {
  return (bytes + config.exchange_bytes_per_cycle - 1) / config.exchange_bytes_per_cycle;
}

struct Context {
  std::array<std::uint32_t, 16> m{};
  alignas(64) std::array<std::uint32_t, 32> a{};
  alignas(64) float acc[16][16]{};
  std::uint32_t pc = 0;
  // The hardware loop: while loop_remaining > 0 the pc runs through
  // [loop_begin, loop_end); reaching loop_end starts the next iteration.
  std::uint32_t loop_begin = 0;
  std::uint32_t loop_end = 0;
  std::uint32_t loop_remaining = 0;
  std::uint64_t next_issue = 0;  // supervisor: earliest cycle it may issue again
  std::uint64_t started = 0;     // worker: cycle of its `run`
  std::uint32_t entry = 0;       // worker: address it was started at
  std::uint32_t arguments = 0;   // worker: the argument block it was started on
  // Worker: AMP instructions issued since its `run`, and their MACs.
  std::uint32_t amp_instructions = 0;
  std::uint32_t amp_macs = 0;
};

enum class Phase : std::uint8_t { Exchange, Compute };

// Why a tile stopped running: the scheduler returns to the device at each.
enum class Stop : std::uint8_t {
  None,
  Xdone,  // end of the exchange phase: waits for exchange resolution
  Sync,   // arrived at a sync
  Halt,
  Fault,
};

// What the supervisor waits for besides time.
enum class SupervisorWait : std::uint8_t { None, Workers, SyncWorkers };

// The byte pattern xpat sets for a tile's next send or recv: `run`-byte
// runs every `stride` bytes; run 0 = contiguous.
struct ExchangePattern {
  std::uint32_t run = 0;
  std::uint32_t stride = 0;

  bool contiguous() const { return run == 0; }
};

struct SendRecord {
  std::uint32_t pc = 0;
  std::uint64_t cycle = 0;        // issue cycle: word i leaves at cycle + i
  std::uint32_t destination = 0;  // the raw $mDst: a tile, or bit 31 + group
  std::uint32_t bytes = 0;
  std::uint32_t payload_offset = 0;  // into TileState::payload
};

struct RecvRecord {
  std::uint32_t pc = 0;
  std::uint64_t cycle = 0;  // when it was armed
  std::uint32_t source = 0;
  std::uint32_t address = 0;
  std::uint32_t bytes = 0;
  ExchangePattern pattern;  // where the bytes land: runs from `address`
};

// A kernel label found for a worker entry: symbols by address.
struct EntryLabel {
  std::uint32_t address;
  std::uint32_t label;
};
constexpr std::uint32_t kUnnamedKernel = 0xffffffffu;

// An op symbol: the argument blocks or sends in [begin, end) serve the op
// `label`.
struct OpLabel {
  std::uint32_t begin;
  std::uint32_t end;
  std::uint32_t label;
};

struct TileState {
  std::uint32_t index = 0;
  const SimConfig* config = nullptr;
  std::uint8_t* memory = nullptr;  // memory[0] is address config->memory_begin
  TileCode code;
  std::uint32_t entry = 0;
  // No code and entry 0: the tile takes no part in the run (nor its syncs).
  bool idle = false;
  std::vector<EntryLabel> kernel_labels;  // sorted by address
  std::vector<OpLabel> op_labels;     // sorted by begin, disjoint

  std::array<Context, kWorkers + 1> contexts;
  std::uint32_t running_workers = 0;  // bit k: worker k runs
  SupervisorWait wait = SupervisorWait::None;
  Phase phase = Phase::Exchange;
  bool tracing = false;

  std::uint64_t cycle = 0;     // the next cycle the scheduler considers
  std::uint64_t release = 0;   // when the last sync released this tile (0 at start)
  std::uint64_t deadline = 0;  // the last cycle it may issue in before a sync (watchdog, cycle limit)
  std::uint64_t cycle_limit = 0;  // no bundle issues in this cycle or later
  Stop stop = Stop::None;
  std::uint64_t stop_cycle = 0;  // issue cycle of the xdone / sync / halt
  std::uint32_t stop_pc = 0;
  std::string stop_bundle;  // its text, for faults raised after the tile stopped
  std::uint64_t arrival = 0;  // at a sync: when every condition of the sync held

  // Set by xpat, taken by the next send or recv (it may wait across syncs).
  ExchangePattern pattern;
  // This superstep's exchange.
  std::vector<SendRecord> sends;
  std::vector<RecvRecord> recvs;
  std::vector<std::uint8_t> payload;  // bytes of every send, read at issue
  std::uint64_t landed = 0;  // after resolution: the cycle after its last word arrived

  TileStats stats;
  std::vector<ProfileEvent> events;
  std::optional<Fault> fault;
  std::uint64_t fault_cycle = 0;
  DecodedBundle fetched;  // a bundle fetched from outside the decoded code

  std::uint8_t* at(std::uint32_t address) { return memory + (address - config->memory_begin); }
  // Notes a write of [address, address + size) for the code cache.
  void wrote(std::uint32_t address, std::uint32_t size) {
    touch(address, size);
    if (code.overlaps(address, size)) code.rewrite(address, size, memory, config->memory_begin);
  }
  // The extent of memory the tile has used, per class: one past the highest
  // byte any load, store, receive, segment or bound tensor has touched.
  // A range across the classes' boundary counts in both.
  void touch(std::uint32_t address, std::uint32_t size) {
    const std::uint32_t end = address + size, boundary = config->interleaved_begin;
    if (address < boundary) standard_high = std::max(standard_high, std::min(end, boundary));
    if (end > boundary || address >= boundary) interleaved_high = std::max(interleaved_high, end);
  }
  std::uint32_t standard_high = 0;
  std::uint32_t interleaved_high = 0;
};

// Runs the tile from tile.cycle until tile.stop is set (xdone in an exchange
// phase, arrival at a sync, halt) or it faults (tile.fault, tile.stop = Fault).
void run_tile(TileState& tile);

// Resets the registers and starts the supervisor at the entry, at cycle 0.
// `cycle_limit` >= 1.
void reset_tile(TileState& tile, std::uint64_t watchdog_cycles, std::uint64_t cycle_limit);

// The disassembled bundle at `pc`, from the decoded code or from memory;
// "" when none can be read there (a misaligned pc, or outside memory).
std::string bundle_text_at(TileState& tile, std::uint32_t pc);

}  // namespace tilec::sim
