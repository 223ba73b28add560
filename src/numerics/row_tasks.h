// Rows split over threads in fixed groups of 64: rows are independent, so
// the split cannot change a bit, whatever the thread count.
#pragma once

#include "support/parallel.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace tilec::reference {

template <typename RowBody>
void for_each_row(std::int64_t rows, RowBody&& body) {
  constexpr std::int64_t kRowsPerTask = 64;
  const std::int64_t tasks = (rows + kRowsPerTask - 1) / kRowsPerTask;
  parallel_for(0, static_cast<std::size_t>(tasks), [&](std::size_t task) {
    const std::int64_t first = static_cast<std::int64_t>(task) * kRowsPerTask;
    for (std::int64_t row = first; row < std::min(rows, first + kRowsPerTask); ++row) body(row);
  });
}

}  // namespace tilec::reference
