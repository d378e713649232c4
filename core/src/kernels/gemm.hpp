// gemm.hpp: the engine's projections y = x . w + b with a register-blocked
// kernel, AVX-512 or AVX2 + FMA. Internal to attnscope_core.
//
// Eigen's general product packs both operands on every call and its AVX-512
// kernel keeps 12 accumulators; at the layer sizes of GPT-2 (x 256 x 768,
// w 768 x 2304) it reaches ~55 % of an AVX-512 machine's FMA peak. Here the
// weights are packed once per parameter set into panels of kPanelCols
// columns, x once per run into tiles of kTileRows rows, and an 8 x 48 kernel
// runs over them:
// - AVX-512: 24 zmm accumulators; ~1.4x Eigen on two threads, measured
//   interleaved in one process;
// - AVX2 + FMA (16 ymm registers): four 4 x 24 blocks of 12 accumulators per
//   tile, k in 64-step chunks, each prefetching the next into L1; ~1.4x Eigen
//   on one Zen 3 core (85-88 vs 62-63 GFLOP/s for x 256 x 768 . w 768 x 2304
//   in the same run, ~85 % of an FMA-only loop's 100).
//
// Every output element is one chain of fused multiply-adds over k = 0..K-1
// from 0, then + bias: the order of a plain dot product, so both kernels give
// the same bits. Without either (ATTNSCOPE_NATIVE=OFF, or an older CPU)
// available() is false and the engine uses Eigen.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "attnscope/base/matrix.hpp"

namespace attnscope::core::gemm {

// A std::vector whose resize leaves the new elements uninitialised instead
// of zeroing them, for buffers that are then written in full (the packed
// operands, the dropout flags): at T = 256 the zeroing was ~4 MB of memset
// per run, ~2 % of its time.
template <typename T>
struct NoInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  NoInitAllocator() = default;
  template <typename U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}
  // Cache-line aligned: a 64-byte vector load from a panel row then never
  // straddles two lines.
  static constexpr std::align_val_t kAlign{64};
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlign); }
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialisation: no value for floats and bytes
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
template <typename T>
using Buffer = std::vector<T, NoInitAllocator<T>>;

constexpr Eigen::Index kPanelCols = 48;  // columns of w per packed panel (3 zmm, 6 ymm)
constexpr Eigen::Index kTileRows = 8;    // rows of x per packed tile

// True when a kernel was compiled (the build targets AVX-512, or AVX2 with FMA).
bool available();

// This machine's fused multiply-add rate now, in GFLOP/s (2 per FMA) over
// all OpenMP threads: each runs 12 independent vector FMA chains (the widest
// the build targets) for about `seconds`. The floor a benchmark states its
// time against; 0 when no kernel was compiled.
double measure_fma_gflops(double seconds);

// w (K, N) as panels: panel p holds columns [p*48, p*48 + 48) as K rows of
// 48 floats, zero beyond N. Or, packed from bfloat16 (pack_weights_bf16),
// the same panels of bfloat16 bits in `bf16` (half the bytes) and `data`
// empty: widen_panel turns one into floats, exactly (a bfloat16 is a
// float32's upper half), just before the kernel multiplies it.
struct PackedWeights {
  Eigen::Index rows = 0, cols = 0;  // K, N of w
  Buffer<float> data;
  Buffer<std::uint16_t> bf16;

  bool is_bf16() const { return !bf16.empty(); }
  Eigen::Index panels() const { return (cols + kPanelCols - 1) / kPanelCols; }
  const float* panel(Eigen::Index p) const { return data.data() + p * rows * kPanelCols; }
  const std::uint16_t* panel_bf16(Eigen::Index p) const {
    return bf16.data() + p * rows * kPanelCols;
  }
  // The bytes the panels hold.
  std::size_t bytes() const { return data.size() * sizeof(float) + bf16.size() * 2; }
};

