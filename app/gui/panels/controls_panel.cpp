// controls_panel.cpp: the model's knobs. Every edit goes to state.config and
// marks the state dirty; the frame's recompute point does the rest.
#include <random>
#include <string>

#include "panels/panels.hpp"

namespace attnscope::gui {

namespace {

// One line on what the variant adds over the previous one.
const char* variant_blurb(core::Variant v) {
  switch (v) {
    case core::Variant::Simple:
      return "No trainable weights: scores are dot products of the inputs.";
    case core::Variant::SelfAttentionV1:
      return "Adds W_query, W_key, W_value (torch.rand) and scaling.";
    case core::Variant::SelfAttentionV2:
      return "The same with nn.Linear layers.";
    case core::Variant::Causal:
      return "Adds the causal mask and dropout.";
    case core::Variant::MultiheadWrapper:
      return "Several CausalAttention heads, outputs side by side.";
    case core::Variant::Multihead:
      return "One projection split into heads, then out_proj.";
  }
  return "";
}

void error_line(const AppState& state, std::string_view field) {
  if (!state.error.starts_with(field)) return;
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.42f, 0.42f, 1.0f));
  text_wrapped(state, state.error + ". The last good result stays on screen.");
  ImGui::PopStyleColor();
}

// "1, 2, 3 or 6": the head counts d_out can be split into.
std::string divisors_text(int n) {
  std::string s;
  std::vector<int> d;
  for (int k = 1; k <= n && k <= core::kMaxHeads; ++k)
    if (n % k == 0) d.push_back(k);
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i > 0) s += i + 1 == d.size() ? " or " : ", ";
    s += std::to_string(d[i]);
  }
  return s;
}

}  // namespace

