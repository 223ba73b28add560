// Which plans of the search's front the driver builds, fastest first.
// The first attempts take every plan whose estimate is at most a quarter
// over the budget. Estimates miss the exact peak by a margin each rejection
// measures; once those attempts are spent (on near-twins of one plan, say),
// more follow, each only for a plan that could still fit after the smallest
// margin seen.
#pragma once

#include <algorithm>
#include <cstdint>

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
  void rejected(std::int64_t estimate, std::int64_t peak) {
    shortfall_ = attempts_ ? std::min(shortfall_, peak - estimate) : peak - estimate;
    ++attempts_;
  }

 private:
  std::int64_t budget_;
  std::int64_t shortfall_ = 0;
  int attempts_ = 0;
};

}  // namespace tilec::compiler
