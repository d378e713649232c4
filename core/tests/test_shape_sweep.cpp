// test_shape_sweep.cpp: every blocking edge of the engine's loops, crossed.
//
// The kernels cut their work into tiles of 8 rows (gemm::kTileRows), panels
// of 48 columns (gemm::kPanelCols), 64-step k chunks and 8- or 16-float
// vectors (AVX2, AVX-512); a GPT-2 run's heads go on the kernel from 32 new
// rows on and in 64-row blocks otherwise; the chapter-3 fast path splits its
// rows between threads. A buffer sized by one of these numbers and filled
// by another only overflows at some shapes: tests at a few tiny shapes never
// reach them. Here each size steps across each edge, and what is computed is
// checked against a plain double-precision reference, element by element,
// with guard zones around what the kernels write (so an out-of-bounds write
// fails even without AddressSanitizer; `make test-sanitize` runs this too).
//
//   ModelSweep: GPT-2 forwards of random models (head_dim 1 to 128) for
//     every T up to 2 max(8, head_dim) + 3 and around every block edge,
//     fresh and by appends, against gpt2_reference.hpp;
//   GemmSweep: packing and the 8 x 48 kernel for m, n, k across 8, 16, 24,
//     32, 48, 64 and 96, aligned and not, strided and not; BF16 panels;
//   FastPathSweep: chapter 3's fast path against the reference path;
//   ThumbnailSweep: block pooling around the thumbnail size and its multiples.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "attnscope/analysis/thumbnail.hpp"
#include "attnscope/attention/attention.hpp"
#include "attnscope/model/gpt2_model.hpp"
#include "gpt2_reference.hpp"
#include "kernels/gemm.hpp"
#include "model/gpt2_internal.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

using gemm::kPanelCols;
using gemm::kTileRows;

// ---------------------------------------------------------------------------
// GPT-2 forwards.

struct ModelShape {
  int n_head, head_dim, n_layer, n_inner;
  Gpt2Activation activation;
  bool scale_attn_weights = true;
  bool scale_by_layer = false;
};

std::string shape_name(const ::testing::TestParamInfo<ModelShape>& info) {
  const ModelShape& s = info.param;
  return "head_dim" + std::to_string(s.head_dim) + "_heads" + std::to_string(s.n_head) + "_layers" +
         std::to_string(s.n_layer);
}

// The lengths a model is run at: every T up to 2 max(8, head_dim) + 3, so
// T below, at and past head_dim (the heads' tile holds head_dim columns of
// Q, then T of weights) and past every tile edge on the way, and both sides
// of every other edge up to 145: 32 (the heads move to the kernel),
// multiples of 48 (key panels) and 64 (the row blocks off the kernel).
std::vector<int> sweep_lengths(int head_dim) {
  std::set<int> lengths;
  const int dense = 2 * std::max<int>(static_cast<int>(kTileRows), head_dim) + 3;
  for (int t = 1; t <= dense; ++t) lengths.insert(t);
  for (int edge : {32, 48, 64, 96, 128, 144})
    for (int t = edge - 1; t <= edge + 1; ++t) lengths.insert(t);
  return {lengths.begin(), lengths.end()};
}

class ModelSweep : public ::testing::TestWithParam<ModelShape> {
 protected:
  void SetUp() override {
    const ModelShape& s = GetParam();
    lengths_ = sweep_lengths(s.head_dim);
    longest_ = lengths_.back();
    Gpt2Config c;
    c.n_layer = s.n_layer;
    c.n_head = s.n_head;
    c.n_embd = s.n_head * s.head_dim;
    c.n_inner = s.n_inner;
    c.n_positions = longest_;
    c.vocab_size = 37;  // any size works: random_gpt2 checks none against GPT-2's tokenizer
    c.activation_function = s.activation;
    c.scale_attn_weights = s.scale_attn_weights;
    c.scale_attn_by_inverse_layer_idx = s.scale_by_layer;
    model_ = testing::sharp_random_gpt2(c, static_cast<std::uint64_t>(s.head_dim * 100 + s.n_head));
    ids_ = testing::sweep_ids(longest_, c.vocab_size, static_cast<std::uint64_t>(s.head_dim));
    ref_ = testing::reference_forward(*model_, ids_);
  }

  std::vector<int> first(int t) const { return std::vector<int>(ids_.begin(), ids_.begin() + t); }

  std::vector<int> lengths_;
  int longest_ = 0;
  std::shared_ptr<const Gpt2Model> model_;
  std::vector<int> ids_;
  testing::ReferenceForward ref_;
};

// Shortest first: the heads' tile is a thread_local buffer that only grows,
// so a length whose tile is too small must come before any longer one in
// the same process (ctest runs each model in a process of its own).
// The forward's own weights are checked (the cache keeps them); next to
// every multiple of 8 also a run without a cache, whose weights are
// recomputed off the kernel, 64 query rows at a time.
TEST_P(ModelSweep, EveryLengthFromScratch) {
  ModelRun::Options none;
  none.cache_bytes = 0;
  for (int t : lengths_) {
    ModelRun run(model_, first(t));
    ASSERT_EQ(testing::compare_with_reference(run, ref_), "") << "fresh run of " << t;
    if ((t + 1) % 8 > 2) continue;
    ModelRun lean(model_, first(t), none);
    ASSERT_EQ(testing::compare_with_reference(lean, ref_), "") << "run of " << t << ", no cache";
  }
}

