// Attention on one tile from the library's kernels, as a plan partitioned by
// (head, query block, key block) runs a tile's share: q [80 rows], k and v
// [91 keys of 96 stored], d = 72, FP16 in and out.
//   1. V transposed into the weight format by a GEMM with the identity;
//   2. S = q k^T by a GEMM reading k's panel format as its weights (FP32);
//   3. softmax(scale x S) over the 91 keys: normalised, or partial with the
//      rows' statistics, at the cost model's best split of the columns;
//   4. O = P V by a GEMM on the transposed V;
//   5. with two key blocks (two tiles' partials, brought together): the merge.
// Against the host reference's attention (graph::run_reference); reports the
// largest difference, the cycles of each stage and the GEMMs' MACs a cycle.
#include "compiler/attention_candidates.h"
#include "compiler/cost_model.h"
#include "compiler/merge_kernel.h"
#include "compiler/softmax_kernel.h"
#include "graph/builder.h"
#include "graph/reference.h"
#include "kernel_blocks.h"
#include "kernel_harness.h"
#include "numerics/fp16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

namespace tilec::compiler {
namespace {

using testing::Bytes;
using testing::DataPlaces;
using testing::KernelHarness;
using testing::KernelResult;
using testing::u32;

constexpr std::int64_t kRows = 80, kKeys = 91, kStoredKeys = 96, kD = 72;
constexpr std::int64_t kQueryPanels = kRows / 16, kKeyPanels = kStoredKeys / 16, kDBlocks = (kD + 15) / 16;

const GemmVariant& transpose_variant() {
  static const GemmVariant v = [] {
    GemmVariant g;
    g.weights = g.activations = ElementType::F16;
    g.activation_stride = 32;            // the identity: one panel
    g.weight_stride = kKeyPanels * 32;   // v's column stride
    g.output_stride = 32;                // one key to the next in the weight format
    return g;
  }();
  return v;
}
const GemmVariant& scores_variant() {
  static const GemmVariant v = [] {
    GemmVariant g;
    g.weights = g.activations = ElementType::F16;
    g.activation_stride = kQueryPanels * 32;
    g.weight_stride = kKeyPanels * 32;   // k's column stride
    g.output_stride = kQueryPanels * 64;
    g.drain_f32 = true;
    return g;
  }();
  return v;
}
GemmVariant output_variant(bool partial) {
  GemmVariant g;
  g.weights = g.activations = ElementType::F16;
  g.activation_stride = kQueryPanels * 32;  // P
  g.drain_f32 = partial;
  g.output_stride = kQueryPanels * 16 * (partial ? 4 : 2);
  return g;
}
RowVariant softmax_variant(bool partial) {
  return RowVariant{false, ElementType::F32, ElementType::F16, partial ? SoftmaxForm::Partial : SoftmaxForm::Normalised,
                    true};
}
MergeVariant merge_variant() { return MergeVariant{ElementType::F16, kQueryPanels * 64, kQueryPanels * 32}; }

KernelLibrary tile_kernels() {
  KernelLibrary library;
  library.gemm(transpose_variant());
  library.gemm(scores_variant());
  for (bool partial : {false, true}) {
    library.gemm(output_variant(partial));
    RowVariant v = softmax_variant(partial);
    library.row(v);
    for (SoftmaxForm form : {SoftmaxForm::ChunkMax, SoftmaxForm::ChunkExp, SoftmaxForm::FinishStats,
                             SoftmaxForm::FinishNormalise}) {
      RowVariant phase = v;
      phase.form = form;
      if (form == SoftmaxForm::ChunkExp && !partial) phase.output = ElementType::F32;
      library.row(phase);
    }
  }
  library.merge(merge_variant());
  return library;
}

const KernelHarness& harness() {
  static const KernelHarness instance{tile_kernels()};
  return instance;
}

std::string name_of(const GemmVariant& v) {
  KernelLibrary library = tile_kernels();
  return library.gemm(v);
}

// [rows][columns] values (row-major) stored in the panel format with
// `panels` panels; rows past `rows` hold `padding`.
std::vector<std::uint8_t> panel_f16(const std::vector<float>& values, std::int64_t rows, std::int64_t columns,
                                    std::int64_t panels, float padding) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(16 * panels * columns) * 2);
  for (std::int64_t row = 0; row < 16 * panels; ++row)
    for (std::int64_t column = 0; column < columns; ++column) {
      const float value = row < rows ? values[static_cast<std::size_t>(row * columns + column)] : padding;
      const std::uint16_t half = float_to_half(value);
      std::memcpy(&out[static_cast<std::size_t>((column * 16 * panels + row) * 2)], &half, 2);
    }
  return out;
}

