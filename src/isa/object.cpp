#include "isa/object.h"

#include <fmt/format.h>

#include <cstring>

namespace tilec::isa {

namespace {

// The field each relocation kind writes; an instruction field with the same
// kind of operand, place and width can take a symbol.
struct RelocationField {
  RelocationKind kind;
  OperandKind operand;
  std::uint8_t lsb;
  std::uint8_t width;
};

constexpr RelocationField kInstructionRelocations[] = {
    {RelocationKind::Abs20, OperandKind::UImm, 12, 20},
    {RelocationKind::Pc24, OperandKind::Label, 8, 24},
    {RelocationKind::Pc20, OperandKind::Label, 12, 20},
};

const RelocationField* field_of(RelocationKind kind) {
  for (const RelocationField& field : kInstructionRelocations)
    if (field.kind == kind) return &field;
  return nullptr;
}

}  // namespace

const char* relocation_kind_name(RelocationKind kind) {
  switch (kind) {
    case RelocationKind::Abs20: return "abs20";
    case RelocationKind::Pc24: return "pc24";
    case RelocationKind::Pc20: return "pc20";
    case RelocationKind::Abs32: return "abs32";
  }
  return "?";
}

const char* symbol_kind_name(SymbolKind kind) {
  switch (kind) {
    case SymbolKind::Function: return "function";
    case SymbolKind::Kernel: return "kernel";
    case SymbolKind::Data: return "object";
  }
  return "?";
}

const char* memory_wish_name(MemoryWish wish) {
  switch (wish) {
    case MemoryWish::Any: return "any";
    case MemoryWish::Standard: return "standard";
    case MemoryWish::Interleaved: return "interleaved";
  }
  return "?";
}

std::optional<SymbolOperand> symbol_operand(const InstructionSpec& spec) {
  const FormatSpec& format = format_spec(spec.format);
  for (int i = 0; i < format.field_count; ++i) {
    const FieldSpec& field = format.fields[i];
    for (const RelocationField& candidate : kInstructionRelocations)
      if (candidate.operand == field.kind && candidate.lsb == field.lsb &&
          candidate.width == field.width)
        return SymbolOperand{i, candidate.kind};
  }
  return std::nullopt;
}

std::optional<std::string> patch_word(std::uint32_t& word, RelocationKind kind, std::int64_t value) {
  if (kind == RelocationKind::Abs32) {
    if (value < -(std::int64_t{1} << 31) || value >= (std::int64_t{1} << 32))
      return fmt::format("value {:#x} does not fit 32 bits", value);
    word = static_cast<std::uint32_t>(value);
    return std::nullopt;
  }
  const RelocationField* field = field_of(kind);
  const std::int64_t span = std::int64_t{1} << field->width;
  if (field->operand == OperandKind::UImm) {
    if (value < 0 || value >= span)
      return fmt::format("address {:#x} is outside 0..{:#x}", value, span - 1);
  } else if (value < -span / 2 || value >= span / 2) {
    return fmt::format("offset {} bundles is outside {}..{}", value, -span / 2, span / 2 - 1);
  }
  const std::uint32_t mask = static_cast<std::uint32_t>(span - 1) << field->lsb;
  word = (word & ~mask) | ((static_cast<std::uint32_t>(value) << field->lsb) & mask);
  return std::nullopt;
}

std::uint32_t written_a_registers(const Instruction& instruction) {
  const InstructionSpec* spec = find_spec(instruction.opcode);
  if (!spec || std::strncmp(spec->doc, "aD", 2) != 0) return 0;
  const FormatSpec& format = format_spec(spec->format);
  if (format.field_count == 0) return 0;
  const int first = instruction.operands[0];
  switch (format.fields[0].kind) {
    case OperandKind::AReg: return 1u << first;
    case OperandKind::APair: return 3u << first;
    case OperandKind::AQuad: return 15u << first;
    default: return 0;
  }
}

}  // namespace tilec::isa
