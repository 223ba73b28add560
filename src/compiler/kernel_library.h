// The kernel library: which kernels a compile needs, their assembly, and
// the linked image every tile shares.
//
// Kernels come from kernels/ (embedded at build time). Kernels whose loops
// depend on constants of the plan (strides, FP8 formats, scales, the
// epilogue) are macros there, instantiated once per variant a plan uses;
// the elementwise "combine" kernels are composed per variant from the same
// building blocks (see docs/kernels.md). Everything is assembled by the
// assembler and linked once at the start of standard memory, at the same
// address on every tile.
#pragma once

#include "compiler/chain.h"
#include "isa/assembler.h"
#include "isa/linker.h"
#include "isa/object.h"
#include "target/machine.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::compiler {

const std::map<std::string, std::string_view>& embedded_kernel_sources();

struct CombineStage {
  EpilogueOp::Kind kind;
  graph::GeluApproximation approximation = graph::GeluApproximation::Tanh;
  StorageType result;
  auto operator<=>(const CombineStage&) const = default;
};

struct GemmVariant {
  ElementType weights = ElementType::F143;     // F143/F152 (the AMP's FP8 mode), F16 or F32
  ElementType activations = ElementType::F143;
  std::uint32_t activation_stride = 0;  // bytes per k step of the activation panel
  // Bytes from one k row of the weights to the next: 0 (or the packed
  // 16 x element bytes) for the packed weight format; another multiple of 16
  // (up to kMaxGemmWeightStride) reads the weights out of a wider matrix,
  // e.g. keys or values in the activation panel format.
  std::uint32_t weight_stride = 0;
  std::uint32_t output_stride = 0;      // bytes per output column
  int scale = 0;                        // 2^scale turns code products into values
  bool drain_f32 = false;
  // The drain adds the accumulators to the FP32 partial sums already in
  // the output (needs drain_f32 and no epilogue): K split over several
  // runs sums into one output.
  bool accumulate = false;
  // Stages applied while the accumulators drain (a fused epilogue; see
  // fused_epilogue_supported). Empty: the drain stores the GEMM's sums.
  std::vector<CombineStage> epilogue;

  // The weight stride the kernel uses.
  std::uint32_t weight_row_bytes() const {
    return weight_stride != 0 ? weight_stride : 16 * static_cast<std::uint32_t>(element_bytes(weights));
  }
  // The element type the drain stores.
  ElementType output() const {
    return epilogue.empty() ? (drain_f32 ? ElementType::F32 : ElementType::F16) : epilogue.back().result.element;
  }
  auto operator<=>(const GemmVariant&) const = default;
};

// The weight stride is an ld128pi immediate (signed 15 bits) less up to 48.
constexpr std::uint32_t kMaxGemmWeightStride = 16368;

// Whether a GEMM can drain through `epilogue`: an FP16 drain (the sums
// rounded once to FP16, as a GEMM with an FP16 result), then any of GELU
// with an FP16 result and casts to FP16, and at most one cast to FP8, last
// (no bias: a job does not say which columns it computes).
bool fused_epilogue_supported(const GemmVariant& variant);

// Bundles the drain of one 16x16 block takes (the accumulator reads, the
// partial sums it adds to, the fused stages and the stores).
int gemm_drain_bundles(const GemmVariant& variant);

// Sum `inputs` inputs of one type, round to `sum`, then apply `stages`.
struct CombineVariant {
  int inputs = 1;
  StorageType input;
  StorageType sum;
  ElementType bias = ElementType::F32;  // type of the bias stage's vector, if any
  std::vector<CombineStage> stages;

  StorageType output() const { return stages.empty() ? sum : stages.back().result; }
  auto operator<=>(const CombineVariant&) const = default;
};

constexpr int kMaxCombineInputs = 8;

