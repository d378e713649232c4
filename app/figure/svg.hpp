// svg.hpp: a heatmap figure (heatmap_figure.hpp) as a standalone SVG document
// (no fonts embedded): title, token labels on both axes, one
// <rect class="cell"> per matrix entry (class "cell masked" for -inf, "cell
// nan"), numbers in the cells when they fit, "−∞" on masked cells, and a
// colour bar with its range. Texts carry their role as class ("row-label",
// "col-label", "value", "bar-label max", ...).
#pragma once

#include <string>

#include "figure/heatmap_figure.hpp"

namespace attnscope::figure {

// Matrices with more cells than this are refused: an SVG element per cell
// would make files that no viewer opens comfortably.
inline constexpr long long kMaxSvgCells = 512LL * 512LL;

// True when heatmap_svg() can draw a (rows, cols) matrix.
bool svg_supported(int rows, int cols);

// The SVG document of a laid-out figure.
std::string scene_svg(const Scene& scene);

// layout_heatmap (with estimated text widths) + scene_svg; throws
// std::invalid_argument when the heatmap is inconsistent or !svg_supported.
std::string heatmap_svg(const Heatmap& heatmap);

// `s` escaped for XML text and attributes; invalid UTF-8 and control
// characters XML forbids become U+FFFD.
std::string xml_escape(const std::string& s);

}  // namespace attnscope::figure