struct Stage {
  std::string name;
  std::uint64_t cycles = 0;
  std::uint64_t macs = 0;  // the AMP's, padding included
};

// One tile's share: q against one key block (its 91 keys of k and v).
struct TileRun {
  std::vector<Stage> stages;
  std::uint64_t cycles = 0;
  std::vector<std::uint8_t> output, stats;  // O (FP16 normalised, FP32 partial) and the rows' statistics
};

TileRun run_tile(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v, bool partial) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  DataPlaces places;
  const std::vector<std::uint8_t> q_bytes = panel_f16(q, kRows, kD, kQueryPanels, nan);
  const std::vector<std::uint8_t> k_bytes = panel_f16(k, kKeys, kD, kKeyPanels, nan);
  const std::vector<std::uint8_t> v_bytes = panel_f16(v, kKeys, kD, kKeyPanels, nan);
  std::vector<float> eye(256, 0.0f);
  for (int i = 0; i < 16; ++i) eye[static_cast<std::size_t>(17 * i)] = 1.0f;
  const std::vector<std::uint8_t> identity = panel_f16(eye, 16, 16, 1, 0.0f);
  const std::uint32_t q_at = places.take(u32(q_bytes.size())), k_at = places.take(u32(k_bytes.size()));
  const std::uint32_t v_at = places.take(u32(v_bytes.size())), identity_at = places.take(u32(identity.size()));
  const std::uint32_t vt_at = places.take(u32(kDBlocks * kStoredKeys * 32));
  const std::uint32_t s_stride = u32(kQueryPanels * 64), s_at = places.take(u32(kStoredKeys) * s_stride);
  const std::uint32_t p_stride = u32(kQueryPanels * 32), p_at = places.take(u32(kStoredKeys) * p_stride);
  const GemmVariant out_variant = output_variant(partial);
  const std::uint32_t o_size = u32(kDBlocks * 16) * out_variant.output_stride, o_at = places.take(o_size);
  const auto stats_size = static_cast<std::uint32_t>(softmax_stats_bytes(kQueryPanels));
  const std::uint32_t stats_at = places.take(stats_size);
  const int chunks = softmax_best_chunks(softmax_variant(partial), kQueryPanels, kKeys);
  const std::uint32_t chunk_stats_at = places.take(stats_size * u32(chunks));

  testing::Launches launches;
  std::vector<std::pair<std::string, std::size_t>> stage_launches;  // name, launches it takes
  // 1. V^T, in the planner's job order: job (key panel p, d block j) reads
  // V's columns 16 j.. at keys 16 p..
  std::vector<std::array<std::uint32_t, 4>> jobs;
  for (const TransposeJob& job : attention_transpose_jobs(kKeyPanels, kD))
    jobs.push_back({u32((16 * job.column_block * kKeyPanels + job.key_panel) * 32), 0,
                    u32((job.column_block * kStoredKeys + 16 * job.key_panel) * 32), u32(job.columns)});
  testing::add_gemm(launches, name_of(transpose_variant()), transpose_variant(), jobs, v_at, identity_at, vt_at);
  stage_launches.emplace_back("1. V transposed (GEMM, identity)", 1);
  // 2. S = q k^T: job (key panel p, query panel r).
  jobs.clear();
  for (std::int64_t p = 0; p < kKeyPanels; ++p)
    for (std::int64_t r = 0; r < kQueryPanels; ++r)
      jobs.push_back({u32(p * 32), u32(r * 32), u32((p * 16 * kQueryPanels + r) * 64), u32(kD)});
  testing::add_gemm(launches, name_of(scores_variant()), scores_variant(), jobs, k_at, q_at, s_at);
  stage_launches.emplace_back("2. S = q k^T (GEMM)", 1);
  // 3. softmax over the 91 keys; a split normalised one keeps e in S.
  testing::SoftmaxBuffers softmax;
  softmax.input = s_at;
  softmax.input_stride = s_stride;
  softmax.output = p_at;
  softmax.output_stride = p_stride;
  softmax.stats = stats_at;
  softmax.chunk_stats = chunk_stats_at;
  softmax.chunk_stride = stats_size;
  softmax.exponentials = s_at;
  softmax.exponential_stride = s_stride;
  softmax.columns = kKeys;
  softmax.scale = 1.0f / std::sqrt(static_cast<float>(kD));
  const std::size_t before = launches.launches.size();
  testing::add_softmax(launches, softmax_variant(partial), kQueryPanels, chunks, softmax);
  stage_launches.emplace_back(fmt::format("3. softmax, {} ({} chunks)", partial ? "partial" : "normalised", chunks),
                              launches.launches.size() - before);
  // 4. O = P V over the 91 keys: job (d block j, query panel r).
  jobs.clear();
  for (std::int64_t j = 0; j < kDBlocks; ++j)
    for (std::int64_t r = 0; r < kQueryPanels; ++r)
      jobs.push_back({u32(j * kStoredKeys * 32), u32(r * 32),
                      u32(j * 16 * out_variant.output_stride + r * 16 * element_bytes(out_variant.output())), u32(kKeys)});
  testing::add_gemm(launches, name_of(out_variant), out_variant, jobs, vt_at, p_at, o_at);
  stage_launches.emplace_back("4. O = P V (GEMM)", 1);

  const KernelResult result = testing::run_launches(
      harness(), launches, {{q_at, q_bytes}, {k_at, k_bytes}, {v_at, v_bytes}, {identity_at, identity}},
      {{o_at, o_size}, {stats_at, stats_size}});
  TileRun run;
  run.output = result.outputs[0];
  run.stats = result.outputs[1];
  run.cycles = result.stats.halt_cycle;
  std::size_t next = 0;
  for (const auto& [name, count] : stage_launches) {
    Stage stage{name, 0, 0};
    for (std::size_t i = 0; i < count; ++i) stage.cycles += result.launch_cycles.at(next++);
    run.stages.push_back(stage);
  }
  run.stages[0].macs = u32(kDBlocks * kKeyPanels) * 256 * 16;  // k = 16 per job but the last block's 8
  run.stages[0].macs -= u32(kKeyPanels) * 256 * (16 * kDBlocks - kD);
  run.stages[1].macs = u32(kKeyPanels * kQueryPanels) * 256 * u32(kD);
  run.stages[3].macs = u32(kDBlocks * kQueryPanels) * 256 * u32(kKeys);
  EXPECT_EQ(result.stats.total_amp_macs(), run.stages[0].macs + run.stages[1].macs + run.stages[3].macs);
  return run;
}

