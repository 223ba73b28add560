// Included through sim/semantics.h, which defines SEMANTICS(id).
//
// Semantics of the main-slot instructions (integer, memory, control,
// contexts, exchange): one function per instruction of isa/instructions.def,
// written against Exec's typed operand accessors. The dispatch in
// scheduler.cpp is generated from the table, so an instruction without a
// function here does not compile. Operand numbers follow the assembly order
// of the instruction's format (formats.def).
//
// Checks made before any of these run (scheduler.cpp): supervisor-only and
// worker-only instructions, and control instructions in a rpt body.
#pragma once

#include "sim/exec.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace tilec::sim::semantics {

// ---- integer ----
SEMANTICS(Nop) {}
SEMANTICS(Setzi) { x.m(0) = x.uimm(1); }
SEMANTICS(Sethi) { x.m(0) = (x.uimm(1) << 16) | (x.m(0) & 0xffffu); }
SEMANTICS(Add) { x.m(0) = x.m(1) + x.m(2); }
SEMANTICS(Sub) { x.m(0) = x.m(1) - x.m(2); }
SEMANTICS(Mul) { x.m(0) = x.m(1) * x.m(2); }
SEMANTICS(And) { x.m(0) = x.m(1) & x.m(2); }
SEMANTICS(Or) { x.m(0) = x.m(1) | x.m(2); }
SEMANTICS(Xor) { x.m(0) = x.m(1) ^ x.m(2); }
SEMANTICS(Shl) { x.m(0) = x.m(1) << (x.m(2) & 31u); }
SEMANTICS(Shr) { x.m(0) = x.m(1) >> (x.m(2) & 31u); }
SEMANTICS(Sar) {
  x.m(0) = static_cast<std::uint32_t>(static_cast<std::int32_t>(x.m(1)) >> (x.m(2) & 31u));
}
SEMANTICS(Min) {
  x.m(0) = static_cast<std::uint32_t>(
      std::min(static_cast<std::int32_t>(x.m(1)), static_cast<std::int32_t>(x.m(2))));
}
SEMANTICS(Max) {
  x.m(0) = static_cast<std::uint32_t>(
      std::max(static_cast<std::int32_t>(x.m(1)), static_cast<std::int32_t>(x.m(2))));
}
SEMANTICS(Cmpeq) { x.m(0) = x.m(1) == x.m(2); }
SEMANTICS(Cmpne) { x.m(0) = x.m(1) != x.m(2); }
SEMANTICS(Cmplt) { x.m(0) = static_cast<std::int32_t>(x.m(1)) < static_cast<std::int32_t>(x.m(2)); }
SEMANTICS(Cmpult) { x.m(0) = x.m(1) < x.m(2); }
SEMANTICS(Addi) { x.m(0) = x.m(1) + x.uimm(2); }
SEMANTICS(Muli) { x.m(0) = x.m(1) * x.uimm(2); }
SEMANTICS(Andi) { x.m(0) = x.m(1) & x.uimm(2); }
SEMANTICS(Ori) { x.m(0) = x.m(1) | x.uimm(2); }
SEMANTICS(Shli) { x.m(0) = x.m(1) << (x.uimm(2) & 31u); }
SEMANTICS(Shri) { x.m(0) = x.m(1) >> (x.uimm(2) & 31u); }
SEMANTICS(Cmplti) { x.m(0) = static_cast<std::int32_t>(x.m(1)) < x.imm(2); }
SEMANTICS(Cmpeqi) { x.m(0) = x.m(1) == x.uimm(2); }

