// view_scale.hpp: what the view settings make of a stage, apart from any
// widget: whether its rows and columns are tokens, and how it is coloured
// (one scale for the matrix, or one per row). The heatmap widget and the
// exports both read these, so an export looks like the screen.
#pragma once

#include "attnscope/base/trace.hpp"
#include "figure/scale.hpp"
#include "state/app_state.hpp"

namespace attnscope::gui {

using figure::ScaleScope;

// True when the stage's rows are tokens (inputs, Q, scores, context, ...).
bool rows_are_tokens(const core::Stage& stage, const core::Trace& trace);
// True when the stage's columns are tokens too (the T×T stages).
bool cols_are_tokens(const core::Stage& stage, const core::Trace& trace);
// The tokens that name a stage's rows (columns), or nullptr when they are
// not tokens. Keys come from a second list when the trace has one:
// cross-attention's second sequence (its M, K and V rows, the scores'
// columns), or a cache step's cached tokens.
const std::vector<std::string>* row_tokens(const core::Stage& stage, const core::Trace& trace);
const std::vector<std::string>* col_tokens(const core::Stage& stage, const core::Trace& trace);

// How `stage` of `trace` is coloured: View > Colour each row on its own scale
// (state.ui.row_scale) resolved for it by figure::scale_scope. Auto colours
// a model's token-by-token matrices row by row at any length, as the model
// view's All heads draws them. Exports use it too, so that they look like
// the screen.
ScaleScope heatmap_scope(const AppState& state, const core::Trace& trace, const core::Stage& stage);
// Whether the token-by-token matrices (scores, weights) are coloured row by
// row now: the View menu's check mark and the step card's checkbox.
bool rows_on_own_scale(const AppState& state);
// The R key, the menu item and the checkbox: the other of what the
// token-by-token matrices show, as an explicit choice (figure::toggled).
void toggle_row_scale(AppState& state);

}  // namespace attnscope::gui
