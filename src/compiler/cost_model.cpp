#include "compiler/cost_model.h"

#include <algorithm>
#include <map>

namespace tilec::compiler {

int amp_bundles_per_k(ElementType operand) {
  switch (operand) {
    case ElementType::F32: return 16;
    case ElementType::F16: return 4;
    default: return 2;
  }
}

const KernelCosts& kernel_costs() {
  static const KernelCosts costs;
  return costs;
}

double gemm_tile_cycles(std::int64_t blocks, std::int64_t k_steps, ElementType operand, bool drain_f32) {
  if (blocks == 0 || k_steps == 0) return 0;
  const KernelCosts& costs = kernel_costs();
  // Workers take whole 16x16 blocks: the busiest has ceil(blocks / 6).
  double jobs = static_cast<double>((blocks + 5) / 6);
  double per_job = static_cast<double>(k_steps) * amp_bundles_per_k(operand) + costs.gemm_job_setup +
                   (drain_f32 ? costs.gemm_drain_f32 : costs.gemm_drain_f16);
  return 6 * (jobs * per_job + costs.worker_start) + costs.run_workers;
}

double map_bundles_per_8(int inputs, ElementType input_type, const std::vector<EpilogueOp>& epilogue,
                         ElementType output) {
  // Main slot: 16-byte loads and stores; float slot: conversions and math.
  double main = 0, flt = 0;
  auto load_cost = [](ElementType type) { return type == ElementType::F32 ? 2.0 : 1.0; };
  main += inputs * load_cost(input_type);
  bool in_f32 = input_type == ElementType::F32;
  if (inputs > 1) flt += (inputs - 1) * 2 + (in_f32 ? 0 : inputs * 2);  // widen to f32 and add
  bool as_f32 = inputs > 1 || in_f32;
  for (const EpilogueOp& op : epilogue) {
    switch (op.kind) {
      case EpilogueOp::Kind::AddBias:
        if (!as_f32) flt += 2;
        flt += 2;
        as_f32 = true;
        break;
      case EpilogueOp::Kind::Gelu:
        if (as_f32 && op.result.element == ElementType::F16) flt += 2;  // round to f16 first
        flt += 2;
        as_f32 = op.result.element == ElementType::F32;
        break;
      case EpilogueOp::Kind::Cast: flt += is_fp8(op.result.element) ? (as_f32 ? 3 : 1) : 2; break;
    }
  }
  main += output == ElementType::F32 ? 2 : 1;
  return std::max(main, flt) + 0.5;
}

double map_tile_cycles(std::int64_t elements, int inputs, ElementType input_type,
                       const std::vector<EpilogueOp>& epilogue, ElementType output) {
  if (elements == 0) return 0;
  const KernelCosts& costs = kernel_costs();
  double groups = static_cast<double>((elements + 7) / 8);
  double worker_bundles = groups / 6 * map_bundles_per_8(inputs, input_type, epilogue, output) +
                          costs.map_job_setup + costs.worker_start;
  return 6 * worker_bundles + costs.run_workers;
}

double exchange_cycles(std::int64_t bytes_in, std::int64_t bytes_out, std::int64_t transfers,
                       const MachineModel& machine) {
  if (bytes_in == 0 && bytes_out == 0) return 0;
  const KernelCosts& costs = kernel_costs();
  double streaming = static_cast<double>(std::max(bytes_in, bytes_out)) / machine.exchange_bytes_per_cycle;
  return streaming + static_cast<double>(transfers) * 2 * costs.supervisor_bundle + costs.exchange_latency;
}

RearrangeCost rearrange_cost(const ColumnLayout& from, const ColumnLayout& to) {
  RearrangeCost cost;
  int tiles = 0;
  for (const auto& list : from.tiles)
    for (int tile : list) tiles = std::max(tiles, tile + 1);
  for (const auto& list : to.tiles)
    for (int tile : list) tiles = std::max(tiles, tile + 1);
  // The source part each tile holds (at most one per tile in our layouts).
  std::vector<int> held(static_cast<std::size_t>(tiles), -1);
  for (std::size_t part = 0; part < from.parts.size(); ++part)
    for (int tile : from.tiles[part]) held[static_cast<std::size_t>(tile)] = static_cast<int>(part);
  std::vector<std::int64_t> sent(static_cast<std::size_t>(tiles), 0), sends(static_cast<std::size_t>(tiles), 0);
  auto holds = [&](int tile, std::int64_t begin, std::int64_t end) {
    int part = held[static_cast<std::size_t>(tile)];
    return part >= 0 && from.parts[static_cast<std::size_t>(part)].begin <= begin &&
           end <= from.parts[static_cast<std::size_t>(part)].end;
  };
  // Both layouts list their parts in column order: sweep them together.
  std::size_t first_source = 0;
  for (std::size_t part = 0; part < to.parts.size(); ++part) {
    const Range want = to.parts[part];
    while (first_source < from.parts.size() && from.parts[first_source].end <= want.begin) ++first_source;
    std::int64_t pieces = 0;
    for (std::size_t source = first_source; source < from.parts.size() && from.parts[source].begin < want.end; ++source) {
      const Range have = from.parts[source];
      std::int64_t begin = std::max(want.begin, have.begin), end = std::min(want.end, have.end);
      if (begin >= end) continue;
      ++pieces;
      bool needed = false;
      for (int tile : to.tiles[part])
        if (!holds(tile, begin, end)) {
          needed = true;
          break;
        }
      if (!needed) continue;
      std::size_t sender = static_cast<std::size_t>(from.tiles[source].front());
      sent[sender] += end - begin;
      sends[sender] += 1;
    }
    for (int tile : to.tiles[part]) {
      int local = held[static_cast<std::size_t>(tile)];
      std::int64_t overlap = 0;
      if (local >= 0) {
        const Range have = from.parts[static_cast<std::size_t>(local)];
        overlap = std::max<std::int64_t>(0, std::min(want.end, have.end) - std::max(want.begin, have.begin));
      }
      std::int64_t incoming = want.size() - overlap;
      cost.columns_in = std::max(cost.columns_in, incoming);
      if (incoming > 0) cost.transfers = std::max(cost.transfers, pieces);
    }
  }
  for (std::size_t tile = 0; tile < sent.size(); ++tile) {
    cost.columns_out = std::max(cost.columns_out, sent[tile]);
    cost.transfers = std::max(cost.transfers, sends[tile]);
  }
  return cost;
}

}  // namespace tilec::compiler