// ---- memory (ARF): operands aD/aS, mB, offset (or mI) ----
template <std::uint32_t kBytes, typename X>
[[gnu::always_inline]] inline void load_a(X& x, std::uint32_t address) {
  std::uint32_t words[kBytes / 4];
  x.template load<kBytes>(address, words);
  x.defer_a(0, words, kBytes / 4);
}
template <std::uint32_t kBytes, typename X>
[[gnu::always_inline]] inline void store_a(X& x, std::uint32_t address) {
  x.template store<kBytes>(address, x.a(0));
}
// Post-increment: the access uses the old base; the base moves after it.
template <std::uint32_t kBytes, typename X>
[[gnu::always_inline]] inline void load_a_post(X& x) {
  load_a<kBytes>(x, x.m(1));
  x.m(1) += x.uimm(2);
}
template <std::uint32_t kBytes, typename X>
[[gnu::always_inline]] inline void store_a_post(X& x) {
  store_a<kBytes>(x, x.m(1));
  x.m(1) += x.uimm(2);
}

SEMANTICS(Ld32) { load_a<4>(x, x.m(1) + x.uimm(2)); }
SEMANTICS(Ld32pi) { load_a_post<4>(x); }
SEMANTICS(Ld64) { load_a<8>(x, x.m(1) + x.uimm(2)); }
SEMANTICS(Ld64pi) { load_a_post<8>(x); }
SEMANTICS(Ld128) { load_a<16>(x, x.m(1) + x.uimm(2)); }
SEMANTICS(Ld128pi) { load_a_post<16>(x); }
SEMANTICS(St32) { store_a<4>(x, x.m(1) + x.uimm(2)); }
SEMANTICS(St32pi) { store_a_post<4>(x); }
SEMANTICS(St64) { store_a<8>(x, x.m(1) + x.uimm(2)); }
SEMANTICS(St64pi) { store_a_post<8>(x); }
SEMANTICS(St128) { store_a<16>(x, x.m(1) + x.uimm(2)); }
SEMANTICS(St128pi) { store_a_post<16>(x); }
SEMANTICS(Ld64r) { load_a<8>(x, x.m(1) + x.m(2)); }
SEMANTICS(Ld128r) { load_a<16>(x, x.m(1) + x.m(2)); }
SEMANTICS(St64r) { store_a<8>(x, x.m(1) + x.m(2)); }
SEMANTICS(St128r) { store_a<16>(x, x.m(1) + x.m(2)); }

// ---- memory (MRF): operands mD, mA, offset ----
template <std::uint32_t kBytes, typename X>
inline std::uint32_t load_m(X& x, std::uint32_t address) {
  std::uint32_t value = 0;  // little-endian: the low bytes are the loaded ones
  x.template load<kBytes>(address, &value);
  return value;
}
SEMANTICS(Ldw) { x.m(0) = load_m<4>(x, x.m(1) + x.uimm(2)); }
SEMANTICS(Stw) { x.template store<4>(x.m(1) + x.uimm(2), &x.m(0)); }
// When mD and mA are the same register the loaded value wins.
SEMANTICS(Ldwpi) {
  std::uint32_t value = load_m<4>(x, x.m(1));
  x.m(1) += x.uimm(2);
  x.m(0) = value;
}
SEMANTICS(Stwpi) {
  x.template store<4>(x.m(1), &x.m(0));
  x.m(1) += x.uimm(2);
}
SEMANTICS(Ldhu) { x.m(0) = load_m<2>(x, x.m(1) + x.uimm(2)); }
SEMANTICS(Sth) { x.template store<2>(x.m(1) + x.uimm(2), &x.m(0)); }
SEMANTICS(Ldbu) { x.m(0) = load_m<1>(x, x.m(1) + x.uimm(2)); }
SEMANTICS(Stb) { x.template store<1>(x.m(1) + x.uimm(2), &x.m(0)); }

// ---- moves between register files ----
SEMANTICS(Movma) { x.defer_a(0, &x.m(1), 1); }
SEMANTICS(Movam) { x.m(0) = *x.a(1); }

// ---- control ----
SEMANTICS(Br) { x.next_pc = x.target(0); }
SEMANTICS(Brz) {
  if (x.m(0) == 0) x.next_pc = x.target(1);
}
SEMANTICS(Brnz) {
  if (x.m(0) != 0) x.next_pc = x.target(1);
}
SEMANTICS(Call) {
  x.m(0) = x.pc + isa::kBundleBytes;
  x.next_pc = x.target(1);
}
SEMANTICS(Jr) { x.next_pc = x.m(0); }

