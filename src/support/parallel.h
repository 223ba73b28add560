// Host parallelism for tilec's own work (simulating tiles, the reference
// GEMM, planning). Backed by oneTBB; the thread count is set once per process
// (`--threads`, or TILEC_THREADS) and defaults to every core.
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstddef>

namespace tilec {

// 0 = every core.
void set_thread_count(int threads);
int thread_count();

// Calls body(i) for each i in [begin, end), in any order, on any thread.
template <typename Body>
void parallel_for(std::size_t begin, std::size_t end, Body&& body) {
  if (end <= begin) return;
  tbb::parallel_for(tbb::blocked_range<std::size_t>(begin, end),
                    [&](const tbb::blocked_range<std::size_t>& range) {
                      for (std::size_t i = range.begin(); i != range.end(); ++i) body(i);
                    });
}

}  // namespace tilec
