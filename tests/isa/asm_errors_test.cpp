// Every assembler error: one line, BadInput, `file:line:column: message`
// saying what was expected and what was found.
#include "isa/assembler.h"

#include <gtest/gtest.h>

#include <map>

namespace tilec::isa {
namespace {

struct BadSource {
  const char* name;
  const char* source;
  const char* error;
};

const BadSource kBadSources[] = {
    {"unknown_instruction", ".text\nfrob $m1", "t.s:2:1: unknown instruction 'frob'"},
    {"quad", ".text\nld128 $a0:3, $m1, 0\nld128 $a5:8, $m1, 0",
     "t.s:3:7: expected a quad register $aN:N+3 with N a multiple of 4, got '$a5:8'"},
    {"quad_short", ".text\nld128 $a4:6, $m1, 0",
     "t.s:2:7: expected a quad register $aN:N+3 with N a multiple of 4, got '$a4:6'"},
    {"pair", ".text\nld64 $a1:2, $m1, 0", "t.s:2:6: expected a register pair $aN:N+1 with N even, got '$a1:2'"},
    {"single", ".text\nld32 $a0:1, $m1, 0", "t.s:2:6: expected a single register $a0..$a31, got '$a0:1'"},
    {"a_register_range", ".text\nmovma $a32, $m1", "t.s:2:7: expected a single register $a0..$a31, got '$a32'"},
    {"m_register", ".text\nadd $m16, $m1, $m2", "t.s:2:5: expected an $m register ($m0..$m15 or $mzero), got '$m16'"},
    {"m_register_kind", ".text\nadd $a1, $m1, $m2", "t.s:2:5: expected an $m register ($m0..$m15 or $mzero), got '$a1'"},
    {"immediate_range", ".text\naddi $m1, $m1, 40000", "t.s:2:16: immediate 40000 is outside -32768..32767"},
    {"unsigned_range", ".text\nsetzi $m1, -1", "t.s:2:12: immediate -1 is outside 0..1048575"},
    {"register_as_immediate", ".text\naddi $m1, $m1, $m2", "t.s:2:16: expected an immediate (s16), got register '$m2'"},
    {"too_few", ".text\nadd $m1, $m2", "t.s:2:13: 'add' takes 3 operand(s) ($m, $m, $m), got 2"},
    {"too_many", ".text\nadd $m1, $m2, $m3, $m4",
     "t.s:2:18: unexpected ',' after the 3 operand(s) of 'add' ($m, $m, $m)"},
    {"missing_comma", ".text\nadd $m1 $m2, $m3", "t.s:2:9: expected ',' before operand 2 of 'add', got '$m2'"},
    {"nop_operand", ".text\nnop $m1", "t.s:2:5: 'nop' takes no operands, got '$m1'"},
    {"fp8_format", ".text\namp.f8 $a0:3, $a4:5, 0, f143, f999", "t.s:2:31: expected an FP8 format f143 or f152, got 'f999'"},
    {"same_slot", ".text\n{ add $m1, $m1, $m1 ; sub $m1, $m1, $m1 }",
     "t.s:2:23: both instructions of the bundle are main-slot instructions ('add' and 'sub')"},
    {"same_register", ".text\n{ ld128 $a0:3, $m1, 0 ; f32v4add $a0:3, $a4:7, $a8:11 }",
     "t.s:2:1: both instructions of the bundle write $a0"},
    {"unclosed_bundle", ".text\n{ nop ; fnop", "t.s:2:13: expected '}' to close the bundle, got end of line"},
    {"after_bundle", ".text\n{ nop ; fnop } x", "t.s:2:16: unexpected 'x' after the bundle"},
    {"not_a_statement", ".text\n42", "t.s:2:1: expected an instruction, a directive or a label, got '42'"},
    {"unknown_directive", ".frob 1", "t.s:1:1: unknown directive '.frob'"},
    {"symbol_as_immediate", ".text\naddi $m1, $m1, foo", "t.s:2:16: expected a constant (s16), got symbol 'foo'"},
    {"branch_constant", ".text\nbr 5", "t.s:2:4: expected a label or '.+N' (N bundles) as the branch target, got a constant"},
    {"branch_dot", ".text\nbr . * 2", "t.s:2:6: expected '+' or '-' after '.' in a branch target, got '*'"},
    {"branch_misaligned", ".text\nloop: nop\nbr loop+4", "t.s:3:1: branch target 'loop'+4 is not at a bundle boundary"},
    {"setzi_dot", ".text\nsetzi $m1, .", "t.s:2:12: '.' cannot be used as an address here; define a label"},
    {"duplicate_label", ".text\na: nop\na: nop", "t.s:3:1: symbol 'a' is already defined at .text+0x0"},
    {"label_is_constant", ".equ a, 1\n.text\na: nop", "t.s:3:1: 'a' cannot be a label: it is an .equ constant"},
    {"equ_twice", ".equ A, 1\n.equ A, 2", "t.s:2:6: 'A' is already defined"},
    {"equ_symbol", ".equ A, foo", "t.s:1:9: expected a constant value, got symbol 'foo' (a constant is needed here)"},
    {"instruction_in_data", ".data\nnop", "t.s:2:1: instructions must be in an executable section, not '.data'"},
    {"no_section", "nop", "t.s:1:1: an instruction before any section (use .text, .data or .section)"},
    {"misaligned_bundle", ".text\n.byte 1\nnop", "t.s:3:1: bundle at offset 0x1 of '.text' is not 8-byte aligned (use .align 8)"},
    {"unterminated_string", ".section \"abc", "t.s:1:10: unterminated string"},
    {"section_flag", ".section .k, \"q\"",
     "t.s:1:14: unknown section flag 'q' (expected x = code, s = standard memory, i = interleaved memory)"},
    {"code_interleaved", ".section .k, \"xi\"", "t.s:1:14: a code section cannot be in interleaved memory"},
    {"section_reopened", ".section .k, \"x\"\n.section .k, \"i\"",
     "t.s:2:10: section '.k' reopened with other flags than it was first given"},
    {"word_range", ".data\n.word 0x100000000", "t.s:2:7: value 4294967296 does not fit .word (-2147483648..4294967295)"},
    {"byte_range", ".data\n.byte 1, 256", "t.s:2:10: value 256 does not fit .byte (-128..255)"},
    {"half_symbol", ".data\n.half foo", "t.s:2:7: only .word can hold an address, not .half"},
    {"float_text", ".data\n.float abc", "t.s:2:8: expected a decimal number, inf or nan that fits FP32, got 'abc'"},
    {"float_range", ".data\n.float 1e40", "t.s:2:8: expected a decimal number, inf or nan that fits FP32, got '1e40'"},
    {"align", ".data\n.align 3", "t.s:2:8: alignment 3 is not a power of two up to 2^20"},
    {"zero_negative", ".data\n.zero -1", "t.s:2:7: byte count -1 is outside 0..2^32-1"},
    {"zero_huge", ".data\n.zero 0x1000000", "t.s:2:1: section '.data' grows past 638976 bytes"},
    {"type_kind", ".type f, @thing", "t.s:1:11: expected @kernel, @function or @object, got 'thing'"},
    {"size_missing_comma", ".size f 4", "t.s:1:9: expected ',' after the symbol name, got '4'"},
    {"global_name", ".global 12", "t.s:1:9: expected a symbol name, got '12'"},
    {"trailing", ".text\n.align 8 9", "t.s:2:10: unexpected '9' at the end of the line"},
    {"bad_number", ".data\n.word 12abc",
     "t.s:2:7: expected an integer (decimal, 0x hex or 0b binary, below 2^63), got '12abc'"},
    {"division_by_zero", ".equ A, 4 / (2 - 2)", "t.s:1:11: division by zero"},
    {"shift_range", ".equ A, 1 << 64", "t.s:1:11: shift by 64 is outside 0..63"},
    {"symbol_times", ".data\n.word foo * 2", "t.s:2:11: '*' cannot apply to symbol 'foo'"},
    {"symbol_difference", ".data\na: .word 0\n.text\nb: nop\n.data\n.word a - b",
     "t.s:6:9: cannot subtract 'b' from 'a': only labels of one section defined above subtract"},
    {"unclosed_parenthesis", ".equ A, (1 + 2", "t.s:1:15: expected ')', got end of line"},
    {"unexpected_character", ".text\nnop ?", "t.s:2:5: unexpected character '?'"},
    {"control_byte", ".text\nnop \x01", "t.s:2:5: unexpected byte 0x01"},
    {"backslash_outside_macro", ".text\nloop\\@: nop", "t.s:2:5: '\\@' outside a macro body"},
    {"macro_argument_count", ".macro m a, b\nnop\n.endm\n.text\nm 1", "t.s:5:1: macro 'm' takes 2 argument(s), got 1"},
    {"macro_unknown_argument", ".macro m a\naddi $m1, $m1, \\b\n.endm\n.text\nm 1",
     "t.s:2:16: '\\b' is not an argument of the macro being expanded (in macro 'm' used at t.s:5:1)"},
    {"macro_error_inside", ".macro m a\naddi $m1, $m1, \\a\n.endm\n.text\nm 99999",
     "t.s:2:16: immediate 99999 is outside -32768..32767 (in macro 'm' used at t.s:5:1)"},
    {"endm_alone", ".endm", "t.s:1:1: '.endm' without a '.macro'"},
    {"exchange_group_tile", ".exchange_group 1, 70000", "t.s:1:20: tile 70000 is outside 0..65535"},
    {"exchange_group_empty", ".exchange_group", "t.s:1:16: expected a number, a name or '(', got end of line"},
    {"macro_unterminated", ".macro m\nnop", "t.s:1:1: '.macro m' has no '.endm'"},
    {"macro_nested_definition", ".macro m\n.macro n\n.endm\n.endm", "t.s:2:1: a '.macro' cannot be defined inside another"},
    {"macro_twice", ".macro m\n.endm\n.macro m\n.endm", "t.s:3:8: macro 'm' is already defined"},
    {"macro_parameter_twice", ".macro m a, a\n.endm", "t.s:1:13: macro parameter 'a' is named twice"},
    {"macro_recursive", ".macro m\nm\n.endm\n.text\nm",
     "t.s:2:1: macros nested deeper than 64 (does 'm' use itself?) (in macro 'm' used at t.s:2:1"},
    {"macro_after_label", "x: .macro m\n.endm", "t.s:1:4: '.macro' must start its line (no label before it)"},
    {"include_missing", ".include \"nothere.s\"", "t.s:1:10: cannot read 'nothere.s'"},
    {"include_not_string", ".include nothere.s", "t.s:1:10: expected a quoted file name after '.include', got 'nothere.s'"},
    {"include_cycle", ".include \"loop.s\"", "loop.s:1:10: 'loop.s' includes itself"},
    {"include_error_place", ".include \"bad.s\"", "bad.s:2:1: unknown instruction 'frob'"},
};

class AssemblerErrors : public testing::TestWithParam<BadSource> {};

TEST_P(AssemblerErrors, OneLineWithPlace) {
  const std::map<std::string, std::string> files = {
      {"loop.s", ".include \"loop.s\"\n"},
      {"bad.s", ".text\nfrob\n"},
  };
  FileReader reader = [&](const std::string& path) -> std::optional<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  };
  try {
    assemble_text(GetParam().source, "t.s", reader);
    FAIL() << "no error for: " << GetParam().source;
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput);
    const std::string what = error.what();
    EXPECT_EQ(what.find('\n'), std::string::npos);
    EXPECT_TRUE(what.starts_with(GetParam().error)) << "got:      " << what << "\nexpected: " << GetParam().error;
  }
}