// A fresh run of t0 tokens (on the kernel from 32 on), then one token at a
// time across the next edges, checked after every append (the appended
// rows wait below each head's map until it is asked for); and one chain
// with no cache, whose stages are recomputed rather than kept. From 1 every
// row is appended, across the first five tiles; the other starts cross 32,
// 48, 64, 96, 128, 144, head_dim and 2 head_dim.
TEST_P(ModelSweep, AppendsAcrossEveryEdge) {
  const int hd = GetParam().head_dim;
  std::set<int> starts = {1, 29, 31, 32, 45, 62, 94, 126, 141};
  for (int edge : {hd, 2 * hd})
    if (edge - 2 >= 1) starts.insert(edge - 2);
  for (int t0 : starts) {
    if (t0 >= longest_) continue;
    const int t1 = std::min(longest_, t0 + (t0 == 1 ? 40 : 5));
    ModelRun run(model_, first(t0));
    for (int t = t0 + 1; t <= t1; ++t) {
      run.append(ids_[static_cast<std::size_t>(t - 1)]);
      ASSERT_EQ(testing::compare_with_reference(run, ref_), "")
          << "fresh run of " << t0 << ", appended up to " << t;
    }
  }
  ModelRun::Options none;
  none.cache_bytes = 0;
  const int t0 = std::min(longest_ - 3, 33);
  ModelRun lean(model_, first(t0), none);
  for (int t = t0 + 1; t <= t0 + 3; ++t) {
    lean.append(ids_[static_cast<std::size_t>(t - 1)]);
    ASSERT_EQ(testing::compare_with_reference(lean, ref_), "") << "no cache, appended up to " << t;
  }
}

// A tolerance that would let a wrong key through is no test: the reference's
// weights in a row must differ from the next key's by far more than the
// bound compare_with_reference allows (20 times), in most rows of every head.
TEST_P(ModelSweep, TheToleranceSeparatesNeighbouringKeys) {
  for (int l = 0; l < GetParam().n_layer; ++l)
    for (int h = 0; h < GetParam().n_head; ++h) {
      const testing::MatrixD& w =
          ref_.weights[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)];
      int rows = 0, separated = 0;
      for (Eigen::Index i = 1; i < w.rows(); ++i) {
        const double bound = testing::weights_bound(ref_, l, h, i);
        double largest_step = 0.0;
        for (Eigen::Index j = 0; j < i; ++j)
          largest_step = std::max(largest_step, std::abs(w(i, j + 1) - w(i, j)));
        ++rows;
        separated += largest_step > 20.0 * bound;
      }
      EXPECT_GE(separated, rows * 9 / 10);
    }
}

const ModelShape kModelShapes[] = {
    {3, 1, 2, 5, Gpt2Activation::GeluNew},
    {2, 7, 1, 9, Gpt2Activation::Gelu, false},  // unscaled scores
    {3, 8, 2, 16, Gpt2Activation::GeluNew},
    {4, 16, 1, 12, Gpt2Activation::Relu},
    {2, 48, 2, 8, Gpt2Activation::GeluPytorchTanh},
    {2, 64, 2, 16, Gpt2Activation::GeluNew},             // GPT-2's head_dim
    {1, 80, 2, 8, Gpt2Activation::GeluNew, true, true},  // scores also / (layer + 1)
    {1, 96, 1, 8, Gpt2Activation::Gelu},
    {1, 128, 1, 8, Gpt2Activation::GeluNew},
};
INSTANTIATE_TEST_SUITE_P(Shapes, ModelSweep, ::testing::ValuesIn(kModelShapes), shape_name);

// ---------------------------------------------------------------------------
// The kernel: gemm.hpp.

// Both sides of every edge the kernels block by: tiles of 8, 16- and
// 24-column register blocks (AVX2), vectors of 8 and 16, 48-column panels,
// 64-step k chunks, and past two of each.
const std::vector<Eigen::Index> kSizes = {1,  2,  3,  4,  5,  6,  7,  8,  9,  15, 16, 17, 23, 24,
                                          25, 31, 32, 33, 47, 48, 49, 63, 64, 65, 95, 96, 97, 129};

// A NaN with a payload no computation makes: what guard zones and unwritten
// cells hold.
constexpr std::uint32_t kSentinelBits = 0x7fc0beefu;
const float kSentinel = std::bit_cast<float>(kSentinelBits);
bool is_sentinel(float v) { return std::bit_cast<std::uint32_t>(v) == kSentinelBits; }

// A rows x cols window, rows `ld` floats apart, in a buffer of sentinels:
// 64 floats of guard before and after, and the ld - cols floats after each
// row. The window starts 64-byte aligned plus `offset` floats (1: no
// vector-aligned access). A read of the padding brings a NaN into the
// results; a write there changes a sentinel, which damage() finds.
class Window {
 public:
  static constexpr Eigen::Index kGuard = 64;
  Window(Eigen::Index rows, Eigen::Index cols, Eigen::Index ld, Eigen::Index offset)
      : rows_(rows), cols_(cols), ld_(ld) {
    buffer_.assign(static_cast<std::size_t>(2 * kGuard + 16 + offset + rows * ld), kSentinel);
    const auto address = reinterpret_cast<std::uintptr_t>(buffer_.data() + kGuard);
    const auto skip = static_cast<Eigen::Index>(((64 - address % 64) % 64) / sizeof(float));
    begin_ = kGuard + skip + offset;
  }
  float* data() { return buffer_.data() + begin_; }
  float& at(Eigen::Index i, Eigen::Index j) { return data()[i * ld_ + j]; }
  Eigen::Index ld() const { return ld_; }
  void fill(const RowMatrix& m) {
    for (Eigen::Index i = 0; i < rows_; ++i)
      for (Eigen::Index j = 0; j < cols_; ++j) at(i, j) = m(i, j);
  }
  Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>> map() {
    return {data(), rows_, cols_, Eigen::OuterStride<>(ld_)};
  }
  // The first float outside the window that is no longer a sentinel, as
  // "offset k from the window's start", or "".
  std::string damage() const {
    for (std::size_t k = 0; k < buffer_.size(); ++k) {
      const auto rel = static_cast<Eigen::Index>(k) - begin_;
      const bool inside = rel >= 0 && rel < rows_ * ld_ && rel % ld_ < cols_;
      if (!inside && !is_sentinel(buffer_[k]))
        return "written outside the window at offset " + std::to_string(rel) + " (" +
               std::to_string(rows_) + " x " + std::to_string(cols_) + ", ld " +
               std::to_string(ld_) + ")";
    }
    return "";
  }

