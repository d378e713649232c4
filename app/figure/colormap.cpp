// colormap.cpp: control points and interpolation.
#include "figure/colormap.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attnscope::figure {

namespace {

// matplotlib's viridis at t = 0, 0.1, ..., 1.
constexpr Rgb kViridis[] = {
    {0x44, 0x01, 0x54}, {0x48, 0x24, 0x75}, {0x41, 0x44, 0x87}, {0x35, 0x5f, 0x8d},
    {0x2a, 0x78, 0x8e}, {0x21, 0x91, 0x8c}, {0x22, 0xa8, 0x84}, {0x44, 0xbf, 0x70},
    {0x7a, 0xd1, 0x51}, {0xbd, 0xdf, 0x26}, {0xfd, 0xe7, 0x25},
};

// ColorBrewer RdBu (11 classes), reversed so that negative is blue; the
// middle class is replaced by pure white so that 0 reads as "nothing".
constexpr Rgb kBlueWhiteRed[] = {
    {0x05, 0x30, 0x61}, {0x21, 0x66, 0xac}, {0x43, 0x93, 0xc3}, {0x92, 0xc5, 0xde},
    {0xd1, 0xe5, 0xf0}, {0xff, 0xff, 0xff}, {0xfd, 0xdb, 0xc7}, {0xf4, 0xa5, 0x82},
    {0xd6, 0x60, 0x4d}, {0xb2, 0x18, 0x2b}, {0x67, 0x00, 0x1f},
};

template <std::size_t N>
Rgb interpolate(const Rgb (&points)[N], double t) {
  if (!(t > 0)) t = 0;  // also NaN
  if (t > 1) t = 1;
  const double x = t * static_cast<double>(N - 1);
  const auto i = std::min(static_cast<std::size_t>(x), N - 2);
  const double f = x - static_cast<double>(i);
  auto mix = [f](std::uint8_t a, std::uint8_t b) {
    return static_cast<std::uint8_t>(std::lround(a + (b - a) * f));
  };
  return {mix(points[i].r, points[i + 1].r), mix(points[i].g, points[i + 1].g),
          mix(points[i].b, points[i + 1].b)};
}

double channel(std::uint8_t c) {
  const double s = c / 255.0;
  return s <= 0.04045 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
}

}  // namespace

Rgb viridis(double t) { return interpolate(kViridis, t); }
Rgb blue_white_red(double t) { return interpolate(kBlueWhiteRed, t); }

Rgb sample(Scale scale, double t) {
  return scale == Scale::Sequential ? viridis(t) : blue_white_red(t);
}

std::string hex(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

bool prefers_dark_text(Rgb c) {
  const double lum = 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b);
  // Contrast with black (lum + 0.05) / 0.05 vs with white 1.05 / (lum + 0.05).
  return (lum + 0.05) * (lum + 0.05) > 0.05 * 1.05;
}

Range value_range(Scale scale, const float* values, std::size_t count) {
  double lo = 0, hi = 0;
  bool any = false;
  for (std::size_t k = 0; k < count; ++k) {
    const double v = values[k];
    if (!std::isfinite(v)) continue;
    if (!any) {
      lo = hi = v;
      any = true;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (scale == Scale::Diverging) {
    const double m = std::max(std::fabs(lo), std::fabs(hi));
    return m > 0 ? Range{-m, m} : Range{-1, 1};
  }
  if (!any) return {0, 1};
  if (hi > lo) return {lo, hi};
  return {lo - 0.5, hi + 0.5};  // a constant matrix: its colour is the middle
}

double position(Range range, double v) {
  if (!(range.hi > range.lo)) return 0.5;
  return std::clamp((v - range.lo) / (range.hi - range.lo), 0.0, 1.0);
}

}  // namespace attnscope::figure
