// heatmap.hpp: the CPU side of a heatmap. Colour range, value -> RGBA pixels
// and the number format are app/figure's (figure/scale.hpp: shared with the
// exporters, so that exports look like the screen); this header brings them
// into gui and adds what only the on-screen widget needs: which labels fit,
// which cells are visible. No ImGui and no GL here.
#pragma once

#include "figure/scale.hpp"
#include "render/colormap.hpp"

namespace attnscope::gui {

using figure::bar_labels;
using figure::BarLabels;
using figure::cell_color;
using figure::colorize;
using figure::cell_for_text;
using figure::decimals_that_fit;
using figure::widest_number_text;
using figure::format_value;
using figure::holds_mask;
using figure::LegendEntry;
using figure::off_scale_legend;
using figure::RgbaImage;
using figure::row_range;
using figure::scale_kind_for;
using figure::scale_position;
using figure::ScaleKind;
using figure::ScaleScope;
using figure::text_color_on;
using figure::value_range;
using figure::ValueRange;

// Show every k-th label so that labels `label_px` tall (or wide) never
// overlap on cells `cell_px` apart: the smallest k >= 1 with k * cell >= label.
int label_stride(float cell_px, float label_px);

// The cells [first, last) of `count` cells `cell` px wide starting at `origin`
// that intersect the clip span [clip_min, clip_max): what to label or hatch.
struct CellSpan {
  int first = 0, last = 0;
  friend bool operator==(const CellSpan&, const CellSpan&) = default;
};
CellSpan visible_cells(float origin, float cell, float clip_min, float clip_max, int count);

}  // namespace attnscope::gui
