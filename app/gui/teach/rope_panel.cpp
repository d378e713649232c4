// rope_panel.cpp: rotary position embeddings (RoPE) as llama3.py and
// qwen3.py compute them: the angle every dimension pair turns at every
// position, and the proof by example that rotated scores depend only on
// how far apart two tokens are: the run's queries and keys rotated at
// positions 0.. and again at c.., the same scores to float precision.
// Numbers: core::modern::compute_rope_params and apply_rope.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/attention/modern.hpp"
#include "attnscope/base/stages.hpp"
#include "teach/teach.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

namespace modern = core::modern;

constexpr int kMaxPositions = 256;

// Blue (-1) through white (0) to red (1).
ImU32 diverging(float v) {
  const float a = std::clamp(std::abs(v), 0.0f, 1.0f);
  const auto fade = [&](float full) { return static_cast<int>(255.0f - (255.0f - full) * a); };
  return v < 0 ? IM_COL32(fade(40), fade(90), fade(200), 255)
               : IM_COL32(fade(200), fade(40), fade(40), 255);
}

// cos(angle) of every (position, pair) as cells, the angle on hover.
void angle_grid(const modern::RopeTables& r, int positions) {
  const int pairs = static_cast<int>(r.inv_freq.cols());
  const float font = ImGui::GetFontSize();
  const float avail = ImGui::GetContentRegionAvail().x - font * 3;
  const float cell = std::clamp(avail / static_cast<float>(pairs), 2.0f, font * 3.0f);
  const float cell_h = std::clamp(font * 16 / static_cast<float>(positions), 2.0f, font * 1.2f);
  const ImVec2 o = ImGui::GetCursorScreenPos();
  const ImVec2 p0(o.x + font * 3, o.y + font);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  dl->AddText(ImVec2(p0.x, o.y), text, "pair i = 0 (fastest) ...");
  dl->AddText(ImVec2(o.x, p0.y), text, "pos");
  for (int p = 0; p < positions; ++p)
    for (int i = 0; i < pairs; ++i) {
      const ImVec2 a(p0.x + cell * static_cast<float>(i), p0.y + cell_h * static_cast<float>(p));
      dl->AddRectFilled(a, ImVec2(a.x + cell, a.y + cell_h), diverging(r.cos(p, i)));
    }
  ImGui::InvisibleButton("rope_angles", ImVec2(font * 3 + cell * static_cast<float>(pairs),
                                               font + cell_h * static_cast<float>(positions)));
  if (!ImGui::IsItemHovered()) return;
  const ImVec2 m = ImGui::GetIO().MousePos;
  const int i = static_cast<int>((m.x - p0.x) / cell), p = static_cast<int>((m.y - p0.y) / cell_h);
  if (i < 0 || i >= pairs || p < 0 || p >= positions) return;
  const double angle = static_cast<double>(p) * static_cast<double>(r.inv_freq(0, i));
  ImGui::SetTooltip(
      "position %d, pair %d (dims %d and %d)\nangle = %d × %.6g = %.4f rad\n"
      "cos %.4f   sin %.4f",
      p, i, i, i + pairs, p, static_cast<double>(r.inv_freq(0, i)), angle,
      static_cast<double>(r.cos(p, i)), static_cast<double>(r.sin(p, i)));
}

// The run's queries and keys of `head` (the whole projection for the
// single-head classes); nullptr when the variant has none.
const core::Stage* run_stage(const core::Trace& t, std::string_view id, int head) {
  if (const core::Stage* s = t.find(id, head)) return s;
  return t.find(id, -1);
}

