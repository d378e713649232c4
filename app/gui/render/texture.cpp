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

int texel_factor(Eigen::Index rows, Eigen::Index cols, int max_side) {
  const Eigen::Index side = std::max(rows, cols);
  if (max_side <= 0 || side <= max_side) return 1;
  return static_cast<int>((side + max_side - 1) / max_side);
}

RgbaImage reduced_image(Eigen::Index rows, Eigen::Index cols, int factor) {
  RgbaImage image;
  image.width = static_cast<int>((cols + factor - 1) / factor);
  image.height = static_cast<int>((rows + factor - 1) / factor);
  image.pixels.resize(static_cast<std::size_t>(image.width) *
                      static_cast<std::size_t>(image.height) * 4);
  return image;
}

void add_band(const RgbaImage& band, int row0, int factor, RgbaImage& image) {
  if (band.pixels.empty()) return;  // a stage with no columns has no pixels to copy
  const auto at = [](const RgbaImage& img, int x, int y) {
    return (static_cast<std::size_t>(y) * static_cast<std::size_t>(img.width) +
            static_cast<std::size_t>(x)) *
           4;
  };
  if (factor == 1) {
    std::memcpy(image.pixels.data() + at(image, 0, row0), band.pixels.data(), band.pixels.size());
    return;
  }
  for (int r = 0; r < band.height; r += factor) {
    const int block_rows = std::min(factor, band.height - r);
    const int y = (row0 + r) / factor;
    for (int x = 0; x < image.width; ++x) {
      const int c0 = x * factor;
      const int block_cols = std::min(factor, band.width - c0);
      unsigned sum[4] = {0, 0, 0, 0};
      for (int i = 0; i < block_rows; ++i) {
        const std::uint8_t* p = band.pixels.data() + at(band, c0, r + i);
        for (int j = 0; j < block_cols; ++j)
          for (int k = 0; k < 4; ++k) sum[k] += p[4 * j + k];
      }
      const auto n = static_cast<unsigned>(block_rows * block_cols);
      std::uint8_t* out = image.pixels.data() + at(image, x, y);
      for (int k = 0; k < 4; ++k) out[k] = static_cast<std::uint8_t>((sum[k] + n / 2) / n);
    }
  }
}

void TextureCache::colour_rows(const core::RowMatrix& m, Eigen::Index row0, Eigen::Index rows,
                               const ValueRange& range, ScaleKind kind, ScaleScope scope,
                               Colormap map, int factor, RgbaImage& image) {
  const core::RowMatrix band = m.middleRows(row0, rows);
  add_band(colorize(band, range, kind, scope, map), static_cast<int>(row0), factor, image);
}

Eigen::Index TextureCache::band_rows(Eigen::Index cols, int factor) {
  constexpr Eigen::Index kBandCells = 64 * 1024;
  const Eigen::Index rows = std::max<Eigen::Index>(1, kBandCells / std::max<Eigen::Index>(1, cols));
  return std::max<Eigen::Index>(factor, rows / factor * factor);
}

namespace {

// The texture coordinate of the matrix's far corner in a picture reduced by factor.
ImVec2 uv_max_of(const core::RowMatrix& m, const RgbaImage& image, int factor) {
  if (factor == 1 || image.width == 0 || image.height == 0) return ImVec2(1.0f, 1.0f);
  return ImVec2(static_cast<float>(m.cols()) / static_cast<float>(image.width * factor),
                static_cast<float>(m.rows()) / static_cast<float>(image.height * factor));
}

}  // namespace

HeatmapTexture TextureCache::get(const std::string& slot, std::uint64_t trace_version,
                                 const core::Stage& stage, ScaleKind kind, Colormap map,
                                 int max_side, ScaleScope scope, bool follows_trace) {
  using Clock = std::chrono::steady_clock;
  Entry& e = entries_[slot];
  e.last_used = frame_;
  e.follows_trace = follows_trace;
  const Want want{trace_version, stage.id, stage.head, kind, map, max_side, scope};
  const bool shows_it = e.texture && e.shown == want;
  if (shows_it) {
    e.work = Work{};
    return HeatmapTexture{e.texture->id(), e.range, e.uv_max};
  }
  // Only the colours changed: the range stays.
  const bool same_data = e.texture && e.shown.same_data(want);
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
    return frame_spent_ms_ +
           std::chrono::duration<double, std::milli>(Clock::now() - start).count();
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
  const int factor = texel_factor(m.rows(), m.cols(), max_side);
  if (w.has_range && w.image.pixels.empty() && m.size() > 0)
    w.image = reduced_image(m.rows(), m.cols(), factor);
  const Eigen::Index band = band_rows(m.cols(), factor);
  while (w.has_range && w.rows_done < m.rows() && may_work()) {
    const Eigen::Index rows = std::min<Eigen::Index>(band, m.rows() - w.rows_done);
    colour_rows(m, w.rows_done, rows, w.range, kind, scope, map, factor, w.image);
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
    e.shown = want;
    e.range = w.range;
    e.uv_max = uv_max_of(m, w.image, factor);
    finish_frame_work();
    w = Work{};
    return HeatmapTexture{e.texture->id(), e.range, e.uv_max};
  }
  finish_frame_work();
  pending_ = true;
  HeatmapTexture not_ready;
  not_ready.ready = false;
  not_ready.has_range = w.has_range;
  not_ready.range = w.range;
  not_ready.progress =
      m.rows() > 0 ? static_cast<float>(w.rows_done) / static_cast<float>(m.rows()) : 0.0f;
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
  std::erase_if(atlases_, [&](const auto& a) { return frame - a.second.last_used > kKeepFrames; });
}