// What a softmax kernel computes over the columns of each row, y = x or
// y = scale x x (docs/kernels.md "Softmax"). A softmax whose columns are
// split between workers runs as three kernels, ChunkMax, ChunkExp, then one
// of the finishes, with a supervisor wsync between them.
enum class SoftmaxForm : std::uint8_t {
  Normalised,       // out = exp(y - m) / l
  Partial,          // out = exp(y - m), unnormalised, and the rows' stats m, l
  ChunkMax,         // the largest y of each row over the worker's columns
  ChunkExp,         // exp(y - m) over the worker's columns (m from every chunk), and their sum
  FinishStats,      // a partial softmax's stats from its chunks'
  FinishNormalise,  // out = e / l, l summed from the chunks'
};

// LayerNorm or softmax over whole rows, from one element type to another
// (FP16 or FP32 each). The default form, unscaled, is the fixed kernels of
// kernels/softmax.S; the others are generated (softmax_kernel.h).
struct RowVariant {
  bool layernorm = true;
  ElementType input = ElementType::F16;
  ElementType output = ElementType::F16;
  SoftmaxForm form = SoftmaxForm::Normalised;
  // y = scale x x, the product rounded once to FP32; the scale (an argument
  // word) must be positive, so that the largest y is scale x the largest x.
  bool scaled = false;

  bool generated() const { return !layernorm && (form != SoftmaxForm::Normalised || scaled); }
  auto operator<=>(const RowVariant&) const = default;
};

// Self-attention over whole rows (kernels/attention.S), from one element
// type to another (FP16 or FP32 each; FP32 inside).
struct AttentionVariant {
  ElementType input = ElementType::F16;
  ElementType output = ElementType::F16;
  auto operator<=>(const AttentionVariant&) const = default;
};

// The merge of partial attention results (merge_kernel.h): n partial
// outputs O_i (FP32, panel format) with their softmax statistics become
// sum_i u_i O_i, u_i = exp(m_i - M) / sum_j exp(m_j - M) l_j, in FP16 or
// FP32.
struct MergeVariant {
  ElementType output = ElementType::F16;
  // Bytes from one column of a partial output to the next (P x 64, P the
  // panels of the partials' buffers), at most kMaxMergePartialColumnStride.
  std::uint32_t partial_column_stride = 0;
  // Bytes from one output column to the next (P' x 16 x output bytes).
  std::uint32_t output_column_stride = 0;
  auto operator<=>(const MergeVariant&) const = default;
};

// Column offsets up to 5 strides are ld128 immediates (signed 15 bits).
constexpr std::uint32_t kMaxMergePartialColumnStride = 3264;

// The scratch one attention worker needs for items of `s` rows: two
// regions (the kernel takes two query rows at a time), each the scores of
// the item's key panels (ceil(s / 16) + 1 of 16 FP32) and a spare panel
// its loops read into.
constexpr std::int64_t attention_scratch_bytes(std::int64_t s) { return 2 * 16 * ((s + 15) / 16 + 2) * 4; }

class KernelLibrary {
 public:
  // The kernel symbol of a variant, registering it on first use.
  std::string gemm(const GemmVariant& variant);
  std::string combine(const CombineVariant& variant);
  std::string row(const RowVariant& variant);
  std::string attention(const AttentionVariant& variant);
  std::string merge(const MergeVariant& variant);

  // Assembly text instantiating every registered variant.
  std::string variant_source() const;
  std::size_t variant_count() const {
    return gemms_.size() + combines_.size() + rows_.size() + attentions_.size() + merges_.size();
  }

 private:
  std::map<GemmVariant, std::string> gemms_;
  std::map<CombineVariant, std::string> combines_;
  std::map<RowVariant, std::string> rows_;
  std::map<AttentionVariant, std::string> attentions_;
  std::map<MergeVariant, std::string> merges_;
};

// Reads kernels/ sources for the assembler's .include.
isa::FileReader kernel_source_reader();

// compile_runtime: assembles the kernel library's sources (their macros),
// so a broken kernel source fails before any plan is made.
isa::Object compile_runtime();
// compile_kernels: the variants a plan needs.
isa::Object compile_kernels(const KernelLibrary& library);
// link_runtime: one image at the start of standard memory.
isa::Image link_runtime(const std::vector<const isa::Object*>& objects, const MachineModel& machine);

// Bytes the library image occupies (its segments' extent).
std::uint32_t image_bytes(const isa::Image& image);

}  // namespace tilec::compiler
