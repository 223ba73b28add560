#include "compiler/kernel_library.h"

#include "compiler/combine_kernel.h"

#include "isa/assembler.h"
#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>

namespace tilec::compiler {

namespace {

const char* fp8_name(ElementType type) { return type == ElementType::F152 ? "f152" : "f143"; }

// A fused drain: for each accumulator row (an output column of 16 rows),
// two accrd.f16 into one register set, the stages on its FP16 lanes, and
// its store, issued in the first bundles of the next row (two sets
// alternate). Defined as the macro DRAIN_<name>, which the GEMM macro
// expands as its drain.
std::string fused_drain_source(const std::string& name, const GemmVariant& variant) {
  std::vector<std::string> flt;  // one row's float-slot instructions, for set {s}
  flt.push_back("accrd.f16 $a{x0}:{x0e}, {row}, 0, \\scale");
  flt.push_back("accrd.f16 $a{x1}:{x1e}, {row}, 1, \\scale");
  bool fp8 = false;
  for (const CombineStage& stage : variant.epilogue) {
    if (stage.kind == EpilogueOp::Kind::Gelu) {
      const int mode = stage.approximation == graph::GeluApproximation::Erf ? 1 : 0;
      for (const char* pair : {"{x0}:{x0p}", "{x0h}:{x0e}", "{x1}:{x1p}", "{x1h}:{x1e}"})
        flt.push_back(fmt::format("f16v4gelu $a{0}, $a{0}, {1}", pair, mode));
    } else if (is_fp8(stage.result.element)) {
      fp8 = true;
      const char* format = fp8_name(stage.result.element);
      flt.push_back(fmt::format("f16tof8 $a{{x0}}:{{x0p}}, $a{{x0}}:{{x0e}}, {}, {}", format, stage.result.scale));
      flt.push_back(fmt::format("f16tof8 $a{{x0h}}:{{x0e}}, $a{{x1}}:{{x1e}}, {}, {}", format, stage.result.scale));
    }
  }
  const std::vector<std::string> stores =
      fp8 ? std::vector<std::string>{"st128pi $a{x0}:{x0e}, $m6, \\out_stride"}
          : std::vector<std::string>{"st128pi $a{x0}:{x0e}, $m6, 16", "st128pi $a{x1}:{x1e}, $m6, \\out_stride - 16"};
  auto fill = [](std::string text, int set, int row) {
    const int x0 = 8 * set, x1 = 8 * set + 4;
    for (auto [key, value] : std::vector<std::pair<std::string, int>>{{"{x0}", x0}, {"{x0p}", x0 + 1}, {"{x0h}", x0 + 2},
                                                                      {"{x0e}", x0 + 3}, {"{x1}", x1}, {"{x1p}", x1 + 1},
                                                                      {"{x1h}", x1 + 2}, {"{x1e}", x1 + 3}, {"{row}", row}})
      for (std::size_t at; (at = text.find(key)) != std::string::npos;) text.replace(at, key.size(), std::to_string(value));
    return text;
  };
  std::string text = fmt::format(".macro DRAIN_{} scale, out_stride\n", name);
  for (int row = 0; row <= 16; ++row) {
    for (std::size_t i = 0; i < (row == 16 ? stores.size() : flt.size()); ++i) {
      std::string main = row > 0 && i < stores.size() ? fill(stores[i], (row - 1) % 2, row - 1) : "";
      std::string fl = row < 16 && i < flt.size() ? fill(flt[i], row % 2, row) : "";
      text += main.empty() ? "    " + fl + "\n" : fl.empty() ? "    " + main + "\n" : "    { " + main + " ; " + fl + " }\n";
    }
  }
  return text + ".endm\n";
}

std::string gemm_source(const std::string& name, const GemmVariant& variant) {
  std::string fused = variant.epilogue.empty() ? "" : fused_drain_source(name, variant);
  const std::string drain = variant.epilogue.empty() ? (variant.drain_f32 ? "F32" : "F16") : name;
  switch (variant.weights) {
    case ElementType::F32:
      return fused + fmt::format("GEMM_F32 {}, {}, {}, {}, {}\n", name, variant.activation_stride, variant.output_stride,
                         variant.scale, drain);
    case ElementType::F16:
      return fused + fmt::format("GEMM_F16 {}, {}, {}, {}, {}\n", name, variant.activation_stride, variant.output_stride,
                         variant.scale, drain);
    default:
      return fused + fmt::format("GEMM_F8 {}, {}, {}, {}, {}, {}, {}\n", name, fp8_name(variant.weights),
                         fp8_name(variant.activations), variant.activation_stride, variant.output_stride,
                         variant.scale, drain);
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
  if (variant.epilogue.empty()) return variant.drain_f32 ? 65 : 33;
  int per_row = 2, last_stores = 2;
  for (const CombineStage& stage : variant.epilogue) {
    if (stage.kind == EpilogueOp::Kind::Gelu) per_row += 4;
    if (is_fp8(stage.result.element)) {
      per_row += 2;
      last_stores = 1;
    }
  }
  return 16 * per_row + last_stores;
}

std::string KernelLibrary::gemm(const GemmVariant& variant) {
  TILEC_CHECK(fused_epilogue_supported(variant), "GEMM variant with an epilogue its drain cannot apply");
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

std::string KernelLibrary::variant_source() const {
  std::string text = ".include \"gemm_common.inc\"\n.include \"gemm_f8.S\"\n.include \"gemm_f16.S\"\n.include \"gemm_f32.S\"\n";
  for (const auto& [variant, name] : gemms_) text += gemm_source(name, variant);
  for (const auto& [variant, name] : combines_) text += combine_source(name, variant);
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
