#include "isa/isa_doc.h"

#include <fmt/format.h>

namespace tilec::isa {

std::string operand_syntax(const FieldSpec& field) {
  switch (field.kind) {
    case OperandKind::MReg: return "$m";
    case OperandKind::AReg: return "$a";
    case OperandKind::APair: return "$a:pair";
    case OperandKind::AQuad: return "$a:quad";
    case OperandKind::UImm: return fmt::format("u{}", field.width);
    case OperandKind::SImm: return fmt::format("s{}", field.width);
    case OperandKind::Label: return "target";
    case OperandKind::Fp8Format: return "fp8";
  }
  return "?";
}

std::string operands_syntax(const InstructionSpec& spec) {
  const FormatSpec& format = format_spec(spec.format);
  std::string text;
  for (int i = 0; i < format.field_count; ++i) {
    if (i) text += ", ";
    text += operand_syntax(format.fields[i]);
  }
  return text;
}

namespace {

std::string flags_text(std::uint32_t flags) {
  std::string text;
  auto add = [&](std::uint32_t bit, const char* name) {
    if (!(flags & bit)) return;
    if (!text.empty()) text += ", ";
    text += name;
  };
  add(flag::Control, "control");
  add(flag::Supervisor, "supervisor");
  add(flag::Worker, "worker");
  return text;
}

std::string table_cell(std::string_view text) {
  std::string cell;
  for (char c : text) {
    if (c == '|') cell += '\\';
    cell += c;
  }
  return cell;
}

}  // namespace

std::string instruction_reference_markdown() {
  std::string text = std::string(kInstructionReferenceHeading) + "\n\n";
  text +=
      "<!-- Generated from src/isa/instructions.def and formats.def by `tilec isa doc`; do not\n"
      "edit by hand. tests/isa/doc_test.cpp fails when this differs from the table;\n"
      "`TILEC_BLESS=1 build/release/tests/isa_tests --gtest_filter='InstructionReference*'`\n"
      "rewrites it. -->\n\n"
      "Operands: `$m` an integer register, `$a` an `$a` register, `$a:pair` a pair\n"
      "`$aN:N+1` (N even), `$a:quad` a quad `$aN:N+3` (N a multiple of 4), `uN` / `sN`\n"
      "an unsigned / signed immediate of N bits, `target` a label or `.+N` (N bundles\n"
      "from this bundle), `fp8` an FP8 format (`f143` or `f152`). Flags: `control`\n"
      "changes the pc (not allowed in a `rpt` body); `supervisor` / `worker`: only that\n"
      "context may execute it.\n\n"
      "| mnemonic | slot | operands | opcode | format | flags | meaning |\n"
      "| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const InstructionSpec& spec : all_instructions()) {
    const std::string operands = operands_syntax(spec);
    text += fmt::format("| `{}` | {} | {} | `{:#04x}` | {} | {} | {} |\n", spec.mnemonic,
                        spec.slot == Slot::Main ? "main" : "float",
                        operands.empty() ? "" : "`" + operands + "`", static_cast<int>(spec.opcode),
                        format_spec(spec.format).name, flags_text(spec.flags), table_cell(spec.doc));
  }
  return text;
}

}  // namespace tilec::isa
