#include "support/duration.h"

#include <gtest/gtest.h>

namespace tilec {
namespace {

TEST(FormatDuration, MatchesTheReferenceReportStrings) {
  EXPECT_EQ(format_duration(270e-6), "270µs");
  EXPECT_EQ(format_duration(89.1e-6), "89.1µs");
  EXPECT_EQ(format_duration(1.33e-3), "1.33ms");
  EXPECT_EQ(format_duration(29.4e-3), "29.4ms");
  EXPECT_EQ(format_duration(41.9), "41.9s");
  EXPECT_EQ(format_duration(107.4), "107s");
  EXPECT_EQ(format_duration(0.111), "111ms");
  EXPECT_EQ(format_duration(850e-9), "850ns");
}

TEST(FormatDuration, RoundsIntoTheNextUnit) {
  EXPECT_EQ(format_duration(999.7e-6), "1.00ms");
  EXPECT_EQ(format_duration(0.99951), "1.00s");
  EXPECT_EQ(format_duration(9.996e-3), "10.0ms");
}

TEST(FormatDuration, KeepsSecondsBeyondAThousand) {
  EXPECT_EQ(format_duration(1234.4), "1234s");
  EXPECT_EQ(format_duration(0), "0ns");
}

TEST(ParseDuration, ReadsEveryUnit) {
  EXPECT_DOUBLE_EQ(*parse_duration("270µs"), 270e-6);
  EXPECT_DOUBLE_EQ(*parse_duration("1.33ms"), 1.33e-3);
  EXPECT_DOUBLE_EQ(*parse_duration("41.9s"), 41.9);
  EXPECT_DOUBLE_EQ(*parse_duration("850ns"), 850e-9);
  EXPECT_FALSE(parse_duration("1.33 ms"));
  EXPECT_FALSE(parse_duration("ms"));
  EXPECT_FALSE(parse_duration("fast"));
}

TEST(ParseDuration, RoundTripsFormattedValues) {
  for (double seconds : {3.21e-8, 4.5e-6, 7.77e-4, 0.0123, 2.5, 88.8, 412.0}) {
    auto parsed = parse_duration(format_duration(seconds));
    ASSERT_TRUE(parsed) << seconds;
    EXPECT_NEAR(*parsed, seconds, seconds * 5e-3) << format_duration(seconds);
  }
}

}  // namespace
}  // namespace tilec
