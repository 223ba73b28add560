// The linker: places the sections of relocatable objects in a tile's memory,
// resolves their symbols and patches their relocations, giving an image of
// segments at fixed addresses.
//
// Sections of the same name from every object are concatenated, in object
// order, into one output section (each input keeping its own alignment);
// gaps in code are filled with nop bundles. Each output section is then
// placed by its rule: at a fixed address, or at the next free address of a
// memory class. A section without a rule goes to the next free address of
// the class it wishes for; "any" data tries interleaved memory first (code
// needs standard memory, which is smaller), then standard.
//
// Already linked images can be linked in again: their segments keep their
// addresses and their global symbols resolve references. The compiler links
// its kernel library once and reuses the image for every tile, so the
// per-tile link only does the work of the tile's own (small) objects.
#pragma once

#include "isa/object.h"
#include "target/machine.h"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tilec::isa {

struct PlacementRule {
  std::string section;
  // Exactly one of these: a fixed base address, or the next free address
  // of a memory class.
  std::optional<std::uint32_t> address;
  std::optional<MemoryClassKind> memory;
  std::uint32_t alignment = 0;  // at least this; 0 = the section's own
};

struct LinkOptions {
  std::vector<PlacementRule> placements;
  std::string entry;  // the entry symbol; empty = no entry (entry address 0)
  const MachineModel* machine = nullptr;  // nullptr = ipu21()
};

struct Segment {
  std::string name;
  std::uint32_t address = 0;
  std::shared_ptr<const std::vector<std::uint8_t>> bytes;
  bool executable = false;

  std::uint32_t size() const { return bytes ? static_cast<std::uint32_t>(bytes->size()) : 0; }
};

struct LinkedSymbol {
  std::string name;
  std::uint32_t address = 0;
  std::uint32_t size = 0;
  SymbolKind kind = SymbolKind::Function;
  bool global = false;
};

struct Image {
  std::vector<Segment> segments;     // by address
  std::vector<LinkedSymbol> symbols; // every defined symbol, local ones too
  std::uint32_t entry = 0;

  // The first symbol of that name (globals first), or nullptr.
  const LinkedSymbol* find(std::string_view name) const;
};

// Links `objects` together with the already linked `images`. Throws a
// BadInput tilec::Error (one line, "link: ...") on an undefined or duplicate
// symbol, a relocation that overflows its field, overlapping sections, a
// section that does not fit its memory class, or code outside standard
// memory.
Image link(std::span<const Object* const> objects, const LinkOptions& options,
           std::span<const Image* const> images = {});

}  // namespace tilec::isa
