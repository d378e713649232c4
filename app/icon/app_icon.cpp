// app_icon.cpp: the icon's shapes, their SVG, and a small coverage
// rasterizer for its pixels (see app_icon.hpp).
#include "icon/app_icon.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "figure/colormap.hpp"

namespace attnscope::icon {
namespace {

constexpr float kUnits = 256.0f;  // the icon's coordinate range
constexpr int kTokens = 5;

// Each row's attention weights on the tokens up to it (the lower triangle of
// a causal weight matrix; rows sum to 1): the last token spreads its
// attention, the first can look only at itself.
constexpr std::array<std::array<float, kTokens>, kTokens> kWeights{{
    {1.00f, 0, 0, 0, 0},
    {0.40f, 0.60f, 0, 0, 0},
    {0.15f, 0.30f, 0.55f, 0, 0},
    {0.10f, 0.35f, 0.15f, 0.40f, 0},
    {0.30f, 0.10f, 0.20f, 0.10f, 0.30f},
}};

bool inside(const RoundedRect& s, float px, float py) {
  if (px < s.x || py < s.y || px > s.x + s.w || py > s.y + s.h) return false;
  // Distance from the nearest corner's centre when the point is in a corner box.
  const float cx = std::clamp(px, s.x + s.radius, s.x + s.w - s.radius);
  const float cy = std::clamp(py, s.y + s.radius, s.y + s.h - s.radius);
  const float dx = px - cx, dy = py - cy;
  return dx * dx + dy * dy <= s.radius * s.radius;
}

}  // namespace

std::vector<RoundedRect> shapes() {
  std::vector<RoundedRect> out;
  // The tile: the app's dark background colour.
  out.push_back({8, 8, 240, 240, 44, 0x1f, 0x24, 0x30, 255});
  constexpr float kOrigin = 40, kStep = 36, kCell = 32;
  for (int i = 0; i < kTokens; ++i) {
    for (int j = 0; j < kTokens; ++j) {
      RoundedRect cell{kOrigin + kStep * static_cast<float>(j),
                       kOrigin + kStep * static_cast<float>(i), kCell, kCell, 7};
      if (j > i) {
        // The masked future: an empty cell a little lighter than the tile.
        cell.r = 0x33;
        cell.g = 0x3a;
        cell.b = 0x4a;
      } else {
        // Weights are drawn on viridis from 0.15 to 1 so that small weights
        // stay visible against the tile.
        const float t = 0.15f + 0.85f * kWeights[i][j];
        const figure::Rgba8 c = figure::sample(figure::Colormap::Viridis, t);
        cell.r = c.r;
        cell.g = c.g;
        cell.b = c.b;
      }
      out.push_back(cell);
    }
  }
  return out;
}

std::string svg() {
  std::string out =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"256\" height=\"256\" "
      "viewBox=\"0 0 256 256\">\n"
      "  <title>attnscope</title>\n";
  char line[200];
  for (const RoundedRect& s : shapes()) {
    std::snprintf(line, sizeof line,
                  "  <rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" rx=\"%g\" "
                  "fill=\"#%02x%02x%02x\"/>\n",
                  s.x, s.y, s.w, s.h, s.radius, s.r, s.g, s.b);
    out += line;
  }
  out += "</svg>\n";
  return out;
}

std::vector<std::uint8_t> rgba(int size) {
  constexpr int kSub = 8;  // samples per pixel side
  const std::vector<RoundedRect> list = shapes();
  std::vector<std::uint8_t> out(static_cast<std::size_t>(size) * size * 4, 0);
  const float unit = kUnits / static_cast<float>(size);
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      // Sum the colour of the front-most shape under each sample (opaque
      // shapes: the last one that covers a sample wins).
      float r = 0, g = 0, b = 0, covered = 0;
      for (int sy = 0; sy < kSub; ++sy) {
        for (int sx = 0; sx < kSub; ++sx) {
          const float px = (static_cast<float>(x) + (static_cast<float>(sx) + 0.5f) / kSub) * unit;
          const float py = (static_cast<float>(y) + (static_cast<float>(sy) + 0.5f) / kSub) * unit;
          const RoundedRect* top = nullptr;
          for (const RoundedRect& s : list)
            if (inside(s, px, py)) top = &s;
          if (top == nullptr) continue;
          r += top->r;
          g += top->g;
          b += top->b;
          covered += 1;
        }
      }
      std::uint8_t* p = &out[(static_cast<std::size_t>(y) * size + x) * 4];
      if (covered == 0.0f) continue;
      // Straight alpha: the colour is the mean over covered samples.
      p[0] = static_cast<std::uint8_t>(std::lround(r / covered));
      p[1] = static_cast<std::uint8_t>(std::lround(g / covered));
      p[2] = static_cast<std::uint8_t>(std::lround(b / covered));
      p[3] = static_cast<std::uint8_t>(std::lround(255.0f * covered / float{kSub * kSub}));
    }
  }
  return out;
}

}  // namespace attnscope::icon
