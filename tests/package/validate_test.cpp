// Every validation failure, each with its one-line message.
#include "package/validate.h"
#include "sample_package.h"

#include <gtest/gtest.h>

#include <functional>

namespace tilec::package {
namespace {

using testing::bad_input_message;
using testing::piece;
using testing::sample_package;
using testing::shared_bytes;

// The error of validating the sample package after `change`.
std::string error_after(const std::function<void(Package&)>& change) {
  Package package = sample_package();
  change(package);
  return bad_input_message([&] { validate(package); });
}

Binding& binding(Package& package, std::string_view name) {
  for (Binding& candidate : package.bindings)
    if (candidate.name == name) return candidate;
  throw std::logic_error("no such binding");
}

TEST(Validate, Target) {
  EXPECT_EQ(error_after([](Package& p) { p.target = "ipu99"; }),
            "target: unknown target 'ipu99' (presets: ipu21, bow, ipu2, ipu1; or PRESET:N, PRESET:field=value,..., or a machine file FILE.json)");
  EXPECT_EQ(bad_input_message([] { validate(sample_package(), ipu21_cut(4)); }),
            "target: package is for 'ipu21:8', not 'ipu21:4'");
  EXPECT_EQ(error_after([](Package& p) { p.tiles.pop_back(); }),
            "target: package has 7 tile images but 'ipu21:8' has 8 tiles");
  EXPECT_EQ(error_after([](Package& p) { p.compile_info = "{\"graph\":"; }),
            "compile_info: is not valid JSON");
}

TEST(Validate, SegmentPlacement) {
  EXPECT_EQ(error_after([](Package& p) { p.tiles[1].segments[1].name.clear(); }),
            "tile 1: segment at 0x4d000 has no name");
  EXPECT_EQ(error_after([](Package& p) { p.tiles[1].segments[1].address = 0xE7FF0; }),
            "tile 1: segment '.args' at 0xe7ff0..0xe8018 lies outside tile memory "
            "0x4c000..0xe8000");
  EXPECT_EQ(error_after([](Package& p) { p.tiles[1].segments[1].address = 0x1000; }),
            "tile 1: segment '.args' at 0x1000..0x1028 lies outside tile memory 0x4c000..0xe8000");
  EXPECT_EQ(error_after([](Package& p) { p.tiles[6].segments[2].address = 0x7FFF8; }),
            "tile 6: segment '.kernels' at 0x7fff8 is executable but lies in interleaved memory");
  EXPECT_EQ(error_after([](Package& p) { p.tiles[6].segments[2].address = 0x4E004; }),
            "tile 6: executable segment '.kernels' at 0x4e004..0x4e044 is not whole 8-byte "
            "bundles at a 8-byte-aligned address");
  EXPECT_EQ(error_after([](Package& p) {
              p.tiles[6].segments[2].bytes = shared_bytes(std::vector<std::uint8_t>(12, 0));
            }),
            "tile 6: executable segment '.kernels' at 0x4e000..0x4e00c is not whole 8-byte "
            "bundles at a 8-byte-aligned address");
  EXPECT_EQ(error_after([](Package& p) { p.tiles[1].segments[1].address = 0x4C0F8; }),
            "tile 1: segments '.text' at 0x4c000..0x4c100 and '.args' at 0x4c0f8..0x4c120 "
            "overlap");
}

TEST(Validate, DataSegmentsMayUseInterleavedMemory) {
  Package package = sample_package();
  package.tiles[1].segments[1].address = 0xA0000;
  EXPECT_NO_THROW(validate(package));
}

TEST(Validate, EntryPoint) {
  EXPECT_EQ(error_after([](Package& p) { p.tiles[2].entry = 0x4C004; }),
            "tile 2: entry 0x4c004 is not 8-byte aligned");
  EXPECT_EQ(error_after([](Package& p) { p.tiles[2].entry = 0x4D000; }),
            "tile 2: entry 0x4d000 is not inside an executable segment");
  EXPECT_EQ(error_after([](Package& p) { p.tiles[2].entry = 0x4C100; }),
            "tile 2: entry 0x4c100 is not inside an executable segment");
  EXPECT_EQ(error_after([](Package& p) { p.tiles[7].entry = 0x4C000; }),
            "tile 7: entry 0x4c000 on a tile with no executable segment (idle tiles use 0)");
}

TEST(Validate, SymbolsRegionsAndPeak) {
  EXPECT_EQ(error_after([](Package& p) { p.tiles[3].symbols[0].address = 0xE7FF8; }),
            "tile 3: symbol 'main' at 0xe7ff8..0xe8008 lies outside tile memory 0x4c000..0xe8000");
  EXPECT_EQ(error_after([](Package& p) { p.tiles[3].symbols[1].kind = static_cast<SymbolKind>(9); }),
            "tile 3: symbol 'args' has unknown kind 9");
  EXPECT_EQ(error_after([](Package& p) {
              p.tiles[3].symbols.push_back({"fc1", 0x4d000, 64, SymbolKind::Op});
              p.tiles[3].symbols.push_back({"fc2", 0x4d020, 64, SymbolKind::Op});
            }),
            "tile 3: op symbols 'fc1' at 0x4d000..0x4d040 and 'fc2' at 0x4d020..0x4d060 overlap");
  EXPECT_EQ(error_after([](Package& p) {
              p.tiles[3].regions.push_back({"x", 0x80000, 64, RegionKind::Tensor, 4, 2});
            }),
            "tile 3: region 'x' lives in supersteps 4 to 2 (resident is -1 to -1)");
  EXPECT_EQ(error_after([](Package& p) { p.tiles[3].regions[2].size = 0x70000; }),
            "tile 3: region 'x' at 0x80000..0xf0000 lies outside tile memory 0x4c000..0xe8000");
  EXPECT_EQ(error_after([](Package& p) { p.tiles[3].regions[0].kind = static_cast<RegionKind>(5); }),
            "tile 3: region 'code' has unknown kind 5");
  EXPECT_EQ(error_after([](Package& p) { p.tiles[3].peak_bytes = 700000; }),
            "tile 3: peak of 700000 bytes exceeds the tile's 638976 bytes of memory");
}

TEST(Validate, ExchangeGroups) {
  EXPECT_EQ(error_after([](Package& p) { p.exchange_groups[1].clear(); }),
            "exchange group 1: is empty");
  EXPECT_EQ(error_after([](Package& p) { p.exchange_groups[2].push_back(8); }),
            "exchange group 2: tile 8 does not exist (ipu21:8 has 8 tiles)");
  EXPECT_EQ(error_after([](Package& p) { p.exchange_groups[0].push_back(2); }),
            "exchange group 0: lists tile 2 twice");
}

TEST(Validate, Schedule) {
  EXPECT_EQ(error_after([](Package& p) { p.schedule.chunks = 0; }), "schedule: has 5 supersteps but no chunks");
  EXPECT_EQ(error_after([](Package& p) { p.schedule.groups = 3; }),
            "schedule: 3 groups of 4 tiles do not fit ipu21:8's 8 tiles");
  EXPECT_EQ(error_after([](Package& p) { p.schedule.repeat_count = 0; }),
            "schedule: repeat 'blocks' has supersteps 1 to 3 and a count of 0");
  EXPECT_EQ(error_after([](Package& p) { p.schedule.repeat_last = 5; }),
            "schedule: repeat 'blocks' has supersteps 1 to 5 of the chunk's 5");
  EXPECT_EQ(error_after([](Package& p) { p.schedule.repeat_first = 4; }),
            "schedule: repeat 'blocks' has supersteps 4 to 3 of the chunk's 5");
}

TEST(Validate, BindingFields) {
  EXPECT_EQ(error_after([](Package& p) { p.bindings[1].name.clear(); }), "binding 1: has no name");
  // Inputs and parameters share one set of names, outputs another.
  EXPECT_EQ(error_after([](Package& p) { p.bindings[1].name = p.bindings[0].name; }),
            "binding 'x': name is used twice");
  Package output_named_as_input = sample_package();
  output_named_as_input.bindings[2].name = output_named_as_input.bindings[0].name;
  EXPECT_NO_THROW(validate(output_named_as_input));
  EXPECT_EQ(error_after([](Package& p) { binding(p, "w").role = static_cast<BindingRole>(3); }),
            "binding 'w': unknown role 3");
  EXPECT_EQ(error_after([](Package& p) {
              binding(p, "w").type.storage.element = static_cast<ElementType>(6);
            }),
            "binding 'w': unknown element type 6");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").type.storage.scale = 2; }),
            "binding 'x': scale 2 on f16 (only FP8 types carry a scale)");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "w").type.storage.scale = 65; }),
            "binding 'w': scale 65 is outside -64..64");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "w").type.storage.scale = -65; }),
            "binding 'w': scale -65 is outside -64..64");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "y").type.shape[1] = 0; }),
            "binding 'y': axis 1 has extent 0 (extents must be positive)");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "y").type.shape = {1 << 20, 1 << 20}; }),
            "binding 'y': tensor [1048576, 1048576] is larger than the device's 5111808 bytes "
            "of memory");
  EXPECT_EQ(error_after([](Package& p) {
              binding(p, "y").type.shape = {INT64_MAX, INT64_MAX, INT64_MAX};
            }),
            "binding 'y': tensor [9223372036854775807, 9223372036854775807, "
            "9223372036854775807] is larger than the device's 5111808 bytes of memory");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "s").pieces.clear(); }),
            "binding 's': has no pieces");
}

