// family_internal.hpp: the parameters of a Llama/Mistral/Qwen/Gemma 3 model
// as the engine holds them, and the row math its forward shares. Internal to
// attnscope_core.
#pragma once

#include <vector>

#include "attnscope/model/family_model.hpp"
#include "model/gpt2_internal.hpp"

namespace attnscope::core::detail {

struct FamilyBlock {
  RowMatrix input_norm;      // (1, d) gain (Gemma: 1 + w)
  RowMatrix post_attn_norm;  // (1, d): the pre-MLP norm, Gemma's norm of the attention output
  RowMatrix pre_ff_norm;     // (1, d): Gemma only
  RowMatrix post_ff_norm;    // (1, d): Gemma only
  RowMatrix q_norm, k_norm;  // (1, head_dim) with qk norm
  Linear qkv;                // d -> [Q | K | V], (heads + 2 kv) * head_dim
  Linear o;                  // heads * head_dim -> d
  Linear gate_up;            // d -> [gate | up], 2 * intermediate
  Linear down;               // intermediate -> d
};

// RMSNorm of each row of x (float32): x * rsqrt(mean(x²) + eps) * gain.
RowMatrix rms_norm(const Eigen::Ref<const RowMatrix>& x, const RowMatrix& gain, double eps);
// The same over each head_dim-wide slice of every row (per-head q/k norm), in place.
void rms_norm_heads(RowMatrix& x, const RowMatrix& gain, double eps);

// RoPE's float32 tables for positions 0..T-1: cos and sin (T x hd), the
// angles repeated for the second half.
struct FamilyRope {
  RowMatrix inv_freq;  // (1, hd / 2)
  RowMatrix cos, sin;
};
FamilyRope family_rope(int head_dim, double theta, const Llama3RopeScaling* scaling, int T);
// Rotates every head_dim-wide slice of x's rows (row r at position first + r), in place.
void apply_family_rope(RowMatrix& x, const FamilyRope& rope, int head_dim, Eigen::Index first = 0);

// down's input: act(gate) * up of each row of [gate | up] (SiLU or GELU-tanh).
RowMatrix activate_gated(const RowMatrix& gate_up, FamilyActivation a);

}  // namespace attnscope::core::detail

namespace attnscope::core {

// The embedding table and the LM head are held as the file has them where
// that is BF16 (the *_bf16 bits, row-major, the RowMatrix empty), else in
// float32; the blocks' Linear layers likewise (Linear::from_bf16).
struct FamilyModel::Weights {
  FamilyConfig config;
  RowMatrix embed;                           // (vocab, d)
  RowMatrix lm_head;                         // (vocab, d); empty when tied to embed
  gemm::Buffer<std::uint16_t> embed_bf16;    // (vocab, d) when the file's table is BF16
  gemm::Buffer<std::uint16_t> lm_head_bf16;  // (vocab, d) when its untied head is BF16
  std::vector<detail::FamilyBlock> blocks;
  RowMatrix final_norm;  // (1, d) gain

  bool has_lm_head() const { return lm_head.size() || !lm_head_bf16.empty(); }
  const RowMatrix& head() const { return lm_head.size() ? lm_head : embed; }
  const gemm::Buffer<std::uint16_t>& head_bf16() const {
    return has_lm_head() ? lm_head_bf16 : embed_bf16;
  }
  // Row `id` of the embedding table as floats into out (d floats).
  void embed_row(int id, float* out) const;
  // x (rows, d) . headᵀ: the logits. Up to 8 rows of x by gemm's row dots
  // (the same bits for a row whatever the others, and for a BF16 head and
  // its widened F32 one); more by Eigen, a BF16 head widened a block of
  // rows at a time.
  RowMatrix logits(const RowMatrix& x) const;
  // The bytes every weight takes in memory.
  std::size_t bytes() const;
};

}  // namespace attnscope::core
