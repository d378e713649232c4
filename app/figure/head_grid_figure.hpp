// head_grid_figure.hpp: every head of a model as one figure (the app's model
// view exported): a layers x heads mosaic of attention maps, one tile per
// head, with layer and head labels, a title naming the model and the text,
// and a colour bar. Laid out as a Scene, so the SVG painter (svg.hpp) and
// the app's PNG renderer draw it as they draw a heatmap: the tiles are one
// CellGrid whose gaps are cells of the background colour.
#pragma once

#include <string>
#include <vector>

#include "attnscope/base/matrix.hpp"
#include "figure/heatmap_figure.hpp"

namespace attnscope::figure {

struct HeadGrid {
  std::string title;     // e.g. "gpt2: attention of every head"
  std::string subtitle;  // e.g. the text and how the heads are ordered
  int layers = 0, heads = 0;
  // layer-major: maps[layer * heads + head], each square (a head's weights
  // or a thumbnail of them), all of the same size.
  std::vector<core::RowMatrix> maps;
  // order[layer]: the heads in the order the row shows them (empty: 0..heads-1).
  std::vector<std::vector<int>> order;
  Palette palette = Palette::Standard;
  ScaleScope scope = ScaleScope::Row;  // Row: each map row on its own scale (the model view's)
  bool unicode = true;
  Theme theme = kDefaultTheme;  // the colours around the tiles, and of the gaps between them
};

// Throws std::invalid_argument when layers or heads is not positive, maps
// does not hold layers x heads square matrices of one size, or an order row
// is not a permutation of the heads.
void check_head_grid(const HeadGrid& grid);

// The figure: title and subtitle, head numbers above the columns (or above
// each tile when the rows are ordered), "L<n>" left of each row, the mosaic
// (tiles at least 48 px a side), and the colour bar.
Scene layout_head_grid(const HeadGrid& grid, const TextMeasure& measure = estimate_text_width);

// Every string the figure may print (a renderer bakes its glyphs).
std::vector<std::string> head_grid_strings(const HeadGrid& grid);

}  // namespace attnscope::figure
