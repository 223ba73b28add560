#include "sim/code_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace tilec::sim {

DecodedBundle decode_bundle_bits(std::uint64_t bits) {
  DecodedBundle decoded;
  decoded.bits = bits;
  if (auto bundle = isa::decode_bundle(bits)) {
    decoded.main = bundle->main;
    decoded.flt = bundle->flt;
    decoded.main_flags = isa::spec_of(bundle->main.opcode).flags;
    decoded.valid = true;
  }
  return decoded;
}

std::string bundle_text(const DecodedBundle& bundle) {
  if (bundle.valid) return isa::bundle_text(isa::Bundle{bundle.main, bundle.flt});
  return fmt::format("bundle {:#018x}", bundle.bits);
}

std::shared_ptr<DecodedCode> decode_code(const std::uint8_t* bytes, std::uint32_t size) {
  auto code = std::make_shared<DecodedCode>(size / isa::kBundleBytes);
  for (std::size_t i = 0; i < code->size(); ++i) {
    std::uint64_t bits;
    std::memcpy(&bits, bytes + i * isa::kBundleBytes, sizeof bits);
    (*code)[i] = decode_bundle_bits(bits);
  }
  return code;
}

void TileCode::add_region(std::uint32_t begin, std::shared_ptr<DecodedCode> code) {
  Region region;
  region.begin = begin;
  region.size = static_cast<std::uint32_t>(code->size() * isa::kBundleBytes);
  region.bundles = code->data();
  region.code = std::move(code);
  if (region.size == 0) return;
  low_ = std::min(low_, region.begin);
  high_ = std::max(high_, region.begin + region.size);
  if (regions_.size() == 1 && regions_[0].size == 0) regions_.clear();
  regions_.push_back(std::move(region));
  last_ = regions_.size() - 1;
}

const DecodedBundle* TileCode::find_slow(std::uint32_t pc) {
  if (pc & 7u) return nullptr;
  for (std::size_t i = 0; i < regions_.size(); ++i) {
    const Region& region = regions_[i];
    std::uint32_t offset = pc - region.begin;
    if (offset < region.size) {
      last_ = i;
      return region.bundles + (offset >> 3);
    }
  }
  return nullptr;
}

void TileCode::rewrite(std::uint32_t address, std::uint32_t size, const std::uint8_t* memory,
                       std::uint32_t memory_begin) {
  retired_.clear();
  for (Region& region : regions_) {
    std::uint32_t first = std::max(address, region.begin);
    std::uint32_t last = std::min(address + size, region.begin + region.size);
    if (first >= last) continue;
    retired_.push_back(region.code);
    region.code = std::make_shared<DecodedCode>(*region.code);
    region.bundles = region.code->data();
    for (std::uint32_t bundle = (first - region.begin) / isa::kBundleBytes;
         bundle * isa::kBundleBytes < last - region.begin; ++bundle) {
      std::uint64_t bits;
      std::memcpy(&bits, memory + (region.begin - memory_begin) + bundle * isa::kBundleBytes,
                  sizeof bits);
      (*region.code)[bundle] = decode_bundle_bits(bits);
    }
  }
}

}  // namespace tilec::sim