 private:
  Eigen::Index rows_, cols_, ld_, begin_ = 0;
  std::vector<float> buffer_;
};

RowMatrix random_matrix(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  RowMatrix m(rows, cols);
  for (Eigen::Index k = 0; k < m.size(); ++k) m.data()[k] = u(rng);
  return m;
}

// y (m x n) = x . w (+ bias) in float must lie within the error bound of a
// chain of k fused multiply-adds (then one add) around the double product:
// (k + 1) eps sum |x||w| (+ eps |bias|). Checks every element; "" or the
// first that strays, `what` naming the case.
template <typename Y>
std::string check_product(const Y& y, const RowMatrix& x, const RowMatrix& w, const RowMatrix& bias,
                          const std::string& what) {
  constexpr double eps = std::numeric_limits<float>::epsilon();
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    for (Eigen::Index j = 0; j < w.cols(); ++j) {
      double exact = 0.0, magnitude = 0.0;
      for (Eigen::Index k = 0; k < x.cols(); ++k) {
        const double p = static_cast<double>(x(i, k)) * static_cast<double>(w(k, j));
        exact += p;
        magnitude += std::abs(p);
      }
      double bound = static_cast<double>(x.cols() + 1) * eps * magnitude;
      if (bias.size() > 0) {
        exact += bias(0, j);
        bound += eps * (std::abs(exact) + magnitude);
      }
      const double got = y(i, j);
      if (!(std::abs(got - exact) <= bound))
        return what + ": (" + std::to_string(i) + ", " + std::to_string(j) + ") is " +
               std::to_string(got) + ", should be " + std::to_string(exact);
    }
  return "";
}

// w as panels: panel p, row k, column c holds w(k, p*48 + c), 0 past N; no
// more floats than that.
std::string check_panels(const gemm::PackedWeights& pw, const RowMatrix& w,
                         const std::string& what) {
  if (pw.rows != w.rows() || pw.cols != w.cols()) return what + ": wrong shape";
  if (static_cast<Eigen::Index>(pw.data.size()) != pw.panels() * pw.rows * kPanelCols)
    return what + ": " + std::to_string(pw.data.size()) + " floats";
  for (Eigen::Index p = 0; p < pw.panels(); ++p)
    for (Eigen::Index k = 0; k < w.rows(); ++k)
      for (Eigen::Index c = 0; c < kPanelCols; ++c) {
        const Eigen::Index col = p * kPanelCols + c;
        const float want = col < w.cols() ? w(k, col) : 0.0f;
        if (std::bit_cast<std::uint32_t>(pw.panel(p)[k * kPanelCols + c]) !=
            std::bit_cast<std::uint32_t>(want))
          return what + ": panel " + std::to_string(p) + " row " + std::to_string(k) + " column " +
                 std::to_string(c);
      }
  return "";
}

// x as tiles [first, last): tile t, k, row i holds x(t*8 + i, k + col0)
// (k < x.cols()), 0 past x's rows.
std::string check_tiles(const gemm::PackedRows& px, const RowMatrix& x, Eigen::Index col0,
                        Eigen::Index first, Eigen::Index last, const std::string& what) {
  for (Eigen::Index t = first; t < last; ++t)
    for (Eigen::Index k = 0; k < x.cols(); ++k)
      for (Eigen::Index i = 0; i < kTileRows; ++i) {
        const Eigen::Index row = t * kTileRows + i;
        const float want = row < x.rows() ? x(row, k) : 0.0f;
        const float got = px.tile(t)[(col0 + k) * kTileRows + i];
        if (std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(want))
          return what + ": tile " + std::to_string(t) + " k " + std::to_string(col0 + k) + " row " +
                 std::to_string(i);
      }
  return "";
}

// The (M, K, N) products to run: every pair of sizes for each two of the
// three dimensions, the third drawn from the list by the pair's position,
// so that each size meets each other one in every role.
struct Mkn {
  Eigen::Index m, k, n;
};
std::vector<Mkn> product_shapes() {
  std::vector<Mkn> shapes;
  const auto n = kSizes.size();
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b) {
      const Eigen::Index third = kSizes[(5 * a + 3 * b + 1) % n];
      shapes.push_back({kSizes[a], kSizes[b], third});  // every (m, k)
      shapes.push_back({kSizes[a], third, kSizes[b]});  // every (m, n)
      shapes.push_back({third, kSizes[a], kSizes[b]});  // every (k, n)
    }
  return shapes;
}

