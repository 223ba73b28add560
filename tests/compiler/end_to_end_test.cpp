// Compile, simulate, compare: small graphs on small chips, every output
// element checked against the host reference.
#include "compiler/compile.h"
#include "compiler/kernel_plan.h"
#include "end_to_end.h"
#include "graph/builder.h"
#include "graph/reference.h"
#include "graph/workloads.h"
#include "sim/device.h"
#include "support/error.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <regex>

namespace tilec::compiler {
namespace {

// y = x W in FP16 (x [rows, k] a host input, W [k, n]); returns x.
graph::ValueId add_one_gemm(graph::GraphBuilder& b, const char* name, std::int64_t rows, std::int64_t k, std::int64_t n) {
  const StorageType f16{ElementType::F16, 0};
  graph::ValueId x = b.input("x", {{rows, k}, f16});
  b.output("y", b.gemm(name, x, b.parameter("W", {{k, n}, f16}), f16));
  return x;
}

TEST(EndToEnd, SmallFp8MlpMatchesTheReference) {
  expect_matches(graph::build_workload("mlp", small_mlp(graph::Precision::Fp8)), on_tiles(16));
}

TEST(EndToEnd, SumsInOneAccumulatorAreBitIdenticalToTheReference) {
  for (graph::Precision precision : {graph::Precision::Fp8, graph::Precision::Fp16, graph::Precision::Fp32}) {
    graph::MlpOptions mlp = small_mlp(precision);
    mlp.blocks = 2;
    mlp.bias = true;
    CompileOptions options = on_tiles(16);
    options.max_k_parts = 1;
    Outcome outcome = compile_and_run(graph::build_workload("mlp", mlp), options);
    EXPECT_EQ(outcome.max_error, 0.0) << outcome.compiled.plan;
  }
}

// Row parts: each tile computes its rows of the block it holds, from
// weights stored once in pieces over the row parts and gathered first.
TEST(EndToEnd, RowPartsGatherTheirWeightsAndMatchTheReference) {
  for (graph::Precision precision : {graph::Precision::Fp8, graph::Precision::Fp32}) {
    graph::MlpOptions mlp = small_mlp(precision);
    mlp.tokens = 100;  // 7 panels: row parts of 3, 2 and 2
    mlp.blocks = 2;
    mlp.bias = true;
    CompileOptions options = on_tiles(16);
    options.groups = 1;
    options.row_parts = 3;
    Outcome outcome = compile_and_run(graph::build_workload("mlp", mlp), options);
    EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
    EXPECT_EQ(outcome.bad, 0) << outcome.compiled.plan;
    EXPECT_NE(outcome.compiled.plan.find("gemm1 3x"), std::string::npos) << outcome.compiled.plan;
    EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << outcome.compiled.plan;
    // One K part: every sum in one accumulator, as the reference sums.
    options.max_k_parts = 1;
    EXPECT_EQ(compile_and_run(graph::build_workload("mlp", mlp), options).max_error, 0.0);
  }
}

TEST(EndToEnd, Fp16AndFp32MlpsMatchTheReference) {
  expect_matches(graph::build_workload("mlp", small_mlp(graph::Precision::Fp16)), on_tiles(16));
  expect_matches(graph::build_workload("mlp", small_mlp(graph::Precision::Fp32)), on_tiles(16));
}

// A long K over many tiles: more FP16 partial sums than a combine kernel
// adds at once are summed in passes whose running sums round to FP16, and
// the plan-order reference rounds where the device does.
TEST(EndToEnd, HalfPartialSumsInPassesMatchThePlanOrder) {
  graph::GraphBuilder b;
  add_one_gemm(b, "g", 16, 4096, 16);
  const graph::Graph graph = b.finish();
  CompileOptions options = on_tiles(16);
  options.fp16_partials_anywhere = true;
  Outcome outcome = compile_and_run(graph, options);
  const reference::KSplit& split = outcome.compiled.package.summation_order.gemms.at("g");
  ASSERT_GT(split.parts(), kMaxCombineInputs) << outcome.compiled.plan;
  EXPECT_TRUE(split.half_partials);
  EXPECT_EQ(split.pass_parts, kMaxCombineInputs);
  EXPECT_EQ(outcome.differing, 0) << outcome.compiled.plan;
  EXPECT_EQ(outcome.bad, 0) << outcome.max_error;
  // Summed in one pass, the reference differs: the roundings are real.
  graph::SummationOrder one_pass = outcome.compiled.package.summation_order;
  one_pass.gemms.at("g").pass_parts = 0;
  const graph::TensorMap data = graph::generate_data(graph, 0);
  EXPECT_NE(graph::run_reference(graph, data, one_pass).outputs.at("y").bytes,
            graph::run_reference(graph, data, outcome.compiled.package.summation_order).outputs.at("y").bytes);
}

TEST(EndToEnd, BiasesAreAdded) {
  for (graph::Precision precision : {graph::Precision::Fp8, graph::Precision::Fp32}) {
    graph::MlpOptions options = small_mlp(precision);
    options.bias = true;
    expect_matches(graph::build_workload("mlp", options), on_tiles(16));
  }
}

TEST(EndToEnd, RepeatedBlocksRunAsALoop) {
  for (graph::Precision precision : {graph::Precision::Fp8, graph::Precision::Fp16}) {
    graph::MlpOptions options = small_mlp(precision);
    options.blocks = 3;
    options.bias = precision == graph::Precision::Fp16;
    expect_matches(graph::build_workload("mlp", options), on_tiles(16));
  }
}

TEST(EndToEnd, ChunkedPlansProcessEveryRow) {
  graph::MlpOptions mlp = small_mlp(graph::Precision::Fp8);
  mlp.tokens = 100;
  CompileOptions options = on_tiles(16);
  options.groups = 2;
  options.chunks = 3;
  Outcome outcome = compile_and_run(graph::build_workload("mlp", mlp), options);
  EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
  EXPECT_EQ(outcome.bad, 0) << outcome.compiled.plan;
  EXPECT_NE(outcome.compiled.plan.find("3 chunks"), std::string::npos) << outcome.compiled.plan;
}

// A task's workers patch the same moving bases into their argument blocks:
// each base's address is loaded once into a register of its own (an add of
// the chunk offset $m12 into it), then stored into every worker's block.
TEST(EndToEnd, ATasksWorkersShareTheirMovingAddresses) {
  graph::MlpOptions mlp = small_mlp(graph::Precision::Fp8);
  mlp.tokens = 100;
  CompileOptions options = on_tiles(16);
  options.chunks = 3;
  options.dump_after = "emit_tile_code";
  Outcome outcome = compile_and_run(graph::build_workload("mlp", mlp), options);
  EXPECT_EQ(outcome.differing, 0) << outcome.compiled.plan;
  const std::string& dump = outcome.compiled.dump;
  const std::string tile0 = dump.substr(0, dump.find("supervisor program of tile 1"));
  const std::regex held_load(R"(add \$m([2-9]|10), \$m\1, \$m12)");
  const auto loads = std::distance(std::sregex_iterator(tile0.begin(), tile0.end(), held_load), std::sregex_iterator());
  std::size_t patches = 0;
  for (std::size_t at = tile0.find(" stw "); at != std::string::npos; at = tile0.find(" stw ", at + 1)) ++patches;
  EXPECT_GT(loads, 0) << tile0;
  EXPECT_LT(static_cast<std::size_t>(loads), patches) << tile0;
}

TEST(EndToEnd, WideReductionsChainTheirPasses) {
  // One group of 64 tiles: the second GEMM splits its K over many tiles.
  graph::MlpOptions mlp = small_mlp(graph::Precision::Fp8);
  mlp.hidden = 512;
  CompileOptions options = on_tiles(64);
  options.groups = 1;
  options.dump_after = "emit_tile_code";
  const graph::Graph graph = graph::build_workload("mlp", mlp);
  Outcome outcome = compile_and_run(graph, options);
  EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
  EXPECT_EQ(outcome.bad, 0) << outcome.compiled.plan;
  // Where the code fits, receives are armed one by one (a loop costs time).
  EXPECT_EQ(outcome.compiled.dump.find("rpti"), std::string::npos) << outcome.compiled.plan;
  // Looped, the tile taking partial sums from a row of peers arms them in
  // one instruction: less code, the same results.
  options.loop_receives = true;
  Outcome looped = compile_and_run(graph, options);
  EXPECT_NE(looped.compiled.dump.find("rpti"), std::string::npos) << looped.compiled.plan;
  EXPECT_EQ(looped.compiled.plan, outcome.compiled.plan);
  EXPECT_LT(looped.compiled.peak_bytes, outcome.compiled.peak_bytes);
  EXPECT_EQ(looped.differing, 0) << looped.compiled.plan;
}


TEST(Compile, TheSameGraphGivesTheSamePackage) {
  graph::Graph graph = graph::build_workload("mlp", small_mlp(graph::Precision::Fp8));
  CompileResult a = compile(graph, on_tiles(16));
  CompileResult b = compile(graph, on_tiles(16));
  ASSERT_EQ(a.package.tiles.size(), b.package.tiles.size());
  for (std::size_t tile = 0; tile < a.package.tiles.size(); ++tile) {
    const auto& x = a.package.tiles[tile].segments;
    const auto& y = b.package.tiles[tile].segments;
    ASSERT_EQ(x.size(), y.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(x[i].address, y[i].address);
      EXPECT_EQ(*x[i].bytes, *y[i].bytes) << "tile " << tile << " segment " << x[i].name;
    }
  }
}

TEST(Compile, ABudgetBelowTheDataNamesThePeakTheTileAndTheBudget) {
  graph::Graph graph = graph::build_workload("mlp", small_mlp(graph::Precision::Fp8));
  CompileOptions options = on_tiles(16);
  options.budget_bytes = 4096;
  try {
    compile(graph, options);
    FAIL() << "a 4 KiB budget cannot hold this graph";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_code(), 1);
    std::string message = error.what();
    EXPECT_NE(message.find("no plan fits the budget of 4096 bytes per tile"), std::string::npos) << message;
    EXPECT_NE(message.find("the smallest peak any plan reached is"), std::string::npos) << message;
    EXPECT_NE(message.find("on tile"), std::string::npos) << message;
    EXPECT_NE(message.find("KiB"), std::string::npos) << message;  // what filled it
    EXPECT_NE(message.find("at superstep "), std::string::npos) << message;  // and when
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}


// A group can be wider than its work: the plan says how many tiles hold
// some, and they are the tiles the simulator sees load, send or receive.
TEST(Compile, ThePlanSaysHowManyTilesHoldWork) {
  for (std::uint32_t tiles : {16u, 64u}) {
    graph::Graph graph = graph::build_workload("mlp", small_mlp(graph::Precision::Fp8));
    const CompileOptions options = on_tiles(tiles);
    CompileResult compiled = compile(graph, options);
    sim::Device device(compiled.package, options.machine);
    for (const auto& [name, tensor] : graph::generate_data(graph, 0)) device.write(name, tensor);
    const sim::RunResult run = device.run();
    std::int64_t working = 0;
    for (const sim::TileStats& tile : run.tiles)
      if (tile.bytes_loaded > 0 || tile.bytes_sent > 0 || tile.bytes_received > 0) ++working;
    EXPECT_NE(compiled.plan.find(fmt::format(" tiles ({} hold work), ", working)), std::string::npos)
        << compiled.plan << " on " << tiles << " tiles";
  }
}

// The device computes FP8 as F143 or F152 only: an OCP tensor anywhere
// (an input, a weight, a cast's result inside a repeat) is refused.
TEST(Compile, OcpFp8TensorsAreRefusedNamingTheTensor) {
  const StorageType f32{ElementType::F32, 0};
  struct Case {
    const char* tensor;
    ElementType x, w, cast;
  };
  for (const Case& c : {Case{"x", ElementType::E4M3, ElementType::F143, ElementType::F143},
                        Case{"W", ElementType::F143, ElementType::E5M2, ElementType::F143},
                        Case{"narrow", ElementType::F143, ElementType::F143, ElementType::E4M3}}) {
    graph::GraphBuilder b;
    graph::ValueId x = b.input("x", {{16, 32}, {c.x, 0}});
    graph::ValueId w = b.parameter("W", {{1, 32, 32}, {c.w, 0}});
    std::vector<graph::ValueId> y = b.repeat("blocks", 1, {.carried = {x}, .sequence = {w}},
                                             [&](graph::GraphBuilder& body, const std::vector<graph::ValueId>& in) {
                                               graph::ValueId h = body.gemm("g", in[0], in[1], f32);
                                               h = body.cast("narrow", h, {c.cast, 0});
                                               return std::vector<graph::ValueId>{body.cast("back", h, {c.x, 0})};
                                             });
    b.output("y", y[0]);
    try {
      compile(b.finish(), on_tiles(16));
      ADD_FAILURE() << c.tensor << " is OCP FP8";
    } catch (const Error& error) {
      EXPECT_EQ(error.exit_code(), 2);
      EXPECT_NE(std::string(error.what()).find(fmt::format("tensor '{}': is e", c.tensor)), std::string::npos)
          << error.what();
      EXPECT_NE(std::string(error.what()).find("its FP8 types are f143 and f152"), std::string::npos);
    }
  }
}


// An op the host reference runs but the compiler has no step for is
// refused by name and kind, not mistaken for a missing computation.
TEST(Compile, OpsTheCompilerDoesNotPlanAreRefusedByName) {
  const StorageType f32{ElementType::F32, 0};
  graph::GraphBuilder b;
  graph::ValueId x = b.input("x", {{1, 16, 32}, f32});
  b.output("y", b.unary(graph::OpKind::Relu, "rectified", x));
  try {
    compile(b.finish(), on_tiles(16));
    FAIL() << "compiled a relu";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Failure);
    EXPECT_STREQ(error.what(), "op 'rectified': the compiler does not plan relu ops yet (the host reference runs "
                               "them: tilec reference)");
  }
}

TEST(Compile, EveryStageCanBeDumped) {
  graph::Graph graph = graph::build_workload("mlp", small_mlp(graph::Precision::Fp8));
  for (std::string_view stage : kStages) {
    CompileOptions options = on_tiles(16);
    options.dump_after = std::string(stage);
    CompileResult result = compile(graph, options);
    EXPECT_GT(result.dump.size(), 20u) << stage;
  }
  CompileOptions options = on_tiles(16);
  options.dump_after = "no_such_stage";
  EXPECT_THROW(compile(graph, options), Error);
}


std::size_t largest_program(const package::Package& package) {
  std::size_t most = 0;
  for (const package::TileImage& tile : package.tiles)
    for (const package::Segment& segment : tile.segments)
      if (segment.name == ".text") most = std::max<std::size_t>(most, segment.size());
  return most;
}

TEST(Compile, RepeatBodiesAreEmittedOnceAndLooped) {
  std::vector<std::size_t> sizes;
  for (std::int64_t blocks : {2, 8}) {
    graph::MlpOptions mlp = small_mlp(graph::Precision::Fp16);
    mlp.blocks = blocks;
    CompileOptions options = on_tiles(16);
    options.groups = 1;
    sizes.push_back(largest_program(compile(graph::build_workload("mlp", mlp), options).package));
  }
  EXPECT_EQ(sizes[0], sizes[1]) << "the supervisor program grew with the number of blocks";
}


// x -> gemm -> layernorm -> gemm -> softmax, in FP16 and FP32.
graph::Graph normalised_graph(ElementType type) {
  const StorageType storage{type, 0};
  graph::GraphBuilder b;
  graph::ValueId x = b.input("x", {{2, 20, 32}, storage});
  graph::ValueId w1 = b.parameter("W1", {{32, 48}, storage});
  graph::ValueId gamma = b.parameter("gamma", {{48}, {ElementType::F32, 0}});
  graph::ValueId beta = b.parameter("beta", {{48}, {ElementType::F32, 0}});
  graph::ValueId w2 = b.parameter("W2", {{48, 24}, storage});
  graph::ValueId h = b.gemm("gemm1", x, w1, storage);
  h = b.layernorm("norm", h, gamma, beta, 1e-5f, storage);
  graph::ValueId y = b.gemm("gemm2", h, w2, storage);
  y = b.softmax("probabilities", y, -1, storage);
  b.output("y", y);
  return b.finish();
}

TEST(EndToEnd, LayerNormAndSoftmaxMatchTheReference) {
  for (ElementType type : {ElementType::F16, ElementType::F32}) {
    Outcome outcome = compile_and_run(normalised_graph(type), on_tiles(16));
    EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
    EXPECT_EQ(outcome.bad, 0) << "max error " << outcome.max_error << " with " << outcome.compiled.plan;
    EXPECT_LT(outcome.max_error, 1e-3) << outcome.compiled.plan;
  }
}


// The one full-chip test here: the reference workload as the sweep runs it.
TEST(FullChip, SiglipMlpBatchOneBeatsTheReferenceHardware) {
  graph::Graph graph = graph::build_workload("siglip-mlp", graph::MlpOptions{});
  Outcome outcome = compile_and_run(graph, CompileOptions{});
  EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
  EXPECT_EQ(outcome.bad, 0) << "max error " << outcome.max_error;
  EXPECT_LT(outcome.max_error, 0.01);
  EXPECT_LT(outcome.cycles, 225672u) << "the reference hardware's cycles for fp8-b1-n1-default";
  EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes);
  EXPECT_LE(outcome.compiled.peak_bytes, ipu21().memory_bytes());
}


