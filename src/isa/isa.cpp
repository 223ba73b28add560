#include "isa/isa.h"

#include "support/error.h"

#include <fmt/format.h>

#include <unordered_map>

namespace tilec::isa {

namespace {

constexpr FormatSpec kFormats[] = {
#define F(kind, lsb, width) FieldSpec{OperandKind::kind, lsb, width}
#define FORMAT(name, count, ...) FormatSpec{#name, count, {__VA_ARGS__}},
#include "isa/formats.def"
#undef FORMAT
#undef F
};

using flag::Control;
using flag::Supervisor;
using flag::Worker;

constexpr InstructionSpec kInstructions[] = {
#define INSTRUCTION(id, mnemonic, slot, format, code, flags, doc) \
  InstructionSpec{Opcode::id, mnemonic, Slot::slot, Format::format, flags, doc},
#include "isa/instructions.def"
#undef INSTRUCTION
};

struct Lookup {
  std::array<const InstructionSpec*, 256> by_opcode{};
  std::unordered_map<std::string_view, const InstructionSpec*> by_mnemonic;

  Lookup() {
    for (const InstructionSpec& spec : kInstructions) {
      by_opcode[static_cast<std::uint8_t>(spec.opcode)] = &spec;
      by_mnemonic.emplace(spec.mnemonic, &spec);
    }
  }
};

const Lookup& lookup() {
  static const Lookup table;
  return table;
}

std::uint32_t field_mask(const FieldSpec& field) {
  return field.width == 32 ? ~0u : ((1u << field.width) - 1u);
}

}  // namespace

const FormatSpec& format_spec(Format format) { return kFormats[static_cast<int>(format)]; }

std::span<const InstructionSpec> all_instructions() { return kInstructions; }

const InstructionSpec* find_spec(Opcode opcode) {
  return lookup().by_opcode[static_cast<std::uint8_t>(opcode)];
}

const InstructionSpec* find_spec(std::string_view mnemonic) {
  auto it = lookup().by_mnemonic.find(mnemonic);
  return it == lookup().by_mnemonic.end() ? nullptr : it->second;
}

Instruction nop() { return Instruction{Opcode::Nop, {}}; }
Instruction fnop() { return Instruction{Opcode::Fnop, {}}; }

std::optional<std::string> check_operand(const InstructionSpec& spec, int index,
                                         std::int64_t value) {
  const FormatSpec& format = format_spec(spec.format);
  if (index < 0 || index >= format.field_count) return fmt::format("{} takes {} operands", spec.mnemonic, format.field_count);
  const FieldSpec& field = format.fields[index];
  const std::int64_t span = std::int64_t{1} << field.width;
  switch (field.kind) {
    case OperandKind::MReg:
      if (value < 0 || value >= kMRegisters) return "expected a register $m0..$m15";
      return std::nullopt;
    case OperandKind::AReg:
      if (value < 0 || value >= kARegisters) return "expected a register $a0..$a31";
      return std::nullopt;
    case OperandKind::APair:
      if (value < 0 || value >= kARegisters || value % 2) return "expected a register pair $aN:N+1 with N even";
      return std::nullopt;
    case OperandKind::AQuad:
      if (value < 0 || value >= kARegisters || value % 4) return "expected a register quad $aN:N+3 with N a multiple of 4";
      return std::nullopt;
    case OperandKind::UImm:
      if (value < 0 || value >= span) return fmt::format("immediate {} is outside 0..{}", value, span - 1);
      return std::nullopt;
    case OperandKind::SImm:
    case OperandKind::Label:
      if (value < -span / 2 || value >= span / 2)
        return fmt::format("{} {} is outside {}..{}", field.kind == OperandKind::Label ? "offset" : "immediate",
                           value, -span / 2, span / 2 - 1);
      return std::nullopt;
    case OperandKind::Fp8Format:
      if (value < 0 || value > 1) return "expected an FP8 format f143 or f152";
      return std::nullopt;
  }
  return "unknown operand kind";
}

std::uint32_t encode(const Instruction& instruction) {
  const InstructionSpec* spec = find_spec(instruction.opcode);
  if (!spec) throw_failure("encode", "opcode {:#04x} is not in the instruction table",
                           static_cast<int>(instruction.opcode));
  const FormatSpec& format = format_spec(spec->format);
  std::uint32_t word = static_cast<std::uint8_t>(instruction.opcode);
  for (int i = 0; i < format.field_count; ++i) {
    if (auto problem = check_operand(*spec, i, instruction.operands[i]))
      throw_failure("encode", "{} operand {}: {}", spec->mnemonic, i + 1, *problem);
    const FieldSpec& field = format.fields[i];
    word |= (static_cast<std::uint32_t>(instruction.operands[i]) & field_mask(field)) << field.lsb;
  }
  return word;
}

std::optional<Instruction> decode(std::uint32_t word, Slot slot) {
  const InstructionSpec* spec = find_spec(static_cast<Opcode>(word & 0xffu));
  if (!spec || spec->slot != slot) return std::nullopt;
  const FormatSpec& format = format_spec(spec->format);
  Instruction instruction{spec->opcode, {}};
  std::uint32_t covered = 0xffu;
  for (int i = 0; i < format.field_count; ++i) {
    const FieldSpec& field = format.fields[i];
    std::uint32_t raw = (word >> field.lsb) & field_mask(field);
    covered |= field_mask(field) << field.lsb;
    std::int32_t value = static_cast<std::int32_t>(raw);
    if ((field.kind == OperandKind::SImm || field.kind == OperandKind::Label) &&
        (raw >> (field.width - 1)) & 1u)
      value = static_cast<std::int32_t>(raw | ~field_mask(field));
    if (check_operand(*spec, i, value)) return std::nullopt;
    instruction.operands[i] = value;
  }
  if (word & ~covered) return std::nullopt;
  return instruction;
}

std::uint64_t encode_bundle(const Bundle& bundle) {
  const InstructionSpec* main = find_spec(bundle.main.opcode);
  const InstructionSpec* flt = find_spec(bundle.flt.opcode);
  if (!main || main->slot != Slot::Main)
    throw_failure("encode", "the first instruction of a bundle must be a main-slot instruction");
  if (!flt || flt->slot != Slot::Float)
    throw_failure("encode", "the second instruction of a bundle must be a float-slot instruction");
  return static_cast<std::uint64_t>(encode(bundle.main)) |
         (static_cast<std::uint64_t>(encode(bundle.flt)) << 32);
}

std::optional<Bundle> decode_bundle(std::uint64_t bits) {
  auto main = decode(static_cast<std::uint32_t>(bits), Slot::Main);
  auto flt = decode(static_cast<std::uint32_t>(bits >> 32), Slot::Float);
  if (!main || !flt) return std::nullopt;
  return Bundle{*main, *flt};
}

std::string operand_text(OperandKind kind, std::int32_t value) {
  switch (kind) {
    case OperandKind::MReg: return value == kMZero ? "$mzero" : fmt::format("$m{}", value);
    case OperandKind::AReg: return fmt::format("$a{}", value);
    case OperandKind::APair: return fmt::format("$a{}:{}", value, value + 1);
    case OperandKind::AQuad: return fmt::format("$a{}:{}", value, value + 3);
    case OperandKind::UImm:
    case OperandKind::SImm: return fmt::format("{}", value);
    case OperandKind::Label: return value >= 0 ? fmt::format(".+{}", value) : fmt::format(".{}", value);
    case OperandKind::Fp8Format: return value ? "f152" : "f143";
  }
  return "?";
}

std::string instruction_text(const Instruction& instruction) {
  const InstructionSpec* spec = find_spec(instruction.opcode);
  if (!spec) return fmt::format(".invalid {:#04x}", static_cast<int>(instruction.opcode));
  const FormatSpec& format = format_spec(spec->format);
  std::string text = spec->mnemonic;
  for (int i = 0; i < format.field_count; ++i) {
    text += i == 0 ? " " : ", ";
    text += operand_text(format.fields[i].kind, instruction.operands[i]);
  }
  return text;
}

std::string bundle_text(const Bundle& bundle) {
  bool main_is_nop = bundle.main.opcode == Opcode::Nop;
  bool float_is_nop = bundle.flt.opcode == Opcode::Fnop;
  if (float_is_nop) return instruction_text(bundle.main);
  if (main_is_nop) return instruction_text(bundle.flt);
  return "{ " + instruction_text(bundle.main) + " ; " + instruction_text(bundle.flt) + " }";
}

}  // namespace tilec::isa
