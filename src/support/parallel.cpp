#include "support/parallel.h"

#include <tbb/global_control.h>
#include <tbb/info.h>

#include <cstdlib>
#include <memory>
#include <mutex>

namespace tilec {

namespace {

std::mutex control_mutex;
std::unique_ptr<tbb::global_control> control;
int configured = 0;

int default_threads() {
  if (const char* env = std::getenv("TILEC_THREADS")) {
    int value = std::atoi(env);
    if (value > 0) return value;
  }
  return tbb::info::default_concurrency();
}

}  // namespace

void set_thread_count(int threads) {
  std::lock_guard lock(control_mutex);
  configured = threads > 0 ? threads : default_threads();
  control = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                  static_cast<std::size_t>(configured));
}

int thread_count() {
  {
    std::lock_guard lock(control_mutex);
    if (configured > 0) return configured;
  }
  set_thread_count(0);
  return thread_count();
}

}  // namespace tilec
