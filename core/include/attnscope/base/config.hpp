// config.hpp: what to run (variant and hyper-parameters) and on what (tokens
// and embeddings), plus the limits every front end enforces before running.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/base/matrix.hpp"

namespace attnscope::core {

// The book's attention classes, in the order chapter 3 introduces them.
enum class Variant {
  Simple,            // simplified self-attention, no trainable weights
  SelfAttentionV1,   // SelfAttention_v1: W = torch.rand(d_in, d_out)
  SelfAttentionV2,   // SelfAttention_v2: three nn.Linear
  Causal,            // CausalAttention: mask + dropout
  MultiheadWrapper,  // MultiHeadAttentionWrapper: stacked CausalAttention heads
  Multihead,         // MultiHeadAttention: split heads + out_proj
};

inline constexpr Variant kAllVariants[] = {
    Variant::Simple, Variant::SelfAttentionV1,  Variant::SelfAttentionV2,
    Variant::Causal, Variant::MultiheadWrapper, Variant::Multihead,
};

// The identifier used in configs and on the command line, e.g. "multihead".
std::string_view variant_id(Variant v);
// The class name the book uses, e.g. "MultiHeadAttention".
std::string_view variant_book_name(Variant v);
// Parses an identifier from variant_id(); nullopt when unknown.
std::optional<Variant> parse_variant(std::string_view id);

// True for the variants that own W_query/W_key/W_value.
bool has_weights(Variant v);
// True for the variants that mask future tokens and apply dropout.
bool is_causal(Variant v);
// True for the variants that take num_heads.
bool has_heads(Variant v);
// The head count after the learner switches variant `from` -> `to` with
// num_heads and d_out unchanged. Single-head variants hold 1 head, and a
// multi-head class with one head hides what it is for; the book runs both
// classes with 2 heads. So a switch from a variant without heads into one
// with heads turns 1 head into 2 (for MultiHeadAttention only when d_out is
// even: each head owns d_out / num_heads whole columns). Otherwise num_heads.
int heads_after_switch(Variant from, Variant to, int num_heads, int d_out);

// Hard limits, checked before anything is allocated.
inline constexpr int kMaxTokens = 4096;
inline constexpr int kMaxDim = 4096;
inline constexpr int kMaxHeads = 64;

// Hyper-parameters of one run; defaults are the config file's defaults.
struct Config {
  Variant variant = Variant::Simple;
  int d_out = 2;             // output width of each projection (per head for the wrapper)
  int num_heads = 1;         // wrapper: number of stacked heads; multihead: d_out / head_dim
  double dropout = 0.0;      // probability of zeroing an attention weight, in [0, 1]
  std::uint64_t seed = 123;  // torch.manual_seed(seed) before the module is built
  bool qkv_bias = false;     // nn.Linear(..., bias=qkv_bias) for v2 and later
  bool training = true;      // dropout is active only in training mode
};

// The sequence attention runs on.
struct Inputs {
  std::vector<std::string> tokens;  // T names, one per row of embeddings
  RowMatrix embeddings;             // (T, d_in) row t = token t's vector
};

// Returns an empty string when config + inputs can be run, otherwise one
// sentence that names the problem and how to fix it.
std::string validate(const Config& config, const Inputs& inputs);

}  // namespace attnscope::core
