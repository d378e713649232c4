// gemm.cpp: packing and the 8 x 48 kernel, AVX-512 or AVX2 (see gemm.hpp).
#include "kernels/gemm.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace attnscope::core::gemm {

float max_abs(const float* v, Eigen::Index n) {
  if (n == 0) return 0.0f;
  if (!all_finite(v, n)) return std::numeric_limits<float>::infinity();
  return Eigen::Map<const Eigen::ArrayXf>(v, n).abs().maxCoeff();
}

float max_abs(const RowMatrix& m) { return max_abs(m.data(), m.size()); }

bool sums_stay_finite(float max_abs_x, float max_abs_w, Eigen::Index K) {
  const double bound = static_cast<double>(max_abs_x) * static_cast<double>(max_abs_w) *
                       static_cast<double>(std::max<Eigen::Index>(K, 1));
  return bound < static_cast<double>(std::numeric_limits<float>::max());  // false for inf, NaN
}

namespace {

void pack_panel_from(const float* w, Eigen::Index rows, Eigen::Index cols, Eigen::Index ld,
                     Eigen::Index p, float* out) {
  const Eigen::Index col = p * kPanelCols;
  const Eigen::Index n = std::min(kPanelCols, cols - col);
  for (Eigen::Index k = 0; k < rows; ++k) {
    const float* src = w + k * ld + col;
    float* dst = out + k * kPanelCols;
    std::copy(src, src + n, dst);
    std::fill(dst + n, dst + kPanelCols, 0.0f);
  }
}

}  // namespace

PackedWeights pack_weights(const float* w, Eigen::Index rows, Eigen::Index cols, Eigen::Index ld) {
  if (ld == 0) ld = cols;
  PackedWeights packed;
  packed.rows = rows;
  packed.cols = cols;
  packed.data.resize(static_cast<std::size_t>(packed.panels() * packed.rows * kPanelCols));
  for (Eigen::Index p = 0; p < packed.panels(); ++p)
    pack_panel_from(w, rows, cols, ld, p, packed.data.data() + p * packed.rows * kPanelCols);
  return packed;
}

PackedWeights pack_weights_bf16(const std::uint16_t* w, Eigen::Index rows, Eigen::Index cols,
                                Eigen::Index ld) {
  if (ld == 0) ld = cols;
  PackedWeights packed;
  packed.rows = rows;
  packed.cols = cols;
  packed.bf16.resize(static_cast<std::size_t>(packed.panels() * packed.rows * kPanelCols));
  for (Eigen::Index p = 0; p < packed.panels(); ++p) {
    const Eigen::Index col = p * kPanelCols;
    const Eigen::Index n = std::min(kPanelCols, cols - col);
    std::uint16_t* out = packed.bf16.data() + p * rows * kPanelCols;
    for (Eigen::Index k = 0; k < rows; ++k) {
      const std::uint16_t* src = w + k * ld + col;
      std::uint16_t* dst = out + k * kPanelCols;
      std::copy(src, src + n, dst);
      std::fill(dst + n, dst + kPanelCols, std::uint16_t{0});  // +0.0f
    }
  }
  return packed;
}

void widen_bf16(const std::uint16_t* src, Eigen::Index n, float* out) {
  Eigen::Index i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_ps(out + i, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
  }
#elif defined(__AVX2__)
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
  }
#endif
  for (; i < n; ++i) out[i] = bf16_to_float(src[i]);
}

void widen_panel(const PackedWeights& w, Eigen::Index p, float* out) {
  widen_bf16(w.panel_bf16(p), w.rows * kPanelCols, out);
}

PackedWeights pack_weights(const Eigen::Ref<const RowMatrix>& w) {
  return pack_weights(w.data(), w.rows(), w.cols(), w.outerStride());
}

void pack_panel(const RowMatrix& w, Eigen::Index p, float* out) {
  pack_panel_from(w.data(), w.rows(), w.cols(), w.cols(), p, out);
}

void size_rows(Eigen::Index rows, Eigen::Index cols, PackedRows& out) {
  out.rows = rows;
  out.cols = cols;
  out.max_abs = 0.0f;
  out.data.resize(static_cast<std::size_t>(out.tiles() * out.cols * kTileRows));
}

void pack_rows(const RowMatrix& x, PackedRows& out) {
  size_rows(x.rows(), x.cols(), out);
  out.max_abs = pack_columns(x, 0, out);
}

