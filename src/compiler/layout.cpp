#include "compiler/mid.h"

#include "support/error.h"

#include <algorithm>

namespace tilec::compiler {

std::vector<Range> balanced_split(std::int64_t extent, int parts, std::int64_t unit) {
  TILEC_CHECK(parts >= 1 && unit >= 1, "balanced_split needs parts >= 1 and unit >= 1");
  std::int64_t units = (extent + unit - 1) / unit;
  std::vector<Range> ranges;
  ranges.reserve(static_cast<std::size_t>(parts));
  std::int64_t begin = 0;
  for (int part = 0; part < parts; ++part) {
    std::int64_t share = units / parts + (part < units % parts ? 1 : 0);
    std::int64_t end = std::min(extent, begin + share * unit);
    ranges.push_back(Range{begin, end});
    begin = end;
  }
  return ranges;
}

std::int64_t row_unit_panels(const Chain& chain) {
  const std::int64_t panels = (chain.rows + kPanelRows - 1) / kPanelRows;
  if (chain.segment_rows == 0) return 1;
  if (chain.segment_rows % kPanelRows == 0) return chain.segment_rows / kPanelRows;
  return std::max<std::int64_t>(panels, 1);
}

Range ColumnLayout::columns_on(int group_tile) const {
  for (std::size_t part = 0; part < parts.size(); ++part)
    for (int tile : tiles[part])
      if (tile == group_tile) return parts[part];
  return Range{};
}

std::int64_t GroupPlan::max_chunk_rows() const {
  std::int64_t most = 0;
  for (const auto& group : rows)
    for (const Range& chunk : group) most = std::max(most, chunk.size());
  return most;
}

}  // namespace tilec::compiler
