#include "support/error.h"

#include <gtest/gtest.h>

#include <vector>

namespace tilec {
namespace {

std::string failure_of(std::uint64_t bytes, bool& asked) {
  try {
    host_allocation(bytes, "the test's buffer", [&] {
      asked = true;
      throw std::bad_alloc();
    });
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Failure);
    return error.what();
  }
  return "";
}

TEST(HostAllocation, RefusalsSayWhatWasAskedFor) {
  bool asked = false;
  EXPECT_EQ(failure_of(1 << 20, asked), "host memory: cannot allocate 1,048,576 bytes for the test's buffer");
  EXPECT_TRUE(asked);
  EXPECT_EQ(host_allocation(8, "a vector", [] { return std::vector<int>(2, 7); }), (std::vector<int>{7, 7}));
}

// Sanitizer allocators abort on a request no host could meet, so it is never made.
TEST(HostAllocation, RequestsBeyondTheAddressSpaceAreNeverMade) {
  bool asked = false;
  EXPECT_EQ(failure_of(kLargestHostAllocation + 1, asked),
            "host memory: cannot allocate 140,737,488,355,329 bytes for the test's buffer");
  EXPECT_FALSE(asked);
  failure_of(kLargestHostAllocation, asked);
  EXPECT_TRUE(asked);
}

}  // namespace
}  // namespace tilec
