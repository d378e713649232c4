// sizes_panel.cpp: parameter counts and tensor shapes of the current module
// and of the GPT-2 sized layer of exercise 3.3. Numbers: core::count_parameters,
// core::tensor_shapes.
#include "teach/teach.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

void shapes_table(AppState& state, const char* id, const std::vector<core::TensorShape>& shapes) {
  if (!ImGui::BeginTable(
          id, 4,
          ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit))
    return;
  for (const char* c : {"tensor", "shape", "copies", "numbers"}) ImGui::TableSetupColumn(c);
  ImGui::TableHeadersRow();
  for (const auto& s : shapes) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    if (s.parameter)
      ImGui::TextColored(ImVec4(1.0f, 0.8f, 0.45f, 1.0f), "%s", display(state, s.name).c_str());
    else
      ImGui::TextUnformatted(display(state, s.name).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%d × %d", s.rows, s.cols);
    ImGui::TableNextColumn();
    ImGui::Text("%d", s.copies);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(grouped(static_cast<long long>(s.rows) * s.cols * s.copies).c_str());
  }
  ImGui::EndTable();
}

}  // namespace

void draw_sizes(AppState& state) {
  if (!begin_learn_window(state.teach, "Sizes", &state.teach.show_sizes, ImVec2(620, 700)) ||
      !state.trace) {
    ImGui::End();
    return;
  }
  const core::Trace& t = *state.trace;
  const core::ParameterCount n = core::count_parameters(t.config, t.d_in);
  if (state.ui.font_heading) ImGui::PushFont(state.ui.font_heading);
  ImGui::Text("This module: %s parameters", grouped(n.total).c_str());
  if (state.ui.font_heading) ImGui::PopFont();
  ImGui::Text("W_query, W_key, W_value%s: %s   out_proj: %s", t.config.qkv_bias ? " + biases" : "",
              grouped(n.qkv).c_str(), grouped(n.out).c_str());
  text_wrapped(state,
               "Parameter tensors are in yellow; the rest are activations, whose size "
               "grows with the number of tokens (the T × T ones quadratically).");
  shapes_table(state, "cur", core::tensor_shapes(t.config, t.d_in, t.num_tokens()));
  ImGui::Separator();
  const core::Config g = core::gpt2_layer_config();
  const core::ParameterCount gn = core::count_parameters(g, core::kGpt2DIn);
  if (state.ui.font_heading) ImGui::PushFont(state.ui.font_heading);
  ImGui::Text("GPT-2 sized layer: %s parameters", grouped(gn.total).c_str());
  if (state.ui.font_heading) ImGui::PopFont();
  text_wrapped(state,
               "Exercise 3.3: MultiHeadAttention with d_in = d_out = 768, 12 heads and a context "
               "of 1024 tokens, no qkv bias: 4 × 768 × 768 weights plus out_proj's 768 biases.");
  shapes_table(state, "gpt2", core::tensor_shapes(g, core::kGpt2DIn, core::kGpt2Context));
  ImGui::End();
}

}  // namespace attnscope::gui
