// Argument blocks of the GEMM, softmax and attention-merge kernels for the
// kernel tests, as docs/kernels.md defines them, with the bundles the cost
// model expects of each worker.
#pragma once

#include "compiler/cost_model.h"
#include "kernel_harness.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tilec::compiler::testing {

inline std::uint32_t u32(std::int64_t value) { return static_cast<std::uint32_t>(value); }

inline std::uint32_t float_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

// Launches with, per launch and block, the worker's bundles by the model.
struct Launches {
  std::vector<KernelLaunch> launches;
  std::vector<std::vector<std::int64_t>> bundles;
};

// GEMM jobs {weight offset, activation offset, output offset, k steps},
// worker w of `workers` taking jobs [J w / workers, J (w + 1) / workers).
inline void add_gemm(Launches& out, const std::string& kernel, const GemmVariant& variant,
                     const std::vector<std::array<std::uint32_t, 4>>& jobs, std::uint32_t weights,
                     std::uint32_t activations, std::uint32_t output, int workers = 6) {
  KernelLaunch launch{kernel, {}};
  out.bundles.emplace_back();
  const auto count = static_cast<std::int64_t>(jobs.size());
  for (int w = 0; w < workers; ++w) {
    const std::int64_t first = count * w / workers, last = count * (w + 1) / workers;
    std::vector<std::uint32_t> block{u32(last - first), weights, activations, output};
    std::int64_t bundles = kernel_costs().worker_start + kernel_costs().worker_exit;
    for (std::int64_t j = first; j < last; ++j) {
      block.insert(block.end(), jobs[static_cast<std::size_t>(j)].begin(), jobs[static_cast<std::size_t>(j)].end());
      // Jobs may differ in k: each job's share of gemm_worker_bundles.
      bundles += gemm_worker_bundles(1, jobs[static_cast<std::size_t>(j)][3], variant) -
                 kernel_costs().worker_start - kernel_costs().worker_exit;
    }
    launch.blocks.push_back(std::move(block));
    out.bundles.back().push_back(bundles);
  }
  out.launches.push_back(std::move(launch));
}

// Where a softmax's operands are (panel formats; strides are column strides).
struct SoftmaxBuffers {
  std::uint32_t input = 0, input_stride = 0;
  std::uint32_t output = 0, output_stride = 0;
  std::uint32_t stats = 0;                                  // partial: the rows' m, l
  std::uint32_t chunk_stats = 0, chunk_stride = 0;          // split: K chunks' statistics
  std::uint32_t exponentials = 0, exponential_stride = 0;  // split normalised: e in FP32
  std::int64_t columns = 0;
  std::int64_t first_output_column = 0, output_columns = 0;  // whole normalised: C' (0: C)
  float scale = 1.0f;
};