// Elementwise ops after a whole-row op run as their own step (the row
// kernels apply no epilogue).
// Layernorm and softmax shared by several tiles of a group: each holds the
// whole rows, computes their statistics and writes its columns (with one
// part per sum, no tile combines another's statistics). FP32 layernorm
// stays bit for bit the reference's.
TEST(EndToEnd, RowOpsSpreadTheirColumnsOverTiles) {
  const StorageType f32{ElementType::F32, 0};
  for (bool layernorm : {true, false}) {
    graph::GraphBuilder b;
    graph::ValueId x = b.input("x", {{2, 32, 512}, f32});
    if (layernorm) {
      graph::ValueId gamma = b.parameter("gamma", {{512}, f32});
      graph::ValueId beta = b.parameter("beta", {{512}, f32});
      b.output("y", b.layernorm("norm", x, gamma, beta, 1e-5f, f32));
    } else {
      b.output("y", b.softmax("norm", x, -1, f32));
    }
    CompileOptions options = on_tiles(64);
    options.max_k_parts = 1;
    Outcome outcome = compile_and_run(b.finish(), options);
    const std::string& plan = outcome.compiled.plan;
    const std::size_t at = plan.find("norm 1x");
    ASSERT_NE(at, std::string::npos) << plan;
    EXPECT_GT(std::stoi(plan.substr(at + 7)), 1) << plan;
    EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
    EXPECT_EQ(outcome.bad, 0) << plan;
    if (layernorm)
      EXPECT_EQ(outcome.max_error, 0.0) << plan;
    else
      EXPECT_LT(outcome.max_error, 1e-6) << plan;
    EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << plan;
  }
}