const TextureCache::Atlas& TextureCache::atlas(const std::string& slot, std::uint64_t version,
                                               const std::vector<core::Stage>& stages, int columns,
                                               ScaleKind kind, Colormap map, ScaleScope scope) {
  AtlasEntry& a = atlases_[slot];
  a.last_used = frame_;
  if (a.texture && a.version == version && a.count == stages.size() && a.columns == columns &&
      a.kind == kind && a.map == map && a.scope == scope)
    return a.cells;
  columns = std::max(columns, 1);
  Eigen::Index side = 1;  // the largest stage's side: every cell's
  for (const core::Stage& st : stages) side = std::max({side, st.data().rows(), st.data().cols()});
  const auto cell = static_cast<int>(side) + 1;  // a texel of gap after each cell
  const int rows = static_cast<int>((stages.size() + static_cast<std::size_t>(columns) - 1) /
                                    static_cast<std::size_t>(columns));
  RgbaImage image;
  image.width = columns * cell;
  image.height = std::max(rows, 1) * cell;
  image.pixels.assign(
      static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.height) * 4, 0);
  a.cells.uv.assign(stages.size(), ImVec4(0, 0, 0, 0));
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const core::RowMatrix& m = stages[i].data();
    if (m.size() == 0) continue;
    // Row by row, a matrix's own range is not needed.
    const RgbaImage picture = scope == ScaleScope::Row ? colorize_rows(m, kind, map)
                                                       : colorize(m, value_range(m, kind), map);
    const int x0 = static_cast<int>(i % static_cast<std::size_t>(columns)) * cell;
    const int y0 = static_cast<int>(i / static_cast<std::size_t>(columns)) * cell;
    for (int y = 0; y < picture.height; ++y)
      std::memcpy(image.pixels.data() +
                      (static_cast<std::size_t>(y0 + y) * static_cast<std::size_t>(image.width) +
                       static_cast<std::size_t>(x0)) *
                          4,
                  picture.pixels.data() + static_cast<std::size_t>(y) * picture.width * 4,
                  static_cast<std::size_t>(picture.width) * 4);
    const auto w = static_cast<float>(image.width), h = static_cast<float>(image.height);
    a.cells.uv[i] = ImVec4(static_cast<float>(x0) / w, static_cast<float>(y0) / h,
                           static_cast<float>(x0 + picture.width) / w,
                           static_cast<float>(y0 + picture.height) / h);
  }
  if (!a.texture) a.texture = make_texture();
  a.texture->upload(image);
  ++uploads_;
  a.cells.id = a.texture->id();
  a.version = version;
  a.count = stages.size();
  a.columns = columns;
  a.kind = kind;
  a.map = map;
  a.scope = scope;
  return a.cells;
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
  bool worked = false;  // every call makes progress, whatever the budget
  auto over = [&](double budget) { return worked && spent() >= budget; };
  for (auto& [slot, e] : entries_) {
    if (e.last_used != frame_ || !e.texture || !e.follows_trace) continue;  // not on screen
    Next& n = e.next;
    if (n.version == next_version && (n.map != e.shown.map || n.scope != e.shown.scope))
      n = Next{};                                          // recoloured since
    if (n.version == next_version && n.texture) continue;  // ready
    const core::Stage* s = next.find(e.shown.stage_id, e.shown.head);
    if (!s || s->data().size() == 0) continue;  // not in the new trace: coloured when drawn
    if (over(budget_ms)) return false;
    const core::RowMatrix& m = s->data();
    const int factor = texel_factor(m.rows(), m.cols(), e.shown.max_side);  // as the slot shows it
    if (n.version != next_version) {
      n = Next{};
      n.version = next_version;
      n.map = e.shown.map;
      n.scope = e.shown.scope;
      n.range = value_range(m, e.shown.kind);
      n.image = reduced_image(m.rows(), m.cols(), factor);
    }
    const Eigen::Index band = band_rows(m.cols(), factor);
    while (n.rows_done < m.rows() && !over(budget_ms)) {
      const Eigen::Index rows = std::min<Eigen::Index>(band, m.rows() - n.rows_done);
      colour_rows(m, n.rows_done, rows, n.range, e.shown.kind, e.shown.scope, e.shown.map, factor,
                  n.image);
      n.rows_done += static_cast<int>(rows);
      worked = true;
    }
    // The upload (a few ms in software GL) starts a frame, never ends a full one.
    if (n.rows_done < m.rows() || over(budget_ms * 0.5)) return false;
    worked = true;
    n.texture = make_texture();
    n.texture->upload(n.image);
    ++uploads_;
    n.uv_max = uv_max_of(m, n.image, factor);
    n.image = RgbaImage{};
  }
  return true;
}

void TextureCache::commit_prepared(std::uint64_t next_version) {
  for (auto& [slot, e] : entries_) {
    // Prepared in the colours the slot still shows (else get() colours it anew).
    if (e.next.version == next_version && e.next.texture && e.next.map == e.shown.map &&
        e.next.scope == e.shown.scope) {
      e.texture = std::move(e.next.texture);  // the old texture goes now
      e.range = e.next.range;
      e.uv_max = e.next.uv_max;
      e.shown.trace_version = next_version;
    }
    e.next = Next{};
  }
}

void TextureCache::drop_prepared() {
  for (auto& [slot, e] : entries_) e.next = Next{};
}

}  // namespace attnscope::gui