// pack_weights (from a pointer with offset and stride, or an Eigen block),
// pack_rows and multiply_panel into a window of a larger buffer: every
// packed float, every product element, nothing outside.
TEST(GemmSweep, ProjectionsAcrossTilePanelAndChunkEdges) {
  std::uint64_t seed = 1;
  for (const Mkn& s : product_shapes()) {
    const Eigen::Index M = s.m, K = s.k, N = s.n;
    const std::string what = "x " + std::to_string(M) + " x " + std::to_string(K) + " . w " +
                             std::to_string(K) + " x " + std::to_string(N);
    const RowMatrix x = random_matrix(M, K, seed++);
    const RowMatrix w = random_matrix(K, N, seed++);
    const bool with_bias = seed % 3 != 0;
    const RowMatrix bias = with_bias ? random_matrix(1, N, seed++) : RowMatrix();
    const Eigen::Index offset = static_cast<Eigen::Index>(seed % 2), pad = seed % 4 == 1 ? 0 : 5;

    Window source(K, N, N + pad, offset);
    source.fill(w);
    const gemm::PackedWeights pw = seed % 5 == 0
                                       ? gemm::pack_weights(source.map())
                                       : gemm::pack_weights(source.data(), K, N, source.ld());
    ASSERT_EQ(check_panels(pw, w, what), "");
    gemm::PackedRows px;
    gemm::pack_rows(x, px);
    ASSERT_EQ(px.rows, M);
    ASSERT_EQ(static_cast<Eigen::Index>(px.data.size()), px.tiles() * K * kTileRows) << what;
    ASSERT_EQ(check_tiles(px, x, 0, 0, px.tiles(), what), "");
    ASSERT_EQ(px.max_abs, x.cwiseAbs().maxCoeff()) << what;

    Window y(M, N, N + (seed % 2 ? 3 : 0), 1 - offset);
    auto ym = y.map();
    for (Eigen::Index p = 0; p < pw.panels(); ++p)
      gemm::multiply_panel(px, pw.panel(p), p, bias, ym);
    ASSERT_EQ(y.damage(), "") << what;
    ASSERT_EQ(check_product(ym, x, w, bias, what), "");
  }
}

// BF16 weights (the family models' files): pack_weights_bf16 from a strided
// window of bits, widen_panel into a guarded window, and Linear::from_bf16
// against Linear::from on the widened floats, for M = 1..17 (one tile, two,
// and one row past), N around multiples of 48 and of the vector widths, odd
// K: the same packed floats and the same products, bit for bit.
TEST(GemmSweep, Bf16PanelsAndProjectionsAcrossTileAndPanelEdges) {
  const Eigen::Index widths[] = {1, 7, 8, 15, 16, 17, 47, 48, 49, 95, 96, 97};
  const Eigen::Index depths[] = {1, 3, 17, 65};
  std::uint64_t seed = 5000;
  // widen_bf16 at every length across its vector edges, guarded.
  for (Eigen::Index n = 0; n <= 40; ++n) {
    const RowMatrix v = random_matrix(1, std::max<Eigen::Index>(n, 1), seed++);
    std::vector<std::uint16_t> bits(static_cast<std::size_t>(n) + 1);
    for (Eigen::Index i = 0; i < n; ++i)
      bits[static_cast<std::size_t>(i) + 1] = gemm::float_to_bf16_bits(v(0, i));
    Window out(1, std::max<Eigen::Index>(n, 1), std::max<Eigen::Index>(n, 1), n % 3);
    gemm::widen_bf16(bits.data() + 1, n, out.data());
    if (n > 0) {
      ASSERT_EQ(out.damage(), "") << "widen_bf16 of " << n;
    }
    for (Eigen::Index i = 0; i < n; ++i)
      ASSERT_EQ(std::bit_cast<std::uint32_t>(out.at(0, i)),
                std::uint32_t{bits[static_cast<std::size_t>(i) + 1]} << 16)
          << "widen_bf16 of " << n << " at " << i;
  }
  for (Eigen::Index K : depths)
    for (Eigen::Index N : widths) {
      const std::string shape = "w " + std::to_string(K) + " x " + std::to_string(N);
      // w's bits in a window with a stride and an offset; `wide` the floats they stand for.
      const Eigen::Index ld = N + static_cast<Eigen::Index>(seed % 3), offset = seed % 2 ? 1 : 0;
      std::vector<std::uint16_t> bits(static_cast<std::size_t>(offset + K * ld), 0xFFFF);
      RowMatrix wide(K, N);
      const RowMatrix w = random_matrix(K, N, seed++);
      for (Eigen::Index k = 0; k < K; ++k)
        for (Eigen::Index j = 0; j < N; ++j) {
          const std::uint16_t b = gemm::float_to_bf16_bits(w(k, j));
          bits[static_cast<std::size_t>(offset + k * ld + j)] = b;
          wide(k, j) = gemm::bf16_to_float(b);
        }
      const gemm::PackedWeights pw = gemm::pack_weights_bf16(bits.data() + offset, K, N, ld);
      ASSERT_TRUE(pw.is_bf16() && pw.data.empty()) << shape;
      ASSERT_EQ(static_cast<Eigen::Index>(pw.bf16.size()), pw.panels() * K * kPanelCols) << shape;
      const gemm::PackedWeights want = gemm::pack_weights(wide);
      for (Eigen::Index p = 0; p < pw.panels(); ++p) {
        Window panel(1, K * kPanelCols, K * kPanelCols, p % 2);
        gemm::widen_panel(pw, p, panel.data());
        ASSERT_EQ(panel.damage(), "") << shape << " panel " << p;
        for (Eigen::Index i = 0; i < K * kPanelCols; ++i)
          ASSERT_EQ(std::bit_cast<std::uint32_t>(panel.at(0, i)),
                    std::bit_cast<std::uint32_t>(want.panel(p)[i]))
              << shape << " panel " << p << " float " << i;
      }
      const RowMatrix bias = seed % 2 ? random_matrix(1, N, seed++) : RowMatrix();
      std::vector<std::uint16_t> packed_rows(static_cast<std::size_t>(K * N));  // no stride
      for (Eigen::Index k = 0; k < K; ++k)
        std::copy_n(bits.begin() + offset + k * ld, N, packed_rows.begin() + k * N);
      const detail::Linear mine = detail::Linear::from_bf16(packed_rows.data(), K, N, bias);
      const detail::Linear widened = detail::Linear::from(wide.data(), K, N, bias);
      ASSERT_EQ(mine.max_abs, widened.max_abs) << shape;
      for (Eigen::Index M = 1; M <= 2 * kTileRows + 1; ++M) {
        const RowMatrix x = random_matrix(M, K, seed++);
        RowMatrix a, b;
        mine.apply(x, a);
        widened.apply(x, b);
        ASSERT_EQ(a.rows(), M);
        for (Eigen::Index i = 0; i < a.size(); ++i)
          ASSERT_EQ(std::bit_cast<std::uint32_t>(a.data()[i]),
                    std::bit_cast<std::uint32_t>(b.data()[i]))
              << "x " << M << " x " << K << " . " << shape << " at " << i;
      }
    }
}

