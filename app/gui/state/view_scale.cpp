// view_scale.cpp: token axes and colour scope of a stage on screen.
#include "state/view_scale.hpp"

#include <algorithm>

#include "attnscope/base/stages.hpp"

namespace attnscope::gui {

namespace {
// The stages whose rows are keys' tokens (when the keys have their own list).
bool key_side(std::string_view id) {
  namespace sid = core::stage_id;
  for (std::string_view k : {sid::memory, sid::keys, sid::values, sid::keys_rotated,
                             sid::group_keys, sid::group_values, sid::latent_kv})
    if (id == k) return true;
  return false;
}
}  // namespace

const std::vector<std::string>* row_tokens(const core::Stage& stage, const core::Trace& trace) {
  if (core::is_parameter(stage.id)) return nullptr;
  const auto rows = static_cast<std::size_t>(stage.data().rows());
  if (!trace.key_tokens.empty() && key_side(stage.id) && rows == trace.key_tokens.size())
    return &trace.key_tokens;
  return rows == trace.tokens.size() ? &trace.tokens : nullptr;
}

const std::vector<std::string>* col_tokens(const core::Stage& stage, const core::Trace& trace) {
  if (!core::is_token_by_token(stage.id)) return nullptr;
  const auto cols = static_cast<std::size_t>(stage.data().cols());
  if (!trace.key_tokens.empty())
    return cols == trace.key_tokens.size() ? &trace.key_tokens : nullptr;
  return cols == trace.tokens.size() ? &trace.tokens : nullptr;
}

bool rows_are_tokens(const core::Stage& stage, const core::Trace& trace) {
  return row_tokens(stage, trace) != nullptr;
}

bool cols_are_tokens(const core::Stage& stage, const core::Trace& trace) {
  return col_tokens(stage, trace) != nullptr;
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
