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
  double work = static_cast<double>(blocks) * static_cast<double>(k_steps) * amp_bundles_per_k(operand);
  // Jobs per worker: its share of blocks, plus one where a block is split
  // between two workers.
  double jobs = static_cast<double>((blocks + 5) / 6) + (blocks % 6 ? 1 : 0);
  double per_job = costs.gemm_job_setup + (drain_f32 ? costs.gemm_drain_f32 : costs.gemm_drain_f16);
  double worker_bundles = work / 6 + jobs * per_job + costs.worker_start;
  return 6 * worker_bundles + costs.run_workers;
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

RearrangeCost rearrange_cost(const ColumnLayout& from, const ColumnLayout& to, std::int64_t rows,
                             std::uint32_t element_bytes) {
  RearrangeCost cost;
  std::int64_t row_bytes = rows * element_bytes;
  std::map<int, std::int64_t> sent;     // source tile -> bytes
  std::map<int, std::int64_t> sends;    // source tile -> transfers
  for (std::size_t part = 0; part < to.parts.size(); ++part) {
    const Range want = to.parts[part];
    // Pieces of the source layout that overlap the wanted columns; each is
    // sent once (multicast) by its first replica to every wanting tile that
    // does not already hold it.
    for (std::size_t source = 0; source < from.parts.size(); ++source) {
      Range have = from.parts[source];
      std::int64_t begin = std::max(want.begin, have.begin), end = std::min(want.end, have.end);
      if (begin >= end) continue;
      std::int64_t receivers = 0;
      for (int tile : to.tiles[part]) {
        Range local = from.columns_on(tile);
        if (local.begin <= begin && end <= local.end) continue;
        ++receivers;
      }
      if (receivers == 0) continue;
      int sender = from.tiles[source].front();
      sent[sender] += (end - begin) * row_bytes;
      sends[sender] += 1;
    }
  }
  for (std::size_t part = 0; part < to.parts.size(); ++part) {
    for (int tile : to.tiles[part]) {
      Range local = from.columns_on(tile);
      Range want = to.parts[part];
      std::int64_t overlap = std::max<std::int64_t>(0, std::min(want.end, local.end) - std::max(want.begin, local.begin));
      std::int64_t incoming = (want.size() - overlap) * row_bytes;
      std::int64_t pieces = 0;
      for (const Range& have : from.parts)
        if (std::max(want.begin, have.begin) < std::min(want.end, have.end)) ++pieces;
      cost.bytes_in = std::max(cost.bytes_in, incoming);
      cost.buffer_bytes = std::max(cost.buffer_bytes, want.size() * row_bytes);
      cost.transfers = std::max(cost.transfers, incoming > 0 ? pieces : 0);
    }
  }
  for (const auto& [tile, bytes] : sent) cost.bytes_out = std::max(cost.bytes_out, bytes);
  for (const auto& [tile, count] : sends) cost.transfers = std::max(cost.transfers, count);
  return cost;
}

}  // namespace tilec::compiler
