// scale.hpp: how a matrix's values become colours and cell text, the same on
// screen and in every exported figure: the scale kind of a stage, the value
// range, RGBA pixels (one per cell), and the number format in cells.
// Pure functions over a RowMatrix; no GUI, no GL.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/base/matrix.hpp"
#include "figure/colormap.hpp"

namespace attnscope::figure {

// How values map to colour.
enum class ScaleKind {
  Sequential,  // 0 .. max: attention weights, masks (non-negative by nature)
  Diverging,   // -a .. 0 .. a centred on 0: scores, Q, K, V, context, ...
};

// The scale kind for a trace stage id: Sequential for weights,
// dropped_weights, mask and dropout_mask, else Diverging.
ScaleKind scale_kind_for(std::string_view stage_id);
// The colormap `palette` uses for `kind`.
Colormap colormap_for(Palette palette, ScaleKind kind);

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
// The same over n values from v (one row: row_range).
ValueRange value_range(const float* v, Eigen::Index n, ScaleKind kind);

// What one colour scale spans. Matrix: every cell on the matrix's range, so
// cells compare across the whole matrix. Row: each row on its own range (the
// same rule over that row's values), so the cells of a row compare with one
// another: at T = 1024 the first rows' weights (1, 1/2, ...) set the top of
// a matrix-wide scale and every later row, ~1/T a key, is drawn near its
// bottom; coloured by row, softmax's choice in each row shows.
enum class ScaleScope { Matrix, Row };
// The row-scale setting (View > Colour each row on its own scale, the R key,
// --row-scale / --no-row-scale, the session's "row_scale"). On and Off hold
// for every heatmap. Auto colours the token-by-token matrices (a row per
// query, a column per key: scores, weights, masks) row by row once there are
// kAutoRowScaleTokens tokens, where one shared scale draws almost every
// weight (~1/T) in one flat colour; below that, and for every other matrix,
// Auto is one scale per matrix (the book's T = 6 figures).
enum class RowScale { Auto, On, Off };
inline constexpr long kAutoRowScaleTokens = 128;
// The scope a matrix is coloured with: `token_by_token` says whether its
// rows and columns are the trace's `tokens` tokens.
ScaleScope scale_scope(RowScale setting, bool token_by_token, long tokens);
// What R (or the menu's switch) makes of `setting` with `tokens` tokens: the
// opposite of what the token-by-token matrices show, as an explicit On or Off.
RowScale toggled(RowScale setting, long tokens);
// "auto", "on", "off" (the session's spelling) and back; nullopt when unknown.
std::string_view row_scale_id(RowScale setting);
std::optional<RowScale> parse_row_scale(std::string_view id);

// The range row r of m is coloured on under ScaleScope::Row.
ValueRange row_range(const core::RowMatrix& m, Eigen::Index r, ScaleKind kind);

// Where v sits on the scale, in [0, 1] (clamped; computed in double, so
// values up to float32's limit work); 0 for NaN.
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
// Colours every cell of m on its row's range (row_range): ScaleScope::Row.
RgbaImage colorize_rows(const core::RowMatrix& m, ScaleKind kind, Colormap map);
// colorize for `scope`: on `range` (the matrix's) or row by row.
RgbaImage colorize(const core::RowMatrix& m, const ValueRange& range, ScaleKind kind,
                   ScaleScope scope, Colormap map);

// The number as torch prints it: fixed, `decimals` places ("-0.1234"); -inf
// as "−∞" (or "-inf" when `unicode` is false), +inf "∞", NaN as "nan". A
// value that rounds to zero has no minus sign ("0.00", not "-0.00"), and
// one of kCompactFrom or more in magnitude is compact_value's short form.
std::string format_value(float v, int decimals, bool unicode = true);
// From here on, numbers show in compact form: 31 digits for 1e30 fit no
// cell and no colour bar.
inline constexpr float kCompactFrom = 1e6f;
// v with 3 significant digits in scientific notation, without '+' and
// leading zeros in the exponent: "1e30", "-3.4e38", "1.23e6".
std::string compact_value(float v);

// What the legend under a colour bar lists besides the scale: cells whose
// value is on no scale, each with its swatch. Masked: -inf of the causal
// mask (hatched); Overflow: infinities where float32 overflowed (hatched,
// drawn as the mask's cells are); NotANumber: NaN (kNanFill).
struct LegendEntry {
  enum Kind { Masked, Overflow, NotANumber } kind;
  std::string text;  // "−∞ masked", "±∞ overflow", "nan" (as the cells print it)
};
// The entries for `range`'s counts. `masks`: the stage holds the causal
// mask (holds_mask), so its -inf cells are masked, not overflowed.
std::vector<LegendEntry> off_scale_legend(const ValueRange& range, bool masks, bool unicode = true);
// True for the stages whose -inf cells are the causal mask's by design in
// a causal variant (core::is_causal).
bool holds_mask(std::string_view stage_id);

// The colour bar's end labels (top = hi, bottom = lo). Matrix scope: the
// range's ends with `decimals` places. Row scope, where the ends differ from
// row to row: "row max" over "0" (or "row min" when some value is below 0)
// for sequential scales, "row max" over "−row max" for diverging ones (the
// row's largest |value| and its negative); with fewer than 4 decimals (a
// short bar) "max" over "0" / "min", "max" over "−max".
struct BarLabels {
  std::string hi, lo;
};
BarLabels bar_labels(const ValueRange& range, ScaleKind kind, ScaleScope scope, int decimals,
                     bool unicode = true);
// The note under a colour bar in Row scope, so a figure says how to read it.
inline constexpr const char* kRowScopeNote = "each row on its own scale";
// The notes the app shows beside its colour bar in Row scope, widest first:
// whether the setting is Auto (so the learner knows why the scale changed at
// T >= kAutoRowScaleTokens, or for a model's heads at any length when
// `model`) and that R changes it.
std::vector<std::string> row_scope_notes(RowScale setting, bool unicode = true, bool model = false);

// How many decimals fit in a cell: 4 (torch's print), 2 when only that fits,
// or 0 meaning "print nothing".
int decimals_that_fit(float cell_w, float cell_h, float width_4dp, float width_2dp, float line_h);

// The decimals setting (View > Decimals, --decimals): from 1 to 6; the
// book prints 4.
inline constexpr int kMinDecimals = 1, kMaxDecimals = 6, kBookDecimals = 4;
// The most decimals, at most `wanted`, whose text fits a cell: `text_width(d)`
// is the widest number's width with d decimals; 0 when none fits (or the
// cell is shorter than a line).
int decimals_that_fit(float cell_w, float cell_h, int wanted,
                      const std::function<float(int)>& text_width, float line_h);
// A template of the widest number in [lo, hi] with `decimals` places, for
// measuring: "-00.0000" for a range reaching -12.5 at 4 decimals.
std::string widest_number_text(float lo, float hi, int decimals);
// The side a cell needs to hold `text_w` px of text with air on both sides.
float cell_for_text(float text_w);

}  // namespace attnscope::figure
