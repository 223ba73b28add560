// The device: loading packages (and refusing bad ones), scattering and
// gathering bindings, the profile event stream, repeated runs, and that
// the simulator really executes the encoded instructions.
#include "gemm_program.h"
#include "sim/fault.h"
#include "sim_test_support.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>

namespace tilec::sim {
namespace {

using namespace testing;

Code halting() {
  Code code;
  code.main(Opcode::Halt);
  return code;
}

std::string load_error(const package::Package& package, std::uint32_t tiles) {
  try {
    Device device(package, ipu21_cut(tiles));
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput);
    return error.what();
  }
  ADD_FAILURE() << "the package loaded";
  return "";
}

graph::Tensor counting_f32(graph::Shape shape) {
  graph::TensorType type = f32_type(std::move(shape));
  std::vector<float> values(static_cast<std::size_t>(type.elements()));
  std::iota(values.begin(), values.end(), 1.0f);
  return graph::Tensor::from_floats(type, values);
}

TEST(DeviceBindings, ParametersAreWrittenToEveryCopyInItsLayout) {
  // w[4][8] on tile 0 row-major and on tile 1 transposed (strides 1, 4).
  package::Package package = package_of(2, image(halting()));
  package::Binding w{"w", package::BindingRole::Parameter, f32_type({4, 8}), {}};
  w.pieces.push_back(package::Piece{0, kStandardData, {0, 0}, {4, 8}, {8, 1}});
  w.pieces.push_back(package::Piece{1, kInterleavedData, {0, 0}, {4, 8}, {1, 4}});
  package.bindings = {w, dense_binding("tile0", package::BindingRole::Output, f32_type({4, 8}), 0, kStandardData),
                      dense_binding("tile1", package::BindingRole::Output, f32_type({8, 4}), 1, kInterleavedData)};
  Device device(package, ipu21_cut(2));
  graph::Tensor data = counting_f32({4, 8});
  device.write("w", data);
  EXPECT_EQ(device.read("tile0").bytes, data.bytes);
  std::vector<float> transposed = device.read("tile1").to_floats();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j) EXPECT_EQ(transposed[j * 4 + i], data.at(i * 8 + j));
  EXPECT_EQ(device.read("w").bytes, data.bytes);
}

TEST(DeviceBindings, PiecesSplitATensorAcrossTiles) {
  // x[6][4]: rows 0..3 on tile 1, rows 4..5 on tile 0, each with padded rows.
  package::Package package = package_of(2, image(halting()));
  package::Binding x{"x", package::BindingRole::Input, f32_type({6, 4}), {}};
  x.pieces.push_back(package::Piece{1, kStandardData, {0, 0}, {4, 4}, {6, 1}});
  x.pieces.push_back(package::Piece{0, kStandardData + 8, {4, 0}, {2, 4}, {5, 1}});
  package.bindings = {x};
  Device device(package, ipu21_cut(2));
  graph::Tensor data = counting_f32({6, 4});
  device.write("x", data);
  EXPECT_EQ(device.read("x").bytes, data.bytes);
}

TEST(DeviceBindings, UnknownNamesAndTypeMismatchesAreBadInput) {
  package::Package package = package_of(1, image(halting()));
  package.bindings = {dense_binding("w", package::BindingRole::Parameter, f32_type({4, 8}), 0, kStandardData)};
  Device device(package, ipu21_cut(1));
  try {
    device.write("nope", counting_f32({4, 8}));
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput);
    EXPECT_STREQ(error.what(), "device: the package has no input or parameter named 'nope'");
  }
  try {
    device.write("w", graph::Tensor::zeros({{4, 8}, {ElementType::F143, -3}}));
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput);
    EXPECT_STREQ(error.what(), "binding 'w': is f32[4,8], but the tensor given is f143(s=-3)[4,8]");
  }
  EXPECT_THROW(device.read("nope"), Error);
}

TEST(DeviceBindings, WordsAreReadFromATilesMemory) {
  package::Package package = package_of(1, image(halting()));
  package.bindings = {dense_binding("w", package::BindingRole::Parameter, f32_type({4, 8}), 0, kStandardData)};
  Device device(package, ipu21_cut(1));
  const graph::Tensor data = counting_f32({4, 8});
  device.write("w", data);
  std::uint32_t second = 0;
  std::memcpy(&second, data.bytes.data() + 4, 4);
  EXPECT_EQ(device.read_word(0, kStandardData + 4), second);
  EXPECT_THROW(device.read_word(1, kStandardData), Error);
  EXPECT_THROW(device.read_word(0, kStandardData + 2), Error);
  EXPECT_THROW(device.read_word(0, 0xE8000), Error);
}

