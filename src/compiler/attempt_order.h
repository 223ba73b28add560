// Which plans of the search's front the driver builds, fastest first.
// The first attempts take every plan whose estimate is at most a quarter
// over the budget. Estimates miss the exact peak by a margin each rejection
// measures; once those attempts are spent (on near-twins of one plan, say),
// more follow, each only for a plan that could still fit after the smallest
// margin seen. The least misses of the peak and of the interleaved data are
// what a second search is told (search_plans).
#pragma once

#include "compiler/mid.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace tilec::compiler {

class AttemptOrder {
 public:
  static constexpr int kPlainAttempts = 8, kCalibratedAttempts = 8;

  explicit AttemptOrder(std::int64_t budget) : budget_(budget) {}

  // The largest estimate the first attempts take.
  static std::int64_t plain_limit(std::int64_t budget) { return budget + budget / 4; }

  // The front's last (smallest) plan is always worth building: it is what
  // the error message reports when nothing fits.
  bool worth_building(std::int64_t estimate, bool last) const {
    if (last) return true;
    if (attempts_ < kPlainAttempts) return estimate <= plain_limit(budget_);
    return estimate + shortfall_ <= budget_;
  }
  bool exhausted() const { return attempts_ >= kPlainAttempts + kCalibratedAttempts; }
  // A plan built to `peak` bytes, `data` of them in interleaved memory,
  // did not fit.
  void rejected(const MidEstimate& estimate, std::int64_t peak, std::int64_t data) {
    const std::int64_t peak_missed = peak - estimate.peak_bytes, data_missed = data - estimate.data_bytes;
    shortfall_ = attempts_ ? std::min(shortfall_, peak_missed) : peak_missed;
    data_shortfall_ = attempts_ ? std::min(data_shortfall_, data_missed) : data_missed;
    ++attempts_;
  }
  // The least misses seen, never below zero (an estimate that was high
  // does not lower the bar).
  std::optional<EstimateShortfall> least_missed() const {
    if (!attempts_) return std::nullopt;
    return EstimateShortfall{std::max<std::int64_t>(0, shortfall_), std::max<std::int64_t>(0, data_shortfall_)};
  }

 private:
  std::int64_t budget_;
  std::int64_t shortfall_ = 0;  // of the peak; may be negative: the rule of the later attempts
  std::int64_t data_shortfall_ = 0;
  int attempts_ = 0;
};

}  // namespace tilec::compiler
