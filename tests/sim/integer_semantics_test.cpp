// Semantics of the main-slot integer, memory, move and control instructions,
// run by the supervisor of one tile.
#include "sim_test_support.h"

#include <gtest/gtest.h>

namespace tilec::sim {
namespace {

using namespace testing;

struct BinaryCase {
  Opcode opcode;
  std::uint32_t a, b, expected;
};

TEST(IntegerSemantics, RegisterRegisterOperations) {
  const std::vector<BinaryCase> cases = {
      {Opcode::Add, 0xffffffffu, 2, 1},           {Opcode::Sub, 1, 2, 0xffffffffu},
      {Opcode::Mul, 0x10000u, 0x10001u, 0x10000u}, {Opcode::And, 0xf0f0u, 0xff00u, 0xf000u},
      {Opcode::Or, 0xf0f0u, 0x0f00u, 0xfff0u},     {Opcode::Xor, 0xf0f0u, 0xff00u, 0x0ff0u},
      {Opcode::Shl, 3, 33, 6},                     {Opcode::Shr, 0x80000000u, 31, 1},
      {Opcode::Sar, 0x80000000u, 31, 0xffffffffu}, {Opcode::Min, 0xffffffffu, 1, 0xffffffffu},
      {Opcode::Max, 0xffffffffu, 1, 1},            {Opcode::Cmpeq, 5, 5, 1},
      {Opcode::Cmpne, 5, 5, 0},                    {Opcode::Cmplt, 0xffffffffu, 0, 1},
      {Opcode::Cmpult, 0xffffffffu, 0, 0},
  };
  Code code;
  code.set(0, kStandardData);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    code.set(1, cases[i].a);
    code.set(2, cases[i].b);
    code.main(cases[i].opcode, {3, 1, 2});
    code.main(Opcode::Stw, {3, 0, static_cast<std::int32_t>(4 * i)});
  }
  code.main(Opcode::Halt);
  WordsRun run = run_for_words(code, cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(run.words[i], cases[i].expected) << isa::spec_of(cases[i].opcode).mnemonic;
}

TEST(IntegerSemantics, ImmediateOperations) {
  struct Case {
    Opcode opcode;
    std::uint32_t a;
    std::int32_t immediate;
    std::uint32_t expected;
  };
  const std::vector<Case> cases = {
      {Opcode::Addi, 10, -11, 0xffffffffu}, {Opcode::Muli, 3, -2, 0xfffffffau},
      {Opcode::Andi, 0xffff1234u, 0xff, 0x34}, {Opcode::Ori, 0x10000u, 0x1, 0x10001u},
      {Opcode::Shli, 1, 36, 16},             {Opcode::Shri, 0x100u, 4, 0x10u},
      {Opcode::Cmplti, 0xfffffffeu, -1, 1},  {Opcode::Cmpeqi, 0xffffffffu, -1, 1},
  };
  Code code;
  code.set(0, kStandardData);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    code.set(1, cases[i].a);
    code.main(cases[i].opcode, {2, 1, cases[i].immediate});
    code.main(Opcode::Stw, {2, 0, static_cast<std::int32_t>(4 * i)});
  }
  code.main(Opcode::Halt);
  WordsRun run = run_for_words(code, cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(run.words[i], cases[i].expected) << isa::spec_of(cases[i].opcode).mnemonic;
}

TEST(IntegerSemantics, SetziSethiAndZeroRegister) {
  Code code;
  code.set(0, kStandardData);
  code.main(Opcode::Setzi, {1, 0xfffff});
  code.main(Opcode::Stw, {1, 0, 0});
  code.main(Opcode::Sethi, {1, 0xabcd});  // keeps the low half
  code.main(Opcode::Stw, {1, 0, 4});
  code.main(Opcode::Setzi, {kZero, 7});  // dropped
  code.main(Opcode::Add, {2, kZero, kZero});
  code.main(Opcode::Stw, {2, 0, 8});
  code.main(Opcode::Gettile, {3});
  code.main(Opcode::Stw, {3, 0, 12});
  code.main(Opcode::Halt);
  WordsRun run = run_for_words(code, 4);
  EXPECT_EQ(run.words[0], 0xfffffu);
  EXPECT_EQ(run.words[1], 0xabcdffffu);
  EXPECT_EQ(run.words[2], 0u);
  EXPECT_EQ(run.words[3], 0u);
}

TEST(MemorySemantics, MrfLoadsAndStoresOfEverySize) {
  Code code;
  code.set(0, kStandardData);
  code.set(1, 0x80c0ffeeu);
  code.main(Opcode::Stw, {1, 0, 0});
  code.main(Opcode::Ldhu, {2, 0, 2});  // 0x80c0
  code.main(Opcode::Stw, {2, 0, 4});
  code.main(Opcode::Ldbu, {2, 0, 3});  // 0x80
  code.main(Opcode::Stw, {2, 0, 8});
  code.main(Opcode::Sth, {1, 0, 12});  // low half 0xffee at +12
  code.main(Opcode::Stb, {1, 0, 14});  // low byte 0xee at +14
  // Post-increment: store at m4, then m4 += 4; load back through m5.
  code.main(Opcode::Addi, {4, 0, 16});
  code.main(Opcode::Stwpi, {1, 4, 4});
  code.main(Opcode::Stwpi, {4, 4, 4});  // stores the incremented pointer
  code.main(Opcode::Addi, {5, 0, 16});
  code.main(Opcode::Ldwpi, {6, 5, 4});
  code.main(Opcode::Ldwpi, {7, 5, 4});
  code.main(Opcode::Stw, {6, 0, 24});
  code.main(Opcode::Stw, {7, 0, 28});
  code.main(Opcode::Stw, {5, 0, 32});
  code.main(Opcode::Halt);
  WordsRun run = run_for_words(code, 9);
  EXPECT_EQ(run.words[0], 0x80c0ffeeu);
  EXPECT_EQ(run.words[1], 0x80c0u);
  EXPECT_EQ(run.words[2], 0x80u);
  EXPECT_EQ(run.words[3], 0x00eeffeeu);
  EXPECT_EQ(run.words[4], 0x80c0ffeeu);
  EXPECT_EQ(run.words[5], kStandardData + 20);
  EXPECT_EQ(run.words[6], 0x80c0ffeeu);
  EXPECT_EQ(run.words[7], kStandardData + 20);
  EXPECT_EQ(run.words[8], kStandardData + 24);
}

TEST(MemorySemantics, ArfLoadsAndStoresWithEveryAddressing) {
  // Source words 1..8 at kInterleavedData; copies land in standard memory
  // (64-bit and 32-bit) and interleaved memory (128-bit), read back by ld.
  std::vector<std::uint32_t> source = {1, 2, 3, 4, 5, 6, 7, 8};
  Code code;
  code.set(0, kStandardData);
  code.set(1, kInterleavedData);
  code.set(2, 16);
  code.main(Opcode::Ld128, {0, 1, 0});      // a0:3 = 1 2 3 4
  code.main(Opcode::Ld128r, {4, 1, 2});     // a4:7 = 5 6 7 8
  code.main(Opcode::St64, {0, 0, 0});       // 1 2
  code.main(Opcode::St64r, {6, 0, 2});      // +16: 7 8
  code.main(Opcode::St32, {5, 0, 8});       // +8: 6
  code.main(Opcode::Addi, {3, 0, 24});
  code.main(Opcode::St32pi, {4, 3, 8});     // +24: 5
  code.main(Opcode::St64pi, {2, 3, 8});     // +32: 3 4
  code.main(Opcode::Addi, {4, 1, 32});
  code.main(Opcode::St128pi, {4, 4, 16});   // interleaved +32: 5 6 7 8
  code.main(Opcode::St128, {0, 4, 0});      // interleaved +48: 1 2 3 4
  code.main(Opcode::St128r, {0, 1, 2});     // interleaved +16: 1 2 3 4
  code.main(Opcode::Addi, {5, 1, 32});
  code.main(Opcode::Ld128pi, {8, 5, 16});   // 5 6 7 8
  code.main(Opcode::Ld64pi, {12, 5, 8});    // 1 2
  code.main(Opcode::Ld32pi, {14, 5, 4});    // 3
  code.main(Opcode::Ld64r, {16, 1, 2});     // interleaved +16: 1 2
  code.main(Opcode::Ld32, {18, 1, 4});      // 2
  code.main(Opcode::Ld64, {20, 1, 8});      // 3 4
  code.main(Opcode::St128, {8, 1, 64});
  code.main(Opcode::St128, {12, 1, 80});
  code.main(Opcode::St128, {16, 1, 96});
  code.main(Opcode::St128, {20, 1, 112});
  code.main(Opcode::Ld128, {8, 1, 64});
  code.main(Opcode::Ld128, {12, 1, 80});
  code.main(Opcode::Ld128, {16, 1, 96});
  code.main(Opcode::Ld128, {20, 1, 112});
  for (int i = 0; i < 4; ++i) code.main(Opcode::St128, {8 + 4 * i, 1, 128 + 16 * i});
  code.main(Opcode::Halt);

  package::Package package = package_of(1, image(code, {data_segment(".data", kInterleavedData, as_bytes(source))}));
  package.bindings.push_back(dense_binding("standard", package::BindingRole::Output, f32_type({10}), 0, kStandardData));
  package.bindings.push_back(dense_binding("interleaved", package::BindingRole::Output, f32_type({48}), 0, kInterleavedData));
  Device device(package, ipu21_cut(1));
  RunResult result = device.run();
  auto words = [](const graph::Tensor& tensor) {
    std::vector<std::uint32_t> out(tensor.bytes.size() / 4);
    std::memcpy(out.data(), tensor.bytes.data(), tensor.bytes.size());
    return out;
  };
  std::vector<std::uint32_t> standard = words(device.read("standard"));
  EXPECT_EQ(standard, (std::vector<std::uint32_t>{1, 2, 6, 0, 7, 8, 5, 0, 3, 4}));
  std::vector<std::uint32_t> interleaved = words(device.read("interleaved"));
  EXPECT_EQ(std::vector<std::uint32_t>(interleaved.begin() + 4, interleaved.begin() + 16),
            (std::vector<std::uint32_t>{1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4}));
  // a8:11, a12:15 (with a14 = 3, a15 = 0), a16:19 (a18 = 2), a20:23 (a20:21 = 3 4)
  EXPECT_EQ(std::vector<std::uint32_t>(interleaved.begin() + 32, interleaved.begin() + 48),
            (std::vector<std::uint32_t>{5, 6, 7, 8, 1, 2, 3, 0, 1, 2, 2, 0, 3, 4, 0, 0}));
  EXPECT_EQ(result.tiles[0].bytes_loaded, 16u * 2 + 16 + 8 + 4 + 8 + 4 + 8 + 16 * 4);
}

TEST(MoveSemantics, MovesBetweenRegisterFiles) {
  Code code;
  code.set(0, kStandardData);
  code.set(1, 0x3f800000u);
  code.main(Opcode::Movma, {5, 1});
  code.flt(Opcode::F32v4splat, {8, 5});  // reads $a5 written by the previous bundle
  code.main(Opcode::Movam, {2, 11});
  code.main(Opcode::Stw, {2, 0, 0});
  code.main(Opcode::Halt);
  EXPECT_EQ(run_for_words(code, 1).words[0], 0x3f800000u);
}

TEST(ControlSemantics, BranchesCallAndReturn) {
  Code code;
  code.set(0, kStandardData);
  int skip = code.label(), function = code.label(), done = code.label(), loop = code.label();
  code.main(Opcode::Setzi, {1, 0});
  code.branch(ins(Opcode::Brz, {1, 0}), 1, skip);  // taken
  code.main(Opcode::Setzi, {1, 99});
  code.bind(skip);
  code.branch(ins(Opcode::Brnz, {1, 0}), 1, done);  // not taken
  // Count m2 down from 5, adding to m3.
  code.main(Opcode::Setzi, {2, 5});
  code.bind(loop);
  code.main(Opcode::Add, {3, 3, 2});
  code.main(Opcode::Addi, {2, 2, -1});
  code.branch(ins(Opcode::Brnz, {2, 0}), 1, loop);
  code.branch(ins(Opcode::Call, {10, 0}), 1, function);
  code.main(Opcode::Stw, {3, 0, 0});
  code.main(Opcode::Stw, {1, 0, 4});
  code.branch(ins(Opcode::Br, {0}), 0, done);
  code.bind(function);
  code.main(Opcode::Addi, {3, 3, 100});
  code.main(Opcode::Jr, {10});
  code.bind(done);
  code.main(Opcode::Halt);
  WordsRun run = run_for_words(code, 2);
  EXPECT_EQ(run.words[0], 115u);
  EXPECT_EQ(run.words[1], 0u);
}

TEST(ControlSemantics, HardwareLoops) {
  Code code;
  code.set(0, kStandardData);
  code.main(Opcode::Setzi, {1, 4});
  code.main(Opcode::Rpt, {1, 2});  // 4 x { m2 += 1; m3 += 2 }
  code.main(Opcode::Addi, {2, 2, 1});
  code.main(Opcode::Addi, {3, 3, 2});
  code.main(Opcode::Rpti, {0, 1});  // zero iterations: skipped
  code.main(Opcode::Addi, {4, 4, 1});
  code.main(Opcode::Rpti, {1000, 1});
  code.main(Opcode::Addi, {5, 5, 3});
  code.main(Opcode::Rpt, {kZero, 1});  // $mzero: skipped
  code.main(Opcode::Addi, {6, 6, 1});
  for (int reg = 2; reg <= 6; ++reg) code.main(Opcode::Stw, {reg, 0, 4 * (reg - 2)});
  code.main(Opcode::Halt);
  WordsRun run = run_for_words(code, 5);
  EXPECT_EQ(run.words, (std::vector<std::uint32_t>{4, 8, 0, 3000, 0}));
}

TEST(ControlSemantics, GetcountReadsTheIssueCycle) {
  Code code;
  code.set(0, kStandardData);  // cycles 0 and 6
  code.main(Opcode::Getcount, {1});  // cycle 12
  code.main(Opcode::Nop);
  code.main(Opcode::Getcount, {2});  // cycle 24
  code.main(Opcode::Stw, {1, 0, 0});
  code.main(Opcode::Stw, {2, 0, 4});
  code.main(Opcode::Halt);  // cycle 42
  WordsRun run = run_for_words(code, 2);
  EXPECT_EQ(run.words[0], 12u);
  EXPECT_EQ(run.words[1], 24u);
  EXPECT_EQ(run.result.cycles, 42u);
  EXPECT_EQ(run.result.tiles[0].bundles, 8u);
}

}  // namespace
}  // namespace tilec::sim
