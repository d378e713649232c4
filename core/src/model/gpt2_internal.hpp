// gpt2_internal.hpp: the parameters of a GPT-2-family model as the engine
// holds them, and the math shared by the loader and the forward pass.
// Internal to attnscope_core.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/formats/checkpoint.hpp"
#include "attnscope/model/gpt2_model.hpp"
#include "kernels/gemm.hpp"

namespace attnscope::core {
struct TextLoss;  // attnscope/model/predictions.hpp
}  // namespace attnscope::core

namespace attnscope::core::detail {

// Throws ParseError "<where>: <what>" (the loader's and the locator's errors).
[[noreturn]] void fail(const std::filesystem::path& where, const std::string& what);

// y = x . W + b with W (in x out), the Conv1D convention. Where the kernel
// is compiled (gemm::available()) W is held only packed into its panels;
// otherwise as a matrix for Eigen.
struct Linear {
  Eigen::Index in = 0, out = 0;
  gemm::PackedWeights packed;  // when gemm::available()
  RowMatrix weight;            // (in, out) otherwise
  RowMatrix bias;              // (1, out); zeros when the layer has none
  float max_abs = 0.0f;        // of W, for gemm::sums_stay_finite

  // From a row-major (in, out) array, e.g. a mapped F32 tensor.
  static Linear from(const float* w, Eigen::Index in, Eigen::Index out, RowMatrix bias);
  // From a row-major (in, out) array of bfloat16 bits: held as bfloat16
  // panels (half the bytes), each widened to floats just before the kernel
  // multiplies it, so that y is what from() on the widened W gives, bit for
  // bit. Without the kernel, W is held widened.
  static Linear from_bf16(const std::uint16_t* w, Eigen::Index in, Eigen::Index out,
                          RowMatrix bias);
  // The bytes W and the bias take in memory.
  std::size_t bytes() const;
  // y (rows x out) = x . W + b; rows of x are tokens. Runs on every thread.
  void apply(const RowMatrix& x, RowMatrix& y) const;
  // The same into y, already x.rows() x out (rows of a taller matrix), or
  // x.rows() x n for y's first n < out columns only (the same numbers).
  void apply_into(const RowMatrix& x, Eigen::Ref<RowMatrix> y) const;

 private:
  // apply_into for x of one tile (at most 8 rows) on the kernel; false,
  // with y untouched, where a sum could overflow (gemm.hpp).
  bool apply_one_tile(const RowMatrix& x, gemm::PackedRows& xt, Eigen::Ref<RowMatrix> y) const;
  // y's columns of panel p (multiply_panel), widening a bfloat16 panel first.
  void multiply_panel(const gemm::PackedRows& xt, Eigen::Index p, Eigen::Ref<RowMatrix> y,
                      bool fetch_next = true) const;
};

// LayerNorm over each row: (x - mean) / sqrt(var + eps) * gain + shift,
// var the biased variance (nn.LayerNorm, and the book's LayerNorm).
struct Norm {
  RowMatrix gain, shift;  // (1, d)
  RowMatrix apply(const Eigen::Ref<const RowMatrix>& x, double eps) const;
};

struct Block {
  Norm ln_1;
  Linear attn;  // c_attn: d -> 3d, [Q | K | V] side by side
  Linear proj;  // c_proj: d -> d
  Norm ln_2;
  Linear fc;       // mlp.c_fc: d -> n_inner
  Linear fc_proj;  // mlp.c_proj: n_inner -> d
};

// A (rows x cols) float matrix either in a mapped file or owned.
struct Table {
  std::shared_ptr<const TensorFile> file;  // keeps a mapping alive
  const float* mapped = nullptr;           // in the file, or null: owned
  RowMatrix owned;
  Eigen::Index rows = 0, cols = 0;

  const float* data() const { return mapped ? mapped : owned.data(); }
  bool empty() const { return rows == 0; }
  Eigen::Map<const RowMatrix> map() const { return {data(), rows, cols}; }
};

// A token id as text for people: its printable bytes, or "<id>" for an id the
// model has but its tokenizer lacks (a vocabulary padded past the tokenizer's).
std::string token_text(const Gpt2Tokenizer& tok, int id);

// The MLP's activation, in place.
void activate(RowMatrix& x, Gpt2Activation a);

// The loss of the text (predictions.cpp), shared by GPT-2's and the family
// models': log Σ exp(row) in double (a position's loss is that minus the
// target's logit), and loss.mean and loss.perplexity from loss.per_token
// (none when it is empty).
double log_sum_exp(const float* row, Eigen::Index n);
void finish_loss(TextLoss& loss);

}  // namespace attnscope::core::detail

namespace attnscope::core {

struct Gpt2Model::Weights {
  Gpt2Config config;
  detail::Table wte;      // (vocab, d) token embeddings
  detail::Table wpe;      // (n_positions, d) position embeddings
  detail::Table lm_head;  // (vocab, d); empty when tied to wte
  std::vector<detail::Block> blocks;
  detail::Norm ln_f;

  const detail::Table& head() const { return lm_head.empty() ? wte : lm_head; }
};

}  // namespace attnscope::core
