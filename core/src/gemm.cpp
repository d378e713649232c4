// gemm.cpp: packing and the 8 x 48 AVX-512 kernel (see gemm.hpp).
#include "gemm.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace attnscope::core::gemm {

float max_abs(const RowMatrix& m) {
  if (m.size() == 0) return 0.0f;
  if (!m.allFinite()) return std::numeric_limits<float>::infinity();
  return m.cwiseAbs().maxCoeff();
}

bool sums_stay_finite(float max_abs_x, float max_abs_w, Eigen::Index K) {
  const double bound = static_cast<double>(max_abs_x) * static_cast<double>(max_abs_w) *
                       static_cast<double>(std::max<Eigen::Index>(K, 1));
  return bound < static_cast<double>(std::numeric_limits<float>::max());  // false for inf, NaN
}

PackedWeights pack_weights(const RowMatrix& w) {
  PackedWeights packed;
  packed.rows = w.rows();
  packed.cols = w.cols();
  packed.data.resize(static_cast<std::size_t>(packed.panels() * packed.rows * kPanelCols));
  for (Eigen::Index p = 0; p < packed.panels(); ++p)
    pack_panel(w, p, packed.data.data() + p * packed.rows * kPanelCols);
  return packed;
}

void pack_panel(const RowMatrix& w, Eigen::Index p, float* out) {
  const Eigen::Index col = p * kPanelCols;
  const Eigen::Index n = std::min(kPanelCols, w.cols() - col);
  for (Eigen::Index k = 0; k < w.rows(); ++k) {
    const float* src = w.data() + k * w.cols() + col;
    float* dst = out + k * kPanelCols;
    std::copy(src, src + n, dst);
    std::fill(dst + n, dst + kPanelCols, 0.0f);
  }
}

void pack_rows(const RowMatrix& x, PackedRows& out) {
  out.rows = x.rows();
  out.cols = x.cols();
  out.data.resize(static_cast<std::size_t>(out.tiles() * out.cols * kTileRows));
  const Eigen::Index K = x.cols();
  float largest = 0.0f;  // of |x|; NaN compares false and is caught by the finite test
  bool finite = true;
  for (Eigen::Index t = 0; t < out.tiles(); ++t) {
    float* dst = out.data.data() + t * K * kTileRows;
    for (Eigen::Index i = 0; i < kTileRows; ++i) {
      const Eigen::Index row = t * kTileRows + i;
      if (row < x.rows()) {
        const float* src = x.data() + row * K;
        for (Eigen::Index k = 0; k < K; ++k) {
          dst[k * kTileRows + i] = src[k];
          const float a = std::fabs(src[k]);
          largest = a > largest ? a : largest;
          finite = finite && a <= std::numeric_limits<float>::max();
        }
      } else {
        for (Eigen::Index k = 0; k < K; ++k) dst[k * kTileRows + i] = 0.0f;
      }
    }
  }
  out.max_abs = finite ? largest : std::numeric_limits<float>::infinity();
}

#if defined(__AVX512F__)

bool available() { return true; }

namespace {

// c (8 x 48, row stride ldc) = a-tile . b-panel over k = 0..K-1: 24
// accumulators, each element one FMA chain in k order.
void kernel(const float* a, const float* b, Eigen::Index K, float* c, Eigen::Index ldc) {
  __m512 acc[kTileRows][3];
  for (auto& row : acc)
    for (auto& v : row) v = _mm512_setzero_ps();
  for (Eigen::Index k = 0; k < K; ++k) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16), b2 = _mm512_loadu_ps(b + 32);
#pragma GCC unroll 8
    for (int i = 0; i < kTileRows; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
      acc[i][2] = _mm512_fmadd_ps(ai, b2, acc[i][2]);
    }
    a += kTileRows;
    b += kPanelCols;
  }
  for (int i = 0; i < kTileRows; ++i) {
    _mm512_storeu_ps(c + i * ldc, acc[i][0]);
    _mm512_storeu_ps(c + i * ldc + 16, acc[i][1]);
    _mm512_storeu_ps(c + i * ldc + 32, acc[i][2]);
  }
}

}  // namespace

void multiply_panel(const PackedRows& x, const float* panel, Eigen::Index p, const RowMatrix& bias,
                    RowMatrix& y) {
  const Eigen::Index col = p * kPanelCols;
  const Eigen::Index n = std::min(kPanelCols, y.cols() - col);
  const Eigen::Index K = x.cols;
  alignas(64) float edge[kTileRows * kPanelCols];  // a tile that overhangs y
  for (Eigen::Index t = 0; t < x.tiles(); ++t) {
    const Eigen::Index row = t * kTileRows;
    const Eigen::Index m = std::min(kTileRows, x.rows - row);
    const bool whole = m == kTileRows && n == kPanelCols;
    float* c = whole ? y.data() + row * y.cols() + col : edge;
    const Eigen::Index ldc = whole ? y.cols() : kPanelCols;
    kernel(x.tile(t), panel, K, c, ldc);
    if (!whole)
      for (Eigen::Index i = 0; i < m; ++i)
        std::copy(edge + i * kPanelCols, edge + i * kPanelCols + n, y.data() + (row + i) * y.cols() + col);
    if (bias.size() > 0) {
      const float* b = bias.data() + col;
      for (Eigen::Index i = 0; i < m; ++i) {
        float* dst = y.data() + (row + i) * y.cols() + col;
        for (Eigen::Index j = 0; j < n; ++j) dst[j] += b[j];
      }
    }
  }
}

#else  // no AVX-512: the engine uses Eigen; this portable loop keeps the API whole

bool available() { return false; }

void multiply_panel(const PackedRows& x, const float* panel, Eigen::Index p, const RowMatrix& bias,
                    RowMatrix& y) {
  const Eigen::Index col = p * kPanelCols;
  const Eigen::Index n = std::min(kPanelCols, y.cols() - col);
  for (Eigen::Index row = 0; row < x.rows; ++row) {
    const float* a = x.tile(row / kTileRows) + row % kTileRows;
    for (Eigen::Index j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (Eigen::Index k = 0; k < x.cols; ++k)
        sum = std::fma(a[k * kTileRows], panel[k * kPanelCols + j], sum);
      y(row, col + j) = bias.size() > 0 ? sum + bias(0, col + j) : sum;
    }
  }
}

#endif

}  // namespace attnscope::core::gemm
