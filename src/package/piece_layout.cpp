#include "package/piece_layout.h"

#include <algorithm>

namespace tilec::package {

std::int64_t piece_elements(const Piece& piece) {
  std::int64_t count = 1;
  for (std::int64_t extent : piece.size) count *= extent;
  return count;
}

std::vector<ByteRun> piece_memory_runs(const Piece& piece, std::uint32_t element_bytes) {
  // Axes that move through memory, from the smallest stride up.
  std::vector<std::size_t> axes;
  for (std::size_t k = 0; k < piece.size.size(); ++k)
    if (piece.size[k] > 1) axes.push_back(k);
  std::stable_sort(axes.begin(), axes.end(), [&](std::size_t a, std::size_t b) {
    return piece.strides[a] < piece.strides[b];
  });

  // The innermost axes whose strides continue the run without a gap merge
  // into one run; the rest each repeat it.
  std::int64_t run_elements = 1;
  std::size_t inner = 0;
  while (inner < axes.size() && piece.strides[axes[inner]] == run_elements)
    run_elements *= piece.size[axes[inner++]];
  const std::vector<std::size_t> outer(axes.begin() + static_cast<std::ptrdiff_t>(inner), axes.end());

  std::vector<ByteRun> runs;
  const std::int64_t run_bytes = run_elements * element_bytes;
  std::vector<std::int64_t> index(outer.size(), 0);
  while (true) {
    std::int64_t offset = 0;
    for (std::size_t j = 0; j < outer.size(); ++j) offset += index[j] * piece.strides[outer[j]];
    auto begin = static_cast<std::uint32_t>(piece.address + offset * element_bytes);
    runs.push_back({begin, static_cast<std::uint32_t>(begin + run_bytes)});
    // Count with the smallest stride fastest, so runs come in address order.
    std::size_t j = 0;
    while (j < outer.size() && ++index[j] == piece.size[outer[j]]) index[j++] = 0;
    if (j == outer.size()) break;
  }
  return runs;
}

}  // namespace tilec::package
