// gpt2_layers.cpp: the per-row math the forward shares: the projections on
// the packed kernel, LayerNorm, the activations.
#include <algorithm>
#include <cmath>
#include <limits>
#include <unsupported/Eigen/SpecialFunctions>

#include "kernels/cpu_share.hpp"
#include "model/gpt2_internal.hpp"

#if defined(ATTNSCOPE_HAVE_OPENMP)
#include <omp.h>
#endif

namespace attnscope::core {

namespace detail {

Linear Linear::from(const float* w, Eigen::Index in, Eigen::Index out, RowMatrix bias) {
  Linear l;
  l.in = in;
  l.out = out;
  l.bias = bias.size() ? std::move(bias) : RowMatrix::Zero(1, out);
  const Eigen::Map<const RowMatrix> m(w, in, out);
  l.max_abs = in > 0 && out > 0 ? m.cwiseAbs().maxCoeff() : 0.0f;
  if (!std::isfinite(l.max_abs)) l.max_abs = std::numeric_limits<float>::infinity();
  if (gemm::available())
    l.packed = gemm::pack_weights(w, in, out);
  else
    l.weight = m;
  return l;
}

Linear Linear::from_bf16(const std::uint16_t* w, Eigen::Index in, Eigen::Index out,
                         RowMatrix bias) {
  if (!gemm::available()) {  // Eigen multiplies floats: widen once
    RowMatrix widened(in, out);
    gemm::widen_bf16(w, in * out, widened.data());
    return from(widened.data(), in, out, std::move(bias));
  }
  Linear l;
  l.in = in;
  l.out = out;
  l.bias = bias.size() ? std::move(bias) : RowMatrix::Zero(1, out);
  l.packed = gemm::pack_weights_bf16(w, in, out);
  // max |W| over the bits: the largest magnitude (sign cleared), inf for a NaN or an infinity.
  std::uint16_t top = 0;
  for (Eigen::Index i = 0; i < in * out; ++i)
    top = std::max(top, static_cast<std::uint16_t>(w[i] & 0x7fffu));
  l.max_abs = top >= 0x7f80 ? std::numeric_limits<float>::infinity() : gemm::bf16_to_float(top);
  return l;
}

std::size_t Linear::bytes() const {
  return packed.bytes() + static_cast<std::size_t>(weight.size() + bias.size()) * sizeof(float);
}

void Linear::multiply_panel(const gemm::PackedRows& xt, Eigen::Index p, Eigen::Ref<RowMatrix> y,
                            bool fetch_next) const {
  if (!packed.is_bf16()) {
    gemm::multiply_panel(xt, packed.panel(p), p, bias, y, fetch_next);
    return;
  }
  if (xt.tiles() == 1) {  // an edit's rows: each panel row widened in registers
    gemm::multiply_panel_bf16(xt, packed.panel_bf16(p), p, bias, y);
    return;
  }
  thread_local gemm::Buffer<float> wide;  // one panel of floats, in L2 while its tiles run
  wide.resize(static_cast<std::size_t>(packed.rows * gemm::kPanelCols));
  gemm::widen_panel(packed, p, wide.data());
  gemm::multiply_panel(xt, wide.data(), p, bias, y, false);  // no next panel beside this one
}

namespace {

// W back from its panels, for the rare x whose products could overflow in the kernel.
RowMatrix unpack(const gemm::PackedWeights& p) {
  RowMatrix w(p.rows, p.cols);
  gemm::Buffer<float> wide;
  if (p.is_bf16()) wide.resize(static_cast<std::size_t>(p.rows * gemm::kPanelCols));
  for (Eigen::Index q = 0; q < p.panels(); ++q) {
    const Eigen::Index col = q * gemm::kPanelCols;
    const Eigen::Index n = std::min(gemm::kPanelCols, p.cols - col);
    const float* panel = p.panel(q);
    if (p.is_bf16()) {
      gemm::widen_panel(p, q, wide.data());
      panel = wide.data();
    }
    for (Eigen::Index k = 0; k < p.rows; ++k)
      std::copy_n(panel + k * gemm::kPanelCols, n, w.data() + k * p.cols + col);
  }
  return w;
}

}  // namespace

void Linear::apply(const RowMatrix& x, RowMatrix& y) const {
  y.resize(x.rows(), out);
  apply_into(x, y);
}

bool Linear::apply_one_tile(const RowMatrix& x, gemm::PackedRows& xt,
                            Eigen::Ref<RowMatrix> y) const {
  // At most 8 rows multiply every weight once: bound by reading the
  // weights, not by FMAs. The tile is packed here (768 floats cost less
  // than a barrier); then each thread streams its own contiguous range of
  // panels, fetching ahead only within it, and helps with the others' when
  // done (RangeShare), with no barrier between. Runs of panels handed out
  // after a parallel packing (the path for more rows) read GPT-2 124M's
  // blocks for one row 10-15 % slower, in interleaved runs.
  xt.max_abs = gemm::pack_columns(x, 0, xt);
  if (!gemm::sums_stay_finite(xt.max_abs, max_abs, in)) return false;
  const auto panels = static_cast<int>((y.cols() + gemm::kPanelCols - 1) / gemm::kPanelCols);
  const int team = panels > 1 && in * out >= (1 << 18) ? team_size() : 1;
  RangeShare share(panels, team);
#pragma omp parallel num_threads(team)
  share.run([&](int p, bool next_is_own) { multiply_panel(xt, p, y, next_is_own); });
  return true;
}

void Linear::apply_into(const RowMatrix& x, Eigen::Ref<RowMatrix> y) const {
  if (x.rows() == 0) return;
  if (gemm::available()) {
    thread_local gemm::PackedRows tiles;
    gemm::PackedRows& xt = tiles;
    gemm::size_rows(x.rows(), x.cols(), xt);
    // The panels y's columns need (all of them but where y is narrower).
    const auto panels = static_cast<int>((y.cols() + gemm::kPanelCols - 1) / gemm::kPanelCols);
    const auto row_tiles = static_cast<int>(xt.tiles());
    if (row_tiles == 1) {  // an append's row
      if (apply_one_tile(x, xt, y)) return;
    } else {
      float largest = 0.0f;
      bool done = false;
      // One team packs x (tiles shared between the threads), then multiplies
      // runs of consecutive panels: multiply_panel fetches a thread's next
      // panel while it works on this one. Runs of a few panels, handed to
      // whichever thread is free, so that a thread slowed by another program
      // on its core holds up the others by one run at most.
      const int run = std::max(1, panels / 8);
#pragma omp parallel if (panels > 1 && in * out >= (1 << 18))
      {
#pragma omp for schedule(dynamic, 4) reduction(max : largest)
        for (int t = 0; t < row_tiles; ++t)
          largest = std::max(largest, gemm::pack_columns(x, 0, xt, t, t + 1));
        if (gemm::sums_stay_finite(largest, max_abs, in)) {  // the same answer on every thread
#pragma omp for schedule(dynamic, run)
          for (int p = 0; p < panels; ++p) multiply_panel(xt, p, y);
#pragma omp single nowait
          done = true;
        }
      }
      xt.max_abs = largest;
      if (done) return;
    }
    y.noalias() = x * unpack(packed).leftCols(y.cols());
  } else {
    y.noalias() = x * weight.leftCols(y.cols());
  }
  y.rowwise() += bias.row(0).head(y.cols());
}

RowMatrix Norm::apply(const Eigen::Ref<const RowMatrix>& x, double eps) const {
  // Float sums in Eigen's vectorised reduction (a tree over 16 lanes, as
  // precise as PyTorch's float LayerNorm); rows in parallel.
  RowMatrix y(x.rows(), x.cols());
  const auto d = static_cast<float>(x.cols());
  const auto e = static_cast<float>(eps);
#pragma omp parallel for schedule(static) if (x.size() > 100000)
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const auto row = x.row(i).array();
    const float mean = row.sum() / d;
    const float var = (row - mean).square().sum() / d;
    const float inv = 1.0f / std::sqrt(var + e);
    y.row(i).array() = ((row - mean) * inv) * gain.row(0).array() + shift.row(0).array();
  }
  return y;
}

void activate(RowMatrix& x, Gpt2Activation a) {
  // Eigen's array functions are vectorised (its tanh a rational approximation
  // within a few ulp of std::tanh); rows in parallel, a block at a time.
  const Eigen::Index rows = x.rows();
  const float c = std::sqrt(2.0f / static_cast<float>(M_PI));
#pragma omp parallel for schedule(static) if (x.size() > 100000)
  for (Eigen::Index r = 0; r < rows; ++r) {
    auto v = x.row(r).array();
    switch (a) {
      case Gpt2Activation::GeluNew:
      case Gpt2Activation::GeluPytorchTanh:
        v = 0.5f * v * (1.0f + (c * (v + 0.044715f * v.cube())).tanh());
        break;
      case Gpt2Activation::Gelu:
        v = 0.5f * v * (1.0f + (v * static_cast<float>(M_SQRT1_2)).erf());
        break;
      case Gpt2Activation::Relu:
        v = v.max(0.0f);
        break;
    }
  }
}

}  // namespace detail

}  // namespace attnscope::core
