// menu_bar.cpp: File / View / Help, the About window and the shortcuts list.
// The file features (sessions, imports, exports) are export/files_ui.hpp's.
#include <string>

#include "export/files.hpp"
#include "export/files_ui.hpp"
#include "panels/panels.hpp"
#include "platform/fonts.hpp"
#include "teach/teach.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

struct Shortcut {
  const char* keys;
  const char* what;
};
constexpr Shortcut kShortcuts[] = {
    {"Right / Left", "next / previous stage"},
    {"Home / End", "first / last stage"},
    {"Click a cell", "pin it in the inspector"},
    {"Esc", "unpin the cell"},
    {"R",
     "colour each row on its own scale, or the whole matrix on one (auto: by row at T >= 128)"},
    {"N or Enter / P or Backspace", "walkthrough: next / previous step"},
    {"PgDn / PgUp", "a model: next / previous layer"},
    {"] / [", "a model: next / previous head"},
    {"G", "a model: append the most likely next token to the text"},
    {"Mouse wheel", "zoom a heatmap (at the pointer)"},
    {"Shift+wheel", "scroll a heatmap sideways (a wide matrix)"},
    {"Drag", "pan a zoomed heatmap"},
    {"Double-click", "fit the heatmap again"},
    {"Ctrl+click a slider", "type an exact value; Enter applies it, Esc cancels"},
    {"Right-click a heatmap", "export it (PNG, SVG, CSV, NPY, JSON, torch.tensor)"},
    {"F12", "screenshot of the window into the export folder"},
    {"Ctrl+Q", "quit (the session is saved)"},
};

void reset_to_defaults(AppState& state) {
  state.load_preset("book");
  state.config = core::Config{};
  state.step = Step::Inputs;
  state.head = 0;
  state.pinned = CellRef{};
  state.ui.heads_refusal.clear();
  reset_to_seeded_weights(state);
  state.mark_dirty();
}

}  // namespace

void draw_menu_bar(AppState& state) {
  if (!ImGui::BeginMenuBar()) return;
  handle_file_shortcuts(state);  // F12
  if (ImGui::BeginMenu("File")) {
    draw_file_menu_items(state);
    ImGui::Separator();
    if (ImGui::MenuItem("Reset to the book example")) reset_to_defaults(state);
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) state.ui.quit_requested = true;
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    if (ImGui::BeginMenu("Colours")) {
      for (Palette p : kAllPalettes)
        if (ImGui::MenuItem(std::string(palette_label(p)).c_str(), nullptr, state.ui.palette == p))
          state.ui.palette = p;
      ImGui::EndMenu();
    }
    ImGui::MenuItem("Numbers in cells", nullptr, &state.ui.show_values);
    if (ImGui::BeginMenu("Decimals")) {
      for (int d = figure::kMinDecimals; d <= figure::kMaxDecimals; ++d) {
        const std::string label =
            std::to_string(d) + (d == figure::kBookDecimals ? "  (the book's)" : "");
        if (ImGui::MenuItem(label.c_str(), nullptr, state.ui.decimals == d)) state.ui.decimals = d;
      }
      ImGui::TextDisabled("where the cells are too small: fewer");
      ImGui::EndMenu();
    }
    // The check mark shows what the scores and weights show now; "automatic"
    // is on until the learner picks one (a click on it again keeps the
    // current look as an explicit choice).
    if (ImGui::MenuItem("Colour each row on its own scale", "R", rows_on_own_scale(state)))
      toggle_row_scale(state);
    const bool automatic = state.ui.row_scale == figure::RowScale::Auto;
    const std::string auto_label =
        std::string(state.ui.unicode ? "  automatically at T \xE2\x89\xA5 "
                                     : "  automatically at T >= ") +
        std::to_string(figure::kAutoRowScaleTokens);
    if (ImGui::MenuItem(auto_label.c_str(), nullptr, automatic))
      state.ui.row_scale =
          automatic ? (rows_on_own_scale(state) ? figure::RowScale::On : figure::RowScale::Off)
                    : figure::RowScale::Auto;
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "Scores and weights: each row on its own scale from T = %ld tokens, where one shared\n"
          "scale draws almost every weight (~1/T) in one flat colour; one scale per matrix below.\n"
          "A model's heads at any length, as its All heads view draws them.",
          figure::kAutoRowScaleTokens);
    if (ImGui::BeginMenu("UI scale")) {
      for (float s : {0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f}) {
        const std::string label = std::to_string(static_cast<int>(s * 100)) + "%";
        if (ImGui::MenuItem(label.c_str(), nullptr, state.ui.ui_scale == s) &&
            state.ui.ui_scale != s) {
          state.ui.ui_scale = s;
          state.ui.fonts_dirty = true;
        }
      }
      ImGui::TextDisabled("x monitor scale %.2f", static_cast<double>(state.ui.content_scale));
      ImGui::EndMenu();
    }
    if (ImGui::MenuItem("Fit all heatmaps", "double-click")) state.ui.views.clear();
    ImGui::Separator();
    draw_screenshot_menu_item(state);
    ImGui::EndMenu();
  }
  draw_learn_menu(state);  // teach/learn_menu.cpp
  if (ImGui::BeginMenu("Help")) {
    if (ImGui::MenuItem("Start the chapter 3 walkthrough", nullptr, false,
                        !state.teach.walk_active))
      start_walkthrough(state, 0);
    if (ImGui::MenuItem("Start the after-chapter-3 walkthrough", nullptr, false,
                        !state.teach.walk_active))
      start_walkthrough(state, 0, Tour::AfterChapter3);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "The KV cache, grouped-query, latent and sliding-window attention, "
          "RoPE and cross-attention, on the same six tokens");
    if (ImGui::MenuItem("How to use / shortcuts")) state.ui.show_shortcuts = true;
    if (ImGui::MenuItem("About attnscope")) state.ui.show_about = true;
    ImGui::EndMenu();
  }
  draw_weights_badge(state);
  // Where we are, at the right end of the bar (nothing while a model source
  // still shows the chapter-3 trace: no model yet, or its first run).
  if (state.trace && state.model_source() == state.showing_model()) {
    const core::Trace& t = *state.trace;
    std::string where;
    if (t.is_model()) {  // a model's block
      where = t.model + "  ·  " + std::to_string(t.num_tokens()) + " tokens, layer " +
              std::to_string(t.layer) + " of " +
              std::to_string(state.model.overview ? state.model.overview->layers : t.layer + 1) +
              ", " + std::to_string(t.heads_shown()) + " heads, d " + std::to_string(t.d_in);
    } else {
      where = std::string(core::variant_book_name(t.config.variant)) + "  ·  " +
              std::to_string(t.num_tokens()) + " tokens, d_in " + std::to_string(t.d_in);
      if (core::has_weights(t.config.variant)) where += ", d_out " + std::to_string(t.config.d_out);
      if (core::has_heads(t.config.variant))
        where += ", " + std::to_string(t.config.num_heads) + " heads";
    }
    where = display(state, where);
    const float w = ImGui::CalcTextSize(where.c_str()).x;
    ImGui::SameLine(ImGui::GetWindowWidth() - w - ImGui::GetStyle().WindowPadding.x * 2);
    ImGui::TextDisabled("%s", where.c_str());
  }
  ImGui::EndMenuBar();
}

