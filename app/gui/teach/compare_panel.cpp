// compare_panel.cpp: pin the current run as A, change anything, and see the
// current run B beside it with B − A for any stage. Numbers: core::compare_stage.
#include <algorithm>
#include <string>

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/text/tokenizer.hpp"
#include "teach/teach.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/widgets.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {

namespace {

// The run's settings: a seed only where one makes something (weights; the
// dropout mask is drawn after them).
std::string describe(const core::Trace& t) {
  if (t.is_model()) return t.model + ", layer " + std::to_string(t.layer);
  std::string s(core::variant_book_name(t.config.variant));
  if (core::has_weights(t.config.variant)) {
    s += ", d_out " + std::to_string(t.config.d_out);
    s += ", seed " + std::to_string(t.config.seed);
  }
  if (core::has_heads(t.config.variant)) s += ", " + std::to_string(t.config.num_heads) + " heads";
  if (core::is_causal(t.config.variant))
    s += ", dropout " + num(static_cast<float>(t.config.dropout), 2);
  if (t.explicit_weights) s += ", edited weights";
  return s;
}

// The text's first 40 bytes in quotes ("..." after them when there are more;
// a character cut there shows as U+FFFD).
std::string quoted_start(const std::string& text) {
  constexpr std::size_t kBytes = 40;
  if (text.size() <= kBytes) return "\"" + text + "\"";
  return "\"" + core::decode_utf8_replace(text.substr(0, kBytes)) + "...\"";
}

// What made the inputs of the run on screen: a model's text, or the
// chapter-3 inputs' origin.
std::string describe_inputs(const AppState& state) {
  if (state.model_source()) return {};  // a model's text is in its trace (describe_text)
  switch (state.origin) {
    case InputOrigin::Preset:
      return "inputs: preset " + state.preset;
    case InputOrigin::Random:
      return "inputs: random, seed " + std::to_string(state.input_seed);
    case InputOrigin::Imported:
      return "inputs: imported";
    case InputOrigin::Edited:
      return "inputs: edited by hand";
    case InputOrigin::Text:
      return "inputs: typed text " + quoted_start(state.text_source.typed.text);
  }
  return {};
}

// A model run's text.
std::string describe_text(const core::Trace& t) { return "text " + quoted_start(t.text); }

// What differs between two runs whose descriptions read the same.
std::string what_differs(const core::Trace& a, const core::Trace& b) {
  const core::Stage* ia = a.find(a.block_input_key());
  const core::Stage* ib = b.find(b.block_input_key());
  if (a.tokens != b.tokens || !ia || !ib || ia->data().rows() != ib->data().rows() ||
      ia->data().cols() != ib->data().cols() || ia->data() != ib->data())
    return "inputs changed since A";
  return "the same settings and inputs as A";
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
    ts.compare_a_inputs = describe_inputs(state);
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
  // Each names its settings and what made its inputs, so that runs that
  // differ in their inputs only read differently too.
  auto full = [](const core::Trace& t, const std::string& inputs) {
    std::string s = describe(t);
    if (t.is_model()) return s + ", " + describe_text(t);
    return inputs.empty() ? s : s + "; " + inputs;
  };
  const std::string la = full(a, ts.compare_a_inputs);
  std::string lb = full(b, describe_inputs(state));
  if (lb == la) lb += " (" + what_differs(a, b) + ")";
  text_wrapped(state, "A: " + la);
  text_wrapped(state, "B: " + lb);
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
