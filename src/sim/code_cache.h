// Predecoded code: each tile's executable segments are decoded once at load
// into DecodedBundles, shared between tiles whose segments are the same
// bytes. A store that lands on decoded code re-decodes the bundles it
// touches into a new copy for that tile, so self-modifying code behaves
// exactly as fetching from memory would. The copy it replaces is kept until
// the next rewrite: the bundle whose store did the rewrite is still
// executing from it.
#pragma once

#include "isa/isa.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tilec::sim {

struct DecodedBundle {
  isa::Instruction main;
  isa::Instruction flt;
  std::uint32_t main_flags = 0;  // isa::flag bits of the main-slot instruction
  bool valid = false;            // false: the bits do not decode
  std::uint64_t bits = 0;
};

DecodedBundle decode_bundle_bits(std::uint64_t bits);
// The bundle's assembly text, or its raw bits when it does not decode.
std::string bundle_text(const DecodedBundle& bundle);

using DecodedCode = std::vector<DecodedBundle>;

// Decodes `bytes` (a whole number of bundles).
std::shared_ptr<DecodedCode> decode_code(const std::uint8_t* bytes, std::uint32_t size);

class TileCode {
 public:
  // `code` covers [begin, begin + 8 * code->size()); begin is 8-aligned.
  void add_region(std::uint32_t begin, std::shared_ptr<DecodedCode> code);

  // The decoded bundle at `pc`, or nullptr when pc is not in decoded code.
  const DecodedBundle* find(std::uint32_t pc) {
    const Region& region = regions_[last_];
    std::uint32_t offset = pc - region.begin;
    if (offset < region.size && (pc & 7u) == 0) [[likely]]
      return region.bundles + (offset >> 3);
    return find_slow(pc);
  }

  bool overlaps(std::uint32_t address, std::uint32_t size) const {
    return address < high_ && address + size > low_;
  }
  // Re-decodes the bundles that [address, address + size) touched, from
  // `memory` (the tile's memory, whose first byte is `memory_begin`).
  void rewrite(std::uint32_t address, std::uint32_t size, const std::uint8_t* memory,
               std::uint32_t memory_begin);

 private:
  struct Region {
    std::uint32_t begin = 0;
    std::uint32_t size = 0;  // bytes
    const DecodedBundle* bundles = nullptr;
    std::shared_ptr<DecodedCode> code;
  };

  const DecodedBundle* find_slow(std::uint32_t pc);

  // Never empty: an empty region stands in until code is added.
  std::vector<Region> regions_{Region{}};
  std::size_t last_ = 0;
  std::vector<std::shared_ptr<DecodedCode>> retired_;
  std::uint32_t low_ = 0xffffffffu;
  std::uint32_t high_ = 0;
};

}  // namespace tilec::sim