// Layernorm and softmax over wide rows split their columns: each tile
// holds a block, its rows' statistics travel to the other tiles of its
// row part, and each combines them all. Few rows and wide columns make
// that the fastest plan; tall narrow ones split rows over tiles too.
TEST(EndToEnd, RowOpsSplitTheirColumnsAndRows) {
  const StorageType f16{ElementType::F16, 0}, f32{ElementType::F32, 0};
  for (const graph::Shape& shape : {graph::Shape{40, 1024}, graph::Shape{2, 300, 64}}) {
    const bool wide = shape.size() == 2;
    graph::GraphBuilder b;
    graph::ValueId x = b.input("x", {shape, f16});
    graph::ValueId gamma = b.parameter("gamma", {{shape.back()}, f32});
    graph::ValueId beta = b.parameter("beta", {{shape.back()}, f32});
    graph::ValueId normed = b.layernorm("norm", x, gamma, beta, 1e-5f, f16);
    b.output("y", b.softmax("soft", normed, -1, f32));
    b.output("normed", normed);
    Outcome outcome = compile_and_run(b.finish(), on_tiles(64));
    const std::string& plan = outcome.compiled.plan;
    const std::size_t at = plan.find("norm ");
    ASSERT_NE(at, std::string::npos) << plan;
    const int row_parts = std::stoi(plan.substr(at + 5));
    if (wide) EXPECT_EQ(row_parts, 1) << plan;
    else EXPECT_GT(row_parts, 1) << plan;
    EXPECT_NE(plan.find("split"), std::string::npos) << plan;
    EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
    EXPECT_EQ(outcome.bad, 0) << plan;
    EXPECT_LT(outcome.max_error, 2e-3) << plan;
    EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << plan;
  }
}

