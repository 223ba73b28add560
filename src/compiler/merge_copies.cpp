#include "compiler/lowering.h"

#include <algorithm>
#include <tuple>

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
  // One multicast for identical bytes going to different tiles.
  std::stable_sort(transfers.begin(), transfers.end(),
                   [](const Transfer& a, const Transfer& b) { return transfer_key(a) < transfer_key(b); });
  std::vector<Transfer> merged;
  for (Transfer& transfer : transfers) {
    if (!merged.empty()) {
      Transfer& last = merged.back();
      bool same_source = last.phase == transfer.phase && last.source_tile == transfer.source_tile &&
                         same_stride(last.source, transfer.source) && last.source.offset == transfer.source.offset &&
                         last.bytes == transfer.bytes && last.source_pattern == transfer.source_pattern;
      if (same_source && same_stride(last.destination, transfer.destination) &&
          last.destination.offset == transfer.destination.offset &&
          last.destination_pattern == transfer.destination_pattern) {
        for (int tile : transfer.destination_tiles)
          if (std::find(last.destination_tiles.begin(), last.destination_tiles.end(), tile) ==
              last.destination_tiles.end())
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
  }
  for (Transfer& transfer : merged) std::sort(transfer.destination_tiles.begin(), transfer.destination_tiles.end());
  transfers = std::move(merged);
}

}  // namespace tilec::compiler
