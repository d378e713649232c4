// embedding_panel.cpp: the inputs as an editable table, tokens × dimensions.
// Rows are clipped (ImGuiListClipper), so 4096 tokens edit as fast as 6.
// A typed value that is not a finite float32 ("1e39", or "*2e38": ImGui's
// number fields apply + - * / to the value; letters such as "nan" cannot be
// typed at all) is refused: the cell keeps its value and the panel says why.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "attnscope/io/io.hpp"
#include "figure/scale.hpp"
#include "imgui.h"
#include "imgui_stdlib.h"  // needs imgui.h first
#include "panels/panels.hpp"
#include "widgets/text_editor.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

// New random values of the same shape under the input seed; the tokens keep their names.
void redraw_values(AppState& s) {
  if (s.inputs.embeddings.size() == 0) return;  // no shape to keep (never valid inputs)
  std::vector<std::string> names = std::move(s.inputs.tokens);
  s.draw_random_inputs(static_cast<int>(s.inputs.embeddings.rows()),
                       static_cast<int>(s.inputs.embeddings.cols()));
  s.inputs.tokens = std::move(names);
}

void add_token(AppState& s) {
  const auto T = s.inputs.embeddings.rows();
  const auto d = s.inputs.embeddings.cols();
  s.inputs.embeddings.conservativeResize(T + 1, d);
  s.inputs.embeddings.row(T).setZero();
  s.inputs.tokens.push_back("t" + std::to_string(T));
  s.inputs_replaced(InputOrigin::Edited);
}

void remove_token(AppState& s, int row) {
  auto& m = s.inputs.embeddings;
  const auto T = m.rows();
  if (T <= 1 || row < 0 || row >= T) return;
  core::RowMatrix next(T - 1, m.cols());
  next.topRows(row) = m.topRows(row);
  next.bottomRows(T - 1 - row) = m.bottomRows(T - 1 - row);
  m = std::move(next);
  s.inputs.tokens.erase(s.inputs.tokens.begin() + row);
  s.inputs_replaced(InputOrigin::Edited);
}

void resize_dims(AppState& s, Eigen::Index d) {
  auto& m = s.inputs.embeddings;
  const auto old = m.cols();
  if (d < 1 || d > core::kMaxDim) return;
  m.conservativeResize(m.rows(), d);
  if (d > old) m.rightCols(d - old).setZero();
  s.inputs_replaced(InputOrigin::Edited);
}

// The preset combo (it says "custom" once the inputs differ from the
// preset), Reset, and adding or removing tokens and dims.
void draw_preset_row(AppState& state) {
  const auto& emb = state.inputs.embeddings;
  const auto& tokens = state.inputs.tokens;
  const auto preset = core::find_preset(state.preset);
  const bool pristine = preset && preset->tokens == tokens &&
                        preset->embeddings.rows() == emb.rows() &&
                        preset->embeddings.cols() == emb.cols() && preset->embeddings == emb;
  const std::string shown = pristine ? state.preset : "custom";
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  if (ImGui::BeginCombo("##preset", shown.c_str())) {
    for (const std::string& name : core::preset_names())
      if (ImGui::Selectable(name.c_str(), name == state.preset)) state.load_preset(name);
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  if (ImGui::Button("Reset to preset")) state.load_preset(state.preset);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Replace the tokens and values with the '%s' preset", state.preset.c_str());

  if (ImGui::Button("+ token")) add_token(state);
  ImGui::SameLine();
  if (ImGui::Button("- token")) remove_token(state, static_cast<int>(emb.rows()) - 1);
  ImGui::SameLine();
  if (ImGui::Button("+ dim")) resize_dims(state, emb.cols() + 1);
  ImGui::SameLine();
  if (ImGui::Button("- dim")) resize_dims(state, emb.cols() - 1);
}

// Which seed made random inputs, and the generator (same shape, or a new T x d).
void draw_random_inputs(AppState& state) {
  const auto& emb = state.inputs.embeddings;
  if (state.origin == InputOrigin::Random) {
    ImGui::TextDisabled("input seed %llu: torch.rand(%d, %d)",
                        static_cast<unsigned long long>(state.input_seed),
                        static_cast<int>(emb.rows()), static_cast<int>(emb.cols()));
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "These inputs are random, in PyTorch:\n  torch.manual_seed(%llu)\n  "
          "x = torch.rand(%d, %d)\nThe weights come from the model's seed (%llu).",
          static_cast<unsigned long long>(state.input_seed), static_cast<int>(emb.rows()),
          static_cast<int>(emb.cols()), static_cast<unsigned long long>(state.config.seed));
  }

  // Randomize: same shape, or a new T x d.
  if (ImGui::TreeNode("Random inputs (torch.rand)")) {
    const std::uint64_t one = 1;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    if (ImGui::InputScalar("input seed##rand", ImGuiDataType_U64, &state.input_seed, &one, nullptr,
                           "%llu") &&
        state.origin ==
            InputOrigin::Random)  // random inputs follow their seed, as the weights follow theirs
      redraw_values(state);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "torch.manual_seed(input seed) before torch.rand: the inputs' own "
          "seed, apart from the model's seed for the weights");
    if (state.input_seed == state.config.seed) {
      ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.75f, 0.3f, 1.0f));
      text_wrapped(state,
                   "Same seed as the weights: torch.rand repeats the numbers the model draws "
                   "for W_query, so W_query is a rescaled copy of the first inputs and Q, K, V "
                   "show stripes that were never learned.");
      ImGui::PopStyleColor();
    }
    if (ImGui::Button("Randomize values")) redraw_values(state);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5);
    ImGui::InputInt("tokens##rand", &state.ui.random_tokens, 0);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4);
    ImGui::InputInt("dims##rand", &state.ui.random_dims, 0);
    state.ui.random_tokens = std::clamp(state.ui.random_tokens, 1, core::kMaxTokens);
    state.ui.random_dims = std::clamp(state.ui.random_dims, 1, core::kMaxDim);
    if (ImGui::Button("New random inputs"))
      state.draw_random_inputs(state.ui.random_tokens, state.ui.random_dims);
    ImGui::TreePop();
  }
}

