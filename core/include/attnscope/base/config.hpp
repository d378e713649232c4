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
  // After chapter 3: the book's bonus classes (attention/modern.hpp) and ours.
  GroupedQuery,   // GroupedQueryAttention: query heads share num_kv_groups K/V heads
  SlidingWindow,  // MultiHeadAttentionWithSWA: causal within a window of keys
  Latent,         // MultiHeadLatentAttention: K and V up-projected from a latent
  Cross,          // cross-attention: K and V from a second sequence, no mask
};

inline constexpr Variant kChapter3Variants[] = {
    Variant::Simple, Variant::SelfAttentionV1,  Variant::SelfAttentionV2,
    Variant::Causal, Variant::MultiheadWrapper, Variant::Multihead,
};
inline constexpr Variant kAllVariants[] = {
    Variant::Simple,       Variant::SelfAttentionV1,  Variant::SelfAttentionV2,
    Variant::Causal,       Variant::MultiheadWrapper, Variant::Multihead,
    Variant::GroupedQuery, Variant::SlidingWindow,    Variant::Latent,
    Variant::Cross,
};

// The identifier used in configs and on the command line, e.g. "multihead".
std::string_view variant_id(Variant v);
// The class name the book uses, e.g. "MultiHeadAttention".
std::string_view variant_book_name(Variant v);
// Parses an identifier from variant_id(); nullopt when unknown.
std::optional<Variant> parse_variant(std::string_view id);

// True for the six classes of chapter 3 (false for the bonus classes after it).
bool is_chapter3(Variant v);
// True for the classes after chapter 3 (GroupedQuery, SlidingWindow, Latent,
// Cross), which core::modern computes.
bool is_modern(Variant v);
// True for the variants that own W_query/W_key/W_value.
bool has_weights(Variant v);
// True for the variants that mask future tokens (and apply dropout).
bool is_causal(Variant v);
// True for the variants with nn.Dropout on the weights: the causal ones and Cross.
bool has_dropout(Variant v);
// True for the variants RoPE may rotate: MultiHeadAttention, grouped-query and
// sliding-window (not latent attention, not cross-attention, not the
// single-head or stacked classes).
bool takes_rope(Variant v);
// True for the variants that take num_heads.
bool has_heads(Variant v);
// True for the variants that cut one projection into heads (MultiHeadAttention
// and the classes after chapter 3): d_out must divide by num_heads.
bool split_heads(Variant v);
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
  // After chapter 3 (each read only by the variants it names):
  int num_kv_groups = 1;          // GroupedQuery: K/V heads; must divide num_heads
  std::optional<int> window;      // SlidingWindow: keys each query sees (itself included);
                                  // unset = plain causal
  std::optional<int> latent_dim;  // Latent: the latent's width; unset = the book's
                                  // max(16, d_out / 8)
  bool rope = false;              // rotate queries and keys (Multihead, GroupedQuery,
                                  // SlidingWindow)
  double rope_theta = 10000.0;    // compute_rope_params' theta_base
};

// The default sliding window and latent width the app's sliders start from.
inline constexpr int kDefaultWindow = 3;
// The book's default latent width for d_out: max(16, d_out / 8).
int book_latent_dim(int d_out);

// The sequence attention runs on.
struct Inputs {
  std::vector<std::string> tokens;  // T names, one per row of embeddings
  RowMatrix embeddings;             // (T, d_in) row t = token t's vector
  // Cross-attention's second sequence, the one keys and values come from
  // (an encoder's output); empty otherwise. Cross-attention without one
  // reads keys and values from the inputs themselves (nothing masked).
  std::vector<std::string> memory_tokens;  // S names, one per row of memory
  RowMatrix memory;                        // (S, d_memory) row s = token s's vector
};

// Returns an empty string when config + inputs can be run, otherwise one
// sentence that names the problem and how to fix it.
std::string validate(const Config& config, const Inputs& inputs);

}  // namespace attnscope::core
