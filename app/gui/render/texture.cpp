// texture.cpp: NullTexture and the per-slot texture cache.
#include "render/texture.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

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
  if (fresh) e.texture = make_texture();
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

namespace attnscope::gui {

std::unique_ptr<Texture> TextureCache::make_texture() const {
  return factory_ ? factory_() : std::make_unique<NullTexture>();
}

bool TextureCache::prepare(const core::Trace& next, std::uint64_t next_version, double budget_ms) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto spent = [&] {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };
  // Rows coloured per step: ~64 K cells, well under a millisecond.
  constexpr Eigen::Index kBandCells = 64 * 1024;
  bool worked = false;  // every call makes progress, whatever the budget
  auto over = [&](double budget) { return worked && spent() >= budget; };
  for (auto& [slot, e] : entries_) {
    if (e.last_used != frame_ || !e.texture) continue;  // not on screen
    Next& n = e.next;
    if (n.version == next_version && n.texture) continue;  // ready
    const core::Stage* s = next.find(e.stage_id, e.head);
    if (!s || s->data.size() == 0) continue;  // not in the new trace: coloured when drawn
    if (over(budget_ms)) return false;
    const core::RowMatrix& m = s->data;
    if (n.version != next_version) {
      n = Next{};
      n.version = next_version;
      n.range = value_range(m, e.kind);
      n.image.width = static_cast<int>(m.cols());
      n.image.height = static_cast<int>(m.rows());
      n.image.pixels.resize(static_cast<std::size_t>(m.size()) * 4);
    }
    const auto band = std::max<Eigen::Index>(1, kBandCells / std::max<Eigen::Index>(1, m.cols()));
    while (n.rows_done < m.rows() && !over(budget_ms)) {
      const Eigen::Index rows = std::min<Eigen::Index>(band, m.rows() - n.rows_done);
      const core::RowMatrix part = m.middleRows(n.rows_done, rows);
      const RgbaImage img = colorize(part, n.range, e.map);
      std::memcpy(n.image.pixels.data() + static_cast<std::size_t>(n.rows_done * m.cols()) * 4,
                  img.pixels.data(), img.pixels.size());
      n.rows_done += static_cast<int>(rows);
      worked = true;
    }
    // The upload (a few ms in software GL) starts a frame, never ends a full one.
    if (n.rows_done < m.rows() || over(budget_ms * 0.5)) return false;
    worked = true;
    n.texture = make_texture();
    n.texture->upload(n.image);
    ++uploads_;
    n.image = RgbaImage{};
  }
  return true;
}

void TextureCache::commit_prepared(std::uint64_t next_version) {
  for (auto& [slot, e] : entries_) {
    if (e.next.version == next_version && e.next.texture) {
      e.texture = std::move(e.next.texture);  // the old texture goes now
      e.range = e.next.range;
      e.trace_version = next_version;
    }
    e.next = Next{};
  }
}

void TextureCache::drop_prepared() {
  for (auto& [slot, e] : entries_) e.next = Next{};
}

}  // namespace attnscope::gui