struct Comparison {
  double largest = 0;     // |device - reference|
  double largest_share = 0;  // of the element's tolerance
  int bad = 0;
};

// Within an FP16 step of the reference, plus the rounding of P to FP16
// (2^-11 of each p v term).
Comparison compare(const std::vector<float>& got, const std::vector<float>& reference,
                   const std::vector<double>& magnitude) {
  Comparison c;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double difference = std::fabs(static_cast<double>(got[i]) - reference[i]);
    const float want = std::fabs(reference[i]);
    const double step = half_to_float(static_cast<std::uint16_t>(float_to_half(want) + 1)) - round_to_half(want);
    const double tolerance = step + std::ldexp(magnitude[i], -11);
    c.largest = std::max(c.largest, difference);
    c.largest_share = std::max(c.largest_share, difference / tolerance);
    if (!(difference <= tolerance) && ++c.bad <= 3)
      ADD_FAILURE() << "element " << i << " (row " << i / kD << ", column " << i % kD << ") is " << got[i]
                    << ", the reference's " << reference[i];
  }
  return c;
}

struct Problem {
  std::int64_t keys = kKeys;
  std::vector<float> q, k, v;
  std::vector<float> reference;  // [80][72]
  std::vector<double> magnitude; // sum over keys of p |v|
};

