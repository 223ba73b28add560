#include "target/machine.h"

#include "support/error.h"

#include <charconv>

namespace tilec {

const MemoryClass* MachineModel::class_of(std::uint32_t address, std::uint32_t size) const {
  if (standard.contains(address, size)) return &standard;
  if (interleaved.contains(address, size)) return &interleaved;
  return nullptr;
}

std::uint32_t MachineModel::exchange_latency(std::uint32_t from, std::uint32_t to) const {
  std::uint32_t a = column(from), b = column(to);
  return exchange_base_latency + exchange_hop_latency * (a > b ? a - b : b - a);
}

std::uint32_t MachineModel::amp_macs_per_cycle(AmpPrecision precision) const {
  switch (precision) {
    case AmpPrecision::Fp8: return amp_fp8_macs;
    case AmpPrecision::Fp16: return amp_fp16_macs;
    case AmpPrecision::Fp32: return amp_fp32_macs;
  }
  return amp_fp32_macs;
}

double MachineModel::roofline_cycles(double macs, AmpPrecision precision) const {
  return macs / (static_cast<double>(amp_macs_per_cycle(precision)) * tiles);
}

const MachineModel& ipu21() {
  static const MachineModel model;
  return model;
}

MachineModel ipu21_cut(std::uint32_t tiles) {
  if (tiles < 1 || tiles > ipu21().tiles)
    throw_bad_input("target", "tile count {} is outside 1..{}", tiles, ipu21().tiles);
  MachineModel model = ipu21();
  model.tiles = tiles;
  if (tiles != ipu21().tiles) model.name = "ipu21:" + std::to_string(tiles);
  return model;
}

MachineModel machine_by_name(std::string_view name) {
  if (name == "ipu21") return ipu21();
  constexpr std::string_view prefix = "ipu21:";
  if (name.substr(0, prefix.size()) == prefix) {
    std::string_view digits = name.substr(prefix.size());
    std::uint32_t tiles = 0;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), tiles);
    if (error == std::errc() && end == digits.data() + digits.size()) return ipu21_cut(tiles);
  }
  throw_bad_input("target", "unknown target '{}' (expected 'ipu21' or 'ipu21:N')", name);
}

}  // namespace tilec
