// heatmap_figure.cpp: layout_heatmap(). Top to bottom: title, column labels
// (horizontal when they fit their column, else rotated), then the grid with
// row labels on its left and the colour bar (plus −∞ / NaN swatches) on its
// right. Sizes follow the app's heatmap widget (heatmap_view.cpp).
#include "figure/heatmap_figure.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "figure/text_fit.hpp"

namespace attnscope::figure {

namespace {

constexpr float kMargin = 12;
constexpr float kTitleSize = 15;
constexpr float kSmallSize = 11;  // axis names, colour bar labels
constexpr float kMaxLabelWidth = 200;

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

std::size_t char_count(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s)
    if (!continuation(c)) ++n;
  return n;
}

int stride_for(float cell, float need) {
  if (need <= cell) return 1;
  return static_cast<int>(std::ceil(need / cell));
}

}  // namespace

void check_heatmap(const Heatmap& h) {
  if (h.values.size() == 0) throw std::invalid_argument("the heatmap has no cells");
  if (h.row_labels.size() != static_cast<std::size_t>(h.rows()) ||
      h.col_labels.size() != static_cast<std::size_t>(h.cols()))
    throw std::invalid_argument("heatmap labels do not match its shape");
}

float estimate_text_width(std::string_view text, float size) {
  // DejaVu Sans advances: digits and most lower case ~0.6 em, capitals and
  // wide symbols more; 0.62 em per character is a safe average.
  return static_cast<float>(char_count(text)) * size * 0.62f;
}

