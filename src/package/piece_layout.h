// Where the elements of a binding's piece lie, in the tensor and in memory.
//
// A piece (package.h) stores the block start..start+size of a tensor at
// `address + sum_k (i_k - start_k) * strides_k * element_bytes`. Strides of
// axes whose size is 1 never multiply anything and are ignored. A valid
// piece (see validate.h) has positive strides on its other axes, and they
// nest: taken from the smallest stride up, each stride is at least the one
// before times that axis's size. So no two elements share a byte, and memory
// splits into runs of whole elements that are contiguous.
//
// These functions expect a piece that has passed validate().
#pragma once

#include "package/package.h"

#include <cstdint>
#include <vector>

namespace tilec::package {

std::int64_t piece_elements(const Piece& piece);

// One row of a piece along the tensor's last axis: `count` elements whose
// row-major indices in the tensor start at `flat_index`, the first at
// `address`, each next one `stride_bytes` further on.
struct PieceRow {
  std::int64_t flat_index = 0;
  std::uint32_t address = 0;
  std::int64_t count = 0;
  std::int64_t stride_bytes = 0;
};

// Every row of the piece, in row-major order of the tensor.
template <typename Visit>
void for_each_piece_row(const Piece& piece, const graph::Shape& shape,
                        std::uint32_t element_bytes, Visit&& visit);

// A contiguous range of bytes [begin, end) in tile memory.
struct ByteRun {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
};

// The bytes the piece occupies, as maximal contiguous runs, in address order.
std::vector<ByteRun> piece_memory_runs(const Piece& piece, std::uint32_t element_bytes);

// Implementation of for_each_piece_row.
template <typename Visit>
void for_each_piece_row(const Piece& piece, const graph::Shape& shape,
                        std::uint32_t element_bytes, Visit&& visit) {
  const std::size_t rank = shape.size();
  if (rank == 0) {
    visit(PieceRow{0, piece.address, 1, element_bytes});
    return;
  }
  // Row-major strides of the tensor itself, in elements.
  std::vector<std::int64_t> tensor_strides(rank, 1);
  for (std::size_t k = rank - 1; k > 0; --k) tensor_strides[k - 1] = tensor_strides[k] * shape[k];

  const std::size_t last = rank - 1;
  std::vector<std::int64_t> index(rank, 0);  // relative to start; index[last] stays 0
  while (true) {
    std::int64_t flat = 0, offset = 0;
    for (std::size_t k = 0; k < rank; ++k) {
      flat += (piece.start[k] + index[k]) * tensor_strides[k];
      offset += index[k] * piece.strides[k];
    }
    std::int64_t count = piece.size[last];
    visit(PieceRow{flat, static_cast<std::uint32_t>(piece.address + offset * element_bytes), count,
                   (count > 1 ? piece.strides[last] : 1) * element_bytes});
    std::size_t k = last;
    while (k > 0) {
      --k;
      if (++index[k] < piece.size[k]) break;
      index[k] = 0;
      if (k == 0) return;
    }
    if (last == 0) return;
  }
}

}  // namespace tilec::package
