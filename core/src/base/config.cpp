// config.cpp: variant names and the validation every front end runs first.
#include "attnscope/base/config.hpp"

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

bool has_weights(Variant v) { return v != Variant::Simple; }
bool is_causal(Variant v) {
  return v == Variant::Causal || v == Variant::MultiheadWrapper || v == Variant::Multihead;
}
bool has_heads(Variant v) { return v == Variant::MultiheadWrapper || v == Variant::Multihead; }

int heads_after_switch(Variant from, Variant to, int num_heads, int d_out) {
  if (has_heads(from) || !has_heads(to) || num_heads != 1) return num_heads;
  if (to == Variant::Multihead && d_out % 2 != 0) return num_heads;
  return 2;
}

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
  return msg.str();
}

}  // namespace attnscope::core
