// heatmap_view.hpp: the heatmap widget. Draws one trace stage from a GL
// texture (one texel per cell, nearest filtering) with token labels, numbers
// in cells that are big enough, a colour bar, hatched −∞ cells, a hover
// tooltip, click-to-pin, wheel zoom and drag pan (ImGui's image-viewer
// pattern: an InvisibleButton as hit area, a clip rect, culled overlays).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/base/trace.hpp"
#include "imgui.h"
#include "state/app_state.hpp"
#include "state/view_scale.hpp"

namespace attnscope::gui {

// A coloured group of columns, e.g. the columns head 1 owns.
struct ColumnBand {
  int first = 0, last = 0;  // columns [first, last)
  ImU32 color = 0;
  std::string label;
};

struct HeatmapSpec {
  std::string slot;                    // unique per on-screen heatmap: zoom/pan + texture key
  const core::Stage* stage = nullptr;  // what to draw
  std::string title;                   // empty: stage_title(*stage)
  bool compact = false;                // a tile: title only, no axes, no colour bar, no zoom
  bool focused = false;                // tile border highlight (the focused head)
  std::vector<ColumnBand> bands;       // outlined column groups
  int pin_row = -1, pin_col = -1;      // the pinned cell, outlined
  int mark_row = -1, mark_col = -1;    // a related row / column, outlined faintly
  float title_reserve = 0;             // px kept free after the title (a caller's badge)
  // The scale's kind when not the stage id's (scale_kind_for): a matrix
  // that holds what the id's scale cannot show (negative "weights").
  std::optional<figure::ScaleKind> kind;
  // The stage is the trace's own: a new trace's stage of the same id and
  // head is coloured ahead for this slot (TextureCache::prepare). False for
  // a matrix computed from the trace or held beside it (a Learn window's,
  // a pinned run's), which that stage would wrongly replace.
  bool follows_trace = true;
};

struct HeatmapResult {
  bool hovered = false;
  bool clicked = false;  // a click (not a drag) on a cell
  int row = -1, col = -1;
  ImVec2 title_end{0, 0};  // screen position just after the title text (for a badge)
  ImVec2 cells_min{0, 0}, cells_max{0, 0};  // the part of the box the cells are drawn in
};

// Draws the heatmap in a box of `size` at the cursor and advances the cursor.
HeatmapResult draw_heatmap(AppState& state, const HeatmapSpec& spec, ImVec2 size);

// The width of the widest number of `range` with d decimals in the cells'
// font (decimals_that_fit's text_width), and that font's line height.
std::function<float(int)> number_width(const AppState& state, const ValueRange& range);
float line_h_mono(const AppState& state);

// The titles a heatmap may show, widest first: stage_titles() of its stage,
// or the caller's title and its shorter forms.
std::vector<std::string> heatmap_titles(const HeatmapSpec& spec);
// The first candidate that fits `max_width` px in the current font (ASCII
// spellings without unicode), else the last one shortened with an ellipsis.
std::string pick_title(const std::vector<std::string>& candidates, float max_width, bool unicode);

// The string shortened with an ellipsis to fit `max_width` px in the current
// font, cut between characters (figure::fit_text); "" when not even "…" fits.
std::string fit_text(const std::string& text, float max_width, bool unicode);

// Colours for head bands and head labels, one per head (cycled).
ImU32 head_color(int head, float alpha = 1.0f);

}  // namespace attnscope::gui
