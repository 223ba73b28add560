#include "compiler/kernel_plan.h"

#include "compiler/attention_candidates.h"
#include "compiler/combine_kernel.h"
#include "compiler/cost_model.h"
#include "compiler/group_exchanges.h"
#include "compiler/merge_kernel.h"
#include "support/error.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace tilec::compiler {

namespace {

std::uint32_t bytes_of(StorageType storage) { return element_bytes(storage.element); }

const MidValue& value(const Lir& lir, int id) { return lir.mid->values[static_cast<std::size_t>(id)]; }

RowKernel row_kernel(const RowVariant& variant) {
  return variant.layernorm ? RowKernel::LayerNorm : RowKernel::Softmax;
}

void plan_gemm(Lir& lir, Task& task, KernelLibrary& library) {
  const MidOp& op = lir.mid->ops[static_cast<std::size_t>(task.op)];
  const Step& step = lir.chain->steps[static_cast<std::size_t>(op.step)];
  const Weight& weight = lir.chain->weights[static_cast<std::size_t>(step.weight)];
  const MidValue& input = value(lir, op.inputs[0]);
  const MidValue& partial = value(lir, op.output);
  const std::uint32_t input_panels = static_cast<std::uint32_t>(input.layout.piece_panels);
  const std::uint32_t output_panels = static_cast<std::uint32_t>(partial.layout.piece_panels);
  const std::uint32_t activation_row = static_cast<std::uint32_t>(kPanelRows) * bytes_of(input.storage);
  const std::uint32_t output_row = static_cast<std::uint32_t>(kPanelRows) * bytes_of(partial.storage);
  GemmVariant variant;
  variant.weights = weight.storage.element;
  variant.activations = input.storage.element;
  variant.activation_stride = input_panels * activation_row;
  variant.output_stride = output_panels * output_row;
  variant.scale = is_fp8(weight.storage.element) ? weight.storage.scale + input.storage.scale : 0;
  variant.drain_f32 = partial.storage.element == ElementType::F32;
  if (is_fp8(weight.storage.element) != is_fp8(input.storage.element) ||
      (!is_fp8(weight.storage.element) && weight.storage.element != input.storage.element))
    throw_failure(fmt::format("op '{}'", step.name), "the AMP multiplies operands of one precision: weights {} and activations {}",
                  element_type_name(weight.storage.element), element_type_name(input.storage.element));
  task.kernel = library.gemm(variant);

  const std::uint32_t weight_block = static_cast<std::uint32_t>(kPanelRows * task.k_steps) * bytes_of(weight.storage);
  // Jobs cover the tile's own panels; its pieces may hold padding panels past them.
  const std::uint32_t panels = static_cast<std::uint32_t>(task.panels);
  std::int64_t blocks = task.column_blocks * static_cast<std::int64_t>(panels);
  task.cycles =
      gemm_jobs_tile_cycles(std::vector<std::int64_t>(static_cast<std::size_t>(blocks), task.k_steps), variant);
  for (int worker = 0; worker < kWorkers; ++worker) {
    std::int64_t first = blocks * worker / kWorkers, last = blocks * (worker + 1) / kWorkers;
    if (first == last) continue;
    std::vector<ArgumentWord> words{ArgumentWord::value(static_cast<std::uint32_t>(last - first)),
                                    ArgumentWord::address(task.weights), ArgumentWord::address(task.activation),
                                    ArgumentWord::address(task.output)};
    for (std::int64_t block = first; block < last; ++block) {
      std::uint32_t column_block = static_cast<std::uint32_t>(block / panels);
      std::uint32_t panel = static_cast<std::uint32_t>(block % panels);
      const std::uint32_t output_block = static_cast<std::uint32_t>(task.first_column_block) + column_block;
      words.push_back(ArgumentWord::value(column_block * weight_block));
      words.push_back(ArgumentWord::value(panel * activation_row));
      words.push_back(ArgumentWord::value(
          (output_block * static_cast<std::uint32_t>(kPanelRows) * output_panels + panel) * output_row));
      words.push_back(ArgumentWord::value(static_cast<std::uint32_t>(task.k_steps)));
    }
    task.worker_arguments.push_back(std::move(words));
  }
}

CombineVariant combine_variant(const Lir& lir, const Task& task) {
  const MidOp& op = lir.mid->ops[static_cast<std::size_t>(task.op)];
  const Step& step = lir.chain->steps[static_cast<std::size_t>(op.step)];
  CombineVariant variant;
  variant.inputs = static_cast<int>(task.inputs.size());
  variant.input = value(lir, op.inputs[0]).storage;
  if (task.partial_sum) {
    // A pass of FP16 partial sums adds in FP32 and rounds once, to FP16.
    variant.sum = variant.input.element == ElementType::F16 ? StorageType{ElementType::F32, 0} : variant.input;
    if (variant.sum != variant.input)
      variant.stages.push_back(CombineStage{EpilogueOp::Kind::Cast, graph::GeluApproximation::Tanh, variant.input});
    return variant;
  }
  variant.sum = op.kind == MidOpKind::Map && variant.inputs == 1 ? variant.input : step.result;
  // FP16 partial sums of a reduction are added in FP32 and rounded once.
  if (op.kind == MidOpKind::Reduce && variant.input.element == ElementType::F16 && variant.inputs > 1) {
    variant.sum = StorageType{ElementType::F32, 0};
    variant.stages.push_back(CombineStage{EpilogueOp::Kind::Cast, graph::GeluApproximation::Tanh, step.result});
  }
  for (const EpilogueOp& e : op.epilogue) {
    variant.stages.push_back(CombineStage{e.kind, e.approximation, e.result});
    if (e.kind == EpilogueOp::Kind::AddBias)
      variant.bias = lir.chain->weights[static_cast<std::size_t>(e.weight)].storage.element;
  }
  if (variant.inputs > kMaxCombineInputs)
    throw_failure(fmt::format("op '{}'", op.name), "a reduction over {} K parts exceeds the {} the kernels take",
                  variant.inputs, kMaxCombineInputs);
  return variant;
}

void plan_combine(Lir& lir, Task& task, KernelLibrary& library) {
  CombineVariant variant = combine_variant(lir, task);
  task.kernel = library.combine(variant);
  task.cycles = combine_run_cycles(variant, task.columns, task.column_elements, task.rows_split);
  const std::uint32_t in_bytes = bytes_of(variant.input), out_bytes = bytes_of(variant.output());
  for (const CombineShare& share : combine_shares(variant, task.columns, task.column_elements, task.rows_split)) {
    if (share.columns == 0) continue;
    const auto offset = static_cast<std::uint32_t>(share.offset);
    std::vector<ArgumentWord> words{
        ArgumentWord::value(static_cast<std::uint32_t>(share.columns)),
        ArgumentWord::value(static_cast<std::uint32_t>(share.groups)),
        ArgumentWord::address(task.output.plus(offset * out_bytes)),
        task.bias.buffer >= 0 ? ArgumentWord::address(task.bias.plus(static_cast<std::uint32_t>(share.bias_column) * 4))
                              : ArgumentWord::value(0)};
    for (const Place& input : task.inputs) words.push_back(ArgumentWord::address(input.plus(offset * in_bytes)));
    task.worker_arguments.push_back(std::move(words));
  }
}

// Whole rows (docs/kernels.md, layernorm and softmax): workers take half
// panels of 8 rows, so two panels keep four workers busy; the statistics
// cover every column, the output the task's columns.
void plan_row(Lir& lir, Task& task, KernelLibrary& library) {
  const MidOp& op = lir.mid->ops[static_cast<std::size_t>(task.op)];
  const Step& step = lir.chain->steps[static_cast<std::size_t>(op.step)];
  const RowVariant variant{task.kind == TaskKind::LayerNorm, value(lir, op.inputs[0]).storage.element,
                           value(lir, op.output).storage.element};
  for (ElementType type : {variant.input, variant.output})
    if (type != ElementType::F16 && type != ElementType::F32)
      throw_failure(fmt::format("op '{}'", step.name), "the compiler supports {} on f16 and f32 values only",
                    variant.layernorm ? "layernorm" : "softmax");
  task.kernel = library.row(variant);
  const MidValue& input = value(lir, op.inputs[0]);
  task.cycles = row_tile_cycles(row_kernel(variant), variant.input, variant.output, task.panels, input.cols,
                                task.columns);
  const std::uint32_t first_column =
      static_cast<std::uint32_t>(value(lir, op.output).layout.columns_on(task.tile).begin);
  // Strides are the pieces' (every panel of them); the work is the tile's own panels.
  const std::uint32_t halves = 2 * static_cast<std::uint32_t>(task.column_elements / kPanelRows);
  const std::uint32_t working = 2 * static_cast<std::uint32_t>(task.panels);
  const std::uint32_t in_half = static_cast<std::uint32_t>(kPanelRows / 2) * element_bytes(variant.input);
  const std::uint32_t out_half = static_cast<std::uint32_t>(kPanelRows / 2) * element_bytes(variant.output);
  std::uint32_t epsilon;
  std::memcpy(&epsilon, &step.epsilon, 4);
  for (int worker = 0; worker < kWorkers; ++worker) {
    std::uint32_t first = working * static_cast<std::uint32_t>(worker) / kWorkers;
    std::uint32_t last = working * static_cast<std::uint32_t>(worker + 1) / kWorkers;
    if (first == last) continue;
    std::vector<ArgumentWord> words{ArgumentWord::value(last - first),
                                    ArgumentWord::value(static_cast<std::uint32_t>(input.cols)),
                                    ArgumentWord::address(task.inputs[0].plus(first * in_half)),
                                    ArgumentWord::address(task.output.plus(first * out_half)),
                                    ArgumentWord::value(halves * in_half),
                                    ArgumentWord::value(halves * out_half)};
    if (variant.layernorm) {
      words.push_back(ArgumentWord::address(task.weights));
      words.push_back(ArgumentWord::value(epsilon));
    }
    words.push_back(ArgumentWord::value(static_cast<std::uint32_t>(task.columns)));
    words.push_back(ArgumentWord::value(first_column * halves * in_half));
    task.worker_arguments.push_back(std::move(words));
  }
}

std::uint32_t float_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

// The split-column row kernels (docs/kernels.md, "Split-column row
// kernels"): RowVariant with a stage, workers as split_row_block shares a
// block (statistics, apply) or split_row_quads (merge).
RowVariant split_row_variant(const Lir& lir, const Task& task, RowStage stage) {
  const MidOp& op = lir.mid->ops[static_cast<std::size_t>(task.op)];
  const Step& step = lir.chain->steps[static_cast<std::size_t>(op.step)];
  RowVariant variant{.layernorm = step.kind == StepKind::LayerNorm, .stage = stage};
  variant.input = stage == RowStage::Merge ? ElementType::F32 : value(lir, op.inputs[0]).storage.element;
  variant.output = stage == RowStage::Apply ? value(lir, op.output).storage.element : ElementType::F32;
  for (ElementType type : {variant.input, variant.output})
    if (type != ElementType::F16 && type != ElementType::F32)
      throw_failure(fmt::format("op '{}'", step.name), "the compiler supports {} on f16 and f32 values only",
                    variant.layernorm ? "layernorm" : "softmax");
  return variant;
}

void plan_row_statistics(Lir& lir, Task& task, KernelLibrary& library) {
  const RowVariant variant = split_row_variant(lir, task, RowStage::Statistics);
  task.kernel = library.row(variant);
  task.cycles = row_stats_tile_cycles(row_kernel(variant), variant.input, task.panels, task.columns, task.ranges);
  const std::uint32_t column = static_cast<std::uint32_t>(task.column_elements) * element_bytes(variant.input);
  const std::uint32_t half = static_cast<std::uint32_t>(kPanelRows / 2) * element_bytes(variant.input);
  const std::uint32_t slot = static_cast<std::uint32_t>(row_statistics_bytes(task.column_elements / kPanelRows));
  for (const RowWorkerShare& share : split_row_block(task.panels, task.columns, task.ranges)) {
    const std::uint32_t first_half = static_cast<std::uint32_t>(share.first_half_panel);
    task.worker_arguments.push_back(
        {ArgumentWord::value(static_cast<std::uint32_t>(share.half_panels)),
         ArgumentWord::value(static_cast<std::uint32_t>(share.columns)),
         ArgumentWord::address(task.inputs[0].plus(static_cast<std::uint32_t>(share.first_column) * column +
                                                   first_half * half)),
         ArgumentWord::value(column),
         ArgumentWord::address(task.output.plus(static_cast<std::uint32_t>(share.range) * slot + first_half * 64))});
  }
}

void plan_row_merge(Lir& lir, Task& task, KernelLibrary& library) {
  const RowVariant variant = split_row_variant(lir, task, RowStage::Merge);
  task.kernel = library.row(variant);
  task.cycles = row_merge_tile_cycles(row_kernel(variant), task.panels, task.slots);
  const std::uint32_t slot = static_cast<std::uint32_t>(row_statistics_bytes(task.column_elements / kPanelRows));
  for (const RowQuadShare& share : split_row_quads(task.panels)) {
    std::vector<ArgumentWord> words{ArgumentWord::value(static_cast<std::uint32_t>(share.quads)),
                                    ArgumentWord::value(static_cast<std::uint32_t>(share.first_quad)),
                                    ArgumentWord::value(static_cast<std::uint32_t>(task.slots)),
                                    ArgumentWord::address(task.inputs.back()),
                                    ArgumentWord::value(slot),
                                    ArgumentWord::address(task.output)};
    if (variant.layernorm) {
      words.push_back(ArgumentWord::address(task.counts));
      words.push_back(ArgumentWord::value(static_cast<std::uint32_t>(task.total_columns)));
    }
    task.worker_arguments.push_back(std::move(words));
  }
}

void plan_row_apply(Lir& lir, Task& task, KernelLibrary& library) {
  const MidOp& op = lir.mid->ops[static_cast<std::size_t>(task.op)];
  const Step& step = lir.chain->steps[static_cast<std::size_t>(op.step)];
  const RowVariant variant = split_row_variant(lir, task, RowStage::Apply);
  task.kernel = library.row(variant);
  task.cycles = row_apply_tile_cycles(row_kernel(variant), variant.input, variant.output, task.panels, task.columns,
                                      task.slots, task.ranges);
  const std::uint32_t in_column = static_cast<std::uint32_t>(task.column_elements) * element_bytes(variant.input);
  const std::uint32_t out_column = static_cast<std::uint32_t>(task.column_elements) * element_bytes(variant.output);
  const std::uint32_t in_half = static_cast<std::uint32_t>(kPanelRows / 2) * element_bytes(variant.input);
  const std::uint32_t out_half = static_cast<std::uint32_t>(kPanelRows / 2) * element_bytes(variant.output);
  const std::uint32_t slot = static_cast<std::uint32_t>(row_statistics_bytes(task.column_elements / kPanelRows));
  for (const RowWorkerShare& share : split_row_block(task.panels, task.columns, task.ranges)) {
    const std::uint32_t first_half = static_cast<std::uint32_t>(share.first_half_panel);
    const std::uint32_t first_column = static_cast<std::uint32_t>(share.first_column);
    std::vector<ArgumentWord> words{
        ArgumentWord::value(static_cast<std::uint32_t>(share.half_panels)),
        ArgumentWord::value(static_cast<std::uint32_t>(share.columns)),
        ArgumentWord::address(task.inputs[0].plus(first_column * in_column + first_half * in_half)),
        ArgumentWord::address(task.output.plus(first_column * out_column + first_half * out_half)),
        ArgumentWord::value(in_column),
        ArgumentWord::value(out_column)};
    if (variant.layernorm) {
      words.push_back(ArgumentWord::address(task.weights.plus(first_column * 8)));
      words.push_back(ArgumentWord::value(float_bits(step.epsilon)));
    }
    words.push_back(ArgumentWord::value(static_cast<std::uint32_t>(task.slots)));
    words.push_back(ArgumentWord::address(task.inputs[1].plus(first_half * 64)));
    words.push_back(ArgumentWord::value(slot));
    if (variant.layernorm) {
      words.push_back(ArgumentWord::address(task.counts));
      words.push_back(ArgumentWord::value(static_cast<std::uint32_t>(task.total_columns)));
    }
    task.worker_arguments.push_back(std::move(words));
  }
}

// A GEMM run over explicit jobs {weight offset, activation offset, output
// offset, k steps}, worker w taking jobs [J w / 6, J (w + 1) / 6).
using GemmJob = std::array<std::uint32_t, 4>;
void plan_gemm_jobs(Task& task, KernelLibrary& library, const GemmVariant& variant, const Place& weights,
                    const Place& activation, const Place& output, const std::vector<GemmJob>& jobs) {
  task.kernel = library.gemm(variant);
  std::vector<std::int64_t> k_steps;
  for (const GemmJob& job : jobs) k_steps.push_back(job[3]);
  task.cycles = gemm_jobs_tile_cycles(k_steps, variant);
  const std::int64_t count = static_cast<std::int64_t>(jobs.size());
  for (int worker = 0; worker < kWorkers; ++worker) {
    const std::int64_t first = count * worker / kWorkers, last = count * (worker + 1) / kWorkers;
    if (first == last) continue;
    std::vector<ArgumentWord> words{ArgumentWord::value(static_cast<std::uint32_t>(last - first)),
                                    ArgumentWord::address(weights), ArgumentWord::address(activation),
                                    ArgumentWord::address(output)};
    for (std::int64_t j = first; j < last; ++j)
      for (std::uint32_t word : jobs[static_cast<std::size_t>(j)]) words.push_back(ArgumentWord::value(word));
    task.worker_arguments.push_back(std::move(words));
  }
}

// A tile's share of attention, one kernel run a task (AttentionStage), as
// docs/kernels.md "Attention on the AMP" lays out its operands.
void plan_attention(Lir& lir, Task& task, KernelLibrary& library) {
  const MidOp& op = lir.mid->ops[static_cast<std::size_t>(task.op)];
  const Step& step = lir.chain->steps[static_cast<std::size_t>(op.step)];
  const AttentionShape shape = attention_shape(
      *lir.chain, step, AttentionCandidate{op.attention_head_parts, op.attention_query_parts, op.attention_key_parts},
      lir.mid->groups.chunk_panels);
  // (A merge reads only the merge kernel's figures, whatever the operands' type.)
  const ElementType input =
      op.kind == MidOpKind::Attention ? value(lir, op.inputs[0]).storage.element : step.result.element;
  const AttentionKernels kernels = attention_kernels(shape, input, step.result.element);
  const AttentionWork& work = task.attention;
  const std::uint32_t bytes = element_bytes(kernels.scores.weights);
  const std::int64_t qp = shape.query_block_panels(), kp = shape.key_block_panels();
  const std::int64_t dh = shape.qk_head_columns(), dv = shape.v_head_columns();
  const std::uint32_t q_column = static_cast<std::uint32_t>(qp * kPanelRows) * bytes;
  const std::uint32_t k_column = static_cast<std::uint32_t>(kp * kPanelRows) * bytes;
  const std::uint32_t s_column = static_cast<std::uint32_t>(qp * kPanelRows) * 4;
  const std::uint32_t p_column = q_column;
  const std::uint32_t head = static_cast<std::uint32_t>(work.head);
  const std::uint32_t d_blocks = static_cast<std::uint32_t>((dv + kPanelRows - 1) / kPanelRows);
  const std::uint32_t scale = float_bits(step.attention_scale);
  const std::uint32_t chunk_stride = static_cast<std::uint32_t>(row_statistics_bytes(qp));
  auto u32 = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
  std::vector<GemmJob> jobs;
  switch (work.stage) {
    case AttentionStage::Transpose:
      for (const TransposeJob& job : attention_transpose_jobs(work.key_panels, dv)) {
        const std::uint32_t p = u32(job.key_panel), j = u32(job.column_block);
        jobs.push_back({(16 * j * u32(kp) + p) * 16 * bytes, 0, (j * 16 * u32(kp) + 16 * p) * 16 * bytes,
                        u32(job.columns)});
      }
      plan_gemm_jobs(task, library, kernels.transpose, work.v.plus(head * u32(dv) * k_column), work.identity,
                     work.transposed, jobs);
      return;
    case AttentionStage::Scores:
      for (std::uint32_t p = 0; p < u32(work.key_panels); ++p)
        for (std::uint32_t r = 0; r < u32(work.query_panels); ++r)
          jobs.push_back({p * 16 * bytes, r * 16 * bytes, (p * 16 * u32(qp) + r) * 16 * 4, u32(dh)});
      plan_gemm_jobs(task, library, kernels.scores, work.k.plus(head * u32(dh) * k_column),
                     work.q.plus(head * u32(dh) * q_column), work.scores, jobs);
      return;
    case AttentionStage::Output: {
      const bool partial = shape.candidate.key_parts > 1;
      const std::uint32_t out_bytes = partial ? 4 : element_bytes(step.result.element);
      for (std::uint32_t j = 0; j < d_blocks; ++j)
        for (std::uint32_t r = 0; r < u32(work.query_panels); ++r)
          jobs.push_back({j * u32(kp) * 16 * 16 * bytes, r * 16 * bytes, (j * 16 * u32(qp) + r) * 16 * out_bytes,
                          u32(work.valid_keys)});
      const Place output =
          partial ? work.output : work.output.plus(head * u32(dv) * u32(qp * kPanelRows) * out_bytes);
      plan_gemm_jobs(task, library, kernels.output, work.transposed, work.probabilities, output, jobs);
      return;
    }
    case AttentionStage::Merge: {
      task.kernel = library.merge(kernels.merge);
      task.cycles = merge_tile_cycles(kernels.merge, 4 * work.query_panels, work.merged_columns,
                                      shape.candidate.key_parts);
      const std::uint32_t slot = attention_scratch(shape, kernels).merge_slot;
      const std::uint32_t share = u32(shape.merge_share_columns()) * kernels.merge.partial_column_stride;
      const std::uint32_t out_bytes = element_bytes(kernels.merge.output);
      const std::vector<MergeShare> shares =
          merge_shares(kernels.merge, 4 * work.query_panels, work.merged_columns, shape.candidate.key_parts);
      for (std::size_t w = 0; w < shares.size(); ++w) {
        const MergeShare& m = shares[w];
        task.worker_arguments.push_back(
            {ArgumentWord::value(u32(m.quads)), ArgumentWord::value(u32(m.columns)),
             ArgumentWord::value(u32(shape.candidate.key_parts)),
             ArgumentWord::address(work.slots.plus(u32(m.first_column) * kernels.merge.partial_column_stride +
                                                   16 * u32(m.first_quad))),
             ArgumentWord::value(slot), ArgumentWord::address(work.slots.plus(share + 32 * u32(m.first_quad))),
             ArgumentWord::value(slot),
             ArgumentWord::address(work.output.plus(u32(m.first_column) * kernels.merge.output_column_stride +
                                                    4 * out_bytes * u32(m.first_quad))),
             ArgumentWord::address(work.workers.plus(u32(w * merge_scratch_bytes(shape.candidate.key_parts))))});
      }
      return;
    }
    default: break;
  }
  // The softmax of scale x S over the valid keys (kernels.softmax), whole
  // or over column chunks (docs/kernels.md "Scaled and partial softmax").
  const RowVariant& softmax = kernels.softmax;
  const bool partial = softmax.form == SoftmaxForm::Partial;
  const int chunks = kernels.softmax_chunks;
  const std::int64_t columns = work.valid_keys;
  const std::uint32_t p_bytes = element_bytes(softmax.output);
  RowVariant variant = softmax;
  if (work.stage == AttentionStage::SoftmaxMax) variant.form = SoftmaxForm::ChunkMax;
  if (work.stage == AttentionStage::SoftmaxExp) {
    variant.form = SoftmaxForm::ChunkExp;
    if (!partial) variant.output = ElementType::F32;
  }
  if (work.stage == AttentionStage::SoftmaxFinish)
    variant.form = partial ? SoftmaxForm::FinishStats : SoftmaxForm::FinishNormalise;
  task.kernel = library.row(variant);
  task.cycles = softmax_launch_cycles(variant, work.query_panels, columns, chunks);
  // A normalised split keeps its exponentials in FP32 in S itself.
  const Place e_at = partial ? work.probabilities : work.scores;
  const std::uint32_t e_step = partial ? p_column : s_column;
  const std::uint32_t e_bytes = partial ? p_bytes : 4;
  for (const SoftmaxShare& share : softmax_shares(work.query_panels, columns, chunks)) {
    const std::uint32_t half = u32(share.first_half), first_column = u32(share.first_column);
    const Place in = work.scores.plus(first_column * s_column + half * 8 * 4);
    const Place own = work.chunk_statistics.plus(u32(share.chunk) * chunk_stride + 64 * half);
    std::vector<ArgumentWord> words;
    switch (work.stage) {
      case AttentionStage::Softmax:
        words = {ArgumentWord::value(u32(share.halves)), ArgumentWord::value(u32(columns)), ArgumentWord::address(in),
                 ArgumentWord::address(work.probabilities.plus(half * 8 * p_bytes)), ArgumentWord::value(s_column),
                 ArgumentWord::value(p_column)};
        if (partial) {
          words.push_back(ArgumentWord::address(work.statistics.plus(64 * half)));
        } else {
          words.push_back(ArgumentWord::value(u32(columns)));
          words.push_back(ArgumentWord::value(0));
        }
        words.push_back(ArgumentWord::value(scale));
        break;
      case AttentionStage::SoftmaxMax:
        words = {ArgumentWord::value(u32(share.halves)), ArgumentWord::value(u32(share.columns)),
                 ArgumentWord::address(in), ArgumentWord::address(own), ArgumentWord::value(s_column),
                 ArgumentWord::value(scale)};
        break;
      case AttentionStage::SoftmaxExp:
        words = {ArgumentWord::value(u32(share.halves)), ArgumentWord::value(u32(share.columns)),
                 ArgumentWord::address(in),
                 ArgumentWord::address(e_at.plus(first_column * e_step + half * 8 * e_bytes)),
                 ArgumentWord::value(s_column), ArgumentWord::value(e_step),
                 ArgumentWord::address(work.chunk_statistics.plus(64 * half)), ArgumentWord::value(u32(chunks)),
                 ArgumentWord::value(chunk_stride), ArgumentWord::address(own), ArgumentWord::value(scale)};
        break;
      default:  // the finish
        if (partial) {
          if (share.chunk != 0) continue;
          words = {ArgumentWord::value(u32(share.halves)), ArgumentWord::value(u32(chunks)),
                   ArgumentWord::address(work.chunk_statistics.plus(64 * half)),
                   ArgumentWord::address(work.statistics.plus(64 * half)), ArgumentWord::value(chunk_stride)};
        } else {
          words = {ArgumentWord::value(u32(share.halves)), ArgumentWord::value(u32(share.columns)),
                   ArgumentWord::address(work.scores.plus(first_column * s_column + half * 32)),
                   ArgumentWord::address(work.probabilities.plus(first_column * p_column + half * 8 * p_bytes)),
                   ArgumentWord::value(s_column), ArgumentWord::value(p_column),
                   ArgumentWord::address(work.chunk_statistics.plus(64 * half)), ArgumentWord::value(u32(chunks)),
                   ArgumentWord::value(chunk_stride)};
        }
        break;
    }
    task.worker_arguments.push_back(std::move(words));
  }
}

// A combine whose whole columns its workers would not share evenly while a
// bias makes it loop per column runs as two tasks: the columns that share
// evenly, then the rest with each column's panels shared (combine_kernel.h).
// The columns of a task that run as a second task (0: none), with its variant.
std::int64_t uneven_columns(const Lir& lir, const Task& task, CombineVariant& variant) {
  if (task.kind != TaskKind::Combine || task.rows_split) return 0;
  variant = combine_variant(lir, task);
  return combine_rows_split_columns(variant, task.columns, task.column_elements);
}

bool split_uneven_combines(Lir& lir) {
  bool split = false;
  std::vector<Task> tasks;
  tasks.reserve(lir.tasks.size());
  for (Task& task : lir.tasks) {
    CombineVariant variant;
    const std::int64_t rest = uneven_columns(lir, task, variant);
    if (rest == 0) {
      tasks.push_back(std::move(task));
      continue;
    }
    const auto skip = static_cast<std::uint32_t>((task.columns - rest) * task.column_elements);
    Task tail = task;
    tail.rows_split = true;
    tail.columns = rest;
    for (Place& input : tail.inputs) input = input.plus(skip * bytes_of(variant.input));
    tail.output = tail.output.plus(skip * bytes_of(variant.output()));
    tail.bias = tail.bias.plus(static_cast<std::uint32_t>(task.columns - rest) * 4);  // a bias: why it loops per column
    task.columns -= rest;
    tasks.push_back(std::move(task));
    tasks.push_back(std::move(tail));
    split = true;
  }
  lir.tasks = std::move(tasks);
  return split;
}

}  // namespace