// bfloat16 bits as the float they stand for, and a float's upper half
// (exact for floats widened from bfloat16; truncates others).
inline float bf16_to_float(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline std::uint16_t float_to_bf16_bits(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<std::uint16_t>(bits >> 16);
}
// n bfloat16 values as floats (vectorised where the build has AVX2 or AVX-512).
void widen_bf16(const std::uint16_t* src, Eigen::Index n, float* out);

// x (M, K) as tiles: tile t holds rows [t*8, t*8 + 8) k-major (8 floats per
// k), zero beyond M.
struct PackedRows {
  Eigen::Index rows = 0, cols = 0;  // M, K of x
  Buffer<float> data;
  float max_abs = 0.0f;  // max_abs(x), found while packing

  Eigen::Index tiles() const { return (rows + kTileRows - 1) / kTileRows; }
  const float* tile(Eigen::Index t) const { return data.data() + t * cols * kTileRows; }
};

// Where products or sums overflow, the order of the arithmetic decides
// between inf and NaN: a fused multiply-add never rounds a product to inf
// before adding, Eigen's small products do. The engine therefore runs the
// kernel only when no product and no partial sum can leave float32's range
// (max|x| * max|w| * K below FLT_MAX), so that both engine paths give the
// same NaNs; otherwise it uses Eigen, like the reference path.
// The largest |value| in m, or +inf when m holds a NaN or an infinity.
float max_abs(const RowMatrix& m);
// The same over n contiguous floats (the first rows of a taller matrix).
float max_abs(const float* v, Eigen::Index n);
bool sums_stay_finite(float max_abs_x, float max_abs_w, Eigen::Index K);

PackedWeights pack_weights(const Eigen::Ref<const RowMatrix>& w);
// w (rows, cols) of bfloat16 bits, row-major with rows `ld` values apart
// (0: cols), as bfloat16 panels (PackedWeights::bf16).
PackedWeights pack_weights_bf16(const std::uint16_t* w, Eigen::Index rows, Eigen::Index cols,
                                Eigen::Index ld = 0);
// Panel p of a bfloat16 PackedWeights as floats into out (rows * kPanelCols):
// the panel pack_weights would have made from the widened w, bit for bit.
void widen_panel(const PackedWeights& w, Eigen::Index p, float* out);
// The same from a row-major (rows, cols) array in place (a mapped file),
// rows `ld` floats apart (0: cols).
PackedWeights pack_weights(const float* w, Eigen::Index rows, Eigen::Index cols,
                           Eigen::Index ld = 0);
// Panel p of w into out (w.rows() * kPanelCols floats).
void pack_panel(const RowMatrix& w, Eigen::Index p, float* out);
// Reuses out's storage.
void pack_rows(const RowMatrix& x, PackedRows& out);
// Packing in pieces, for x assembled block by block (the heads' contexts
// side by side): size_rows sizes out for an (M, K) x, then each
// pack_columns call packs `block` as columns [col, col + block.cols()) of x
// (zero in the padding rows) and returns max_abs(block). The caller sets
// out.max_abs to the largest of the returned values. Calls for disjoint
// column ranges may run on different threads.
// Tiles [first_tile, last_tile) only (last_tile -1: to the end), so that
// threads can pack disjoint tiles of one x.
void size_rows(Eigen::Index rows, Eigen::Index cols, PackedRows& out);
float pack_columns(const RowMatrix& block, Eigen::Index col, PackedRows& out,
                   Eigen::Index first_tile = 0, Eigen::Index last_tile = -1);

// The attention heads' products (scores = Q . K^T, context = weights . V)
// run on the same kernel, one tile of 8 query rows at a time:
// pack_transposed(m) packs m^T as weights (K^T: key rows become panel
// columns), pack_tile packs m rows (m <= 8) of a row-major matrix as one
// tile over its first K columns (zero rows past m), and multiply_tile writes
// c (m x n, row stride ldc, n <= 48) = tile . panel over k = 0..K-1, where K
// may be less than the tile's and the panel's length (the causal context
// stops at the tile's last visible key). Each element is one FMA chain in k
// order from 0, as in multiply_panel.
PackedWeights pack_transposed(const Eigen::Ref<const RowMatrix>& m);
void pack_tile(const float* src, Eigen::Index stride, Eigen::Index m, Eigen::Index K, float* out);
void multiply_tile(const float* tile, const float* panel, Eigen::Index K, Eigen::Index m,
                   Eigen::Index n, float* c, Eigen::Index ldc);

// Columns [p*48, min(p*48 + 48, N)) of y = x . w + bias, from panel p of w
// (`panel`: pack_panel's layout). bias is (1, N) or empty; y is (M, N), or
// M rows of a taller matrix. With fetch_next (AVX-512), the next panel in
// memory is fetched into L2 meanwhile: false where this thread will not
// multiply it (the last panel of its range).
void multiply_panel(const PackedRows& x, const float* panel, Eigen::Index p, const RowMatrix& bias,
                    Eigen::Ref<RowMatrix> y, bool fetch_next = true);
// The same from panel p of a bfloat16 PackedWeights (`panel`: its
// panel_bf16(p)), each panel row widened in registers as the kernel loads
// it: the bits multiply_panel gives on widen_panel's floats, without
// writing the widened panel out. For x of a tile or two (an edit's rows),
// where reading the weights is the cost; more tiles reuse one widened
// panel instead.
void multiply_panel_bf16(const PackedRows& x, const std::uint16_t* panel, Eigen::Index p,
                         const RowMatrix& bias, Eigen::Ref<RowMatrix> y);

// out (m x n, rows ldo apart) = x (m x d, rows ldx apart) . hᵀ, h (n x d) of
// bfloat16 bits, row-major: an LM head's rows, each widened as it is loaded.
// Each element is one dot product in a fixed order (a vector of lane sums
// over k, its lanes summed, then the k past the last whole vector), so a
// row's logits have the same bits whatever m and n are. For a few rows of
// x, where reading h is the cost.
void bf16_row_dots(const float* x, Eigen::Index m, Eigen::Index ldx, const std::uint16_t* h,
                   Eigen::Index n, Eigen::Index d, float* out, Eigen::Index ldo);
// The same over a float32 h: a BF16 head and the F32 head of its widened
// values give the same bits.
void row_dots(const float* x, Eigen::Index m, Eigen::Index ldx, const float* h, Eigen::Index n,
              Eigen::Index d, float* out, Eigen::Index ldo);

}  // namespace attnscope::core::gemm