TEST(Validate, FP8ScaleAtTheLimitsIsAccepted) {
  Package package = sample_package();
  binding(package, "w").type.storage.scale = -64;
  EXPECT_NO_THROW(validate(package));
  binding(package, "w").type.storage.scale = 64;
  EXPECT_NO_THROW(validate(package));
}

TEST(Validate, PieceShape) {
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[1].tile = 8; }),
            "binding 'x': piece 1: tile 8 does not exist (ipu21:8 has 8 tiles)");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[1].strides.pop_back(); }),
            "binding 'x': piece 1: has 2 start, 2 size and 1 stride values for a rank-2 tensor");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[1].start[1] = -1; }),
            "binding 'x': piece 1: axis 1: start -1 size 3 lies outside the tensor's extent 6");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[1].size[1] = 0; }),
            "binding 'x': piece 1: axis 1: start 0 size 0 lies outside the tensor's extent 6");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[2].size[1] = 4; }),
            "binding 'x': piece 2: axis 1: start 3 size 4 lies outside the tensor's extent 6");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[2].start[0] = INT64_MAX; }),
            "binding 'x': piece 2: axis 0: start 9223372036854775807 size 2 lies outside the "
            "tensor's extent 4");
}

TEST(Validate, PieceStrides) {
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[1].strides[1] = 0; }),
            "binding 'x': piece 1: axis 1: stride 0 is not in 1..638976");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[1].strides[0] = -4; }),
            "binding 'x': piece 1: axis 0: stride -4 is not in 1..638976");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[1].strides[0] = INT64_MAX; }),
            "binding 'x': piece 1: axis 0: stride 9223372036854775807 is not in 1..638976");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[1].strides[0] = 2; }),
            "binding 'x': piece 1: strides [2, 1] for sizes [2, 3] place two elements at one "
            "address");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "y").pieces[1].strides = {8, 4, 2}; }),
            "binding 'y': piece 1: strides [8, 4, 2] for sizes [2, 2, 4] place two elements at "
            "one address");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[1].strides[0] = 638976; }),
            "binding 'x': piece 1: spans 638979 elements, more than a tile's memory");
}