// Typed text as the inputs: GPT-2's tokens, embedded as the book's chapter 2
// does. While the inputs are the text's, every edit here re-embeds at once;
// otherwise "Use this text" replaces the inputs (edited values are never
// overwritten by typing).
void draw_text_inputs(AppState& state) {
  TextSource& t = state.text_source;
  const bool following = state.origin == InputOrigin::Text;
  if (following) {
    char line[160];
    std::snprintf(line, sizeof line, "%zu tokens of your text, embedded with seed %llu%s",
                  t.typed.tokens.size(), static_cast<unsigned long long>(t.seed),
                  t.positions > 0 ? " + positions" : "");
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    text_wrapped(state, line);
    ImGui::PopStyleColor();
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "These inputs are chapter 2's, in PyTorch:\n  ids = tiktoken GPT-2 ids of the text\n"
          "  torch.manual_seed(%llu)\n  tok = torch.nn.Embedding(50257, %d)%s\n"
          "  x = tok(ids)%s",
          static_cast<unsigned long long>(t.seed), t.d_in,
          t.positions > 0 ? "\n  pos = torch.nn.Embedding(context_length, d_in)" : "",
          t.positions > 0 ? " + pos(torch.arange(len(ids)))" : "");
  }
  const bool open = ImGui::TreeNode("Your own sentence");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Type text: GPT-2's tokens, embedded as in the book's chapter 2");
  if (!open) return;
  bool changed = false;
  changed |=
      text_editor("##text", t.typed.text, ImVec2(-1, text_editor_height(3)), state.ui.text_edit);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "Type a sentence: GPT-2's tokenizer splits it, and each token id picks a "
        "row of a seeded nn.Embedding");
  if (following) {
    const float max_x = ImGui::GetContentRegionAvail().x + ImGui::GetCursorPosX();
    for (std::size_t i = 0; i < t.typed.tokens.size(); ++i)
      draw_token_chip(t.typed.tokens[i], i, max_x);
  }
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5);
  if (ImGui::InputInt("d_in##text", &t.d_in, 1)) {
    t.d_in = std::clamp(t.d_in, 1, core::kMaxDim);
    changed = true;
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Embedding width: 3 as in the book's chapter 3 example, 256 in chapter 2");
  ImGui::SameLine();
  const std::uint64_t one = 1;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  changed |= ImGui::InputScalar("seed##text", ImGuiDataType_U64, &t.seed, &one, nullptr, "%llu");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("torch.manual_seed(seed) right before nn.Embedding(50257, d_in)");
  bool positions = t.positions > 0;
  if (ImGui::Checkbox("positions##text", &positions)) {
    // GPT-2's context length, or the text's length when it is longer.
    t.positions = positions ? std::min(core::kMaxTokens,
                                       std::max(1024, static_cast<int>(t.typed.tokens.size())))
                            : 0;
    changed = true;
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "Add nn.Embedding(context_length, d_in) created right after the token "
        "layer, as chapter 2's pos_embedding_layer");
  if (t.positions > 0) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5);
    if (ImGui::InputInt("context_length##text", &t.positions, 0)) {
      t.positions = std::clamp(t.positions, 1, core::kMaxTokens);
      changed = true;
    }
  }
  if (following) {
    if (changed) state.embed_text();
  } else {
    if (ImGui::Button("Use this text")) state.embed_text();
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Replace the inputs with this text's tokens and embeddings");
  }
  if (!t.typed.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.42f, 0.42f, 1.0f));
    text_wrapped(state, t.typed.error);
    ImGui::PopStyleColor();
  }
  ImGui::TreePop();
}

