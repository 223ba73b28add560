#include "isa/code_builder.h"

#include "support/error.h"
#include "target/machine.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace tilec::isa {

namespace {

// No section can usefully be larger than a tile's memory; stopping there
// keeps a runaway `.zero` or `.align` from exhausting the host.
std::uint32_t max_section_bytes() { return ipu21().memory_bytes(); }

void append_word(std::vector<std::uint8_t>& bytes, std::uint32_t word) {
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<std::uint8_t>(word >> (8 * i)));
}

std::uint32_t read_word(const std::vector<std::uint8_t>& bytes, std::uint32_t offset) {
  std::uint32_t word = 0;
  for (int i = 0; i < 4; ++i) word |= std::uint32_t{bytes[offset + i]} << (8 * i);
  return word;
}

void write_word(std::vector<std::uint8_t>& bytes, std::uint32_t offset, std::uint32_t word) {
  for (int i = 0; i < 4; ++i) bytes[offset + i] = static_cast<std::uint8_t>(word >> (8 * i));
}

bool is_pc_relative(RelocationKind kind) {
  return kind == RelocationKind::Pc24 || kind == RelocationKind::Pc20;
}

}  // namespace

CodeBuilder::CodeBuilder(std::string object_name) { object_.name = std::move(object_name); }

void CodeBuilder::fail(const std::string& message) const {
  throw Error(ErrorKind::BadInput, where_.empty() ? object_.name : where_, message);
}

Section& CodeBuilder::current() { return object_.sections[current_]; }

void CodeBuilder::require_section(const char* what) {
  if (current_ < 0) fail(fmt::format("{} before any section (use .text, .data or .section)", what));
}

void CodeBuilder::section(std::string_view name, const SectionOptions& options) {
  if (name.empty()) fail("a section needs a name");
  auto [it, inserted] = section_index_.emplace(std::string(name), static_cast<int>(object_.sections.size()));
  if (inserted) {
    Section section;
    section.name = std::string(name);
    section.executable = options.executable;
    section.memory = options.executable ? MemoryWish::Standard : options.memory;
    section.alignment = options.executable ? kBundleBytes : 1;
    object_.sections.push_back(std::move(section));
  } else {
    const Section& existing = object_.sections[it->second];
    const MemoryWish memory = options.executable ? MemoryWish::Standard : options.memory;
    if (existing.executable != options.executable || existing.memory != memory)
      fail(fmt::format("section '{}' reopened with other flags than it was first given", name));
  }
  current_ = it->second;
}

std::uint32_t CodeBuilder::offset() const {
  return current_ < 0 ? 0 : static_cast<std::uint32_t>(object_.sections[current_].bytes.size());
}

void CodeBuilder::align(std::uint32_t alignment) {
  require_section(".align");
  if (alignment == 0 || !std::has_single_bit(alignment) || alignment > max_section_bytes())
    fail(fmt::format("alignment {} is not a power of two up to {}", alignment, max_section_bytes()));
  Section& section = current();
  section.alignment = std::max(section.alignment, alignment);
  std::uint32_t padding = (alignment - offset() % alignment) % alignment;
  if (section.executable && offset() % kBundleBytes == 0) {
    for (; padding >= kBundleBytes; padding -= kBundleBytes) bundle(nop(), fnop());
  }
  zero(padding);
}

int CodeBuilder::symbol_index(std::string_view name) {
  auto [it, inserted] = symbol_index_.emplace(std::string(name), static_cast<int>(object_.symbols.size()));
  if (inserted) {
    Symbol symbol;
    symbol.name = std::string(name);
    object_.symbols.push_back(std::move(symbol));
    kind_given_.push_back(false);
  }
  return it->second;
}

void CodeBuilder::label(std::string_view name) {
  require_section("a label");
  if (name.empty()) fail("a label needs a name");
  Symbol& symbol = object_.symbols[symbol_index(name)];
  if (symbol.defined())
    fail(fmt::format("symbol '{}' is already defined at {}+{:#x}", name,
                     object_.sections[symbol.section].name, symbol.offset));
  symbol.section = current_;
  symbol.offset = offset();
  if (!kind_given_[symbol_index(name)])
    symbol.kind = current().executable ? SymbolKind::Function : SymbolKind::Data;
}

void CodeBuilder::set_global(std::string_view name) { object_.symbols[symbol_index(name)].global = true; }

void CodeBuilder::set_kind(std::string_view name, SymbolKind kind) {
  int index = symbol_index(name);
  object_.symbols[index].kind = kind;
  kind_given_[index] = true;
}

void CodeBuilder::set_size(std::string_view name, std::uint32_t size) {
  object_.symbols[symbol_index(name)].size = size;
}

const Symbol* CodeBuilder::defined(std::string_view name) const {
  auto it = symbol_index_.find(std::string(name));
  if (it == symbol_index_.end() || !object_.symbols[it->second].defined()) return nullptr;
  return &object_.symbols[it->second];
}

