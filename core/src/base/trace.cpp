// trace.cpp: finding stages in a trace by (layer, head, stage).
#include "attnscope/base/trace.hpp"

#include <algorithm>

namespace attnscope::core {

int Trace::heads_shown() const { return has_heads(config.variant) ? config.num_heads : 1; }

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
