// svg.hpp: a heatmap as a standalone SVG document (no GUI, no fonts to
// embed): title, token labels on both axes, one <rect class="cell"> per
// matrix entry, hatched grey cells for -inf ("−∞"), values printed in the
// cells of small matrices, and a colour bar with the range's min and max.
#pragma once

#include <string>
#include <vector>

#include "figure/colormap.hpp"

namespace attnscope::figure {

// What to draw: a (rows, cols) matrix with its labels.
struct Heatmap {
  std::string title;                    // e.g. "weights, head 0 (causal)"
  std::string row_title, col_title;     // axis names, e.g. "query", "key"; may be empty
  std::vector<std::string> row_labels;  // rows entries (UTF-8)
  std::vector<std::string> col_labels;  // cols entries (UTF-8)
  int rows = 0, cols = 0;
  std::vector<float> values;  // (rows, cols) row-major
  Scale scale = Scale::Diverging;
};

// Matrices with more cells than this are refused: an SVG element per cell
// would make files that no viewer opens comfortably.
inline constexpr long long kMaxSvgCells = 512LL * 512LL;
// Values are printed inside cells when both sides are at most this.
inline constexpr int kMaxValueLabelSide = 16;

// True when heatmap_svg() can draw a (rows, cols) matrix.
bool svg_supported(int rows, int cols);

// The SVG document; throws std::invalid_argument when the heatmap is
// inconsistent (labels or values of the wrong size) or !svg_supported.
std::string heatmap_svg(const Heatmap& heatmap);

// `s` escaped for XML text and attributes; invalid UTF-8 and control
// characters XML forbids become U+FFFD.
std::string xml_escape(const std::string& s);

}  // namespace attnscope::figure