template <typename X>
inline void start_loop(X& x, std::uint32_t count, std::uint32_t bundles) {
  std::uint32_t begin = x.pc + isa::kBundleBytes;
  std::uint32_t end = begin + bundles * isa::kBundleBytes;
  if (count == 0 || bundles == 0) {
    x.next_pc = end;
    return;
  }
  x.ctx.loop_begin = begin;
  x.ctx.loop_end = end;
  x.ctx.loop_remaining = count;
}
SEMANTICS(Rpt) { start_loop(x, x.m(0), x.uimm(1)); }
SEMANTICS(Rpti) { start_loop(x, x.uimm(0), x.uimm(1)); }

// ---- contexts ----
SEMANTICS(Run) {
  TileState& tile = x.tile;
  if (tile.phase == Phase::Exchange)
    x.fault("run in an exchange phase (a superstep's exchange ends with xdone)");
  // The supervisor issues only in a slot no running worker owns, so an idle
  // worker always exists here.
  std::uint32_t idle = ~tile.running_workers & kAllWorkers;
  TILEC_CHECK(idle != 0, "run issued while every worker runs");
  int worker = std::countr_zero(idle);
  Context& started = tile.contexts[worker];
  started.m.fill(0);
  started.a.fill(0);
  started.m[0] = x.m(1);
  started.m[1] = static_cast<std::uint32_t>(worker);
  started.pc = x.m(0);
  started.entry = x.m(0);
  started.arguments = x.m(1);
  started.amp_instructions = 0;
  started.amp_macs = 0;
  started.loop_remaining = 0;
  started.started = x.cycle;
  tile.running_workers |= 1u << worker;
}

// The op symbol around `address` (a worker's argument block, a send's
// bundle), or kNoOpLabel.
inline std::uint32_t op_label_at(const TileState& tile, std::uint32_t address) {
  auto after = std::upper_bound(tile.op_labels.begin(), tile.op_labels.end(), address,
                                [](std::uint32_t at, const OpLabel& range) { return at < range.begin; });
  return after != tile.op_labels.begin() && address < std::prev(after)->end ? std::prev(after)->label : kNoOpLabel;
}

template <typename X>
inline void record_kernel(X& x) {
  TileState& tile = x.tile;
  std::uint32_t label = kUnnamedKernel;
  auto found = std::lower_bound(
      tile.kernel_labels.begin(), tile.kernel_labels.end(), x.ctx.entry,
      [](const EntryLabel& entry, std::uint32_t address) { return entry.address < address; });
  if (found != tile.kernel_labels.end() && found->address == x.ctx.entry) label = found->label;
  tile.events.push_back(ProfileEvent{x.ctx.started, x.cycle + 1, label, x.ctx.entry,
                                     ProfileEventKind::WorkerKernel, static_cast<std::uint8_t>(x.context),
                                     op_label_at(tile, x.ctx.arguments), x.ctx.amp_instructions, x.ctx.amp_macs});
}

SEMANTICS(Exit) {
  TileState& tile = x.tile;
  if constexpr (X::kTracing) record_kernel(x);
  tile.running_workers &= ~(1u << x.context);
  if (tile.running_workers != 0) return;
  // The last worker is gone: a supervisor waiting for it may go on.
  Context& supervisor = tile.contexts[kSupervisor];
  if (tile.wait == SupervisorWait::Workers) {
    supervisor.next_issue = std::max(supervisor.next_issue, x.cycle + 1);
  } else if (tile.wait == SupervisorWait::SyncWorkers) {
    tile.arrival = x.cycle + 1;
    tile.stop = Stop::Sync;
  }
  tile.wait = SupervisorWait::None;
}

SEMANTICS(Wsync) {
  if (x.tile.running_workers) x.tile.wait = SupervisorWait::Workers;
}

