// test_gemm.cpp: the projections' packed kernel (core/src/kernels/gemm.hpp) against
// its stated order of arithmetic: every element one fused multiply-add
// chain over k = 0..K-1 from 0, then + bias. Bit for bit, NaN for NaN, over
// shapes that leave partial tiles and panels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/gemm.hpp"

namespace attnscope::core {
namespace {

RowMatrix random_matrix(Eigen::Index rows, Eigen::Index cols, unsigned seed) {
  RowMatrix m(rows, cols);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  for (Eigen::Index k = 0; k < m.size(); ++k) m.data()[k] = u(rng);
  return m;
}

RowMatrix fma_chain(const RowMatrix& x, const RowMatrix& w, const RowMatrix& bias) {
  RowMatrix y(x.rows(), w.cols());
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    for (Eigen::Index j = 0; j < w.cols(); ++j) {
      float sum = 0.0f;
      for (Eigen::Index k = 0; k < x.cols(); ++k) sum = std::fma(x(i, k), w(k, j), sum);
      y(i, j) = bias.size() > 0 ? sum + bias(0, j) : sum;
    }
  return y;
}

// y = x . w + bias through the packed path, every panel.
RowMatrix packed_product(const RowMatrix& x, const RowMatrix& w, const RowMatrix& bias) {
  const gemm::PackedWeights pw = gemm::pack_weights(w);
  gemm::PackedRows px;
  gemm::pack_rows(x, px);
  RowMatrix y = RowMatrix::Constant(x.rows(), w.cols(), 12345.0f);  // every cell must be written
  for (Eigen::Index p = 0; p < pw.panels(); ++p) gemm::multiply_panel(px, pw.panel(p), p, bias, y);
  return y;
}

void expect_bitwise_equal(const RowMatrix& a, const RowMatrix& b) {
  ASSERT_EQ(a.rows(), b.rows());
  ASSERT_EQ(a.cols(), b.cols());
  for (Eigen::Index i = 0; i < a.rows(); ++i)
    for (Eigen::Index j = 0; j < a.cols(); ++j) {
      if (std::isnan(a(i, j)) && std::isnan(b(i, j))) continue;
      ASSERT_EQ(a(i, j), b(i, j)) << "at (" << i << ", " << j << ")";
    }
}

TEST(Gemm, EveryElementIsOneFmaChainInKOrderThenBias) {
  struct Shape {
    Eigen::Index m, k, n;
  };
  // k past 64 (the AVX2 kernel's chunk) with a partial last chunk: 129, 300
  const Shape shapes[] = {{1, 1, 1},     {7, 5, 3},      {8, 64, 48},  {9, 3, 49},   {17, 33, 100},
                          {64, 768, 96}, {130, 20, 191}, {8, 129, 40}, {11, 300, 56}};
  unsigned seed = 1;
  for (const Shape& s : shapes) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + " . " + std::to_string(s.k) +
                 "x" + std::to_string(s.n));
    const RowMatrix x = random_matrix(s.m, s.k, seed++);
    const RowMatrix w = random_matrix(s.k, s.n, seed++);
    const RowMatrix bias = random_matrix(1, s.n, seed++);
    expect_bitwise_equal(packed_product(x, w, RowMatrix()), fma_chain(x, w, RowMatrix()));
    expect_bitwise_equal(packed_product(x, w, bias), fma_chain(x, w, bias));
  }
}

TEST(Gemm, AgreesWithEigenWithinFloatRounding) {
  const RowMatrix x = random_matrix(37, 200, 7), w = random_matrix(200, 150, 8);
  const RowMatrix eigen = x * w;
  const RowMatrix ours = packed_product(x, w, RowMatrix());
  EXPECT_LE((eigen - ours).cwiseAbs().maxCoeff(), 1e-4f);
}

TEST(Gemm, InfinitiesAndNanPropagateAsInTheChain) {
  RowMatrix x = random_matrix(11, 6, 3), w = random_matrix(6, 50, 4);
  constexpr float inf = std::numeric_limits<float>::infinity();
  x(0, 2) = inf;
  x(3, 0) = -inf;
  x(5, 5) = std::numeric_limits<float>::quiet_NaN();
  x(9, 1) = 3e38f;  // products overflow
  w(4, 7) = inf;
  const RowMatrix ours = packed_product(x, w, RowMatrix());
  expect_bitwise_equal(ours, fma_chain(x, w, RowMatrix()));
  EXPECT_TRUE(std::isnan(ours(5, 0)));
  EXPECT_TRUE(std::isinf(ours(0, 0)) || std::isnan(ours(0, 0)));
}