namespace {

#if defined(__AVX__)
// r[i] holds 8 floats of row i; out receives them k-major: out[j * stride + i] = r[i][j].
inline void transpose_8x8(const __m256 r[8], float* out, Eigen::Index stride = 8) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  // s_j: rows 0-3 (s0..s3) or 4-7 (s4..s7) at k = j in the low half, k = j + 4 in the high.
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(out + 0 * stride, _mm256_permute2f128_ps(s0, s4, 0x20));
  _mm256_storeu_ps(out + 1 * stride, _mm256_permute2f128_ps(s1, s5, 0x20));
  _mm256_storeu_ps(out + 2 * stride, _mm256_permute2f128_ps(s2, s6, 0x20));
  _mm256_storeu_ps(out + 3 * stride, _mm256_permute2f128_ps(s3, s7, 0x20));
  _mm256_storeu_ps(out + 4 * stride, _mm256_permute2f128_ps(s0, s4, 0x31));
  _mm256_storeu_ps(out + 5 * stride, _mm256_permute2f128_ps(s1, s5, 0x31));
  _mm256_storeu_ps(out + 6 * stride, _mm256_permute2f128_ps(s2, s6, 0x31));
  _mm256_storeu_ps(out + 7 * stride, _mm256_permute2f128_ps(s3, s7, 0x31));
}
#endif

}  // namespace

float pack_columns(const RowMatrix& block, Eigen::Index col, PackedRows& out,
                   Eigen::Index first_tile, Eigen::Index last_tile) {
  if (last_tile < 0) last_tile = out.tiles();
  const Eigen::Index K = block.cols();
  float largest = 0.0f;  // of |block|; NaN compares false and is caught by the finite test
  bool finite = true;
  auto scalar = [&](const float* src, Eigen::Index k,
                    float* dst) {  // one value, or 0 past the rows
    const float v = src ? src[k] : 0.0f;
    *dst = v;
    const float a = std::fabs(v);
    largest = a > largest ? a : largest;
    finite = finite && a <= std::numeric_limits<float>::max();
  };
#if defined(__AVX__)
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 vmax = _mm256_setzero_ps(), unordered = _mm256_setzero_ps();
#endif
  for (Eigen::Index t = first_tile; t < last_tile; ++t) {
    float* dst = out.data.data() + t * out.cols * kTileRows + col * kTileRows;
    const float* src[kTileRows];
    for (Eigen::Index i = 0; i < kTileRows; ++i) {
      const Eigen::Index row = t * kTileRows + i;
      src[i] = row < block.rows() ? block.data() + row * K : nullptr;
    }
    Eigen::Index k = 0;
#if defined(__AVX__)
    for (; k + 8 <= K; k += 8) {
      __m256 r[kTileRows];
      for (Eigen::Index i = 0; i < kTileRows; ++i) {
        r[i] = src[i] ? _mm256_loadu_ps(src[i] + k) : _mm256_setzero_ps();
        const __m256 a = _mm256_andnot_ps(sign, r[i]);
        vmax = _mm256_max_ps(a, vmax);  // a NaN lane keeps vmax; `unordered` remembers it
        unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
      }
      transpose_8x8(r, dst + k * kTileRows);
    }
#endif
    for (; k < K; ++k)
      for (Eigen::Index i = 0; i < kTileRows; ++i) scalar(src[i], k, dst + k * kTileRows + i);
  }
#if defined(__AVX__)
  alignas(32) float lanes[8], flags[8];
  _mm256_store_ps(lanes, vmax);
  _mm256_store_ps(flags, unordered);
  for (int i = 0; i < 8; ++i) {
    largest = lanes[i] > largest ? lanes[i] : largest;
    finite = finite && flags[i] == 0.0f;
  }
#endif
  finite = finite && largest <= std::numeric_limits<float>::max();
  return finite ? largest : std::numeric_limits<float>::infinity();
}

void pack_tile(const float* src, Eigen::Index stride, Eigen::Index m, Eigen::Index K, float* out) {
  Eigen::Index k = 0;
#if defined(__AVX__)
  if (m == kTileRows) {
    for (; k + 8 <= K; k += 8) {
      __m256 r[kTileRows];
      for (Eigen::Index i = 0; i < kTileRows; ++i) r[i] = _mm256_loadu_ps(src + i * stride + k);
      transpose_8x8(r, out + k * kTileRows);
    }
  }
#endif
  for (; k < K; ++k)
    for (Eigen::Index i = 0; i < kTileRows; ++i)
      out[k * kTileRows + i] = i < m ? src[i * stride + k] : 0.0f;
}

