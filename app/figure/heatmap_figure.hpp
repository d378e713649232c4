// heatmap_figure.hpp: one heatmap as a figure, laid out once and drawn by
// two painters: svg.hpp (vector, for the CLI and the app's SVG export) and
// the app's off-screen PNG renderer (app/gui/render/figure_renderer.hpp).
// A figure looks like the app's heatmap: title, axis names, token labels on
// both axes, cells in the app's colours (figure/scale.hpp), numbers in cells
// when they are shown on screen and fit (the decimals setting, else fewer;
// small matrices get cells as wide as that text needs), hatched −∞
// cells, and a colour bar with its range (and 0 for diverging scales);
// around the cells, the colours of a theme (figure/theme.hpp).
//
// Coordinates are logical pixels at scale 1, y down; a painter at scale N
// multiplies them by N, so a PNG at N× is exactly N × (width, height).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/base/matrix.hpp"
#include "figure/colormap.hpp"
#include "figure/scale.hpp"
#include "figure/theme.hpp"

namespace attnscope::figure {

// What to draw: a (rows, cols) matrix with its labels and how it is shown.
struct Heatmap {
  std::string title;                    // e.g. "attention weights, head 0"
  std::string subtitle;                 // the run, e.g. "CausalAttention (causal), seed 123"
  std::string row_title, col_title;     // axis names, e.g. "query", "key"; may be empty
  std::vector<std::string> row_labels;  // rows entries (UTF-8)
  std::vector<std::string> col_labels;  // cols entries (UTF-8)
  core::RowMatrix values;               // (rows, cols)
  ScaleKind kind = ScaleKind::Diverging;
  Palette palette = Palette::Standard;
  bool show_values = true;       // numbers in cells (when they fit), as View > Numbers in cells
  int decimals = kBookDecimals;  // places in cells (View > Decimals); fewer where they do not fit
  ScaleScope scope = ScaleScope::Matrix;  // Row: as View > Colour each row on its own scale
  bool unicode = true;  // "−∞", "↓", "…"; false: ASCII spellings (fonts without them)
  bool masks = true;    // -inf cells are the causal mask's ("−∞ masked"); false: overflow
  Theme theme = kDefaultTheme;  // the colours around the cells (figure/theme.hpp)
  int rows() const { return static_cast<int>(values.rows()); }
  int cols() const { return static_cast<int>(values.cols()); }
};

// Throws std::invalid_argument when labels do not match the matrix's shape
// or the matrix is empty.
void check_heatmap(const Heatmap& heatmap);

// ---------------------------------------------------------------------------
// The laid-out figure: primitives in drawing order (background, grid, rects,
// gradients, lines, texts), each text and rect tagged with a role that the
// SVG painter writes as its class.

enum class Anchor { Start, Middle, End };

struct TextItem {
  std::string text;    // UTF-8
  float x = 0, y = 0;  // the anchor point; y is the vertical centre of the line
  float size = 12;     // font size (px at scale 1)
  Rgba8 color;
  Anchor anchor = Anchor::Start;
  float angle = 0;  // degrees, clockwise (SVG's rotate), about (x, y)
  bool bold = false;
  std::string role;  // "title", "axes", "row-label", "col-label", "value", "bar-label", ...
};

struct RectItem {
  float x = 0, y = 0, w = 0, h = 0;
  Rgba8 fill;
  bool hatched = false;  // drawn like a masked cell (fill + diagonal hatch lines)
  bool outlined = false;
  Rgba8 stroke;
  std::string role;  // "value-plate", "masked-swatch", "nan-swatch"
};

struct LineItem {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  Rgba8 color;
  float width = 1;
  std::string role;
};

// A vertical colour bar: the colormap from t = 0 (bottom) to t = 1 (top).
struct GradientItem {
  float x = 0, y = 0, w = 0, h = 0;
  Colormap map = Colormap::Viridis;
  Rgba8 frame;
  std::string role;  // "colorbar"
};

// The cells: one colour per matrix entry and which ones are masked/NaN.
struct CellGrid {
  float x = 0, y = 0;  // top-left corner
  float cell = 0;      // side of one square cell
  RgbaImage colors;    // (rows, cols) RGBA, figure::colorize
  enum Mark : std::uint8_t { Value = 0, Masked = 1, NotANumber = 2 };
  std::vector<std::uint8_t> marks;  // (rows, cols) Mark per cell (±inf: Masked)
  Rgba8 masked_fill, masked_hatch;  // the hatching of masked cells
  float hatch_spacing = 6;          // px between hatch lines (0: no hatching, cells too small)
  bool hairlines = false;           // thin lines between cells (big cells, as on screen)
  Rgba8 lines;                      // ... in the theme's colour (translucent)
  int rows() const { return colors.height; }
  int cols() const { return colors.width; }
};

struct Scene {
  int width = 0, height = 0;             // logical px at scale 1 (whole numbers)
  Rgba8 background{255, 255, 255, 255};  // the theme's
  std::string title;                     // the document title (SVG <title>): title — subtitle
  CellGrid grid;
  std::vector<RectItem> rects;
  std::vector<GradientItem> gradients;
  std::vector<LineItem> lines;
  std::vector<TextItem> texts;
  ValueRange range;  // the colour bar's range
  int decimals = 0;  // decimals printed in cells (0: none)
};

// Width in px of `text` at font size `size`; a painter passes its font's
// metrics. estimate_text_width is a font-free stand-in (DejaVu Sans-like
// advances) for painters that cannot measure (SVG).
using TextMeasure = std::function<float(std::string_view text, float size)>;
float estimate_text_width(std::string_view text, float size);

// Lays the heatmap out; throws std::invalid_argument as check_heatmap.
Scene layout_heatmap(const Heatmap& heatmap, const TextMeasure& measure = estimate_text_width);

}  // namespace attnscope::figure
