// texture.cpp: NullTexture and the per-slot texture cache.
#include "render/texture.hpp"

namespace attnscope::gui {

void NullTexture::upload(const RgbaImage& image) {
  width = image.width;
  height = image.height;
}

HeatmapTexture TextureCache::get(const std::string& slot, std::uint64_t trace_version,
                                 const core::Stage& stage, ScaleKind kind, Colormap map) {
  Entry& e = entries_[slot];
  e.last_used = frame_;
  const bool fresh = !e.texture;
  if (fresh) e.texture = factory_ ? factory_() : std::make_unique<NullTexture>();
  const bool data_changed = fresh || e.trace_version != trace_version || e.stage_id != stage.id ||
                            e.head != stage.head || e.kind != kind;
  if (data_changed) e.range = value_range(stage.data, kind);
  if (data_changed || e.map != map) {
    e.texture->upload(colorize(stage.data, e.range, map));
    ++uploads_;
    e.trace_version = trace_version;
    e.stage_id = stage.id;
    e.head = stage.head;
    e.kind = kind;
    e.map = map;
  }
  return HeatmapTexture{e.texture->id(), e.range};
}

void TextureCache::collect(int frame) {
  frame_ = frame;
  constexpr int kKeepFrames = 120;  // a slot unseen this long is gone from the screen
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (frame - it->second.last_used > kKeepFrames)
      it = entries_.erase(it);
    else
      ++it;
  }
}

}  // namespace attnscope::gui