PackedWeights pack_transposed(const Eigen::Ref<const RowMatrix>& m) {
  PackedWeights packed;
  packed.rows = m.cols();  // K: m's columns
  packed.cols = m.rows();  // N: m's rows become the panels' columns
  packed.data.resize(static_cast<std::size_t>(packed.panels() * packed.rows * kPanelCols));
  const Eigen::Index K = packed.rows;
  const Eigen::Index used = packed.cols - (packed.panels() - 1) * kPanelCols;  // of the last panel
  if (packed.panels() > 0 &&
      used < kPanelCols) {  // zero its columns past N; the rest is written below
    float* last = packed.data.data() + (packed.panels() - 1) * K * kPanelCols;
    for (Eigen::Index k = 0; k < K; ++k)
      std::fill(last + k * kPanelCols + used, last + (k + 1) * kPanelCols, 0.0f);
  }
  for (Eigen::Index j0 = 0; j0 < packed.cols; j0 += 8) {  // 8 rows of m at a time
    float* dst = packed.data.data() + (j0 / kPanelCols) * K * kPanelCols + j0 % kPanelCols;
    const Eigen::Index rows = std::min<Eigen::Index>(8, packed.cols - j0);
    Eigen::Index k = 0;
#if defined(__AVX__)
    if (rows == 8) {
      for (; k + 8 <= K; k += 8) {
        __m256 r[8];
        for (Eigen::Index i = 0; i < 8; ++i)
          r[i] = _mm256_loadu_ps(m.data() + (j0 + i) * m.outerStride() + k);
        transpose_8x8(r, dst + k * kPanelCols, kPanelCols);
      }
    }
#endif
    for (; k < K; ++k)
      for (Eigen::Index i = 0; i < rows; ++i) dst[k * kPanelCols + i] = m(j0 + i, k);
  }
  return packed;
}

#if defined(__AVX512F__)

bool available() { return true; }

namespace {

// c (8 x 16*NV, row stride ldc) = a-tile . b-panel over k = 0..K-1 (+ bias
// when given): 8*NV accumulators, each element one FMA chain in k order.
// NV = 3 is the full 48-column panel; 1 and 2 are its narrower tails. Step
// k also fetches lines k, k + K, ... (below `lines`) of `ahead` into L2:
// the caller's share of the next panel.
// MR = 1 computes the tile's first row only (an appended token's): the
// other rows' FMAs would be an 8-fold waste beside reading the panel.
// 16 of a panel row's values as floats: straight, or widened from bfloat16
// (exactly: the float is the bits shifted up), so that one kernel serves both.
inline __m512 load16(const float* b) { return _mm512_loadu_ps(b); }
inline __m512 load16(const std::uint16_t* b) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

template <int NV, int MR = kTileRows, typename B = float>
void kernel(const float* a, const B* b, Eigen::Index K, float* c, Eigen::Index ldc,
            const char* ahead = nullptr, Eigen::Index lines = 0, const float* bias = nullptr) {
  __m512 acc[MR][NV];
  for (auto& row : acc)
    for (auto& v : row) v = _mm512_setzero_ps();
  for (Eigen::Index k = 0; k < K; ++k) {
    // The panel streams from L2 once per tile: ask for its rows ahead.
    _mm_prefetch(reinterpret_cast<const char*>(b + 12 * kPanelCols), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(b + 12 * kPanelCols + 16), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(b + 12 * kPanelCols + 32), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(a + 64 * kTileRows), _MM_HINT_T0);
    for (Eigen::Index j = k; j < lines; j += K) _mm_prefetch(ahead + 64 * j, _MM_HINT_T1);
    __m512 bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = load16(b + 16 * v);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
    }
    a += kTileRows;
    b += kPanelCols;
  }
  if (bias) {  // each chain ends, then + bias: the order of multiply_panel's other path
    for (int v = 0; v < NV; ++v) {
      const __m512 bv = _mm512_loadu_ps(bias + 16 * v);
      for (int i = 0; i < MR; ++i) acc[i][v] = _mm512_add_ps(acc[i][v], bv);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(c + i * ldc + 16 * v, acc[i][v]);
}

// The kernel for n columns (1..48): the narrowest that covers them. All 8
// rows are computed (the rows past m of c receive values that mean nothing).
void kernel_for(Eigen::Index n, const float* a, const float* b, Eigen::Index K, float* c,
                Eigen::Index ldc, Eigen::Index /*m*/) {
  if (n > 32)
    kernel<3>(a, b, K, c, ldc);
  else if (n > 16)
    kernel<2>(a, b, K, c, ldc);
  else
    kernel<1>(a, b, K, c, ldc);
}

constexpr Eigen::Index kVectorCols = 16;  // floats per zmm: kernel_for writes whole vectors

}  // namespace

#elif defined(__AVX2__) && defined(__FMA__)

bool available() { return true; }

namespace {

// AVX2 has 16 ymm registers, too few for the 8 x 48 block: the tile is done
// as 4-row halves over at most 24 columns, 4 x NV ymm accumulators (NV <= 3,
// 12 registers) plus NV for the panel row and one broadcast. Each element is
// still one FMA chain in k order, so the results are those of the AVX-512
// kernel bit for bit.
//
// The accumulators are named rows, not an array: GCC 12 keeps an array of
// __m256 in memory and stores it on every k step (measured: 25 GFLOP/s
// instead of ~80).
template <int NV>
struct Row {
  __m256 v0 = _mm256_setzero_ps(), v1 = _mm256_setzero_ps(), v2 = _mm256_setzero_ps();

