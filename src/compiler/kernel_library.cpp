#include "compiler/kernel_library.h"

#include "compiler/combine_kernel.h"
#include "compiler/merge_kernel.h"
#include "compiler/softmax_kernel.h"

#include "isa/assembler.h"
#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>

namespace tilec::compiler {

namespace {

// The workers of a tile (MachineModel::worker_contexts) a split-column row
// block is shared between.
constexpr int kSplitRowWorkers = 6;

const char* fp8_name(ElementType type) { return type == ElementType::F152 ? "f152" : "f143"; }

std::string quad(int first) { return fmt::format("$a{}:{}", first, first + 3); }
std::string pair(int first) { return fmt::format("$a{}:{}", first, first + 1); }

bool ends_in_fp8(const GemmVariant& variant) {
  return !variant.epilogue.empty() && is_fp8(variant.epilogue.back().result.element);
}

// One accumulator row of a fused drain, in the register set whose quads
// start at $a(x0) (rows 0-7) and $a(x0 + 4) (rows 8-15): its float-slot
// instructions, and its stores.
std::vector<std::string> fused_row(const GemmVariant& variant, int x0, int row) {
  const int x1 = x0 + 4;
  std::vector<std::string> ops{fmt::format("accrd.f16 {}, {}, 0, \\scale", quad(x0), row),
                               fmt::format("accrd.f16 {}, {}, 1, \\scale", quad(x1), row)};
  for (const CombineStage& stage : variant.epilogue) {
    if (stage.kind == EpilogueOp::Kind::Gelu) {
      const int mode = stage.approximation == graph::GeluApproximation::Erf ? 1 : 0;
      for (int first : {x0, x0 + 2, x1, x1 + 2}) ops.push_back(fmt::format("f16v4gelu {0}, {0}, {1}", pair(first), mode));
    } else if (is_fp8(stage.result.element)) {
      const char* format = fp8_name(stage.result.element);
      ops.push_back(fmt::format("f16tof8 {}, {}, {}, {}", pair(x0), quad(x0), format, stage.result.scale));
      ops.push_back(fmt::format("f16tof8 {}, {}, {}, {}", pair(x0 + 2), quad(x1), format, stage.result.scale));
    }
  }
  return ops;
}

std::vector<std::string> fused_stores(const GemmVariant& variant, int x0) {
  if (ends_in_fp8(variant)) return {fmt::format("st128pi {}, $m6, \\out_stride", quad(x0))};
  return {fmt::format("st128pi {}, $m6, 16", quad(x0)), fmt::format("st128pi {}, $m6, \\out_stride - 16", quad(x0 + 4))};
}

// A fused drain, as the macro DRAIN_<name> that the GEMM macro expands:
// each accumulator row in one of two register sets ($a0:7, $a8:15, in
// turn), its stores in the first bundles of the next row.
std::string fused_drain_source(const std::string& name, const GemmVariant& variant) {
  std::string text = fmt::format(".macro DRAIN_{} scale, out_stride\n", name);
  std::vector<std::string> pending;  // the previous row's stores
  for (int row = 0; row <= 16; ++row) {
    const std::vector<std::string> ops = row < 16 ? fused_row(variant, 8 * (row % 2), row) : std::vector<std::string>{};
    for (std::size_t i = 0; i < std::max(ops.size(), pending.size()); ++i) {
      if (i < ops.size() && i < pending.size()) text += fmt::format("    {{ {} ; {} }}\n", pending[i], ops[i]);
      else text += "    " + (i < ops.size() ? ops[i] : pending[i]) + "\n";
    }
    if (row < 16) pending = fused_stores(variant, 8 * (row % 2));
  }
  return text + ".endm\n";
}

std::string gemm_source(const std::string& name, const GemmVariant& variant) {
  std::string fused = variant.epilogue.empty() ? "" : fused_drain_source(name, variant);
  const std::string drain =
      !variant.epilogue.empty() ? name : variant.accumulate ? "F32_ADD" : variant.drain_f32 ? "F32" : "F16";
  switch (variant.weights) {
    case ElementType::F32:
      return fused + fmt::format("GEMM_F32 {}, {}, {}, {}, {}, {}\n", name, variant.activation_stride,
                                 variant.weight_row_bytes(), variant.output_stride, variant.scale, drain);
    case ElementType::F16:
      return fused + fmt::format("GEMM_F16 {}, {}, {}, {}, {}, {}\n", name, variant.activation_stride,
                                 variant.weight_row_bytes(), variant.output_stride, variant.scale, drain);
    default:
      return fused + fmt::format("GEMM_F8 {}, {}, {}, {}, {}, {}, {}, {}\n", name, fp8_name(variant.weights),
                                 fp8_name(variant.activations), variant.activation_stride,
                                 variant.weight_row_bytes(), variant.output_stride, variant.scale, drain);
  }
}

}  // namespace

bool fused_epilogue_supported(const GemmVariant& variant) {
  if (variant.epilogue.empty()) return true;
  if (variant.drain_f32) return false;
  for (std::size_t i = 0; i < variant.epilogue.size(); ++i) {
    const CombineStage& stage = variant.epilogue[i];
    const bool last = i + 1 == variant.epilogue.size();
    if (stage.kind == EpilogueOp::Kind::AddBias) return false;
    if (stage.kind == EpilogueOp::Kind::Gelu && stage.result.element != ElementType::F16) return false;
    if (stage.kind == EpilogueOp::Kind::Cast && stage.result.element == ElementType::F32) return false;
    if (is_fp8(stage.result.element) && !last) return false;
  }
  return true;
}

int gemm_drain_bundles(const GemmVariant& variant) {
  if (variant.accumulate) return 129;
  if (variant.epilogue.empty()) return variant.drain_f32 ? 65 : 33;
  // Every row's float-slot instructions, then the last row's stores.
  return 16 * static_cast<int>(fused_row(variant, 0, 0).size()) + static_cast<int>(fused_stores(variant, 0).size());
}

std::string KernelLibrary::gemm(const GemmVariant& requested) {
  TILEC_CHECK(fused_epilogue_supported(requested), "GEMM variant with an epilogue its drain cannot apply");
  TILEC_CHECK(!requested.accumulate || (requested.drain_f32 && requested.epilogue.empty()),
              "GEMM variant accumulating into partial sums needs an FP32 drain without an epilogue");
  TILEC_CHECK(requested.weight_stride % 16 == 0 && requested.weight_stride <= kMaxGemmWeightStride,
              "GEMM weight stride of {} bytes (a multiple of 16 up to {})", requested.weight_stride,
              kMaxGemmWeightStride);
  // The packed stride spelled out is the same kernel as the default.
  GemmVariant variant = requested;
  variant.weight_stride = requested.weight_row_bytes();
  auto it = gemms_.find(variant);
  if (it != gemms_.end()) return it->second;
  std::string name = fmt::format("gemm_{}_{}", element_type_name(variant.weights), gemms_.size());
  gemms_.emplace(variant, name);
  return name;
}

std::string KernelLibrary::combine(const CombineVariant& variant) {
  TILEC_CHECK(variant.inputs >= 1 && variant.inputs <= kMaxCombineInputs, "combine kernel with {} inputs",
              variant.inputs);
  auto it = combines_.find(variant);
  if (it != combines_.end()) return it->second;
  std::string name = fmt::format("combine_{}", combines_.size());
  combines_.emplace(variant, name);
  return name;
}

namespace {

// The variant with the fields its form ignores set to one value, so that
// requests differing only there share a kernel.
RowVariant canonical(RowVariant variant) {
  switch (variant.form) {
    case SoftmaxForm::ChunkMax: variant.output = ElementType::F32; break;
    case SoftmaxForm::FinishStats:
      variant.input = variant.output = ElementType::F32;
      variant.scaled = false;
      variant.input_stride = 0;
      break;
    case SoftmaxForm::FinishNormalise:
      variant.input = ElementType::F32;
      variant.scaled = false;
      break;
    default: break;
  }
  return variant;
}

std::string row_name(const RowVariant& variant) {
  auto type = [](ElementType t) { return element_type_name(t); };
  const char* op = variant.layernorm ? "layernorm" : "softmax";
  switch (variant.stage) {
    case RowStage::Whole: break;
    case RowStage::Statistics:
      TILEC_CHECK(variant.output == ElementType::F32, "{} statistics kernel with {} records (they are f32)", op,
                  type(variant.output));
      return fmt::format("{}_stats_{}", op, type(variant.input));
    case RowStage::Apply: return fmt::format("{}_apply_{}_{}", op, type(variant.input), type(variant.output));
    case RowStage::Merge:
      TILEC_CHECK(variant.input == ElementType::F32 && variant.output == ElementType::F32,
                  "{} merge kernel from {} to {} records (they are f32)", op, type(variant.input),
                  type(variant.output));
      return fmt::format("{}_merge", op);
  }
  if (variant.layernorm) return fmt::format("layernorm_{}_{}", type(variant.input), type(variant.output));
  const std::string stride = variant.input_stride ? fmt::format("s{}_", variant.input_stride) : "";
  const std::string scaled = (variant.scaled ? "scaled_" : "") + stride;
  switch (variant.form) {
    case SoftmaxForm::Normalised:
      return fmt::format("softmax_{}{}_{}", scaled, type(variant.input), type(variant.output));
    case SoftmaxForm::Partial:
      return fmt::format("softmax_partial_{}{}_{}", scaled, type(variant.input), type(variant.output));
    case SoftmaxForm::ChunkMax: return fmt::format("softmax_chunk_max_{}{}", scaled, type(variant.input));
    case SoftmaxForm::ChunkExp:
      return fmt::format("softmax_chunk_exp_{}{}_{}", scaled, type(variant.input), type(variant.output));
    case SoftmaxForm::FinishStats: return "softmax_finish_stats";
    case SoftmaxForm::FinishNormalise: return fmt::format("softmax_finish_{}{}", stride, type(variant.output));
  }
  return "";
}

}  // namespace

std::string KernelLibrary::row(const RowVariant& requested) {
  auto type_ok = [](ElementType t) { return t == ElementType::F16 || t == ElementType::F32; };
  TILEC_CHECK(type_ok(requested.input) && type_ok(requested.output), "row kernel from {} to {}",
              element_type_name(requested.input), element_type_name(requested.output));
  TILEC_CHECK((!requested.layernorm && requested.stage == RowStage::Whole) ||
                  (requested.form == SoftmaxForm::Normalised && !requested.scaled),
              "LayerNorm or split-column kernel with a softmax form");
  const RowVariant variant = canonical(requested);
  auto it = rows_.find(variant);
  if (it != rows_.end()) return it->second;
  std::string name = row_name(variant);
  rows_.emplace(variant, name);
  return name;
}

std::vector<RowWorkerShare> split_row_block(std::int64_t panels, std::int64_t columns, int column_ranges) {
  TILEC_CHECK(panels >= 1 && columns >= 1, "split-column row block of {} panels x {} columns", panels, columns);
  TILEC_CHECK(column_ranges >= 1 && column_ranges <= kSplitRowWorkers && column_ranges <= columns,
              "split-column row block of {} columns in {} column ranges", columns, column_ranges);
  const std::int64_t halves = 2 * panels, groups = kSplitRowWorkers / column_ranges;
  std::vector<RowWorkerShare> shares;
  for (std::int64_t group = 0; group < groups; ++group) {
    const std::int64_t first = halves * group / groups, last = halves * (group + 1) / groups;
    if (first == last) continue;
    for (int range = 0; range < column_ranges; ++range) {
      const std::int64_t begin = columns * range / column_ranges;
      shares.push_back(RowWorkerShare{first, last - first, begin,
                                      split_row_range_columns(columns, column_ranges, range), range});
    }
  }
  return shares;
}

std::int64_t split_row_range_columns(std::int64_t columns, int column_ranges, int range) {
  return columns * (range + 1) / column_ranges - columns * range / column_ranges;
}

std::vector<RowQuadShare> split_row_quads(std::int64_t panels) {
  TILEC_CHECK(panels >= 1, "split-column row block of {} panels", panels);
  const std::int64_t quads = 4 * panels;
  std::vector<RowQuadShare> shares;
  for (std::int64_t worker = 0; worker < kSplitRowWorkers; ++worker) {
    const std::int64_t first = quads * worker / kSplitRowWorkers, last = quads * (worker + 1) / kSplitRowWorkers;
    if (first < last) shares.push_back(RowQuadShare{first, last - first});
  }
  return shares;
}


std::string KernelLibrary::merge(const MergeVariant& variant) {
  TILEC_CHECK(variant.output == ElementType::F16 || variant.output == ElementType::F32,
              "attention merge kernel writing {}", element_type_name(variant.output));
  TILEC_CHECK(variant.partial_column_stride % 16 == 0 && variant.partial_column_stride > 0 &&
                  variant.partial_column_stride <= kMaxMergePartialColumnStride,
              "attention merge kernel with a partial column stride of {} bytes (a multiple of 16 up to {})",
              variant.partial_column_stride, kMaxMergePartialColumnStride);
  // One row quad of a column: 16 bytes of FP32 or 8 of FP16, aligned.
  const std::uint32_t quad_bytes = 4 * element_bytes(variant.output);
  TILEC_CHECK(variant.output_column_stride % quad_bytes == 0 && variant.output_column_stride > 0 &&
                  variant.output_column_stride < 16384,
              "attention merge kernel with an output column stride of {} bytes (a multiple of {} below 16384)",
              variant.output_column_stride, quad_bytes);
  auto it = merges_.find(variant);
  if (it != merges_.end()) return it->second;
  std::string name = fmt::format("attention_merge_{}_{}", element_type_name(variant.output), merges_.size());
  merges_.emplace(variant, name);
  return name;
}

std::string KernelLibrary::variant_source() const {
  std::string text(embedded_kernel_sources().at("runtime.S"));
  for (const auto& [variant, name] : gemms_) text += gemm_source(name, variant);
  for (const auto& [variant, name] : combines_) text += combine_source(name, variant);
  for (const auto& [variant, name] : rows_) {
    if (variant.generated()) {
      text += softmax_source(name, variant);
      continue;
    }
    auto type = [](ElementType t) { return t == ElementType::F32 ? "F32" : "F16"; };
    auto half = [](ElementType t) { return t == ElementType::F32 ? 32 : 16; };
    const char* op = variant.layernorm ? "LAYERNORM" : "SOFTMAX";
    if (variant.stage == RowStage::Statistics)
      text += fmt::format("{}_STATS {}, {}, {}\n", op, name, type(variant.input), half(variant.input));
    else if (variant.stage == RowStage::Merge)
      text += fmt::format("{}_MERGE {}\n", op, name);
    else
      text += fmt::format("{}{} {}, {}, {}, {}, {}\n", op, variant.stage == RowStage::Apply ? "_APPLY" : "", name,
                          type(variant.input), type(variant.output), half(variant.input), half(variant.output));
  }

  for (const auto& [variant, name] : merges_) text += merge_source(name, variant);
  return text;
}

isa::FileReader kernel_source_reader() {
  return [](const std::string& path) -> std::optional<std::string> {
    std::string name = path.substr(path.find_last_of('/') + 1);
    const auto& sources = embedded_kernel_sources();
    auto it = sources.find(name);
    if (it == sources.end()) return std::nullopt;
    return std::string(it->second);
  };
}

isa::Object compile_runtime() {
  return isa::assemble_text(embedded_kernel_sources().at("runtime.S"), "kernels/runtime.S", kernel_source_reader());
}

isa::Object compile_kernels(const KernelLibrary& library) {
  return isa::assemble_text(library.variant_source(), "kernels/variants.S", kernel_source_reader());
}

isa::Image link_runtime(const std::vector<const isa::Object*>& objects, const MachineModel& machine) {
  isa::LinkOptions options;
  options.machine = &machine;
  options.placements.push_back(isa::PlacementRule{".kernels", machine.standard.begin, std::nullopt, 16});
  return isa::link(objects, options);
}

std::uint32_t image_bytes(const isa::Image& image) {
  std::uint32_t end = 0, begin = UINT32_MAX;
  for (const isa::Segment& segment : image.segments) {
    begin = std::min(begin, segment.address);
    end = std::max(end, segment.address + segment.size());
  }
  return end > begin ? end - begin : 0;
}

}  // namespace tilec::compiler
