// heads_panel.cpp: the current step for every head at once, as small tiles.
// Clicking a tile focuses that head: the large matrices above follow it.
#include <string>

#include "panels/panels.hpp"
#include "platform/fonts.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/widgets.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {

void draw_heads_panel(AppState& state) {
  if (!state.trace || !state.trace->recipe().has(core::BlockPart::Heads)) return;
  const core::Trace& t = *state.trace;
  const std::string_view id = per_head_stage(state.step, t);
  const int heads = t.heads_shown();
  const bool multihead = t.recipe().split_heads;

  ImGui::Text("Heads (%d)", heads);
  ImGui::SameLine();
  if (id.empty()) {
    const char* why = state.step == Step::Inputs ? "Every head reads the same inputs."
                      : state.step == Step::OutProj
                          ? "out_proj mixes the columns of all heads at once; there is one, shared."
                          : "MultiHeadAttention computes Q, K and V once for all heads; the next "
                            "step splits their columns between the heads (the coloured bands).";
    ImGui::TextDisabled("%s", why);
    return;
  }
  const std::string what = state.step == Step::Concat
                               ? "each head's context; side by side they make the matrix above."
                               : stage_name(id) + " of every head; click one to focus it above.";
  ImGui::TextDisabled("%s", display(state, what).c_str());
  if (multihead && state.step == Step::SplitHeads) {
    ImGui::SameLine();
    const int head_dim = t.head_dim();
    if (head_dim == 1)
      ImGui::TextDisabled("(head h owns column h of Q, K and V)");
    else
      ImGui::TextDisabled("(head h owns columns %d·h to %d·h + %d)", head_dim, head_dim,
                          head_dim - 1);
  }

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  // Leave room for the horizontal scrollbar so the tiles never need a vertical one.
  const float side = std::max(
      avail.y - ImGui::GetStyle().ScrollbarSize - ImGui::GetStyle().ItemSpacing.y - 6.0f, 60.0f);
  for (int h = 0; h < heads; ++h) {
    const core::Stage* s = t.find(id, h);
    if (!s) continue;
    if (h > 0) ImGui::SameLine();
    HeatmapSpec spec;
    spec.slot = "head/" + std::to_string(h);
    spec.stage = s;
    spec.compact = true;
    spec.focused = h == state.stage_head();
    spec.title = "head " + std::to_string(h) + "  " + shape_text(s->data());
    const PinMarks m = pin_marks(state, *s);
    spec.pin_row = m.pin_row;
    spec.pin_col = m.pin_col;
    const float aspect =
        static_cast<float>(s->data().cols()) / static_cast<float>(s->data().rows());
    // The cells sit under the title line (draw_heatmap's compact layout): a
    // tile as wide as they are leaves no empty strip inside the focus frame.
    const float cells_h =
        side - ImGui::GetTextLineHeight() - 4.0f * ImGui::GetFontSize() / kBaseFontPx;
    const float w = std::clamp(cells_h * aspect, ImGui::GetFontSize() * 6, side * 1.6f);
    const HeatmapResult r = draw_heatmap(state, spec, ImVec2(w, side));
    if (r.clicked) {
      state.select_head(h);
      // Keep the pinned cell on the same stage, now of the new head.
      if (state.pinned.valid() && state.pinned.head >= 0) state.pinned.head = h;
    }
  }
}

}  // namespace attnscope::gui
