#include "compiler/kernel_library.h"

#include "isa/assembler.h"
#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>

namespace tilec::compiler {

namespace {

const char* fp8_name(ElementType type) { return type == ElementType::F152 ? "f152" : "f143"; }

// Builds the body of a combine kernel, one bundle per line, working on 8
// elements per iteration: in FP16 lanes (one quad) when every type is FP16
// or FP8, else in FP32 lanes (two quads).
class CombineWriter {
 public:
  explicit CombineWriter(const CombineVariant& variant) : v_(variant) {
    f32_lanes_ = v_.input.element == ElementType::F32 || v_.sum.element == ElementType::F32;
    for (const CombineStage& stage : v_.stages) f32_lanes_ |= stage.result.element == ElementType::F32;
  }

  bool f32_lanes() const { return f32_lanes_; }
  bool has_bias() const {
    return std::any_of(v_.stages.begin(), v_.stages.end(),
                       [](const CombineStage& s) { return s.kind == EpilogueOp::Kind::AddBias; });
  }

  // Per column: the bias scalar, ready for the body.
  std::vector<std::string> column_setup() const {
    if (!has_bias()) return {};
    if (!f32_lanes_) return {"ld32pi $a28, $m5, 4", "f32v4splat $a24:27, $a28"};
    if (v_.bias == ElementType::F16) return {"ld32pi $a28, $m5, 4", "f16tof32lo $a24:27, $a28:31"};
    return {"ld32pi $a24, $m5, 4"};
  }

  std::vector<std::string> body() {
    lines_.clear();
    load_input(0, "$a0:3", "$a4:7");
    for (int i = 1; i < v_.inputs; ++i) {
      load_input(i, "$a8:11", "$a12:15");
      if (f32_lanes_) {
        emit("f32v4add $a0:3, $a0:3, $a8:11");
        emit("f32v4add $a4:7, $a4:7, $a12:15");
      } else {
        emit("f16v8add $a0:3, $a0:3, $a8:11");
      }
    }
    StorageType current = v_.inputs > 1 || v_.input.element != v_.sum.element ? lanes_type() : v_.input;
    round_to(current, v_.sum, v_.stages.empty());
    current = v_.sum;
    for (std::size_t i = 0; i < v_.stages.size(); ++i) {
      const CombineStage& stage = v_.stages[i];
      bool last = i + 1 == v_.stages.size();
      switch (stage.kind) {
        case EpilogueOp::Kind::AddBias:
          if (f32_lanes_) {
            emit("f32v4adds $a0:3, $a0:3, $a24");
            emit("f32v4adds $a4:7, $a4:7, $a24");
          } else {
            emit("f16v8add $a0:3, $a0:3, $a24:27");
          }
          round_to(lanes_type(), stage.result, last);
          break;
        case EpilogueOp::Kind::Gelu: {
          int mode = stage.approximation == graph::GeluApproximation::Erf ? 1 : 0;
          if (f32_lanes_) {
            emit(fmt::format("f32v4gelu $a0:3, $a0:3, {}", mode));
            emit(fmt::format("f32v4gelu $a4:7, $a4:7, {}", mode));
            round_to(lanes_type(), stage.result, last);
          } else {
            emit(fmt::format("f16v4gelu $a0:1, $a0:1, {}", mode));
            emit(fmt::format("f16v4gelu $a2:3, $a2:3, {}", mode));
            round_to(lanes_type(), stage.result, last);
          }
          break;
        }
        case EpilogueOp::Kind::Cast:
          round_to(current, stage.result, last);
          break;
      }
      current = stage.result;
    }
    store(v_.output());
    return lines_;
  }

 private:
  StorageType lanes_type() const { return StorageType{f32_lanes_ ? ElementType::F32 : ElementType::F16, 0}; }
  void emit(std::string line) { lines_.push_back(std::move(line)); }

