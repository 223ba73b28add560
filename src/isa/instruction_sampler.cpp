#include "isa/instruction_sampler.h"

#include "isa/assembler.h"
#include "support/error.h"

#include <fmt/format.h>

namespace tilec::isa {

std::int64_t InstructionSampler::operand(const FieldSpec& field) {
  std::int64_t low = 0, high = 0, step = 1;
  switch (field.kind) {
    case OperandKind::MReg: high = kMRegisters - 1; break;
    case OperandKind::AReg: high = kARegisters - 1; break;
    case OperandKind::APair: high = kARegisters - 2; step = 2; break;
    case OperandKind::AQuad: high = kARegisters - 4; step = 4; break;
    case OperandKind::UImm: high = (std::int64_t{1} << field.width) - 1; break;
    case OperandKind::SImm:
    case OperandKind::Label:
      low = -(std::int64_t{1} << (field.width - 1));
      high = (std::int64_t{1} << (field.width - 1)) - 1;
      break;
    case OperandKind::Fp8Format: high = 1; break;
  }
  switch (random_() % 8) {
    case 0: return low;
    case 1: return high;
    case 2: return low <= 0 && 0 <= high ? 0 : low;
    default: return low + static_cast<std::int64_t>(random_() % ((high - low) / step + 1)) * step;
  }
}

Instruction InstructionSampler::instruction(const InstructionSpec& spec) {
  Instruction instruction{spec.opcode, {}};
  const FormatSpec& format = format_spec(spec.format);
  for (int i = 0; i < format.field_count; ++i)
    instruction.operands[i] = static_cast<std::int32_t>(operand(format.fields[i]));
  return instruction;
}

Bundle InstructionSampler::bundle() {
  const auto specs = all_instructions();
  auto pick = [&](Slot slot) {
    while (true) {
      const InstructionSpec& spec = specs[random_() % specs.size()];
      if (spec.slot == slot) return instruction(spec);
    }
  };
  return Bundle{pick(Slot::Main), pick(Slot::Float)};
}

std::uint32_t InstructionSampler::word() {
  const std::uint32_t bits = static_cast<std::uint32_t>(random_());
  if (random_() % 4 == 0) return bits;
  const auto specs = all_instructions();
  const InstructionSpec& spec = specs[random_() % specs.size()];
  // Keep only the bits some field covers, most of the time, so that the
  // word usually decodes.
  std::uint32_t covered = 0;
  const FormatSpec& format = format_spec(spec.format);
  for (int i = 0; i < format.field_count; ++i)
    covered |= ((format.fields[i].width == 32 ? ~0u : (1u << format.fields[i].width) - 1u)) << format.fields[i].lsb;
  if (random_() % 8) return (bits & covered & ~0xffu) | static_cast<std::uint8_t>(spec.opcode);
  return (bits & ~0xffu) | static_cast<std::uint8_t>(spec.opcode);
}

std::optional<std::string> bundle_round_trip_problem(const Bundle& bundle) {
  try {
    const std::uint64_t bits = encode_bundle(bundle);
    std::optional<Bundle> decoded = decode_bundle(bits);
    if (!decoded) return fmt::format("{:#018x} ({}) does not decode", bits, bundle_text(bundle));
    if (*decoded != bundle) return fmt::format("{} decodes as {}", bundle_text(bundle), bundle_text(*decoded));
    const std::string text = bundle_text(*decoded);
    const Bundle parsed = parse_bundle(text);
    const std::uint64_t again = encode_bundle(parsed);
    if (again != bits) return fmt::format("'{}' reassembles to {:#018x}, not {:#018x}", text, again, bits);
    return std::nullopt;
  } catch (const Error& error) {
    return fmt::format("{}: {}", bundle_text(bundle), error.what());
  }
}

std::optional<std::string> word_round_trip_problem(std::uint32_t word, Slot slot) {
  std::optional<Instruction> instruction = decode(word, slot);
  if (!instruction) return std::nullopt;
  try {
    const std::string text = instruction_text(*instruction);
    const Bundle parsed = parse_bundle(text);
    const Instruction& again = slot == Slot::Main ? parsed.main : parsed.flt;
    if (encode(again) != word) return fmt::format("{:#010x} prints as '{}', which encodes as {:#010x}", word, text, encode(again));
    return std::nullopt;
  } catch (const Error& error) {
    return fmt::format("{:#010x}: {}", word, error.what());
  }
}

}  // namespace tilec::isa