// A repeat body's layernorm on row parts stores each iteration's
// gamma/beta pairs once per column part, in pieces over its first row
// parts, and every tile of the column part gathers them before the apply.
TEST(EndToEnd, ARepeatedLayerNormGathersItsPairsOverRowParts) {
  const StorageType f16{ElementType::F16, 0}, f32{ElementType::F32, 0};
  graph::GraphBuilder b;
  graph::ValueId x = b.input("x", {{2, 300, 64}, f16});
  graph::ValueId gammas = b.parameter("gamma", {{3, 64}, f32});
  graph::ValueId betas = b.parameter("beta", {{3, 64}, f32});
  graph::GraphBuilder::RepeatOperands operands{.carried = {x}, .sequence = {gammas, betas}};
  b.output("y", b.repeat("layers", 3, operands,
                         [&](graph::GraphBuilder& body, const std::vector<graph::ValueId>& args) {
                           graph::ValueId normed = body.layernorm("norm", args[0], args[1], args[2], 1e-5f, f16);
                           return std::vector<graph::ValueId>{body.add("residual", normed, args[0])};
                         })
                    .front());
  const graph::Graph graph = b.finish();
  // In one chunk and in two (each chunk's apply gathers the pairs again),
  // and with whole rows on each tile (one K part: no split statistics).
  for (const auto& [chunks, split] : {std::pair{1, true}, std::pair{2, true}, std::pair{1, false}}) {
    CompileOptions options = on_tiles(64);
    options.groups = 1;
    options.chunks = chunks;
    if (!split) options.max_k_parts = 1;
    options.dump_after = "group_exchanges";
    Outcome outcome = compile_and_run(graph, options);
    const std::string& plan = outcome.compiled.plan;
    const std::size_t at = plan.find("norm ");
    ASSERT_NE(at, std::string::npos) << plan;
    EXPECT_GT(std::stoi(plan.substr(at + 5)), 1) << plan;
    EXPECT_EQ(plan.find("split") != std::string::npos, split) << plan;
    EXPECT_NE(outcome.compiled.dump.find("norm pairs, columns"), std::string::npos) << plan;
    EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << plan;
    EXPECT_EQ(outcome.bad, 0) << "max error " << outcome.max_error << " with " << plan;
    EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << plan;
  }
}