// The bfloat16 paths that widen in registers, straight into guarded
// windows: multiply_panel_bf16 for 1..9 rows (one tile and past it) over
// every panel of w, with and without a bias, equal bit for bit to
// multiply_panel on widen_panel's floats; bf16_row_dots for m and n across
// its 4 x 4 blocks and d across the vector width and its tail, each row's
// results the same bits whatever m, and close to a double sum.
TEST(GemmSweep, Bf16InRegisterPathsAcrossRowPanelAndLaneEdges) {
  std::uint64_t seed = 9000;
  auto bf16_of = [](const RowMatrix& m) {
    std::vector<std::uint16_t> bits(static_cast<std::size_t>(m.size()));
    for (Eigen::Index i = 0; i < m.size(); ++i)
      bits[static_cast<std::size_t>(i)] = gemm::float_to_bf16_bits(m.data()[i]);
    return bits;
  };
  for (Eigen::Index K : {1, 3, 16, 17, 65})
    for (Eigen::Index N : {1, 16, 47, 48, 49, 97}) {
      const std::vector<std::uint16_t> bits = bf16_of(random_matrix(K, N, seed++));
      const gemm::PackedWeights pw = gemm::pack_weights_bf16(bits.data(), K, N);
      for (Eigen::Index M = 1; M <= kTileRows + 1; ++M) {
        const RowMatrix x = random_matrix(M, K, seed++);
        const RowMatrix bias = M % 2 ? random_matrix(1, N, seed++) : RowMatrix();
        gemm::PackedRows xt;
        gemm::pack_rows(x, xt);
        const Eigen::Index ld = N + M % 3;
        Window got(M, N, ld, M % 2), want(M, N, ld, 0);
        std::vector<float> wide(static_cast<std::size_t>(K * kPanelCols));
        for (Eigen::Index p = 0; p < pw.panels(); ++p) {
          gemm::multiply_panel_bf16(xt, pw.panel_bf16(p), p, bias, got.map());
          gemm::widen_panel(pw, p, wide.data());
          gemm::multiply_panel(xt, wide.data(), p, bias, want.map(), false);
        }
        const std::string what = "x " + std::to_string(M) + " x " + std::to_string(K) + " . w " +
                                 std::to_string(K) + " x " + std::to_string(N);
        ASSERT_EQ(got.damage(), "") << what;
        for (Eigen::Index i = 0; i < M; ++i)
          for (Eigen::Index j = 0; j < N; ++j)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(got.at(i, j)),
                      std::bit_cast<std::uint32_t>(want.at(i, j)))
                << what << " at " << i << ", " << j;
      }
    }
  for (Eigen::Index d : {1, 7, 8, 15, 16, 17, 33, 64})
    for (Eigen::Index n : {1, 3, 4, 5, 9}) {
      const RowMatrix h = random_matrix(n, d, seed++);
      const std::vector<std::uint16_t> bits = bf16_of(h);
      const RowMatrix x9 = random_matrix(9, d, seed++);
      std::vector<float> first_rows;  // row 0's results with m = 1, for every m after
      for (Eigen::Index m = 1; m <= 9; ++m) {
        const Eigen::Index ldx = d + m % 2;
        Window x(m, d, ldx, 0);
        x.fill(x9.topRows(m));
        Window out(m, n, n + m % 3, m % 2);
        gemm::bf16_row_dots(x.data(), m, ldx, bits.data(), n, d, out.data(), out.ld());
        const std::string what =
            "m " + std::to_string(m) + " n " + std::to_string(n) + " d " + std::to_string(d);
        ASSERT_EQ(out.damage(), "") << what;
        for (Eigen::Index i = 0; i < m; ++i)
          for (Eigen::Index j = 0; j < n; ++j) {
            double sum = 0.0, size = 0.0;
            for (Eigen::Index k = 0; k < d; ++k) {
              const double t = double(x9(i, k)) * double(gemm::bf16_to_float(bits[j * d + k]));
              sum += t;
              size += std::abs(t);
            }
            ASSERT_NEAR(out.at(i, j), sum, 1e-5 * std::max(size, 1.0)) << what << " at " << i;
          }
        if (m == 1)
          for (Eigen::Index j = 0; j < n; ++j) first_rows.push_back(out.at(0, j));
        // A row of h alone (n = 1) sums as it does in a block of four.
        for (Eigen::Index j = 0; j < n; ++j) {
          float alone = 0.0f;
          gemm::bf16_row_dots(x.data(), 1, ldx, bits.data() + j * d, 1, d, &alone, 1);
          ASSERT_EQ(std::bit_cast<std::uint32_t>(alone), std::bit_cast<std::uint32_t>(out.at(0, j)))
              << what << ": h row " << j << " alone";
        }
        for (Eigen::Index j = 0; j < n; ++j)
          ASSERT_EQ(std::bit_cast<std::uint32_t>(out.at(0, j)),
                    std::bit_cast<std::uint32_t>(first_rows[static_cast<std::size_t>(j)]))
              << what << ": row 0 changed with m";
      }
    }
}

