// Self-checks of the ISA table (instructions.def, formats.def): the encoding
// is unambiguous and every instruction can be printed and parsed.
#include "isa/assembler.h"
#include "isa/instruction_sampler.h"
#include "isa/isa.h"
#include "isa/object.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

namespace tilec::isa {
namespace {

TEST(IsaTable, OpcodesAndMnemonicsAreUnique) {
  std::set<int> opcodes;
  std::set<std::string> mnemonics;
  for (const InstructionSpec& spec : all_instructions()) {
    EXPECT_TRUE(opcodes.insert(static_cast<int>(spec.opcode)).second) << spec.mnemonic;
    EXPECT_TRUE(mnemonics.insert(spec.mnemonic).second) << spec.mnemonic;
  }
}

TEST(IsaTable, OpcodesLieInTheirSlotsRange) {
  for (const InstructionSpec& spec : all_instructions()) {
    const int opcode = static_cast<int>(spec.opcode);
    if (spec.slot == Slot::Main) EXPECT_TRUE(opcode >= 0x01 && opcode <= 0x7f) << spec.mnemonic;
    else EXPECT_TRUE(opcode >= 0x80 && opcode <= 0xff) << spec.mnemonic;
  }
}

TEST(IsaTable, FormatFieldsFitAboveTheOpcodeWithoutOverlapping) {
  for (const InstructionSpec& spec : all_instructions()) {
    const FormatSpec& format = format_spec(spec.format);
    ASSERT_LE(format.field_count, kMaxOperands) << format.name;
    std::uint64_t used = 0;
    for (int i = 0; i < format.field_count; ++i) {
      const FieldSpec& field = format.fields[i];
      EXPECT_GE(field.lsb, 8) << format.name << " field " << i;
      EXPECT_GE(field.width, 1) << format.name << " field " << i;
      EXPECT_LE(field.lsb + field.width, 32) << format.name << " field " << i;
      const std::uint64_t bits = ((std::uint64_t{1} << field.width) - 1) << field.lsb;
      EXPECT_EQ(used & bits, 0u) << format.name << " field " << i << " overlaps another";
      used |= bits;
    }
  }
}

TEST(IsaTable, RegisterFieldsAreWideEnoughForTheirFile) {
  for (const InstructionSpec& spec : all_instructions()) {
    const FormatSpec& format = format_spec(spec.format);
    for (int i = 0; i < format.field_count; ++i) {
      const FieldSpec& field = format.fields[i];
      int expected = field.width;
      if (field.kind == OperandKind::MReg) expected = 4;
      if (field.kind == OperandKind::AReg || field.kind == OperandKind::APair || field.kind == OperandKind::AQuad)
        expected = 5;
      if (field.kind == OperandKind::Fp8Format) expected = 1;
      EXPECT_EQ(field.width, expected) << format.name << " field " << i;
    }
  }
}

TEST(IsaTable, LookupsFindEveryInstruction) {
  for (const InstructionSpec& spec : all_instructions()) {
    EXPECT_EQ(find_spec(spec.opcode), &spec);
    EXPECT_EQ(find_spec(spec.mnemonic), &spec);
  }
  EXPECT_EQ(find_spec(Opcode::Invalid), nullptr);
  EXPECT_EQ(find_spec("frobnicate"), nullptr);
}

TEST(IsaTable, EveryInstructionPrintsAndParsesBack) {
  InstructionSampler sampler(7);
  for (const InstructionSpec& spec : all_instructions()) {
    for (int trial = 0; trial < 20; ++trial) {
      const Instruction instruction = sampler.instruction(spec);
      const std::string text = instruction_text(instruction);
      EXPECT_TRUE(text.starts_with(spec.mnemonic)) << text;
      const Bundle parsed = parse_bundle(text);
      EXPECT_EQ(spec.slot == Slot::Main ? parsed.main : parsed.flt, instruction) << text;
    }
  }
}

TEST(IsaTable, OpcodeZeroAndZeroWordsAreUndecodable) {
  for (Slot slot : {Slot::Main, Slot::Float}) {
    EXPECT_FALSE(decode(0, slot));
    for (std::uint32_t upper : {0x100u, 0xffffff00u, 0x12345600u}) EXPECT_FALSE(decode(upper, slot));
  }
  EXPECT_FALSE(decode_bundle(0));
}

TEST(IsaTable, OpcodesOfTheOtherSlotAreUndecodable) {
  for (const InstructionSpec& spec : all_instructions()) {
    const std::uint32_t word = encode(Instruction{spec.opcode, {}}) ;
    const Slot other = spec.slot == Slot::Main ? Slot::Float : Slot::Main;
    EXPECT_TRUE(decode(word, spec.slot)) << spec.mnemonic;
    EXPECT_FALSE(decode(word, other)) << spec.mnemonic;
  }
}

TEST(IsaTable, UncoveredBitsMakeAWordUndecodable) {
  for (const InstructionSpec& spec : all_instructions()) {
    const FormatSpec& format = format_spec(spec.format);
    std::uint32_t covered = 0xff;
    for (int i = 0; i < format.field_count; ++i)
      covered |= ((1u << format.fields[i].width) - 1u) << format.fields[i].lsb;
    const std::uint32_t base = encode(Instruction{spec.opcode, {}});
    for (int bit = 8; bit < 32; ++bit)
      if (!(covered & (1u << bit))) {
        EXPECT_FALSE(decode(base | (1u << bit), spec.slot)) << spec.mnemonic << " bit " << bit;
      }
  }
}

// The assembler's same-register check relies on each instruction that
// writes an $a register naming that operand first and its doc starting "aD".
TEST(IsaTable, WrittenRegisterOperandIsTheFirstAndAnARegister) {
  for (const InstructionSpec& spec : all_instructions()) {
    if (std::strncmp(spec.doc, "aD", 2) != 0) continue;
    const FormatSpec& format = format_spec(spec.format);
    ASSERT_GE(format.field_count, 1) << spec.mnemonic;
    const OperandKind kind = format.fields[0].kind;
    EXPECT_TRUE(kind == OperandKind::AReg || kind == OperandKind::APair || kind == OperandKind::AQuad) << spec.mnemonic;
  }
  EXPECT_EQ(written_a_registers(parse_bundle("ld128 $a4:7, $m1, 0").main), 0xf0u);
  EXPECT_EQ(written_a_registers(parse_bundle("st128 $a4:7, $m1, 0").main), 0u);
  EXPECT_EQ(written_a_registers(parse_bundle("f32v4add $a8:11, $a0:3, $a4:7").flt), 0xf00u);
  EXPECT_EQ(written_a_registers(parse_bundle("amp.f8 $a0:3, $a4:5, 0, f143, f152").flt), 0u);
}

TEST(IsaTable, SymbolOperandsMatchTheirRelocationFields) {
  int with_symbol = 0;
  for (const InstructionSpec& spec : all_instructions()) {
    const FormatSpec& format = format_spec(spec.format);
    std::optional<SymbolOperand> site = symbol_operand(spec);
    bool has_label = false;
    for (int i = 0; i < format.field_count; ++i) has_label |= format.fields[i].kind == OperandKind::Label;
    // Every branch target can be relocated.
    if (has_label) {
      EXPECT_TRUE(site) << spec.mnemonic;
    }
    if (site) ++with_symbol;
  }
  EXPECT_EQ(symbol_operand(*find_spec("setzi"))->kind, RelocationKind::Abs20);
  EXPECT_EQ(symbol_operand(*find_spec("br"))->kind, RelocationKind::Pc24);
  EXPECT_EQ(symbol_operand(*find_spec("call"))->kind, RelocationKind::Pc20);
  EXPECT_FALSE(symbol_operand(*find_spec("addi")));
  EXPECT_EQ(with_symbol, 5);  // setzi, br, brz, brnz, call
}

}  // namespace
}  // namespace tilec::isa