TEST(Gemm, RunsOnlyWhereNoProductOrSumCanOverflow) {
  EXPECT_TRUE(gemm::sums_stay_finite(1e19f, 1e19f, 1));   // 1e38 < FLT_MAX
  EXPECT_FALSE(gemm::sums_stay_finite(1e19f, 1e19f, 4));  // 4e38 > FLT_MAX
  EXPECT_TRUE(gemm::sums_stay_finite(3.0f, 0.04f, 768));
  EXPECT_FALSE(gemm::sums_stay_finite(std::numeric_limits<float>::infinity(), 0.0f, 1));
  RowMatrix m = random_matrix(3, 3, 11);
  m(1, 2) = -7.5f;
  EXPECT_EQ(gemm::max_abs(m), 7.5f);
  gemm::PackedRows packed;
  gemm::pack_rows(m, packed);
  EXPECT_EQ(packed.max_abs, 7.5f);
  m(0, 0) = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(gemm::max_abs(m), std::numeric_limits<float>::infinity());
  gemm::pack_rows(m, packed);
  EXPECT_EQ(packed.max_abs, std::numeric_limits<float>::infinity());
  m(0, 0) = -std::numeric_limits<float>::infinity();
  gemm::pack_rows(m, packed);
  EXPECT_EQ(packed.max_abs, std::numeric_limits<float>::infinity());
  EXPECT_EQ(gemm::max_abs(RowMatrix()), 0.0f);
}

TEST(Gemm, PackingKeepsEveryValueAndZeroPadsTheEdges) {
  const RowMatrix w = random_matrix(3, 50, 5);  // two panels, the second 2 wide
  const gemm::PackedWeights pw = gemm::pack_weights(w);
  ASSERT_EQ(pw.panels(), 2);
  for (Eigen::Index k = 0; k < 3; ++k)
    for (Eigen::Index j = 0; j < gemm::kPanelCols; ++j) {
      EXPECT_EQ(pw.panel(0)[k * gemm::kPanelCols + j], w(k, j));
      EXPECT_EQ(pw.panel(1)[k * gemm::kPanelCols + j], j < 2 ? w(k, 48 + j) : 0.0f);
    }
  const RowMatrix x = random_matrix(10, 4, 6);  // two tiles, the second 2 tall
  gemm::PackedRows px;
  gemm::pack_rows(x, px);
  ASSERT_EQ(px.tiles(), 2);
  for (Eigen::Index k = 0; k < 4; ++k)
    for (Eigen::Index i = 0; i < gemm::kTileRows; ++i)
      EXPECT_EQ(px.tile(1)[k * gemm::kTileRows + i], i < 2 ? x(8 + i, k) : 0.0f);
}