namespace {

// The sizes and places layout_heatmap computes first, before it adds anything.
struct FigureLayout {
  int rows = 0, cols = 0;
  Colormap map = Colormap::Viridis;
  float cell = 0;                          // a cell's side, px
  float label_size = 0, value_size = 0;    // font sizes of the labels and of the numbers
  float row_label_w = 0, col_label_w = 0;  // the widest labels (capped)
  int row_stride = 1, col_stride = 1;      // every k-th label
  bool cols_flat = false;                  // column labels horizontal, not rotated
  std::string axes;                        // "rows ↓   columns →", or ""
  float left = 0, top = 0;                 // the grid's top-left corner
  float grid_w = 0, grid_h = 0;
};

constexpr float kAngle = -60.0f;  // rotated column labels
constexpr float kSin60 = 0.8660254f;

// Cell size: 64 px when the matrix is small, widened to the widest number
// at the decimals setting (at most 128 px); else what keeps the grid near
// 768 px, never under one pixel. Sets the scene's decimals.
FigureLayout measure_layout(const Heatmap& h, const TextMeasure& measure, Scene& sc) {
  FigureLayout lay;
  lay.rows = h.rows();
  lay.cols = h.cols();
  lay.map = colormap_for(h.palette, h.kind);
  const int side = std::max(lay.rows, lay.cols);
  const float* v = h.values.data();
  // The widest number in cells with d decimals (and "0.0..0" at least).
  auto widest = [&](int d, float size) {
    float w = measure(format_value(0.0f, d, h.unicode), size);
    for (Eigen::Index k = 0; k < h.values.size(); ++k)
      w = std::max(w, measure(format_value(v[k], d, h.unicode), size));
    return w;
  };
  constexpr float kSmallValueSize = 12;  // the numbers' size in cells of 64 px and more
  float cell = side <= 16 ? 64.0f : std::clamp(768.0f / static_cast<float>(side), 1.0f, 64.0f);
  if (side <= 16 && h.show_values)
    cell = std::clamp(cell_for_text(widest(h.decimals, kSmallValueSize)), cell, 128.0f);
  lay.cell = cell;
  lay.label_size = std::clamp(cell * 0.6f, 7.0f, 12.0f);
  lay.value_size = std::clamp(cell * 0.19f, 6.5f, kSmallValueSize);
  const float label_size = lay.label_size, value_size = lay.value_size;

  // Numbers in cells: the decimals setting when the widest fits, else as
  // many as fit, else none. (Cells under 24 px never hold "0.00": big
  // matrices skip the measuring.)
  if (h.show_values && cell >= 24)
    sc.decimals = decimals_that_fit(
        cell, cell, h.decimals, [&](int d) { return widest(d, value_size); }, value_size);

  // Labels: every k-th when they would overlap.
  for (const auto& l : h.row_labels)
    lay.row_label_w = std::max(lay.row_label_w, measure(l, label_size));
  for (const auto& l : h.col_labels)
    lay.col_label_w = std::max(lay.col_label_w, measure(l, label_size));
  lay.row_label_w = std::min(lay.row_label_w, kMaxLabelWidth);
  lay.col_label_w = std::min(lay.col_label_w, kMaxLabelWidth);
  lay.row_stride = stride_for(cell, label_size * 1.25f);
  lay.cols_flat = lay.col_label_w <= cell - 6;
  lay.col_stride = lay.cols_flat ? 1 : stride_for(cell, label_size * 1.3f);

  const std::string down = h.unicode ? " \xE2\x86\x93" : " (rows)";
  const std::string right = h.unicode ? " \xE2\x86\x92" : " (columns)";
  lay.axes = h.row_title.empty()
                 ? (h.col_title.empty() ? "" : h.col_title + right)
                 : (h.col_title.empty() ? h.row_title + down
                                        : h.row_title + down + "   " + h.col_title + right);
  const float axes_w = lay.axes.empty() ? 0 : measure(lay.axes, kSmallSize) + 8;
  lay.left = kMargin + std::max(axes_w, lay.row_label_w + 10);
  const float title_h = h.subtitle.empty() ? 34 : 52;
  const float col_h =
      lay.cols_flat ? label_size * 1.6f + 4 : lay.col_label_w * kSin60 + label_size + 8;
  lay.top = title_h + std::max(col_h, kSmallSize * 1.8f);
  lay.grid_w = cell * static_cast<float>(lay.cols);
  lay.grid_h = cell * static_cast<float>(lay.rows);
  return lay;
}

// Title, subtitle and the axes' names.
void add_titles(Scene& sc, const Heatmap& h, const FigureLayout& lay) {
  const ThemeColors& th = theme_colors(h.theme);
  sc.texts.push_back({h.title, kMargin, 20, kTitleSize, th.text, Anchor::Start, 0, true, "title"});
  if (!h.subtitle.empty())
    sc.texts.push_back(
        {h.subtitle, kMargin, 38, kSmallSize, th.dim, Anchor::Start, 0, false, "subtitle"});
  if (!lay.axes.empty())
    sc.texts.push_back({lay.axes, kMargin, lay.top - kSmallSize * 0.9f, kSmallSize, th.dim,
                        Anchor::Start, 0, false, "axes"});
}

// The grid of coloured cells, with masked and NaN cells marked.
void add_grid(Scene& sc, const Heatmap& h, const FigureLayout& lay) {
  const float* v = h.values.data();
  const float cell = lay.cell;
  CellGrid& g = sc.grid;
  g.x = lay.left;
  g.y = lay.top;
  g.cell = cell;
  g.colors = colorize(h.values, sc.range, h.kind, h.scope, lay.map);
  g.marks.resize(static_cast<std::size_t>(h.values.size()));
  for (Eigen::Index k = 0; k < h.values.size(); ++k)
    g.marks[static_cast<std::size_t>(k)] = std::isnan(v[k])   ? CellGrid::NotANumber
                                           : std::isinf(v[k]) ? CellGrid::Masked
                                                              : CellGrid::Value;
  g.masked_fill = masked_fill(lay.map);
  g.masked_hatch = masked_hatch(lay.map);
  g.hatch_spacing = cell >= 6 ? std::clamp(cell / 2, 4.0f, 9.0f) : 0.0f;
  g.hairlines = cell >= 14;
  g.lines = theme_colors(h.theme).cell_lines;
}

// Numbers in cells, in the text colour that reads on the cell; "−∞" on a
// plate of the masked colour so the hatching does not cross it.
void add_values(Scene& sc, const Heatmap& h, const FigureLayout& lay, const TextMeasure& measure) {
  if (sc.decimals <= 0) return;
  const float cell = lay.cell, value_size = lay.value_size;
  for (int r = 0; r < lay.rows; ++r) {
    const ValueRange cells = h.scope == ScaleScope::Row ? row_range(h.values, r, h.kind) : sc.range;
    for (int c = 0; c < lay.cols; ++c) {
      const float x = h.values(r, c);
      const std::string s = format_value(x, sc.decimals, h.unicode);
      const float cx = lay.left + cell * (static_cast<float>(c) + 0.5f);
      const float cy = lay.top + cell * (static_cast<float>(r) + 0.5f);
      const Rgba8 bg = cell_color(x, cells, lay.map);
      if (std::isinf(x)) {
        const float w = measure(s, value_size) + 6;
        sc.rects.push_back({cx - w / 2,
                            cy - value_size * 0.65f,
                            w,
                            value_size * 1.3f,
                            bg,
                            false,
                            false,
                            {},
                            "value-plate"});
      }
      sc.texts.push_back(
          {s, cx, cy, value_size, text_color_on(bg), Anchor::Middle, 0, false, "value"});
    }
  }
}

// Row labels right-aligned against the grid; column labels centred over
// their column, or rotated to read upwards. Labels are shortened with an
// ellipsis to their room (the ellipsis alone when nothing else fits),
// measured at the label size.
void add_labels(Scene& sc, const Heatmap& h, const FigureLayout& lay, const TextMeasure& measure) {
  const ThemeColors& th = theme_colors(h.theme);
  const float cell = lay.cell, label_size = lay.label_size, left = lay.left, top = lay.top;
  const TextWidth label_width = [&measure, label_size](std::string_view t) {
    return measure(t, label_size);
  };
  auto fit_label = [&](const std::string& text, float max_width) {
    return fit_text(text, max_width, label_width, h.unicode, WhenNothingFits::Ellipsis);
  };
  for (int r = 0; r < lay.rows; r += lay.row_stride)
    sc.texts.push_back({fit_label(h.row_labels[static_cast<std::size_t>(r)], lay.row_label_w),
                        left - 6, top + cell * (static_cast<float>(r) + 0.5f), label_size, th.dim,
                        Anchor::End, 0, false, "row-label"});
  for (int c = 0; c < lay.cols; c += lay.col_stride) {
    const float cx = left + cell * (static_cast<float>(c) + 0.5f);
    const std::string l = fit_label(h.col_labels[static_cast<std::size_t>(c)], lay.col_label_w);
    if (lay.cols_flat)
      sc.texts.push_back({l, cx, top - label_size * 0.9f, label_size, th.dim, Anchor::Middle, 0,
                          false, "col-label"});
    else
      sc.texts.push_back({l, cx, top - label_size * 0.6f, label_size, th.dim, Anchor::Start, kAngle,
                          false, "col-label"});
  }
}

// Colour bar: beside the grid, as tall as it (at least 120 px), with the
// swatches of cells on no scale and the row-scale note under it. Sets the
// scene's width and height.
void add_colour_bar(Scene& sc, const Heatmap& h, const FigureLayout& lay,
                    const TextMeasure& measure) {
  const ThemeColors& th = theme_colors(h.theme);
  const float top = lay.top;
  const float bar_x = lay.left + lay.grid_w + 16, bar_w = 14, bar_h = std::max(lay.grid_h, 120.0f);
  sc.gradients.push_back({bar_x, top, bar_w, bar_h, lay.map, th.frame, "colorbar"});
  const float tx = bar_x + bar_w + 5;
  // The bar's numbers with the cells' decimals (a row scale's ends are words).
  const auto [hi, lo] =
      bar_labels(sc.range, h.kind, h.scope, h.scope == ScaleScope::Row ? kBookDecimals : h.decimals,
                 h.unicode);
  float label_w = std::max(measure(hi, kSmallSize), measure(lo, kSmallSize));
  sc.texts.push_back({hi, tx, top + kSmallSize * 0.6f, kSmallSize, th.text, Anchor::Start, 0, false,
                      "bar-label max"});
  sc.texts.push_back({lo, tx, top + bar_h - kSmallSize * 0.6f, kSmallSize, th.text, Anchor::Start,
                      0, false, "bar-label min"});
  if (h.kind == ScaleKind::Diverging && bar_h >= 4 * kSmallSize) {
    const float y0 = top + bar_h / 2;
    sc.lines.push_back({bar_x - 2, y0, bar_x + bar_w + 2, y0, th.text, 1, "zero"});
    sc.texts.push_back(
        {"0", tx, y0, kSmallSize, th.dim, Anchor::Start, 0, false, "bar-label zero"});
  }
  float bottom = top + std::max(lay.grid_h, bar_h);
  auto swatch = [&](bool hatched, Rgba8 fill, const std::string& text, const std::string& role) {
    const float y = bottom + 8;
    sc.rects.push_back({bar_x, y, 14, 14, fill, hatched, true, th.frame, role});
    sc.texts.push_back({text, bar_x + 14 + 5, y + 7, kSmallSize, th.text, Anchor::Start, 0, false,
                        "bar-label " + role});
    label_w = std::max(label_w, measure(text, kSmallSize));
    bottom = y + 14;
  };
  for (const LegendEntry& e : off_scale_legend(sc.range, h.masks, h.unicode)) {
    if (e.kind == LegendEntry::NotANumber)
      swatch(false, kNanFill, e.text, "nan-swatch");
    else
      swatch(true, masked_fill(lay.map), e.text,
             e.kind == LegendEntry::Masked ? "masked-swatch" : "overflow-swatch");
  }
  if (h.scope == ScaleScope::Row) {
    const float y = bottom + 8 + kSmallSize * 0.6f;
    sc.texts.push_back(
        {kRowScopeNote, bar_x, y, kSmallSize, th.dim, Anchor::Start, 0, false, "bar-label scope"});
    label_w = std::max(label_w, measure(kRowScopeNote, kSmallSize) - (tx - bar_x));
    bottom = y + kSmallSize * 0.6f;
  }

  const float width =
      std::max({tx + label_w + kMargin, 2 * kMargin + measure(h.title, kTitleSize) * 1.08f,  // bold
                2 * kMargin + measure(h.subtitle, kSmallSize)});
  sc.width = static_cast<int>(std::ceil(width));
  sc.height = static_cast<int>(std::ceil(bottom + kMargin));
}

}  // namespace

Scene layout_heatmap(const Heatmap& h, const TextMeasure& measure) {
  check_heatmap(h);
  Scene sc;
  sc.background = theme_colors(h.theme).background;
  sc.title =
      h.subtitle.empty() ? h.title : h.title + (h.unicode ? " \xE2\x80\x94 " : " - ") + h.subtitle;
  sc.range = value_range(h.values, h.kind);
  const FigureLayout lay = measure_layout(h, measure, sc);
  add_titles(sc, h, lay);
  add_grid(sc, h, lay);
  add_values(sc, h, lay, measure);
  add_labels(sc, h, lay, measure);
  add_colour_bar(sc, h, lay, measure);
  return sc;
}

}  // namespace attnscope::figure
