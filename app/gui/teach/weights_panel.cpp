// weights_panel.cpp: W_query / W_key / W_value (and W_out), with their biases
// (b_query/b_key/b_value when qkv_bias, b_out), every cell editable like the
// embeddings. Edits go into AppState::explicit_parameters (the engine runs
// them through core::run_with_explicit_parameters); "reset to seeded" clears it.
#include <algorithm>
#include <string>
#include <utility>

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/book/teach.hpp"
#include "teach/teach.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

// An editable grid of one matrix, every cell of it, in a scrolling box of at
// most ten rows: only the rows (ImGuiListClipper) and columns in view get a
// widget, so a 768 × 768 W_out costs what ten rows of it do. True when a
// value changed. A typed value that is not a finite float32 is refused
// (drag_finite_cell, which keeps the value an edit began with in `start`)
// and `refused` says why.
bool edit_matrix(const char* id, core::RowMatrix& m, std::string& refused, float& start) {
  bool changed = false;
  const ImGuiStyle& style = ImGui::GetStyle();
  const float font = ImGui::GetFontSize();
  const float label_w = font * 2.6f;
  const float cell_w = font * 4.2f;
  const float pitch = cell_w + style.ItemSpacing.x;
  const float row_h = ImGui::GetFrameHeightWithSpacing();
  const int rows = static_cast<int>(m.rows()), cols = static_cast<int>(m.cols());
  const float content_w = label_w + static_cast<float>(cols) * pitch;
  const float h = static_cast<float>(std::min(rows, 10)) * row_h + style.WindowPadding.y * 2 +
                  (content_w > ImGui::GetContentRegionAvail().x ? style.ScrollbarSize : 0.0f);
  ImGui::PushID(id);
  ImGui::BeginChild("##grid", ImVec2(0, h), true, ImGuiWindowFlags_HorizontalScrollbar);
  const float scroll_x = ImGui::GetScrollX();
  const float view_w = ImGui::GetWindowWidth();
  const int c0 = std::clamp(static_cast<int>((scroll_x - label_w) / pitch), 0, cols);
  const int c1 = std::clamp(c0 + static_cast<int>(view_w / pitch) + 2, 0, cols);
  ImGuiListClipper clipper;
  clipper.Begin(rows, row_h);
  while (clipper.Step()) {
    for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
      ImGui::AlignTextToFramePadding();
      ImGui::TextDisabled("%d", r);
      for (int c = c0; c < c1; ++c) {
        ImGui::SameLine(label_w + static_cast<float>(c) * pitch);
        ImGui::PushID(r * cols + c);
        ImGui::SetNextItemWidth(cell_w);
        const auto name = [&] {
          return std::string(id) + "[" + std::to_string(r) + ", " + std::to_string(c) + "]";
        };
        changed |=
            // stage-literals: off (a word for messages)
            drag_finite_cell("##v", m(r, c), start, 0.01f, -10.0f, 10.0f, name, "weights", refused);
        // stage-literals: on
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("[%d, %d]", r, c);
        ImGui::PopID();
      }
      // The full width, so that the horizontal scrollbar spans every column.
      ImGui::SameLine(content_w);
      ImGui::Dummy(ImVec2(1, 1));
    }
  }
  ImGui::EndChild();
  ImGui::PopID();
  return changed;
}

// A matrix's editor under its name and shape.
bool edit_named(const char* name, const char* what, core::RowMatrix& m, std::string& refused,
                float& start) {
  ImGui::Text("%s (%d × %d)%s%s", name, static_cast<int>(m.rows()), static_cast<int>(m.cols()),
              *what ? ": " : "", what);
  return edit_matrix(name, m, refused, start);
}

}  // namespace

void draw_weights_editor(AppState& state) {
  if (!begin_learn_window(state.teach, "Weights editor", &state.teach.show_weights,
                          ImVec2(560, 600)) ||
      !state.trace) {
    ImGui::End();
    return;
  }
  const core::Trace& t = *state.trace;
  if (t.is_model()) {  // its weights are the checkpoint's
    text_wrapped(state,
                 "This editor changes the weights of the book's chapter-3 classes; a trained "
                 "model's come from its checkpoint. Switch the source to the chapter 3 classes.");
    ImGui::End();
    return;
  }
  auto base = state.explicit_parameters
                  ? std::optional<core::Parameters>(*state.explicit_parameters)
                  : core::parameters_of(t);
  if (!base || t.config.variant != state.config.variant) {
    text_wrapped(state,
                 "The simplified attention has no weights: it compares the inputs "
                 "directly. Pick SelfAttention_v1 or a later variant.");
    ImGui::End();
    return;
  }
  text_wrapped(state, std::string(t.explicit_weights ? "Running with edited weights. "
                                                     : "Running with the seeded weights. ") +
                          "Drag a value (double-click to type): every stage after Q/K/V follows. "
                          "Dropout masks stay those of the seed.");
  ImGui::BeginDisabled(!state.explicit_parameters);
  if (ImGui::Button("Reset to seeded")) {
    state.explicit_parameters.reset();
    state.mark_dirty();
  }
  ImGui::EndDisabled();
  if (!state.teach.weights_refusal.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.95f, 0.35f, 0.3f, 1.0f));
    text_wrapped(state, state.teach.weights_refusal);
    ImGui::PopStyleColor();
  }
  std::string refusal;  // why a typed value was refused this frame
  float& start = state.ui.edit_start;
  core::Parameters p = *base;
  const bool wrapper = t.config.variant == core::Variant::MultiheadWrapper;
  int set = wrapper ? std::clamp(state.head, 0, static_cast<int>(p.qkv.size()) - 1) : 0;
  if (wrapper) ImGui::Text("head %d (focus another head in the heads grid)", set);
  bool changed = false;
  auto& qkv = p.qkv[static_cast<std::size_t>(set)];
  changed |= edit_named(core::stage_id::W_query, "d_in × d_out", qkv.query.weight, refusal, start);
  if (qkv.query.bias.size() > 0)
    changed |= edit_named(core::stage_id::b_query, "", qkv.query.bias, refusal, start);
  changed |= edit_named(core::stage_id::W_key, "", qkv.key.weight, refusal, start);
  if (qkv.key.bias.size() > 0)
    changed |= edit_named(core::stage_id::b_key, "", qkv.key.bias, refusal, start);
  changed |= edit_named(core::stage_id::W_value, "", qkv.value.weight, refusal, start);
  if (qkv.value.bias.size() > 0)
    changed |= edit_named(core::stage_id::b_value, "", qkv.value.bias, refusal, start);
  if (t.config.variant == core::Variant::Multihead) {
    changed |=
        edit_named(core::stage_id::W_out, "out_proj, d_out × d_out", p.out.weight, refusal, start);
    if (p.out.bias.size() > 0)
      changed |= edit_named(core::stage_id::b_out, "out_proj bias", p.out.bias, refusal, start);
  }
  if (changed) state.teach.weights_refusal.clear();  // a later value went in
  if (!refusal.empty()) state.teach.weights_refusal = std::move(refusal);
  if (changed) {
    state.explicit_parameters = std::make_shared<const core::Parameters>(std::move(p));
    state.mark_dirty();
  }
  ImGui::End();
}

}  // namespace attnscope::gui
