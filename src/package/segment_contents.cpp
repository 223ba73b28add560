#include "package/segment_contents.h"

#include <xxhash.h>

#include <algorithm>
#include <unordered_map>

namespace tilec::package {

std::uint64_t SegmentContents::stored_bytes() const {
  std::uint64_t total = 0;
  for (std::span<const std::uint8_t> content : contents) total += content.size();
  return total;
}

SegmentContents distinct_segment_contents(const Package& package) {
  SegmentContents table;
  // Segments that share a vector are identical without looking at their bytes.
  std::unordered_map<const std::vector<std::uint8_t>*, std::uint32_t> by_pointer;
  // Content hash -> indices of the contents with that hash.
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> by_hash;
  static const std::vector<std::uint8_t> kEmpty;

  table.index.reserve(package.tiles.size());
  for (const TileImage& tile : package.tiles) {
    std::vector<std::uint32_t>& indices = table.index.emplace_back();
    indices.reserve(tile.segments.size());
    for (const Segment& segment : tile.segments) {
      const std::vector<std::uint8_t>& bytes = segment.bytes ? *segment.bytes : kEmpty;
      auto known = by_pointer.find(&bytes);
      if (known == by_pointer.end()) {
        std::vector<std::uint32_t>& candidates = by_hash[XXH3_64bits(bytes.data(), bytes.size())];
        auto same = std::find_if(candidates.begin(), candidates.end(), [&](std::uint32_t index) {
          return std::ranges::equal(table.contents[index], bytes);
        });
        std::uint32_t index;
        if (same != candidates.end()) {
          index = *same;
        } else {
          index = static_cast<std::uint32_t>(table.contents.size());
          table.contents.emplace_back(bytes);
          table.users.push_back(0);
          candidates.push_back(index);
        }
        known = by_pointer.emplace(&bytes, index).first;
      }
      indices.push_back(known->second);
      ++table.users[known->second];
    }
  }
  return table;
}

}  // namespace tilec::package