// pack_rows moves whole 8 x 8 blocks with a vector transpose and the rest
// one value at a time: both, with a partial last tile.
TEST(Gemm, PackingByBlocksAndByValuesAgree) {
  const RowMatrix x =
      random_matrix(19, 37, 8);  // 3 tiles (the last 3 tall); k 0..31 blocks, 32..36 values
  gemm::PackedRows px;
  gemm::pack_rows(x, px);
  ASSERT_EQ(px.tiles(), 3);
  for (Eigen::Index t = 0; t < 3; ++t)
    for (Eigen::Index k = 0; k < 37; ++k)
      for (Eigen::Index i = 0; i < gemm::kTileRows; ++i) {
        const Eigen::Index row = t * gemm::kTileRows + i;
        ASSERT_EQ(px.tile(t)[k * gemm::kTileRows + i], row < 19 ? x(row, k) : 0.0f)
            << "tile " << t << " k " << k << " row " << i;
      }
  EXPECT_EQ(px.max_abs, gemm::max_abs(x));
  // A NaN or inf in the block part and in the value part both make max_abs +inf.
  for (Eigen::Index k : {Eigen::Index{3}, Eigen::Index{35}})
    for (float bad :
         {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
      RowMatrix y = x;
      y(17, k) = bad;
      gemm::pack_rows(y, px);
      EXPECT_EQ(px.max_abs, std::numeric_limits<float>::infinity())
          << "k " << k << " value " << bad;
      EXPECT_FALSE(all_finite(y));
    }
  EXPECT_TRUE(all_finite(x));
}

// The heads pack their contexts into one input, each its own columns.
TEST(Gemm, PackingInColumnBlocksEqualsPackingTheWhole) {
  const RowMatrix x = random_matrix(21, 40, 9);
  gemm::PackedRows whole, pieces;
  gemm::pack_rows(x, whole);
  gemm::size_rows(21, 40, pieces);
  pieces.data.assign(pieces.data.size(), 777.0f);  // every value must be written
  float largest = 0.0f;
  for (Eigen::Index col : {0, 16, 24}) {
    const Eigen::Index n = col == 0 ? 16 : col == 16 ? 8 : 16;
    const RowMatrix block = x.middleCols(col, n);
    largest = std::max(largest, gemm::pack_columns(block, col, pieces));
  }
  EXPECT_EQ(largest, whole.max_abs);
  EXPECT_EQ(pieces.data, whole.data);
}

// The packed buffers are not zeroed when sized (gemm::Buffer); the columns
// of the last panel past N must still be zeros. A freed buffer of the same
// size full of 777s comes first, so that a missing zero would likely show.
TEST(Gemm, PackedTransposedPadsItsLastPanelWithZeros) {
  const RowMatrix keys = random_matrix(61, 20, 12);  // N = 61: the second panel holds 13 columns
  { const std::vector<float> dirt(2 * 20 * gemm::kPanelCols, 777.0f); }
  const gemm::PackedWeights keys_t = gemm::pack_transposed(keys);
  ASSERT_EQ(keys_t.panels(), 2);
  for (Eigen::Index k = 0; k < 20; ++k) {
    for (Eigen::Index j = 0; j < 13; ++j)
      ASSERT_EQ(keys_t.panel(1)[k * gemm::kPanelCols + j], keys(48 + j, k));
    for (Eigen::Index j = 13; j < gemm::kPanelCols; ++j)
      ASSERT_EQ(keys_t.panel(1)[k * gemm::kPanelCols + j], 0.0f) << "k " << k << ", column " << j;
  }
}

// The heads' products, a tile of query rows at a time: scores = Q . K^T from
// K packed transposed, and context = W . V stopping at K steps (the causal
// context's last visible key). Bit for bit the FMA chain, for tiles with
// fewer than 8 rows and column counts that need each narrower kernel.
TEST(Gemm, TileProductsAreFmaChainsOverTheirFirstKSteps) {
  const RowMatrix q = random_matrix(13, 20, 11), keys = random_matrix(61, 20, 12);
  const gemm::PackedWeights keys_t = gemm::pack_transposed(keys);
  ASSERT_EQ(keys_t.rows, 20);
  ASSERT_EQ(keys_t.cols, 61);
  const RowMatrix expected_scores = fma_chain(q, keys.transpose(), RowMatrix());
  RowMatrix scores = RowMatrix::Constant(13, 61, 12345.0f);
  std::vector<float> tile(300 * gemm::kTileRows, 777.0f);  // K up to 300 below
  for (Eigen::Index r0 = 0; r0 < 13; r0 += gemm::kTileRows) {
    const Eigen::Index m = std::min<Eigen::Index>(gemm::kTileRows, 13 - r0);
    gemm::pack_tile(&q(r0, 0), q.cols(), m, 20, tile.data());
    for (Eigen::Index p = 0; p < keys_t.panels(); ++p)
      gemm::multiply_tile(tile.data(), keys_t.panel(p), 20, m,
                          std::min<Eigen::Index>(gemm::kPanelCols, 61 - p * gemm::kPanelCols),
                          &scores(r0, p * gemm::kPanelCols), scores.cols());
  }
  expect_bitwise_equal(scores, expected_scores);

  // Context over the first K keys only, for widths 1..48 of V (the AVX2
  // kernel's 8- and 24-column blocks and their edges) and K across its
  // 64-step chunks.
  const RowMatrix weights = random_matrix(8, 300, 13);
  for (Eigen::Index width : {1, 8, 15, 16, 17, 24, 25, 32, 33, 40, 47, 48}) {
    SCOPED_TRACE("width " + std::to_string(width));
    const RowMatrix values = random_matrix(300, width, 14 + static_cast<unsigned>(width));
    const gemm::PackedWeights panels = gemm::pack_weights(values);
    for (Eigen::Index K : {0, 1, 9, 40, 64, 65, 128, 129, 300}) {
      SCOPED_TRACE("K " + std::to_string(K));
      gemm::pack_tile(weights.data(), weights.cols(), gemm::kTileRows, K, tile.data());
      RowMatrix context = RowMatrix::Constant(8, width, 12345.0f);
      gemm::multiply_tile(tile.data(), panels.panel(0), K, gemm::kTileRows, width, context.data(),
                          context.cols());
      const RowMatrix expected = fma_chain(weights.leftCols(K), values.topRows(K), RowMatrix());
      expect_bitwise_equal(context, expected);
    }
  }
}

}  // namespace
}  // namespace attnscope::core
