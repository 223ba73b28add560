// The assembler's features: statements, directives, expressions, macros and
// includes, checked on the objects they produce.
#include "isa/assembler.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <map>

namespace tilec::isa {
namespace {

std::uint32_t word_at(const Section& section, std::uint32_t offset) {
  std::uint32_t word = 0;
  std::memcpy(&word, section.bytes.data() + offset, 4);
  return word;
}

Bundle bundle_at(const Section& section, std::uint32_t offset) {
  auto bundle = decode_bundle(std::uint64_t{word_at(section, offset)} | std::uint64_t{word_at(section, offset + 4)} << 32);
  EXPECT_TRUE(bundle) << "offset " << offset;
  return bundle.value_or(Bundle{});
}

const Symbol& symbol(const Object& object, std::string_view name) {
  for (const Symbol& s : object.symbols)
    if (s.name == name) return s;
  throw std::runtime_error("no symbol " + std::string(name));
}

TEST(Assembler, SingleInstructionsFillTheOtherSlotWithItsNop) {
  Object object = assemble_text(".text\nadd $m1, $m2, $mzero\nf32v4zero $a4:7\n");
  ASSERT_EQ(object.sections.size(), 1u);
  const Section& text = object.sections[0];
  EXPECT_TRUE(text.executable);
  EXPECT_EQ(text.memory, MemoryWish::Standard);
  ASSERT_EQ(text.bytes.size(), 16u);
  EXPECT_EQ(bundle_at(text, 0), (Bundle{Instruction{Opcode::Add, {1, 2, 15}}, fnop()}));
  EXPECT_EQ(bundle_at(text, 8), (Bundle{nop(), Instruction{Opcode::F32v4zero, {4}}}));
}

TEST(Assembler, BundlesAcceptEitherOrder) {
  Object a = assemble_text(".text\n{ ld128pi $a0:3, $m2, 16 ; amp.f8 $a0:3, $a4:5, 1, f143, f152 }\n");
  Object b = assemble_text(".text\n{amp.f8 $a0:3,$a4:5,1,f143,f152;ld128pi $a0:3,$m2,16}\n");
  EXPECT_EQ(a.sections[0].bytes, b.sections[0].bytes);
  const Bundle bundle = bundle_at(a.sections[0], 0);
  EXPECT_EQ(bundle.main, (Instruction{Opcode::Ld128pi, {0, 2, 16}}));
  EXPECT_EQ(bundle.flt, (Instruction{Opcode::Ampf8, {0, 4, 1, 0, 1}}));
}

TEST(Assembler, ExchangeGroupsAreDeclaredInOrder) {
  const Object object = assemble_text(".equ last, 3\n.exchange_group 1, 2, last\n.exchange_group 0\n.text\nhalt\n");
  EXPECT_EQ(object.exchange_groups, (std::vector<std::vector<std::uint32_t>>{{1, 2, 3}, {0}}));
}

TEST(Assembler, CommentsAndBlankLinesAreIgnored) {
  Object object = assemble_text("# a comment\n\n.text // another\n  nop # trailing\n// only\n");
  EXPECT_EQ(object.sections[0].bytes.size(), 8u);
}

TEST(Assembler, BranchesWithinASectionAreResolved) {
  Object object = assemble_text(".text\ntop: nop\nbrz $m1, done\nbr top\ncall $m4, .+2\ndone: halt\n");
  EXPECT_TRUE(object.relocations.empty());
  const Section& text = object.sections[0];
  EXPECT_EQ(bundle_at(text, 8).main, (Instruction{Opcode::Brz, {1, 3}}));
  EXPECT_EQ(bundle_at(text, 16).main, (Instruction{Opcode::Br, {-2}}));
  EXPECT_EQ(bundle_at(text, 24).main, (Instruction{Opcode::Call, {4, 2}}));
}

TEST(Assembler, SymbolReferencesBecomeRelocations) {
  Object object = assemble_text(
      ".text\nsetzi $m1, table + 8\ncall $m2, elsewhere\nbr far\n"
      ".section .k, \"x\"\nfar: nop\n.data\ntable: .word table, 0, elsewhere - 4\n");
  ASSERT_EQ(object.relocations.size(), 5u);
  auto check = [&](int i, RelocationKind kind, const char* name, std::int64_t addend, std::uint32_t offset) {
    const Relocation& r = object.relocations[i];
    EXPECT_EQ(r.kind, kind) << i;
    EXPECT_EQ(object.symbols[r.symbol].name, name) << i;
    EXPECT_EQ(r.addend, addend) << i;
    EXPECT_EQ(r.offset, offset) << i;
  };
  check(0, RelocationKind::Abs20, "table", 8, 0);
  check(1, RelocationKind::Pc20, "elsewhere", 0, 8);
  check(2, RelocationKind::Pc24, "far", 0, 16);
  check(3, RelocationKind::Abs32, "table", 0, 0);
  check(4, RelocationKind::Abs32, "elsewhere", -4, 8);
  EXPECT_FALSE(symbol(object, "elsewhere").defined());
}

TEST(Assembler, EquConstantsAndExpressions) {
  Object object = assemble_text(
      ".equ ROWS, 16\n.equ BYTES, ROWS * 4 + (1 << 3) - 0x10 / 2\n.text\n"
      "addi $m1, $m1, -BYTES\nandi $m2, $m2, ~0 & 0xffff\nori $m3, $m3, 0b101 | 8 ^ 1 % 2\n");
  const Section& text = object.sections[0];
  EXPECT_EQ(bundle_at(text, 0).main.operands[2], -(16 * 4 + 8 - 8));
  EXPECT_EQ(bundle_at(text, 8).main.operands[2], 0xffff);
  EXPECT_EQ(bundle_at(text, 16).main.operands[2], 0b101 | (8 ^ (1 % 2)));
}

TEST(Assembler, DataDirectives) {
  Object object = assemble_text(".data\n.byte 1, -1\n.half 0x1234, -2\n.align 4\n.word 0xdeadbeef, -1\n"
                                ".float 1.5, -0.25, inf\n.zero 3\n");
  const std::vector<std::uint8_t>& bytes = object.sections[0].bytes;
  ASSERT_EQ(bytes.size(), 6u + 2 + 8 + 12 + 3);
  EXPECT_EQ(bytes[0], 1);
  EXPECT_EQ(bytes[1], 0xff);
  EXPECT_EQ(bytes[2], 0x34);
  EXPECT_EQ(bytes[3], 0x12);
  EXPECT_EQ(bytes[4], 0xfe);
  EXPECT_EQ(bytes[6], 0);  // .align padding
  EXPECT_EQ(word_at(object.sections[0], 8), 0xdeadbeefu);
  EXPECT_EQ(word_at(object.sections[0], 12), 0xffffffffu);
  EXPECT_EQ(word_at(object.sections[0], 16), std::bit_cast<std::uint32_t>(1.5f));
  EXPECT_EQ(word_at(object.sections[0], 20), std::bit_cast<std::uint32_t>(-0.25f));
  EXPECT_EQ(word_at(object.sections[0], 24), std::bit_cast<std::uint32_t>(INFINITY));
  EXPECT_EQ(object.sections[0].alignment, 4u);
}

TEST(Assembler, AlignInCodePadsWithNopBundles) {
  Object object = assemble_text(".text\nhalt\n.align 32\nhalt\n");
  const Section& text = object.sections[0];
  ASSERT_EQ(text.bytes.size(), 40u);
  EXPECT_EQ(text.alignment, 32u);
  for (std::uint32_t at = 8; at < 32; at += 8) EXPECT_EQ(bundle_at(text, at), (Bundle{nop(), fnop()}));
}

TEST(Assembler, SymbolDirectives) {
  Object object = assemble_text(
      ".text\n.global gemm, helper\n.type gemm, @kernel\ngemm: nop\nnop\n.size gemm, . - gemm\n"
      "helper: halt\n.data\n.type table, @object\ntable: .word 1\nlocal_data: .word 2\n");
  const Symbol& gemm = symbol(object, "gemm");
  EXPECT_TRUE(gemm.global);
  EXPECT_EQ(gemm.kind, SymbolKind::Kernel);
  EXPECT_EQ(gemm.size, 16u);
  EXPECT_EQ(symbol(object, "helper").kind, SymbolKind::Function);
  EXPECT_EQ(symbol(object, "helper").offset, 16u);
  EXPECT_FALSE(symbol(object, "table").global);
  EXPECT_EQ(symbol(object, "local_data").kind, SymbolKind::Data);
  EXPECT_EQ(symbol(object, "local_data").offset, 4u);
}

TEST(Assembler, SectionFlags) {
  Object object = assemble_text(".section .kernels, \"x\"\nnop\n.section .big, \"i\"\n.section .small, \"s\"\n"
                                ".section .any\n.section \"quoted name\", \"\"\n");
  ASSERT_EQ(object.sections.size(), 5u);
  EXPECT_TRUE(object.sections[0].executable);
  EXPECT_EQ(object.sections[1].memory, MemoryWish::Interleaved);
  EXPECT_EQ(object.sections[2].memory, MemoryWish::Standard);
  EXPECT_EQ(object.sections[3].memory, MemoryWish::Any);
  EXPECT_EQ(object.sections[4].name, "quoted name");
}

TEST(Assembler, MacrosSubstituteArgumentsAndUniqueNumbers) {
  Object object = assemble_text(
      ".macro countdown reg, from\n"
      "  setzi \\reg, \\from\n"
      "loop\\@: addi \\reg, \\reg, -1\n"
      "  brnz \\reg, loop\\@\n"
      ".endm\n"
      ".text\n"
      "first: countdown $m1, 3\n"
      "countdown $m2, (1 + 1)\n");
  const Section& text = object.sections[0];
  ASSERT_EQ(text.bytes.size(), 6u * 8);
  EXPECT_EQ(bundle_at(text, 0).main, (Instruction{Opcode::Setzi, {1, 3}}));
  EXPECT_EQ(bundle_at(text, 16).main, (Instruction{Opcode::Brnz, {1, -1}}));
  EXPECT_EQ(bundle_at(text, 24).main, (Instruction{Opcode::Setzi, {2, 2}}));
  EXPECT_EQ(bundle_at(text, 40).main, (Instruction{Opcode::Brnz, {2, -1}}));
  EXPECT_EQ(symbol(object, "first").offset, 0u);
  EXPECT_EQ(symbol(object, "loop0").offset, 8u);
  EXPECT_EQ(symbol(object, "loop1").offset, 32u);
}

TEST(Assembler, MacrosMayUseOtherMacros) {
  Object object = assemble_text(".macro one r\naddi \\r, \\r, 1\n.endm\n.macro two r\none \\r\none \\r\n.endm\n"
                                ".text\ntwo $m3\n");
  EXPECT_EQ(object.sections[0].bytes.size(), 16u);
}

TEST(Assembler, IncludesAreRelativeToTheIncludingFile) {
  const std::map<std::string, std::string> files = {
      {"src/main.s", ".include \"lib/consts.s\"\n.text\naddi $m1, $m1, SIZE\n"},
      {"src/lib/consts.s", ".include \"more.s\"\n.equ SIZE, MORE * 2\n"},
      {"src/lib/more.s", ".equ MORE, 21\n"},
  };
  FileReader reader = [&](const std::string& path) -> std::optional<std::string> {
    auto it = files.find(path);
    return it == files.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  Object object = assemble_file("src/main.s", reader);
  EXPECT_EQ(bundle_at(object.sections[0], 0).main.operands[2], 42);
}

TEST(Assembler, SameRegisterInBothSlotsIsFineWhenOnlyOneWritesIt) {
  // The AMP reads $a0:3 while the load replaces it: allowed.
  EXPECT_NO_THROW(assemble_text(".text\n{ ld128pi $a0:3, $m2, 16 ; amp.f8 $a0:3, $a4:5, 0, f143, f143 }\n"));
  EXPECT_THROW(assemble_text(".text\n{ movma $a5, $m1 ; f32v4zero $a4:7 }\n"), Error);
}

TEST(Assembler, ParseBundleRejectsNames) {
  EXPECT_EQ(parse_bundle("br .-3").main, (Instruction{Opcode::Br, {-3}}));
  EXPECT_THROW(parse_bundle("br somewhere"), Error);
}

}  // namespace
}  // namespace tilec::isa
