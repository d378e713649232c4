// head_grid_figure.cpp: layout_head_grid(). Top to bottom: title and
// subtitle, head numbers, then the rows of tiles with "L<n>" on their left
// and the colour bar on the right.
#include "figure/head_grid_figure.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace attnscope::figure {

namespace {

constexpr float kMargin = 12;
constexpr float kTitleSize = 15;
constexpr float kSmallSize = 11;
constexpr float kLeastTile = 48;  // px a tile's side at least

std::vector<int> row_order(const HeadGrid& g, int layer) {
  if (static_cast<std::size_t>(layer) < g.order.size() && !g.order[layer].empty())
    return g.order[layer];
  std::vector<int> all(static_cast<std::size_t>(g.heads));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

// The mosaic's colours: tile (layer, k) at rows [layer * (n + gap), +n) and
// columns [k * (n + gap), +n), gaps in the background colour.
RgbaImage mosaic(const HeadGrid& g, int n, int gap) {
  const Colormap map = sequential_map(g.palette);
  RgbaImage img;
  img.width = g.heads * n + (g.heads - 1) * gap;
  img.height = g.layers * n + (g.layers - 1) * gap;
  const Rgba8 gap_colour = theme_colors(g.theme).background;
  img.pixels.resize(static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height) * 4);
  for (std::size_t k = 0; k < img.pixels.size(); k += 4) {
    img.pixels[k] = gap_colour.r;
    img.pixels[k + 1] = gap_colour.g;
    img.pixels[k + 2] = gap_colour.b;
    img.pixels[k + 3] = gap_colour.a;
  }
  for (int l = 0; l < g.layers; ++l) {
    const std::vector<int> order = row_order(g, l);
    for (int k = 0; k < g.heads; ++k) {
      const core::RowMatrix& m = g.maps[static_cast<std::size_t>(l * g.heads + order[k])];
      const RgbaImage tile =
          colorize(m, value_range(m, ScaleKind::Sequential), ScaleKind::Sequential, g.scope, map);
      for (int r = 0; r < n; ++r) {
        const std::size_t to = (static_cast<std::size_t>(l * (n + gap) + r) * img.width +
                                static_cast<std::size_t>(k * (n + gap))) *
                               4;
        std::copy_n(tile.pixels.begin() + static_cast<std::ptrdiff_t>(r) * n * 4, n * 4,
                    img.pixels.begin() + static_cast<std::ptrdiff_t>(to));
      }
    }
  }
  return img;
}

}  // namespace

void check_head_grid(const HeadGrid& g) {
  if (g.layers < 1 || g.heads < 1)
    throw std::invalid_argument("a head grid needs at least one layer and one head");
  if (g.maps.size() != static_cast<std::size_t>(g.layers) * static_cast<std::size_t>(g.heads))
    throw std::invalid_argument("a head grid needs one map per layer and head");
  const Eigen::Index n = g.maps.front().rows();
  for (const core::RowMatrix& m : g.maps)
    if (m.rows() != n || m.cols() != n || n == 0)
      throw std::invalid_argument("a head grid's maps must be square and of one size");
  for (const std::vector<int>& row : g.order) {
    if (row.empty()) continue;
    std::vector<int> sorted = row;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> all(static_cast<std::size_t>(g.heads));
    std::iota(all.begin(), all.end(), 0);
    if (sorted != all) throw std::invalid_argument("a head grid's order must list every head once");
  }
}