  void load_input(int index, const char* low, const char* high) {
    std::string pointer = fmt::format("$m{}", 6 + index);
    const StorageType in = v_.input;
    if (f32_lanes_) {
      switch (in.element) {
        case ElementType::F32:
          emit(fmt::format("ld128pi {}, {}, 16", low, pointer));
          emit(fmt::format("ld128pi {}, {}, 16", high, pointer));
          return;
        case ElementType::F16:
          emit(fmt::format("ld128pi $a16:19, {}, 16", pointer));
          emit(fmt::format("f16tof32lo {}, $a16:19", low));
          emit(fmt::format("f16tof32hi {}, $a16:19", high));
          return;
        default:
          emit(fmt::format("ld64pi $a16:17, {}, 8", pointer));
          emit(fmt::format("f8tof32 {}, $a16, {}, {}", low, fp8_name(in.element), in.scale));
          emit(fmt::format("f8tof32 {}, $a17, {}, {}", high, fp8_name(in.element), in.scale));
          return;
      }
    }
    if (in.element == ElementType::F16) {
      emit(fmt::format("ld128pi {}, {}, 16", low, pointer));
    } else {
      emit(fmt::format("ld64pi $a16:17, {}, 8", pointer));
      emit(fmt::format("f8tof16 {}, $a16:17, {}, {}", low, fp8_name(in.element), in.scale));
    }
  }

  // Rounds the lanes (holding `from`) to `to`. The last stage only leaves
  // the lanes as they are: store() writes them in the output type.
  void round_to(StorageType from, StorageType to, bool last) {
    if (last || from == to) return;
    if (f32_lanes_) {
      if (to.element == ElementType::F32) return;
      if (to.element == ElementType::F16) {
        emit("f32tof16 $a16:17, $a0:3");
        emit("f32tof16 $a18:19, $a4:7");
        emit("f16tof32lo $a0:3, $a16:19");
        emit("f16tof32hi $a4:7, $a16:19");
      } else {
        emit(fmt::format("f32tof8 $a16, $a0:3, {}, {}", fp8_name(to.element), to.scale));
        emit(fmt::format("f32tof8 $a17, $a4:7, {}, {}", fp8_name(to.element), to.scale));
        emit(fmt::format("f8tof32 $a0:3, $a16, {}, {}", fp8_name(to.element), to.scale));
        emit(fmt::format("f8tof32 $a4:7, $a17, {}, {}", fp8_name(to.element), to.scale));
      }
      return;
    }
    if (is_fp8(to.element)) {
      emit(fmt::format("f16tof8 $a16:17, $a0:3, {}, {}", fp8_name(to.element), to.scale));
      emit(fmt::format("f8tof16 $a0:3, $a16:17, {}, {}", fp8_name(to.element), to.scale));
    }
  }

  void store(StorageType out) {
    if (f32_lanes_) {
      switch (out.element) {
        case ElementType::F32:
          emit("st128pi $a0:3, $m4, 16");
          emit("st128pi $a4:7, $m4, 16");
          return;
        case ElementType::F16:
          emit("f32tof16 $a16:17, $a0:3");
          emit("f32tof16 $a18:19, $a4:7");
          emit("st128pi $a16:19, $m4, 16");
          return;
        default:
          emit(fmt::format("f32tof8 $a16, $a0:3, {}, {}", fp8_name(out.element), out.scale));
          emit(fmt::format("f32tof8 $a17, $a4:7, {}, {}", fp8_name(out.element), out.scale));
          emit("st64pi $a16:17, $m4, 8");
          return;
      }
    }
    if (out.element == ElementType::F16) {
      emit("st128pi $a0:3, $m4, 16");
    } else {
      emit(fmt::format("f16tof8 $a16:17, $a0:3, {}, {}", fp8_name(out.element), out.scale));
      emit("st64pi $a16:17, $m4, 8");
    }
  }

  const CombineVariant& v_;
  bool f32_lanes_ = false;
  std::vector<std::string> lines_;
};

std::string combine_source(const std::string& name, const CombineVariant& variant) {
  CombineWriter writer(variant);
  std::vector<std::string> body = writer.body();
  std::string text = fmt::format(".section .kernels, \"x\"\n.global {0}\n.type {0}, @kernel\n{0}:\n", name);
  text += "    ldw $m2, $m0, 0\n    ldw $m3, $m0, 4\n    ldw $m4, $m0, 8\n    ldw $m5, $m0, 12\n";
  for (int i = 0; i < variant.inputs; ++i) text += fmt::format("    ldw $m{}, $m0, {}\n", 6 + i, 16 + 4 * i);
  text += fmt::format("    brz $m2, {}_done\n{}_column:\n", name, name);
  for (const std::string& line : writer.column_setup()) text += "    " + line + "\n";
  text += fmt::format("    rpt $m3, {}\n", body.size());
  for (const std::string& line : body) text += "    " + line + "\n";
  text += fmt::format("    addi $m2, $m2, -1\n    brnz $m2, {0}_column\n{0}_done:\n    exit\n.size {0}, . - {0}\n", name);
  return text;
}

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
