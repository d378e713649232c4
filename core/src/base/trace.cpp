// trace.cpp: finding stages in a trace by (layer, head, stage).
#include "attnscope/base/trace.hpp"

#include <algorithm>

#include "attnscope/base/stages.hpp"

namespace attnscope::core {

BlockRecipe Trace::recipe() const {
  if (is_model()) return block.recipe;
  BlockRecipe r = config_recipe(config);
  if (cache_step) r.with(BlockPart::Cache);
  return r;
}

int Trace::heads_shown() const {
  if (is_model()) return block.heads;
  return has_heads(config.variant) ? config.num_heads : 1;
}

int Trace::head_dim() const {
  if (is_model()) return block.head_dim;
  return split_heads(config.variant) ? config.d_out / std::max(config.num_heads, 1) : config.d_out;
}

int Trace::projected_width() const {
  return recipe().split_heads ? heads_shown() * head_dim() : head_dim();
}

StageKey block_input_key(int layer) {
  return layer == 0 ? StageKey{-1, -1, stage_id::embeddings}
                    : StageKey{layer - 1, -1, stage_id::block_output};
}

StageKey Trace::block_input_key() const {
  return is_model() ? core::block_input_key(layer) : StageKey{layer, -1, stage_id::inputs};
}

int Trace::num_layers() const {
  int layers = 1;
  for (const auto& s : stages) layers = std::max(layers, s.layer + 1);
  return layers;
}

const Stage* Trace::find(const StageKey& key) const {
  for (const auto& s : stages)
    if (s.id == key.id && s.head == key.head && s.layer == key.layer) return &s;
  return nullptr;
}

std::shared_ptr<const RowMatrix> Trace::share(const StageKey& key) const {
  const Stage* s = find(key);
  return s ? s->shared_data() : nullptr;
}

std::string Trace::producer() const {
  return model.empty() ? std::string(variant_id(config.variant)) : model;
}

}  // namespace attnscope::core
