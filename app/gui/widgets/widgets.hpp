// widgets.hpp: small widgets the panels and the Learn windows share: text
// with an ASCII fallback, a token chip, an editable number that stays
// finite, and the pinned-cell marks of a heatmap.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "imgui.h"
#include "state/app_state.hpp"

namespace attnscope::gui {

// Text in the body font, or its ASCII spelling when the
// font lacks the symbols (see ascii_fallback).
void text_wrapped(const AppState& state, const std::string& text);
// The colour of a message that says what went wrong.
inline const ImVec4 kErrorColour(1.0f, 0.42f, 0.42f, 1.0f);
// `text` wrapped in the error colour; nothing when it is empty.
void error_text(const AppState& state, const std::string& text);
std::string display(const AppState& state, const std::string& text);

// A token as a chip: its text with spaces shown as "·", a colour per
// position, the id and byte span on hover; wraps before max_x (a window
// x position). `selected` draws a frame round it. True when clicked.
bool draw_token_chip(const core::Token& t, std::size_t index, float max_x, bool selected = false);

// A token's printable text (core::printable_token) for a label on one line:
// control characters as escapes ("\n", "\t", "\r", "\x1b", ...) and "\" as
// "\\", so that a newline token does not break the line and stays apart from
// the token made of a backslash and an n (shown "\\n"). Ready to draw
// (drawable_text: an emoji as its stand-in where ImWchar is 16-bit).
std::string token_label(std::string_view token);

// The probabilities as percentages ("12.34 %"), all with the same decimals:
// two at least, more until no two different probabilities print alike (at
// most six); those below 0.01 % in powers of ten ("3.2e-07 %"), so that an
// untrained model's near-zero guesses neither print as 0 nor stretch every
// percentage to a dozen decimals.
std::vector<std::string> percent_texts(const std::vector<double>& probabilities);

// One editable number that must stay finite (an embedding or weight cell): a
// DragFloat ("%.4f"; Ctrl+click or double-click types a value). ImGui applies
// typed text as it changes, so typing "1e39" passes through 1 and 1000 before
// it becomes +inf: a value that is not a finite float32 puts back the value
// the cell had when this edit began (kept in `start`, UiState::edit_start),
// and `refused` (left alone otherwise) says why, naming the cell (`name()`)
// and `kind` ("embeddings", "weights"). True when `cell` changed.
bool drag_finite_cell(const char* id, float& cell, float& start, float speed, float lo, float hi,
                      const std::function<std::string()>& name, const char* kind,
                      std::string& refused);

// The pinned-cell outlines a heatmap of `stage` should draw.
struct PinMarks {
  int pin_row = -1, pin_col = -1;
  int mark_row = -1, mark_col = -1;
};
PinMarks pin_marks(const AppState& state, const core::Stage& stage);

}  // namespace attnscope::gui