  void add(const float* a, __m256 b0, __m256 b1, __m256 b2) {
    const __m256 ai = _mm256_broadcast_ss(a);
    v0 = _mm256_fmadd_ps(ai, b0, v0);
    if constexpr (NV > 1) v1 = _mm256_fmadd_ps(ai, b1, v1);
    if constexpr (NV > 2) v2 = _mm256_fmadd_ps(ai, b2, v2);
  }
  void load(const float* c) {
    v0 = _mm256_loadu_ps(c);
    if constexpr (NV > 1) v1 = _mm256_loadu_ps(c + 8);
    if constexpr (NV > 2) v2 = _mm256_loadu_ps(c + 16);
  }
  void store(float* c) const {
    _mm256_storeu_ps(c, v0);
    if constexpr (NV > 1) _mm256_storeu_ps(c + 8, v1);
    if constexpr (NV > 2) _mm256_storeu_ps(c + 16, v2);
  }
};

// c (4 x 8*NV, row stride ldc) = rows a[0..3] of the tile . b's first 8*NV
// columns over k = 0..K-1, added to c's chains so far when `resume`. Step k
// also prefetches the cache line at prefetch + 64 k into L1, for k < lines.
// 8 of a panel row's values as floats: straight, or widened from bfloat16.
inline __m256 load8(const float* b) { return _mm256_loadu_ps(b); }
inline __m256 load8(const std::uint16_t* b) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

template <int NV, typename B = float>
void kernel(const float* a, const B* b, Eigen::Index K, float* c, Eigen::Index ldc, bool resume,
            const char* prefetch, Eigen::Index lines) {
  Row<NV> r0, r1, r2, r3;
  if (resume) {
    r0.load(c);
    r1.load(c + ldc);
    r2.load(c + 2 * ldc);
    r3.load(c + 3 * ldc);
  }
#pragma GCC unroll 2  // two k steps per loop: ~10 % faster, interleaved runs on Zen 3
  for (Eigen::Index k = 0; k < K; ++k) {
    __m256 b0 = load8(b);
    __m256 b1 = NV > 1 ? load8(b + 8) : _mm256_undefined_ps();
    __m256 b2 = NV > 2 ? load8(b + 16) : _mm256_undefined_ps();
    // Keep the panel row in registers: left to itself GCC folds the loads
    // into each row's FMAs, 12 loads per k step instead of 3 (58 vs 70-85
    // GFLOP/s in L1 on a Zen 3 core).
    __asm__("" : "+x"(b0), "+x"(b1), "+x"(b2));
    r0.add(a, b0, b1, b2);
    r1.add(a + 1, b0, b1, b2);
    r2.add(a + 2, b0, b1, b2);
    r3.add(a + 3, b0, b1, b2);
    if (k < lines) _mm_prefetch(prefetch + 64 * k, _MM_HINT_T0);
    a += kTileRows;
    b += kPanelCols;
  }
  r0.store(c);
  r1.store(c + ldc);
  r2.store(c + 2 * ldc);
  r3.store(c + 3 * ldc);
}

// The 8-row tile over n columns (1..48) in blocks of 4 rows x up to 24
// columns, k in chunks whose panel rows (kChunk x 192 bytes) stay in L1 for
// all four blocks. A chain paused at a chunk's end is stored as the float it
// is and resumed from c, so the order of arithmetic does not change.
//
// While a chunk runs, the next one is prefetched into L1: blocks 1-3 take a
// third of its panel rows each (kn lines: one per k step), block 4 its tile
// columns. After the last chunk that is the first chunk of the tile that
// follows in memory, with this panel: multiply_panel's next call. Measured
// on a Zen 3 core, x 256 x 768 . w 768 x 2304: 88-91 against 85-87 GFLOP/s
// without, interleaved (with 96- or 128-step chunks the two chunks no longer
// fit in L1 together and it is slower).
// One row of the tile (an appended token's) over n columns (1..48): six
// chains, each the same FMA chain in k order as the 4-row kernel's. Bound by
// reading the panel, which the hardware prefetcher streams in order.
template <typename B>
void row_kernel(Eigen::Index n, const float* a, const B* b, Eigen::Index K, float* c) {
  __m256 v0 = _mm256_setzero_ps(), v1 = v0, v2 = v0, v3 = v0, v4 = v0, v5 = v0;
  const Eigen::Index vectors = (n + 7) / 8;
  for (Eigen::Index k = 0; k < K; ++k) {
    const __m256 ai = _mm256_broadcast_ss(a);
    v0 = _mm256_fmadd_ps(ai, load8(b), v0);
    if (vectors > 1) v1 = _mm256_fmadd_ps(ai, load8(b + 8), v1);
    if (vectors > 2) v2 = _mm256_fmadd_ps(ai, load8(b + 16), v2);
    if (vectors > 3) v3 = _mm256_fmadd_ps(ai, load8(b + 24), v3);
    if (vectors > 4) v4 = _mm256_fmadd_ps(ai, load8(b + 32), v4);
    if (vectors > 5) v5 = _mm256_fmadd_ps(ai, load8(b + 40), v5);
    a += kTileRows;
    b += kPanelCols;
  }
  _mm256_storeu_ps(c, v0);
  _mm256_storeu_ps(c + 8, v1);
  _mm256_storeu_ps(c + 16, v2);
  _mm256_storeu_ps(c + 24, v3);
  _mm256_storeu_ps(c + 32, v4);
  _mm256_storeu_ps(c + 40, v5);
}

// The tile's first m rows (1..8) over n columns (1..48) into c, whole
// vectors: rows past m and columns past n of c (up to 8 rows, the next
// multiple of 8 columns) may be written with values that mean nothing.
void kernel_for(Eigen::Index n, const float* a, const float* b, Eigen::Index K, float* c,
                Eigen::Index ldc, Eigen::Index m) {
  if (m == 1) {  // an append's row: a quarter of the 4-row block's FMAs
    row_kernel(n, a, b, K, c);
    return;
  }
  constexpr Eigen::Index kChunk = 64;  // 64 > 96 > 128 > 256 in interleaved runs on Zen 3
  Eigen::Index k0 = 0;
  do {
    const Eigen::Index kn = std::min(kChunk, K - k0);
    const bool last = k0 + kn >= K;
    const Eigen::Index next = last ? std::min(kChunk, K) : std::min(kChunk, K - k0 - kn);
    const auto* next_b = reinterpret_cast<const char*>(b + (last ? 0 : k0 + kn) * kPanelCols);
    const auto* next_a = reinterpret_cast<const char*>(a + (last ? K : k0 + kn) * kTileRows);
    int block = 0;
    for (Eigen::Index col = 0; col < n; col += 24) {
      const Eigen::Index vectors = std::min<Eigen::Index>(3, (n - col + 7) / 8);
      for (Eigen::Index row = 0; row < m; row += 4) {  // only the 4-row blocks that hold rows
        const float* ar = a + k0 * kTileRows + row;
        const float* bc = b + k0 * kPanelCols + col;
        float* cc = c + row * ldc + col;
        // 192-byte panel rows: 3 lines per k; 32-byte tile columns: 1 per 2 k.
        const char* pf = block < 3 ? next_b + block * next * 64 : next_a;
        const Eigen::Index lines = block < 3 ? next : next / 2;
        ++block;
        if (vectors == 3)
          kernel<3>(ar, bc, kn, cc, ldc, k0 > 0, pf, lines);
        else if (vectors == 2)
          kernel<2>(ar, bc, kn, cc, ldc, k0 > 0, pf, lines);
        else
          kernel<1>(ar, bc, kn, cc, ldc, k0 > 0, pf, lines);
      }
    }
    k0 += kn;
  } while (k0 < K);
}

constexpr Eigen::Index kVectorCols = 8;  // floats per ymm: kernel_for writes whole vectors

// A tile's first m rows over all 48 columns of a bfloat16 panel into c (8 x
// 48, row stride kPanelCols), each panel row widened as it is loaded: one
// row by row_kernel, more in 4-row blocks over 24 columns, each element the
// same FMA chain in k order as kernel_for's on the widened panel.
void bf16_tile(const float* a, const std::uint16_t* b, Eigen::Index K, float* c, Eigen::Index m) {
  if (m == 1) {
    row_kernel(kPanelCols, a, b, K, c);
    return;
  }
  for (Eigen::Index col = 0; col < kPanelCols; col += 24)
    for (Eigen::Index row = 0; row < m; row += 4)
      kernel<3>(a + row, b + col, K, c + row * kPanelCols + col, kPanelCols, false, nullptr, 0);
}

}  // namespace

#endif

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))

