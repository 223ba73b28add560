#include "compiler/kernel_library.h"

#include "compiler/combine_kernel.h"

#include "isa/assembler.h"
#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>

namespace tilec::compiler {

namespace {

const char* fp8_name(ElementType type) { return type == ElementType::F152 ? "f152" : "f143"; }

std::string gemm_source(const std::string& name, const GemmVariant& variant) {
  const char* drain = variant.drain_f32 ? "F32" : "F16";
  switch (variant.weights) {
    case ElementType::F32:
      return fmt::format("GEMM_F32 {}, {}, {}, {}, {}\n", name, variant.activation_stride, variant.output_stride,
                         variant.scale, drain);
    case ElementType::F16:
      return fmt::format("GEMM_F16 {}, {}, {}, {}, {}\n", name, variant.activation_stride, variant.output_stride,
                         variant.scale, drain);
    default:
      return fmt::format("GEMM_F8 {}, {}, {}, {}, {}, {}, {}\n", name, fp8_name(variant.weights),
                         fp8_name(variant.activations), variant.activation_stride, variant.output_stride,
                         variant.scale, drain);
  }
}

}  // namespace

std::string KernelLibrary::gemm(const GemmVariant& variant) {
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