Problem make_problem(std::int64_t key_blocks) {
  Problem p;
  p.keys = kKeys * key_blocks;
  std::mt19937 random(static_cast<std::uint32_t>(key_blocks * 7919));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto values = [&](std::int64_t rows) {
    std::vector<float> out(static_cast<std::size_t>(rows * kD));
    for (float& x : out) x = round_to_half(normal(random));
    return out;
  };
  p.q = values(kRows);
  p.k = values(p.keys);
  p.v = values(p.keys);
  const StorageType f16{ElementType::F16, 0};
  graph::GraphBuilder builder;
  const graph::ValueId q = builder.input("q", {{kRows, kD}, f16});
  const graph::ValueId k = builder.input("k", {{p.keys, kD}, f16});
  const graph::ValueId v = builder.input("v", {{p.keys, kD}, f16});
  builder.output("out", builder.attention("attention", q, k, v));
  graph::TensorMap data;
  data["q"] = graph::Tensor::from_floats({{kRows, kD}, f16}, p.q);
  data["k"] = graph::Tensor::from_floats({{p.keys, kD}, f16}, p.k);
  data["v"] = graph::Tensor::from_floats({{p.keys, kD}, f16}, p.v);
  p.reference = graph::run_reference(builder.graph(), data).outputs.at("out").to_floats();
  // The probabilities in double, for each output's sum of |p v|.
  const double scale = 1.0 / std::sqrt(static_cast<double>(kD));
  p.magnitude.assign(static_cast<std::size_t>(kRows * kD), 0.0);
  for (std::int64_t r = 0; r < kRows; ++r) {
    std::vector<double> s(static_cast<std::size_t>(p.keys));
    double largest = -INFINITY, total = 0;
    for (std::int64_t t = 0; t < p.keys; ++t) {
      double dot = 0;
      for (std::int64_t i = 0; i < kD; ++i) dot += double{p.q[static_cast<std::size_t>(r * kD + i)]} * p.k[static_cast<std::size_t>(t * kD + i)];
      s[static_cast<std::size_t>(t)] = dot * scale;
      largest = std::max(largest, s[static_cast<std::size_t>(t)]);
    }
    for (double& x : s) total += (x = std::exp(x - largest));
    for (std::int64_t t = 0; t < p.keys; ++t)
      for (std::int64_t e = 0; e < kD; ++e)
        p.magnitude[static_cast<std::size_t>(r * kD + e)] +=
            s[static_cast<std::size_t>(t)] / total * std::fabs(p.v[static_cast<std::size_t>(t * kD + e)]);
  }
  return p;
}

// Block `block`'s keys of a [keys][72] matrix.
std::vector<float> key_block(const std::vector<float>& m, std::int64_t block) {
  return {m.begin() + block * kKeys * kD, m.begin() + (block + 1) * kKeys * kD};
}

// The device's [72 columns][5 panels][16] FP16 result as [80][72].
std::vector<float> rows_of(const std::vector<std::uint8_t>& bytes) {
  std::vector<float> out(static_cast<std::size_t>(kRows * kD));
  for (std::int64_t r = 0; r < kRows; ++r)
    for (std::int64_t e = 0; e < kD; ++e) {
      std::uint16_t half;
      std::memcpy(&half, &bytes[static_cast<std::size_t>((e * kRows + r) * 2)], 2);
      out[static_cast<std::size_t>(r * kD + e)] = half_to_float(half);
    }
  return out;
}

void report(const std::string& title, const std::vector<Stage>& stages, std::uint64_t total, const Comparison& c) {
  std::cerr << title << ": " << total << " cycles; largest difference from the reference " << c.largest << " ("
            << c.largest_share << " of its element's tolerance)\n";
  for (const Stage& stage : stages) {
    std::cerr << "  " << stage.name << ": " << stage.cycles << " cycles";
    if (stage.macs) std::cerr << ", " << static_cast<double>(stage.macs) / static_cast<double>(stage.cycles) << " MACs a cycle";
    std::cerr << "\n";
  }
}

TEST(AttentionTile, OneKeyBlockNormalisedMatchesTheReference) {
  const Problem p = make_problem(1);
  const TileRun tile = run_tile(p.q, p.k, p.v, false);
  const Comparison c = compare(rows_of(tile.output), p.reference, p.magnitude);
  EXPECT_EQ(c.bad, 0);
  report("one tile, 91 keys, normalised", tile.stages, tile.cycles, c);
  // The GEMMs on the AMP: S and P V well above the old kernel's 3.4 MACs a cycle.
  EXPECT_GT(static_cast<double>(tile.stages[1].macs) / static_cast<double>(tile.stages[1].cycles), 32.0);
  EXPECT_GT(static_cast<double>(tile.stages[3].macs) / static_cast<double>(tile.stages[3].cycles), 32.0);
}

