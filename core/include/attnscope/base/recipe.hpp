// recipe.hpp: what one block of attention is made of. Each chapter-3 class
// is a recipe, and so is a model family's block: its parts (a bit set of
// BlockPart) and its kinds of norm, positions and MLP. The stage catalogue
// (stages.hpp) names the part that makes each stage, so the stages a block
// holds, the stepper's steps and the words on screen follow from the
// recipe: a new mechanism is a part and its catalogue rows, a new family a
// recipe (docs/ARCHITECTURE.md walks through one).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "attnscope/base/config.hpp"

namespace attnscope::core {

// A part a block may have. Catalogue rows name the part that makes them.
enum class BlockPart : unsigned char {
  Attention,   // every block: its input, the scores, the weights, the context
  Norm,        // a norm of the block's input before attention (GPT-2's ln_1)
  Projection,  // learned W_query, W_key, W_value and the Q, K, V they make
  Mask,        // the causal mask and the scores it fills with −∞
  Scale,       // the scores divided by √d_k
  Dropout,     // nn.Dropout on the weights (training mode)
  Heads,       // several heads, their contexts side by side
  OutProj,     // the output projection of the heads' contexts
  Residual,    // the block's input added to the attention's output
  Mlp,         // a model's feed-forward half: ln_2, fc, activation, proj, the second residual
  Rotary,      // queries and keys rotated by position (RoPE)
  QkNorm,      // each head's queries and keys normalised (Qwen3, Gemma 3)
  KvGroups,    // several query heads sharing one K/V head (grouped-query)
  Window,      // a sliding window within the causal mask
  Latent,      // keys and values through a low-rank latent (multi-head latent)
  Cache,       // keys and values kept from earlier tokens (the KV cache)
  Cross,       // keys and values read from a second sequence (cross-attention)
  Run,         // once per model run, outside a block (embeddings, ln_f, logits)
};

enum class NormKind : unsigned char { None, LayerNorm, RmsNorm };
enum class PositionKind : unsigned char { None, Learned, Rotary };
enum class MlpKind : unsigned char { None, Gelu, Relu, SwiGlu, GeGlu };

struct BlockRecipe {
  std::uint32_t parts = 1u << static_cast<unsigned>(BlockPart::Attention);
  // One projection cut into heads (MultiHeadAttention, GPT-2's c_attn), not
  // a projection per head (the wrapper's stacked CausalAttention modules).
  bool split_heads = false;
  // Q, K and V come from one fused projection and are kept per head only
  // (GPT-2's c_attn): the stepper shows each head's slice at once, with no
  // step that splits a whole-layer Q.
  bool fused_qkv = false;
  NormKind norm = NormKind::None;               // before attention and the MLP
  PositionKind positions = PositionKind::None;  // how token order enters
  MlpKind mlp = MlpKind::None;                  // after attention, in the block
  bool tied_embeddings = false;                 // the LM head reuses the token embedding

  bool has(BlockPart p) const { return (parts >> static_cast<unsigned>(p)) & 1u; }
  BlockRecipe& with(BlockPart p) {
    parts |= 1u << static_cast<unsigned>(p);
    return *this;
  }
  // Several heads, each with its own projection (the wrapper's stacked modules).
  bool stacked_heads() const { return has(BlockPart::Heads) && !split_heads; }
  friend bool operator==(const BlockRecipe&, const BlockRecipe&) = default;
};

// The recipe of each of the book's chapter-3 classes, and of the classes
// after it (GroupedQuery, SlidingWindow, Latent, Cross) without RoPE.
BlockRecipe chapter3_recipe(Variant v);
// The recipe of the run `config` describes: its class's, with the Rotary
// part when RoPE is on.
BlockRecipe config_recipe(const Config& config);

// The ids of the stages a block of `recipe` makes, in pipeline order: the
// catalogue's rows whose part the recipe has (parameters included, a model
// run's own rows not).
std::vector<std::string_view> block_stage_ids(const BlockRecipe& recipe);

}  // namespace attnscope::core