std::uint32_t CodeBuilder::encode_operation(const Operation& operation, Slot slot,
                                            std::uint32_t word_offset) {
  const InstructionSpec* spec = find_spec(operation.instruction.opcode);
  if (!spec) fail(fmt::format("opcode {:#04x} is not an instruction", static_cast<int>(operation.instruction.opcode)));
  if (spec->slot != slot)
    fail(fmt::format("'{}' is a {}-slot instruction, placed in the {} slot", spec->mnemonic,
                     spec->slot == Slot::Main ? "main" : "float", slot == Slot::Main ? "main" : "float"));
  Instruction instruction = operation.instruction;
  std::optional<SymbolOperand> site;
  if (operation.target) {
    site = symbol_operand(*spec);
    if (!site) fail(fmt::format("'{}' has no operand that can name a symbol", spec->mnemonic));
    instruction.operands[site->operand] = 0;
  }
  const FormatSpec& format = format_spec(spec->format);
  for (int i = 0; i < format.field_count; ++i)
    if (auto problem = check_operand(*spec, i, instruction.operands[i]))
      fail(fmt::format("{} operand {}: {}", spec->mnemonic, i + 1, *problem));
  if (site)
    fixups_.push_back(Fixup{current_, word_offset, site->kind, *operation.target, where_});
  return encode(instruction);
}

void CodeBuilder::bundle(const Operation& main, const Operation& flt) {
  require_section("an instruction");
  if (!current().executable)
    fail(fmt::format("instructions must be in an executable section, not '{}'", current().name));
  if (offset() % kBundleBytes)
    fail(fmt::format("bundle at offset {:#x} of '{}' is not 8-byte aligned (use .align 8)", offset(),
                     current().name));
  if (std::uint32_t clash = written_a_registers(main.instruction) & written_a_registers(flt.instruction))
    fail(fmt::format("both instructions of the bundle write $a{}", std::countr_zero(clash)));
  const std::uint32_t at = offset();
  const std::uint32_t main_word = encode_operation(main, Slot::Main, at);
  const std::uint32_t float_word = encode_operation(flt, Slot::Float, at + 4);
  if (at + kBundleBytes > max_section_bytes())
    fail(fmt::format("section '{}' grows past {} bytes", current().name, max_section_bytes()));
  append_word(bytes(), main_word);
  append_word(bytes(), float_word);
}

void CodeBuilder::instruction(const Operation& operation) {
  const InstructionSpec* spec = find_spec(operation.instruction.opcode);
  if (spec && spec->slot == Slot::Float) bundle(nop(), operation);
  else bundle(operation, fnop());
}

void CodeBuilder::byte(std::uint8_t value) {
  zero(1);
  bytes().back() = value;
}

// Data that is naturally aligned within its section stays aligned once the
// linker places the section.
void CodeBuilder::keep_aligned(std::uint32_t bytes) {
  require_section("data");
  if (offset() % bytes == 0) current().alignment = std::max(current().alignment, bytes);
}

void CodeBuilder::half(std::uint16_t value) {
  keep_aligned(2);
  byte(static_cast<std::uint8_t>(value));
  byte(static_cast<std::uint8_t>(value >> 8));
}

void CodeBuilder::word(std::uint32_t value) {
  keep_aligned(4);
  zero(4);
  write_word(bytes(), offset() - 4, value);
}

void CodeBuilder::word(const SymbolRef& target) {
  require_section(".word");
  fixups_.push_back(Fixup{current_, offset(), RelocationKind::Abs32, target, where_});
  word(0);
}

void CodeBuilder::float32(float value) { word(std::bit_cast<std::uint32_t>(value)); }

void CodeBuilder::zero(std::uint32_t count) {
  require_section("data");
  if (count > max_section_bytes() - std::min(max_section_bytes(), offset()))
    fail(fmt::format("section '{}' grows past {} bytes", current().name, max_section_bytes()));
  bytes().resize(bytes().size() + count, 0);
}

void CodeBuilder::resolve_fixup(const Fixup& fixup) {
  Object& object = object_;
  auto it = symbol_index_.find(fixup.target.name);
  const Symbol* symbol = it == symbol_index_.end() ? nullptr : &object.symbols[it->second];
  if (symbol && symbol->section == fixup.section && is_pc_relative(fixup.kind)) {
    // A branch within its own section: the offset is known now.
    const std::int64_t distance = std::int64_t{symbol->offset} + fixup.target.addend -
                                  (fixup.offset - fixup.offset % kBundleBytes);
    where_ = fixup.where;
    if (distance % kBundleBytes)
      fail(fmt::format("branch target '{}'{:+} is not at a bundle boundary", fixup.target.name,
                       fixup.target.addend));
    std::vector<std::uint8_t>& section_bytes = object.sections[fixup.section].bytes;
    std::uint32_t word = read_word(section_bytes, fixup.offset);
    if (auto problem = patch_word(word, fixup.kind, distance / kBundleBytes))
      fail(fmt::format("branch to '{}': {}", fixup.target.name, *problem));
    write_word(section_bytes, fixup.offset, word);
    return;
  }
  object.relocations.push_back(Relocation{fixup.section, fixup.offset, fixup.kind,
                                          symbol_index(fixup.target.name), fixup.target.addend});
}

Object CodeBuilder::finish() {
  for (const Fixup& fixup : fixups_) resolve_fixup(fixup);
  fixups_.clear();
  Object result = std::move(object_);
  object_ = Object{};
  object_.name = result.name;
  section_index_.clear();
  symbol_index_.clear();
  kind_given_.clear();
  current_ = -1;
  return result;
}

}  // namespace tilec::isa
