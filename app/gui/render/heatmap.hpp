// heatmap.hpp: the CPU side of a heatmap, pure functions over a RowMatrix:
// the colour range, value -> RGBA pixels (one pixel per cell), which labels
// and numbers fit, text contrast. No ImGui and no GL here, so exporters and
// tests can use it off screen.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/matrix.hpp"
#include "render/colormap.hpp"

namespace attnscope::gui {

// How values map to colour.
enum class ScaleKind {
  Sequential,  // 0 .. max: attention weights, masks (non-negative by nature)
  Diverging,   // -a .. 0 .. a centred on 0: scores, Q, K, V, context, ...
};

// The scale kind the app uses for a trace stage id ("weights" -> Sequential).
ScaleKind scale_kind_for(std::string_view stage_id);

// What a matrix holds, for its colour bar.
struct ValueRange {
  float lo = 0.0f, hi = 1.0f;              // the ends of the colour scale
  float data_min = 0.0f, data_max = 0.0f;  // over finite values only
  long finite = 0;                         // number of finite values
  long neg_inf = 0;                        // masked cells (drawn hatched, not on the scale)
  long pos_inf = 0;
  long nan = 0;
  friend bool operator==(const ValueRange&, const ValueRange&) = default;
};

// The range of the finite values. Diverging: symmetric [-a, a] with
// a = max |v| (so 0 sits in the middle). Sequential: [min(0, min), max].
// An empty or constant range is widened so that lo < hi.
ValueRange value_range(const core::RowMatrix& m, ScaleKind kind);

// Where v sits on the scale, in [0, 1] (clamped); only for finite v.
float scale_position(float v, const ValueRange& range);

// The colour of one cell: finite values on the colormap; -inf and +inf get
// masked_fill(map) and NaN kNanFill, colours that are on no scale.
Rgba8 cell_color(float v, const ValueRange& range, Colormap map);

// An image with one RGBA pixel per matrix cell, row 0 = matrix row 0 (top).
struct RgbaImage {
  int width = 0;                     // = matrix cols
  int height = 0;                    // = matrix rows
  std::vector<std::uint8_t> pixels;  // (height, width, 4) row-major RGBA
  Rgba8 at(int x, int y) const;
};

// Colours every cell of m (pure; no GL).
RgbaImage colorize(const core::RowMatrix& m, const ValueRange& range, Colormap map);

// Black or white, whichever contrasts more with bg (WCAG relative luminance).
Rgba8 text_color_on(Rgba8 bg);

// Show every k-th label so that labels `label_px` tall (or wide) never
// overlap on cells `cell_px` apart: the smallest k >= 1 with k * cell >= label.
int label_stride(float cell_px, float label_px);

// How many decimals fit in a cell: 4 (torch's print), 2 when only that fits,
// or 0 meaning "print nothing".
int decimals_that_fit(float cell_w, float cell_h, float width_4dp, float width_2dp, float line_h);

// The number as torch prints it: fixed, `decimals` places ("-0.1234"); -inf
// as "−∞" (or "-inf" when `unicode` is false), NaN as "nan".
std::string format_value(float v, int decimals, bool unicode = true);

// The cells [first, last) of `count` cells `cell` px wide starting at `origin`
// that intersect the clip span [clip_min, clip_max): what to label or hatch.
struct CellSpan {
  int first = 0, last = 0;
  friend bool operator==(const CellSpan&, const CellSpan&) = default;
};
CellSpan visible_cells(float origin, float cell, float clip_min, float clip_max, int count);

}  // namespace attnscope::gui