// Notes where the tile stops (or starts waiting to stop) for its supervisor.
template <typename X>
inline void mark_stop(X& x) {
  x.tile.stop_cycle = x.cycle;
  x.tile.stop_pc = x.pc;
  x.tile.stop_bundle = bundle_text(x.bundle);
}
template <typename X>
inline void stop_tile(X& x, Stop stop) {
  mark_stop(x);
  x.tile.stop = stop;
}

SEMANTICS(Sync) {
  TileState& tile = x.tile;
  if (tile.phase == Phase::Exchange) {
    // Ends the exchange phase first; the arrival waits for its data.
    stop_tile(x, Stop::Sync);
    return;
  }
  mark_stop(x);
  if (tile.running_workers) {
    tile.wait = SupervisorWait::SyncWorkers;
    return;
  }
  stop_tile(x, Stop::Sync);
  tile.arrival = x.cycle;
}

SEMANTICS(Halt) {
  TileState& tile = x.tile;
  if (tile.running_workers) {
    std::string running;
    for (int worker = 0; worker < kWorkers; ++worker)
      if (tile.running_workers >> worker & 1u)
        running += (running.empty() ? "" : ", ") + std::to_string(worker);
    x.fault("halt while worker{} {} still run{}", std::popcount(tile.running_workers) > 1 ? "s" : "",
            running, std::popcount(tile.running_workers) > 1 ? "" : "s");
  }
  stop_tile(x, Stop::Halt);
}

SEMANTICS(Getcount) { x.m(0) = static_cast<std::uint32_t>(x.cycle); }
SEMANTICS(Gettile) { x.m(0) = x.tile.index; }

// ---- exchange ----
// Checks that the bytes a send or receive moves are whole words of the
// tile's memory: [address, address + bytes), or under a pattern every run
// [address + i * stride, + run) for i < bytes / run.
template <typename X>
inline void check_exchange_buffer(X& x, const char* what, std::uint32_t address, std::uint32_t bytes,
                                  const ExchangePattern& pattern) {
  const SimConfig& config = *x.tile.config;
  if (bytes % 4) x.fault("{} of {} bytes: the length must be a multiple of 4", what, bytes);
  if (!pattern.contiguous() && bytes % pattern.run)
    x.fault("{} of {} bytes under a pattern of {}-byte runs: the length must be a whole number of runs",
            what, bytes, pattern.run);
  if (bytes == 0) return;
  const std::uint64_t end = std::uint64_t{config.memory_begin} + config.memory_bytes;
  if (pattern.contiguous()) {
    if (address < config.memory_begin || address + std::uint64_t{bytes} > end)
      x.fault("{} buffer {:#x}..{:#x} lies outside the tile's memory ({:#x}-{:#x})", what, address,
              std::uint64_t{address} + bytes, config.memory_begin, end);
  } else {
    // Runs ascend: the first outside memory is run 0 or the first past the end.
    const std::uint32_t runs = bytes / pattern.run;
    std::uint64_t outside = runs;
    if (address < config.memory_begin || address + std::uint64_t{pattern.run} > end)
      outside = 0;
    else if (address + std::uint64_t{runs - 1} * pattern.stride + pattern.run > end)
      outside = (end - pattern.run - address) / pattern.stride + 1;
    if (outside < runs) {
      const std::uint64_t first = address + outside * pattern.stride;
      x.fault("{} run {} of {} at {:#x}..{:#x} ({}-byte runs every {} bytes) lies outside the tile's memory "
              "({:#x}-{:#x})",
              what, outside, runs, first, first + pattern.run, pattern.run, pattern.stride, config.memory_begin,
              end);
    }
  }
  // Runs and strides are whole words, so an aligned start aligns every run.
  if (address % 4) x.fault("misaligned {} buffer at {:#x} (exchange moves 32-bit words)", what, address);
}