// The table: token | d0 .. d(n-1) | remove. Row numbers are in the tooltip.
// `was_dirty`: whether the run was dirty before this panel drew.
void draw_embedding_table(AppState& state, bool was_dirty) {
  auto& emb = state.inputs.embeddings;
  auto& tokens = state.inputs.tokens;
  const int d = static_cast<int>(emb.cols());
  const int columns = d + 2;
  if (columns > 64) {  // ImGui tables hold at most 64 columns: token, 62 dims, remove
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    text_wrapped(state, "d_in = " + std::to_string(d) +
                            " is too wide to edit here: the table holds at most 62 dims. Press "
                            "\"-\u00A0dim\" down to 62 to edit values, or draw new ones under "
                            "\"Random\u00A0inputs\" above. The Inputs step shows all " +
                            std::to_string(d) + " as a heatmap.");
    ImGui::PopStyleColor();
    return;
  }
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_ScrollX | ImGuiTableFlags_ScrollY |
                                     ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                     ImGuiTableFlags_BordersOuter | ImGuiTableFlags_SizingFixedFit;
  const ImVec2 size(0, std::max(ImGui::GetContentRegionAvail().y, ImGui::GetFrameHeight() * 4));
  // Narrow number fields: pushed around the table, not inside it (the table
  // is a child window and checks its style stack on the way out).
  if (state.ui.font_mono) ImGui::PushFont(state.ui.font_mono);
  ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, ImVec2(3, ImGui::GetStyle().FramePadding.y));
  if (!ImGui::BeginTable("embeddings", columns, kFlags, size)) {  // not a stage id
    ImGui::PopStyleVar();
    if (state.ui.font_mono) ImGui::PopFont();
    return;
  }
  const float num_w = ImGui::CalcTextSize("-0.0000").x + 6;
  ImGui::TableSetupScrollFreeze(1, 1);
  ImGui::TableSetupColumn("token", ImGuiTableColumnFlags_WidthFixed, ImGui::GetFontSize() * 5.0f);
  for (int c = 0; c < d; ++c)
    ImGui::TableSetupColumn(("d" + std::to_string(c)).c_str(), ImGuiTableColumnFlags_WidthFixed,
                            num_w);
  ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed, ImGui::GetFrameHeight());
  ImGui::TableHeadersRow();

  int remove = -1;
  std::string refused;  // why a typed value was refused this frame
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(emb.rows()));
  while (clipper.Step()) {
    for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
      ImGui::PushID(r);
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::SetNextItemWidth(-FLT_MIN);
      if (ImGui::InputText("##tok", &tokens[static_cast<std::size_t>(r)])) state.mark_dirty();
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("token %d (row %d of every matrix)", r, r);
      for (int c = 0; c < d; ++c) {
        ImGui::TableNextColumn();
        ImGui::PushID(c);
        ImGui::SetNextItemWidth(-FLT_MIN);
        const auto name = [&] {
          return "d" + std::to_string(c) + " of '" + tokens[static_cast<std::size_t>(r)] + "'";
        };
        if (drag_finite_cell("##v", emb(r, c), state.ui.edit_start, 0.005f, 0.0f, 0.0f, name,
                             "embeddings", refused))  // not a stage id
          state.inputs_replaced(InputOrigin::Edited);
        ImGui::PopID();
      }
      ImGui::TableNextColumn();
      ImGui::BeginDisabled(emb.rows() <= 1);
      if (ImGui::SmallButton("x")) remove = r;
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("Remove token %d", r);
      ImGui::EndDisabled();
      ImGui::PopID();
    }
  }
  ImGui::EndTable();
  ImGui::PopStyleVar();
  if (state.ui.font_mono) ImGui::PopFont();
  if (remove >= 0) remove_token(state, remove);
  if (!was_dirty && state.dirty) state.ui.embedding_refusal.clear();  // a later edit went in
  if (!refused.empty()) state.ui.embedding_refusal = std::move(refused);
}

}  // namespace

void draw_embedding_panel(AppState& state) {
  const bool was_dirty = state.dirty;
  const auto& emb = state.inputs.embeddings;
  if (state.ui.font_heading) ImGui::PushFont(state.ui.font_heading);
  ImGui::TextUnformatted("Embeddings");
  if (state.ui.font_heading) ImGui::PopFont();
  ImGui::SameLine();
  ImGui::TextDisabled("%d tokens × %d dims", static_cast<int>(emb.rows()),
                      static_cast<int>(emb.cols()));

  draw_preset_row(state);
  draw_random_inputs(state);
  draw_text_inputs(state);

  if (!was_dirty && state.dirty) state.ui.embedding_refusal.clear();  // an edit went in since
  if (!state.ui.embedding_refusal.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.42f, 0.42f, 1.0f));
    text_wrapped(state, state.ui.embedding_refusal);
    ImGui::PopStyleColor();
  }
  if (state.error.starts_with("there are") ||
      state.error.starts_with("embeddings") ||  // not a stage id
      state.error.starts_with("too many") || state.error.starts_with("d_in")) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.42f, 0.42f, 1.0f));
    text_wrapped(state, state.error);
    ImGui::PopStyleColor();
  }

  draw_embedding_table(state, was_dirty);
}

}  // namespace attnscope::gui
