// Machine descriptions: presets, overrides and machine files give one model,
// named by one canonical spelling, and every bad description is refused
// with one line naming the field.
#include "target/machine_description.h"

#include "support/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tilec {
namespace {

using ::testing::HasSubstr;

std::string machine_error(const std::string& spelling) {
  try {
    machine_by_name(spelling);
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput);
    return error.what();
  }
  ADD_FAILURE() << spelling << " was accepted";
  return "";
}

std::string write_machine_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/tilec_machine_" + name + ".json";
  std::ofstream(path) << text;
  return path;
}

TEST(MachineDescription, PresetsFromPublicFacts) {
  const MachineModel c600 = machine_by_name("ipu21");
  EXPECT_EQ(c600.name, "ipu21");
  EXPECT_EQ(c600.tiles, 1472u);
  EXPECT_TRUE(c600.amp_fp8);
  const MachineModel bow = machine_by_name("bow");
  EXPECT_EQ(bow.clock_ghz, 1.85);
  EXPECT_FALSE(bow.amp_fp8);
  const MachineModel mk2 = machine_by_name("ipu2");
  EXPECT_EQ(mk2.tiles, 1472u);
  EXPECT_EQ(mk2.memory_bytes(), 624u * 1024);
  EXPECT_FALSE(mk2.amp_fp8);
  const MachineModel mk1 = machine_by_name("ipu1");
  EXPECT_EQ(mk1.name, "ipu1");
  EXPECT_EQ(mk1.tiles, 1216u);
  EXPECT_EQ(mk1.memory_bytes(), 256u * 1024);
  EXPECT_EQ(mk1.memory_begin, mk1.standard.begin);
  EXPECT_EQ(mk1.memory_end, mk1.interleaved.end);
  EXPECT_EQ(mk1.clock_ghz, 1.6);
  EXPECT_FALSE(mk1.amp_fp8);
}

TEST(MachineDescription, OverridesAndTheirCanonicalSpelling) {
  const MachineModel wide = machine_by_name("ipu21:exchange-bytes=8,tiles=1216");
  EXPECT_EQ(wide.tiles, 1216u);
  EXPECT_EQ(wide.exchange_bytes_per_cycle, 8u);
  EXPECT_EQ(wide.name, "ipu21:tiles=1216,exchange-bytes=8");  // table order
  EXPECT_EQ(machine_by_name(wide.name).name, wide.name);
  EXPECT_EQ(machine_by_name("ipu21:tiles=16").name, "ipu21:16");
  EXPECT_EQ(machine_by_name("ipu21:16").tiles, 16u);
  EXPECT_EQ(machine_by_name("ipu21:tiles=1472").name, "ipu21");
  const MachineModel moved = machine_by_name("ipu1:standard-end=0x60000,interleaved-begin=0x60000,sync-cycles=1200");
  EXPECT_EQ(moved.standard.bytes(), 0x14000u);
  EXPECT_EQ(moved.sync_cycles, 1200u);
  EXPECT_EQ(machine_by_name(moved.name).standard.end, 0x60000u);
  EXPECT_EQ(machine_by_name("ipu2:amp-types=f8/f16/f32").name, "ipu2:amp-types=f8/f16/f32");
  EXPECT_TRUE(machine_by_name("ipu2:amp-types=f8/f16/f32").amp_fp8);
}

// The documented file spells out every field of the GC2: the same machine
// as the ipu1 preset.
TEST(MachineDescription, TheMk1FileIsTheIpu1Preset) {
  const MachineModel file = machine_by_name(std::string(TILEC_SOURCE_DIR) + "/machines/mk1.json");
  EXPECT_EQ(describe_machine(file)["fields"], describe_machine(machine_by_name("ipu1"))["fields"]);
  EXPECT_EQ(machine_by_name(file.name).name, file.name);  // packages name it without the file
  const MachineModel wide = machine_by_name(std::string(TILEC_SOURCE_DIR) + "/machines/ipu21-exchange8.json");
  EXPECT_EQ(wide.name, "ipu21:exchange-bytes=8");
  EXPECT_EQ(describe_machine(wide)["fields"].size(), machine_fields().size());
  EXPECT_THAT(machine_summary(machine_by_name("ipu1")),
              HasSubstr("ipu1: 1216 tiles (19 columns of 64), 256 KiB a tile (standard 96 KiB, interleaved 160 KiB)"));
}

