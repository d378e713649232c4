// normalisation_panel.cpp: the book's two normalisations of the same scores,
// division by the sum vs softmax, for the whole scores matrix and the
// selected row. Numbers: core::compare_normalisation.
#include <algorithm>

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/base/stages.hpp"
#include "teach/teach.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

void row_selector(AppState& state, int& row);  // softmax_panel.cpp

void draw_normalisation(AppState& state) {
  TeachState& ts = state.teach;
  if (!begin_learn_window(state.teach, "Normalisation compared", &ts.show_normalisation,
                          ImVec2(900, 720)) ||
      !state.trace) {
    ImGui::End();
    return;
  }
  const core::Trace& t = *state.trace;
  row_selector(state, ts.softmax_row);
  const auto n = core::compare_normalisation(t, state.head);
  if (!n || ts.softmax_row < 0 || ts.softmax_row >= n->scores.rows()) {
    ImGui::TextUnformatted("This variant has no scores.");
    ImGui::End();
    return;
  }
  const int row = ts.softmax_row;
  const int h = core::stage_head(t, state.head);
  // Only the keys the query can see (all of them unless causal).
  const int visible = t.recipe().has(core::BlockPart::Mask) ? row + 1 : t.num_tokens();
  text_wrapped(state,
               "Both turn each row of scores ω into weights that sum to 1. Dividing by the sum "
               "keeps the scores' proportions and breaks when a score is negative or the sum is "
               "near 0; softmax, exp(ω) / Σ exp(ω), is always positive and favours large scores "
               "more. (Unscaled scores here, as in the book's §3.3.1.)");
  // Negative naive weights need a scale with a 0 in the middle: on the
  // weights' own scale (0 up) they would look like small positive ones.
  const bool negative = n->negative_naive > 0;
  if (negative)
    text_wrapped(state, std::to_string(n->negative_naive) +
                            " naive weights are negative here: a negative score (or row sum) "
                            "breaks division by the sum; softmax stays positive. The left map "
                            "is drawn on a scale centred on 0, so the negative weights take "
                            "the colours below its middle.");
  const float w = (ImGui::GetContentRegionAvail().x - 10) / 2.0f;
  const ImVec2 box(w, std::min(w * 0.8f, ImGui::GetFontSize() * 18.0f));
  HeatmapSpec naive_spec;
  const core::Stage naive_stage{core::stage_id::weights, h, n->naive};
  naive_spec.slot = "teach/norm/naive";
  naive_spec.stage = &naive_stage;
  naive_spec.title = "ω / Σω (row by row)";
  naive_spec.pin_row = row;
  if (negative) naive_spec.kind = figure::ScaleKind::Diverging;
  const HeatmapResult rn = draw_heatmap(state, naive_spec, box);
  ImGui::SameLine();
  HeatmapSpec soft_spec;
  const core::Stage soft_stage{core::stage_id::weights, h, n->softmax};
  soft_spec.slot = "teach/norm/soft";
  soft_spec.stage = &soft_stage;
  soft_spec.title = "softmax(ω)";
  soft_spec.pin_row = row;
  const HeatmapResult rs = draw_heatmap(state, soft_spec, box);
  // A click on either picks the row for the table below.
  if (rn.clicked) ts.softmax_row = rn.row;
  if (rs.clicked) ts.softmax_row = rs.row;
  ImGui::Text("Row %d (%s):", row, t.tokens[static_cast<std::size_t>(row)].c_str());
  if (state.ui.font_mono) ImGui::PushFont(state.ui.font_mono);
  if (ImGui::BeginTable(
          "norm", 4,
          ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit)) {
    for (const char* c : {"key", "ω", "ω / Σω", "softmax(ω)"})
      ImGui::TableSetupColumn(display(state, c).c_str());
    ImGui::TableHeadersRow();
    for (int j = 0; j < visible; ++j) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(t.tokens[static_cast<std::size_t>(j)].c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(num(n->scores(row, j)).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(num(n->naive(row, j)).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(num(n->softmax(row, j)).c_str());
    }
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted("sum");
    ImGui::TableNextColumn();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(num(n->naive_row_sums[static_cast<std::size_t>(row)]).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(num(n->softmax_row_sums[static_cast<std::size_t>(row)]).c_str());
    ImGui::EndTable();
  }
  if (state.ui.font_mono) ImGui::PopFont();
  for (const core::BookMatrix& b : core::book_matrices())
    if ((b.source == core::BookSource::NaiveNormalise ||
         (b.name == "attn_weights_2" && b.run.variant == core::Variant::Simple)) &&
        core::book_applies(b, t))
      book_badge(b, core::check_book(b, &t));
  ImGui::End();
}

}  // namespace attnscope::gui
