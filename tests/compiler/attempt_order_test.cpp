// The driver's choice of which front plans to build.
#include "compiler/attempt_order.h"

#include <gtest/gtest.h>

namespace tilec::compiler {
namespace {

// A chain whose step 0 is the repeat's body and step 1 runs once.
Chain repeat_then_head() {
  Chain chain;
  chain.repeat = RepeatRegion{"layers", 0, 0, 27, {}};
  return chain;
}

// A plan with body choice `body` and head choice `head`, estimated at
// `estimate` bytes, `data` of them in interleaved memory.
PlanChoice plan(std::int64_t estimate, int body, int head = 0, std::int64_t data = 0) {
  PlanChoice choice;
  choice.step_choice = {body, head};
  choice.estimate = MidEstimate{0, estimate, data};
  return choice;
}

// Rejects a plan estimated at `estimate` bytes and built to `peak` (its
// data as estimated); each call's plan is a different one.
void reject(AttemptOrder& order, std::int64_t estimate, std::int64_t peak) {
  static int next_body = 1000;
  order.rejected(plan(estimate, next_body++), peak, 0);
}

void reject_plain_attempts(AttemptOrder& order, std::int64_t estimate, std::int64_t peak) {
  for (int i = 0; i < AttemptOrder::kPlainAttempts; ++i) {
    ASSERT_TRUE(order.worth_building(plan(estimate, -1), false));
    reject(order, estimate, peak);
  }
}

const Chain kChain = repeat_then_head();

TEST(AttemptOrder, FirstAttemptsTakeEveryPlanAQuarterOverTheBudget) {
  AttemptOrder order(kChain, 1000, 640);
  EXPECT_TRUE(order.worth_building(plan(1250, -1), false));
  EXPECT_FALSE(order.worth_building(plan(1251, -1), false));
  EXPECT_TRUE(order.worth_building(plan(5000, -1), true));  // the last is always built
  reject(order, 900, 1300);  // a miss does not narrow them
  EXPECT_TRUE(order.worth_building(plan(1200, -1), false));
}

TEST(AttemptOrder, LaterAttemptsSkipPlansTheMeasuredShortfallWouldSinkToo) {
  AttemptOrder order(kChain, 1000, 640);
  reject_plain_attempts(order, 900, 1300);  // estimates 400 low, eight times
  EXPECT_FALSE(order.exhausted());
  EXPECT_FALSE(order.worth_building(plan(901, -1), false));  // plans the measured shortfall would sink
  EXPECT_FALSE(order.worth_building(plan(601, -1), false));
  EXPECT_TRUE(order.worth_building(plan(600, -1), false));
}

TEST(AttemptOrder, TheSmallestShortfallSeenDecides) {
  AttemptOrder order(kChain, 1000, 640);
  reject_plain_attempts(order, 900, 1300);
  reject(order, 700, 1050);  // only 350 low this time
  EXPECT_TRUE(order.worth_building(plan(650, -1), false));
  reject(order, 650, 1500);  // a worse miss does not tighten the rule
  EXPECT_TRUE(order.worth_building(plan(650, -1), false));
}

TEST(AttemptOrder, AttemptsEndAfterBothRounds) {
  AttemptOrder order(kChain, 1000, 640);
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
  AttemptOrder order(kChain, 1000, 640);
  EXPECT_FALSE(order.least_missed().has_value());
  order.rejected(plan(900, 1, 0, 600), 1300, 700);  // 400 and 100 low
  order.rejected(plan(800, 2, 0, 500), 1000, 650);  // 200 and 150 low
  ASSERT_TRUE(order.least_missed().has_value());
  EXPECT_EQ(order.least_missed()->peak, 200);
  EXPECT_EQ(order.least_missed()->data, 100);
  order.rejected(plan(1100, 3, 0, 700), 1050, 690);  // both high
  EXPECT_EQ(order.least_missed()->peak, 0);
  EXPECT_EQ(order.least_missed()->data, 0);
}

// A plan that differs from a rejected one only outside the repeat is
// skipped while the rejected one's exact peak or data, moved by the
// difference of their estimates, stays over its limit (a 64th to spare);
// a plan with another body, or one whose twin would come under, is built.
TEST(AttemptOrder, TwinsOfARejectedPlanAreSkippedWhileTheyWouldMissToo) {
  AttemptOrder order(kChain, 6400, 4096);
  order.rejected(plan(6000, 1, 0, 3000), 6800, 3800);  // peak 300 over, 800 low
  EXPECT_FALSE(order.worth_building(plan(5900, 1, 7, 3000), false));  // 6,700
  EXPECT_TRUE(order.worth_building(plan(5700, 1, 7, 3000), false));   // 6,500: within 6,400 + 100
  EXPECT_TRUE(order.worth_building(plan(5600, 1, 7, 3000), false));   // data 3,800
  EXPECT_FALSE(order.worth_building(plan(5600, 1, 7, 3400), false));  // data 4,200 > 4,096 + 64
  EXPECT_TRUE(order.worth_building(plan(5900, 2, 0, 3000), false));   // another body
  EXPECT_TRUE(order.worth_building(plan(5900, 1, 7, 3000), true));    // the last is always built
  PlanChoice other_chunks = plan(5900, 1, 7, 3000);
  other_chunks.chunks = 2;
  EXPECT_TRUE(order.worth_building(other_chunks, false));
  EXPECT_TRUE(order.twin_sank(plan(5900, 1, 7, 3000)));
  EXPECT_TRUE(order.tried(plan(1, 1, 0, 1)));  // the same plan, whatever its estimate
  EXPECT_FALSE(order.tried(plan(6000, 1, 7, 3000)));
}

// Without a repeat every step counts: only the same plan is a twin.
TEST(AttemptOrder, WithoutARepeatOnlyTheSamePlanIsATwin) {
  const Chain no_repeat;
  AttemptOrder order(no_repeat, 6400, 4096);
  order.rejected(plan(6000, 1, 0, 3000), 6800, 3800);
  EXPECT_TRUE(order.worth_building(plan(5900, 1, 7, 3000), false));
  EXPECT_FALSE(order.worth_building(plan(5900, 1, 0, 3000), false));
}

}  // namespace
}  // namespace tilec::compiler
