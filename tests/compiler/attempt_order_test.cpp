// The driver's choice of which front plans to build.
#include "compiler/attempt_order.h"

#include <gtest/gtest.h>

namespace tilec::compiler {
namespace {

// A plan estimated at `estimate` bytes built to `peak` (its data as
// estimated).
void reject(AttemptOrder& order, std::int64_t estimate, std::int64_t peak) {
  order.rejected(MidEstimate{0, estimate, 0}, peak, 0);
}

void reject_plain_attempts(AttemptOrder& order, std::int64_t estimate, std::int64_t peak) {
  for (int i = 0; i < AttemptOrder::kPlainAttempts; ++i) {
    ASSERT_TRUE(order.worth_building(estimate, false));
    reject(order, estimate, peak);
  }
}

TEST(AttemptOrder, FirstAttemptsTakeEveryPlanAQuarterOverTheBudget) {
  AttemptOrder order(1000);
  EXPECT_TRUE(order.worth_building(1250, false));
  EXPECT_FALSE(order.worth_building(1251, false));
  EXPECT_TRUE(order.worth_building(5000, true));  // the last is always built
  reject(order, 900, 1300);                      // a miss does not narrow them
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
  reject(order, 700, 1050);  // only 350 low this time
  EXPECT_TRUE(order.worth_building(650, false));
  reject(order, 650, 1500);  // a worse miss does not tighten the rule
  EXPECT_TRUE(order.worth_building(650, false));
}

TEST(AttemptOrder, AttemptsEndAfterBothRounds) {
  AttemptOrder order(1000);
  reject_plain_attempts(order, 900, 1300);
  for (int i = 0; i < AttemptOrder::kCalibratedAttempts; ++i) {
    EXPECT_FALSE(order.exhausted());
    reject(order, 500, 1100);
  }
  EXPECT_TRUE(order.exhausted());
}

// What a second search is told: the least miss seen of the peak and of the
// interleaved data, each on its own, never below zero (an estimate that
// was high does not lower the bar).
TEST(AttemptOrder, ASecondSearchIsToldTheLeastMissOfEach) {
  AttemptOrder order(1000);
  EXPECT_FALSE(order.least_missed().has_value());
  order.rejected(MidEstimate{0, 900, 600}, 1300, 700);  // 400 and 100 low
  order.rejected(MidEstimate{0, 800, 500}, 1000, 650);  // 200 and 150 low
  ASSERT_TRUE(order.least_missed().has_value());
  EXPECT_EQ(order.least_missed()->peak, 200);
  EXPECT_EQ(order.least_missed()->data, 100);
  order.rejected(MidEstimate{0, 1100, 700}, 1050, 690);  // both high
  EXPECT_EQ(order.least_missed()->peak, 0);
  EXPECT_EQ(order.least_missed()->data, 0);
}

}  // namespace
}  // namespace tilec::compiler
