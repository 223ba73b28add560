#include "compiler/lowering.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <tuple>
#include <utility>

namespace tilec::compiler {

namespace {

auto transfer_key(const Transfer& t) {
  return std::tie(t.phase, t.source_tile, t.source.buffer, t.source.chunk_stride, t.source.iteration_stride,
                  t.source.offset);
}

bool same_stride(const Place& a, const Place& b) {
  return a.buffer == b.buffer && a.chunk_stride == b.chunk_stride && a.iteration_stride == b.iteration_stride;
}

bool contiguous(const Transfer& t) { return t.source_pattern.contiguous() && t.destination_pattern.contiguous(); }

}  // namespace

void merge_copies(Lir& lir) {
  std::vector<Transfer>& transfers = lir.transfers;
  // One multicast for identical bytes going to different tiles. Indices are
  // sorted, not the transfers (each holds a tile list and a text).
  std::vector<std::size_t> order(transfers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return transfer_key(transfers[a]) < transfer_key(transfers[b]); });
  int tiles = 0;
  for (const Transfer& transfer : transfers)
    for (int tile : transfer.destination_tiles) tiles = std::max(tiles, tile + 1);
  // The merged transfer each tile was last listed in: a multicast lists a
  // tile once, and wide ones are not searched.
  std::vector<std::size_t> listed_in(static_cast<std::size_t>(tiles), SIZE_MAX);
  std::vector<Transfer> merged;
  for (std::size_t index : order) {
    Transfer& transfer = transfers[index];
    if (!merged.empty()) {
      Transfer& last = merged.back();
      bool same_source = last.phase == transfer.phase && last.source_tile == transfer.source_tile &&
                         same_stride(last.source, transfer.source) && last.source.offset == transfer.source.offset &&
                         last.bytes == transfer.bytes && last.source_pattern == transfer.source_pattern;
      if (same_source && same_stride(last.destination, transfer.destination) &&
          last.destination.offset == transfer.destination.offset &&
          last.destination_pattern == transfer.destination_pattern) {
        for (int tile : transfer.destination_tiles)
          if (std::exchange(listed_in[static_cast<std::size_t>(tile)], merged.size() - 1) != merged.size() - 1)
            last.destination_tiles.push_back(tile);
        continue;
      }
      // Consecutive bytes from one tile to the same tiles: one transfer
      // (contiguous ones only: patterned bytes need not continue a pattern).
      bool continues = contiguous(last) && contiguous(transfer) && last.phase == transfer.phase &&
                       last.source_tile == transfer.source_tile &&
                       last.destination_tiles == transfer.destination_tiles &&
                       same_stride(last.source, transfer.source) &&
                       last.source.offset + last.bytes == transfer.source.offset &&
                       same_stride(last.destination, transfer.destination) &&
                       last.destination.offset + last.bytes == transfer.destination.offset;
      if (continues) {
        last.bytes += transfer.bytes;
        last.what += " + " + transfer.what;
        continue;
      }
    }
    merged.push_back(std::move(transfer));
    for (int tile : merged.back().destination_tiles) listed_in[static_cast<std::size_t>(tile)] = merged.size() - 1;
  }
  for (Transfer& transfer : merged) std::sort(transfer.destination_tiles.begin(), transfer.destination_tiles.end());
  transfers = std::move(merged);
}

}  // namespace tilec::compiler