// Row parts for a whole-row layernorm: each tile holds whole rows of its
// part and writes them all.
TEST(EndToEnd, WholeRowLayerNormOnRowParts) {
  const StorageType f32{ElementType::F32, 0};
  graph::GraphBuilder b;
  graph::ValueId x = b.input("x", {{300, 32}, f32});
  graph::ValueId gamma = b.parameter("gamma", {{32}, f32});
  graph::ValueId beta = b.parameter("beta", {{32}, f32});
  b.output("y", b.layernorm("norm", x, gamma, beta, 1e-5f, f32));
  CompileOptions options = on_tiles(16);
  options.groups = 1;
  options.max_k_parts = 1;
  Outcome outcome = compile_and_run(b.finish(), options);
  const std::size_t at = outcome.compiled.plan.find("norm ");
  ASSERT_NE(at, std::string::npos) << outcome.compiled.plan;
  EXPECT_GT(std::stoi(outcome.compiled.plan.substr(at + 5)), 1) << outcome.compiled.plan;
  EXPECT_EQ(outcome.max_error, 0.0) << outcome.compiled.plan;
  EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << outcome.compiled.plan;
}

TEST(EndToEnd, GeluAfterLayerNormIsApplied) {
  const StorageType f32{ElementType::F32, 0};
  graph::GraphBuilder b;
  graph::ValueId x = b.input("x", {{24, 32}, f32});
  graph::ValueId gamma = b.parameter("gamma", {{32}, f32});
  graph::ValueId beta = b.parameter("beta", {{32}, f32});
  graph::ValueId h = b.layernorm("norm", x, gamma, beta, 1e-5f, f32);
  h = b.gelu("act", h, graph::GeluApproximation::Tanh, StorageType{ElementType::F16, 0});
  b.output("y", h);
  Outcome outcome = compile_and_run(b.finish(), on_tiles(16));
  EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
  EXPECT_EQ(outcome.bad, 0) << "max error " << outcome.max_error << " with " << outcome.compiled.plan;
  EXPECT_LT(outcome.max_error, 2e-3) << outcome.compiled.plan;
}


