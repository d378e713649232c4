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
  using Clock = std::chrono::steady_clock;
  Entry& e = entries_[slot];
  e.last_used = frame_;
  const Want want{trace_version, stage.id, stage.head, kind, map};
  const bool shows_it = e.texture && e.trace_version == trace_version && e.stage_id == stage.id &&
                        e.head == stage.head && e.kind == kind && e.map == map;
  if (shows_it) {
    e.work = Work{};
    return HeatmapTexture{e.texture->id(), e.range};
  }
  // Only the colours changed: the range stays.
  const bool same_data = e.texture && e.trace_version == trace_version &&
                         e.stage_id == stage.id && e.head == stage.head && e.kind == kind;
  Work& w = e.work;
  if (!w.active || !(w.want == want)) {
    w = Work{};
    w.want = want;
    w.active = true;
    if (same_data) {
      w.range = e.range;
      w.has_range = true;
    }
  }
  const core::RowMatrix& m = stage.data();
  constexpr Eigen::Index kSmallCells = 64 * 1024;  // well under a millisecond: no budget
  const bool small = m.size() <= kSmallCells;
  const auto start = Clock::now();
  auto spent = [&] {
    return frame_spent_ms_ + std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };
  // The first large stage of a frame always makes progress; later ones only
  // while the frame's budget lasts.
  auto may_work = [&] { return small || !frame_progressed_ || spent() < frame_budget_ms_; };
  auto finish_frame_work = [&] {
    if (!small) {
      frame_spent_ms_ = spent();
      frame_progressed_ = true;
    }
  };

  if (!w.has_range && may_work()) {
    w.range = value_range(m, kind);
    w.has_range = true;
    if (!small) frame_progressed_ = true;
  }
  if (w.has_range && w.image.pixels.empty() && m.size() > 0) {
    w.image.width = static_cast<int>(m.cols());
    w.image.height = static_cast<int>(m.rows());
    w.image.pixels.resize(static_cast<std::size_t>(m.size()) * 4);
  }
  const auto band = std::max<Eigen::Index>(1, kSmallCells / std::max<Eigen::Index>(1, m.cols()));
  while (w.has_range && w.rows_done < m.rows() && may_work()) {
    const Eigen::Index rows = std::min<Eigen::Index>(band, m.rows() - w.rows_done);
    const RgbaImage img = colorize(m.middleRows(w.rows_done, rows), w.range, map);
    if (!img.pixels.empty())  // a stage with no columns has no pixels to copy
      std::memcpy(w.image.pixels.data() + static_cast<std::size_t>(w.rows_done * m.cols()) * 4,
                  img.pixels.data(), img.pixels.size());
    w.rows_done += static_cast<int>(rows);
    if (!small) frame_progressed_ = true;
  }
  // The upload (a few ms in software GL) starts a frame's work, or fits in
  // what is left of the budget.
  const bool coloured = w.has_range && w.rows_done >= m.rows();
  if (coloured && (small || spent() < frame_budget_ms_ * 0.5 || !frame_progressed_)) {
    if (!e.texture) e.texture = make_texture();
    e.texture->upload(w.image);
    ++uploads_;
    e.trace_version = trace_version;
    e.stage_id = stage.id;
    e.head = stage.head;
    e.kind = kind;
    e.map = map;
    e.range = w.range;
    finish_frame_work();
    w = Work{};
    return HeatmapTexture{e.texture->id(), e.range};
  }
  finish_frame_work();
  pending_ = true;
  HeatmapTexture not_ready;
  not_ready.ready = false;
  not_ready.has_range = w.has_range;
  not_ready.range = w.range;
  not_ready.progress = m.rows() > 0 ? static_cast<float>(w.rows_done) / static_cast<float>(m.rows()) : 0.0f;
  return not_ready;
}

void TextureCache::collect(int frame) {
  frame_ = frame;
  frame_spent_ms_ = 0.0;
  frame_progressed_ = false;
  pending_ = false;
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
    if (!s || s->data().size() == 0) continue;  // not in the new trace: coloured when drawn
    if (over(budget_ms)) return false;
    const core::RowMatrix& m = s->data();
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
      if (!img.pixels.empty())  // a stage with no columns has no pixels to copy
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
