// config.cpp: variant names and the validation every front end runs first.
#include "attnscope/base/config.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace attnscope::core {

namespace {
struct VariantNames {
  Variant variant;
  std::string_view id;
  std::string_view book_name;
};
constexpr VariantNames kNames[] = {
    {Variant::Simple, "simple", "simplified self-attention"},
    {Variant::SelfAttentionV1, "self_attention_v1", "SelfAttention_v1"},
    {Variant::SelfAttentionV2, "self_attention_v2", "SelfAttention_v2"},
    {Variant::Causal, "causal", "CausalAttention"},
    {Variant::MultiheadWrapper, "multihead_wrapper", "MultiHeadAttentionWrapper"},
    {Variant::Multihead, "multihead", "MultiHeadAttention"},
    {Variant::GroupedQuery, "gqa", "GroupedQueryAttention"},
    {Variant::SlidingWindow, "swa", "MultiHeadAttentionWithSWA"},
    {Variant::Latent, "mla", "MultiHeadLatentAttention"},
    {Variant::Cross, "cross", "CrossAttention"},
};
}  // namespace

std::string_view variant_id(Variant v) {
  for (const auto& n : kNames)
    if (n.variant == v) return n.id;
  return "?";
}

std::string_view variant_book_name(Variant v) {
  for (const auto& n : kNames)
    if (n.variant == v) return n.book_name;
  return "?";
}

std::optional<Variant> parse_variant(std::string_view id) {
  for (const auto& n : kNames)
    if (n.id == id) return n.variant;
  return std::nullopt;
}

bool is_modern(Variant v) {
  return v == Variant::GroupedQuery || v == Variant::SlidingWindow || v == Variant::Latent ||
         v == Variant::Cross;
}
bool is_chapter3(Variant v) { return !is_modern(v); }
bool has_weights(Variant v) { return v != Variant::Simple; }
bool is_causal(Variant v) {
  return v == Variant::Causal || v == Variant::MultiheadWrapper || v == Variant::Multihead ||
         v == Variant::GroupedQuery || v == Variant::SlidingWindow || v == Variant::Latent;
}
bool has_dropout(Variant v) { return is_causal(v) || v == Variant::Cross; }
bool has_heads(Variant v) { return v == Variant::MultiheadWrapper || split_heads(v); }
bool split_heads(Variant v) { return v == Variant::Multihead || is_modern(v); }
bool takes_rope(Variant v) {
  return v == Variant::Multihead || v == Variant::GroupedQuery || v == Variant::SlidingWindow;
}

int book_latent_dim(int d_out) { return std::max(16, d_out / 8); }

int heads_after_switch(Variant from, Variant to, int num_heads, int d_out) {
  if (has_heads(from) || !has_heads(to) || num_heads != 1) return num_heads;
  if (split_heads(to) && d_out % 2 != 0) return num_heads;
  return 2;
}

