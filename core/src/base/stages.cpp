// stages.cpp: the stage catalogue's table and its lookups.
#include "attnscope/base/stages.hpp"

#include <stdexcept>
#include <string>

namespace attnscope::core {

namespace {

using enum StageScale;
using enum Axis;
using P = BlockPart;
namespace id = stage_id;

// id, the block part that makes it, symbol, short symbol, name, formula,
// scale, rows, cols, source, holds mask, made by models only, where a model
// makes it, its symbol there. The rows of the parts no recipe has yet
// (Rotary, QkNorm, KvGroups, Window, Latent, Cache, Cross) name the stages of
// the mechanisms after chapter 3: the bonus classes (attention/modern.hpp)
// make all but QkNorm's; no model makes them yet (model_scope None).
constexpr StageInfo kCatalogue[] = {
    {id::inputs, P::Attention, "X", "X", "X (inputs)", "X: one embedding per token", Signed, Token,
     Dim, ""},
    {id::memory, P::Cross, "M", "M", "M (the second sequence)",
     "one embedding per token of the sequence keys and values come from", Signed, Token, Dim, ""},
    {id::embeddings, P::Run, "X₀", "X₀", "embeddings", "wte[token id] + wpe[position]", Signed,
     Token, Dim, "", false, true, ModelScope::Run, "x"},
    {id::ln_1, P::Norm, "LN₁(x)", "ln_1", "ln_1 (the block's input, normalised)",
     "(x − mean) / √(var + ε) · γ + β, per token", Signed, Token, Dim, "", false, true,
     ModelScope::Layer, "ln_1"},
    {id::W_query, P::Projection, "W_query", "W_q", "W_query",
     "nn.Linear(d_in, d_out).weight, transposed", Parameter, InDim, OutDim, ""},
    {id::W_key, P::Projection, "W_key", "W_k", "W_key", "nn.Linear(d_in, d_out).weight, transposed",
     Parameter, InDim, OutDim, ""},
    {id::W_value, P::Projection, "W_value", "W_v", "W_value",
     "nn.Linear(d_in, d_out).weight, transposed", Parameter, InDim, OutDim, ""},
    {id::b_query, P::Projection, "b_query", "b_q", "b_query", "nn.Linear(d_in, d_out).bias",
     Parameter, Bias, OutDim, ""},
    {id::b_key, P::Projection, "b_key", "b_k", "b_key", "nn.Linear(d_in, d_out).bias", Parameter,
     Bias, OutDim, ""},
    {id::b_value, P::Projection, "b_value", "b_v", "b_value", "nn.Linear(d_in, d_out).bias",
     Parameter, Bias, OutDim, ""},
    {id::W_down, P::Latent, "W_DKV", "W_dkv", "W_DKV (down to the latent)",
     "nn.Linear(d_in, latent_dim).weight, transposed", Parameter, InDim, OutDim, ""},
    {id::b_down, P::Latent, "b_DKV", "b_dkv", "b_DKV", "nn.Linear(d_in, latent_dim).bias",
     Parameter, Bias, OutDim, ""},
    {id::W_up_key, P::Latent, "W_UK", "W_uk", "W_UK (latent up to keys)",
     "nn.Linear(latent_dim, d_out).weight, transposed", Parameter, InDim, OutDim, ""},
    {id::b_up_key, P::Latent, "b_UK", "b_uk", "b_UK", "nn.Linear(latent_dim, d_out).bias",
     Parameter, Bias, OutDim, ""},
    {id::W_up_value, P::Latent, "W_UV", "W_uv", "W_UV (latent up to values)",
     "nn.Linear(latent_dim, d_out).weight, transposed", Parameter, InDim, OutDim, ""},
    {id::b_up_value, P::Latent, "b_UV", "b_uv", "b_UV", "nn.Linear(latent_dim, d_out).bias",
     Parameter, Bias, OutDim, ""},
    {id::latent_kv, P::Latent, "C_kv", "C_kv", "C_kv (the K/V latent)",
     "X · W_down: keys and values squeezed into a few columns", Signed, Token, Dim, id::inputs},
    {id::queries, P::Projection, "Q", "Q", "Q (queries)", "X · W_query (+ b_query)", Signed, Token,
     Dim, id::inputs, false, false, ModelScope::Head, "Q_h"},
    {id::keys, P::Projection, "K", "K", "K (keys)", "X · W_key (+ b_key)", Signed, Token, Dim,
     id::inputs, false, false, ModelScope::Head, "K_h"},
    {id::values, P::Projection, "V", "V", "V (values)", "X · W_value (+ b_value)", Signed, Token,
     Dim, id::inputs, false, false, ModelScope::Head, "V_h"},
    {id::queries_normed, P::QkNorm, "norm(Q)", "nQ", "Q normalised (per head)",
     "RMSNorm of each head's query row", Signed, Token, Dim, id::queries},
    {id::keys_normed, P::QkNorm, "norm(K)", "nK", "K normalised (per head)",
     "RMSNorm of each head's key row", Signed, Token, Dim, id::keys},
    {id::queries_rotated, P::Rotary, "RoPE(Q)", "rQ", "Q rotated (RoPE)",
     "each pair of columns turned by position · θᵢ", Signed, Token, Dim, id::queries},
    {id::keys_rotated, P::Rotary, "RoPE(K)", "rK", "K rotated (RoPE)",
     "each pair of columns turned by position · θᵢ", Signed, Token, Dim, id::keys},
    {id::cached_keys, P::Cache, "K_cache", "K$", "cached keys",
     "the keys of every token so far, kept between steps", Signed, Token, Dim, id::keys},
    {id::cached_values, P::Cache, "V_cache", "V$", "cached values",
     "the values of every token so far, kept between steps", Signed, Token, Dim, id::values},
    {id::group_keys, P::KvGroups, "K_g", "K_g", "K/V head g: keys",
     "K/V head g's columns of X · W_key; query head h reads head h ÷ (heads ÷ groups)", Signed,
     Token, Dim, id::keys},
    {id::group_values, P::KvGroups, "V_g", "V_g", "K/V head g: values",
     "K/V head g's columns of X · W_value, shared by its query heads", Signed, Token, Dim,
     id::values},
    {id::scores, P::Attention, "ω", "ω", "ω (scores)", "Q · Kᵀ", Signed, Query, Key, id::queries,
     false, false, ModelScope::Head, "ω"},
    {id::mask, P::Mask, "mask", "mask", "mask (1 = future)",
     "1 where key j comes after query i (j > i)", Mask, Query, Key, "", true, false,
     ModelScope::Head, "mask"},
    {id::window_mask, P::Window, "window", "window", "window mask (1 = out of reach)",
     "1 where key j is in the future or more than the window back", Mask, Query, Key, "", true},
    {id::masked_scores, P::Mask, "masked", "masked", "masked scores",
     "ω with −∞ where the mask is 1", Signed, Query, Key, id::scores, true, false, ModelScope::Head,
     "ω_masked"},
    {id::scaled_scores, P::Scale, "scaled", "scaled", "scaled scores", "÷ √d_k", Signed, Query, Key,
     id::masked_scores, true, false, ModelScope::Head, "ω_scaled"},
    {id::weights, P::Attention, "weights", "weights", "attention weights", "softmax of each row",
     Weights, Query, Key, id::scaled_scores, false, false, ModelScope::Head, "weights"},
    {id::dropout_mask, P::Dropout, "dropout_mask", "keep mask", "dropout mask",
     "1/(1 − p) where kept, 0 where dropped", Mask, Query, Key, ""},
    {id::dropped_weights, P::Dropout, "dropped", "dropped", "weights after dropout",
     "weights ⊙ dropout mask", Weights, Query, Key, id::weights},
    {id::context, P::Attention, "Z", "Z", "Z (context vectors)", "weights · V", Signed, Token, Dim,
     id::dropped_weights, false, false, ModelScope::Head, "Z_h"},
    {id::concat, P::OutProj, "concat", "concat", "concat (heads side by side)", "[Z₀ | Z₁ | …]",
     Signed, Token, Dim, id::context, false, false, ModelScope::Layer, "concat"},
    {id::W_out, P::OutProj, "W_out", "W_o", "W_out (out_proj)", "out_proj.weight, transposed",
     Parameter, InDim, OutDim, ""},
    {id::b_out, P::OutProj, "b_out", "b_o", "b_out (out_proj bias)", "out_proj.bias", Parameter,
     Bias, OutDim, ""},
    {id::output, P::Heads, "output", "output", "output", "concat · W_out + b_out", Signed, Token,
     Dim, id::concat, false, false, ModelScope::Layer, "output"},
    {id::attn_output, P::Residual, "x + attn", "x+attn", "residual after attention", "x + output",
     Signed, Token, Dim, id::output, false, true, ModelScope::Layer, "attn_output"},
    {id::ln_2, P::Mlp, "LN₂(x)", "ln_2", "ln_2 (the residual after attention, normalised)",
     "(x − mean) / √(var + ε) · γ + β, per token", Signed, Token, Dim, id::attn_output, false, true,
     ModelScope::Layer, "ln_2"},
    {id::mlp_hidden, P::Mlp, "h", "fc", "MLP hidden", "LN₂(x) · W_fc + b_fc: 4 × d columns", Signed,
     Token, Dim, id::ln_2, false, true, ModelScope::Layer, "h"},
    {id::mlp_activation, P::Mlp, "GELU(h)", "gelu", "MLP hidden after the activation",
     "GELU of each value on its own", Signed, Token, Dim, id::mlp_hidden, false, true,
     ModelScope::Layer, "GELU(h)"},
    {id::mlp_output, P::Mlp, "mlp", "mlp", "MLP output",
     "GELU(h) · W_proj + b_proj: back to d columns", Signed, Token, Dim, id::mlp_activation, false,
     true, ModelScope::Layer, "mlp"},
    {id::block_output, P::Mlp, "block", "block", "block output", "x + attn + MLP(LN₂(x + attn))",
     Signed, Token, Dim, id::mlp_output, false, true, ModelScope::Layer, "x"},
    {id::ln_f, P::Run, "LN_f(x)", "ln_f", "ln_f (the final norm)",
     "LayerNorm of the last block's output", Signed, Token, Dim, id::block_output, false, true,
     ModelScope::Run, "ln_f"},
    {id::logits, P::Run, "logits", "logits", "next-token logits (last position)",
     "ln_f[T − 1] · wteᵀ: one score per vocabulary entry", Signed, Token, Vocab, id::ln_f, false,
     true, ModelScope::Run, "logits"},
};

}  // namespace

std::span<const StageInfo> stage_catalogue() { return kCatalogue; }

std::string_view difference_base(std::string_view stage) {
  return stage.starts_with(kDifferencePrefix) ? stage.substr(kDifferencePrefix.size()) : stage;
}

std::string difference_id(std::string_view stage) {
  return std::string(kDifferencePrefix) + std::string(stage);
}

const StageInfo* find_stage_info(std::string_view stage) {
  stage = difference_base(stage);
  for (const StageInfo& s : kCatalogue)
    if (s.id == stage) return &s;
  return nullptr;
}

const StageInfo& stage_info(std::string_view stage) {
  if (const StageInfo* s = find_stage_info(stage)) return *s;
  throw std::invalid_argument("no stage is called \"" + std::string(stage) + "\"");
}

std::string_view stage_source(std::string_view stage, Variant variant) {
  const StageInfo* s = find_stage_info(stage);
  if (!s) return {};
  const bool causal = is_causal(variant);
  if (s->id == stage_id::scores && variant == Variant::Simple) return stage_id::inputs;
  if (s->id == stage_id::scaled_scores && !causal) return stage_id::scores;
  if (s->id == stage_id::weights && variant == Variant::Simple) return stage_id::scores;
  if (s->id == stage_id::context && !has_dropout(variant)) return stage_id::weights;
  if (s->id == stage_id::keys && variant == Variant::Latent) return stage_id::latent_kv;
  if (s->id == stage_id::values && variant == Variant::Latent) return stage_id::latent_kv;
  if ((s->id == stage_id::keys || s->id == stage_id::values) && variant == Variant::Cross)
    return stage_id::memory;
  if (s->id == stage_id::output && variant == Variant::MultiheadWrapper) return stage_id::context;
  return s->source;
}

bool is_token_by_token(std::string_view stage) {
  const StageInfo* s = find_stage_info(stage);
  return s && s->token_by_token();
}

bool is_parameter(std::string_view stage) {
  const StageInfo* s = find_stage_info(stage);
  return s && s->parameter();
}

std::string_view axis_noun(Axis a) {
  switch (a) {
    case Query:
      return "query";
    case Key:
      return "key";
    case Token:
      return "token";
    case Dim:
      return "dim";
    case InDim:
      return "input dim";
    case OutDim:
      return "output dim";
    case Bias:
      return "bias";
    case Vocab:
      return "token id";
  }
  return "";
}

std::string_view axis_title(Axis a) {
  switch (a) {
    case InDim:
      return "in";
    case OutDim:
      return "out";
    case Bias:
      return "";
    default:
      return axis_noun(a);
  }
}

std::string_view axis_label_prefix(Axis a) {
  switch (a) {
    case Dim:
      return "d";
    case InDim:
      return "in";
    case OutDim:
      return "out";
    case Vocab:
      return "id";
    default:
      return "";
  }
}

}  // namespace attnscope::core