// The heads' products: pack_tile of m <= 8 query rows (strided, offset),
// pack_transposed of the keys (an Eigen block of a larger buffer), and
// multiply_tile per key panel into a window; then the context's shape: a
// tile of weights over only K' <= K keys times V's panels.
TEST(GemmSweep, TileProductsAcrossEveryEdge) {
  std::uint64_t seed = 1000;
  std::vector<Eigen::Index> depths = {0};
  depths.insert(depths.end(), kSizes.begin(), kSizes.end());
  for (Eigen::Index m = 1; m <= kTileRows; ++m)
    for (Eigen::Index N : kSizes)
      for (Eigen::Index K : depths) {
        const std::string what = "tile of " + std::to_string(m) + " rows . " + std::to_string(N) +
                                 " keys over " + std::to_string(K);
        const Eigen::Index offset = static_cast<Eigen::Index>(seed % 2);
        const RowMatrix q = random_matrix(m, K, seed++);
        const RowMatrix keys = random_matrix(N, K, seed++);
        Window q_src(m, K, K + 2, offset);
        q_src.fill(q);
        const Eigen::Index tile_floats = std::max<Eigen::Index>(K, 1) * kTileRows;
        Window tile(1, tile_floats, tile_floats, 0);
        gemm::pack_tile(q_src.data(), q_src.ld(), m, K, tile.data());
        ASSERT_EQ(tile.damage(), "") << what << " (pack_tile)";
        for (Eigen::Index k = 0; k < K; ++k)
          for (Eigen::Index i = 0; i < kTileRows; ++i)
            ASSERT_EQ(tile.at(0, k * kTileRows + i), i < m ? q(i, k) : 0.0f)
                << what << ": tile k " << k << " row " << i;

        Window k_src(N, K, K + 1, 1 - offset);
        k_src.fill(keys);
        const gemm::PackedWeights keys_t = gemm::pack_transposed(k_src.map());
        ASSERT_EQ(check_panels(keys_t, keys.transpose(), what + " (pack_transposed)"), "");

        Window scores(m, N, N + 1 + static_cast<Eigen::Index>(seed % 9), offset);
        for (Eigen::Index p = 0; p < keys_t.panels(); ++p)
          gemm::multiply_tile(tile.data(), keys_t.panel(p), K, m,
                              std::min(kPanelCols, N - p * kPanelCols),
                              &scores.at(0, p * kPanelCols), scores.ld());
        ASSERT_EQ(scores.damage(), "") << what;
        ASSERT_EQ(check_product(scores.map(), q, keys.transpose(), RowMatrix(), what), "");

        // Context: weights (m x K') . V (K x N's first K' rows), K' < K the
        // causal stop at the tile's last visible key.
        const Eigen::Index Kc = K * 3 / 5;
        const RowMatrix weights = random_matrix(m, Kc, seed++);
        Window w_src(m, Kc, Kc + 3, offset);
        w_src.fill(weights);
        gemm::pack_tile(w_src.data(), w_src.ld(), m, Kc, tile.data());
        const RowMatrix values = random_matrix(K, N, seed++);
        const gemm::PackedWeights v_panels = gemm::pack_weights(values);
        Window context(m, N, N, 1 - offset);
        for (Eigen::Index p = 0; p < v_panels.panels(); ++p)
          gemm::multiply_tile(tile.data(), v_panels.panel(p), Kc, m,
                              std::min(kPanelCols, N - p * kPanelCols),
                              &context.at(0, p * kPanelCols), context.ld());
        ASSERT_EQ(context.damage(), "") << what << " (context)";
        ASSERT_EQ(check_product(context.map(), weights, values.topRows(Kc), RowMatrix(),
                                what + " (context)"),
                  "");
      }
}