void shift_demo(AppState& state) {
  TeachState& t = state.teach;
  const core::Trace& tr = *state.trace;
  const int head = core::stage_head(tr, state.head);
  const core::Stage* q = run_stage(tr, core::stage_id::queries, head);
  const core::Stage* k = run_stage(tr, core::stage_id::keys, head);
  if (!q || !k || q->data().cols() % 2 != 0 || q->data().cols() != k->data().cols()) {
    text_wrapped(state,
                 "The shift test rotates this run's queries and keys: pick a class with "
                 "W_query and W_key and an even number of columns per head (d_out = 2, 4, ...).");
    return;
  }
  const core::RowMatrix& Q = q->data();
  const core::RowMatrix& K = k->data();
  const int T = static_cast<int>(Q.rows());
  if (T > kMaxPositions) {  // two T x T products a frame: keep the window light
    ImGui::Text("The shift test is shown for up to %d tokens (this run has %d).", kMaxPositions, T);
    return;
  }
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
  ImGui::SliderInt("shift c", &t.rope_shift, 0, 4096);
  const modern::RopeTables r =
      modern::compute_rope_params(static_cast<int>(Q.cols()), t.rope_theta, T + t.rope_shift);
  const core::RowMatrix at0 = modern::apply_rope(Q, r) * modern::apply_rope(K, r).transpose();
  const core::RowMatrix atc =
      modern::apply_rope(Q, r, t.rope_shift) * modern::apply_rope(K, r, t.rope_shift).transpose();
  const float diff = (at0 - atc).cwiseAbs().maxCoeff();  // as rope_shift_max_diff measures it
  text_wrapped(state, "This run's queries and keys (head " + std::to_string(head) +
                          "), rotated with the tokens at positions 0.." + std::to_string(T - 1) +
                          " and again at " + std::to_string(t.rope_shift) + ".." +
                          std::to_string(t.rope_shift + T - 1) +
                          ": every score q_i · k_j is the same, because turning both by the "
                          "same extra angle leaves the angle between them alone.");
  char line[160];
  std::snprintf(line, sizeof line,
                "largest |difference| %.3g: float32 rounding of the angles, which grow with c",
                static_cast<double>(diff));
  ImGui::TextColored(diff <= 1e-4f ? ImVec4(0.45f, 0.85f, 0.5f, 1.0f) : kErrorColour, "%s", line);
  const float w = (ImGui::GetContentRegionAvail().x - 12) / 2.0f;
  teach_heatmap(state, "teach/rope/at0", core::stage_id::scores, head, at0,
                "scores, positions from 0", ImVec2(w, w * 0.8f));
  ImGui::SameLine();
  teach_heatmap(state, "teach/rope/atc", core::stage_id::scores, head, atc,
                "scores, positions from c", ImVec2(w, w * 0.8f));
}

}  // namespace

void draw_rope(AppState& state) {
  TeachState& t = state.teach;
  if (!begin_learn_window(t, "Rotary positions (RoPE)", &t.show_rope, ImVec2(760, 860)) ||
      !state.trace) {
    ImGui::End();
    return;
  }
  text_wrapped(state,
               "RoPE adds no vector to the embeddings. Before the scores, it turns each pair "
               "of a query's (and a key's) dimensions, i and i + head_dim/2, by an angle: the "
               "token's position times the pair's frequency 1 / theta^(2i / head_dim). The first "
               "pairs turn fast, the last ones slowly. Values are not turned.");
  const float font = ImGui::GetFontSize();
  ImGui::SetNextItemWidth(font * 8);
  ImGui::InputInt("head_dim", &t.rope_head_dim, 2, 16);
  t.rope_head_dim = std::clamp(t.rope_head_dim + t.rope_head_dim % 2, 2, 256);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 8);
  ImGui::InputInt("positions", &t.rope_positions, 1, 16);
  t.rope_positions = std::clamp(t.rope_positions, 1, kMaxPositions);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 10);
  ImGui::InputDouble("theta", &t.rope_theta, 0, 0, "%.0f");
  t.rope_theta = std::clamp(t.rope_theta, 2.0, 1e9);
  const modern::RopeTables r =
      modern::compute_rope_params(t.rope_head_dim, t.rope_theta, t.rope_positions);
  ImGui::TextDisabled("cos of each angle (red +1, white 0, blue −1); hover a cell for its angle");
  angle_grid(r, t.rope_positions);
  ImGui::Separator();
  shift_demo(state);
  ImGui::End();
}

}  // namespace attnscope::gui
