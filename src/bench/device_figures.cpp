#include "bench/device_figures.h"

#include "graph/cost.h"

#include <algorithm>
#include <array>

namespace tilec::bench {

namespace {

AmpPrecision operand_precision(const graph::Graph& graph, const graph::Op& op) {
  const ElementType element = graph.type(op.operands.at(0)).storage.element;
  if (is_fp8(element)) return AmpPrecision::Fp8;
  return element == ElementType::F16 ? AmpPrecision::Fp16 : AmpPrecision::Fp32;
}

// MACs per precision, repeat bodies counted `count` times.
void add_macs(const graph::Graph& graph, double times, std::array<double, 3>& macs) {
  for (const graph::Op& op : graph.ops) {
    if (op.kind == graph::OpKind::Repeat) {
      add_macs(*op.body, times * static_cast<double>(op.count), macs);
    } else if (const std::int64_t op_macs = graph::op_macs(graph, op); op_macs > 0) {
      macs[static_cast<std::size_t>(operand_precision(graph, op))] += times * static_cast<double>(op_macs);
    }
  }
}

std::array<double, 3> macs_by_precision(const graph::Graph& graph) {
  std::array<double, 3> macs{};
  add_macs(graph, 1.0, macs);
  return macs;
}

}  // namespace

double roofline_cycles(const graph::Graph& graph, const MachineModel& machine) {
  const std::array<double, 3> macs = macs_by_precision(graph);
  double cycles = 0;
  for (AmpPrecision precision : {AmpPrecision::Fp8, AmpPrecision::Fp16, AmpPrecision::Fp32})
    cycles += machine.roofline_cycles(macs[static_cast<std::size_t>(precision)], precision);
  return cycles;
}

AmpPrecision dominant_precision(const graph::Graph& graph) {
  const std::array<double, 3> macs = macs_by_precision(graph);
  const auto most = std::max_element(macs.begin(), macs.end());
  if (*most == 0) return AmpPrecision::Fp32;
  return static_cast<AmpPrecision>(most - macs.begin());
}

std::int64_t binding_bytes(const package::Package& package, package::BindingRole role) {
  std::int64_t bytes = 0;
  for (const package::Binding& binding : package.bindings) {
    if (binding.role != role) continue;
    for (const package::Piece& piece : binding.pieces)
      bytes += graph::TensorType{piece.size, binding.type.storage}.bytes();
  }
  return bytes;
}

std::uint32_t peak_tile_bytes(const package::Package& package) {
  std::uint32_t peak = 0;
  for (const package::TileImage& tile : package.tiles) peak = std::max(peak, tile.peak_bytes);
  return peak;
}

}  // namespace tilec::bench
