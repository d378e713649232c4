// panels.hpp: one function per panel, each in its own file. A panel draws
// into the current ImGui window/child, reads state.trace, and writes only
// inputs/config (through mark_dirty) or selection and UI state.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "platform/native_dialog.hpp"
#include "state/app_state.hpp"

namespace attnscope::gui {

// File / View / Help, plus the About and shortcuts windows they open.
void draw_menu_bar(AppState& state);
void draw_menu_popups(AppState& state);

// Variant, d_out, heads, dropout, seed, qkv_bias, training/eval.
void draw_controls_panel(AppState& state);

// Tokens × dimensions table; presets, add/remove, randomize.
void draw_embedding_panel(AppState& state);

// Stage strip, explanation, the step's matrices (outputs large, inputs beside).
void draw_stage_panel(AppState& state);
// The stage panel (strip, explanation, matrices) with the heads grid below
// it for steps that have a matrix per head: the centre for chapter 3, and a
// model's one-head view.
void draw_stage_area(AppState& state);

// The current step's per-head matrices as a grid; click to focus a head.
void draw_heads_panel(AppState& state);

// The pinned cell's arithmetic, from core's inspect functions.
void draw_inspector_panel(AppState& state);

// The Source switch at the top of the left column: the chapter-3 classes,
// the same on typed text, or a trained model.
void draw_source_switch(AppState& state);
// The left column for a model: checkpoint, text and tokens, layer and head,
// view, next tokens, head patterns (model_panel.cpp).
void draw_model_panel(AppState& state);
// What chapter 5 reads from the run (model_predictions.cpp): the loss under
// the chips, the Sampling section with its Sample button and the Logit lens
// button, and the Logit lens window (while ModelState::lens_open).
void draw_text_loss(AppState& state);
void draw_sampling(AppState& state);
void draw_lens_window(AppState& state);
// Get a model (get_model_window.cpp): the window that fetches a model from
// the Hugging Face Hub; drawn every frame (it polls a pull under way).
void open_get_model_window(AppState& state);
void draw_get_model_window(AppState& state);
// Browse... beside the checkpoint path: the desktop's file dialog (`tool`)
// for a checkpoint; when it closes, poll_model_browse opens what was chosen
// (a config.json: its folder) and returns true; false while it is open.
void start_model_browse(AppState& state, DialogTool tool);
// Where a dialog for a checkpoint starts: the folder of `near`, else the
// first model search folder that exists ("" when none does).
std::string checkpoint_dialog_start(const std::string& near);
// What the desktop's dialog for a checkpoint shows, starting in `start`.
DialogRequest checkpoint_request(const std::string& start);
// The desktop's file dialog for a checkpoint, starting near `near`;
// start_model_browse's and the Compare checkpoints window's.
std::shared_ptr<NativeDialog> open_checkpoint_dialog(AppState& state, DialogTool tool,
                                                     const std::string& near);
bool poll_model_browse(AppState& state);
// The Compare checkpoints window (while ModelState::compare.open): B's
// path, the selected head of A and B side by side with B − A, and every
// head's mean |B − A| as a grid whose cells select a head (model_compare.cpp).
void draw_checkpoint_compare(AppState& state);
// "Layer 1, head 2: mean |B − A| = 0.0123, largest |B − A| = 0.2 at query 5
// "step" → key 0 "Your"": the line above the window's three heatmaps.
std::string describe_head_difference(const core::HeadDifference& d,
                                     const std::vector<std::string>& tokens);
// "Compare with another checkpoint..." in the Model panel: opens that window.
void draw_compare_button(AppState& state);
// The centre for a model: the model view, one head's stepper, or the head
// view; with no model, where to get one (model_view.cpp).
void draw_model_centre(AppState& state);
// The right column beside the model view: the pattern scores of the head
// under the pointer (else the selected one), each with its explanation.
void draw_head_scores(AppState& state);
// The right column beside the head view: the focused token's strongest keys, per head.
void draw_token_focus(AppState& state);

}  // namespace attnscope::gui
