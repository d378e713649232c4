// ui.hpp: one whole frame of the app's UI, shared by the window (main.cpp)
// and the headless frame tests.
#pragma once

#include "state/app_state.hpp"

namespace attnscope::gui {

// Between ImGui::NewFrame() and ImGui::Render(): the recompute point, the
// keyboard shortcuts, then every panel laid out over the whole display.
void draw_ui(AppState& state);

// Left/Right, Home/End, Escape and Ctrl+Q, unless a text field has focus;
// with a model, PgUp/PgDn (layer), [ ] (head) and G (append the likeliest token).
void handle_shortcuts(AppState& state);

}  // namespace attnscope::gui
