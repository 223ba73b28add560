// Running the split-column row kernels (kernels/row_stats.S, row_apply.S)
// on one simulated tile, for the kernel tests: a tile's block of P panels x
// C columns of a row-major matrix, its workers shared as split_row_block
// shares them, the statistics records read back as FP32 values, and a host
// model of the kernels' exact arithmetic (docs/kernels.md, "Split-column
// row kernels").
#pragma once

#include "compiler/cost_model.h"
#include "kernel_harness.h"
#include "numerics/fp16.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

namespace tilec::compiler::testing {

// A tile's share of a row-major [rows][width] matrix: all its rows, columns
// [first_column, first_column + columns).
struct RowBlock {
  const std::vector<float>* matrix = nullptr;  // values of the input type
  std::int64_t width = 0;
  std::int64_t panels = 0;
  std::int64_t first_column = 0;
  std::int64_t columns = 0;
  std::int64_t rows() const { return 16 * panels; }
  float at(std::int64_t row, std::int64_t column) const {
    return (*matrix)[static_cast<std::size_t>(row * width + first_column + column)];
  }
};

inline std::uint32_t bits_of(float value) { return std::bit_cast<std::uint32_t>(value); }

// The block in the panel format [column][panel][16 rows].
inline std::vector<std::uint8_t> panel_bytes(const RowBlock& block, ElementType type) {
  const std::int64_t rows = block.rows();
  const std::uint32_t bytes = element_bytes(type);
  std::vector<std::uint8_t> stored(static_cast<std::size_t>(rows * block.columns) * bytes);
  for (std::int64_t column = 0; column < block.columns; ++column)
    for (std::int64_t row = 0; row < rows; ++row) {
      const std::size_t at = static_cast<std::size_t>(column * rows + row) * bytes;
      const float value = block.at(row, column);
      if (type == ElementType::F16) {
        const std::uint16_t half = float_to_half(value);
        std::memcpy(&stored[at], &half, 2);
      } else {
        std::memcpy(&stored[at], &value, 4);
      }
    }
  return stored;
}

// Row-major [rows][columns] values of panel-format bytes.
inline std::vector<float> from_panels(const std::vector<std::uint8_t>& bytes, std::int64_t rows, std::int64_t columns,
                                      ElementType type) {
  std::vector<float> values(static_cast<std::size_t>(rows * columns));
  const std::uint32_t size = element_bytes(type);
  for (std::int64_t column = 0; column < columns; ++column)
    for (std::int64_t row = 0; row < rows; ++row) {
      const std::size_t at = static_cast<std::size_t>(column * rows + row) * size;
      float value;
      if (type == ElementType::F16) {
        std::uint16_t half;
        std::memcpy(&half, &bytes[at], 2);
        value = half_to_float(half);
      } else {
        std::memcpy(&value, &bytes[at], 4);
      }
      values[static_cast<std::size_t>(row * columns + column)] = value;
    }
  return values;
}

// One slot's statistics: per row, the first (mean or m) and the second (M2
// or l), and the slot's column count.
struct SlotStatistics {
  std::vector<float> first, second;
  std::int64_t columns = 0;
};

// A slot's records: per half panel, 8 first then 8 second statistics.
inline std::vector<float> records_of(const SlotStatistics& slot) {
  std::vector<float> records;
  for (std::size_t half = 0; half < slot.first.size() / 8; ++half) {
    for (std::size_t r = 0; r < 8; ++r) records.push_back(slot.first[8 * half + r]);
    for (std::size_t r = 0; r < 8; ++r) records.push_back(slot.second[8 * half + r]);
  }
  return records;
}

inline SlotStatistics slot_of_records(const std::vector<float>& records, std::size_t offset, std::int64_t rows,
                                      std::int64_t columns) {
  SlotStatistics slot;
  slot.columns = columns;
  for (std::int64_t half = 0; half < rows / 8; ++half) {
    for (std::size_t r = 0; r < 8; ++r) slot.first.push_back(records[offset + static_cast<std::size_t>(16 * half) + r]);
    for (std::size_t r = 0; r < 8; ++r) slot.second.push_back(records[offset + static_cast<std::size_t>(16 * half) + 8 + r]);
  }
  return slot;
}

// ---- The host model of the kernels' arithmetic (all FP32) ----

// s / c correctly rounded as the kernels compute it: q0 = s (1/c), then
// Markstein's correction with the exact residual s - q0 c.
inline float divide_by_count(float s, float c) {
  const float r = 1.0f / c;
  const float q0 = s * r;
  const float residual = std::fma(q0, -c, s);
  return std::fma(residual, r, q0);
}

// The statistics of every row of a block over its columns.
inline SlotStatistics model_statistics(RowKernel kernel, const RowBlock& block) {
  SlotStatistics slot;
  slot.columns = block.columns;
  const float count = static_cast<float>(block.columns);
  for (std::int64_t row = 0; row < block.rows(); ++row) {
    float first = 0.0f, second = 0.0f;
    if (kernel == RowKernel::LayerNorm) {
      float sum = 0.0f;
      for (std::int64_t c = 0; c < block.columns; ++c) sum += block.at(row, c);
      first = divide_by_count(sum, count);
      for (std::int64_t c = 0; c < block.columns; ++c) {
        const float d = block.at(row, c) - first;
        second += d * d;
      }
    } else {
      first = -std::numeric_limits<float>::infinity();
      for (std::int64_t c = 0; c < block.columns; ++c) first = std::fmax(first, block.at(row, c));
      for (std::int64_t c = 0; c < block.columns; ++c) second += std::exp(block.at(row, c) - first);
    }
    slot.first.push_back(first);
    slot.second.push_back(second);
  }
  return slot;
}

// Per row, the slots merged in slot order (as the merge kernels and the
// start of the apply kernels compute it): layernorm mean and M2, softmax M
// and L.
inline std::pair<float, float> model_merge_row(RowKernel kernel, const std::vector<SlotStatistics>& slots,
                                               std::size_t row, std::int64_t total_columns) {
  if (kernel == RowKernel::LayerNorm) {
    float s = 0.0f, m2 = 0.0f;
    for (const SlotStatistics& slot : slots) {
      s = std::fma(slot.first[row], static_cast<float>(slot.columns), s);
      m2 += slot.second[row];
    }
    const float mean = divide_by_count(s, static_cast<float>(total_columns));
    for (const SlotStatistics& slot : slots) {
      const float d = slot.first[row] - mean;
      m2 = std::fma(d * static_cast<float>(slot.columns), d, m2);
    }
    return {mean, m2};
  }
  float largest = -std::numeric_limits<float>::infinity(), l = 0.0f;
  for (const SlotStatistics& slot : slots) largest = std::fmax(largest, slot.first[row]);
  for (const SlotStatistics& slot : slots) l = std::fma(slot.second[row], std::exp(slot.first[row] - largest), l);
  return {largest, l};
}

// The merged slot of `slots` (of a row of `total_columns`).
inline SlotStatistics model_merge(RowKernel kernel, const std::vector<SlotStatistics>& slots,
                                  std::int64_t total_columns) {
  SlotStatistics merged;
  merged.columns = total_columns;
  for (std::size_t row = 0; row < slots.front().first.size(); ++row) {
    const auto [first, second] = model_merge_row(kernel, slots, row, total_columns);
    merged.first.push_back(first);
    merged.second.push_back(second);
  }
  return merged;
}

// Per row, what the apply kernels compute from the slots: layernorm mean
// and inv, softmax M and inv.
struct CombinedRow {
  float centre = 0.0f;
  float inverse = 0.0f;
};

inline CombinedRow model_combine(RowKernel kernel, const std::vector<SlotStatistics>& slots, std::size_t row,
                                 std::int64_t total_columns, float epsilon) {
  const auto [centre, second] = model_merge_row(kernel, slots, row, total_columns);
  if (kernel == RowKernel::LayerNorm)
    return {centre, 1.0f / std::sqrt(divide_by_count(second, static_cast<float>(total_columns)) + epsilon)};
  return {centre, 1.0f / second};
}

// The apply kernel's output over the block's columns, row-major; gamma and
// beta of the block's columns.
inline std::vector<float> model_apply(RowKernel kernel, ElementType output, const RowBlock& block,
                                      const std::vector<SlotStatistics>& slots, std::int64_t total_columns,
                                      const std::vector<float>& gamma, const std::vector<float>& beta, float epsilon) {
  std::vector<float> out;
  for (std::int64_t row = 0; row < block.rows(); ++row) {
    const CombinedRow c = model_combine(kernel, slots, static_cast<std::size_t>(row), total_columns, epsilon);
    for (std::int64_t column = 0; column < block.columns; ++column) {
      const float x = block.at(row, column);
      float value;
      if (kernel == RowKernel::LayerNorm)
        value = ((x - c.centre) * c.inverse) * gamma[static_cast<std::size_t>(column)] +
                beta[static_cast<std::size_t>(column)];
      else
        value = std::exp(x - c.centre) * c.inverse;
      out.push_back(output == ElementType::F16 ? round_to_half(value) : value);
    }
  }
  return out;
}

// ---- Running the kernels ----

// A library with every split-column row kernel, and the whole-row ones
// to compare with.
inline KernelLibrary split_row_kernels() {
  KernelLibrary library;
  for (bool layernorm : {true, false}) {
    library.row(RowVariant{.layernorm = layernorm, .input = ElementType::F32, .output = ElementType::F32,
                           .stage = RowStage::Merge});
    for (ElementType input : {ElementType::F16, ElementType::F32}) {
      library.row(RowVariant{.layernorm = layernorm, .input = input, .output = ElementType::F32,
                             .stage = RowStage::Statistics});
      for (ElementType output : {ElementType::F16, ElementType::F32}) {
        library.row(RowVariant{.layernorm = layernorm, .input = input, .output = output, .stage = RowStage::Apply});
        library.row(RowVariant{.layernorm = layernorm, .input = input, .output = output});
      }
    }
  }
  return library;
}

inline const KernelHarness& split_row_harness() {
  static const KernelHarness instance{split_row_kernels()};
  return instance;
}

inline std::string split_kernel_name(RowKernel kernel, RowStage stage, ElementType input, ElementType output) {
  const char* op = kernel == RowKernel::LayerNorm ? "layernorm" : "softmax";
  if (stage == RowStage::Statistics) return fmt::format("{}_stats_{}", op, element_type_name(input));
  if (stage == RowStage::Merge) return fmt::format("{}_merge", op);
  return fmt::format("{}_apply_{}_{}", op, element_type_name(input), element_type_name(output));
}

struct SplitRun {
  std::vector<RowWorkerShare> shares;
  KernelResult result;
  std::vector<float> values;  // statistics: the slots' records, one slot after the other; apply: row-major output
};

// The statistics kernel over a block in `ranges` column ranges: slot r of
// the result is range r's.
inline SplitRun run_statistics(RowKernel kernel, ElementType input, const RowBlock& block, int ranges) {
  const std::uint32_t in_bytes = element_bytes(input);
  const auto rows = static_cast<std::uint32_t>(block.rows());
  const auto slot_bytes = static_cast<std::uint32_t>(row_statistics_bytes(block.panels));
  DataPlaces places;
  const std::uint32_t in = places.take(rows * static_cast<std::uint32_t>(block.columns) * in_bytes);
  const std::uint32_t stats = places.take(slot_bytes * static_cast<std::uint32_t>(ranges));
  SplitRun run;
  run.shares = split_row_block(block.panels, block.columns, ranges);
  KernelRun kernel_run{split_kernel_name(kernel, RowStage::Statistics, input, ElementType::F32),
                       {},
                       {{in, panel_bytes(block, input)}},
                       {{stats, slot_bytes * static_cast<std::uint32_t>(ranges)}}};
  for (const RowWorkerShare& share : run.shares) {
    const auto half = static_cast<std::uint32_t>(share.first_half_panel);
    kernel_run.blocks.push_back({static_cast<std::uint32_t>(share.half_panels), static_cast<std::uint32_t>(share.columns),
                                 in + (static_cast<std::uint32_t>(share.first_column) * rows + 8 * half) * in_bytes,
                                 rows * in_bytes, stats + static_cast<std::uint32_t>(share.range) * slot_bytes + 64 * half});
  }
  run.result = split_row_harness().run(kernel_run);
  const std::vector<std::uint8_t>& bytes = run.result.outputs[0];
  run.values.resize(bytes.size() / 4);
  std::memcpy(run.values.data(), bytes.data(), bytes.size());
  return run;
}

// `slots` (records of its own, 16 bytes apart beyond a slot's size, so the
// stride is no slot's size) and their counts in the data places.
struct PlacedSlots {
  std::uint32_t records = 0, counts = 0, stride = 0;
  std::vector<Bytes> inputs;
};

inline PlacedSlots place_slots(DataPlaces& places, const std::vector<SlotStatistics>& slots, std::int64_t panels) {
  PlacedSlots placed;
  placed.stride = static_cast<std::uint32_t>(row_statistics_bytes(panels)) + 16;
  std::vector<float> records, counts;
  for (const SlotStatistics& slot : slots) {
    std::vector<float> one = records_of(slot);
    one.resize(placed.stride / 4, std::numeric_limits<float>::quiet_NaN());
    records.insert(records.end(), one.begin(), one.end());
    counts.push_back(static_cast<float>(slot.columns));
  }
  placed.records = places.take(static_cast<std::uint32_t>(records.size()) * 4);
  placed.counts = places.take(static_cast<std::uint32_t>(counts.size()) * 4);
  placed.inputs = {{placed.records, bytes_of(records)}, {placed.counts, bytes_of(counts)}};
  return placed;
}

struct MergeRun {
  std::vector<RowQuadShare> shares;
  KernelResult result;
  std::vector<float> records;  // the merged slot
};

// The merge kernel over the slots of a block of `panels` panels (a row of
// `total_columns`).
inline MergeRun run_merge(RowKernel kernel, std::int64_t panels, const std::vector<SlotStatistics>& slots,
                          std::int64_t total_columns) {
  DataPlaces places;
  const PlacedSlots placed = place_slots(places, slots, panels);
  const auto slot_bytes = static_cast<std::uint32_t>(row_statistics_bytes(panels));
  const std::uint32_t out = places.take(slot_bytes);
  MergeRun run;
  run.shares = split_row_quads(panels);
  KernelRun kernel_run{split_kernel_name(kernel, RowStage::Merge, ElementType::F32, ElementType::F32),
                       {},
                       placed.inputs,
                       {{out, slot_bytes}}};
  for (const RowQuadShare& share : run.shares) {
    std::vector<std::uint32_t> words{static_cast<std::uint32_t>(share.quads), static_cast<std::uint32_t>(share.first_quad),
                                     static_cast<std::uint32_t>(slots.size()), placed.records, placed.stride, out};
    if (kernel == RowKernel::LayerNorm) {
      words.push_back(placed.counts);
      words.push_back(static_cast<std::uint32_t>(total_columns));
    }
    kernel_run.blocks.push_back(std::move(words));
  }
  run.result = split_row_harness().run(kernel_run);
  run.records.resize(slot_bytes / 4);
  std::memcpy(run.records.data(), run.result.outputs[0].data(), slot_bytes);
  return run;
}

// The apply kernel over a block in `ranges` column ranges, combining
// `slots` (records in slot order) of a row of `total_columns`.
inline SplitRun run_apply(RowKernel kernel, ElementType input, ElementType output, const RowBlock& block, int ranges,
                          const std::vector<SlotStatistics>& slots, std::int64_t total_columns,
                          const std::vector<float>& gamma, const std::vector<float>& beta, float epsilon) {
  const std::uint32_t in_bytes = element_bytes(input), out_bytes = element_bytes(output);
  const auto rows = static_cast<std::uint32_t>(block.rows());
  const auto columns = static_cast<std::uint32_t>(block.columns);
  std::vector<float> pairs;
  for (std::size_t c = 0; c < gamma.size(); ++c) {
    pairs.push_back(gamma[c]);
    pairs.push_back(beta[c]);
  }
  DataPlaces places;
  const std::uint32_t in = places.take(rows * columns * in_bytes), out = places.take(rows * columns * out_bytes);
  const std::uint32_t gamma_beta = places.take(columns * 8);
  const PlacedSlots placed = place_slots(places, slots, block.panels);
  SplitRun run;
  run.shares = split_row_block(block.panels, block.columns, ranges);
  KernelRun kernel_run{split_kernel_name(kernel, RowStage::Apply, input, output),
                       {},
                       {{in, panel_bytes(block, input)}, {gamma_beta, bytes_of(pairs)}},
                       {{out, rows * columns * out_bytes}}};
  kernel_run.inputs.insert(kernel_run.inputs.end(), placed.inputs.begin(), placed.inputs.end());
  for (const RowWorkerShare& share : run.shares) {
    const auto half = static_cast<std::uint32_t>(share.first_half_panel);
    const auto column = static_cast<std::uint32_t>(share.first_column);
    std::vector<std::uint32_t> words{static_cast<std::uint32_t>(share.half_panels),
                                     static_cast<std::uint32_t>(share.columns),
                                     in + (column * rows + 8 * half) * in_bytes,
                                     out + (column * rows + 8 * half) * out_bytes,
                                     rows * in_bytes,
                                     rows * out_bytes};
    const std::uint32_t first_record = placed.records + 64 * half;
    if (kernel == RowKernel::LayerNorm) {
      for (std::uint32_t word : {gamma_beta + 8 * column, bits_of(epsilon), static_cast<std::uint32_t>(slots.size()),
                                 first_record, placed.stride, placed.counts, static_cast<std::uint32_t>(total_columns)})
        words.push_back(word);
    } else {
      for (std::uint32_t word : {static_cast<std::uint32_t>(slots.size()), first_record, placed.stride})
        words.push_back(word);
    }
    kernel_run.blocks.push_back(std::move(words));
  }
  run.result = split_row_harness().run(kernel_run);
  run.values = from_panels(run.result.outputs[0], block.rows(), block.columns, output);
  return run;
}

// The whole-row kernel (layernorm.S, softmax.S) over a block holding whole
// rows, its six workers taking half panels as the compiler gives them.
inline KernelResult run_whole_rows(RowKernel kernel, ElementType input, ElementType output, const RowBlock& block,
                                   const std::vector<float>& gamma, const std::vector<float>& beta, float epsilon) {
  const std::uint32_t in_bytes = element_bytes(input), out_bytes = element_bytes(output);
  const auto rows = static_cast<std::uint32_t>(block.rows());
  const auto columns = static_cast<std::uint32_t>(block.columns);
  std::vector<float> pairs;
  for (std::size_t c = 0; c < gamma.size(); ++c) {
    pairs.push_back(gamma[c]);
    pairs.push_back(beta[c]);
  }
  DataPlaces places;
  const std::uint32_t in = places.take(rows * columns * in_bytes), out = places.take(rows * columns * out_bytes);
  const std::uint32_t gamma_beta = places.take(columns * 8);
  const bool layernorm = kernel == RowKernel::LayerNorm;
  KernelRun run{fmt::format("{}_{}_{}", layernorm ? "layernorm" : "softmax", element_type_name(input),
                            element_type_name(output)),
                {},
                {{in, panel_bytes(block, input)}, {gamma_beta, bytes_of(pairs)}},
                {{out, rows * columns * out_bytes}}};
  const std::uint32_t halves = rows / 8;
  for (std::uint32_t worker = 0; worker < 6; ++worker) {
    const std::uint32_t first = halves * worker / 6, last = halves * (worker + 1) / 6;
    if (first == last) continue;
    std::vector<std::uint32_t> words{last - first, columns, in + first * 8 * in_bytes, out + first * 8 * out_bytes,
                                     rows * in_bytes, rows * out_bytes};
    if (layernorm) {
      words.push_back(gamma_beta);
      words.push_back(bits_of(epsilon));
    }
    words.push_back(columns);
    words.push_back(0);
    run.blocks.push_back(std::move(words));
  }
  return split_row_harness().run(run);
}

// A worker's span runs from its `run` (1 to 6 cycles before its first
// bundle) to the cycle after its `exit`, issuing once every six cycles.
inline std::int64_t span_bundles(std::uint64_t span) { return static_cast<std::int64_t>((span + 4) / 6); }

}  // namespace tilec::compiler::testing
