// The driver's choice of which front plans to build.
#include "compiler/attempt_order.h"

#include <gtest/gtest.h>

namespace tilec::compiler {
namespace {

TEST(AttemptOrder, BeforeAnyRejectionAPlanAQuarterOverTheBudgetIsBuilt) {
  AttemptOrder order(1000);
  EXPECT_TRUE(order.worth_building(1250, false));
  EXPECT_FALSE(order.worth_building(1251, false));
  EXPECT_TRUE(order.worth_building(5000, true));  // the last is always built
}

TEST(AttemptOrder, ARejectionSkipsPlansItsShortfallWouldSinkToo) {
  AttemptOrder order(1000);
  ASSERT_TRUE(order.worth_building(900, false));
  order.rejected(900, 1300);  // the estimate was 400 low
  EXPECT_FALSE(order.worth_building(901, false));  // near-twins of the rejected plan
  EXPECT_FALSE(order.worth_building(601, false));
  EXPECT_TRUE(order.worth_building(600, false));
}

TEST(AttemptOrder, TheSmallestShortfallSeenDecides) {
  AttemptOrder order(1000);
  order.rejected(900, 1300);
  order.rejected(700, 1050);  // only 350 low this time
  EXPECT_TRUE(order.worth_building(650, false));
  order.rejected(650, 1500);  // a worse miss does not tighten the rule
  EXPECT_TRUE(order.worth_building(650, false));
}

}  // namespace
}  // namespace tilec::compiler
