// Which plans of the search's front the driver builds. Estimates miss the
// exact peak by a margin that each rejection measures; a plan is built only
// if it could still fit after the smallest margin seen.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tilec::compiler {

class AttemptOrder {
 public:
  explicit AttemptOrder(std::int64_t budget) : budget_(budget), shortfall_(-budget / 4) {}

  // The front's last (smallest) plan is always worth building: it is what
  // the error message reports when nothing fits.
  bool worth_building(std::int64_t estimate, bool last) const { return last || estimate + shortfall_ <= budget_; }
  void rejected(std::int64_t estimate, std::int64_t peak) {
    shortfall_ = measured_ ? std::min(shortfall_, peak - estimate) : peak - estimate;
    measured_ = true;
  }

 private:
  std::int64_t budget_;
  std::int64_t shortfall_;  // until a rejection: the estimate may be a quarter high
  bool measured_ = false;
};

}  // namespace tilec::compiler
