// Which plans of the search's front the driver builds, fastest first.
// The first attempts take every plan whose estimate is at most a quarter
// over the budget. Estimates miss the exact peak by a margin each rejection
// measures; once those attempts are spent, more follow, each only for a
// plan that could still fit after the smallest margin seen. A plan that
// differs from a rejected one only in steps outside the repeat (its twin:
// the head, the embedding) misses by the same margin, to within a
// kilobyte or so, so it is skipped while the twin's exact peak or data,
// moved by the difference of their estimates, stays over. The least misses
// of the peak and of the interleaved data are what a second search is told
// (search_plans).
#pragma once

#include "compiler/chain.h"
#include "compiler/construct_mid.h"
#include "compiler/mid.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace tilec::compiler {

class AttemptOrder {
 public:
  static constexpr int kPlainAttempts = 8, kCalibratedAttempts = 8;

  // `interleaved`: the bytes interleaved memory holds, where data lives.
  AttemptOrder(const Chain& chain, std::int64_t budget, std::int64_t interleaved)
      : chain_(&chain), budget_(budget), interleaved_(interleaved) {}

  // The largest estimate the first attempts take.
  static std::int64_t plain_limit(std::int64_t budget) { return budget + budget / 4; }

  // The front's last (smallest) plan is always worth building: it is what
  // the error message reports when nothing fits.
  bool worth_building(const PlanChoice& plan, bool last) const {
    if (last) return true;
    if (twin_sank(plan)) return false;
    if (attempts_ < kPlainAttempts) return plan.estimate.peak_bytes <= plain_limit(budget_);
    return plan.estimate.peak_bytes + shortfall_ <= budget_;
  }
  bool exhausted() const { return attempts_ >= kPlainAttempts + kCalibratedAttempts; }

  // A twin of `plan` was built and did not fit, and would not after the
  // difference of their estimates with a 64th of each limit to spare.
  bool twin_sank(const PlanChoice& plan) const {
    return std::any_of(rejections_.begin(), rejections_.end(), [&](const Rejection& seen) {
      if (!seen.plan.same_repeat_body(plan, *chain_)) return false;
      const std::int64_t peak = seen.peak + plan.estimate.peak_bytes - seen.plan.estimate.peak_bytes;
      const std::int64_t data = seen.data + plan.estimate.data_bytes - seen.plan.estimate.data_bytes;
      return peak > budget_ + budget_ / 64 || data > interleaved_ + interleaved_ / 64;
    });
  }
  // Whether this very plan was built already and did not fit.
  bool tried(const PlanChoice& plan) const {
    return std::any_of(rejections_.begin(), rejections_.end(),
                       [&](const Rejection& seen) { return seen.plan.same_plan(plan); });
  }

  // `plan` was built to `peak` bytes, `data` of them in interleaved
  // memory, and did not fit.
  void rejected(const PlanChoice& plan, std::int64_t peak, std::int64_t data) {
    const std::int64_t peak_missed = peak - plan.estimate.peak_bytes, data_missed = data - plan.estimate.data_bytes;
    shortfall_ = attempts_ ? std::min(shortfall_, peak_missed) : peak_missed;
    data_shortfall_ = attempts_ ? std::min(data_shortfall_, data_missed) : data_missed;
    ++attempts_;
    rejections_.push_back(Rejection{plan, peak, data});
  }
  // The least misses seen, never below zero (an estimate that was high
  // does not lower the bar).
  std::optional<EstimateShortfall> least_missed() const {
    if (!attempts_) return std::nullopt;
    return EstimateShortfall{std::max<std::int64_t>(0, shortfall_), std::max<std::int64_t>(0, data_shortfall_)};
  }

 private:
  struct Rejection {
    PlanChoice plan;
    std::int64_t peak, data;
  };
  const Chain* chain_;
  std::int64_t budget_, interleaved_;
  std::int64_t shortfall_ = 0;  // of the peak; may be negative: the rule of the later attempts
  std::int64_t data_shortfall_ = 0;
  int attempts_ = 0;
  std::vector<Rejection> rejections_;
};

}  // namespace tilec::compiler
