// panels.hpp: one function per panel, each in its own file. A panel draws
// into the current ImGui window/child, reads state.trace, and writes only
// inputs/config (through mark_dirty) or selection and UI state.
#pragma once

#include <functional>
#include <string>

#include "app_state.hpp"
#include "native_dialog.hpp"

namespace attnscope::gui {

// File / View / Help, plus the About and shortcuts windows they open.
void draw_menu_bar(AppState& state);
void draw_menu_popups(AppState& state);

// Variant, d_out, heads, dropout, seed, qkv_bias, training/eval.
void draw_controls_panel(AppState& state);

// Tokens × dimensions table; presets, add/remove, randomize.
void draw_embedding_panel(AppState& state);
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

// Stage strip, explanation, the step's matrices (outputs large, inputs beside).
void draw_stage_panel(AppState& state);

// The current step's per-head matrices as a grid; click to focus a head.
void draw_heads_panel(AppState& state);

// The pinned cell's arithmetic, from core's inspect functions.
void draw_inspector_panel(AppState& state);

// Shared by panels: text in the body font, or its ASCII spelling when the
// font lacks the symbols (see ascii_fallback).
void text_wrapped(const AppState& state, const std::string& text);
std::string display(const AppState& state, const std::string& text);

// A token as a chip: its text with spaces shown as "·", a colour per
// position, the id and byte span on hover; wraps before max_x (a window
// x position). `selected` draws a frame round it. True when clicked.
bool draw_token_chip(const core::Token& t, std::size_t index, float max_x, bool selected = false);

// The Source switch at the top of the left column: the chapter-3 classes,
// the same on typed text, or a trained model.
void draw_source_switch(AppState& state);
// The left column for a model: checkpoint, text and tokens, layer and head,
// view, next tokens, head patterns (model_panel.cpp).
void draw_model_panel(AppState& state);
// Browse... beside the checkpoint path: the desktop's file dialog (`tool`)
// for a checkpoint; when it closes, poll_model_browse opens what was chosen
// (a config.json: its folder) and returns true; false while it is open.
void start_model_browse(AppState& state, DialogTool tool);
bool poll_model_browse(AppState& state);
// The centre for a model: the model view, one head's stepper, or the head
// view; with no model, where to get one (model_view.cpp).
void draw_model_centre(AppState& state);
// The right column beside the model view: the pattern scores of the head
// under the pointer (else the selected one), each with its explanation.
void draw_head_scores(AppState& state);
// The right column beside the head view: the focused token's strongest keys, per head.
void draw_token_focus(AppState& state);

// The pinned-cell outlines a heatmap of `stage` should draw.
struct PinMarks {
  int pin_row = -1, pin_col = -1;
  int mark_row = -1, mark_col = -1;
};
PinMarks pin_marks(const AppState& state, const core::Stage& stage);

}  // namespace attnscope::gui