TEST(Validate, StridesOfSingleElementAxesAreIgnored) {
  Package package = sample_package();
  binding(package, "y").pieces.push_back(piece(7, 0x80000, {0, 0, 0}, {1, 2, 8}, {-5, 8, 1}));
  binding(package, "y").pieces[0].start[0] = 1;
  binding(package, "y").pieces[0].size[0] = 1;
  binding(package, "y").pieces[1].start[0] = 1;
  binding(package, "y").pieces[1].size[0] = 1;
  EXPECT_NO_THROW(validate(package));
}

TEST(Validate, PieceMemory) {
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[0].address = 0xE7FF0; }),
            "binding 'x': piece 0: bytes 0xe7ff0..0xe8008 on tile 0 lie outside tile memory "
            "0x4c000..0xe8000");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[0].address = 0x4000; }),
            "binding 'x': piece 0: bytes 0x4000..0x4018 on tile 0 lie outside tile memory "
            "0x4c000..0xe8000");
  // The last element of a padded piece ends before its padding would.
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[1].address = 0xE7FF4; }),
            "binding 'x': piece 1: bytes 0xe7ff4..0xe8002 on tile 1 lie outside tile memory "
            "0x4c000..0xe8000");
}

TEST(Validate, PaddedPieceMayEndAtTheLastByte) {
  Package package = sample_package();
  binding(package, "x").pieces[1].address = 0xE8000 - 14;  // 7 elements of 2 bytes
  EXPECT_NO_THROW(validate(package));
}

