// modern.hpp: attention after chapter 3, as the book's bonus code builds it:
// grouped-query attention (multi-query as its one-group case), sliding-window
// attention, multi-head latent attention, rotary positions (RoPE), cross-
// attention, and the KV cache generating token by token. Each class is built
// as its PyTorch constructor builds it after torch.manual_seed(seed) (the
// order of the nn.Linear constructions decides every weight), and its forward
// pass keeps every stage. Float32 throughout, like the book's tensors.
//
// The classes and their constructor order (what draws the weights):
//   GroupedQuery   GroupedQueryAttention(d_in, d_out, dropout, num_heads,
//                  num_kv_groups, qkv_bias): W_key, W_value (d_in -> groups x
//                  head_dim), then W_query, then out_proj without bias.
//                  Query head h reads K/V head h / (num_heads / num_kv_groups)
//                  (repeat_interleave). 1 group is multi-query attention.
//   Multihead      chapter 3's MultiHeadAttention with the cache of
//                  gpt_with_kv_cache.py: W_query, W_key, W_value, out_proj
//                  with bias.
//   SlidingWindow  MultiHeadAttentionWithSWA(..., sliding_window_size): built
//                  as Multihead; query i sees keys i - W + 1 .. i.
//   Latent         MultiHeadLatentAttention(d_in, d_out, dropout, num_heads,
//                  qkv_bias, latent_dim): W_query, W_DKV (down to the
//                  latent), W_UK, W_UV (up), all with bias=qkv_bias, then
//                  out_proj with bias. Its cache holds the latent.
//   Cross          cross-attention (the book has no class for it; ours):
//                  queries from x, keys and values from a second sequence
//                  `memory`, no causal mask. Built in chapter 3's order,
//                  W_query (d_in, d_out), W_key and W_value (d_memory,
//                  d_out), out_proj with bias, so that it is
//                  MultiHeadAttention with the mask removed and K/V read from
//                  another sequence: with memory = x the weights and, without
//                  the mask, every stage equal MultiHeadAttention's for the
//                  same seed, which is how an encoder-decoder's
//                  cross-attention (nn.MultiheadAttention with kdim/vdim)
//                  relates to self-attention.
//
// RoPE (GroupedQuery, Multihead, SlidingWindow) follows llama3.py/qwen3.py:
// compute_rope_params(head_dim, theta, context_length) and apply_rope
// (rotate-half, pairs (i, i + head_dim/2)), applied to queries and to each
// K/V head's keys before the scores (and before the K/V heads are repeated);
// values are never rotated. With the cache, the new token is rotated at its
// absolute position (apply_rope's offset) before it enters the cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/attention/attention.hpp"
#include "attnscope/base/matrix.hpp"
#include "attnscope/base/rng.hpp"