void multiply_tile(const float* tile, const float* panel, Eigen::Index K, Eigen::Index m,
                   Eigen::Index n, float* c, Eigen::Index ldc) {
  if (m == kTileRows && n % kVectorCols == 0) {  // straight into c
    kernel_for(n, tile, panel, K, c, ldc, m);
    return;
  }
  alignas(64) float edge[kTileRows * kPanelCols];  // whole vectors of every row
  kernel_for(n, tile, panel, K, edge, kPanelCols, m);
  for (Eigen::Index i = 0; i < m; ++i)
    std::copy(edge + i * kPanelCols, edge + i * kPanelCols + n, c + i * ldc);
}

#else  // neither AVX-512 nor AVX2 with FMA: the engine uses Eigen; these portable loops keep the
       // API whole

void multiply_tile(const float* tile, const float* panel, Eigen::Index K, Eigen::Index m,
                   Eigen::Index n, float* c, Eigen::Index ldc) {
  for (Eigen::Index i = 0; i < m; ++i)
    for (Eigen::Index j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (Eigen::Index k = 0; k < K; ++k)
        sum = std::fma(tile[k * kTileRows + i], panel[k * kPanelCols + j], sum);
      c[i * ldc + j] = sum;
    }
}

bool available() { return false; }

#endif

