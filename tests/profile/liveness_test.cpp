// Memory over time: live bytes per superstep from the regions' lifetimes,
// what is live at the peak, and the simulator's observed peak against the
// plan's.
#include "profile/liveness.h"
#include "profile_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tilec::profile {
namespace {

using ::testing::HasSubstr;

// Code resident at the bottom; "a" (supersteps 0-1) and "b" (2) share
// addresses; "inside" lies in "a" (an eliminated copy) and counts once.
ProfileData mapped_profile() {
  ProfileData profile = testing::blank_profile(2, 100);
  profile.regions = {{"code", 0x4c000, 1000, package::RegionKind::Code, -1, -1},
                     {"a", 0x80000, 4000, package::RegionKind::Tensor, 0, 1, "fc1"},
                     {"inside", 0x80100, 256, package::RegionKind::Tensor, 1, 1, "fc2"},
                     {"b", 0x80000, 3000, package::RegionKind::Scratch, 2, 2, "fc2"},
                     {"c", 0x81000, 500, package::RegionKind::ExchangeBuffer, 1, 2, "fc1"}};
  profile.peak_tile_bytes = 1000 + 4096 + 500;
  profile.tile_stats[0].memory_bytes = 5000;
  profile.tile_stats[1].memory_bytes = 5596;
  return profile;
}

TEST(Liveness, LiveBytesPerSuperstepCountEachByteOnce) {
  const Liveness memory = liveness(mapped_profile());
  EXPECT_EQ(memory.live_bytes, (std::vector<std::uint64_t>{1000 + 4000, 1000 + 4000 + 500, 1000 + 3000 + 500}));
  EXPECT_EQ(memory.peak_superstep, 1u);
  EXPECT_EQ(memory.peak_live_bytes, 5500u);
  ASSERT_EQ(memory.live_at_peak.size(), 4u);
  EXPECT_EQ(memory.live_at_peak[0].name, "a");
  EXPECT_EQ(memory.live_at_peak[1].name, "code");
  EXPECT_TRUE(memory.live_at_peak[1].resident);
  EXPECT_EQ(memory.live_at_peak[3].name, "inside");
  EXPECT_EQ(memory.live_at_peak[3].op, "fc2");
  // By op: fc1 holds a and c; the code serves none; fc2 the region inside a.
  ASSERT_EQ(memory.live_at_peak_by_op.size(), 3u);
  EXPECT_EQ(memory.live_at_peak_by_op[0].op, "fc1");
  EXPECT_EQ(memory.live_at_peak_by_op[0].bytes, 4500u);
  EXPECT_EQ(memory.live_at_peak_by_op[0].regions, 2u);
  EXPECT_EQ(memory.live_at_peak_by_op[1].op, "");
  EXPECT_EQ(memory.live_at_peak_by_op[2].bytes, 256u);
  EXPECT_EQ(memory.planned_peak_bytes, 5596u);
  EXPECT_EQ(memory.observed_peak_bytes, 5596u);
  EXPECT_EQ(memory.observed_peak_tile, 1u);
  const std::string text = liveness_text(memory, 2);
  EXPECT_THAT(text, HasSubstr("planned peak 5,596 bytes (the extent the compiler placed); observed 5,596 bytes (tile 1, "
                              "the extent it touched): equal"));
  EXPECT_THAT(text, HasSubstr("the peak, 5,500 bytes, in superstep 1"));
  EXPECT_THAT(text, HasSubstr("live at the peak (2 of 4 regions)"));
  EXPECT_THAT(text, HasSubstr("  op fc1\n"));
  EXPECT_THAT(text, HasSubstr("live at the peak by op (2 of 3; a region inside another counts in both)"));
  EXPECT_EQ(liveness_json(memory)["live_at_peak_by_op"][0]["op"], "fc1");
  EXPECT_EQ(liveness_json(memory)["live_bytes"][2], 4500);
}

// The compiled MLP on 16 tiles: the simulator touches exactly the extent
// the compiler planned, and the live bytes never pass it.
TEST(Liveness, TheSimulatorsPeakEqualsThePlans) {
  const ProfileData& profile = testing::mlp_profile();
  const Liveness memory = liveness(profile);
  EXPECT_GT(memory.planned_peak_bytes, 0u);
  EXPECT_EQ(memory.observed_peak_bytes, memory.planned_peak_bytes);
  EXPECT_LE(memory.peak_live_bytes, memory.planned_peak_bytes);
  EXPECT_GT(memory.live_bytes.size(), 1u);
  EXPECT_FALSE(memory.live_at_peak.empty());
  // The compiler names what each buffer serves: the MLP's weights and
  // partial sums serve its gemms.
  bool gemm_named = false;
  for (const LiveOp& op : memory.live_at_peak_by_op) gemm_named = gemm_named || op.op.starts_with("gemm");
  EXPECT_TRUE(gemm_named);
}

TEST(Liveness, QueryMemoryFromTheCommandLine) {
  const std::string file = ::testing::TempDir() + "/tilec_liveness_cli.tprof";
  write_profile(file, testing::mlp_profile());
  const testing::CommandResult text = testing::run_tilec("profile query " + file + " --memory", "memory_text");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("): equal\n"));
  EXPECT_THAT(text.out, HasSubstr("live at the peak"));
  const testing::CommandResult json = testing::run_tilec("profile query " + file + " --memory --json", "memory_json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["observed_peak_bytes"], report["planned_peak_bytes"]);
}

}  // namespace
}  // namespace tilec::profile
