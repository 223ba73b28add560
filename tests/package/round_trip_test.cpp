#include "package/body_codec.h"
#include "package/package_file.h"
#include "package/segment_contents.h"
#include "package/validate.h"
#include "sample_package.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace tilec::package {
namespace {

using testing::bad_input_message;
using testing::expect_same_package;
using testing::sample_package;

TEST(PackageFile, SamplePackageIsValid) { EXPECT_NO_THROW(validate(sample_package())); }

TEST(PackageFile, RoundTripKeepsEveryField) {
  Package original = sample_package();
  Package read = decode_package(encode_package(original), "sample.tpk");
  expect_same_package(original, read);
}

TEST(PackageFile, RoundTripThroughAFile) {
  std::string path = (std::filesystem::temp_directory_path() / "tilec_round_trip.tpk").string();
  Package original = sample_package();
  write_package(original, path);
  expect_same_package(original, read_package(path));
  std::filesystem::remove(path);
}

TEST(PackageFile, SameBytesEveryTime) {
  std::vector<std::uint8_t> first = encode_package(sample_package());
  std::vector<std::uint8_t> second = encode_package(sample_package());
  EXPECT_EQ(first, second);
  // Reading and writing again changes nothing: the encoding is canonical.
  EXPECT_EQ(encode_package(decode_package(first, "sample.tpk")), first);
}

TEST(PackageFile, StartsWithTheDocumentedHeader) {
  std::vector<std::uint8_t> file = encode_package(sample_package());
  ASSERT_GE(file.size(), kHeaderBytes);
  EXPECT_EQ(std::string(file.begin(), file.begin() + 8), "TILECPKG");
  PackageHeader header = decode_header(file, "sample.tpk");
  EXPECT_EQ(header.version, kFormatVersion);
  EXPECT_EQ(header.flags, 0u);
  EXPECT_EQ(header.tiles, 8u);
  EXPECT_EQ(header.contents, 2u + 7u + 1u);  // two codes, seven args, one kernel segment
  EXPECT_EQ(header.groups, 3u);
  EXPECT_EQ(header.bindings, 4u);
  EXPECT_EQ(header.stored_body_bytes, file.size() - kHeaderBytes);
  EXPECT_EQ(header.body_bytes, detail::encode_body(sample_package()).bytes.size());
}

TEST(PackageFile, IdenticalSegmentsAreStoredOnceAndSharedOnRead) {
  Package original = sample_package();
  SegmentContents table = distinct_segment_contents(original);
  // Tiles 0-5 (one shared vector and two equal copies) use one content.
  EXPECT_EQ(table.index[0][0], table.index[3][0]);
  EXPECT_EQ(table.index[0][0], table.index[5][0]);
  EXPECT_NE(table.index[0][0], table.index[6][0]);
  EXPECT_EQ(table.users[table.index[0][0]], 6u);
  EXPECT_EQ(table.contents.size(), 10u);

  Package read = decode_package(encode_package(original), "sample.tpk");
  const auto& code = read.tiles[0].segments[0].bytes;
  for (std::uint32_t t = 1; t < 6; ++t) EXPECT_EQ(read.tiles[t].segments[0].bytes, code) << t;
  EXPECT_NE(read.tiles[6].segments[0].bytes, code);
  EXPECT_NE(read.tiles[0].segments[1].bytes, read.tiles[1].segments[1].bytes);
}

TEST(PackageFile, EmptyPackageRoundTrips) {
  Package empty = make_empty_package(ipu21_cut(3));
  EXPECT_EQ(empty.target, "ipu21:3");
  EXPECT_EQ(empty.tiles.size(), 3u);
  expect_same_package(empty, decode_package(encode_package(empty), "empty.tpk"));
}

TEST(PackageFile, FullChipTargetRoundTrips) {
  Package empty = make_empty_package(ipu21());
  EXPECT_EQ(empty.target, "ipu21");
  Package read = decode_package(encode_package(empty), "chip.tpk");
  EXPECT_EQ(read.tiles.size(), 1472u);
}

TEST(PackageFile, WriterRefusesAnInvalidPackage) {
  Package package = sample_package();
  package.tiles[2].entry = 0x4C004;
  EXPECT_EQ(bad_input_message([&] { encode_package(package); }),
            "tile 2: entry 0x4c004 is not 8-byte aligned");
}

TEST(PackageFile, ReaderValidatesAndNamesTheFile) {
  Package package = sample_package();
  package.tiles[6].segments[0].address = 0x80000;  // code in interleaved memory
  std::vector<std::uint8_t> file = detail::frame_package_file(detail::encode_body(package));
  EXPECT_EQ(bad_input_message([&] { decode_package(file, "model.tpk"); }),
            "model.tpk: tile 6: segment '.text' at 0x80000 is executable but lies in "
            "interleaved memory");
}

TEST(PackageFile, MissingFileIsBadInput) {
  EXPECT_EQ(bad_input_message([] { read_package("/nonexistent/dir/model.tpk"); }),
            "/nonexistent/dir/model.tpk: cannot open: No such file or directory");
}

TEST(PackageFile, DirectoryIsBadInput) {
  std::string dir = std::filesystem::temp_directory_path().string();
  EXPECT_EQ(bad_input_message([&] { read_package(dir); }), dir + ": cannot open: Is a directory");
}

TEST(PackageFile, UnwritablePathIsBadInput) {
  EXPECT_EQ(bad_input_message([] { write_package(sample_package(), "/nonexistent/dir/model.tpk"); }),
            "/nonexistent/dir/model.tpk: cannot write: No such file or directory");
}

}  // namespace
}  // namespace tilec::package
