// The code builder API as the compiler uses it, without assembly text.
#include "isa/code_builder.h"
#include "support/error.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>

namespace tilec::isa {
namespace {

Instruction make(Opcode opcode, std::initializer_list<std::int32_t> operands) {
  Instruction instruction{opcode, {}};
  int i = 0;
  for (std::int32_t value : operands) instruction.operands[i++] = value;
  return instruction;
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput);
    return error.what();
  }
  return "(no error)";
}

TEST(CodeBuilder, EmitsBundlesLabelsAndRelocations) {
  CodeBuilder code("kernels");
  code.section(".text", {.executable = true});
  code.label("entry");
  code.set_global("entry");
  code.set_kind("entry", SymbolKind::Kernel);
  code.bundle(make(Opcode::Ld128pi, {0, 2, 16}), make(Opcode::Ampf8, {0, 4, 0, 0, 0}));
  code.instruction({make(Opcode::Setzi, {1, 0}), SymbolRef{"table", 8}});
  code.instruction({make(Opcode::Brnz, {3, 0}), SymbolRef{"entry"}});
  code.instruction(make(Opcode::F32v4zero, {8}));
  code.set_size("entry", code.offset());
  code.section(".data", {.memory = MemoryWish::Interleaved});
  code.align(16);
  code.label("table");
  code.word(SymbolRef{"entry", 8});
  code.float32(2.0f);
  Object object = code.finish();

  EXPECT_EQ(object.name, "kernels");
  ASSERT_EQ(object.sections.size(), 2u);
  EXPECT_EQ(object.sections[0].bytes.size(), 32u);
  EXPECT_EQ(object.sections[1].memory, MemoryWish::Interleaved);
  EXPECT_EQ(object.sections[1].alignment, 16u);
  // The branch to a label of its own section is resolved now; the rest waits for the linker.
  std::uint32_t brnz = 0;
  std::memcpy(&brnz, object.sections[0].bytes.data() + 16, 4);
  EXPECT_EQ(decode(brnz, Slot::Main), make(Opcode::Brnz, {3, -2}));
  ASSERT_EQ(object.relocations.size(), 2u);
  EXPECT_EQ(object.relocations[0].kind, RelocationKind::Abs20);
  EXPECT_EQ(object.relocations[0].addend, 8);
  EXPECT_EQ(object.relocations[1].kind, RelocationKind::Abs32);
  EXPECT_EQ(object.relocations[1].section, 1);
  const Symbol& entry = object.symbols[0];
  EXPECT_EQ(entry.name, "entry");
  EXPECT_TRUE(entry.global);
  EXPECT_EQ(entry.kind, SymbolKind::Kernel);
  EXPECT_EQ(entry.size, 32u);
}

TEST(CodeBuilder, FinishStartsAFreshObject) {
  CodeBuilder code("x");
  code.section(".text", {.executable = true});
  code.label("a");
  code.instruction(make(Opcode::Halt, {}));
  Object first = code.finish();
  code.section(".text", {.executable = true});
  code.label("a");  // no clash with the finished object
  Object second = code.finish();
  EXPECT_EQ(first.sections[0].bytes.size(), 8u);
  EXPECT_TRUE(second.sections[0].bytes.empty());
}

TEST(CodeBuilder, RejectsWhatCannotBeEncoded) {
  CodeBuilder code("gen");
  EXPECT_EQ(error_of([&] { code.instruction(make(Opcode::Halt, {})); }),
            "gen: an instruction before any section (use .text, .data or .section)");
  code.section(".text", {.executable = true});
  EXPECT_EQ(error_of([&] { code.bundle(make(Opcode::Fnop, {}), make(Opcode::Fnop, {})); }),
            "gen: 'fnop' is a float-slot instruction, placed in the main slot");
  EXPECT_EQ(error_of([&] { code.instruction(make(Opcode::Addi, {1, 1, 1 << 20})); }),
            "gen: addi operand 3: immediate 1048576 is outside -32768..32767");
  EXPECT_EQ(error_of([&] { code.instruction({make(Opcode::Addi, {1, 1, 0}), SymbolRef{"x"}}); }),
            "gen: 'addi' has no operand that can name a symbol");
  EXPECT_EQ(error_of([&] { code.bundle(make(Opcode::Ld32, {3, 1, 0}), make(Opcode::F32v4zero, {0})); }),
            "gen: both instructions of the bundle write $a3");
  code.set_where("k.s:4:2");
  EXPECT_EQ(error_of([&] { code.align(12); }), "k.s:4:2: alignment 12 is not a power of two up to 638976");
  code.set_where("");
  code.byte(1);
  EXPECT_EQ(error_of([&] { code.instruction(make(Opcode::Halt, {})); }),
            "gen: bundle at offset 0x1 of '.text' is not 8-byte aligned (use .align 8)");
  EXPECT_EQ(error_of([&] { code.section(".text", {}); }),
            "gen: section '.text' reopened with other flags than it was first given");
  code.label("here");
  EXPECT_EQ(error_of([&] { code.label("here"); }), "gen: symbol 'here' is already defined at .text+0x1");
  code.section(".d", {});
  EXPECT_EQ(error_of([&] { code.instruction(make(Opcode::Halt, {})); }),
            "gen: instructions must be in an executable section, not '.d'");
}

}  // namespace
}  // namespace tilec::isa
