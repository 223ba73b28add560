// The code builder: how tilec emits machine code without going through text.
// The compiler calls it directly; the assembler parses text into calls to it,
// so both produce objects the same way.
//
// Usage:
//   CodeBuilder code("gemm kernels");
//   code.section(".text", {.executable = true});
//   code.label("loop");
//   code.bundle(ld128pi(...), amp_f8(...));
//   code.bundle({brnz_instruction, SymbolRef{"loop"}});
//   Object object = code.finish();
//
// A branch to a label of the same section is resolved by finish(); every
// other symbol reference (setzi of an address, a branch to another section
// or object, a data word holding an address) becomes a relocation. Symbols
// referenced but never defined are left to the linker.
#pragma once

#include "isa/object.h"

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tilec::isa {

struct SymbolRef {
  std::string name;
  std::int64_t addend = 0;  // bytes
};

// One instruction; when `target` is set it supplies the instruction's
// symbol operand (see symbol_operand()), whose value in `instruction` is
// ignored.
struct Operation {
  Operation(const Instruction& instruction) : instruction(instruction) {}  // NOLINT: implicit
  Operation(const Instruction& instruction, SymbolRef target)
      : instruction(instruction), target(std::move(target)) {}

  Instruction instruction;
  std::optional<SymbolRef> target;
};

struct SectionOptions {
  bool executable = false;
  MemoryWish memory = MemoryWish::Any;
};

class CodeBuilder {
 public:
  explicit CodeBuilder(std::string object_name);

  // Makes `name` the current section, creating it on first use. Reopening a
  // section with other options is an error.
  void section(std::string_view name, const SectionOptions& options);
  int current_section() const { return current_; }
  std::uint32_t offset() const;

  // Pads to a multiple of `bytes` (a power of two), with nop bundles in code
  // where possible, and raises the section's alignment to it.
  void align(std::uint32_t bytes);

  // Defines `name` at the current offset of the current section.
  void label(std::string_view name);
  void set_global(std::string_view name);
  void set_kind(std::string_view name, SymbolKind kind);
  void set_size(std::string_view name, std::uint32_t size);
  // Where a symbol was defined so far: nullptr when it is not (yet).
  const Symbol* defined(std::string_view name) const;

  // Appends a bundle to the current (executable) section.
  void bundle(const Operation& main, const Operation& flt);
  // Appends `operation` with a nop or fnop in the other slot.
  void instruction(const Operation& operation);

  // Data, little-endian. A half or word at a naturally aligned offset raises
  // the section's alignment to its size, so it stays aligned when linked.
  void byte(std::uint8_t value);
  void half(std::uint16_t value);
  void word(std::uint32_t value);
  void word(const SymbolRef& target);
  void float32(float value);
  void zero(std::uint32_t bytes);

  // The place that errors raised from now on name ("gemm.s:12:3").
  void set_where(std::string where) { where_ = std::move(where); }

  Object finish();

 private:
  struct Fixup {
    int section;
    std::uint32_t offset;
    RelocationKind kind;
    SymbolRef target;
    std::string where;
  };

  Section& current();
  void require_section(const char* what);
  void keep_aligned(std::uint32_t bytes);
  std::vector<std::uint8_t>& bytes() { return current().bytes; }
  int symbol_index(std::string_view name);
  std::uint32_t encode_operation(const Operation& operation, Slot slot, std::uint32_t word_offset);
  void resolve_fixup(const Fixup& fixup);
  [[noreturn]] void fail(const std::string& message) const;

  Object object_;
  std::unordered_map<std::string, int> section_index_;
  std::unordered_map<std::string, int> symbol_index_;
  std::vector<Fixup> fixups_;
  std::vector<bool> kind_given_;  // per symbol: set_kind() was called
  int current_ = -1;
  std::string where_;
};

}  // namespace tilec::isa
