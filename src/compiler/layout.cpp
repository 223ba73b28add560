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
  return chain.segment_rows == 0 ? 1 : chain.padded_segment_rows() / kPanelRows;
}

void Layout::add_block(std::span<const int> tiles) {
  tile_list.insert(tile_list.end(), tiles.begin(), tiles.end());
  block_end.push_back(static_cast<int>(tile_list.size()));
}

std::pair<int, int> Layout::block_on(int group_tile) const {
  for (int block = 0; block < blocks(); ++block)
    for (int tile : block_tiles(block))
      if (tile == group_tile) return {block / col_parts(), block % col_parts()};
  return {-1, -1};
}

Range Layout::columns_on(int group_tile) const {
  const auto [r, c] = block_on(group_tile);
  return r < 0 ? Range{} : cols[static_cast<std::size_t>(c)];
}

Range Layout::rows_on(int group_tile) const {
  const auto [r, c] = block_on(group_tile);
  return r < 0 ? Range{} : rows[static_cast<std::size_t>(r)];
}

std::int64_t Layout::widest() const {
  std::int64_t most = 0;
  for (const Range& part : cols) most = std::max(most, part.size());
  return most;
}

Layout column_layout(std::int64_t chunk_panels, std::vector<Range> cols, const std::vector<std::vector<int>>& tiles) {
  TILEC_CHECK(cols.size() == tiles.size(), "column_layout needs one tile list per column part");
  Layout layout;
  layout.rows = {Range{0, chunk_panels * kPanelRows}};
  layout.cols = std::move(cols);
  for (const std::vector<int>& block : tiles) layout.add_block(block);
  layout.piece_panels = chunk_panels;
  return layout;
}

Layout column_window(const Layout& layout, Range window) {
  Layout cut;
  cut.rows = layout.rows;
  cut.piece_panels = layout.piece_panels;
  std::vector<int> kept;
  for (int c = 0; c < layout.col_parts(); ++c) {
    const Range part = layout.cols[static_cast<std::size_t>(c)];
    const Range inside{std::max(part.begin, window.begin), std::min(part.end, window.end)};
    if (inside.size() <= 0) continue;
    cut.cols.push_back(Range{inside.begin - window.begin, inside.end - window.begin});
    kept.push_back(c);
  }
  for (int r = 0; r < layout.row_parts(); ++r)
    for (int c : kept) cut.add_block(layout.tiles_of(r, c));
  return cut;
}

Range GemmGrid::weight_piece(int m, int n) const {
  const std::int64_t blocks = (columns[static_cast<std::size_t>(n)].size() + kPanelRows - 1) / kPanelRows;
  if (!weights_moved) return Range{0, blocks};
  return balanced_split(blocks, row_parts, 1)[static_cast<std::size_t>(m)];
}

namespace {

std::int64_t whole_panels(std::int64_t rows) { return (rows + kPanelRows - 1) / kPanelRows * kPanelRows; }

// Device rows in segments of `segment` rows, each padded to `padded`.
std::vector<GroupPlan::RowRun> runs_in_segments(Range device, std::int64_t segment_rows, std::int64_t padded) {
  std::vector<GroupPlan::RowRun> runs;
  for (std::int64_t row = device.begin; row < device.end;) {
    const std::int64_t segment = row / padded, offset = row % padded;
    const std::int64_t end = std::min(device.end, segment * padded + segment_rows);
    if (offset < segment_rows && row < end) runs.push_back(GroupPlan::RowRun{segment * segment_rows + offset, row, end - row});
    row = (segment + 1) * padded;
  }
  return runs;
}

}  // namespace

Range GroupPlan::space_rows(Range chunk, int space) const {
  if (space == 0) return chunk;
  const RowSpace& rows_of = spaces[static_cast<std::size_t>(space)];
  if (rows_of.shared) return Range{0, rows_of.rows};
  const std::int64_t first = chunk.begin / padded_segment_rows;
  const std::int64_t last = (chunk.end + padded_segment_rows - 1) / padded_segment_rows;
  return Range{first * whole_panels(rows_of.rows), last * whole_panels(rows_of.rows)};
}

std::vector<GroupPlan::RowRun> GroupPlan::graph_runs(Range device, int space) const {
  const RowSpace& rows_of = spaces[static_cast<std::size_t>(space)];
  if (space != 0 && !rows_of.shared) return runs_in_segments(device, rows_of.rows, whole_panels(rows_of.rows));
  if (space == 0 && padded_segment_rows != 0) return runs_in_segments(device, segment_rows, padded_segment_rows);
  std::vector<RowRun> runs;
  if (device.size() > 0) runs.push_back(RowRun{device.begin, device.begin, device.size()});
  return runs;
}

std::int64_t GroupPlan::max_chunk_rows() const {
  std::int64_t most = 0;
  for (const auto& group : rows)
    for (const Range& chunk : group) most = std::max(most, chunk.size());
  return most;
}

}  // namespace tilec::compiler