void multiply_panel(const PackedRows& x, const float* panel, Eigen::Index p, const RowMatrix& bias,
                    Eigen::Ref<RowMatrix> y, bool fetch_next) {
  const Eigen::Index col = p * kPanelCols, ldy = y.outerStride();
  const Eigen::Index n = std::min(kPanelCols, y.cols() - col);
#if defined(__AVX512F__)
  // The next panel in memory (the next one this thread multiplies, when the
  // caller splits panels into contiguous ranges) is fetched into L2 while
  // this one runs, spread over the tiles: one cache line per k step.
  const auto* ahead = reinterpret_cast<const char*>(panel + x.cols * kPanelCols);
  const Eigen::Index lines =
      fetch_next && col + kPanelCols < y.cols() ? x.cols * kPanelCols / 16 : 0;
  const Eigen::Index per_tile = (lines + x.tiles() - 1) / std::max<Eigen::Index>(x.tiles(), 1);
  const float* panel_bias = bias.size() > 0 ? bias.data() + col : nullptr;
#else
  (void)fetch_next;  // AVX2: fetching the next panel into L2 did not help one row
#endif
  for (Eigen::Index t = 0; t < x.tiles(); ++t) {
    const Eigen::Index row = t * kTileRows;
    const Eigen::Index m = std::min(kTileRows, x.rows - row);
    float* c = y.data() + row * ldy + col;
#if defined(__AVX512F__)
    if (n == kPanelCols) {  // the bias added in the kernel
      const Eigen::Index from = std::min(lines, t * per_tile);
      const Eigen::Index count = std::min(per_tile, lines - from);
      if (m == kTileRows) {
        kernel<3>(x.tile(t), panel, x.cols, c, ldy, ahead + 64 * from, count, panel_bias);
      } else if (m == 1) {  // one row straight into y: 48 columns are whole vectors
        kernel<3, 1>(x.tile(t), panel, x.cols, c, ldy, ahead + 64 * from, count, panel_bias);
      } else {  // a last tile of fewer rows (an append's one): through a buffer
        alignas(64) float edge[kTileRows * kPanelCols];
        kernel<3>(x.tile(t), panel, x.cols, edge, kPanelCols, ahead + 64 * from, count, panel_bias);
        for (Eigen::Index i = 0; i < m; ++i)
          std::copy(edge + i * kPanelCols, edge + (i + 1) * kPanelCols, c + i * ldy);
      }
      continue;
    }
#endif
    multiply_tile(x.tile(t), panel, x.cols, m, n, c, ldy);
    if (bias.size() > 0) {
      const float* b = bias.data() + col;
      for (Eigen::Index i = 0; i < m; ++i)
        for (Eigen::Index j = 0; j < n; ++j) c[i * ldy + j] += b[j];
    }
  }
}

void multiply_panel_bf16(const PackedRows& x, const std::uint16_t* panel, Eigen::Index p,
                         const RowMatrix& bias, Eigen::Ref<RowMatrix> y) {
  const Eigen::Index col = p * kPanelCols, ldy = y.outerStride(), K = x.cols;
  const Eigen::Index n = std::min(kPanelCols, y.cols() - col);
  const float* panel_bias = bias.size() > 0 ? bias.data() + col : nullptr;
  for (Eigen::Index t = 0; t < x.tiles(); ++t) {
    const Eigen::Index row = t * kTileRows;
    const Eigen::Index m = std::min(kTileRows, x.rows - row);
    float* c = y.data() + row * ldy + col;
    alignas(64) float edge[kTileRows * kPanelCols];  // whole vectors of every row
#if defined(__AVX512F__)
    if (n == kPanelCols && m == 1) {  // an edit's row straight into y, the bias added in the kernel
      kernel<3, 1>(x.tile(t), panel, K, c, ldy, nullptr, 0, panel_bias);
      continue;
    }
    kernel<3>(x.tile(t), panel, K, edge, kPanelCols);
#elif defined(__AVX2__) && defined(__FMA__)
    bf16_tile(x.tile(t), panel, K, edge, m);
#else
    for (Eigen::Index i = 0; i < m; ++i)
      for (Eigen::Index j = 0; j < n; ++j) {
        float sum = 0.0f;
        for (Eigen::Index k = 0; k < K; ++k)
          sum =
              std::fma(x.tile(t)[k * kTileRows + i], bf16_to_float(panel[k * kPanelCols + j]), sum);
        edge[i * kPanelCols + j] = sum;
      }
#endif
    for (Eigen::Index i = 0; i < m; ++i) {
      float* out = c + i * ldy;
      std::copy_n(edge + i * kPanelCols, n, out);
      if (panel_bias)
        for (Eigen::Index j = 0; j < n; ++j) out[j] += panel_bias[j];
    }
  }
}

