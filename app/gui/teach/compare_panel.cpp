// compare_panel.cpp: pin the current run as A, change anything, and see the
// current run B beside it with B − A for any stage. Numbers: core::compare_stage.
#include <algorithm>

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/base/stages.hpp"
#include "teach/teach.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/widgets.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {

namespace {
std::string describe(const core::Trace& t) {
  if (t.is_model()) return t.model + ", layer " + std::to_string(t.layer);
  std::string s(core::variant_book_name(t.config.variant));
  if (core::has_weights(t.config.variant)) s += ", d_out " + std::to_string(t.config.d_out);
  s += ", seed " + std::to_string(t.config.seed);
  if (core::has_heads(t.config.variant)) s += ", " + std::to_string(t.config.num_heads) + " heads";
  if (core::is_causal(t.config.variant))
    s += ", dropout " + num(static_cast<float>(t.config.dropout), 2);
  if (t.explicit_weights) s += ", edited weights";
  return s;
}
}  // namespace

void draw_compare(AppState& state) {
  TeachState& ts = state.teach;
  if (!begin_learn_window(state.teach, "Compare runs", &ts.show_compare, ImVec2(1000, 560)) ||
      !state.trace) {
    ImGui::End();
    return;
  }
  if (ImGui::Button("Pin the current run as A")) {
    ts.compare_a = state.trace;
    ++ts.compare_pins;
  }
  if (!ts.compare_a) {
    text_wrapped(state,
                 "Pin a run, then change anything (seed 123 → 789, 2 → 4 heads, an "
                 "embedding) and the current run B appears beside it with B − A.");
    ImGui::End();
    return;
  }
  const core::Trace& a = *ts.compare_a;
  const core::Trace& b = *state.trace;
  // The two runs on lines of their own, wrapped: side by side they run past
  // the window's edge.
  text_wrapped(state, "A: " + describe(a));
  text_wrapped(state, "B: " + describe(b));
  // Stages both runs have.
  std::vector<std::pair<std::string, int>> common;
  for (const core::Stage& s : b.stages)
    if (a.find(s.id, s.head)) common.emplace_back(s.id, s.head);
  if (common.empty()) {
    ImGui::TextUnformatted("A and B have no stage in common.");
    ImGui::End();
    return;
  }
  auto label = [](const std::pair<std::string, int>& s) {
    return stage_name(s.first) + (s.second >= 0 ? " · head " + std::to_string(s.second) : "");
  };
  std::pair<std::string, int> cur{ts.compare_stage, ts.compare_head};
  if (std::find(common.begin(), common.end(), cur) == common.end()) cur = common.back();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 18);
  if (ImGui::BeginCombo("stage", display(state, label(cur)).c_str())) {
    for (const auto& s : common)
      if (ImGui::Selectable(display(state, label(s)).c_str(), s == cur)) cur = s;
    ImGui::EndCombo();
  }
  ts.compare_stage = cur.first;
  ts.compare_head = cur.second;
  const auto d = core::compare_stage(a, b, cur.first, cur.second);
  if (!d || !d->same_shape) {
    ImGui::TextUnformatted("The two runs give this stage different shapes: nothing to subtract.");
    ImGui::End();
    return;
  }
  ImGui::TextUnformatted(display(state, "B − A: " + core::difference_caption(d->shown)).c_str());
  const float w = (ImGui::GetContentRegionAvail().x - 20) / 3.0f;
  const ImVec2 box(w, ImGui::GetContentRegionAvail().y - 8);
  const std::string pin = std::to_string(ts.compare_pins);
  teach_heatmap(state, "teach/cmp/a" + pin, cur.first, cur.second,
                a.find(cur.first, cur.second)->data(), "A: " + label(cur), box);
  ImGui::SameLine();
  teach_heatmap(state, "teach/cmp/b", cur.first, cur.second, b.find(cur.first, cur.second)->data(),
                "B: " + label(cur), box);
  ImGui::SameLine();
  // "diff_<stage>": labelled with the stage's tokens, on a signed scale.
  teach_heatmap(state, "teach/cmp/d" + pin, core::difference_id(cur.first), cur.second,
                d->shown.shown, "B − A", box);
  ImGui::End();
}

}  // namespace attnscope::gui
