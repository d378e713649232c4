// gpt2_reference.hpp: a GPT-2 forward pass in double precision, written
// from the model's weights with none of the engine's code (no kernel, no
// tiles, no cache), and a comparison of a ModelRun with it. Shared by the
// shape sweep (core/tests/test_shape_sweep.cpp) and the shape fuzzer
// (fuzz/fuzz_shapes.cpp), which need core/src on their include path.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "attnscope/base/stages.hpp"
#include "attnscope/model/gpt2_model.hpp"
#include "model/gpt2_internal.hpp"

namespace attnscope::core::testing {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Every position's numbers for one text. The model is causal: the run of
// the first t tokens is the top-left corner of these (rows < t), so one
// reference serves every shorter run and every append on the way.
struct ReferenceForward {
  std::vector<std::vector<MatrixD>> weights;  // [layer][head]: T x T, zero above the diagonal
  // [layer][head][i]: the largest sum of |terms| of row i's scores,
  // scale sum_c |q_ic k_jc| over its keys j <= i. A score's float32
  // rounding grows with it, and each weight's with that.
  std::vector<std::vector<Eigen::VectorXd>> score_terms;
  // [layer][i]: the largest score_terms of any head of layers <= layer in
  // rows <= i, which bounds the rounding attention can have put into row i
  // of block_output by then.
  std::vector<Eigen::VectorXd> spread;
  // [layer][i]: the largest |value| of the block's input, of its input plus
  // attention and of the MLP's output, in rows <= i: the terms row i of
  // block_output sums, whose float32 rounding it carries even where they
  // cancel to a small value.
  std::vector<Eigen::VectorXd> residual_terms;
  std::vector<MatrixD> block_outputs;  // [layer]: T x n_embd
  MatrixD logits;                      // T x vocab: row t predicts token t + 1
};

namespace reference_detail {

inline MatrixD to_double(const Eigen::Ref<const RowMatrix>& m) { return m.cast<double>(); }

inline MatrixD layer_norm(const MatrixD& x, const detail::Norm& n, double eps) {
  MatrixD y(x.rows(), x.cols());
  const auto d = static_cast<double>(x.cols());
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const double mean = x.row(i).sum() / d;
    const double var = (x.row(i).array() - mean).square().sum() / d;  // biased, as nn.LayerNorm
    const double inv = 1.0 / std::sqrt(var + eps);
    for (Eigen::Index j = 0; j < x.cols(); ++j)
      y(i, j) = (x(i, j) - mean) * inv * static_cast<double>(n.gain(0, j)) +
                static_cast<double>(n.shift(0, j));
  }
  return y;
}

// W of a projection as (in, out), read back from the panels the engine
// keeps it in where the kernel runs (gemm.hpp: panel p holds columns
// [48 p, 48 p + 48) of W, K rows of 48 floats), else from the matrix.
inline RowMatrix dense(const detail::Linear& l) {
  if (!gemm::available()) return l.weight;
  const gemm::PackedWeights& p = l.packed;
  RowMatrix w(p.rows, p.cols);
  for (Eigen::Index k = 0; k < p.rows; ++k)
    for (Eigen::Index j = 0; j < p.cols; ++j)
      w(k, j) = p.panel(j / gemm::kPanelCols)[k * gemm::kPanelCols + j % gemm::kPanelCols];
  return w;
}

inline MatrixD linear(const MatrixD& x, const detail::Linear& l) {
  MatrixD y = x * to_double(dense(l));
  y.rowwise() += to_double(l.bias).row(0);
  return y;
}

inline double activation(double x, Gpt2Activation a) {
  constexpr double kPi = 3.14159265358979323846;
  switch (a) {
    case Gpt2Activation::GeluNew:
    case Gpt2Activation::GeluPytorchTanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / kPi) * (x + 0.044715 * x * x * x)));
    case Gpt2Activation::Gelu:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Gpt2Activation::Relu:
      return x > 0.0 ? x : 0.0;
  }
  return x;
}

}  // namespace reference_detail