void draw_controls_panel(AppState& state) {
  core::Config& c = state.config;
  if (state.ui.font_heading) ImGui::PushFont(state.ui.font_heading);
  ImGui::TextUnformatted("Model");
  if (state.ui.font_heading) ImGui::PopFont();

  // Problems that belong to a control are shown next to it (below); only
  // the rest gets a line up here, so the controls do not jump around.
  const std::string& e = state.error;
  const bool placed = e.starts_with("d_out") || e.starts_with("num_heads") ||
                      e.starts_with("dropout") || e.starts_with("there are") ||
                      e.starts_with("embeddings") || e.starts_with("too many") ||
                      e.starts_with("d_in");
  if (!e.empty() && !placed) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.42f, 0.42f, 1.0f));
    text_wrapped(state, "Cannot run this: " + e + ". The last good result stays on screen.");
    ImGui::PopStyleColor();
  }

  const float label_w = ImGui::CalcTextSize("dropout ").x + ImGui::GetStyle().ItemInnerSpacing.x;
  ImGui::PushItemWidth(-label_w);

  // Variant, named as the book names it.
  if (ImGui::BeginCombo("variant", std::string(core::variant_book_name(c.variant)).c_str())) {
    for (core::Variant v : core::kAllVariants) {
      const std::string label =
          std::string(core::variant_book_name(v)) + "  (" + std::string(core::variant_id(v)) + ")";
      if (ImGui::Selectable(label.c_str(), v == c.variant) && v != c.variant) {
        c.num_heads = core::heads_after_switch(c.variant, v, c.num_heads, c.d_out);
        c.variant = v;
        state.ui.heads_refusal.clear();
        state.mark_dirty();
      }
    }
    ImGui::EndCombo();
  }
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%s", variant_blurb(c.variant));
  ImGui::PopStyleColor();

  const bool weights = core::has_weights(c.variant);
  const bool heads = core::has_heads(c.variant);
  const bool causal = core::is_causal(c.variant);
  const bool split = c.variant == core::Variant::Multihead;

  ImGui::BeginDisabled(!weights);
  if (ImGui::SliderInt("d_out", &c.d_out, 1, 16, "%d", ImGuiSliderFlags_None)) {
    state.ui.heads_refusal.clear();
    state.mark_dirty();
  }
  if (!weights && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Simplified self-attention has no weights: its output keeps d_in columns.");
  ImGui::EndDisabled();
  error_line(state, "d_out");

  ImGui::BeginDisabled(!heads);
  int h = c.num_heads;
  const int max_heads = split ? std::clamp(c.d_out, 1, 16) : 8;
  if (ImGui::SliderInt("heads", &h, 1, std::max(max_heads, 2), "%d") && h != c.num_heads) {
    if (split && h > 0 && c.d_out % h != 0) {
      // Refuse: each head must own d_out / num_heads whole columns.
      state.ui.heads_refusal = std::to_string(h) +
                               " heads cannot split d_out = " + std::to_string(c.d_out) +
                               " evenly: each head gets d_out / heads whole columns. Try " +
                               divisors_text(c.d_out) + ".";
    } else {
      c.num_heads = h;
      state.ui.heads_refusal.clear();
      state.mark_dirty();
    }
  }
  if (!heads && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Only MultiHeadAttentionWrapper and MultiHeadAttention have heads.");
  ImGui::EndDisabled();
  if (!state.ui.heads_refusal.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.7f, 0.3f, 1.0f));
    text_wrapped(state, state.ui.heads_refusal);
    ImGui::PopStyleColor();
  }
  error_line(state, "num_heads");
  if (split && c.num_heads > 0 && c.d_out % c.num_heads == 0)
    ImGui::TextDisabled("head_dim = d_out / heads = %d", c.d_out / c.num_heads);
  else if (c.variant == core::Variant::MultiheadWrapper)
    ImGui::TextDisabled("output width = heads x d_out = %d", c.num_heads * c.d_out);

  ImGui::BeginDisabled(!causal);
  const double lo = 0.0, hi = 1.0;
  if (ImGui::SliderScalar("dropout", ImGuiDataType_Double, &c.dropout, &lo, &hi, "%.2f"))
    state.mark_dirty();
  if (!causal && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Dropout on the weights arrives with CausalAttention.");
  ImGui::EndDisabled();
  error_line(state, "dropout");

  ImGui::BeginDisabled(!causal);
  if (ImGui::RadioButton("training", c.training)) {
    c.training = true;
    state.mark_dirty();
  }
  ImGui::SameLine();
  if (ImGui::RadioButton("eval", !c.training)) {
    c.training = false;
    state.mark_dirty();
  }
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("model.eval(): nn.Dropout passes the weights through unchanged");
  ImGui::EndDisabled();

  const bool bias_matters = weights && c.variant != core::Variant::SelfAttentionV1;
  ImGui::BeginDisabled(!bias_matters);
  if (ImGui::Checkbox("qkv_bias", &c.qkv_bias)) state.mark_dirty();
  if (!bias_matters && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Only the nn.Linear variants (SelfAttention_v2 and later) have a bias.");
  ImGui::EndDisabled();

  // Seed: type it, step it with -/+, or roll one.
  ImGui::BeginDisabled(!weights && !causal);
  const std::uint64_t one = 1, hundred = 100;
  const float roll_w = ImGui::CalcTextSize("Roll").x + ImGui::GetStyle().FramePadding.x * 2;
  ImGui::SetNextItemWidth(ImGui::CalcItemWidth() - roll_w - ImGui::GetStyle().ItemSpacing.x);
  if (ImGui::InputScalar("##seed", ImGuiDataType_U64, &c.seed, &one, &hundred, "%llu"))
    state.mark_dirty();
  ImGui::SameLine();
  if (ImGui::Button("Roll")) {
    std::random_device rd;
    c.seed = (static_cast<std::uint64_t>(rd()) << 32 | rd()) % 1000000;
    state.mark_dirty();
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("A random seed from 0 to 999999");
  ImGui::SameLine();
  ImGui::TextUnformatted("seed");
  ImGui::EndDisabled();
  ImGui::PopItemWidth();
  ImGui::Separator();
}

}  // namespace attnscope::gui
