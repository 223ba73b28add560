// Relocatable objects: what the code builder (and so the assembler) produces
// and the linker consumes.
//
// An object holds sections of bytes at offsets not yet fixed, the symbols
// defined in them (or referenced but defined elsewhere), and relocations:
// places whose final value depends on where a symbol ends up. Nothing here
// knows an address; the linker decides them.
#pragma once

#include "isa/isa.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tilec::isa {

// Where a section would like to live. Code always goes to standard memory.
enum class MemoryWish : std::uint8_t { Any, Standard, Interleaved };

struct Section {
  std::string name;
  std::uint32_t alignment = 8;  // a power of two
  std::vector<std::uint8_t> bytes;
  bool executable = false;
  MemoryWish memory = MemoryWish::Any;
};

enum class SymbolKind : std::uint8_t { Function, Kernel, Data };

struct Symbol {
  static constexpr int kUndefined = -1;

  std::string name;
  int section = kUndefined;  // index into Object::sections, or kUndefined
  std::uint32_t offset = 0;  // within the section
  std::uint32_t size = 0;
  bool global = false;
  SymbolKind kind = SymbolKind::Function;

  bool defined() const { return section != kUndefined; }
};

// How a relocation patches its 32-bit word (at Relocation::offset) with the
// target address T = symbol address + addend:
//   Abs20: bits 31..12 (setzi's immediate) = T, which must be below 2^20;
//   Pc24:  bits 31..8 (br) = (T - bundle) / 8, signed;
//   Pc20:  bits 31..12 (brz, brnz, call) = (T - bundle) / 8, signed;
//   Abs32: the whole word = T.
// `bundle` is the address of the bundle holding the word; T must then be
// bundle-aligned.
enum class RelocationKind : std::uint8_t { Abs20, Pc24, Pc20, Abs32 };

struct Relocation {
  int section = 0;           // index into Object::sections
  std::uint32_t offset = 0;  // byte offset of the patched word in the section
  RelocationKind kind = RelocationKind::Abs32;
  int symbol = 0;            // index into Object::symbols
  std::int64_t addend = 0;   // bytes
};

struct Object {
  std::string name;  // for messages: the source file, or what built it
  std::vector<Section> sections;
  std::vector<Symbol> symbols;
  std::vector<Relocation> relocations;
  // Exchange groups the source declares (.exchange_group), in order: the
  // tiles a multicast to group g reaches.
  std::vector<std::vector<std::uint32_t>> exchange_groups;
};

const char* relocation_kind_name(RelocationKind kind);
const char* symbol_kind_name(SymbolKind kind);
const char* memory_wish_name(MemoryWish wish);

// The operand of an instruction that may name a symbol, and the relocation
// that fills it: setzi's 20-bit immediate (Abs20), a branch target (Pc24 or
// Pc20). nullopt when no operand of the instruction can take a symbol.
struct SymbolOperand {
  int operand;
  RelocationKind kind;
};
std::optional<SymbolOperand> symbol_operand(const InstructionSpec& spec);

// Writes `value` into the field a relocation of `kind` patches. `value` is
// the target address for Abs20/Abs32 and the offset in bundles for
// Pc24/Pc20; the error says why it does not fit (nullopt when it did).
std::optional<std::string> patch_word(std::uint32_t& word, RelocationKind kind, std::int64_t value);

// The $a registers an instruction writes, as a bit mask ($aN = bit N). An
// instruction writes its first operand when its description starts with
// "aD" (instructions.def names the written $a operand aD, sources aS/aA/aB).
std::uint32_t written_a_registers(const Instruction& instruction);

}  // namespace tilec::isa