// The forward of `ids` through `model` (Hugging Face's GPT2LMHeadModel in
// eval mode): wte + wpe; per block LN1, c_attn, per head the causal softmax
// of Q K^T times the config's scale, times V; c_proj and the residual; LN2,
// the MLP with the config's activation and the residual; ln_f; the LM head
// (wte unless the model has its own).
inline ReferenceForward reference_forward(const Gpt2Model& model, const std::vector<int>& ids) {
  using namespace reference_detail;
  const Gpt2Model::Weights& w = model.weights();
  const Gpt2Config& c = w.config;
  const auto T = static_cast<Eigen::Index>(ids.size());
  const Eigen::Index d = c.n_embd, hd = c.head_dim();
  MatrixD x(T, d);
  for (Eigen::Index t = 0; t < T; ++t)
    x.row(t) = w.wte.map().row(ids[static_cast<std::size_t>(t)]).cast<double>() +
               w.wpe.map().row(t).cast<double>();
  ReferenceForward out;
  for (int l = 0; l < c.n_layer; ++l) {
    const detail::Block& b = w.blocks[static_cast<std::size_t>(l)];
    const MatrixD qkv = linear(layer_norm(x, b.ln_1, c.layer_norm_epsilon), b.attn);
    double scale = 1.0;
    if (c.scale_attn_weights) scale /= std::sqrt(static_cast<double>(hd));
    if (c.scale_attn_by_inverse_layer_idx) scale /= static_cast<double>(l + 1);
    MatrixD concat(T, d);
    out.weights.emplace_back();
    out.score_terms.emplace_back();
    for (int h = 0; h < c.n_head; ++h) {
      const MatrixD q = qkv.middleCols(h * hd, hd);
      const MatrixD k = qkv.middleCols(d + h * hd, hd);
      const MatrixD v = qkv.middleCols(2 * d + h * hd, hd);
      MatrixD weights = MatrixD::Zero(T, T);
      Eigen::VectorXd terms = Eigen::VectorXd::Zero(T);
      for (Eigen::Index i = 0; i < T; ++i) {
        double top = -INFINITY;
        for (Eigen::Index j = 0; j <= i; ++j) {
          weights(i, j) = q.row(i).dot(k.row(j)) * scale;
          top = std::max(top, weights(i, j));
          terms(i) = std::max(terms(i), q.row(i).cwiseAbs().dot(k.row(j).cwiseAbs()) * scale);
        }
        double sum = 0.0;
        for (Eigen::Index j = 0; j <= i; ++j) {
          weights(i, j) = std::exp(weights(i, j) - top);
          sum += weights(i, j);
        }
        for (Eigen::Index j = 0; j <= i; ++j) weights(i, j) /= sum;
      }
      concat.middleCols(h * hd, hd) = weights * v;
      out.weights.back().push_back(std::move(weights));
      out.score_terms.back().push_back(std::move(terms));
    }
    Eigen::VectorXd spread = l > 0 ? out.spread.back() : Eigen::VectorXd::Zero(T);
    for (const Eigen::VectorXd& terms : out.score_terms.back())
      for (Eigen::Index i = 0; i < T; ++i)
        spread(i) = std::max({spread(i), terms(i), i > 0 ? spread(i - 1) : 0.0});
    out.spread.push_back(std::move(spread));
    const MatrixD attn = x + linear(concat, b.proj);
    MatrixD hidden = linear(layer_norm(attn, b.ln_2, c.layer_norm_epsilon), b.fc);
    for (Eigen::Index i = 0; i < hidden.size(); ++i)
      hidden.data()[i] = activation(hidden.data()[i], c.activation_function);
    const MatrixD mlp = linear(hidden, b.fc_proj);
    Eigen::VectorXd terms(T);
    for (Eigen::Index i = 0; i < T; ++i)
      terms(i) = std::max({x.row(i).cwiseAbs().maxCoeff(), attn.row(i).cwiseAbs().maxCoeff(),
                           mlp.row(i).cwiseAbs().maxCoeff(), i > 0 ? terms(i - 1) : 0.0});
    out.residual_terms.push_back(std::move(terms));
    x = attn + mlp;
    out.block_outputs.push_back(x);
  }
  out.logits = layer_norm(x, w.ln_f, c.layer_norm_epsilon) * to_double(w.head().map()).transpose();
  return out;
}