TEST(MachineDescription, BadOverridesNameTheFieldAndTheProblem) {
  const std::pair<const char*, const char*> cases[] = {
      {"ipu3", "unknown target 'ipu3' (presets: ipu21, bow, ipu2, ipu1"},
      {"ipu21:tiles=0", "target ipu21:tiles=0: tiles: 0 is outside 1..4096"},
      {"ipu21:0", "tiles: 0 is outside 1..4096"},
      {"ipu21:speed=9", "unknown field 'speed' (the fields: tiles, tiles-per-column,"},
      {"ipu21:tiles", "'tiles' is not field=value"},
      {"ipu21:tiles=many", "tiles: 'many' is not a whole number"},
      {"ipu21:tiles=16,tiles=32", "target ipu21:tiles=16,tiles=32: tiles is given twice"},
      {"ipu21:exchange-bytes=0", "exchange-bytes: 0 is not a multiple of 4 in 4..256"},
      {"ipu21:exchange-bytes=6", "exchange-bytes: 6 is not a multiple of 4"},
      {"ipu21:amp-f8-macs=256", "amp-f8-macs: 256 cannot be honoured: amp.f8 does 128 MACs an issue"},
      {"ipu21:interleaved-load-bytes=32", "interleaved-load-bytes: 32 cannot be honoured"},
      {"ipu21:amp-types=f8/f16", "amp-types: f8/f16 lacks f16 or f32"},
      {"ipu21:amp-types=f64", "amp-types: 'f64' is not an AMP type"},
      {"ipu21:interleaved-begin=0x70000", "standard memory 0x4c000..0x80000 and interleaved memory 0x70000..0xe8000 overlap"},
      {"ipu21:interleaved-begin=0x90000", "standard memory ends at 0x80000 but interleaved memory begins at 0x90000"},
      {"ipu21:standard-end=0x4c000", "standard memory 0x4c000..0x4c000 is empty"},
      {"ipu21:interleaved-end=0xe8008", "does not start and end on 16 bytes"},
      {"ipu21:interleaved-end=0x200000", "interleaved-end: 0x200000 is past 0x100000"},
      {"ipu21:sync-cycles=0", "sync-cycles: a sync takes at least 1 cycle"},
      {"ipu21:clock-ghz=0", "clock-ghz: 0 is outside (0, 10]"},
      {"ipu21:tiles=4096,interleaved-end=0x100000", "4096 tiles of 737280 bytes pass the simulator's 2 GiB"},
  };
  for (const auto& [spelling, expected] : cases) EXPECT_THAT(machine_error(spelling), HasSubstr(expected)) << spelling;
}

TEST(MachineDescription, BadFilesNameTheFileAndTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"{\"tiles\": 12", "not valid JSON at byte"},
      {"[1, 2]", "a machine file holds one JSON object, not array"},
      {"{\"base\": \"ipu9\"}", "unknown target 'ipu9'"},
      {"{\"tiles\": 0}", "tiles: 0 is outside 1..4096"},
      {"{\"tiles\": -3}", "tiles: expected a whole number, got -3"},
      {"{\"tiles\": \"many\"}", "tiles: expected a number, got \"many\""},
      {"{\"exchange-bytes\": 0}", "exchange-bytes: 0 is not a multiple of 4"},
      {"{\"interleaved-begin\": \"0x70000\"}", "overlap"},
      {"{\"clock\": 2}", "unknown field 'clock'"},
      {"{\"amp-types\": [\"f16\", 3]}", "amp-types: '3' is not an AMP type"},
  };
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    const std::string path = write_machine_file(std::to_string(i), cases[i].first);
    const std::string error = machine_error(path);
    EXPECT_THAT(error, HasSubstr(path + ": ")) << cases[i].first;
    EXPECT_THAT(error, HasSubstr(cases[i].second)) << cases[i].first;
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
  EXPECT_THAT(machine_error("/no/such/machine.json"), HasSubstr("/no/such/machine.json: cannot open the machine file"));
}

}  // namespace
}  // namespace tilec
