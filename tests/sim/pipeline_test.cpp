// A multi-tile program end to end, against a host computation: tile 0
// multicasts B to tiles 1..3; every tile computes gelu(A_t x B) (FP8 GEMM on
// one worker, FP16 GELU); tiles 1..3 send their results back to tile 0 at
// staggered cycles. Also: the run is identical on one and on two threads.
#include "gemm_program.h"
#include "numerics/fp16.h"
#include "numerics/fp8.h"
#include "numerics/reference_ops.h"
#include "sim_test_support.h"
#include "support/parallel.h"

#include <gtest/gtest.h>

#include <random>

namespace tilec::sim {
namespace {

using namespace testing;

constexpr std::uint32_t kTiles = 4;
constexpr std::int32_t kDepth = 32;  // K
constexpr std::uint32_t kA = kInterleavedData;
constexpr std::uint32_t kB = kInterleavedData + 0x1000;
constexpr std::uint32_t kC = kInterleavedData + 0x2000;
constexpr std::uint32_t kGathered = kInterleavedData + 0x3000;
constexpr std::uint32_t kBlockBytes = 16 * 16 * 2;

// One worker: C = gelu(A x B) for a 16 x 16 block; $m0 points to {A, B, C}.
void append_kernel(Code& code) {
  for (int i = 0; i < 3; ++i) code.main(Opcode::Ldw, {2 + i, 0, 4 * i});
  code.flt(Opcode::Accz);
  code.main(Opcode::Rpti, {kDepth, 4});
  code.main(Opcode::Ld128pi, {0, 2, 16});
  code.main(Opcode::Ld128pi, {4, 3, 16});
  code.flt(Opcode::Ampf8, {0, 4, 0, 0, 0});
  code.flt(Opcode::Ampf8, {0, 6, 1, 0, 0});
  for (int row = 0; row < 16; ++row)
    for (int half = 0; half < 2; ++half) {
      code.flt(Opcode::Accrdf16, {8, row, half, 0});
      code.flt(Opcode::F16v4gelu, {12, 8, 0});
      code.flt(Opcode::F16v4gelu, {14, 10, 0});
      code.main(Opcode::St128pi, {12, 4, 16});
    }
  code.main(Opcode::Exit);
}

// $m1, $m2, $m3 = address, bytes, peer; then send or recv.
void exchange(Code& code, Opcode opcode, std::uint32_t address, std::uint32_t bytes, std::uint32_t peer) {
  code.set(1, address);
  code.set(2, bytes);
  code.set(3, peer);
  code.main(opcode, {1, 2, 3});
}

Code tile_program(std::uint32_t tile) {
  Code code;
  if (tile == 0) exchange(code, Opcode::Send, kB, 16 * kDepth, 0x80000000u);  // group 0: tiles 1..3
  else exchange(code, Opcode::Recv, kB, 16 * kDepth, 0);
  code.main(Opcode::Xdone);
  std::size_t set_at = code.size();
  code.set(1, 0);
  code.set(2, kStandardData);
  code.main(Opcode::Run, {1, 2});
  code.main(Opcode::Wsync);
  code.main(Opcode::Sync);
  if (tile == 0) {
    for (std::uint32_t source = 1; source < kTiles; ++source)
      exchange(code, Opcode::Recv, kGathered + (source - 1) * kBlockBytes, kBlockBytes, source);
  } else {
    code.main(Opcode::Xwait, {static_cast<std::int32_t>(200 * tile)});  // one sender at a time
    exchange(code, Opcode::Send, kC, kBlockBytes, 0);
  }
  code.main(Opcode::Xdone);
  code.main(Opcode::Halt);
  const std::uint32_t kernel = code.here();
  code.at(set_at).main.operands[1] = static_cast<std::int32_t>(kernel & 0xfffff);
  code.at(set_at + 1).main.operands[1] = static_cast<std::int32_t>(kernel >> 16);
  append_kernel(code);
  return code;
}

package::Package pipeline_package() {
  package::Package package;
  package.target = ipu21_cut(kTiles).name;
  std::vector<std::uint32_t> arguments = {kA, kB, kC};
  for (std::uint32_t tile = 0; tile < kTiles; ++tile)
    package.tiles.push_back(image(tile_program(tile), {data_segment(".args", kStandardData, as_bytes(arguments))}));
  package.exchange_groups = {{1, 2, 3}};
  package::Binding a{"a", package::BindingRole::Input, {{kTiles, 16, kDepth}, {ElementType::F143, 0}}, {}};
  package::Binding c{"c", package::BindingRole::Output, {{kTiles, 16, 16}, {ElementType::F16, 0}}, {}};
  for (std::uint32_t tile = 0; tile < kTiles; ++tile) {
    a.pieces.push_back(package::Piece{tile, kA, {tile, 0, 0}, {1, 16, kDepth}, {16 * kDepth, 1, 16}});
    c.pieces.push_back(package::Piece{tile, kC, {tile, 0, 0}, {1, 16, 16}, {256, 16, 1}});
  }
  package.bindings = {a, c,
                      dense_binding("b", package::BindingRole::Parameter, {{kDepth, 16}, {ElementType::F143, 0}}, 0, kB),
                      dense_binding("gathered", package::BindingRole::Output, {{kTiles - 1, 16, 16}, {ElementType::F16, 0}}, 0, kGathered)};
  return package;
}

graph::Tensor random_codes(graph::TensorType type, std::uint32_t seed) {
  graph::Tensor tensor = graph::Tensor::zeros(std::move(type));
  std::mt19937 random(seed);
  for (std::uint8_t& code : tensor.bytes) {
    code = static_cast<std::uint8_t>(random() & 0xbf);  // |value| < 1, either sign
    if (code == 0x80) code = 0;                            // not NaN
  }
  return tensor;
}

struct PipelineRun {
  RunResult result;
  graph::Tensor a, b, c, gathered;
};

PipelineRun run_pipeline() {
  Device device(pipeline_package(), ipu21_cut(kTiles));
  PipelineRun run;
  run.a = random_codes({{kTiles, 16, kDepth}, {ElementType::F143, 0}}, 11);
  run.b = random_codes({{kDepth, 16}, {ElementType::F143, 0}}, 12);
  device.write("a", run.a);
  device.write("b", run.b);
  run.result = device.run();
  run.c = device.read("c");
  run.gathered = device.read("gathered");
  return run;
}

std::uint16_t half_at(const graph::Tensor& tensor, std::int64_t index) {
  std::uint16_t value;
  std::memcpy(&value, tensor.bytes.data() + 2 * index, 2);
  return value;
}

TEST(Pipeline, MulticastGemmGeluAndGatherMatchTheHost) {
  PipelineRun run = run_pipeline();
  const auto& table = fp8_table(ElementType::F143);
  for (std::int64_t t = 0; t < kTiles; ++t)
    for (std::int64_t i = 0; i < 16; ++i)
      for (std::int64_t j = 0; j < 16; ++j) {
        float sum = 0.0f;
        for (std::int64_t k = 0; k < kDepth; ++k)
          sum = sum + table[run.a.bytes[(t * 16 + i) * kDepth + k]] * table[run.b.bytes[k * 16 + j]];
        std::uint16_t expected = float_to_half(reference::gelu_tanh(round_to_half(sum)));
        EXPECT_EQ(half_at(run.c, (t * 16 + i) * 16 + j), expected) << t << " " << i << " " << j;
        if (t > 0) {
          EXPECT_EQ(half_at(run.gathered, ((t - 1) * 16 + i) * 16 + j), expected);
        }
      }
  EXPECT_EQ(run.result.syncs, 1u);
  EXPECT_EQ(run.result.tiles[0].bytes_received, 3u * kBlockBytes);
  EXPECT_EQ(run.result.tiles[2].bytes_received, 16u * kDepth);
  EXPECT_EQ(run.result.tiles[0].bytes_sent, 16u * kDepth);
}

TEST(Determinism, SameResultsCyclesAndStatisticsOnOneAndTwoThreads) {
  set_thread_count(1);
  PipelineRun one = run_pipeline();
  set_thread_count(2);
  PipelineRun two = run_pipeline();
  set_thread_count(0);
  EXPECT_EQ(one.c.bytes, two.c.bytes);
  EXPECT_EQ(one.gathered.bytes, two.gathered.bytes);
  EXPECT_EQ(one.result.cycles, two.result.cycles);
  for (std::uint32_t t = 0; t < kTiles; ++t) {
    const TileStats& x = one.result.tiles[t];
    const TileStats& y = two.result.tiles[t];
    EXPECT_EQ(x.halt_cycle, y.halt_cycle);
    EXPECT_EQ(x.bundles, y.bundles);
    EXPECT_EQ(x.amp_macs, y.amp_macs);
    EXPECT_EQ(x.bytes_loaded, y.bytes_loaded);
    EXPECT_EQ(x.bytes_stored, y.bytes_stored);
    EXPECT_EQ(x.bytes_sent, y.bytes_sent);
    EXPECT_EQ(x.bytes_received, y.bytes_received);
    EXPECT_EQ(x.sync_wait_cycles, y.sync_wait_cycles);
  }
  EXPECT_EQ(one.result.profile.labels, two.result.profile.labels);
  ASSERT_EQ(one.result.profile.tiles.size(), two.result.profile.tiles.size());
  for (std::size_t t = 0; t < one.result.profile.tiles.size(); ++t) {
    const auto& x = one.result.profile.tiles[t];
    const auto& y = two.result.profile.tiles[t];
    ASSERT_EQ(x.size(), y.size());
    for (std::size_t e = 0; e < x.size(); ++e) {
      EXPECT_EQ(x[e].begin, y[e].begin);
      EXPECT_EQ(x[e].end, y[e].end);
      EXPECT_EQ(x[e].label, y[e].label);
    }
  }
}

TEST(Determinism, ManyTilesGemmOnOneAndTwoThreads) {
  GemmShape shape;
  shape.tiles = 24;
  shape.k = 32;
  shape.column_blocks = 1;
  auto run = [&] {
    Device device(gemm_package(shape), ipu21_cut(shape.tiles));
    const std::int64_t m = GemmShape::kRows, n = shape.columns(), k = shape.k, tiles = shape.tiles;
    device.write("a", random_codes({{tiles, m, k}, {ElementType::F143, 0}}, 5));
    device.write("b", random_codes({{tiles, k, n}, {ElementType::F143, 0}}, 6));
    RunResult result = device.run();
    return std::make_pair(result.cycles, device.read("c").bytes);
  };
  set_thread_count(1);
  auto one = run();
  set_thread_count(2);
  auto two = run();
  set_thread_count(0);
  EXPECT_EQ(one, two);
}

}  // namespace
}  // namespace tilec::sim