// How far float32 may stray from the reference, as fractions of the
// magnitudes involved. A score's rounding error grows with its terms
// (ReferenceForward::score_terms, ~1e-7 of them), and moves every weight of
// its row by that fraction of itself; the context, the residuals after it
// and the logits inherit that. So row i of a head's weights may be off by
// `weights` x its largest weight x (1 + its score_terms), row i of
// block_output by `residual` x the layer's largest |value| x (1 + its
// spread), and the logits by `logits` x the largest |logit| x (1 + the
// last row's spread in the last layer). Over the shape sweep (AVX-512 and
// AVX2 kernels, and Eigen) the engine's rounding reached 0.18 of the
// weights' bound and 0.011 of block_output's and the logits'; among 1500
// random fuzz_shapes inputs a model one column wide cancelled a row to
// 1e-4 of the layer's scale, and another (one token, one column) summed
// terms 1,000 times its output: hence the largest |value| of the layer's
// outputs and of the terms they sum (residual_terms) as the scale. A weight taken from a
// neighbouring key or query, or a row shifted by one token, is off by hundreds of times more
// (TheToleranceSeparatesNeighbouringKeys checks that of the weights).
struct Tolerance {
  double weights = 5e-6;
  double residual = 5e-6;
  double logits = 2e-5;
};

// What row i of head (layer, h)'s weights may be off by (see Tolerance).
inline double weights_bound(const ReferenceForward& ref, int layer, int h, Eigen::Index i,
                            const Tolerance& tol = {}) {
  const auto l = static_cast<std::size_t>(layer), hs = static_cast<std::size_t>(h);
  return tol.weights * ref.weights[l][hs].row(i).head(i + 1).maxCoeff() *
         (1.0 + ref.score_terms[l][hs](i));
}

