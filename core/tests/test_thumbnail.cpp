// test_thumbnail.cpp: block pooling of a matrix into a thumbnail: exact small
// cases, sizes that do not divide, blocks that cover every cell once, and a
// single strong weight that survives max pooling.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "attnscope/analysis/thumbnail.hpp"

namespace attnscope::core {
namespace {

TEST(Thumbnail, FourByFourToTwoByTwo) {
  const RowMatrix w = matrix_from_rows({{1, 2, 3, 4},  //
                                        {5, 6, 7, 8},
                                        {9, 10, 11, 12},
                                        {13, 14, 15, 16}});
  EXPECT_EQ(downsample_max(w, 2), matrix_from_rows({{6, 8}, {14, 16}}));
  EXPECT_EQ(downsample_mean(w, 2), matrix_from_rows({{3.5f, 5.5f}, {11.5f, 13.5f}}));
  EXPECT_EQ(downsample_max(w, 1), matrix_from_rows({{16}}));
  EXPECT_EQ(downsample_mean(w, 1), matrix_from_rows({{8.5f}}));
}

TEST(Thumbnail, SizeThatDoesNotDivide) {
  // 5 cells pooled for 2: blocks of ceil(5 / 2) = 3 cells, [0, 3) and [3, 5).
  EXPECT_EQ(thumbnail_block_size(5, 2), 3);
  EXPECT_EQ(thumbnail_blocks(5, 2), 2);
  EXPECT_EQ(thumbnail_block(0, 5, 2).begin, 0);
  EXPECT_EQ(thumbnail_block(0, 5, 2).end, 3);
  EXPECT_EQ(thumbnail_block(1, 5, 2).begin, 3);
  EXPECT_EQ(thumbnail_block(1, 5, 2).end, 5);
  RowMatrix w(5, 5);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) w(i, j) = static_cast<float>(10 * i + j);
  EXPECT_EQ(downsample_max(w, 2), matrix_from_rows({{22, 24}, {42, 44}}));
  // Block (1, 0): rows 3..4, cols 0..2: mean of 10 i + j = 35 + 1.
  EXPECT_FLOAT_EQ(downsample_mean(w, 2)(1, 0), 36.0f);
  // A wide matrix pools only its columns.
  const RowMatrix wide = matrix_from_rows({{1, 0, 0, 2, 0, 3}});
  EXPECT_EQ(downsample_max(wide, 3), matrix_from_rows({{1, 2, 3}}));
  // 7 cells pooled for 3 give blocks of 3: three blocks, the last of one cell.
  EXPECT_EQ(thumbnail_blocks(7, 3), 3);
  EXPECT_EQ(thumbnail_block(2, 7, 3).begin, 6);
  EXPECT_EQ(thumbnail_block(2, 7, 3).end, 7);
}

// A growing map's thumbnail: its rows before a multiple of the block size
// stand while the block size does, and the new rows' blocks come from those
// rows alone; old rows gain only zero columns (causal), so their blocks
// keep their values.
TEST(Thumbnail, TheRowsOfAGrowingMapUpdateItsThumbnail) {
  constexpr int size = 8;
  RowMatrix w = RowMatrix::Zero(40, 40);
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j <= i; ++j) w(i, j) = static_cast<float>((7 * i + 3 * j) % 11) / 11.0f;
  for (int n : {35, 38, 40}) {  // n and n - 2 both in blocks of 5 cells
    const RowMatrix before = downsample_max(RowMatrix(w.topLeftCorner(n - 2, n - 2)), size);
    const int s = thumbnail_block_size(n, size);
    ASSERT_EQ(s, thumbnail_block_size(n - 2, size));
    const int first = (n - 2) / s * s;  // the first row of the block holding row n - 2
    const RowMatrix rows = w.block(first, 0, n - first, n);
    RowMatrix updated = RowMatrix::Zero(thumbnail_blocks(n, size), thumbnail_blocks(n, size));
    updated.topLeftCorner(first / s, before.cols()) = before.topRows(first / s);
    updated.bottomRows(updated.rows() - first / s) = downsample_max_rows(rows, s, s);
    EXPECT_EQ(updated, downsample_max(RowMatrix(w.topLeftCorner(n, n)), size)) << n;
  }
  EXPECT_THROW(downsample_max_rows(w, 0, 1), std::invalid_argument);
  EXPECT_THROW(thumbnail_block_size(-1, 4), std::invalid_argument);
}

TEST(Thumbnail, SmallerThanTheThumbnailIsACopy) {
  const RowMatrix w = matrix_from_rows({{0.25f, 0}, {0.5f, 0.5f}});
  EXPECT_EQ(downsample_max(w, 2), w);
  EXPECT_EQ(downsample_max(w, 64), w);
  EXPECT_EQ(downsample_mean(w, 64), w);
  EXPECT_EQ(downsample_max(RowMatrix(0, 0), 8).size(), 0);
  EXPECT_EQ(thumbnail_block(1, 2, 64).begin, 1);
  EXPECT_EQ(thumbnail_block(1, 2, 64).end, 2);
  EXPECT_THROW(downsample_max(w, 0), std::invalid_argument);
  EXPECT_THROW(thumbnail_block(2, 2, 64), std::invalid_argument);
  EXPECT_THROW(thumbnail_block(-1, 2, 64), std::invalid_argument);
}

TEST(Thumbnail, EveryCellFallsInExactlyOneBlock) {
  for (int n : {1, 7, 64, 65, 100, 1023, 1024}) {
    for (int size : {1, 3, 32, 64, 100}) {
      std::vector<int> hits(static_cast<std::size_t>(n), 0);
      const int blocks = thumbnail_blocks(n, size);
      ASSERT_LE(blocks, std::min(n, size));
      for (int b = 0; b < blocks; ++b) {
        const CellRange r = thumbnail_block(b, n, size);
        ASSERT_LT(r.begin, r.end) << "empty block " << b << " of " << n << " in " << size;
        for (int i = r.begin; i < r.end; ++i) ++hits[static_cast<std::size_t>(i)];
      }
      for (int i = 0; i < n; ++i)
        EXPECT_EQ(hits[static_cast<std::size_t>(i)], 1)
            << "cell " << i << " of " << n << " in " << size;
    }
  }
}

TEST(Thumbnail, ASingleStrongWeightSurvivesMaxPooling) {
  constexpr int n = 300, size = 64;
  for (int at : {0, 5, 151, 299}) {
    RowMatrix w = RowMatrix::Zero(n, n);
    w(at, n - 1 - at) = 1.0f;
    const RowMatrix max = downsample_max(w, size);
    ASSERT_EQ(max.rows(), 60);  // blocks of ceil(300 / 64) = 5 cells
    ASSERT_EQ(max.cols(), 60);
    EXPECT_EQ(max.maxCoeff(), 1.0f);
    EXPECT_EQ(max.sum(), 1.0f);  // one block holds it, the others stay 0
    // The mean dilutes it by the block's area (here 5 cells a side).
    EXPECT_LT(downsample_mean(w, size).maxCoeff(), 1.0f / 16);
  }
}

}  // namespace
}  // namespace attnscope::core