// The launches of a softmax (variant.form Normalised or Partial) over
// `panels` panels, cut into `chunks` chunks (1: the whole-row kernel).
inline void add_softmax(Launches& out, const RowVariant& variant, std::int64_t panels, int chunks,
                        const SoftmaxBuffers& b) {
  const bool partial = variant.form == SoftmaxForm::Partial;
  const std::vector<SoftmaxShare> shares = softmax_shares(panels, b.columns, chunks);
  const std::uint32_t in_bytes = element_bytes(variant.input), out_bytes = element_bytes(variant.output);
  const std::uint32_t scale = float_bits(b.scale);
  const std::int64_t written = b.output_columns ? b.output_columns : b.columns;
  auto in_at = [&](const SoftmaxShare& s) {
    return b.input + u32(s.first_column) * b.input_stride + u32(s.first_half) * 8 * in_bytes;
  };
  auto own = [&](const SoftmaxShare& s) { return b.chunk_stats + u32(s.chunk) * b.chunk_stride + 64 * u32(s.first_half); };
  auto launch = [&](const RowVariant& v, auto block, bool first_chunk_only) {
    KernelLibrary names;
    KernelLaunch l{names.row(v), {}};
    out.bundles.emplace_back();
    for (const SoftmaxShare& s : shares) {
      if (first_chunk_only && s.chunk != 0) continue;
      l.blocks.push_back(block(s));
      std::int64_t bundles;
      if (v.generated())
        bundles = softmax_variant_worker_bundles(v, s.halves, s.columns, chunks == 1 ? written : s.columns, chunks);
      else  // the fixed kernel reads its eight words before the empty check
        bundles = s.halves == 0 ? 10 : row_worker_bundles(RowKernel::Softmax, v.input, v.output, s.halves, s.columns, written);
      out.bundles.back().push_back(bundles);
    }
    out.launches.push_back(std::move(l));
  };
  if (chunks == 1 && !partial) {
    launch(variant, [&](const SoftmaxShare& s) {
      std::vector<std::uint32_t> block{u32(s.halves), u32(b.columns), in_at(s), b.output + u32(s.first_half) * 8 * out_bytes,
                                       b.input_stride, b.output_stride, u32(written), u32(b.first_output_column) * b.input_stride};
      if (variant.scaled) block.push_back(scale);
      return block;
    }, false);
    return;
  }
  if (chunks == 1) {
    launch(variant, [&](const SoftmaxShare& s) {
      return std::vector<std::uint32_t>{u32(s.halves), u32(b.columns), in_at(s), b.output + u32(s.first_half) * 8 * out_bytes,
                                        b.input_stride, b.output_stride, b.stats + 64 * u32(s.first_half), scale};
    }, false);
    return;
  }
  RowVariant max = variant, exp = variant, finish = variant;
  max.form = SoftmaxForm::ChunkMax;
  exp.form = SoftmaxForm::ChunkExp;
  if (!partial) exp.output = ElementType::F32;
  finish.form = partial ? SoftmaxForm::FinishStats : SoftmaxForm::FinishNormalise;
  if (!partial && finish.input_stride) finish.input_stride = b.exponential_stride;  // it reads e
  const std::uint32_t e_at = partial ? b.output : b.exponentials, e_step = partial ? b.output_stride : b.exponential_stride;
  const std::uint32_t e_bytes = element_bytes(exp.output);
  launch(max, [&](const SoftmaxShare& s) {
    return std::vector<std::uint32_t>{u32(s.halves), u32(s.columns), in_at(s), own(s), b.input_stride, scale};
  }, false);
  launch(exp, [&](const SoftmaxShare& s) {
    return std::vector<std::uint32_t>{u32(s.halves), u32(s.columns), in_at(s),
                                      e_at + u32(s.first_column) * e_step + u32(s.first_half) * 8 * e_bytes,
                                      b.input_stride, e_step, b.chunk_stats + 64 * u32(s.first_half), u32(chunks),
                                      b.chunk_stride, own(s), scale};
  }, false);
  if (partial) {
    launch(finish, [&](const SoftmaxShare& s) {
      return std::vector<std::uint32_t>{u32(s.halves), u32(chunks), b.chunk_stats + 64 * u32(s.first_half),
                                        b.stats + 64 * u32(s.first_half), b.chunk_stride};
    }, true);
  } else {
    launch(finish, [&](const SoftmaxShare& s) {
      return std::vector<std::uint32_t>{u32(s.halves), u32(s.columns),
                                        b.exponentials + u32(s.first_column) * b.exponential_stride + u32(s.first_half) * 32,
                                        b.output + u32(s.first_column) * b.output_stride + u32(s.first_half) * 8 * out_bytes,
                                        b.exponential_stride, b.output_stride, b.chunk_stats + 64 * u32(s.first_half),
                                        u32(chunks), b.chunk_stride};
    }, false);
  }
}

// Where a merge's operands are: partial i's output at partials + i x
// partial_stride, its statistics at stats + i x stats_stride; one scratch
// of merge_scratch_bytes(n) per worker.
struct MergeBuffers {
  std::uint32_t partials = 0, partial_stride = 0;
  std::uint32_t stats = 0, stats_stride = 0;
  std::uint32_t output = 0;
  std::vector<std::uint32_t> scratch;  // one per share
};

inline void add_merge(Launches& out, const std::string& kernel, const MergeVariant& variant,
                      const std::vector<MergeShare>& shares, std::int64_t partials, const MergeBuffers& b) {
  KernelLaunch launch{kernel, {}};
  out.bundles.emplace_back();
  const std::uint32_t out_bytes = element_bytes(variant.output);
  for (std::size_t w = 0; w < shares.size(); ++w) {
    const MergeShare& s = shares[w];
    launch.blocks.push_back({u32(s.quads), u32(s.columns), u32(partials),
                             b.partials + u32(s.first_column) * variant.partial_column_stride + 16 * u32(s.first_quad),
                             b.partial_stride, b.stats + 32 * u32(s.first_quad), b.stats_stride,
                             b.output + u32(s.first_column) * variant.output_column_stride + 4 * out_bytes * u32(s.first_quad),
                             b.scratch.at(w)});
    out.bundles.back().push_back(merge_worker_bundles(variant, s.quads, s.columns, partials));
  }
  out.launches.push_back(std::move(launch));
}

// Runs the launches (the first as the run's kernel) and checks every
// worker's bundles against the model.
inline KernelResult run_launches(const KernelHarness& harness, const Launches& l, std::vector<Bytes> inputs,
                                 std::vector<Region> outputs) {
  KernelRun run{l.launches.at(0).kernel, l.launches[0].blocks, std::move(inputs), std::move(outputs)};
  run.then.assign(l.launches.begin() + 1, l.launches.end());
  KernelResult result = harness.run(run);
  EXPECT_EQ(result.block_cycles.size(), l.bundles.size());
  for (std::size_t launch = 0; launch < l.bundles.size() && launch < result.block_cycles.size(); ++launch) {
    EXPECT_EQ(result.block_cycles[launch].size(), l.bundles[launch].size()) << "launch " << launch;
    for (std::size_t w = 0; w < l.bundles[launch].size() && w < result.block_cycles[launch].size(); ++w)
      EXPECT_EQ(static_cast<std::int64_t>((result.block_cycles[launch][w] + 4) / 6), l.bundles[launch][w])
          << l.launches[launch].kernel << " (launch " << launch << ") worker " << w;
  }
  return result;
}

}  // namespace tilec::compiler::testing