// Where `run` (its num_tokens() = t <= the reference's T) first disagrees
// with `ref`: every head's attention weights (exactly 0 above the diagonal),
// every layer's block_output, and the logits of the last position. Empty
// when it agrees everywhere.
inline std::string compare_with_reference(ModelRun& run, const ReferenceForward& ref,
                                          const Tolerance& tol = {}) {
  const Gpt2Config& c = run.model().config();
  const auto t = static_cast<Eigen::Index>(run.num_tokens());
  std::ostringstream what;
  what.precision(9);
  auto where = [&](const char* stage, int layer, int head, Eigen::Index i, Eigen::Index j,
                   double got, double want) {
    what << stage << " of layer " << layer;
    if (head >= 0) what << ", head " << head;
    what << " at (" << i << ", " << j << ") of a run of " << t << " tokens: " << got
         << ", the reference " << want;
    return what.str();
  };
  for (int l = 0; l < c.n_layer; ++l) {
    for (int h = 0; h < c.n_head; ++h) {
      const auto w = run.stage({l, h, stage_id::weights});
      if (!w || w->rows() != t || w->cols() != t)
        return "no " + std::to_string(t) + " x " + std::to_string(t) + " weights for layer " +
               std::to_string(l) + ", head " + std::to_string(h);
      const MatrixD& r = ref.weights[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)];
      for (Eigen::Index i = 0; i < t; ++i) {
        const double bound = weights_bound(ref, l, h, i, tol);
        for (Eigen::Index j = 0; j < t; ++j) {
          const double got = (*w)(i, j), want = j > i ? 0.0 : r(i, j);
          const bool ok = j > i ? got == 0.0 : std::abs(got - want) <= bound;
          if (!ok) return where("weights", l, h, i, j, got, want);
        }
      }
    }
    const auto x = run.stage({l, -1, stage_id::block_output});
    if (!x || x->rows() != t || x->cols() != c.n_embd)
      return "no block_output of " + std::to_string(t) + " rows for layer " + std::to_string(l);
    const MatrixD& r = ref.block_outputs[static_cast<std::size_t>(l)];
    const Eigen::VectorXd& spread = ref.spread[static_cast<std::size_t>(l)];
    // The run's rows of the layer: their largest |value| bounds the rounding
    // of a row that cancels to a small value (a model one column wide).
    const double largest = std::max(r.topRows(t).cwiseAbs().maxCoeff(),
                                    ref.residual_terms[static_cast<std::size_t>(l)](t - 1));
    for (Eigen::Index i = 0; i < t; ++i) {
      const double bound = tol.residual * largest * (1.0 + spread(i));
      for (Eigen::Index j = 0; j < x->cols(); ++j)
        if (!(std::abs((*x)(i, j) - r(i, j)) <= bound))
          return where("block_output", l, -1, i, j, (*x)(i, j), r(i, j));
    }
  }
  const RowMatrix& logits = run.logits();
  if (logits.rows() != 1 || logits.cols() != ref.logits.cols())
    return "the logits are " + std::to_string(logits.rows()) + " x " +
           std::to_string(logits.cols());
  const auto last = ref.logits.row(t - 1);
  const double bound = tol.logits * last.cwiseAbs().maxCoeff() * (1.0 + ref.spread.back()(t - 1));
  for (Eigen::Index j = 0; j < logits.cols(); ++j)
    if (!(std::abs(logits(0, j) - last(j)) <= bound))
      return where("logits", -1, -1, t - 1, j, logits(0, j), last(j));
  return "";
}

// random_gpt2 with its c_attn's Q and K columns scaled so that the scores
// spread by about 1 (normal(0, 1 / sqrt(n_embd)) instead of (0, 0.02)), as
// in a trained model. With the raw 0.02 the scores of these small widths
// are ~0.01 and every head's weights nearly uniform (1 / (i + 1) in row i),
// so a score read from the wrong key would move its weight by little more
// than the rounding the comparison must allow; with spread-out scores it
// moves it by a large fraction of itself.
inline std::shared_ptr<const Gpt2Model> sharp_random_gpt2(const Gpt2Config& c, std::uint64_t seed) {
  const auto plain = random_gpt2(c, seed);
  auto w = std::make_shared<Gpt2Model::Weights>(plain->weights());
  const auto gain = static_cast<float>(1.0 / (0.02 * std::sqrt(static_cast<double>(c.n_embd))));
  for (detail::Block& b : w->blocks) {
    RowMatrix attn = reference_detail::dense(b.attn);
    attn.leftCols(2 * c.n_embd) *= gain;
    b.attn = detail::Linear::from(attn.data(), attn.rows(), attn.cols(), b.attn.bias);
  }
  auto tokenizer =
      std::shared_ptr<const Gpt2Tokenizer>(&Gpt2Tokenizer::builtin(), [](const Gpt2Tokenizer*) {});
  return std::make_shared<const Gpt2Model>(std::move(w), "sharp random", ModelFormat::HuggingFace,
                                           std::move(tokenizer));
}

// n token ids below `vocab`, spread over it, from `seed`.
inline std::vector<int> sweep_ids(int n, int vocab, std::uint64_t seed) {
  std::vector<int> ids;
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    ids.push_back(static_cast<int>((s >> 33) % static_cast<std::uint64_t>(vocab)));
  }
  return ids;
}

}  // namespace attnscope::core::testing