namespace {

// "1, 2, 3 or 6": the divisors of n, for a message that says what would work.
std::string divisors_of(int n) {
  std::ostringstream out;
  int shown = 0, count = 0;
  for (int k = 1; k <= n; ++k) count += n % k == 0;
  for (int k = 1; k <= n; ++k) {
    if (n % k != 0) continue;
    out << (shown == 0 ? "" : shown + 1 == count ? " or " : ", ") << k;
    ++shown;
  }
  return out.str();
}

// The checks of the options after chapter 3; "" when they hold.
std::string validate_modern(const Config& c, const Inputs& inputs) {
  std::ostringstream msg;
  const Variant v = c.variant;
  if (split_heads(v) && v != Variant::Multihead && c.d_out % c.num_heads != 0)
    msg << "d_out (" << c.d_out << ") must be divisible by num_heads (" << c.num_heads
        << "): try num_heads " << divisors_of(c.d_out);
  else if (v == Variant::GroupedQuery && (c.num_kv_groups < 1 || c.num_heads % c.num_kv_groups))
    msg << "num_kv_groups (" << c.num_kv_groups << ") must divide num_heads (" << c.num_heads
        << "): try " << divisors_of(c.num_heads) << " (1 is multi-query attention, " << c.num_heads
        << " is plain multi-head attention)";
  else if (v == Variant::SlidingWindow && c.window && (*c.window < 1 || *c.window > kMaxTokens))
    msg << "the sliding window (" << *c.window << ") must be between 1 and " << kMaxTokens
        << ": 1 lets each token see only itself, the number of tokens or more is plain causal "
           "attention";
  else if (v == Variant::Latent && c.latent_dim && (*c.latent_dim < 1 || *c.latent_dim > kMaxDim))
    msg << "latent_dim (" << *c.latent_dim << ") must be between 1 and " << kMaxDim
        << " (the book's default for d_out " << c.d_out << " is " << book_latent_dim(c.d_out)
        << ")";
  else if (c.rope && !takes_rope(v))
    msg << "RoPE rotates the queries and keys of multihead, gqa and swa, not of " << variant_id(v)
        << (v == Variant::Latent  ? " (the book's latent attention has none)"
            : v == Variant::Cross ? " (its queries and keys come from two sequences)"
                                  : "")
        << ": turn RoPE off or choose one of those";
  else if (c.rope && (c.d_out / c.num_heads) % 2 != 0)
    msg << "RoPE needs an even head_dim, but d_out " << c.d_out << " / num_heads " << c.num_heads
        << " = " << c.d_out / c.num_heads << ": choose d_out and num_heads whose quotient is even";
  else if (c.rope && !(std::isfinite(c.rope_theta) && c.rope_theta > 0.0))
    msg << "the RoPE theta (" << c.rope_theta << ") must be a positive number, e.g. 10000";
  else if (v != Variant::Cross || inputs.memory.rows() == 0)
    return "";  // without a second sequence, cross-attention reads the inputs themselves
  else if (inputs.memory.rows() > kMaxTokens)
    msg << "the second sequence has too many tokens (" << inputs.memory.rows() << "): at most "
        << kMaxTokens << " are supported";
  else if (inputs.memory.cols() < 1 || inputs.memory.cols() > kMaxDim)
    msg << "the second sequence's width (" << inputs.memory.cols() << ") must be between 1 and "
        << kMaxDim;
  else if (static_cast<Eigen::Index>(inputs.memory_tokens.size()) != inputs.memory.rows())
    msg << inputs.memory_tokens.size() << " token names were given for the " << inputs.memory.rows()
        << " rows of the second sequence: give exactly one token name per row";
  else if (!all_finite(inputs.memory))
    msg << "the second sequence contains NaN or infinity: every value must be a finite number";
  return msg.str();
}

}  // namespace

std::string validate(const Config& config, const Inputs& inputs) {
  std::ostringstream msg;
  const auto T = inputs.embeddings.rows();
  const auto d_in = inputs.embeddings.cols();
  if (T < 1)
    msg << "there are no tokens: give at least one row of embeddings";
  else if (T > kMaxTokens)
    msg << "too many tokens (" << T << "): at most " << kMaxTokens << " are supported";
  else if (d_in < 1)
    msg << "embeddings have no columns: give each token at least one number";
  else if (d_in > kMaxDim)
    msg << "d_in (" << d_in << ") is too large: at most " << kMaxDim << " is supported";
  else if (static_cast<Eigen::Index>(inputs.tokens.size()) != T)
    msg << inputs.tokens.size()
        << (inputs.tokens.size() == 1 ? " token name was" : " token names were") << " given for "
        << T << (T == 1 ? " row" : " rows")
        << " of embeddings: give exactly one token name per row";
  else if (!all_finite(inputs.embeddings))
    msg << "embeddings contain NaN or infinity: every value must be a finite number";
  else if (config.d_out < 1 || config.d_out > kMaxDim)
    msg << "d_out (" << config.d_out << ") must be between 1 and " << kMaxDim;
  else if (config.num_heads < 1 || config.num_heads > kMaxHeads)
    msg << "num_heads (" << config.num_heads << ") must be between 1 and " << kMaxHeads;
  else if (config.variant == Variant::Multihead && config.d_out % config.num_heads != 0)
    msg << "d_out (" << config.d_out << ") must be divisible by num_heads (" << config.num_heads
        << ")";
  else if (!(config.dropout >= 0.0 && config.dropout <= 1.0))
    msg << "dropout (" << config.dropout << ") must be between 0 and 1";
  else
    return validate_modern(config, inputs);
  return msg.str();
}

}  // namespace attnscope::core
