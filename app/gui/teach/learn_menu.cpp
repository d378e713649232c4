// learn_menu.cpp: the Learn menu, the per-frame dispatch of Learn windows,
// and the "Learn more" links + book badges under the stepper's explanation.
#include "teach/teach.hpp"
#include "widgets/widgets.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {

void draw_learn_menu(AppState& state) {
  TeachState& t = state.teach;
  if (!ImGui::BeginMenu("Learn")) return;
  if (ImGui::MenuItem("Walkthrough of chapter 3", nullptr, t.walk_active)) {
    if (t.walk_active)
      leave_walkthrough(state, true);
    else
      start_walkthrough(state, t.walk_step);
  }
  if (ImGui::MenuItem("Book check", nullptr, t.show_book)) t.show_book = !t.show_book;
  ImGui::Separator();
  ImGui::MenuItem("Softmax unfolded", nullptr, &t.show_softmax);
  ImGui::MenuItem("Normalisation", nullptr, &t.show_normalisation);
  ImGui::MenuItem("Masking", nullptr, &t.show_masking);
  ImGui::MenuItem("Dropout lab", nullptr, &t.show_dropout);
  ImGui::MenuItem("Head split", nullptr, &t.show_heads);
  ImGui::MenuItem("Compare", nullptr, &t.show_compare);
  // A model's counterpart: another checkpoint on the same text (panels/model_compare.cpp).
  if (ImGui::MenuItem("Compare with another checkpoint...", nullptr, state.model.compare.open,
                      state.model_source() && state.model.model))
    state.model.compare.open = !state.model.compare.open;
  ImGui::MenuItem("Weights editor", nullptr, &t.show_weights);
  ImGui::MenuItem("Embedding space", nullptr, &t.show_embedding);
  ImGui::MenuItem("Sizes", nullptr, &t.show_sizes);
  ImGui::Separator();
  ImGui::MenuItem("Rotary positions (RoPE)", nullptr, &t.show_rope);
  ImGui::MenuItem("KV cache, step by step", nullptr, &t.show_kv_cache);
  ImGui::MenuItem("KV-cache memory", nullptr, &t.show_kv_memory);
  ImGui::EndMenu();
}

void draw_learn_windows(AppState& state) {
  TeachState& t = state.teach;
  if (t.show_book) draw_book_check(state);
  if (t.show_softmax) draw_softmax_unfolded(state);
  if (t.show_normalisation) draw_normalisation(state);
  if (t.show_masking) draw_masking(state);
  if (t.show_dropout) draw_dropout_lab(state);
  if (t.show_heads) draw_head_split(state);
  if (t.show_compare) draw_compare(state);
  if (t.show_weights) draw_weights_editor(state);
  if (t.show_embedding) draw_embedding_space(state);
  if (t.show_sizes) draw_sizes(state);
  if (t.show_kv_memory) draw_kv_memory(state);
  if (t.show_kv_cache) draw_kv_cache(state);
  if (t.show_rope) draw_rope(state);
  // The walkthrough panel is part of the right column (ui.cpp).
  // A step chosen this frame is set up now, after everything was drawn with
  // the old trace; the next frame's recompute runs it.
  if (t.walk_apply >= 0) {
    apply_walk_step(state, t.walk_apply);
    t.walk_apply = -1;
  }
}

void draw_stage_learn_links(AppState& state) {
  if (!state.trace) return;
  TeachState& t = state.teach;
  struct Link {
    Step step;
    const char* label;
    bool* open;
  };
  const Link links[] = {
      {Step::Softmax, "Softmax unfolded", &t.show_softmax},
      {Step::Softmax, "Normalisation", &t.show_normalisation},
      {Step::Scaled, "Softmax unfolded", &t.show_softmax},
      {Step::Mask, "Masking two ways", &t.show_masking},
      {Step::Masked, "Masking two ways", &t.show_masking},
      {Step::Dropout, "Dropout lab", &t.show_dropout},
      {Step::SplitHeads, "Head split", &t.show_heads},
      {Step::Concat, "Head split", &t.show_heads},
      {Step::OutProj, "Head split", &t.show_heads},
      {Step::Projections, "Weights editor", &t.show_weights},
      {Step::Inputs, "Embedding space", &t.show_embedding},
  };
  bool first = true;
  for (const Link& l : links) {
    if (l.step != state.step) continue;
    if (first) {
      ImGui::TextDisabled("Learn more:");
      first = false;
    }
    ImGui::SameLine();
    if (ImGui::SmallButton(l.label)) *l.open = true;
  }
  // Book badges for the matrices this step produces.
  const StepMatrices mats = step_matrices(state.step, *state.trace, state.head);
  for (const core::Stage* m : mats.outputs)
    for (const core::BookMatrix* b : core::book_matrices_for_stage(*state.trace, m->id)) {
      book_badge(*b, core::check_book(*b, state.trace.get()));
    }
}

}  // namespace attnscope::gui