INSTANTIATE_TEST_SUITE_P(All, AssemblerErrors, testing::ValuesIn(kBadSources),
                         [](const testing::TestParamInfo<BadSource>& info) { return info.param.name; });

TEST(AssemblerDeepExpressions, AreRejectedNotOverflowed) {
  for (const char* op : {"(", "-"}) {
    std::string source = ".equ A, ";
    for (int i = 0; i < 10000; ++i) source += op;
    source += "1";
    try {
      assemble_text(source, "t.s");
      FAIL();
    } catch (const Error& error) {
      EXPECT_TRUE(std::string(error.what()).starts_with("t.s:1:109: ")) << error.what();
      EXPECT_NE(std::string(error.what()).find("nested deeper than 100"), std::string::npos) << error.what();
    }
  }
}

TEST(AssemblerMacroExplosion, IsStoppedEarly) {
  // Each level doubles the lines: 2^30 nops if nothing stopped it.
  std::string source = ".macro m0\nnop\n.endm\n";
  for (int level = 1; level <= 30; ++level)
    source += fmt::format(".macro m{0}\nm{1}\nm{1}\n.endm\n", level, level - 1);
  source += ".text\nm30\n";
  try {
    assemble_text(source, "t.s");
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("macros expand to more than 200000 lines"), std::string::npos)
        << error.what();
  }
}

TEST(AssemblerFileErrors, MissingFileNamesIt) {
  try {
    assemble_file("/nonexistent/dir/x.s");
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "/nonexistent/dir/x.s: cannot read the file");
    EXPECT_EQ(error.exit_code(), 2);
  }
}

}  // namespace
}  // namespace tilec::isa
