// The driver's choice of which front plans to build.
#include "compiler/attempt_order.h"

#include <gtest/gtest.h>

namespace tilec::compiler {
namespace {

void reject_plain_attempts(AttemptOrder& order, std::int64_t estimate, std::int64_t peak) {
  for (int i = 0; i < AttemptOrder::kPlainAttempts; ++i) {
    ASSERT_TRUE(order.worth_building(estimate, false));
    order.rejected(estimate, peak);
  }
}

TEST(AttemptOrder, FirstAttemptsTakeEveryPlanAQuarterOverTheBudget) {
  AttemptOrder order(1000);
  EXPECT_TRUE(order.worth_building(1250, false));
  EXPECT_FALSE(order.worth_building(1251, false));
  EXPECT_TRUE(order.worth_building(5000, true));  // the last is always built
  order.rejected(900, 1300);                      // a miss does not narrow them
  EXPECT_TRUE(order.worth_building(1200, false));
}

TEST(AttemptOrder, LaterAttemptsSkipPlansTheMeasuredShortfallWouldSinkToo) {
  AttemptOrder order(1000);
  reject_plain_attempts(order, 900, 1300);  // estimates 400 low, eight times
  EXPECT_FALSE(order.exhausted());
  EXPECT_FALSE(order.worth_building(901, false));  // near-twins of the rejected plans
  EXPECT_FALSE(order.worth_building(601, false));
  EXPECT_TRUE(order.worth_building(600, false));
}

TEST(AttemptOrder, TheSmallestShortfallSeenDecides) {
  AttemptOrder order(1000);
  reject_plain_attempts(order, 900, 1300);
  order.rejected(700, 1050);  // only 350 low this time
  EXPECT_TRUE(order.worth_building(650, false));
  order.rejected(650, 1500);  // a worse miss does not tighten the rule
  EXPECT_TRUE(order.worth_building(650, false));
}

TEST(AttemptOrder, AttemptsEndAfterBothRounds) {
  AttemptOrder order(1000);
  reject_plain_attempts(order, 900, 1300);
  for (int i = 0; i < AttemptOrder::kCalibratedAttempts; ++i) {
    EXPECT_FALSE(order.exhausted());
    order.rejected(500, 1100);
  }
  EXPECT_TRUE(order.exhausted());
}

}  // namespace
}  // namespace tilec::compiler