TEST(AttentionTile, TwoTilesPartialsMergedMatchTheReference) {
  const Problem p = make_problem(2);
  std::vector<TileRun> tiles;
  for (std::int64_t block = 0; block < 2; ++block)
    tiles.push_back(run_tile(p.q, key_block(p.k, block), key_block(p.v, block), true));
  // The partials brought together (by exchange on the chip): each O_i
  // followed by its statistics, one message a partial.
  const MergeVariant variant = merge_variant();
  const auto o_bytes = u32(tiles[0].output.size()), stats_bytes = u32(tiles[0].stats.size());
  const std::uint32_t stride = o_bytes + stats_bytes;
  DataPlaces places;
  const std::uint32_t partials = places.take(2 * stride);
  std::vector<std::uint8_t> received;
  for (const TileRun& tile : tiles) {
    received.insert(received.end(), tile.output.begin(), tile.output.end());
    received.insert(received.end(), tile.stats.begin(), tile.stats.end());
  }
  const std::uint32_t out_size = u32(kD) * variant.output_column_stride, out = places.take(out_size);
  const std::vector<MergeShare> shares = merge_shares(variant, 4 * kQueryPanels, kD, 2);
  testing::MergeBuffers buffers{partials, stride, partials + o_bytes, stride, out, {}};
  for (std::size_t w = 0; w < shares.size(); ++w) buffers.scratch.push_back(places.take(u32(merge_scratch_bytes(2))));
  testing::Launches launches;
  KernelLibrary names = tile_kernels();
  testing::add_merge(launches, names.merge(variant), variant, shares, 2, buffers);
  const KernelResult merged =
      testing::run_launches(harness(), launches, {Bytes{partials, received}}, {{out, out_size}});
  const Comparison c = compare(rows_of(merged.outputs[0]), p.reference, p.magnitude);
  EXPECT_EQ(c.bad, 0);
  std::vector<Stage> stages = tiles[0].stages;
  stages.push_back(Stage{fmt::format("5. merge of 2 partials ({} workers)", shares.size()), merged.launch_cycles.at(0), 0});
  report(fmt::format("two tiles of 91 keys, partials merged (the tiles {} and {} cycles, the merge {}; tile 0's stages, then the merge)",
                     tiles[0].cycles, tiles[1].cycles, merged.stats.halt_cycle),
         stages, tiles[0].cycles + merged.stats.halt_cycle, c);
}

// V's transposes cover every (key panel, column block) once, and the last
// block's narrower jobs spread over the workers' contiguous shares: the
// So400m head (72 columns, the last block 8 wide) on this file's 6 key panels
// and on a whole 729-key segment's 46.
TEST(AttentionTile, EveryWorkerTransposesAsManyNarrowBlocksAsAnother) {
  for (const std::int64_t key_panels : {kKeyPanels, std::int64_t{46}}) {
    const std::vector<TransposeJob> jobs = attention_transpose_jobs(key_panels, kD);
    ASSERT_EQ(static_cast<std::int64_t>(jobs.size()), key_panels * kDBlocks);
    std::set<std::pair<std::int64_t, std::int64_t>> covered;
    for (const TransposeJob& job : jobs) {
      covered.insert({job.key_panel, job.column_block});
      EXPECT_EQ(job.columns, std::min<std::int64_t>(16, kD - 16 * job.column_block));
    }
    EXPECT_EQ(covered.size(), jobs.size());
    const auto count = static_cast<std::int64_t>(jobs.size());
    std::vector<std::int64_t> narrow;
    for (int w = 0; w < kWorkers; ++w) {
      narrow.push_back(0);
      for (std::int64_t j = count * w / kWorkers; j < count * (w + 1) / kWorkers; ++j)
        narrow.back() += jobs[static_cast<std::size_t>(j)].columns < 16;
    }
    EXPECT_LE(*std::max_element(narrow.begin(), narrow.end()) - *std::min_element(narrow.begin(), narrow.end()), 1)
        << key_panels << " key panels";
  }
}

}  // namespace
}  // namespace tilec::compiler
