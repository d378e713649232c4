// heatmap.hpp: the CPU side of a heatmap. Colour range, value -> RGBA pixels
// and the number format are app/figure's (figure/scale.hpp: shared with the
// exporters, so that exports look like the screen); this header brings them
// into gui and adds what only the on-screen widget needs: which labels fit,
// which cells are visible. No ImGui and no GL here.
#pragma once

#include <functional>
#include <vector>

#include "figure/scale.hpp"
#include "render/colormap.hpp"

namespace attnscope::gui {

using figure::bar_labels;
using figure::BarLabels;
using figure::cell_color;
using figure::cell_for_text;
using figure::colorize;
using figure::decimals_that_fit;
using figure::format_value;
using figure::holds_mask;
using figure::LegendEntry;
using figure::off_scale_legend;
using figure::RgbaImage;
using figure::row_range;
using figure::RowScale;
using figure::scale_kind_for;
using figure::scale_position;
using figure::scale_scope;
using figure::ScaleKind;
using figure::ScaleScope;
using figure::text_color_on;
using figure::value_range;
using figure::ValueRange;
using figure::widest_number_text;

// Show every k-th label so that labels `label_px` tall (or wide) never
// overlap on cells `cell_px` apart: the smallest k >= 1 with k * cell >= label.
int label_stride(float cell_px, float label_px);

// Where a horizontal colour bar's labels go, in px from the bar's left end:
// `lo` at its left, `hi` at its right, 0 in the middle (diverging). The bar
// grows (up to `max_length`) so that the two ends keep `gap` px apart; when
// even that is too short, `hi` alone is shown. 0 is shown only where it
// keeps that gap from both ends.
struct BarLabelPlaces {
  float length = 0;          // the bar's length: the one asked for, or longer
  float lo_x = 0, hi_x = 0;  // left edges of the end labels
  float zero_x = 0;          // left edge of "0"
  bool lo = true;            // whether `lo` has room
  bool zero = false;         // whether "0" has room
};
BarLabelPlaces place_bar_labels(float length, float max_length, float lo_w, float hi_w,
                                float zero_w, bool diverging, float gap);

// Axis labels along one axis that never overlap: label i is `extent(i)` px
// long (its text's width on the column axis, the line height on the row
// axis); cell i spans origin + [i, i + 1) * cell. Every `stride`-th label of
// [first, last) is tried (first rounded down to a multiple of stride):
// centred on its cell when stride is 1, else starting where its cell starts
// (a label then spans several cells); moved inside [lo, hi] where it sticks
// out; left out when it would come closer than `gap` px to the label placed
// before it (or does not fit in [lo, hi] at all).
struct AxisLabel {
  int index = 0;
  float start = 0;  // where the label's text begins
  friend bool operator==(const AxisLabel&, const AxisLabel&) = default;
};
std::vector<AxisLabel> place_axis_labels(int first, int last, int stride, float origin, float cell,
                                         float lo, float hi, float gap,
                                         const std::function<float(int)>& extent);

// The cells [first, last) of `count` cells `cell` px wide starting at `origin`
// that intersect the clip span [clip_min, clip_max): what to label or hatch.
struct CellSpan {
  int first = 0, last = 0;
  friend bool operator==(const CellSpan&, const CellSpan&) = default;
};
CellSpan visible_cells(float origin, float cell, float clip_min, float clip_max, int count);

}  // namespace attnscope::gui