bool splits_combines(const Lir& lir) {
  CombineVariant variant;
  return std::any_of(lir.tasks.begin(), lir.tasks.end(),
                     [&](const Task& task) { return uneven_columns(lir, task, variant) > 0; });
}

bool plan_kernels(Lir& lir, KernelLibrary& library, bool split_combines) {
  const bool split = split_combines && split_uneven_combines(lir);
  lir.tasks_of_tile.assign(static_cast<std::size_t>(lir.mid->groups.group_size), {});
  for (std::size_t index = 0; index < lir.tasks.size(); ++index)
    lir.tasks_of_tile[static_cast<std::size_t>(lir.tasks[index].tile)].push_back(static_cast<int>(index));
  for (Task& task : lir.tasks) {
    task.worker_arguments.clear();
    switch (task.kind) {
      case TaskKind::Gemm: plan_gemm(lir, task, library); break;
      case TaskKind::Combine: plan_combine(lir, task, library); break;
      case TaskKind::LayerNorm:
      case TaskKind::Softmax: plan_row(lir, task, library); break;
      case TaskKind::Attention: plan_attention(lir, task, library); break;
      case TaskKind::RowStatistics: plan_row_statistics(lir, task, library); break;
      case TaskKind::RowMerge: plan_row_merge(lir, task, library); break;
      case TaskKind::RowApply: plan_row_apply(lir, task, library); break;
    }
  }
  return split;
}


std::uint32_t argument_bytes(const Lir& lir, int tiles_per_group) {
  std::vector<std::uint32_t> per_tile(static_cast<std::size_t>(tiles_per_group), 0);
  for (const Task& task : lir.tasks)
    for (const auto& words : task.worker_arguments)
      per_tile[static_cast<std::size_t>(task.tile)] += static_cast<std::uint32_t>(words.size()) * 4;
  return per_tile.empty() ? 0 : *std::max_element(per_tile.begin(), per_tile.end());
}

}  // namespace tilec::compiler