Scene layout_head_grid(const HeadGrid& g, const TextMeasure& measure) {
  check_head_grid(g);
  const int n = static_cast<int>(g.maps.front().rows());
  const int gap = std::max(1, n / 8);
  const float cell = std::max(1.0f, std::ceil(kLeastTile / static_cast<float>(n)));
  const bool ordered = std::any_of(g.order.begin(), g.order.end(),
                                   [](const std::vector<int>& r) { return !r.empty(); });
  const ThemeColors& th = theme_colors(g.theme);
  Scene sc;
  sc.background = th.background;
  sc.title =
      g.subtitle.empty() ? g.title : g.title + (g.unicode ? " \xE2\x80\x94 " : " - ") + g.subtitle;
  sc.range = ValueRange{};
  sc.range.lo = 0.0f;
  sc.range.hi = 1.0f;
  sc.texts.push_back({g.title, kMargin, 20, kTitleSize, th.text, Anchor::Start, 0, true, "title"});
  if (!g.subtitle.empty())
    sc.texts.push_back(
        {g.subtitle, kMargin, 38, kSmallSize, th.dim, Anchor::Start, 0, false, "subtitle"});
  const float left = kMargin + measure("L" + std::to_string(g.layers - 1), kSmallSize) + 8;
  const float top = (g.subtitle.empty() ? 34.0f : 52.0f) + kSmallSize * 1.6f;
  const float tile = cell * static_cast<float>(n), step = cell * static_cast<float>(n + gap);

  CellGrid& grid = sc.grid;
  grid.x = left;
  grid.y = top;
  grid.cell = cell;
  grid.colors = mosaic(g, n, gap);
  grid.marks.assign(static_cast<std::size_t>(grid.colors.width) * grid.colors.height,
                    CellGrid::Value);
  grid.masked_fill = masked_fill(sequential_map(g.palette));
  grid.masked_hatch = masked_hatch(sequential_map(g.palette));
  grid.hatch_spacing = 0;

  for (int l = 0; l < g.layers; ++l) {
    const float y = top + step * static_cast<float>(l);
    sc.texts.push_back({"L" + std::to_string(l), left - 6, y + tile / 2, kSmallSize, th.text,
                        Anchor::End, 0, false, "row-label"});
    if (!ordered) continue;
    const std::vector<int> order = row_order(g, l);
    // Which head each tile is, in its corner: white on a dark plate, as on
    // screen, since a tile's corner can be any colour of the map (the first
    // key of a causal map, its largest weight, is the map's brightest).
    const float size = kSmallSize * 0.8f, cy = y + kSmallSize * 0.6f + 1;
    for (int k = 0; k < g.heads; ++k) {
      const std::string number = std::to_string(order[k]);
      const float x = left + step * static_cast<float>(k) + 2;
      sc.rects.push_back({x - 1,
                          cy - size * 0.65f,
                          measure(number, size) * 1.1f + 3,
                          size * 1.3f,
                          Rgba8{0, 0, 0, 190},
                          false,
                          false,
                          {},
                          "head-label-plate"});
      sc.texts.push_back(
          {number, x, cy, size, Rgba8{255, 255, 255, 255}, Anchor::Start, 0, true, "head-label"});
    }
  }
  if (!ordered)
    for (int k = 0; k < g.heads; ++k)
      sc.texts.push_back({"H" + std::to_string(k), left + step * static_cast<float>(k) + tile / 2,
                          top - kSmallSize * 0.8f, kSmallSize, th.text, Anchor::Middle, 0, false,
                          "col-label"});

  const float grid_w = cell * static_cast<float>(grid.colors.width);
  const float grid_h = cell * static_cast<float>(grid.colors.height);
  const float bar_x = left + grid_w + 16, bar_w = 14,
              bar_h = std::max(std::min(grid_h, 240.0f), 60.0f);
  const Colormap map = sequential_map(g.palette);
  sc.gradients.push_back({bar_x, top, bar_w, bar_h, map, th.frame, "colorbar"});
  const bool rows = g.scope == ScaleScope::Row;
  const std::string hi = rows ? "row max" : "1", lo = rows ? "row min" : "0";
  const float tx = bar_x + bar_w + 5;
  sc.texts.push_back({hi, tx, top + kSmallSize * 0.6f, kSmallSize, th.text, Anchor::Start, 0, false,
                      "bar-label max"});
  sc.texts.push_back({lo, tx, top + bar_h - kSmallSize * 0.6f, kSmallSize, th.text, Anchor::Start,
                      0, false, "bar-label min"});
  const float label_w = std::max(measure(hi, kSmallSize), measure(lo, kSmallSize));
  const float width =
      std::max({tx + label_w + kMargin, 2 * kMargin + measure(g.title, kTitleSize) * 1.08f,
                2 * kMargin + measure(g.subtitle, kSmallSize)});
  sc.width = static_cast<int>(std::ceil(width));
  sc.height = static_cast<int>(std::ceil(top + std::max(grid_h, bar_h) + kMargin));
  return sc;
}

std::vector<std::string> head_grid_strings(const HeadGrid& g) {
  std::vector<std::string> s{g.title, g.subtitle, "row max row min 0 1 L H"};
  for (int k = 0; k < std::max(g.layers, g.heads); ++k) s.push_back(std::to_string(k));
  return s;
}

}  // namespace attnscope::figure