TEST(Validate, InputsAndOutputsHoldEachElementOnce) {
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[2].start[1] = 2; }),
            "binding 'x': element [2, 2] is in pieces 1 and 2 (an input holds each element once)");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "x").pieces[2].size[1] = 2; }),
            "binding 'x': pieces hold 22 elements, fewer than the tensor's 24");
  EXPECT_EQ(error_after([](Package& p) {
              binding(p, "x").pieces[2].size[1] = 2;
              binding(p, "x").pieces[0].size[0] = 3;
            }),
            "binding 'x': element [2, 0] is in pieces 0 and 1 (an input holds each element once)");
  EXPECT_EQ(error_after([](Package& p) {
              binding(p, "y").pieces[1].start[2] = 2;
              binding(p, "y").pieces[1].size[2] = 6;
              binding(p, "y").pieces[1].strides = {16, 8, 1};
            }),
            "binding 'y': element [0, 0, 2] is in pieces 0 and 1 (an output holds each element "
            "once)");
  // With no element twice and none missing from the count, none can be
  // missing: "in no piece" is only reachable for parameters.
}

TEST(Validate, ParametersHoldEachElementAtLeastOnce) {
  EXPECT_EQ(error_after([](Package& p) {
              binding(p, "w").pieces[0].size[0] = 5;
              binding(p, "w").pieces[1].size[0] = 5;
            }),
            "binding 'w': element [5, 0] is in no piece");
  EXPECT_EQ(error_after([](Package& p) {
              Binding& w = binding(p, "w");
              w.pieces.erase(w.pieces.begin(), w.pieces.begin() + 2);
            }),
            "binding 'w': pieces hold 24 elements, fewer than the tensor's 48");
}

TEST(Validate, NoByteIsBoundTwice) {
  // x's piece on tile 0 (0x80000..0x80018) and the scalar output s.
  EXPECT_EQ(error_after([](Package& p) { binding(p, "s").pieces[0].address = 0x80010; }),
            "tile 0: binding 'x' piece 0 (0x80000..0x80018) overlaps binding 's' piece 0 "
            "(0x80010..0x80014)");
  EXPECT_EQ(error_after([](Package& p) { binding(p, "s").pieces[0].address = 0x4D020; }),
            "tile 0: segment '.args' (0x4d000..0x4d028) overlaps binding 's' piece 0 "
            "(0x4d020..0x4d024)");
  // A replica on the same tile as another, at the same place.
  EXPECT_EQ(error_after([](Package& p) { binding(p, "w").pieces[2].tile = 3; }),
            "tile 3: binding 'w' piece 2 (0x80000..0x80018) overlaps binding 'w' piece 0 "
            "(0x80000..0x80030)");
  EXPECT_EQ(error_after([](Package& p) {
              p.bindings.push_back({"big", BindingRole::Input, {{700000}, {ElementType::F143, 0}}, {}});
              p.bindings.back().pieces.push_back(piece(7, 0x4C000, {0}, {600000}, {1}));
              p.bindings.back().pieces.push_back(piece(7, 0x4C000, {600000}, {100000}, {1}));
            }),
            "tile 7: bindings hold 700000 bytes, more than the tile's 638976 bytes of memory");
}

TEST(Validate, InterleavedPiecesThatShareNoByteAreAccepted) {
  // Two bindings whose padded rows interleave: a at even rows, b at odd rows.
  Package package = sample_package();
  package.bindings.push_back({"a", BindingRole::Input, {{4, 8}, {ElementType::F32, 0}}, {}});
  package.bindings.back().pieces.push_back(piece(7, 0x80000, {0, 0}, {4, 8}, {16, 1}));
  package.bindings.push_back({"b", BindingRole::Output, {{4, 8}, {ElementType::F32, 0}}, {}});
  package.bindings.back().pieces.push_back(piece(7, 0x80020, {0, 0}, {4, 8}, {16, 1}));
  EXPECT_NO_THROW(validate(package));
  package.bindings.back().pieces[0].address = 0x8001C;
  EXPECT_EQ(bad_input_message([&] { validate(package); }),
            "tile 7: binding 'a' piece 0 (0x80000..0x80020) overlaps binding 'b' piece 0 "
            "(0x8001c..0x8003c)");
}

}  // namespace
}  // namespace tilec::package