// pack_columns in pieces, as the heads' contexts are packed and as threads
// share the tiles: column blocks of several widths, each over two tile
// ranges. Each call writes its tiles' columns and nothing else, returns the
// largest |value| of its rows, and the pieces add up to pack_rows.
TEST(GemmSweep, PackingColumnBlocksByTileRanges) {
  std::uint64_t seed = 5000;
  for (std::size_t a = 0; a < kSizes.size(); ++a)
    for (std::size_t b = 0; b < kSizes.size(); b += 2) {
      const Eigen::Index M = kSizes[a], K = kSizes[(a + b) % kSizes.size()];
      const std::string what = "x " + std::to_string(M) + " x " + std::to_string(K);
      const RowMatrix x = random_matrix(M, K, seed++);
      gemm::PackedRows whole, pieces;
      gemm::pack_rows(x, whole);
      gemm::size_rows(M, K, pieces);
      ASSERT_EQ(static_cast<Eigen::Index>(pieces.data.size()), pieces.tiles() * K * kTileRows);
      std::fill(pieces.data.begin(), pieces.data.end(), kSentinel);
      // Column cuts at 1/3 and 3/5 of K (a block of 8 or more columns goes
      // through the vector transpose, narrower ones value by value).
      const Eigen::Index cuts[] = {0, K / 3, K * 3 / 5, K};
      const Eigen::Index tiles = pieces.tiles(), split = (tiles + 1) / 2;
      for (int c = 0; c < 3; ++c) {
        const Eigen::Index col = cuts[c], width = cuts[c + 1] - col;
        if (width == 0) continue;
        const RowMatrix block = x.middleCols(col, width);
        for (const auto& [first, last] :
             {std::pair{Eigen::Index{0}, split}, std::pair{split, tiles}}) {
          const std::vector<float> before(pieces.data.begin(), pieces.data.end());
          const float largest =
              gemm::pack_columns(block, col, pieces, first, last == tiles ? -1 : last);
          const Eigen::Index r0 = first * kTileRows, r1 = std::min(M, last * kTileRows);
          const float want = r1 > r0 ? block.middleRows(r0, r1 - r0).cwiseAbs().maxCoeff() : 0.0f;
          ASSERT_EQ(largest, want)
              << what << " columns " << col << "+" << width << " tiles " << first << ".." << last;
          ASSERT_EQ(check_tiles(pieces, block, col, first, last, what), "");
          for (std::size_t k = 0; k < before.size(); ++k) {
            const auto t = static_cast<Eigen::Index>(k) / (K * kTileRows);
            const auto kk = static_cast<Eigen::Index>(k) % (K * kTileRows) / kTileRows;
            const bool target = t >= first && t < last && kk >= col && kk < col + width;
            if (target) continue;
            ASSERT_EQ(std::bit_cast<std::uint32_t>(pieces.data[k]),
                      std::bit_cast<std::uint32_t>(before[k]))
                << what << ": columns " << col << "+" << width << " tiles " << first << ".." << last
                << " wrote float " << k;
          }
        }
      }
      ASSERT_TRUE(std::equal(pieces.data.begin(), pieces.data.end(), whole.data.begin(),
                             [](float p, float q) {
                               return std::bit_cast<std::uint32_t>(p) ==
                                      std::bit_cast<std::uint32_t>(q);
                             }))
          << what;
    }
}

// ---------------------------------------------------------------------------
// Chapter 3's fast path (attention_fast.cpp) against the reference path.

struct FastCase {
  Variant variant;
  int tokens, d_in, d_out, heads;
  double dropout;
  bool training, bias;
  float magnitude;  // of the embeddings: 1e17 takes the kernel's overflow fallback (Eigen)
};

void expect_fast_path_agrees(const FastCase& c) {
  Config config;
  config.variant = c.variant;
  config.d_out = c.d_out;
  config.num_heads = c.heads;
  config.dropout = c.dropout;
  config.training = c.training;
  config.qkv_bias = c.bias;
  config.seed = static_cast<std::uint64_t>(c.tokens * 1000 + c.d_out);
  Inputs in;
  in.embeddings =
      random_matrix(c.tokens, c.d_in, static_cast<std::uint64_t>(c.tokens * 31 + c.d_in));
  // SelfAttention_v1's weights are torch.rand, in [0, 1) whatever d_in: its
  // queries and keys share a mean of half the inputs' sum, so the scores grow
  // with d_in and sqrt(d_out) (to ~40 at 65 x 65) and a weight's float32
  // rounding with them, past the 1e-6 expect_paths_agree allows. Inputs
  // scaled by 1 / sqrt(d_in) keep its scores near 1, as nn.Linear's
  // initialisation keeps the other variants'.
  const float spread =
      c.variant == Variant::SelfAttentionV1 ? 1.0f / std::sqrt(static_cast<float>(c.d_in)) : 1.0f;
  in.embeddings *= c.magnitude * spread;
  for (int t = 0; t < c.tokens; ++t) in.tokens.push_back("t" + std::to_string(t));
  ASSERT_EQ(validate(config, in), "");
  testing::expect_paths_agree(run_attention(config, in, EnginePath::Fast),
                              run_attention(config, in, EnginePath::Reference));
}

// Head widths of a multi-head case: a head count that divides d_out, by turns
// 1, 2 or 3 heads where they divide it.
int heads_for(Variant v, int d_out, std::size_t turn) {
  if (v == Variant::MultiheadWrapper) return 1 + static_cast<int>(turn % 3);
  if (v != Variant::Multihead) return 1;
  for (int h : {1 + static_cast<int>(turn % 3), 2, 1})
    if (d_out % h == 0) return h;
  return 1;
}

