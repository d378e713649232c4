// head_split_panel.cpp: Q (T × d_out) → view (T × h × d_head) → transpose
// (h × T × d_head), each head's columns in its colour, the concatenation back,
// W_out as a matrix, and wrapper vs split parameter counts. Numbers:
// core::split_heads, core::count_parameters, the trace's per-head stages.
#include <algorithm>

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/base/stages.hpp"
#include "teach/teach.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

void banded(AppState& state, const std::string& slot, const core::RowMatrix& m,
            const std::string& title, int heads, int width, bool rows, ImVec2 size) {
  const core::Stage stage{core::stage_id::queries, -1, m};
  HeatmapSpec spec;
  spec.slot = slot;
  spec.stage = &stage;
  spec.title = title;
  if (!rows)
    for (int h = 0; h < heads; ++h)
      spec.bands.push_back(
          ColumnBand{h * width, (h + 1) * width, head_color(h), "head " + std::to_string(h)});
  draw_heatmap(state, spec, size);
}

// The height of a box that gives a heatmap of `rows` rows cells of at least
// `cell` px, `overhead` px going to its title, labels and colour bar. With
// d_head 1 or 2 a per-head matrix is a narrow column: sized by the box
// alone, its cells (and the band labels under them) shrink to slivers.
float readable_height(int rows, float cell, float overhead) {
  return static_cast<float>(std::min(rows, 12)) * cell + overhead;
}

}  // namespace

void draw_head_split(AppState& state) {
  if (!begin_learn_window(state.teach, "Head split", &state.teach.show_heads, ImVec2(980, 720)) ||
      !state.trace) {
    ImGui::End();
    return;
  }
  const core::Trace& t = *state.trace;
  const auto s = core::split_heads(t, core::stage_id::queries);
  if (!s) {
    text_wrapped(state,
                 "The split happens in MultiHeadAttention. Switch to it to see Q cut "
                 "into heads (the book's example: d_out 2, 2 heads, seed 123).");
    if (ImGui::Button("Switch to the book's example")) {
      state.config.variant = core::Variant::Multihead;
      state.config.d_out = 2;
      state.config.num_heads = 2;
      state.config.seed = 123;
      state.explicit_parameters.reset();
      state.mark_dirty();
    }
    ImGui::End();
    return;
  }
  const int T = t.num_tokens();
  text_wrapped(
      state, "Q is computed once, " + std::to_string(T) + " × " + std::to_string(s->whole.cols()) +
                 ". .view(b, T, " + std::to_string(s->heads) + ", " + std::to_string(s->head_dim) +
                 ") moves no numbers: it only reads each row as " + std::to_string(s->heads) +
                 " groups of " + std::to_string(s->head_dim) +
                 " columns (the coloured bands). .transpose(1, 2) then stacks the groups "
                 "head by head, so each head is a " +
                 std::to_string(T) + " × " + std::to_string(s->head_dim) + " matrix of its own.");
  const float w = (ImGui::GetContentRegionAvail().x - 20) / 3.0f;
  const float font = ImGui::GetFontSize();
  const float min_cell = font * 2.2f;  // room for a colour, and for "h1" under a band
  const ImVec2 box(w, std::max(w, readable_height(T, min_cell, font * 7.0f)));
  banded(state, "teach/heads/q", s->whole, "Q (T × h·d_head)", s->heads, s->head_dim, false, box);
  ImGui::SameLine();
  // The transposed (h × T × d_head) tensor as h blocks, each outlined and
  // titled in its head's colour (the same colours as the engine's tiles).
  ImGui::BeginChild("##transposed", box, false);
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("transpose(1, 2): h × T × d_head");  // wraps in a narrow window
  ImGui::PopStyleColor();
  const float tile_h = readable_height(T, min_cell, ImGui::GetTextLineHeightWithSpacing() + 8);
  // The blocks scroll inside the child when they do not all fit.
  const float block_h = std::max({(box.y - ImGui::GetCursorPosY()) /  // below the heading
                                          static_cast<float>(s->heads) -
                                      4.0f,
                                  font * 4.0f, tile_h});
  for (int h = 0; h < s->heads; ++h) {
    const core::Stage block{core::stage_id::queries, h, s->transposed.middleRows(h * T, T)};
    HeatmapSpec spec;
    spec.slot = "teach/heads/qt" + std::to_string(h);
    spec.stage = &block;
    spec.compact = true;
    spec.title = "[" + std::to_string(h) + "] head " + std::to_string(h) + ": rows " +
                 std::to_string(h * T) + ".." + std::to_string(h * T + T - 1);
    spec.bands.push_back(ColumnBand{0, s->head_dim, head_color(h), ""});
    draw_heatmap(state, spec, ImVec2(box.x - ImGui::GetStyle().ScrollbarSize, block_h));
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginGroup();
  for (int h = 0; h < s->heads && h < 4; ++h)
    if (const core::Stage* q = t.find(core::stage_id::queries, h)) {
      HeatmapSpec spec;
      spec.slot = "teach/heads/h" + std::to_string(h);
      spec.stage = q;
      spec.compact = true;
      spec.title = "engine's head " + std::to_string(h) + " Q";
      spec.bands.push_back(ColumnBand{0, s->head_dim, head_color(h), ""});
      draw_heatmap(state, spec,
                   ImVec2(w, std::max(w / static_cast<float>(std::min(s->heads, 4)) - 8, tile_h)));
    }
  ImGui::EndGroup();
  text_wrapped(state,
               "Each head attends on its own columns. Their contexts are transposed "
               "back and concatenated (left), then out_proj mixes the heads (right).");
  const float bottom_h = std::max(w * 0.8f, readable_height(T, min_cell, font * 7.0f));
  banded(state, "teach/heads/concat", s->concat, "concat (T × d_out)", s->heads, s->head_dim, false,
         ImVec2(w, bottom_h));
  ImGui::SameLine();
  if (const core::Stage* wo = t.find(core::stage_id::W_out, -1)) {
    HeatmapSpec spec;
    spec.slot = "teach/heads/wout";
    spec.stage = wo;
    draw_heatmap(state, spec, ImVec2(w, bottom_h));
  }
  // The parameter counts under the two matrices, full width: beside them a
  // third column would be clipped in a window that fits the centre area.
  core::Config wrapper = t.config;
  wrapper.variant = core::Variant::MultiheadWrapper;
  const auto split_n = core::count_parameters(t.config, t.d_in);
  const auto wrap_n = core::count_parameters(wrapper, t.d_in);
  wrapper.d_out = s->head_dim;
  const auto wrap_same = core::count_parameters(wrapper, t.d_in);
  ImGui::Text("Split (this module): %lld parameters", split_n.total);
  ImGui::Text("  one %d×%d W_query/W_key/W_value + out_proj", t.d_in, t.config.d_out);
  ImGui::Text("Wrapper, %d heads of d_out %d: %lld", s->heads, t.config.d_out, wrap_n.total);
  ImGui::Text("  output %d wide, no out_proj", s->heads * t.config.d_out);
  ImGui::Text("Wrapper, %d heads of d_out %d: %lld", s->heads, s->head_dim, wrap_same.total);
  ImGui::Text("  same output width, no out_proj");
  ImGui::End();
}

}  // namespace attnscope::gui
