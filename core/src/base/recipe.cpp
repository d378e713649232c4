// recipe.cpp: the chapter-3 classes as recipes, and a recipe's stages.
#include "attnscope/base/recipe.hpp"

#include "attnscope/base/stages.hpp"

namespace attnscope::core {

BlockRecipe chapter3_recipe(Variant v) {
  using enum BlockPart;
  BlockRecipe r;
  if (v == Variant::Simple) return r;  // no weights: X · Xᵀ, softmax, weights · X
  r.with(Projection).with(Scale);
  if (is_modern(v)) {
    r.with(Heads).with(OutProj).with(Dropout);
    r.split_heads = true;
    if (v != Variant::Cross) r.with(Mask);
    if (v == Variant::GroupedQuery) r.with(KvGroups);
    if (v == Variant::SlidingWindow) r.with(Window);
    if (v == Variant::Latent) r.with(Latent);
    if (v == Variant::Cross) r.with(Cross);
    return r;
  }
  if (!is_causal(v)) return r;  // SelfAttention_v1, SelfAttention_v2
  r.with(Mask).with(Dropout);
  if (v == Variant::Causal) return r;
  r.with(Heads);  // the wrapper stacks CausalAttention modules
  if (v == Variant::Multihead) {
    r.with(OutProj);
    r.split_heads = true;
  }
  return r;
}

BlockRecipe config_recipe(const Config& config) {
  BlockRecipe r = chapter3_recipe(config.variant);
  if (config.rope && takes_rope(config.variant)) {
    r.with(BlockPart::Rotary);
    r.positions = PositionKind::Rotary;
  }
  return r;
}

std::vector<std::string_view> block_stage_ids(const BlockRecipe& recipe) {
  std::vector<std::string_view> out;
  for (const StageInfo& s : stage_catalogue())
    if (s.part != BlockPart::Run && recipe.has(s.part)) out.push_back(s.id);
  return out;
}

}  // namespace attnscope::core