namespace attnscope::core::modern {

enum class Kind { GroupedQuery, Multihead, SlidingWindow, Latent, Cross };

// The class name the book's code uses (ours for Cross), e.g. "GroupedQueryAttention".
const char* book_class_name(Kind kind);

// What to build and run; defaults are the book's six-token examples'.
struct Config {
  Kind kind = Kind::GroupedQuery;
  int d_out = 4;
  int num_heads = 2;
  int num_kv_groups = 1;          // GroupedQuery: K/V heads; divides num_heads
  std::optional<int> window;      // SlidingWindow: sliding_window_size; none = causal
  std::optional<int> latent_dim;  // Latent: none = the book's max(16, d_out / 8)
  double dropout = 0.0;           // nn.Dropout on the (heads, T, S) weights
  bool training = true;           // dropout applies only in training mode
  bool qkv_bias = false;          // bias of the Q/K/V (and latent) projections
  std::uint64_t seed = 123;       // torch.manual_seed(seed) before the constructor
  bool rope = false;              // rotate queries and keys (not Latent, not Cross)
  double rope_theta = 10000.0;    // compute_rope_params' theta_base
};

// Returns "" when the config can run on x (T, d_in) (and memory (S, d_memory)
// for Cross), otherwise one sentence naming the bad value and what would work.
std::string validate(const Config& config, const RowMatrix& x, const RowMatrix* memory = nullptr);

// The head size d_out / num_heads; the number of K/V heads (groups for
// GroupedQuery, num_heads otherwise); the latent width (the book's default
// when unset).
int head_dim(const Config& config);
int kv_heads(const Config& config);
int latent_width(const Config& config);

// Every parameter, as used: y = x . weight + bias (Projection, attention.hpp).
struct Parameters {
  Projection query;             // W_query (d_in, d_out)
  Projection key, value;        // W_key, W_value (d_in or d_memory, kv_heads x head_dim);
                                // empty for Latent
  Projection down;              // Latent: W_DKV (d_in, latent)
  Projection up_key, up_value;  // Latent: W_UK, W_UV (latent, d_out)
  Projection out;               // out_proj (d_out, d_out); GroupedQuery has no bias
};

// Draws the parameters from `gen` in the class constructor's order. d_memory
// is the memory's width for Cross (ignored otherwise).
Parameters init_parameters(const Config& config, int d_in, int d_memory, TorchGenerator& gen);

// compute_rope_params(head_dim, theta_base, context_length): float32 tables
// with cos/sin of position p times inv_freq, the half-width angles repeated
// (cat([a, a])). Precondition: head_dim even and > 0.
struct RopeTables {
  RowMatrix inv_freq;  // (1, head_dim / 2) 1 / theta^(2i / head_dim)
  RowMatrix cos, sin;  // (context_length, head_dim) row p = position p
};
RopeTables compute_rope_params(int head_dim, double theta_base, int context_length);

// apply_rope(x, cos, sin, offset): row r of x (rows, head_dim) is position
// offset + r: x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1].
// Precondition: the tables hold positions up to offset + rows - 1.
RowMatrix apply_rope(const RowMatrix& x, const RopeTables& tables, int offset = 0);

// RoPE's relative-position property: q_i . k_j after rotation depends only
// on i - j. Rotates q and k (both (T, head_dim)) at positions 0.. and again
// at shift.. (a negative shift counts as 0), and returns the largest
// |difference| between the two score matrices (zero in exact arithmetic;
// float32 rounding of the angles makes it grow with the shift).
float rope_shift_max_diff(const RowMatrix& q, const RowMatrix& k, double theta_base, int shift);

// One query head's stages. S = number of keys (T for self-attention).
struct Head {
  int kv_head = 0;            // the K/V head it reads
  RowMatrix queries;          // (T, hd) its slice of W_query's output
  RowMatrix queries_rotated;  // (T, hd) after RoPE; empty without RoPE
  RowMatrix scores;           // (T, S) q_i . k_j (rotated ones with RoPE)
  RowMatrix mask;             // (T, S) 1 = hidden (future, or outside the window);
                              // empty for Cross (nothing is masked)
  RowMatrix masked_scores;    // (T, S) scores with -inf where hidden; empty for Cross
  RowMatrix scaled_scores;    // (T, S) (masked) scores / sqrt(hd) (float-rounded)
  RowMatrix weights;          // (T, S) softmax over keys; rows sum to 1
  RowMatrix dropout_mask;     // (T, S) 0 or 1/(1-p); all ones when dropout is off
  RowMatrix dropped_weights;  // (T, S) weights * dropout_mask
  RowMatrix context;          // (T, hd) dropped_weights . values
};

// One K/V head (one group for GroupedQuery; one per query head otherwise).
struct KvHead {
  RowMatrix keys;                // (S, hd)
  RowMatrix keys_rotated;        // (S, hd) after RoPE; empty without RoPE
  RowMatrix values;              // (S, hd)
  std::vector<int> query_heads;  // the query heads that read it
};

// A forward pass, every stage kept.
struct Run {
  Config config;
  Parameters params;
  RowMatrix queries;  // (T, d_out) W_query(x), heads side by side
  RowMatrix keys;     // (S, kv_heads x hd) W_key(x) (Latent: W_UK(latent))
  RowMatrix values;   // (S, kv_heads x hd) W_value(x) (Latent: W_UV(latent))
  RowMatrix latent;   // Latent: (S, latent) W_DKV(x); empty otherwise
  RopeTables rope;    // tables for T positions; empty without RoPE
  std::vector<KvHead> kv;
  std::vector<Head> heads;
  RowMatrix concat;  // (T, d_out) head contexts side by side
  RowMatrix output;  // (T, d_out) out_proj(concat)
};

// torch.manual_seed(seed); module = Class(...); module.train() or .eval();
// module(x) (Cross: module(x, memory)). Precondition: validate(...) is "".
Run run(const Config& config, const RowMatrix& x, const RowMatrix& memory = RowMatrix());
// The same forward with given parameters; dropout draws come from `gen`.
Run run_with_parameters(const Config& config, const Parameters& params, const RowMatrix& x,
                        const RowMatrix& memory, TorchGenerator& gen);

// One step of generating token by token with the cache (module(x[t:t+1],
// use_cache=True) after steps 0..t-1), in eval mode (no dropout, as when
// generating).
struct CacheStep {
  int position = 0;                // t, the new token's position
  int first_key_position = 0;      // position of the first cached key (SWA trims the front)
  std::vector<RowMatrix> queries;  // per query head (1, hd), rotated with RoPE
  std::vector<RowMatrix> keys;     // per K/V head (S, hd) the cache as attended (rotated
                                   // with RoPE; Latent: the latent's up-projection)
  std::vector<RowMatrix> values;   // per K/V head (S, hd); the last row is the new token's
  RowMatrix latent;                // Latent: (S, latent) the cache itself; empty otherwise
  std::vector<RowMatrix> scores;   // per query head (1, S) q . k
  std::vector<RowMatrix> weights;  // per query head (1, S) softmax(scores / sqrt(hd))
  RowMatrix output;                // (1, d_out) out_proj of the new row
  std::size_t cache_bytes = 0;     // float32 bytes the module's cache holds after the step
  float max_abs_diff = 0.0f;       // largest |output - the full forward's row t|
};

// Returns "" when run_cached and cache_step(config, x, step) can run,
// otherwise one sentence: validate's, or that Cross has no cache (its keys
// and values come from the second sequence, projected once), or that step is
// outside 0 .. T-1.
std::string validate_cache(const Config& config, const RowMatrix& x, int step = 0);

// Every step t = 0 .. T-1 of generating with the cache from x (T, d_in), each
// checked against a full forward pass in eval mode (attention is causal, so
// row t of the full pass is what recomputing x[0..t] gives). Not for Cross.
// Keeps every step's cache, O(T^2) numbers: for long inputs use cache_step.
// Precondition: validate_cache(config, x) is "" (for Cross: no steps).
// Precondition: validate(...) is "".
std::vector<CacheStep> run_cached(const Config& config, const RowMatrix& x);

// Step t alone (0 <= t < T), for long inputs: run_cached keeps every step's
// cache, O(T^2) numbers. The cache is made at once from x's first t + 1 rows
// (the window's for SWA), as the steps before t leave it (equal up to float
// reassociation); then the new row attends to it, as in run_cached. With
// `check`, x[0 .. t] is also run in full for max_abs_diff (otherwise 0).
// Precondition: validate_cache(config, x, t) is "".
CacheStep cache_step(const Config& config, const RowMatrix& x, int t, bool check = true);

// What a module's use_cache keeps between steps.
struct KvCache {
  std::vector<RowMatrix> keys, values;  // per K/V head (S, hd), keys rotated with RoPE
  RowMatrix latent;                     // Latent: (S, latent)
};

// A module generating token by token: Class(...) built after
// torch.manual_seed(seed), in eval mode, with an empty cache; each step()
// feeds the next row, as module(x[t:t+1], use_cache=True) does. For timing
// one step at a given length (attnscope-cli bench --cache-step) and for
// callers that generate. Not for Cross. Precondition: validate(config, x)
// is "" for the rows it will be fed (at most max_tokens).
class CachedModule {
 public:
  CachedModule(const Config& config, int d_in, int max_tokens);
  // Row x_t (1, d_in) at the next position; max_abs_diff is left 0.
  CacheStep step(const RowMatrix& x_t);
  int position() const { return position_; }

 private:
  Config config_;
  Parameters params_;
  RopeTables rope_;
  KvCache cache_;
  int position_ = 0;
};

}  // namespace attnscope::core::modern

namespace attnscope::core {
// The run `config` describes in core::modern's terms (its class, sizes,
// options), for the classes after chapter 3 and multihead with RoPE.
modern::Config modern_config_of(const Config& config);
}  // namespace attnscope::core