// Columns [first, first + count) of a row-major [rows, cols] tensor, or rows
// [first, first + count) of a [rows, cols] weight.
graph::Tensor column_slice(const graph::Tensor& tensor, std::int64_t first, std::int64_t count) {
  const std::int64_t cols = tensor.type.shape.back(), rows = tensor.elements() / cols;
  const std::vector<float> all = tensor.to_floats();
  std::vector<float> part;
  for (std::int64_t r = 0; r < rows; ++r)
    part.insert(part.end(), all.begin() + r * cols + first, all.begin() + r * cols + first + count);
  graph::TensorType type = tensor.type;
  type.shape.back() = count;
  return graph::Tensor::from_floats(type, part);
}

graph::Tensor row_slice(const graph::Tensor& tensor, std::int64_t first, std::int64_t count) {
  const std::int64_t cols = tensor.type.shape.back();
  const std::vector<float> all = tensor.to_floats();
  graph::TensorType type = tensor.type;
  type.shape.front() = count;
  return graph::Tensor::from_floats(type, std::vector<float>(all.begin() + first * cols, all.begin() + (first + count) * cols));
}

// More K parts than output columns: the reduction leaves some K parts no
// column to hold; the residual add keeps that layout, and the output
// binding has no piece for them.
TEST(EndToEnd, MoreKPartsThanColumns) {
  const StorageType f16{ElementType::F16, 0};
  graph::GraphBuilder b;
  const graph::ValueId x = b.input("x", {{16, 4096}, f16});
  const graph::ValueId residual = b.input("residual", {{16, 16}, f16});
  const graph::ValueId w = b.parameter("W", {{4096, 16}, f16});
  b.output("y", b.add("sum", b.gemm("narrow", x, w, f16), residual));
  Outcome outcome = compile_and_run(b.finish(), on_tiles(64));
  ASSERT_NE(outcome.compiled.plan.find("narrow 1x"), std::string::npos) << outcome.compiled.plan;
  EXPECT_GT(std::stoi(outcome.compiled.plan.substr(outcome.compiled.plan.find("narrow 1x") + 9)), 16)
      << outcome.compiled.plan;
  EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
  EXPECT_EQ(outcome.bad, 0) << "max error " << outcome.max_error << " with " << outcome.compiled.plan;
}

