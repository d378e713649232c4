// masking_panel.cpp: the book's two ways to mask (zero-then-renormalise and
// −∞-then-softmax), their difference, and the wrong way with its broken rows
// flagged. Numbers: core::compare_masking.
#include <algorithm>

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/base/stages.hpp"
#include "teach/teach.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

void draw_masking(AppState& state) {
  if (!begin_learn_window(state.teach, "Masking two ways", &state.teach.show_masking,
                          ImVec2(900, 620)) ||
      !state.trace) {
    ImGui::End();
    return;
  }
  const core::Trace& t = *state.trace;
  if (t.num_tokens() > 256) {
    ImGui::TextUnformatted("Shown for up to 256 tokens.");
    ImGui::End();
    return;
  }
  const auto m = core::compare_masking(t, state.head);
  if (!m) {
    ImGui::TextUnformatted("This variant has no scores.");
    ImGui::End();
    return;
  }
  text_wrapped(state,
               "Way 1 takes the ordinary softmax, zeroes the future with a lower-triangular "
               "matrix and divides each row by its new sum. Way 2 sets future scores to −∞ before "
               "the softmax. Softmax divides by a sum anyway, so both give the same weights: "
               "their difference is " +
                   core::difference_caption(m->shown) + ".");
  const float w = (ImGui::GetContentRegionAvail().x - 20) / 3.0f;
  const ImVec2 box(w, w * 0.9f);
  const int h = core::stage_head(t, state.head);
  teach_heatmap(state, "teach/mask/renorm", core::stage_id::weights, h, m->renormalised,
                display(state, "way 1: tril · softmax, renormalised"), box);
  ImGui::SameLine();
  teach_heatmap(state, "teach/mask/inf", core::stage_id::weights, h, m->minus_inf,
                display(state, "way 2: softmax of −∞-masked scores"), box);
  ImGui::SameLine();
  // Differences within float32 rounding are drawn as 0: on a ±3e-8 scale
  // they would look like real ones.
  teach_heatmap(state, "teach/mask/diff", core::difference_id(core::stage_id::weights), h,
                m->shown.shown, "way 1 − way 2", box);
  for (const core::BookMatrix& b : core::book_matrices())
    if (b.source == core::BookSource::TrilRenormalise && core::book_applies(b, t))
      book_badge(b, core::check_book(b, &t));
  ImGui::Separator();
  text_wrapped(state,
               "The wrong way: zero the future after the softmax and stop there. The weights "
               "a row loses are not given back, so the rows flagged below sum to less than 1.");
  teach_heatmap(state, "teach/mask/wrong", core::stage_id::weights, h, m->tril_multiplied,
                "wrong: softmax, then zero the future", ImVec2(w, w * 0.9f));
  ImGui::SameLine();
  ImGui::BeginGroup();
  for (std::size_t r = 0; r < m->wrong_row_sums.size() && r < 32; ++r) {
    const bool bad = std::find(m->wrong_rows.begin(), m->wrong_rows.end(), static_cast<int>(r)) !=
                     m->wrong_rows.end();
    const std::string line =
        t.tokens[r] + ": row sum " + num(m->wrong_row_sums[r]) + (bad ? "  ≠ 1" : "  = 1");
    ImGui::TextColored(bad ? ImVec4(1.0f, 0.45f, 0.35f, 1.0f) : ImVec4(0.55f, 0.85f, 0.55f, 1.0f),
                       "%s", display(state, line).c_str());
  }
  ImGui::EndGroup();
  ImGui::End();
}

}  // namespace attnscope::gui