TEST(DeviceLoading, RefusesPackagesThatDoNotFitTheMachine) {
  package::Package two = package_of(2, image(halting()));
  EXPECT_EQ(load_error(two, 3), "package: has 2 tile images but target 'ipu21:3' has 3 tiles");

  package::Package outside = package_of(1, image(halting(), {data_segment(".data", 0xe7ff0, std::vector<std::uint8_t>(32))}));
  EXPECT_EQ(load_error(outside, 1), "package: tile 0: segment '.data' (0xe7ff0..0xe8010) lies outside the tile's memory");

  package::Package overlap = package_of(1, image(halting(), {data_segment(".data", 0x4c000, {1, 2, 3, 4})}));
  EXPECT_EQ(load_error(overlap, 1), "package: tile 0: segments '.text' and '.data' overlap");

  Code code;
  code.main(Opcode::Halt);
  package::TileImage interleaved_code = image(code);
  interleaved_code.segments[0].address = kInterleavedData;
  EXPECT_EQ(load_error(package_of(1, interleaved_code), 1),
            "package: tile 0: code segment '.text' (0x80000..0x80008) must be whole 8-byte bundles in standard memory");

  package::Package bad_group = package_of(2, image(halting()));
  bad_group.exchange_groups = {{0, 1}, {2}};
  EXPECT_EQ(load_error(bad_group, 2), "package: exchange group 1 names tile 2, outside 0..1");

  package::Package bad_piece = package_of(1, image(halting()));
  bad_piece.bindings = {dense_binding("x", package::BindingRole::Input, f32_type({16}), 0, 0xe7ff0)};
  EXPECT_EQ(load_error(bad_piece, 1),
            "package: binding 'x': piece on tile 0 (0xe7ff0..0xe8030) lies outside the tile's memory");
  bad_piece.bindings = {dense_binding("x", package::BindingRole::Input, f32_type({16}), 4, kStandardData)};
  EXPECT_EQ(load_error(bad_piece, 1), "package: binding 'x': piece on tile 4, outside 0..0");
  bad_piece.bindings = {dense_binding("x", package::BindingRole::Input, f32_type({16}), 0, kStandardData),
                        dense_binding("x", package::BindingRole::Input, f32_type({16}), 0, kStandardData)};
  EXPECT_EQ(load_error(bad_piece, 1), "package: two inputs or parameters are named 'x'");
}

