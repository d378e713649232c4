// view_scale.cpp: token axes and colour scope of a stage on screen.
#include "state/view_scale.hpp"

#include <algorithm>

#include "attnscope/base/stages.hpp"

namespace attnscope::gui {

bool rows_are_tokens(const core::Stage& stage, const core::Trace& trace) {
  return !core::is_parameter(stage.id) && stage.data().rows() == trace.num_tokens();
}

bool cols_are_tokens(const core::Stage& stage, const core::Trace& trace) {
  return core::is_token_by_token(stage.id) && stage.data().cols() == trace.num_tokens();
}

namespace {
// The length Auto decides by: a model's heads are coloured row by row at
// any length, as the All heads view draws every one of them (a head opened
// from there must not turn flat); the chapter-3 classes by their length.
long auto_tokens(const core::Trace& trace) {
  return trace.is_model() ? std::max<long>(trace.num_tokens(), figure::kAutoRowScaleTokens)
                          : trace.num_tokens();
}
// The same for what is on screen: the trace's, or the inputs' while there is none.
long tokens_now(const AppState& state) {
  return state.trace ? auto_tokens(*state.trace) : static_cast<long>(state.inputs.tokens.size());
}
}  // namespace

ScaleScope heatmap_scope(const AppState& state, const core::Trace& trace,
                         const core::Stage& stage) {
  return figure::scale_scope(state.ui.row_scale, cols_are_tokens(stage, trace), auto_tokens(trace));
}

bool rows_on_own_scale(const AppState& state) {
  return figure::scale_scope(state.ui.row_scale, true, tokens_now(state)) == ScaleScope::Row;
}

void toggle_row_scale(AppState& state) {
  state.ui.row_scale = figure::toggled(state.ui.row_scale, tokens_now(state));
}

}  // namespace attnscope::gui
