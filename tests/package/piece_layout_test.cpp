#include "package/piece_layout.h"
#include "sample_package.h"

#include <gtest/gtest.h>

namespace tilec::package {
namespace {

using testing::piece;

struct Row {
  std::int64_t flat;
  std::uint32_t address;
  std::int64_t count;
  std::int64_t stride_bytes;
  bool operator==(const Row&) const = default;
};

std::vector<Row> rows_of(const Piece& piece, const graph::Shape& shape, std::uint32_t bytes) {
  std::vector<Row> rows;
  for_each_piece_row(piece, shape, bytes, [&](const PieceRow& row) {
    rows.push_back({row.flat_index, row.address, row.count, row.stride_bytes});
  });
  return rows;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> runs_of(const Piece& piece, std::uint32_t bytes) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> runs;
  for (const ByteRun& run : piece_memory_runs(piece, bytes)) runs.emplace_back(run.begin, run.end);
  return runs;
}

using Runs = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

TEST(PieceLayout, DenseRowMajorIsOneRun) {
  Piece p = piece(0, 0x80000, {0, 0}, {2, 6}, {6, 1});
  EXPECT_EQ(piece_elements(p), 12);
  EXPECT_EQ(runs_of(p, 2), (Runs{{0x80000, 0x80018}}));
  EXPECT_EQ(rows_of(p, {4, 6}, 2), (std::vector<Row>{{0, 0x80000, 6, 2}, {6, 0x8000C, 6, 2}}));
}

TEST(PieceLayout, PaddedRowsAreOneRunEach) {
  Piece p = piece(0, 0x80000, {2, 0}, {2, 3}, {4, 1});
  EXPECT_EQ(runs_of(p, 2), (Runs{{0x80000, 0x80006}, {0x80008, 0x8000E}}));
  EXPECT_EQ(rows_of(p, {4, 6}, 2), (std::vector<Row>{{12, 0x80000, 3, 2}, {18, 0x80008, 3, 2}}));
}

TEST(PieceLayout, ColumnMajorBlock) {
  Piece p = piece(0, 0x80000, {2, 3}, {2, 3}, {1, 2});
  EXPECT_EQ(runs_of(p, 2), (Runs{{0x80000, 0x8000C}}));
  EXPECT_EQ(rows_of(p, {4, 6}, 2), (std::vector<Row>{{15, 0x80000, 3, 4}, {21, 0x80002, 3, 4}}));
}

TEST(PieceLayout, StridedColumnIsOneRunPerElementInAddressOrder) {
  // Column 1 of a row-major [3, 4] matrix of f32, stored with its rows.
  Piece p = piece(0, 0x80004, {0, 1}, {3, 1}, {4, 99});
  EXPECT_EQ(runs_of(p, 4), (Runs{{0x80004, 0x80008}, {0x80014, 0x80018}, {0x80024, 0x80028}}));
  EXPECT_EQ(rows_of(p, {3, 4}, 4),
            (std::vector<Row>{{1, 0x80004, 1, 4}, {5, 0x80014, 1, 4}, {9, 0x80024, 1, 4}}));
}

TEST(PieceLayout, RankThreeWithTwoPaddedLevels) {
  Piece p = piece(0, 0x80000, {0, 0, 4}, {2, 2, 4}, {16, 4, 1});
  EXPECT_EQ(runs_of(p, 4), (Runs{{0x80000, 0x80020}, {0x80040, 0x80060}}));
  EXPECT_EQ(rows_of(p, {2, 2, 8}, 4),
            (std::vector<Row>{{4, 0x80000, 4, 4}, {12, 0x80010, 4, 4}, {20, 0x80040, 4, 4},
                              {28, 0x80050, 4, 4}}));
}

TEST(PieceLayout, Scalar) {
  Piece p = piece(3, 0x88000, {}, {}, {});
  EXPECT_EQ(piece_elements(p), 1);
  EXPECT_EQ(runs_of(p, 4), (Runs{{0x88000, 0x88004}}));
  EXPECT_EQ(rows_of(p, {}, 4), (std::vector<Row>{{0, 0x88000, 1, 4}}));
}

}  // namespace
}  // namespace tilec::package
