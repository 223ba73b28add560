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
// The largest RowVariant::input_stride (a load's post-increment).
constexpr std::uint32_t kMaxRowInputStride = 16368;

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

// The worker contexts a tile runs kernels on (MachineModel::worker_contexts).
constexpr int kWorkers = 6;

// What a row kernel computes: whole rows (kernels/layernorm.S, softmax.S),
// or one of the kernels of rows split over several tiles' columns
// (kernels/row_stats.S, row_apply.S, row_merge.S; docs/kernels.md,
// "Split-column row kernels"): the statistics of a block's rows over its
// columns, the combination of every part's statistics and the result over
// the block's columns, or the merge of several slots of statistics into one.
enum class RowStage : std::uint8_t { Whole, Statistics, Apply, Merge };

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

// LayerNorm or softmax from one element type to another (FP16 or FP32
// each; Statistics: the output is F32, the records; Merge: both F32). Whole
// rows take a softmax form: the default, unscaled, is the fixed kernels of
// kernels/softmax.S; the others are generated (softmax_kernel.h).
struct RowVariant {
  bool layernorm = true;
  ElementType input = ElementType::F16;
  ElementType output = ElementType::F16;
  SoftmaxForm form = SoftmaxForm::Normalised;
  // y = scale x x, the product rounded once to FP32; the scale (an argument
  // word) must be positive, so that the largest y is scale x the largest x.
  bool scaled = false;
  // Bytes from one input column to the next, when known as the kernel is
  // built (a generated softmax then steps its loads by it, a bundle less a
  // column); 0 takes the stride from the argument block.
  std::uint32_t input_stride = 0;
  RowStage stage = RowStage::Whole;

  bool generated() const {
    return stage == RowStage::Whole && !layernorm && (form != SoftmaxForm::Normalised || scaled);
  }
  auto operator<=>(const RowVariant&) const = default;
};

// How the six workers of a tile share a split-column row kernel's block of
// `panels` panels x `columns` columns: G = 6 / K groups of half panels
// (8 rows) times K = `column_ranges` column ranges (1 <= K <= min(6,
// columns)). Group g takes half panels [2P g / G, 2P (g + 1) / G), range r
// columns [C r / K, C (r + 1) / K); workers with no half panel are left
// out. A statistics kernel's range r writes slot r: the tile contributes K
// slots, slot r of `split_row_range_columns(columns, K, r)` columns.
struct RowWorkerShare {
  std::int64_t first_half_panel = 0;
  std::int64_t half_panels = 0;
  std::int64_t first_column = 0;
  std::int64_t columns = 0;
  int range = 0;
};
std::vector<RowWorkerShare> split_row_block(std::int64_t panels, std::int64_t columns, int column_ranges);
std::int64_t split_row_range_columns(std::int64_t columns, int column_ranges, int range);

// How the merge kernels' workers share a block of `panels` panels: by quads
// of 4 rows, worker w of six taking quads [4P w / 6, 4P (w + 1) / 6)
// (workers without a quad are left out).
struct RowQuadShare {
  std::int64_t first_quad = 0;
  std::int64_t quads = 0;
};
std::vector<RowQuadShare> split_row_quads(std::int64_t panels);

// Bytes of one slot of statistics records for `panels` panels (16 FP32
// values per half panel: 128 bytes a panel).
constexpr std::int64_t row_statistics_bytes(std::int64_t panels) { return 128 * panels; }


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


class KernelLibrary {
 public:
  // The kernel symbol of a variant, registering it on first use.
  std::string gemm(const GemmVariant& variant);
  std::string combine(const CombineVariant& variant);
  std::string row(const RowVariant& variant);
  std::string merge(const MergeVariant& variant);

  // Assembly text instantiating every registered variant.
  std::string variant_source() const;
  std::size_t variant_count() const {
    return gemms_.size() + combines_.size() + rows_.size() + merges_.size();
  }

 private:
  std::map<GemmVariant, std::string> gemms_;
  std::map<CombineVariant, std::string> combines_;
  std::map<RowVariant, std::string> rows_;
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
