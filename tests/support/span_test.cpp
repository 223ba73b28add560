#include "support/error.h"
#include "support/span.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <thread>

namespace tilec {
namespace {

TEST(Span, NestsAndRecordsIntoTheCurrentTimeline) {
  Timeline timeline;
  {
    TimelineScope scope(timeline);
    Span outer("outer");
    {
      Span inner("inner");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  auto records = timeline.records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].name, "inner");
  EXPECT_EQ(records[0].depth, 1);
  EXPECT_EQ(records[1].name, "outer");
  EXPECT_EQ(records[1].depth, 0);
  EXPECT_GE(records[1].wall_seconds, records[0].wall_seconds);
  EXPECT_GE(records[0].wall_seconds, 0.002);
  // Sleeping is not busy time.
  EXPECT_LT(records[0].busy_seconds, records[0].wall_seconds);
  ASSERT_EQ(timeline.top_level().size(), 1u);
  EXPECT_EQ(timeline.top_level()[0].name, "outer");
}

TEST(Span, WritesChromeTraceEvents) {
  Timeline timeline;
  {
    TimelineScope scope(timeline);
    Span span("stage");
  }
  nlohmann::json trace = timeline.chrome_trace();
  ASSERT_EQ(trace["traceEvents"].size(), 1u);
  EXPECT_EQ(trace["traceEvents"][0]["name"], "stage");
  EXPECT_EQ(trace["traceEvents"][0]["ph"], "X");
}

TEST(Span, ReportsEachBeginToTheProgressCallback) {
  Timeline timeline;
  std::vector<std::string> begun;
  timeline.on_begin = [&](const std::string& name) { begun.push_back(name); };
  {
    TimelineScope scope(timeline);
    Span a("a");
    Span b("b");
  }
  EXPECT_EQ(begun, (std::vector<std::string>{"a", "b"}));
}

TEST(Error, IsOneLineWithItsPlace) {
  Error error(ErrorKind::BadInput, "model.json:3:14", "expected ','\nbut found '}'");
  EXPECT_STREQ(error.what(), "model.json:3:14: expected ',' but found '}'");
  EXPECT_EQ(error.exit_code(), 2);
  EXPECT_EQ(Error(ErrorKind::Failure, "", "no plan").exit_code(), 1);
  EXPECT_STREQ(error.within("graph").what(), "graph: model.json:3:14: expected ',' but found '}'");
}

}  // namespace
}  // namespace tilec
