// The tilec instruction set: opcodes, operand formats and instruction specs,
// all expanded from formats.def and instructions.def (the single source of
// truth), plus encoding and decoding of instructions and bundles.
//
// A bundle is 8 bytes at an 8-byte-aligned address: the low 32-bit word is a
// main-slot instruction (integer, memory, control), the high word a
// float-slot instruction (floating point, AMP). Both issue together; every
// operand is read before any result is written.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tilec::isa {

enum class Slot : std::uint8_t { Main, Float };

enum class OperandKind : std::uint8_t {
  MReg,       // $m0..$m15 ($m15 = $mzero)
  AReg,       // $a0..$a31
  APair,      // $aN:N+1, N even
  AQuad,      // $aN:N+3, N a multiple of 4
  UImm,       // unsigned immediate
  SImm,       // signed immediate
  Label,      // signed offset in bundles from the instruction's bundle
  Fp8Format,  // f143 or f152
};

struct FieldSpec {
  OperandKind kind;
  std::uint8_t lsb;
  std::uint8_t width;
};

enum class Format : std::uint8_t {
#define FORMAT(name, count, ...) name,
#include "isa/formats.def"
#undef FORMAT
};

struct FormatSpec {
  const char* name;
  std::uint8_t field_count;
  std::array<FieldSpec, 5> fields;
};

enum class Opcode : std::uint8_t {
  Invalid = 0,
#define INSTRUCTION(id, mnemonic, slot, format, code, flags, doc) id = code,
#include "isa/instructions.def"
#undef INSTRUCTION
};

namespace flag {
constexpr std::uint32_t Control = 1u << 0;
constexpr std::uint32_t Supervisor = 1u << 1;
constexpr std::uint32_t Worker = 1u << 2;
}  // namespace flag

struct InstructionSpec {
  Opcode opcode;
  const char* mnemonic;
  Slot slot;
  Format format;
  std::uint32_t flags;
  const char* doc;
};

constexpr int kMaxOperands = 5;
constexpr std::uint32_t kBundleBytes = 8;
constexpr int kMRegisters = 16;
constexpr int kMZero = 15;
constexpr int kARegisters = 32;

const FormatSpec& format_spec(Format format);
// Every instruction, in table order.
std::span<const InstructionSpec> all_instructions();
// nullptr for an opcode that is not in the table.
const InstructionSpec* find_spec(Opcode opcode);
const InstructionSpec* find_spec(std::string_view mnemonic);
inline const InstructionSpec& spec_of(Opcode opcode) { return *find_spec(opcode); }

// A decoded instruction: the opcode and its operand values in assembly order
// (register numbers, immediates sign-extended, label offsets in bundles).
struct Instruction {
  Opcode opcode = Opcode::Invalid;
  std::array<std::int32_t, kMaxOperands> operands{};

  bool operator==(const Instruction&) const = default;
};

struct Bundle {
  Instruction main;
  Instruction flt;

  bool operator==(const Bundle&) const = default;
};

Instruction nop();
Instruction fnop();

// Why an operand value cannot be encoded, or nullopt when it can.
std::optional<std::string> check_operand(const InstructionSpec& spec, int index,
                                         std::int64_t value);

// Encodes an instruction whose operands are all valid (see check_operand);
// throws tilec::Error otherwise.
std::uint32_t encode(const Instruction& instruction);
// nullopt when the word is not a valid instruction of `slot`: unknown opcode,
// wrong slot, nonzero unused bits, misaligned register pair or quad.
std::optional<Instruction> decode(std::uint32_t word, Slot slot);

std::uint64_t encode_bundle(const Bundle& bundle);
std::optional<Bundle> decode_bundle(std::uint64_t bits);

// Assembly text of one operand / instruction / bundle, e.g. "$a4:7",
// "amp.f8 $a0:3, $a4:5, 1, f143, f143", "{ ld128pi $a0:3, $m2, 16 ; amp.f8 ... }".
// Label operands print as ".+N" / ".-N" (bundles) unless a name is supplied.
std::string operand_text(OperandKind kind, std::int32_t value);
std::string instruction_text(const Instruction& instruction);
std::string bundle_text(const Bundle& bundle);

}  // namespace tilec::isa
