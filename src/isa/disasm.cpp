#include "isa/disasm.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <map>
#include <unordered_set>

namespace tilec::isa {

namespace {

std::uint32_t read_word(std::span<const std::uint8_t> bytes, std::size_t offset) {
  std::uint32_t word = 0;
  for (int i = 0; i < 4; ++i) word |= std::uint32_t{bytes[offset + i]} << (8 * i);
  return word;
}

// A name the assembler reads as a label.
bool is_label_name(std::string_view name) {
  if (name.empty() || name == ".") return false;
  if (!std::isalpha(static_cast<unsigned char>(name[0])) && name[0] != '_' && name[0] != '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  });
}

// The labels printed in one range: each name once (globals first, then by
// address), so that the text reassembles without duplicate definitions.
class Labels {
 public:
  Labels(std::span<const LinkedSymbol> symbols, std::uint32_t begin, std::uint64_t end) {
    std::vector<const LinkedSymbol*> sorted;
    for (const LinkedSymbol& symbol : symbols) {
      if (symbol.address >= begin && symbol.address < end && is_label_name(symbol.name)) sorted.push_back(&symbol);
      if (!symbol.name.empty()) any_.emplace(symbol.address, symbol.name);
    }
    std::stable_sort(sorted.begin(), sorted.end(), [](const LinkedSymbol* a, const LinkedSymbol* b) {
      return a->global != b->global ? a->global : a->address < b->address;
    });
    std::unordered_set<std::string_view> printed;
    for (const LinkedSymbol* symbol : sorted)
      if (printed.insert(symbol->name).second) at_[symbol->address].push_back(symbol->name);
  }

  const std::vector<std::string>* at(std::uint32_t address) const {
    auto it = at_.find(address);
    return it == at_.end() ? nullptr : &it->second;
  }
  // The next labelled address after `address`, or UINT64_MAX.
  std::uint64_t next_after(std::uint32_t address) const {
    auto it = at_.upper_bound(address);
    return it == at_.end() ? UINT64_MAX : it->first;
  }
  // Any symbol at the address, for comments.
  const std::string* any_at(std::uint32_t address) const {
    auto it = any_.find(address);
    return it == any_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::uint32_t, std::vector<std::string>> at_;
  std::multimap<std::uint32_t, std::string> any_;
};

std::string instruction_with_labels(const Instruction& instruction, std::uint32_t bundle_address,
                                    const Labels& labels, std::string& comment) {
  const InstructionSpec& spec = spec_of(instruction.opcode);
  const FormatSpec& format = format_spec(spec.format);
  std::string text = spec.mnemonic;
  for (int i = 0; i < format.field_count; ++i) {
    text += i == 0 ? " " : ", ";
    const FieldSpec& field = format.fields[i];
    const std::int32_t value = instruction.operands[i];
    if (field.kind == OperandKind::Label) {
      const std::int64_t target = std::int64_t{bundle_address} + std::int64_t{value} * kBundleBytes;
      const std::vector<std::string>* names =
          target >= 0 && target <= UINT32_MAX ? labels.at(static_cast<std::uint32_t>(target)) : nullptr;
      text += names ? names->front() : operand_text(field.kind, value);
      if (!names && target >= 0) comment = fmt::format("{:#x}", target);
      continue;
    }
    text += operand_text(field.kind, value);
    if (spec.opcode == Opcode::Setzi && field.kind == OperandKind::UImm)
      if (const std::string* name = labels.any_at(static_cast<std::uint32_t>(value))) comment = *name;
  }
  return text;
}

std::string bundle_with_labels(const Bundle& bundle, std::uint32_t address, const Labels& labels) {
  std::string comment;
  const bool main_nop = bundle.main.opcode == Opcode::Nop;
  const bool float_nop = bundle.flt.opcode == Opcode::Fnop;
  std::string text;
  if (float_nop) text = instruction_with_labels(bundle.main, address, labels, comment);
  else if (main_nop) text = instruction_with_labels(bundle.flt, address, labels, comment);
  else
    text = "{ " + instruction_with_labels(bundle.main, address, labels, comment) + " ; " +
           instruction_with_labels(bundle.flt, address, labels, comment) + " }";
  return comment.empty() ? text : text + "  # " + comment;
}

void print_labels(std::string& out, const Labels& labels, std::uint32_t address) {
  if (const std::vector<std::string>* names = labels.at(address))
    for (const std::string& name : *names) out += name + ":\n";
}

// Words (4 to a line) and trailing bytes, breaking lines at labels.
void print_data(std::string& out, std::span<const std::uint8_t> bytes, std::uint32_t base, std::size_t from,
                const Labels& labels) {
  std::size_t at = from;
  while (at < bytes.size()) {
    print_labels(out, labels, static_cast<std::uint32_t>(base + at));
    const std::uint64_t stop = std::min<std::uint64_t>(labels.next_after(static_cast<std::uint32_t>(base + at)) - base, bytes.size());
    std::size_t line_end = at;
    std::string line;
    while (line_end + 4 <= stop && line_end - at < 16) {
      line += fmt::format("{}{:#010x}", line.empty() ? "    .word " : ", ", read_word(bytes, line_end));
      line_end += 4;
    }
    if (line_end == at) {
      while (line_end < stop && line_end - at < 16) {
        line += fmt::format("{}{:#04x}", line.empty() ? "    .byte " : ", ", bytes[line_end]);
        ++line_end;
      }
    }
    out += line + "\n";
    at = line_end;
  }
}

}  // namespace

std::string disassemble(std::span<const std::uint8_t> bytes, std::uint32_t base, bool executable,
                        std::span<const LinkedSymbol> symbols) {
  const Labels labels(symbols, base, std::uint64_t{base} + bytes.size());
  std::string out;
  std::size_t at = 0;
  if (executable) {
    for (; at + kBundleBytes <= bytes.size(); at += kBundleBytes) {
      const std::uint32_t address = static_cast<std::uint32_t>(base + at);
      print_labels(out, labels, address);
      const std::uint64_t bits = std::uint64_t{read_word(bytes, at)} | std::uint64_t{read_word(bytes, at + 4)} << 32;
      std::optional<Bundle> bundle = decode_bundle(bits);
      // A bundle writing one $a register twice decodes but does not assemble.
      const std::uint32_t clash = bundle ? written_a_registers(bundle->main) & written_a_registers(bundle->flt) : 0;
      if (bundle && !clash)
        out += "    " + bundle_with_labels(*bundle, address, labels) + "\n";
      else if (bundle)
        out += fmt::format("    .word {:#010x}, {:#010x}  # both instructions write $a{}\n", read_word(bytes, at),
                           read_word(bytes, at + 4), std::countr_zero(clash));
      else
        out += fmt::format("    .word {:#010x}, {:#010x}  # undecodable bundle\n", read_word(bytes, at),
                           read_word(bytes, at + 4));
    }
  }
  print_data(out, bytes, base, at, labels);
  return out;
}

std::string disassemble_image(const Image& image) {
  // One label per name across all segments, so the whole text reassembles.
  std::vector<LinkedSymbol> unique = image.symbols;
  std::stable_sort(unique.begin(), unique.end(),
                   [](const LinkedSymbol& a, const LinkedSymbol& b) { return a.global && !b.global; });
  std::unordered_set<std::string> seen;
  std::erase_if(unique, [&](const LinkedSymbol& symbol) { return !seen.insert(symbol.name).second; });
  std::string out;
  for (const Segment& segment : image.segments) {
    out += fmt::format("# {} at {:#x}, {} bytes\n.section {}, \"{}\"\n", segment.name, segment.address,
                       segment.size(), is_label_name(segment.name) ? segment.name : "\"" + segment.name + "\"",
                       segment.executable ? "x" : "");
    if (segment.bytes) out += disassemble(*segment.bytes, segment.address, segment.executable, unique);
  }
  return out;
}

std::string object_listing(const Object& object) {
  std::string out = fmt::format("object {}\n", object.name);
  std::map<std::pair<int, std::uint32_t>, const Relocation*> relocations;
  for (const Relocation& relocation : object.relocations)
    relocations[{relocation.section, relocation.offset - relocation.offset % kBundleBytes}] = &relocation;
  for (std::size_t s = 0; s < object.sections.size(); ++s) {
    const Section& section = object.sections[s];
    out += fmt::format("section {} {}{} align {} size {}\n", section.name, section.executable ? "code " : "",
                       memory_wish_name(section.memory), section.alignment, section.bytes.size());
    const std::span<const std::uint8_t> bytes = section.bytes;
    std::size_t at = 0;
    for (; section.executable && at + kBundleBytes <= bytes.size(); at += kBundleBytes) {
      const std::uint32_t main = read_word(bytes, at), flt = read_word(bytes, at + 4);
      std::optional<Bundle> bundle = decode_bundle(std::uint64_t{main} | std::uint64_t{flt} << 32);
      out += fmt::format("  {:04x}: {:08x} {:08x}  {}", at, main, flt, bundle ? bundle_text(*bundle) : "(undecodable)");
      auto it = relocations.find({static_cast<int>(s), static_cast<std::uint32_t>(at)});
      if (it != relocations.end())
        out += fmt::format("  <- {} {}{:+}", relocation_kind_name(it->second->kind),
                           object.symbols[it->second->symbol].name, it->second->addend);
      out += "\n";
    }
    for (; at < bytes.size(); at += 16) {
      out += fmt::format("  {:04x}:", at);
      for (std::size_t i = at; i < std::min(at + 16, bytes.size()); i += 4) {
        if (i + 4 <= bytes.size()) out += fmt::format(" {:08x}", read_word(bytes, i));
        else
          for (std::size_t b = i; b < bytes.size(); ++b) out += fmt::format(" {:02x}", bytes[b]);
      }
      out += "\n";
    }
  }
  for (const Symbol& symbol : object.symbols) {
    if (!symbol.defined()) {
      out += fmt::format("symbol {} undefined{}\n", symbol.name, symbol.global ? " global" : "");
      continue;
    }
    out += fmt::format("symbol {} {}+{:#x} size {} {} {}\n", symbol.name, object.sections[symbol.section].name,
                       symbol.offset, symbol.size, symbol.global ? "global" : "local", symbol_kind_name(symbol.kind));
  }
  for (const Relocation& relocation : object.relocations)
    out += fmt::format("relocation {}+{:#x} {} {}{:+}\n", object.sections[relocation.section].name, relocation.offset,
                       relocation_kind_name(relocation.kind), object.symbols[relocation.symbol].name,
                       relocation.addend);
  return out;
}

}  // namespace tilec::isa
