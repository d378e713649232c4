// heatmap.cpp: range, colouring and label fitting (see heatmap.hpp).
#include "render/heatmap.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace attnscope::gui {

ScaleKind scale_kind_for(std::string_view id) {
  if (id == "weights" || id == "dropped_weights" || id == "mask" || id == "dropout_mask")
    return ScaleKind::Sequential;
  return ScaleKind::Diverging;
}

ValueRange value_range(const core::RowMatrix& m, ScaleKind kind) {
  ValueRange r;
  float lo = std::numeric_limits<float>::infinity();
  float hi = -std::numeric_limits<float>::infinity();
  const float* p = m.data();
  const Eigen::Index n = m.size();
  for (Eigen::Index k = 0; k < n; ++k) {
    const float v = p[k];
    if (std::isnan(v)) {
      ++r.nan;
    } else if (std::isinf(v)) {
      ++(v < 0 ? r.neg_inf : r.pos_inf);
    } else {
      ++r.finite;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (r.finite == 0) lo = hi = 0.0f;
  r.data_min = lo;
  r.data_max = hi;
  if (kind == ScaleKind::Diverging) {
    const float a = std::max(std::fabs(lo), std::fabs(hi));
    r.lo = a > 0.0f ? -a : -1.0f;
    r.hi = a > 0.0f ? a : 1.0f;
  } else {
    r.lo = std::min(0.0f, lo);
    r.hi = hi;
    if (!(r.hi > r.lo)) r.hi = r.lo + 1.0f;
  }
  return r;
}

float scale_position(float v, const ValueRange& range) {
  const float t = (v - range.lo) / (range.hi - range.lo);
  return std::clamp(t, 0.0f, 1.0f);
}

Rgba8 cell_color(float v, const ValueRange& range, Colormap map) {
  if (std::isnan(v)) return kNanFill;
  if (std::isinf(v)) return masked_fill(map);
  return sample(map, scale_position(v, range));
}

Rgba8 RgbaImage::at(int x, int y) const {
  const auto k = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) +
                  static_cast<std::size_t>(x)) *
                 4;
  return Rgba8{pixels[k], pixels[k + 1], pixels[k + 2], pixels[k + 3]};
}

RgbaImage colorize(const core::RowMatrix& m, const ValueRange& range, Colormap map) {
  RgbaImage img;
  img.width = static_cast<int>(m.cols());
  img.height = static_cast<int>(m.rows());
  img.pixels.resize(static_cast<std::size_t>(m.size()) * 4);
  // A 256-entry table: the colormap is sampled once, not once per cell.
  Rgba8 lut[256];
  for (int k = 0; k < 256; ++k) lut[k] = sample(map, static_cast<float>(k) / 255.0f);
  const float* src = m.data();
  std::uint8_t* dst = img.pixels.data();
  for (Eigen::Index k = 0; k < m.size(); ++k, dst += 4) {
    const float v = src[k];
    Rgba8 c;
    if (std::isfinite(v))
      c = lut[std::lround(scale_position(v, range) * 255.0f)];
    else
      c = cell_color(v, range, map);
    dst[0] = c.r;
    dst[1] = c.g;
    dst[2] = c.b;
    dst[3] = c.a;
  }
  return img;
}

namespace {
double linear(std::uint8_t c) {
  const double s = c / 255.0;
  return s <= 0.04045 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
}
}  // namespace

Rgba8 text_color_on(Rgba8 bg) {
  const double lum = 0.2126 * linear(bg.r) + 0.7152 * linear(bg.g) + 0.0722 * linear(bg.b);
  // Contrast ratios against black (L=0) and white (L=1); pick the larger.
  const double vs_black = (lum + 0.05) / 0.05;
  const double vs_white = 1.05 / (lum + 0.05);
  return vs_black >= vs_white ? Rgba8{0, 0, 0, 255} : Rgba8{255, 255, 255, 255};
}

int label_stride(float cell_px, float label_px) {
  if (!(cell_px > 0.0f)) return std::numeric_limits<int>::max();
  if (label_px <= cell_px) return 1;
  return static_cast<int>(std::ceil(label_px / cell_px));
}

int decimals_that_fit(float cell_w, float cell_h, float width_4dp, float width_2dp, float line_h) {
  constexpr float kPad = 4.0f;  // px of air on each side of the text
  if (cell_h < line_h + 2.0f) return 0;
  if (cell_w >= width_4dp + 2 * kPad) return 4;
  if (cell_w >= width_2dp + 2 * kPad) return 2;
  return 0;
}

std::string format_value(float v, int decimals, bool unicode) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) {
    if (v > 0) return unicode ? "∞" : "inf";
    return unicode ? "−∞" : "-inf";
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, static_cast<double>(v));
  return buf;
}

CellSpan visible_cells(float origin, float cell, float clip_min, float clip_max, int count) {
  if (count <= 0 || !(cell > 0.0f) || clip_max <= clip_min) return {};
  const float first = std::floor((clip_min - origin) / cell);
  const float last = std::ceil((clip_max - origin) / cell);
  CellSpan s;
  s.first = static_cast<int>(std::clamp(first, 0.0f, static_cast<float>(count)));
  s.last = static_cast<int>(std::clamp(last, 0.0f, static_cast<float>(count)));
  if (s.last < s.first) s.last = s.first;
  return s;
}

}  // namespace attnscope::gui