namespace {

#if defined(__AVX512F__)
using Lanes = __m512;
constexpr Eigen::Index kDotLanes = 16;
inline Lanes zero_lanes() { return _mm512_setzero_ps(); }
inline Lanes load_lanes(const float* x) { return _mm512_loadu_ps(x); }
inline Lanes load_lanes(const std::uint16_t* h) { return load16(h); }
inline Lanes fma_lanes(Lanes a, Lanes b, Lanes c) { return _mm512_fmadd_ps(a, b, c); }
inline float sum_lanes(Lanes v) {
  // A fixed tree: halves added until one lane is left (through memory: GCC
  // 12's 512-to-256 extracts warn of an undefined operand under -Werror).
  alignas(64) float l[16];
  _mm512_store_ps(l, v);
  for (int w = 8; w > 0; w /= 2)
    for (int i = 0; i < w; ++i) l[i] += l[i + w];
  return l[0];
}
// Four vectors' sums, each by sum_lanes' tree, in far fewer instructions:
// at each level two vectors' halves are paired up in one (a + b is b + a
// in floats, so every sum is the tree's own).
inline void sum4_lanes(const Lanes a[4], float out[4]) {
  alignas(64) static constexpr std::int32_t kSwap[4][16] = {
      {8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7},
      {4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11},
      {2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13},
      {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14}};
  auto swap = [](int level, Lanes v) {
    return _mm512_mask_permutexvar_ps(v, 0xFFFF, _mm512_load_si512(kSwap[level]), v);
  };
  // Level 1: lanes 0-7 a0's eight sums l[i] + l[i + 8], lanes 8-15 a1's (likewise a2, a3).
  const Lanes m01 = _mm512_add_ps(_mm512_mask_blend_ps(0xFF00, a[0], a[1]),
                                  _mm512_mask_blend_ps(0xFF00, swap(0, a[0]), swap(0, a[1])));
  const Lanes m23 = _mm512_add_ps(_mm512_mask_blend_ps(0xFF00, a[2], a[3]),
                                  _mm512_mask_blend_ps(0xFF00, swap(0, a[2]), swap(0, a[3])));
  // Level 2: four sums each, a0 in lanes 0-3, a2 4-7, a1 8-11, a3 12-15.
  Lanes n = _mm512_add_ps(_mm512_mask_blend_ps(0xF0F0, m01, m23),
                          _mm512_mask_blend_ps(0xF0F0, swap(1, m01), swap(1, m23)));
  n = _mm512_add_ps(n, swap(2, n));  // levels 3 and 4
  n = _mm512_add_ps(n, swap(3, n));
  alignas(64) float l[16];
  _mm512_store_ps(l, n);
  out[0] = l[0];
  out[1] = l[8];
  out[2] = l[4];
  out[3] = l[12];
}
#elif defined(__AVX2__) && defined(__FMA__)
using Lanes = __m256;
constexpr Eigen::Index kDotLanes = 8;
inline Lanes zero_lanes() { return _mm256_setzero_ps(); }
inline Lanes load_lanes(const float* x) { return _mm256_loadu_ps(x); }
inline Lanes load_lanes(const std::uint16_t* h) { return load8(h); }
inline Lanes fma_lanes(Lanes a, Lanes b, Lanes c) { return _mm256_fmadd_ps(a, b, c); }
inline float sum_lanes(Lanes v) {
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_movehdup_ps(q));
  return _mm_cvtss_f32(q);
}
inline void sum4_lanes(const Lanes a[4], float out[4]) {
  for (int v = 0; v < 4; ++v) out[v] = sum_lanes(a[v]);
}
#endif