// Every T across tiles of 8, panels of 48 (the score columns) and the
// threads' row blocks (4 tiles and more; heads in parallel from 128), with
// d_out drawn in turn; every d_out across the same edges, T in turn. For
// every variant; dropout, training mode, qkv_bias and the magnitude of the
// embeddings change from case to case.
TEST(FastPathSweep, EveryVariantAcrossTheBlockEdges) {
  const std::vector<int> lengths = {1,  2,  7,  8,  9,  15, 16, 17, 31,  32,  33, 47,
                                    48, 49, 63, 64, 65, 95, 96, 97, 127, 128, 129};
  const std::vector<int> widths = {1, 7, 8, 9, 15, 16, 17, 24, 47, 48, 49, 64, 65, 96, 97};
  const std::vector<int> inputs = {1, 3, 8, 9, 33, 48, 65};
  std::size_t turn = 0;
  for (Variant v : kAllVariants) {
    auto run = [&](int T, int d_out) {
      ++turn;
      const FastCase c{v,
                       T,
                       inputs[turn % inputs.size()],
                       d_out,
                       heads_for(v, d_out, turn),
                       turn % 4 == 0 ? 0.0 : 0.1 * static_cast<double>(turn % 5),
                       turn % 3 != 0,
                       turn % 2 == 0,
                       turn % 7 == 3 ? 1e17f : 1.0f};
      SCOPED_TRACE(std::string(variant_id(v)) + " T=" + std::to_string(T) +
                   " d_in=" + std::to_string(c.d_in) + " d_out=" + std::to_string(d_out) +
                   " heads=" + std::to_string(c.heads));
      expect_fast_path_agrees(c);
    };
    for (std::size_t i = 0; i < lengths.size(); ++i)
      run(lengths[i], widths[(3 * i) % widths.size()]);
    for (std::size_t i = 0; i < widths.size(); ++i)
      run(lengths[(5 * i + 2) % lengths.size()], widths[i]);
    // The largest blocks together: heads in parallel, each splitting its tiles.
    run(129, 96);
    run(128, 97);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// ---------------------------------------------------------------------------
// Thumbnails (thumbnail.hpp) against the definition, done the plain way.

// Cells [b s, min((b + 1) s, n)) of block b, s = ceil(n / size) (1 for n <= size).
std::pair<int, int> block_of(int b, int n, int size) {
  const int s = n <= size ? 1 : (n + size - 1) / size;
  return {b * s, std::min((b + 1) * s, n)};
}

// Blocks of a dimension of n cells: ceil(n / s).
int blocks_for(int n, int size) {
  const int s = n <= size ? 1 : (n + size - 1) / size;
  return (n + s - 1) / s;
}

TEST(ThumbnailSweep, BlocksAndPoolingAroundTheSizeAndItsMultiples) {
  std::uint64_t seed = 7;
  for (int size : {1, 2, 3, 5, 8, 16, 64}) {
    std::set<int> ns = {0, 1, 2};
    for (int k = 1; k <= 3; ++k)
      for (int d = -1; d <= 1; ++d) ns.insert(k * size + d);
    ns.insert(7 * size + 3);
    const std::vector<int> dims(ns.begin(), ns.end());
    for (int n : dims) {
      if (n < 0) continue;
      const int blocks = blocks_for(n, size);
      ASSERT_LE(blocks, size);
      std::vector<int> hits(static_cast<std::size_t>(n), 0);
      for (int b = 0; b < blocks; ++b) {
        const CellRange r = thumbnail_block(b, n, size);
        const auto [begin, end] = block_of(b, n, size);
        ASSERT_EQ(r.begin, begin) << "block " << b << " of " << n << " in " << size;
        ASSERT_EQ(r.end, end) << "block " << b << " of " << n << " in " << size;
        ASSERT_GE(r.end - r.begin, 1);
        if (b + 1 < blocks) {
          ASSERT_EQ(r.end - r.begin, thumbnail_block_size(n, size));
        }
        for (int i = r.begin; i < r.end; ++i) ++hits[static_cast<std::size_t>(i)];
      }
      for (int i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<std::size_t>(i)], 1) << i;
      EXPECT_THROW(thumbnail_block(blocks, n, size), std::invalid_argument);
      EXPECT_THROW(thumbnail_block(-1, n, size), std::invalid_argument);
    }
    // Every pair of dimensions for the small sizes, three partners each for
    // the larger ones (whose matrices are bigger).
    for (std::size_t a = 0; a < dims.size(); ++a)
      for (std::size_t b = 0; b < dims.size(); ++b) {
        if (size > 8 && (b + dims.size() - a) % dims.size() > 2) continue;
        const int rows = dims[a], cols = dims[b];
        const RowMatrix w = random_matrix(rows, cols, seed++);
        const RowMatrix max = downsample_max(w, size), mean = downsample_mean(w, size);
        const int out_rows = blocks_for(rows, size), out_cols = blocks_for(cols, size);
        const std::string what =
            std::to_string(rows) + " x " + std::to_string(cols) + " in " + std::to_string(size);
        ASSERT_EQ(max.rows(), out_rows) << what;
        ASSERT_EQ(max.cols(), out_cols) << what;
        ASSERT_EQ(mean.rows(), out_rows) << what;
        ASSERT_EQ(mean.cols(), out_cols) << what;
        for (int r = 0; r < out_rows; ++r)
          for (int c = 0; c < out_cols; ++c) {
            const auto [r0, r1] = block_of(r, rows, size);
            const auto [c0, c1] = block_of(c, cols, size);
            float largest = -std::numeric_limits<float>::infinity();
            double sum = 0.0;
            for (int i = r0; i < r1; ++i)
              for (int j = c0; j < c1; ++j) {
                largest = std::max(largest, w(i, j));
                sum += w(i, j);
              }
            const double average = sum / ((r1 - r0) * (c1 - c0));
            ASSERT_EQ(max(r, c), largest) << what << " block (" << r << ", " << c << ")";
            ASSERT_NEAR(mean(r, c), average, 1e-6) << what << " block (" << r << ", " << c << ")";
          }
      }
  }
}

}  // namespace
}  // namespace attnscope::core