TEST(DeviceProfile, RecordsKernelsExchangeSyncsAndHalts) {
  // Tile 0 sends 40 bytes to tile 1; both sync; tile 0 runs a named kernel
  // and an unnamed one.
  Code sender;
  sender.set(1, kStandardData);
  sender.set(2, 40);
  sender.set(3, 1);
  sender.main(Opcode::Send, {1, 2, 3});  // busy 36..46
  sender.main(Opcode::Sync);             // 46
  sender.main(Opcode::Xdone);
  int named = sender.label(), unnamed = sender.label();
  sender.set_address(4, named);
  sender.set_address(5, unnamed);
  sender.main(Opcode::Run, {4, kZero});
  sender.main(Opcode::Run, {5, kZero});
  sender.main(Opcode::Wsync);
  sender.main(Opcode::Halt);
  sender.bind(named);
  const std::uint32_t named_address = sender.here();
  sender.main(Opcode::Rpti, {20, 1});  // still running when the second starts
  sender.main(Opcode::Nop);
  sender.main(Opcode::Exit);
  sender.bind(unnamed);
  const std::uint32_t unnamed_address = sender.here();
  sender.main(Opcode::Nop);
  sender.main(Opcode::Exit);
  Code receiver;
  receiver.set(1, kStandardData);
  receiver.set(2, 40);
  receiver.set(3, 0);
  receiver.main(Opcode::Recv, {1, 2, 3});
  receiver.main(Opcode::Sync);
  receiver.main(Opcode::Halt);
  package::Package package = package_of(2, image(sender));
  package.tiles[0].symbols.push_back(package::Symbol{"gemm_kernel", named_address, 8, package::SymbolKind::Kernel});
  package.tiles[1] = image(receiver);
  Device device(package, ipu21_cut(2));
  RunResult result = device.run();
  const Profile& profile = result.profile;
  ASSERT_EQ(profile.tiles.size(), 2u);
  auto label = [&](const ProfileEvent& event) { return profile.labels.at(event.label); };

  const std::vector<ProfileEvent>& tile0 = profile.tiles[0];
  ASSERT_EQ(tile0.size(), 5u);
  EXPECT_EQ(tile0[0].kind, ProfileEventKind::SupervisorExchange);
  EXPECT_EQ(tile0[0].begin, 36u);
  EXPECT_EQ(tile0[0].end, 46u);
  EXPECT_EQ(tile0[0].detail, 40u);
  EXPECT_EQ(label(tile0[0]), "exchange");
  // Tile 0 reaches its sync at 46. Tile 1's sync (42) also waits for its
  // data, whose last word lands at 36 + 9 + 16 = 61: it arrives at 62 and
  // both are released at 662.
  EXPECT_EQ(tile0[1].kind, ProfileEventKind::SyncWait);
  EXPECT_EQ(tile0[1].begin, 46u);
  EXPECT_EQ(tile0[1].end, 662u);
  EXPECT_EQ(label(tile0[1]), "sync");
  // xdone 662, setzi 668 674, run 680 (worker 0: first issue 684, 22
  // bundles), run 686 (worker 1: issues 691 and 697).
  EXPECT_EQ(tile0[2].kind, ProfileEventKind::WorkerKernel);
  EXPECT_EQ(label(tile0[2]), "gemm_kernel");
  EXPECT_EQ(tile0[2].context, 0);
  EXPECT_EQ(tile0[2].detail, named_address);
  EXPECT_EQ(tile0[2].begin, 680u);
  EXPECT_EQ(tile0[2].end, 811u);
  EXPECT_EQ(tile0[3].kind, ProfileEventKind::WorkerKernel);
  EXPECT_EQ(label(tile0[3]), fmt::format("worker@{:#x}", unnamed_address));
  EXPECT_EQ(tile0[3].context, 1);
  EXPECT_EQ(tile0[3].begin, 686u);
  EXPECT_EQ(tile0[3].end, 698u);
  EXPECT_EQ(tile0[4].kind, ProfileEventKind::Halt);
  EXPECT_EQ(tile0[4].begin, result.tiles[0].halt_cycle);
  EXPECT_EQ(profile.tiles[1].size(), 2u);

  SimOptions quiet;
  quiet.record_profile = false;
  RunResult without = device.run(quiet);
  EXPECT_TRUE(without.profile.tiles.empty());
  EXPECT_EQ(without.cycles, result.cycles);

  // Handed over a superstep at a time: the same events in the same order,
  // at the sync and at the end, and none kept in the result.
  SimOptions streaming;
  std::vector<std::vector<ProfileEvent>> handed(2);
  std::vector<int> batches(2);
  streaming.on_events = [&](std::uint32_t tile, const std::vector<ProfileEvent>& events) {
    handed.at(tile).insert(handed.at(tile).end(), events.begin(), events.end());
    ++batches.at(tile);
  };
  RunResult streamed = device.run(streaming);
  EXPECT_TRUE(streamed.profile.tiles.empty());
  EXPECT_EQ(streamed.profile.labels, profile.labels);
  EXPECT_EQ(streamed.cycles, result.cycles);
  EXPECT_EQ(batches, (std::vector<int>{2, 2}));
  EXPECT_EQ(handed[0], profile.tiles[0]);
  EXPECT_EQ(handed[1], profile.tiles[1]);
}

graph::Tensor random_codes(graph::TensorType type, std::uint32_t seed) {
  graph::Tensor tensor = graph::Tensor::zeros(std::move(type));
  std::mt19937 random(seed);
  for (std::uint8_t& code : tensor.bytes) {
    code = static_cast<std::uint8_t>(random() & 0xbf);
    if (code == 0x80) code = 0;
  }
  return tensor;
}

