#include "support/host_memory.h"
#include "support/number_text.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace tilec {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;

// Touches `bytes` of fresh memory so that it becomes resident.
std::vector<char> resident(std::uint64_t bytes) {
  std::vector<char> block(bytes);
  std::memset(block.data(), 1, block.size());
  return block;
}

TEST(HostMemory, ThePeakGrowsWithMemoryTouchedAndRestartsBelowIt) {
  const std::optional<std::uint64_t> before = peak_resident_bytes();
  ASSERT_TRUE(before.has_value());
  EXPECT_GT(*before, 0u);
  std::uint64_t raised = 0;
  {
    const std::vector<char> block = resident(*before + 64 * kMiB);
    raised = peak_resident_bytes().value_or(0);
    EXPECT_GE(raised, *before + 64 * kMiB);
  }
  if (!restart_peak_resident()) GTEST_SKIP() << "this host does not let the process restart its peak";
  // The block is freed: the mark restarts at what is resident now.
  EXPECT_LT(peak_resident_bytes().value_or(raised), raised);
}

TEST(HostMemory, TheHostHasMoreAvailableThanNothing) {
  const std::optional<std::uint64_t> available = available_memory_bytes();
  ASSERT_TRUE(available.has_value());
  EXPECT_GT(*available, 0u);
  EXPECT_EQ(*available % 1024, 0u);  // the host counts in kB
}

TEST(NumberText, MemoryInDecimalUnitsToThreeDigits) {
  EXPECT_EQ(memory_text(0), "0 B");
  EXPECT_EQ(memory_text(900), "900 B");
  EXPECT_EQ(memory_text(999), "999 B");
  EXPECT_EQ(memory_text(1000), "1.00 kB");
  EXPECT_EQ(memory_text(37101568), "37.1 MB");
  EXPECT_EQ(memory_text(999600), "1.00 MB");
  EXPECT_EQ(memory_text(123456789), "123 MB");
  EXPECT_EQ(memory_text(2536956000), "2.54 GB");
}

}  // namespace
}  // namespace tilec
