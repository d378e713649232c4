// scale.cpp: range, colouring and cell text (see scale.hpp).
#include "figure/scale.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace attnscope::figure {

ScaleKind scale_kind_for(std::string_view id) {
  if (id == "weights" || id == "dropped_weights" || id == "mask" || id == "dropout_mask")
    return ScaleKind::Sequential;
  return ScaleKind::Diverging;
}

Colormap colormap_for(Palette palette, ScaleKind kind) {
  return kind == ScaleKind::Sequential ? sequential_map(palette) : diverging_map(palette);
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
  // In double: for values near float32's limit (a range of ±3e38) hi - lo
  // and v - lo overflow float to inf, and inf / inf is NaN.
  const double t = (static_cast<double>(v) - range.lo) /
                   (static_cast<double>(range.hi) - range.lo);
  if (!(t >= 0.0)) return 0.0f;  // also NaN (a NaN or infinite v): the low end
  return static_cast<float>(std::min(t, 1.0));
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

int decimals_that_fit(float cell_w, float cell_h, float width_4dp, float width_2dp, float line_h) {
  constexpr float kPad = 4.0f;  // px of air on each side of the text
  if (cell_h < line_h + 2.0f) return 0;
  if (cell_w >= width_4dp + 2 * kPad) return 4;
  if (cell_w >= width_2dp + 2 * kPad) return 2;
  return 0;
}

}  // namespace attnscope::figure
