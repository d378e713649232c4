// colormap.cpp: control points of each scale, linear interpolation, text contrast.
// Sequential scales are matplotlib's (viridis, cividis, magma) sampled at 9
// points; diverging ones are ColorBrewer's 11-class RdBu and PuOr, ordered
// so that t = 0 is the most negative value.
#include "figure/colormap.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <span>

namespace attnscope::figure {

namespace {

struct Rgb {
  std::uint8_t r, g, b;
};

constexpr Rgb kViridis[] = {{0x44, 0x01, 0x54}, {0x47, 0x2d, 0x7b}, {0x3b, 0x52, 0x8b},
                            {0x2c, 0x72, 0x8e}, {0x21, 0x91, 0x8c}, {0x28, 0xae, 0x80},
                            {0x5e, 0xc9, 0x62}, {0xad, 0xdc, 0x30}, {0xfd, 0xe7, 0x25}};
constexpr Rgb kCividis[] = {{0x00, 0x22, 0x4e}, {0x12, 0x35, 0x70}, {0x3b, 0x49, 0x6c},
                            {0x57, 0x5d, 0x6d}, {0x70, 0x71, 0x73}, {0x8a, 0x87, 0x79},
                            {0xa6, 0x9d, 0x75}, {0xc4, 0xb5, 0x6c}, {0xfe, 0xe8, 0x38}};
constexpr Rgb kMagma[] = {{0x00, 0x00, 0x04}, {0x1c, 0x10, 0x44}, {0x4f, 0x12, 0x7b},
                          {0x81, 0x25, 0x81}, {0xb5, 0x36, 0x7a}, {0xe5, 0x59, 0x64},
                          {0xfb, 0x87, 0x61}, {0xfe, 0xc2, 0x87}, {0xfc, 0xfd, 0xbf}};
// Blue for negative, red for positive (RdBu reversed).
constexpr Rgb kRdBu[] = {{0x05, 0x30, 0x61}, {0x21, 0x66, 0xac}, {0x43, 0x93, 0xc3},
                         {0x92, 0xc5, 0xde}, {0xd1, 0xe5, 0xf0}, {0xf7, 0xf7, 0xf7},
                         {0xfd, 0xdb, 0xc7}, {0xf4, 0xa5, 0x82}, {0xd6, 0x60, 0x4d},
                         {0xb2, 0x18, 0x2b}, {0x67, 0x00, 0x1f}};
// Purple for negative, orange for positive (PuOr reversed).
constexpr Rgb kPuOr[] = {{0x2d, 0x00, 0x4b}, {0x54, 0x27, 0x88}, {0x80, 0x73, 0xac},
                         {0xb2, 0xab, 0xd2}, {0xd8, 0xda, 0xeb}, {0xf7, 0xf7, 0xf7},
                         {0xfe, 0xe0, 0xb6}, {0xfd, 0xb8, 0x63}, {0xe0, 0x82, 0x14},
                         {0xb3, 0x58, 0x06}, {0x7f, 0x3b, 0x08}};
constexpr Rgb kGreys[] = {{0xff, 0xff, 0xff}, {0x10, 0x10, 0x10}};
constexpr Rgb kGreysDiv[] = {{0x10, 0x10, 0x10}, {0x90, 0x90, 0x90}, {0xff, 0xff, 0xff}};

std::span<const Rgb> points(Colormap m) {
  switch (m) {
    case Colormap::Viridis:
      return kViridis;
    case Colormap::Cividis:
      return kCividis;
    case Colormap::Magma:
      return kMagma;
    case Colormap::RdBu:
      return kRdBu;
    case Colormap::PuOr:
      return kPuOr;
    case Colormap::Greys:
      return kGreys;
    case Colormap::GreysDiv:
      return kGreysDiv;
  }
  return kViridis;
}

std::uint8_t lerp(std::uint8_t a, std::uint8_t b, float f) {
  const float v = static_cast<float>(a) + (static_cast<float>(b) - static_cast<float>(a)) * f;
  return static_cast<std::uint8_t>(std::lround(std::clamp(v, 0.0f, 255.0f)));
}

}  // namespace

std::string_view palette_label(Palette p) {
  switch (p) {
    case Palette::Standard:
      return "Viridis / blue-red";
    case Palette::ColorBlindSafe:
      return "Cividis / purple-orange (colour-blind safe)";
    case Palette::Warm:
      return "Magma / blue-red";
    case Palette::Greys:
      return "Greys (print)";
  }
  return "?";
}

std::string_view palette_id(Palette p) {
  switch (p) {
    case Palette::Standard:
      return "standard";
    case Palette::ColorBlindSafe:
      return "colorblind";
    case Palette::Warm:
      return "warm";
    case Palette::Greys:
      return "greys";
  }
  return "standard";
}

Palette parse_palette(std::string_view id) {
  for (Palette p : kAllPalettes)
    if (palette_id(p) == id) return p;
  return Palette::Standard;
}

Colormap sequential_map(Palette p) {
  switch (p) {
    case Palette::Standard:
      return Colormap::Viridis;
    case Palette::ColorBlindSafe:
      return Colormap::Cividis;
    case Palette::Warm:
      return Colormap::Magma;
    case Palette::Greys:
      return Colormap::Greys;
  }
  return Colormap::Viridis;
}

Colormap diverging_map(Palette p) {
  switch (p) {
    case Palette::Standard:
      return Colormap::RdBu;
    case Palette::ColorBlindSafe:
      return Colormap::PuOr;
    case Palette::Warm:
      return Colormap::RdBu;
    case Palette::Greys:
      return Colormap::GreysDiv;
  }
  return Colormap::RdBu;
}

std::string_view colormap_name(Colormap m) {
  switch (m) {
    case Colormap::Viridis:
      return "viridis";
    case Colormap::Cividis:
      return "cividis";
    case Colormap::Magma:
      return "magma";
    case Colormap::RdBu:
      return "RdBu";
    case Colormap::PuOr:
      return "PuOr";
    case Colormap::Greys:
      return "greys";
    case Colormap::GreysDiv:
      return "grey (diverging)";
  }
  return "?";
}

Rgba8 masked_fill(Colormap m) {
  if (m == Colormap::Greys || m == Colormap::GreysDiv) return Rgba8{120, 30, 30, 255};
  return Rgba8{58, 58, 58, 255};
}

Rgba8 masked_hatch(Colormap m) {
  if (m == Colormap::Greys || m == Colormap::GreysDiv) return Rgba8{220, 120, 120, 255};
  return Rgba8{125, 125, 125, 255};
}

Rgba8 sample(Colormap m, float t) {
  const auto pts = points(m);
  if (!(t >= 0.0f)) t = 0.0f;  // also catches NaN
  if (t > 1.0f) t = 1.0f;
  const float x = t * static_cast<float>(pts.size() - 1);
  const auto i = std::min(static_cast<std::size_t>(x), pts.size() - 2);
  const float f = x - static_cast<float>(i);
  const Rgb& a = pts[i];
  const Rgb& b = pts[i + 1];
  return Rgba8{lerp(a.r, b.r, f), lerp(a.g, b.g, f), lerp(a.b, b.b, f), 255};
}

std::string hex(Rgba8 c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
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

}  // namespace attnscope::figure