// C of the small GEMM with `package`, or nullopt when the run faults.
std::optional<std::vector<std::uint8_t>> gemm_output(const package::Package& package, const GemmShape& shape) {
  Device device(package, ipu21_cut(shape.tiles));
  const std::int64_t m = GemmShape::kRows, n = shape.columns(), k = shape.k;
  device.write("a", random_codes({{1, m, k}, {ElementType::F143, 0}}, 3));
  device.write("b", random_codes({{1, k, n}, {ElementType::F143, 0}}, 4));
  SimOptions options;
  options.watchdog_cycles = 100'000;
  try {
    device.run(options);
  } catch (const Fault&) {
    return std::nullopt;
  }
  return device.read("c").bytes;
}

TEST(DeviceExecution, EveryEncodedInstructionOfTheGemmMatters) {
  GemmShape shape;
  shape.k = 16;
  shape.column_blocks = 2;
  const package::Package original = gemm_package(shape);
  const std::optional<std::vector<std::uint8_t>> reference = gemm_output(original, shape);
  ASSERT_TRUE(reference);

  Code code = gemm_code(shape);
  int variants = 0;
  for (std::size_t index = 0; index < code.size(); ++index) {
    for (bool main_slot : {true, false}) {
      Code mutated = code;
      isa::Bundle& bundle = mutated.at(index);
      isa::Instruction& slot = main_slot ? bundle.main : bundle.flt;
      isa::Instruction empty = main_slot ? isa::nop() : isa::fnop();
      if (slot == empty) continue;
      slot = empty;
      package::Package package = original;
      package.tiles[0].segments[0] = mutated.segment();
      std::optional<std::vector<std::uint8_t>> output = gemm_output(package, shape);
      EXPECT_TRUE(!output || *output != *reference)
          << "removing " << isa::instruction_text(code.at(index).main) << " ; "
          << isa::instruction_text(code.at(index).flt) << " (bundle " << index << ") changed nothing";
      ++variants;
    }
  }
  EXPECT_GT(variants, 90);
}

TEST(DeviceExecution, RunsAgainFromTheResetStateWithMemoryKept) {
  // Each run adds 1 to a counter in memory.
  Code code;
  code.set(1, kStandardData);
  code.main(Opcode::Ldw, {2, 1, 0});
  code.main(Opcode::Addi, {2, 2, 1});
  code.main(Opcode::Stw, {2, 1, 0});
  code.main(Opcode::Halt);
  package::Package package = package_of(1, image(code));
  package.bindings = {dense_binding("counter", package::BindingRole::Output, f32_type({1}), 0, kStandardData)};
  Device device(package, ipu21_cut(1));
  RunResult first = device.run();
  RunResult second = device.run();
  EXPECT_EQ(first.cycles, second.cycles);
  std::uint32_t counter;
  std::memcpy(&counter, device.read("counter").bytes.data(), 4);
  EXPECT_EQ(counter, 2u);
}

TEST(DeviceExecution, IdleTilesTakeNoPartInSyncs) {
  // Tile 1 has no code and entry 0: tile 0 syncs alone.
  Code code;
  code.main(Opcode::Sync);
  code.main(Opcode::Halt);
  package::Package package = package_of(2, image(code));
  package.tiles[1] = package::TileImage{};
  Device device(package, ipu21_cut(2));
  RunResult result = device.run();
  EXPECT_EQ(result.cycles, 600u);
  EXPECT_EQ(result.syncs, 1u);
  EXPECT_EQ(result.tiles[1].bundles, 0u);
  EXPECT_EQ(result.tiles[1].halt_cycle, 0u);
}

TEST(DeviceExecution, StoresIntoCodeAreExecuted) {
  // The supervisor overwrites the bundle at `patched` (setzi $m2, 1) with
  // the bundle at `replacement` (setzi $m2, 7) before reaching it.
  Code code;
  int patched = code.label(), replacement = code.label();
  code.set_address(1, replacement);
  code.set_address(3, patched);
  code.main(Opcode::Ld64, {0, 1, 0});
  code.main(Opcode::St64, {0, 3, 0});
  code.bind(patched);
  code.main(Opcode::Setzi, {2, 1});
  code.set(4, kStandardData);
  code.main(Opcode::Stw, {2, 4, 0});
  code.main(Opcode::Halt);
  code.bind(replacement);
  code.main(Opcode::Setzi, {2, 7});
  EXPECT_EQ(run_for_words(code, 1).words[0], 7u);
}

}  // namespace
}  // namespace tilec::sim
