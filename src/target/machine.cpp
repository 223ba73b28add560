#include "target/machine.h"

#include "support/error.h"
#include "target/machine_description.h"

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
  return machine_with_overrides(ipu21(), "tiles=" + std::to_string(tiles));
}

}  // namespace tilec
