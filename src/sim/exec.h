// What an instruction's semantics see: typed access to its operands, the
// issuing context's registers, the tile's memory with every access check,
// and the few scheduler hooks (stall, stop, start a worker).
//
// One Exec exists per issued bundle. Its main-slot instruction runs first,
// its float-slot instruction second; a main-slot write to the ARF is held
// back until the float slot has read its operands, so both instructions see
// the registers as they were before the bundle.
#pragma once

#include "sim/tile_state.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

namespace tilec::sim {

enum class Access : std::uint8_t { Load, Store };

// Throws the fault for a bad memory access (out of range, misaligned, or
// 128 bits in standard memory), naming the access.
[[noreturn]] void memory_fault(const TileState& tile, int context, std::uint32_t pc,
                               const DecodedBundle& bundle, Access access, std::uint32_t bytes,
                               std::uint32_t address);

template <bool kTrace>
struct Exec {
  static constexpr bool kTracing = kTrace;

  TileState& tile;
  Context& ctx;
  const DecodedBundle& bundle;
  const isa::Instruction* ins;  // the instruction now executing
  int context;
  std::uint32_t pc;
  std::uint64_t cycle;

  // Effects for the scheduler.
  std::uint32_t next_pc;
  std::uint64_t stall_until = 0;  // earliest next issue of this context
  // A main-slot ARF write, applied after the float slot has read.
  std::uint32_t pending_words[4];
  std::int32_t pending_register = 0;
  std::int32_t pending_count = 0;

  Exec(TileState& tile_, Context& ctx_, const DecodedBundle& bundle_, int context_,
       std::uint64_t cycle_)
      : tile(tile_), ctx(ctx_), bundle(bundle_), ins(&bundle_.main), context(context_),
        pc(ctx_.pc), cycle(cycle_), next_pc(ctx_.pc + isa::kBundleBytes) {}

  // ---- operands ----
  std::int32_t imm(int k) const { return ins->operands[k]; }
  std::uint32_t uimm(int k) const { return static_cast<std::uint32_t>(ins->operands[k]); }
  std::uint32_t& m(int k) { return ctx.m[ins->operands[k]]; }
  std::uint32_t* a(int k) { return &ctx.a[ins->operands[k]]; }
  float f(int k) { return std::bit_cast<float>(ctx.a[ins->operands[k]]); }
  std::uint32_t target(int k) const {
    return pc + static_cast<std::uint32_t>(ins->operands[k]) * isa::kBundleBytes;
  }
  const float* fp8_table(int k) const { return tile.config->fp8_tables[ins->operands[k]]; }

  // Main slot: the ARF write that lands after the float slot has read.
  void defer_a(int k, const void* bytes, int words) {
    pending_register = ins->operands[k];
    pending_count = words;
    std::memcpy(pending_words, bytes, static_cast<std::size_t>(words) * 4);
  }
  // Float slot: a result written straight to the ARF (its operands are read).
  void write_a(int k, const std::uint32_t* words, int count) {
    std::memcpy(&ctx.a[ins->operands[k]], words, static_cast<std::size_t>(count) * 4);
  }

  // ---- memory ----
  template <std::uint32_t kBytes, Access kAccess>
  [[gnu::always_inline]] std::uint8_t* checked(std::uint32_t address) {
    const SimConfig& config = *tile.config;
    if (address - config.memory_begin > config.memory_bytes - kBytes || (address & (kBytes - 1)) ||
        (kBytes == 16 && address - config.interleaved_begin > config.interleaved_bytes - 16))
      [[unlikely]]
      memory_fault(tile, context, pc, bundle, kAccess, kBytes, address);
    return tile.at(address);
  }
  template <std::uint32_t kBytes>
  [[gnu::always_inline]] void load(std::uint32_t address, void* out) {
    std::memcpy(out, checked<kBytes, Access::Load>(address), kBytes);
    tile.stats.bytes_loaded += kBytes;
    tile.touch(address, kBytes);
  }
  template <std::uint32_t kBytes>
  [[gnu::always_inline]] void store(std::uint32_t address, const void* in) {
    std::memcpy(checked<kBytes, Access::Store>(address), in, kBytes);
    tile.stats.bytes_stored += kBytes;
    tile.wrote(address, kBytes);
  }

  // ---- faults ----
  template <typename... Args>
  [[noreturn]] void fault(fmt::format_string<Args...> format, Args&&... args) {
    throw Fault(tile.index, context, pc, bundle_text(bundle),
                fmt::format(format, std::forward<Args>(args)...));
  }
};

}  // namespace tilec::sim