// A GEMM whose K the device splits into four parts sums each part from +0
// in order, adds the parts in K order in FP32 (FP16 partials first rounded
// to FP16) and rounds once: bit for bit the reference of a graph that says
// so with four GEMMs and three adds. This is the only way a split GEMM
// differs from the one-accumulator reference, and it is exact.
TEST(EndToEnd, SplitSumsAreBitIdenticalToTheReferenceOfTheSplitGraph) {
  constexpr std::int64_t kRows = 16, kK = 512, kN = 32, kParts = 4, kPart = kK / kParts;
  const StorageType x_type{ElementType::F143, -5}, w_type{ElementType::F143, -7};
  for (bool cast_to_fp8 : {false, true}) {
    SCOPED_TRACE(cast_to_fp8 ? "FP32 partials (result cast to FP8)" : "FP16 partials");
    const StorageType f16{ElementType::F16, 0}, f32{ElementType::F32, 0}, y_type{ElementType::F143, -3};
    graph::GraphBuilder whole;
    const graph::ValueId x = whole.input("x", {{1, kRows, kK}, x_type});
    const graph::ValueId w = whole.parameter("W", {{kK, kN}, w_type});
    const graph::ValueId product = whole.gemm("gemm", x, w, f16);
    whole.output("y", product);
    if (cast_to_fp8) whole.output("y8", whole.cast("fp8", product, y_type));
    CompileOptions options = on_tiles(16);
    options.max_k_parts = kParts;
    const graph::Graph graph = whole.finish();
    CompileResult compiled = compile(graph, options);
    ASSERT_NE(compiled.plan.find("gemm 2x4"), std::string::npos) << "plan: " << compiled.plan;

    graph::TensorMap data = graph::generate_data(graph, 0);
    sim::Device device(compiled.package, options.machine);
    for (const auto& [name, tensor] : data) device.write(name, tensor);
    device.run();

    graph::GraphBuilder split;
    graph::TensorMap split_data;
    std::vector<graph::ValueId> xs, ws;
    for (std::int64_t part = 0; part < kParts; ++part) {
      const std::string name = fmt::format("x{}", part);
      split_data.emplace(name, column_slice(data.at("x"), part * kPart, kPart));
      xs.push_back(split.input(name, {{1, kRows, kPart}, x_type}));
    }
    for (std::int64_t part = 0; part < kParts; ++part) {
      const std::string name = fmt::format("W{}", part);
      split_data.emplace(name, row_slice(data.at("W"), part * kPart, kPart));
      ws.push_back(split.parameter(name, {{kPart, kN}, w_type}));
    }
    graph::ValueId sum = -1;
    for (std::size_t part = 0; part < xs.size(); ++part) {
      graph::ValueId partial = split.gemm(fmt::format("partial{}", part), xs[part], ws[part], cast_to_fp8 ? f32 : f16);
      sum = part == 0 ? partial : split.add(fmt::format("sum{}", part), sum, partial, f32);
    }
    graph::ValueId rounded = split.cast("rounded", sum, f16);
    split.output("y", rounded);
    if (cast_to_fp8) split.output("y8", split.cast("fp8", rounded, y_type));
    const graph::ReferenceResult expected = graph::run_reference(split.finish(), split_data);
    for (const auto& [name, tensor] : expected.outputs) EXPECT_EQ(device.read(name).bytes, tensor.bytes) << name;
    // ...and not the one-accumulator reference (FP16 partials round often
    // enough to show it on 512 elements; FP32 sums in another order rarely
    // change an FP16 result).
    if (!cast_to_fp8) {
      EXPECT_NE(device.read("y").bytes, graph::run_reference(graph, data).outputs.at("y").bytes);
    }
  }
}

}  // namespace
}  // namespace tilec::compiler

