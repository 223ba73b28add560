// The machine model: every number tilec knows about the chip, defined once.
//
// `ipu21` is the 1,472-tile C600-class chip of ../shared/machine-model.md;
// `ipu21:N` is the same chip cut to its first N tiles, for fast tests.
// Other presets, overrides and machine files are machine_description.h's.
// The compiler plans against these numbers and the simulator enforces them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tilec {

enum class MemoryClassKind : std::uint8_t { Standard, Interleaved };

struct MemoryClass {
  MemoryClassKind kind;
  const char* name;
  std::uint32_t begin;  // first byte address
  std::uint32_t end;    // one past the last byte
  std::uint32_t load_bytes_per_cycle;
  bool executable;

  std::uint32_t bytes() const { return end - begin; }
  bool contains(std::uint32_t address, std::uint32_t size = 1) const {
    return address >= begin && address <= end && size <= end - address;
  }
};

enum class AmpPrecision : std::uint8_t { Fp8, Fp16, Fp32 };

struct MachineModel {
  std::string name = "ipu21";    // its canonical spelling (machine_description.h)
  std::string preset = "ipu21";  // the preset it derives from
  std::uint32_t tiles = 1472;

  // Tile memory: one address space per tile, code and data alike.
  std::uint32_t memory_begin = 0x4C000;
  std::uint32_t memory_end = 0xE8000;  // 638,976 bytes = 624 KiB
  MemoryClass standard{MemoryClassKind::Standard, "standard", 0x4C000, 0x80000, 8, true};
  MemoryClass interleaved{MemoryClassKind::Interleaved, "interleaved", 0x80000, 0xE8000, 16,
                          false};

  // Issue: barrel scheduling over `issue_slots` slots; worker k owns slot k
  // while it runs; a context issues at most once every `issue_slots` cycles.
  std::uint32_t worker_contexts = 6;
  std::uint32_t issue_slots = 6;

  // Matrix unit (AMP) multiply-accumulates per tile per cycle, and whether
  // it takes FP8 at all (FP16 and FP32 it always takes).
  bool amp_fp8 = true;
  std::uint32_t amp_fp8_macs = 128;
  std::uint32_t amp_fp16_macs = 64;
  std::uint32_t amp_fp32_macs = 16;

  // Exchange: bulk-synchronous; per-tile send and receive bandwidth; the
  // latency from tile a to tile b is base + hop * |column(a) - column(b)|
  // (our topology: columns of `tiles_per_column` tiles).
  std::uint32_t exchange_bytes_per_cycle = 4;
  std::uint32_t tiles_per_column = 64;
  std::uint32_t exchange_base_latency = 16;
  std::uint32_t exchange_hop_latency = 2;
  std::uint32_t sync_cycles = 600;

  double clock_ghz = 1.5;

  // A tile that runs this many cycles without reaching a sync or halting
  // has run away.
  std::uint64_t watchdog_cycles = 50'000'000;

  std::uint32_t memory_bytes() const { return memory_end - memory_begin; }
  const MemoryClass& memory_class(MemoryClassKind kind) const {
    return kind == MemoryClassKind::Standard ? standard : interleaved;
  }
  // nullptr when the range is not inside one memory class.
  const MemoryClass* class_of(std::uint32_t address, std::uint32_t size = 1) const;

  std::uint32_t column(std::uint32_t tile) const { return tile / tiles_per_column; }
  std::uint32_t exchange_latency(std::uint32_t from, std::uint32_t to) const;
  std::uint32_t amp_macs_per_cycle(AmpPrecision precision) const;
  // Compute lower bound for `macs` multiply-accumulates spread over every tile.
  double roofline_cycles(double macs, AmpPrecision precision) const;
};

// The full chip.
const MachineModel& ipu21();
// The chip cut to its first `tiles` tiles (1..1472).
MachineModel ipu21_cut(std::uint32_t tiles);
// Any target spelling: a preset, PRESET:N, PRESET:field=value,... or a
// machine file (machine_description.h); BadInput naming what is wrong.
MachineModel machine_by_name(std::string_view name);

}  // namespace tilec