void draw_menu_popups(AppState& state) {
  draw_file_windows(state);     // dialogs and the export notice (files_panel.cpp)
  draw_export_progress(state);  // Export all's next figures and its progress window
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const ImVec2 centre(vp->WorkPos.x + vp->WorkSize.x * 0.5f, vp->WorkPos.y + vp->WorkSize.y * 0.5f);
  constexpr ImGuiWindowFlags kFlags = ImGuiWindowFlags_AlwaysAutoResize |
                                      ImGuiWindowFlags_NoCollapse |
                                      ImGuiWindowFlags_NoSavedSettings;

  if (state.ui.show_about) {
    ImGui::SetNextWindowPos(centre, ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
    if (ImGui::Begin("About attnscope", &state.ui.show_about, kFlags)) {
      if (state.ui.font_heading) ImGui::PushFont(state.ui.font_heading);
      ImGui::Text("attnscope %s", ATTNSCOPE_VERSION);
      if (state.ui.font_heading) ImGui::PopFont();
      ImGui::TextUnformatted("Watch transformer self-attention happen, stage by stage.");
      ImGui::Spacing();
      ImGui::TextUnformatted("Follows chapter 3, \"Coding attention mechanisms\", of");
      ImGui::TextUnformatted("Sebastian Raschka, Build a Large Language Model (From Scratch),");
      ImGui::TextUnformatted("Manning, 2024.");
      ImGui::Spacing();
      ImGui::TextDisabled("Every number on screen is computed by the attnscope engine, with");
      ImGui::TextDisabled("PyTorch's random generator, so it matches the book's code for the");
      ImGui::TextDisabled("same seed. Dear ImGui %s, GLFW.", IMGUI_VERSION);
      ImGui::Spacing();
      if (ImGui::Button("Close")) state.ui.show_about = false;
    }
    ImGui::End();
  }

  if (state.ui.show_shortcuts) {
    ImGui::SetNextWindowPos(centre, ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
    if (ImGui::Begin("How to use attnscope", &state.ui.show_shortcuts, kFlags)) {
      ImGui::TextUnformatted("1. Pick a variant on the left; change d_out, heads, dropout, seed.");
      ImGui::TextUnformatted("2. Edit the embeddings: drag a value, or double-click to type.");
      ImGui::TextUnformatted("3. Step through the stages with the strip at the top (or arrows).");
      ImGui::TextUnformatted("4. Click any cell: the inspector shows the arithmetic behind it.");
      ImGui::Spacing();
      // stage-literals: off (an ImGui id)
      if (ImGui::BeginTable("keys", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
        // stage-literals: on
        for (const auto& s : kShortcuts) {
          ImGui::TableNextRow();
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(s.keys);
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(s.what);
        }
        ImGui::EndTable();
      }
      if (ImGui::Button("Close")) state.ui.show_shortcuts = false;
    }
    ImGui::End();
  }
}

}  // namespace attnscope::gui
