// softmax_panel.cpp: one row's softmax, unfolded step by step, with a √d_k
// override and the row's entropy. Numbers: core::unfold_softmax.
#include <algorithm>
#include <cmath>

#include "attnscope/analysis/inspect.hpp"
#include "teach/teach.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

// A horizontal bar for a weight in [0, 1].
void weight_bar(float w, float width) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float h = ImGui::GetTextLineHeight();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(p, ImVec2(p.x + width, p.y + h), IM_COL32(60, 60, 70, 255));
  dl->AddRectFilled(p, ImVec2(p.x + width * std::clamp(w, 0.0f, 1.0f), p.y + h),
                    IM_COL32(240, 160, 40, 255));
  ImGui::Dummy(ImVec2(width, h));
}

}  // namespace

// Row selector shared with the normalisation window: a slider over tokens.
void row_selector(AppState& state, int& row) {
  const core::Trace& t = *state.trace;
  row = std::clamp(row, 0, t.num_tokens() - 1);
  const std::string name = t.tokens[static_cast<std::size_t>(row)];
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
  ImGui::SliderInt("query row", &row, 0, t.num_tokens() - 1, name.c_str());
}

void draw_softmax_unfolded(AppState& state) {
  TeachState& ts = state.teach;
  if (!begin_learn_window(state.teach, "Softmax unfolded", &ts.show_softmax, ImVec2(720, 520)) ||
      !state.trace) {
    ImGui::End();
    return;
  }
  const core::Trace& t = *state.trace;
  row_selector(state, ts.softmax_row);
  const float trace_div = core::trace_divisor(t);
  ImGui::TextUnformatted("divide scores by:");
  ImGui::SameLine();
  ImGui::RadioButton(display(state, "√d_k = " + num(trace_div, 4) + " (the module's)").c_str(),
                     &ts.scale_mode, 0);
  ImGui::SameLine();
  ImGui::RadioButton("off (1)", &ts.scale_mode, 1);
  ImGui::SameLine();
  ImGui::RadioButton("custom", &ts.scale_mode, 2);
  if (ts.scale_mode == 2) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    ImGui::SliderFloat("##div", &ts.custom_divisor, 0.1f, 32.0f, "%.3f",
                       ImGuiSliderFlags_Logarithmic);
  }
  std::optional<float> divisor;
  if (ts.scale_mode == 1) divisor = 1.0f;
  if (ts.scale_mode == 2) divisor = std::max(ts.custom_divisor, 1e-3f);
  const auto u = core::unfold_softmax(t, state.head, ts.softmax_row, divisor);
  if (!u) {
    ImGui::TextUnformatted("This variant has no scores.");
    ImGui::End();
    return;
  }
  text_wrapped(state,
               "Read left to right: the raw score ω, divided by " + num(u->divisor, 4) +
                   ", minus the row's largest visible value (" + num(u->row_max, 4) +
                   ") so that exp never overflows, exp, and each exp divided by their sum (" +
                   num(u->sum, 4) + "). Masked keys are −∞ and get exactly 0.");
  if (state.ui.font_mono) ImGui::PushFont(state.ui.font_mono);
  constexpr ImGuiTableFlags kTable =
      ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  if (ImGui::BeginTable("unfold", 8, kTable)) {
    // stage-literals: off (column headings)
    for (const char* h : {"key", "ω", "÷ divisor", "mask", "− max", "exp", "÷ sum", ""})
      // stage-literals: on
      ImGui::TableSetupColumn(display(state, h).c_str());
    ImGui::TableHeadersRow();
    for (std::size_t j = 0; j < u->scores.size(); ++j) {
      ImGui::TableNextRow();
      const bool m = u->masked[j];
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(t.tokens[j].c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(num(u->scores[j]).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(num(u->scaled[j]).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(m ? display(state, "−∞").c_str() : "");
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(m ? display(state, "−∞").c_str() : num(u->shifted[j]).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(num(u->exps[j]).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(num(u->weights[j]).c_str());
      ImGui::TableNextColumn();
      weight_bar(u->weights[j], ImGui::GetFontSize() * 8);
    }
    ImGui::TableNextRow();
    ImGui::TableSetColumnIndex(0);
    ImGui::TextUnformatted("sum");
    ImGui::TableSetColumnIndex(5);
    ImGui::TextUnformatted(num(u->sum).c_str());
    ImGui::TableSetColumnIndex(6);
    float total = 0;
    for (float w : u->weights) total += w;
    ImGui::TextUnformatted(num(total).c_str());
    ImGui::EndTable();
  }
  if (state.ui.font_mono) ImGui::PopFont();
  ImGui::Text("entropy %.4f nats  (0 = all weight on one key, %.4f = all keys equal)",
              static_cast<double>(u->entropy), static_cast<double>(u->max_entropy));
  text_wrapped(state,
               "A smaller divisor stretches the scores apart, so softmax becomes more peaked and "
               "the entropy drops; a larger one flattens the row. √d_k keeps the spread of "
               "q · k about the same whatever the head width.");
  ImGui::End();
}

}  // namespace attnscope::gui
