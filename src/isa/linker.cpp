#include "isa/linker.h"

#include "support/error.h"

#include <algorithm>
#include <unordered_map>

namespace tilec::isa {

namespace {

template <typename... Args>
[[noreturn]] void link_error(fmt::format_string<Args...> format, Args&&... args) {
  throw_bad_input("link", format, std::forward<Args>(args)...);
}

std::uint64_t align_up(std::uint64_t value, std::uint32_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// One section of the image: the same-named sections of every object.
struct OutputSection {
  std::string name;
  std::uint32_t alignment = 1;
  bool executable = false;
  MemoryWish memory = MemoryWish::Any;
  std::uint32_t size = 0;
  std::uint32_t address = 0;
  std::string first_object;  // for messages
  std::vector<std::uint8_t> bytes;
};

struct Range {
  std::uint32_t begin, end;
  std::string name;
};

struct GlobalSymbol {
  std::uint32_t address;
  const std::string* origin;
};

class Linker {
 public:
  Linker(std::span<const Object* const> objects, const LinkOptions& options,
         std::span<const Image* const> images)
      : objects_(objects), options_(options), images_(images),
        machine_(options.machine ? *options.machine : ipu21()) {}

  Image run() {
    gather_sections();
    place_sections();
    check_overlaps();
    fill_sections();
    collect_globals();
    apply_relocations();
    return build_image();
  }

 private:
  void gather_sections();
  void place_sections();
  void place_at(OutputSection& section, std::uint32_t address);
  bool place_in_class(OutputSection& section, const MemoryClass& memory_class, bool must_fit);
  void check_overlaps();
  void fill_sections();
  void collect_globals();
  void apply_relocations();
  std::uint32_t symbol_address(std::size_t object, const Relocation& relocation);
  Image build_image();

  std::span<const Object* const> objects_;
  const LinkOptions& options_;
  std::span<const Image* const> images_;
  const MachineModel& machine_;

  std::vector<OutputSection> outputs_;
  // Per object, per section: (output section, offset within it).
  std::vector<std::vector<std::pair<int, std::uint32_t>>> input_places_;
  std::vector<Range> occupied_;
  std::unordered_map<std::string, GlobalSymbol> globals_;
  const std::string image_origin_ = "a linked image";
};

void Linker::gather_sections() {
  std::unordered_map<std::string, int> by_name;
  input_places_.resize(objects_.size());
  for (std::size_t o = 0; o < objects_.size(); ++o) {
    const Object& object = *objects_[o];
    for (const Section& section : object.sections) {
      auto [it, inserted] = by_name.emplace(section.name, static_cast<int>(outputs_.size()));
      if (inserted) {
        outputs_.push_back(OutputSection{section.name, 1, section.executable, section.memory, 0, 0,
                                         object.name, {}});
      }
      OutputSection& output = outputs_[it->second];
      if (output.executable != section.executable)
        link_error("section '{}' is executable in {} but not in {}", section.name,
                   output.executable ? output.first_object : object.name,
                   output.executable ? object.name : output.first_object);
      if (section.memory != MemoryWish::Any) {
        if (output.memory != MemoryWish::Any && output.memory != section.memory)
          link_error("section '{}' wants {} memory in {} but {} memory in {}", section.name,
                     memory_wish_name(output.memory), output.first_object,
                     memory_wish_name(section.memory), object.name);
        output.memory = section.memory;
      }
      const std::uint32_t alignment = std::max<std::uint32_t>(section.alignment, 1);
      output.alignment = std::max(output.alignment, alignment);
      const std::uint64_t offset = align_up(output.size, alignment);
      const std::uint64_t end = offset + section.bytes.size();
      if (end > machine_.memory_bytes())
        link_error("section '{}' ({} bytes) is larger than a tile's memory", section.name, end);
      input_places_[o].emplace_back(it->second, static_cast<std::uint32_t>(offset));
      output.size = static_cast<std::uint32_t>(end);
    }
  }
}

void Linker::place_at(OutputSection& section, std::uint32_t address) {
  if (address % section.alignment)
    link_error("section '{}' at {:#x} is not aligned to {} bytes", section.name, address,
               section.alignment);
  if (address < machine_.memory_begin || address > machine_.memory_end ||
      section.size > machine_.memory_end - address)
    link_error("section '{}' at {:#x}..{:#x} is outside the tile's memory {:#x}..{:#x}",
               section.name, address, std::uint64_t{address} + section.size, machine_.memory_begin,
               machine_.memory_end);
  if (section.executable && !machine_.standard.contains(address, section.size))
    link_error("code section '{}' at {:#x}..{:#x} is outside standard memory {:#x}..{:#x}",
               section.name, address, std::uint64_t{address} + section.size,
               machine_.standard.begin, machine_.standard.end);
  const MemoryClass* wished = section.memory == MemoryWish::Standard      ? &machine_.standard
                              : section.memory == MemoryWish::Interleaved ? &machine_.interleaved
                                                                          : nullptr;
  if (wished && !wished->contains(address, section.size))
    link_error("section '{}' ({} bytes at {:#x}) does not fit {} memory {:#x}..{:#x}", section.name,
               section.size, address, wished->name, wished->begin, wished->end);
  section.address = address;
  if (section.size) occupied_.push_back(Range{address, address + section.size, section.name});
}

// First fit from the start of the class, around what is already placed.
bool Linker::place_in_class(OutputSection& section, const MemoryClass& memory_class, bool must_fit) {
  std::sort(occupied_.begin(), occupied_.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  std::uint64_t candidate = align_up(memory_class.begin, section.alignment);
  for (const Range& range : occupied_) {
    if (range.end <= candidate) continue;
    if (range.begin >= candidate + section.size) break;
    candidate = align_up(range.end, section.alignment);
  }
  if (candidate + section.size > memory_class.end) {
    if (!must_fit) return false;
    link_error("section '{}' ({} bytes, aligned to {}) does not fit in the free {} memory",
               section.name, section.size, section.alignment, memory_class.name);
  }
  place_at(section, static_cast<std::uint32_t>(candidate));
  return true;
}

void Linker::place_sections() {
  for (const Image* image : images_)
    for (const Segment& segment : image->segments)
      if (segment.size())
        occupied_.push_back(Range{segment.address, segment.address + segment.size(), segment.name});

  std::unordered_map<std::string_view, const PlacementRule*> rules;
  for (const PlacementRule& rule : options_.placements) {
    if (rule.address.has_value() == rule.memory.has_value())
      link_error("placement of '{}' needs either an address or a memory class", rule.section);
    if (rule.alignment && (rule.alignment & (rule.alignment - 1)))
      link_error("placement of '{}': alignment {} is not a power of two", rule.section, rule.alignment);
    rules.emplace(rule.section, &rule);
  }
  std::vector<OutputSection*> by_class;
  for (OutputSection& section : outputs_) {
    auto it = rules.find(section.name);
    if (it != rules.end()) section.alignment = std::max(section.alignment, it->second->alignment);
    if (it != rules.end() && it->second->address) place_at(section, *it->second->address);
    else by_class.push_back(&section);
  }
  for (OutputSection* section : by_class) {
    auto it = rules.find(section->name);
    if (it != rules.end()) {
      const MemoryClass& memory_class = machine_.memory_class(*it->second->memory);
      if (section->executable && memory_class.kind != MemoryClassKind::Standard)
        link_error("code section '{}' is placed in {} memory; code must be in standard memory",
                   section->name, memory_class.name);
      place_in_class(*section, memory_class, true);
    } else if (section->executable || section->memory == MemoryWish::Standard) {
      place_in_class(*section, machine_.standard, true);
    } else if (section->memory == MemoryWish::Interleaved) {
      place_in_class(*section, machine_.interleaved, true);
    } else if (!place_in_class(*section, machine_.interleaved, false)) {
      place_in_class(*section, machine_.standard, true);
    }
  }
}

void Linker::check_overlaps() {
  std::sort(occupied_.begin(), occupied_.end(), [](const Range& a, const Range& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (std::size_t i = 1; i < occupied_.size(); ++i) {
    const Range& a = occupied_[i - 1];
    const Range& b = occupied_[i];
    if (b.begin < a.end)
      link_error("sections '{}' ({:#x}..{:#x}) and '{}' ({:#x}..{:#x}) overlap", a.name, a.begin,
                 a.end, b.name, b.begin, b.end);
  }
}

void Linker::fill_sections() {
  const std::uint64_t nop_bundle = encode_bundle(Bundle{nop(), fnop()});
  for (OutputSection& output : outputs_) {
    output.bytes.assign(output.size, 0);
    if (output.executable)
      for (std::uint32_t at = 0; at + kBundleBytes <= output.size; at += kBundleBytes)
        for (std::uint32_t i = 0; i < kBundleBytes; ++i)
          output.bytes[at + i] = static_cast<std::uint8_t>(nop_bundle >> (8 * i));
  }
  for (std::size_t o = 0; o < objects_.size(); ++o) {
    const Object& object = *objects_[o];
    for (std::size_t s = 0; s < object.sections.size(); ++s) {
      auto [output, offset] = input_places_[o][s];
      std::copy(object.sections[s].bytes.begin(), object.sections[s].bytes.end(),
                outputs_[output].bytes.begin() + offset);
    }
  }
}

void Linker::collect_globals() {
  for (const Image* image : images_)
    for (const LinkedSymbol& symbol : image->symbols)
      if (symbol.global) {
        auto [it, inserted] = globals_.emplace(symbol.name, GlobalSymbol{symbol.address, &image_origin_});
        if (!inserted)
          link_error("duplicate global symbol '{}' defined in {} and {}", symbol.name,
                     *it->second.origin, image_origin_);
      }
  for (std::size_t o = 0; o < objects_.size(); ++o) {
    const Object& object = *objects_[o];
    for (const Symbol& symbol : object.symbols) {
      if (!symbol.global || !symbol.defined()) continue;
      auto [output, offset] = input_places_[o][symbol.section];
      const std::uint32_t address = outputs_[output].address + offset + symbol.offset;
      auto [it, inserted] = globals_.emplace(symbol.name, GlobalSymbol{address, &object.name});
      if (!inserted)
        link_error("duplicate global symbol '{}' defined in {} and {}", symbol.name,
                   *it->second.origin, object.name);
    }
  }
}

std::uint32_t Linker::symbol_address(std::size_t o, const Relocation& relocation) {
  const Object& object = *objects_[o];
  const Symbol& symbol = object.symbols[relocation.symbol];
  if (symbol.defined()) {
    auto [output, offset] = input_places_[o][symbol.section];
    return outputs_[output].address + offset + symbol.offset;
  }
  auto it = globals_.find(symbol.name);
  if (it == globals_.end())
    link_error("undefined symbol '{}' referenced from {} ({}+{:#x})", symbol.name, object.name,
               object.sections[relocation.section].name, relocation.offset);
  return it->second.address;
}

void Linker::apply_relocations() {
  for (std::size_t o = 0; o < objects_.size(); ++o) {
    const Object& object = *objects_[o];
    for (const Relocation& relocation : object.relocations) {
      if (relocation.section < 0 || relocation.section >= static_cast<int>(object.sections.size()) ||
          relocation.symbol < 0 || relocation.symbol >= static_cast<int>(object.symbols.size()))
        link_error("{} has a relocation naming a section or symbol it does not have", object.name);
      auto [output, offset] = input_places_[o][relocation.section];
      OutputSection& section = outputs_[output];
      const std::uint32_t at = offset + relocation.offset;
      if (relocation.offset + 4 > object.sections[relocation.section].bytes.size())
        link_error("relocation at {} ({}+{:#x}) is outside its section", object.name,
                   object.sections[relocation.section].name, relocation.offset);
      const std::int64_t target = std::int64_t{symbol_address(o, relocation)} + relocation.addend;
      std::int64_t value = target;
      if (relocation.kind == RelocationKind::Pc24 || relocation.kind == RelocationKind::Pc20) {
        const std::int64_t distance = target - (section.address + at - (section.address + at) % kBundleBytes);
        if (distance % kBundleBytes)
          link_error("{} relocation at {} ({}+{:#x}): target '{}'{:+} = {:#x} is not at a bundle boundary",
                     relocation_kind_name(relocation.kind), object.name,
                     object.sections[relocation.section].name, relocation.offset,
                     object.symbols[relocation.symbol].name, relocation.addend, target);
        value = distance / kBundleBytes;
      }
      std::uint32_t word = 0;
      for (int i = 0; i < 4; ++i) word |= std::uint32_t{section.bytes[at + i]} << (8 * i);
      if (auto problem = patch_word(word, relocation.kind, value))
        link_error("relocation overflow: {} of '{}'{:+} at {} ({}+{:#x}): {}",
                   relocation_kind_name(relocation.kind), object.symbols[relocation.symbol].name,
                   relocation.addend, object.name, object.sections[relocation.section].name,
                   relocation.offset, *problem);
      for (int i = 0; i < 4; ++i) section.bytes[at + i] = static_cast<std::uint8_t>(word >> (8 * i));
    }
  }
}

Image Linker::build_image() {
  Image image;
  for (const Image* linked : images_) {
    image.segments.insert(image.segments.end(), linked->segments.begin(), linked->segments.end());
    image.symbols.insert(image.symbols.end(), linked->symbols.begin(), linked->symbols.end());
  }
  for (OutputSection& output : outputs_) {
    if (output.bytes.empty()) continue;
    image.segments.push_back(Segment{
        output.name, output.address,
        std::make_shared<const std::vector<std::uint8_t>>(std::move(output.bytes)), output.executable});
  }
  std::stable_sort(image.segments.begin(), image.segments.end(),
                   [](const Segment& a, const Segment& b) { return a.address < b.address; });
  for (std::size_t o = 0; o < objects_.size(); ++o) {
    for (const Symbol& symbol : objects_[o]->symbols) {
      if (!symbol.defined()) continue;
      auto [output, offset] = input_places_[o][symbol.section];
      image.symbols.push_back(LinkedSymbol{symbol.name, outputs_[output].address + offset + symbol.offset,
                                           symbol.size, symbol.kind, symbol.global});
    }
  }
  if (!options_.entry.empty()) {
    const LinkedSymbol* entry = image.find(options_.entry);
    if (!entry) link_error("entry symbol '{}' is not defined", options_.entry);
    image.entry = entry->address;
  }
  return image;
}

}  // namespace

const LinkedSymbol* Image::find(std::string_view name) const {
  const LinkedSymbol* local = nullptr;
  for (const LinkedSymbol& symbol : symbols) {
    if (symbol.name != name) continue;
    if (symbol.global) return &symbol;
    if (!local) local = &symbol;
  }
  return local;
}

Image link(std::span<const Object* const> objects, const LinkOptions& options,
           std::span<const Image* const> images) {
  return Linker(objects, options, images).run();
}

}  // namespace tilec::isa
