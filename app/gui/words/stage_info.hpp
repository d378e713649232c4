// stage_info.hpp: the words on screen for each step: a plain explanation, the
// formula, the shapes involved (from the trace); names and titles of stages.
// Which matrices a step shows: step.hpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "attnscope/base/trace.hpp"
#include "state/app_state.hpp"
#include "state/step.hpp"

namespace attnscope::gui {

struct StepText {
  std::string title;    // "Scaled scores"
  std::string plain;    // two or three sentences in plain words
  std::string formula;  // "ω / √d_k"
  std::string shapes;   // "Q (6×2) · Kᵀ (2×6) → ω (6×6)"
};

// The texts of `step` for this trace; `head` is the focused head.
StepText describe_step(Step step, const core::Trace& trace, int head);
// The same for a real model's block (trace.model set; model_step_text.cpp).
StepText describe_model_step(Step step, const core::Trace& trace, int head);
// The same for an open family's block (trace.block.family set; family_step_text.cpp).
StepText describe_family_step(Step step, const core::Trace& trace, int head);

// "6×2"
std::string shape_text(const core::RowMatrix& m);

// Whose names the texts use: the book's (Q, ω, Z) or a model block's (Q_h,
// ω, Z_h: the catalogue's model_symbol).
enum class Wording { Book, Model };

// "Q (6×2)": a stage's symbol and its shape, "?" when the trace lacks the
// stage. The symbol is `symbol` when given, else the catalogue's.
std::string sym(const core::Stage* s, std::string_view symbol = {});
// The same with the catalogue's symbol in `wording`.
std::string sym(const core::Stage* s, Wording wording);
// The stage's name for people, e.g. "scaled scores" or "Q (queries)".
std::string stage_name(std::string_view id);
// The symbol used in shape lines, e.g. "Q", "ω", "W_query"; with
// Wording::Model a model block's ("Q_h", "ω_masked") where it has one.
std::string stage_symbol(std::string_view id, Wording wording = Wording::Book);
// "weights (6×6)" or "weights (6×6) · head 1".
std::string stage_title(const core::Stage& stage);
// The shortest name that still tells stages apart: "W_q", "W_k", "b_v", "Q", "ω".
std::string stage_short_symbol(std::string_view id);
// Titles for a heatmap of the stage, widest first, each naming it without
// ambiguity: "W_query (3×2) · head 0", "W_query (3×2) · h0", "W_q (3×2) · h0",
// "W_q · h0". A narrow heatmap shows the first that fits.
std::vector<std::string> stage_titles(const core::Stage& stage);

// Replaces the symbols the built-in ImGui font lacks (−, ∞, √, ᵀ, →, ·, ...)
// with ASCII spellings; used when DejaVu Sans is not installed.
std::string ascii_fallback(std::string_view text);

}  // namespace attnscope::gui