namespace tilec::compiler {
namespace {

// A patch embedding: the loader writes the image's pixels where the patch
// rows and columns go (the K parts of the GEMM cut pixel rows and pixels),
// then the GEMM, its bias, and a position table added to every segment.
TEST(EndToEnd, PatchesOfAHostInputAndAPositionTable) {
  for (ElementType type : {ElementType::F32, ElementType::F16}) {
    const StorageType storage{type, 0};
    graph::GraphBuilder b;
    // 6 x 5 patches of 2 x 2; the last pixel row and column no patch reads.
    graph::ValueId image = b.input("image", {{2, 13, 11, 3}, storage});
    graph::ValueId w = b.parameter("W", {{12, 40}, storage});
    graph::ValueId bias = b.parameter("bias", {{40}, storage});
    graph::ValueId position = b.parameter("position", {{30, 40}, storage});
    graph::ValueId x = b.gemm("embed", b.patchify("patches", image, 2), w, storage);
    x = b.add("position_add", b.add("biased", x, bias), position);
    b.output("tokens", b.reshape("flat", x, {60, 40}));
    const graph::Graph graph = b.finish();
    for (std::uint32_t tiles : {1u, 16u}) {
      CompileOptions options = on_tiles(tiles);
      options.groups = 1;
      Outcome outcome = compile_and_run(graph, options);
      EXPECT_EQ(outcome.differing, 0) << "elements off the plan-order reference with " << outcome.compiled.plan;
      EXPECT_EQ(outcome.bad, 0) << outcome.compiled.plan;
      EXPECT_LT(outcome.max_error, type == ElementType::F32 ? 1e-5 : 4e-3) << outcome.compiled.plan;
      EXPECT_EQ(outcome.most_memory, outcome.compiled.peak_bytes) << outcome.compiled.plan;
    }
  }
}

// An output that is a host input, and a graph of no ops: copies.
TEST(EndToEnd, OutputsThatAreHostInputsAreCopies) {
  const StorageType f16{ElementType::F16, 0};
  {
    graph::GraphBuilder b;
    b.output("x_copy", add_one_gemm(b, "gemm", 24, 32, 16));
    expect_matches(b.finish(), on_tiles(16));
  }
  {
    graph::GraphBuilder b;
    b.output("x", b.input("x", {{2, 24, 32}, f16}));
    Outcome outcome = compile_and_run(b.finish(), on_tiles(16));
    EXPECT_EQ(outcome.max_error, 0.0) << outcome.compiled.plan;
  }
}

TEST(Compile, PatchesAndTablesItCannotPlanAreRejectedByName) {
  const StorageType f16{ElementType::F16, 0};
  graph::GraphBuilder b;
  graph::ValueId image = b.input("image", {{4, 4, 3}, f16});
  graph::ValueId w = b.parameter("W", {{12, 16}, f16});
  graph::ValueId patches = b.patchify("patches", image, 2);
  b.output("y", b.gemm("gemm", patches, w, f16));
  b.output("raw", b.reshape("raw_rows", image, {16, 3}));
  try {
    compile(b.finish(), on_tiles(16));
    FAIL() << "compiled patches of an image read twice";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("op 'patches'"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace tilec::compiler