inline float value_of(const float* h) { return *h; }
inline float value_of(const std::uint16_t* h) { return bf16_to_float(*h); }

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
// R rows of x against V rows of h: R x V dot products over d, each lane-wise
// over whole vectors, then its lanes summed, then the tail in k order.
template <int R, int V, typename E>
void dots_block(const float* x, Eigen::Index ldx, const E* h, Eigen::Index d, float* out,
                Eigen::Index ldo) {
  Lanes acc[R][V];
  for (auto& row : acc)
    for (auto& a : row) a = zero_lanes();
  const Eigen::Index whole = d - d % kDotLanes;
  // The next V rows of h follow these in memory: fetched into L1 meanwhile,
  // a step's worth per step (the hardware prefetcher alone reached ~60 % of
  // the read rate the projections reach).
  constexpr int kStepBytes = V * static_cast<int>(sizeof(E) * kDotLanes);
  const char* next = reinterpret_cast<const char*>(h + V * d);
  for (Eigen::Index k = 0; k < whole; k += kDotLanes) {
    for (int line = 0; line < kStepBytes; line += 64) _mm_prefetch(next + line, _MM_HINT_T0);
    next += kStepBytes;
    Lanes hv[V];
    for (int v = 0; v < V; ++v) hv[v] = load_lanes(h + v * d + k);
    for (int r = 0; r < R; ++r) {
      const Lanes xv = load_lanes(x + r * ldx + k);
      for (int v = 0; v < V; ++v) acc[r][v] = fma_lanes(xv, hv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r) {
    float sums[V];
    if constexpr (V == 4)
      sum4_lanes(acc[r], sums);
    else
      for (int v = 0; v < V; ++v) sums[v] = sum_lanes(acc[r][v]);
    for (int v = 0; v < V; ++v) {
      float sum = sums[v];
      for (Eigen::Index k = whole; k < d; ++k)
        sum = std::fma(x[r * ldx + k], value_of(h + v * d + k), sum);
      out[r * ldo + v] = sum;
    }
  }
}

// Every row of x against V rows of h, the rows of x in blocks of up to 4.
template <int V, typename E>
void dots_rows(const float* x, Eigen::Index m, Eigen::Index ldx, const E* h, Eigen::Index d,
               float* out, Eigen::Index ldo) {
  Eigen::Index i = 0;
  for (; i + 4 <= m; i += 4) dots_block<4, V>(x + i * ldx, ldx, h, d, out + i * ldo, ldo);
  for (; i + 2 <= m; i += 2) dots_block<2, V>(x + i * ldx, ldx, h, d, out + i * ldo, ldo);
  for (; i < m; ++i) dots_block<1, V>(x + i * ldx, ldx, h, d, out + i * ldo, ldo);
}
#endif

template <typename E>
void row_dots(const float* x, Eigen::Index m, Eigen::Index ldx, const E* h, Eigen::Index n,
              Eigen::Index d, float* out, Eigen::Index ldo) {
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
  Eigen::Index j = 0;
  for (; j + 4 <= n; j += 4) dots_rows<4>(x, m, ldx, h + j * d, d, out + j, ldo);
  for (; j < n; ++j) dots_rows<1>(x, m, ldx, h + j * d, d, out + j, ldo);
#else
  for (Eigen::Index i = 0; i < m; ++i)
    for (Eigen::Index j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (Eigen::Index k = 0; k < d; ++k)
        sum = std::fma(x[i * ldx + k], value_of(h + j * d + k), sum);
      out[i * ldo + j] = sum;
    }
#endif
}

}  // namespace

void bf16_row_dots(const float* x, Eigen::Index m, Eigen::Index ldx, const std::uint16_t* h,
                   Eigen::Index n, Eigen::Index d, float* out, Eigen::Index ldo) {
  row_dots(x, m, ldx, h, n, d, out, ldo);
}

void row_dots(const float* x, Eigen::Index m, Eigen::Index ldx, const float* h, Eigen::Index n,
              Eigen::Index d, float* out, Eigen::Index ldo) {
  row_dots<float>(x, m, ldx, h, n, d, out, ldo);
}

namespace {

// Fused multiply-adds done by one thread in `rounds` rounds of 12 chains x 64 steps.
double fma_loop(long rounds) {
#if defined(__AVX512F__)
  using V = __m512;
  constexpr int kLanes = 16;
  const V a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  V c[12];
  for (V& v : c) v = _mm512_set1_ps(1.0f);
  for (long r = 0; r < rounds; ++r)
    for (int s = 0; s < 64; ++s)
      for (V& v : c) v = _mm512_fmadd_ps(v, a, b);
  float sink = 0;
  alignas(64) float lanes[16];  // (GCC 12's _mm512_reduce_add_ps warns under -Werror)
  for (V& v : c) {
    _mm512_store_ps(lanes, v);
    for (float x : lanes) sink += x;
  }
#elif defined(__AVX2__) && defined(__FMA__)
  using V = __m256;
  constexpr int kLanes = 8;
  const V a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  V c[12];
  for (V& v : c) v = _mm256_set1_ps(1.0f);
  for (long r = 0; r < rounds; ++r)
    for (int s = 0; s < 64; ++s)
      for (V& v : c) v = _mm256_fmadd_ps(v, a, b);
  float sink = 0;
  alignas(32) float lanes[8];
  for (V& v : c) {
    _mm256_store_ps(lanes, v);
    for (float x : lanes) sink += x;
  }
#else
  constexpr int kLanes = 0;
  const float sink = 0;
  (void)rounds;
#endif
  volatile float keep = sink;  // the chains' results are used
  (void)keep;
  return static_cast<double>(rounds) * 64 * 12 * kLanes;
}

}  // namespace

double measure_fma_gflops(double seconds) {
  if (!available()) return 0.0;
  using clock = std::chrono::steady_clock;
  // Calibrate one thread's rounds for the time asked, then run every thread.
  long rounds = 1000;
  for (;;) {
    const auto t0 = clock::now();
    fma_loop(rounds);
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    if (s > seconds / 8 || rounds > (1L << 30)) {
      rounds = static_cast<long>(static_cast<double>(rounds) * seconds / std::max(s, 1e-6));
      break;
    }
    rounds *= 4;
  }
  double fmas = 0.0;
  const auto t0 = clock::now();
#pragma omp parallel reduction(+ : fmas)
  fmas += fma_loop(rounds);
  const double s = std::chrono::duration<double>(clock::now() - t0).count();
  return 2.0 * fmas / s / 1e9;
}

}  // namespace attnscope::core::gemm
