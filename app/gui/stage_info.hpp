// stage_info.hpp: the words on screen for each step: a plain explanation, the
// formula, the shapes involved (from the trace), and which matrices the step
// shows large (its outputs) and small (its inputs).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "app_state.hpp"
#include "attnscope/trace.hpp"

namespace attnscope::gui {

struct StepText {
  std::string title;    // "Scaled scores"
  std::string plain;    // two or three sentences in plain words
  std::string formula;  // "ω / √d_k"
  std::string shapes;   // "Q (6×2) · Kᵀ (2×6) → ω (6×6)"
};

// The texts of `step` for this trace; `head` is the focused head.
StepText describe_step(Step step, const core::Trace& trace, int head);

// The matrices a step shows: what it produced, and what it read.
struct StepMatrices {
  std::vector<const core::Stage*> outputs;
  std::vector<const core::Stage*> inputs;
};
StepMatrices step_matrices(Step step, const core::Trace& trace, int head);

// The per-head stage the heads grid shows for a step ("weights"), or "" when
// the step has no per-head matrix in this variant.
std::string_view per_head_stage(Step step, core::Variant variant);

// "6×2"
std::string shape_text(const core::RowMatrix& m);
// The stage's name for people, e.g. "scaled scores" or "Q (queries)".
std::string stage_name(std::string_view id);
// The symbol used in shape lines, e.g. "Q", "ω", "W_query".
std::string stage_symbol(std::string_view id);
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