SEMANTICS(Xpat) {
  std::uint32_t run = x.m(0), stride = x.m(1);
  if (run == 0 || run % 4) x.fault("pattern run of {} bytes: a run must be a positive multiple of 4", run);
  if (stride % 4) x.fault("pattern stride of {} bytes: the stride must be a multiple of 4", stride);
  if (stride < run) x.fault("pattern stride of {} bytes is shorter than its {}-byte run", stride, run);
  x.tile.pattern = ExchangePattern{run, stride};
}

SEMANTICS(Send) {
  TileState& tile = x.tile;
  if (tile.phase == Phase::Compute) x.fault("send in a compute phase (after this superstep's xdone)");
  std::uint32_t address = x.m(0), bytes = x.m(1), destination = x.m(2);
  const ExchangePattern pattern = std::exchange(tile.pattern, ExchangePattern{});
  check_exchange_buffer(x, "send", address, bytes, pattern);
  if (destination >> 31) {
    std::uint32_t group = destination & 0xffffu;
    if (group >= tile.config->exchange_groups)
      x.fault("send to exchange group {}, but the package has {} groups", group,
              tile.config->exchange_groups);
  } else if (destination >= tile.config->tiles) {
    x.fault("send to tile {}, outside 0..{}", destination, tile.config->tiles - 1);
  }
  if (bytes == 0) return;
  auto offset = static_cast<std::uint32_t>(tile.payload.size());
  if (pattern.contiguous()) {
    tile.payload.insert(tile.payload.end(), tile.at(address), tile.at(address) + bytes);
  } else {
    // Gathered: the wire carries the runs back to back.
    for (std::uint32_t run = 0; run < bytes / pattern.run; ++run) {
      const std::uint8_t* from = tile.at(address + run * pattern.stride);
      tile.payload.insert(tile.payload.end(), from, from + pattern.run);
    }
  }
  tile.sends.push_back(SendRecord{x.pc, x.cycle, destination, bytes, offset});
  tile.stats.bytes_sent += bytes;
  // The machine's exchange bytes leave each cycle; the supervisor waits
  // until the last have left.
  const std::uint32_t cycles = exchange_cycles(*tile.config, bytes);
  x.stall_until = x.cycle + cycles;
  if constexpr (X::kTracing)
    tile.events.push_back(ProfileEvent{x.cycle, x.cycle + cycles, kExchangeLabel, bytes,
                                       ProfileEventKind::SupervisorExchange, kSupervisorContext, op_label_at(tile, x.pc), 0, 0,
                                       destination >> 31 ? kMulticastPeer | (destination & 0xffffu) : destination});
}

SEMANTICS(Recv) {
  TileState& tile = x.tile;
  if (tile.phase == Phase::Compute) x.fault("recv in a compute phase (after this superstep's xdone)");
  std::uint32_t address = x.m(0), bytes = x.m(1), source = x.m(2);
  const ExchangePattern pattern = std::exchange(tile.pattern, ExchangePattern{});
  check_exchange_buffer(x, "receive", address, bytes, pattern);
  if (source >= tile.config->tiles)
    x.fault("receive from tile {}, outside 0..{}", source, tile.config->tiles - 1);
  if (bytes == 0) return;
  tile.recvs.push_back(RecvRecord{x.pc, x.cycle, source, address, bytes, pattern});
}

// The stepping forms: a run of transfers into (or out of) consecutive
// bytes, from (or to) tiles a fixed distance apart, needs one bundle each.
SEMANTICS(Sendn) {
  Send(x);
  x.m(0) += x.m(1);
  x.m(2) += x.uimm(3);
}

SEMANTICS(Recvn) {
  Recv(x);
  x.m(0) += x.m(1);
  x.m(2) += x.uimm(3);
}

SEMANTICS(Xwait) { x.stall_until = x.tile.release + x.uimm(0); }

SEMANTICS(Xdone) {
  if (x.tile.phase == Phase::Exchange) stop_tile(x, Stop::Xdone);
}

}  // namespace tilec::sim::semantics
