// ui.cpp: the frame: recompute, shortcuts, and the three-column layout
//   left   controls + embedding editor
//   centre stage strip, explanation, matrices; heads grid below for head variants
//   right  inspector; the walkthrough panel under it while it runs
#include "shell/ui.hpp"

#include <algorithm>
#include <string>

#include "panels/panels.hpp"
#include "platform/imgui_compat.hpp"
#include "teach/teach.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/widgets.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {

void handle_shortcuts(AppState& state) {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.KeyCtrl && letter_pressed('Q')) state.ui.quit_requested = true;
  if (io.WantTextInput || io.KeyCtrl || io.KeyAlt) return;  // keys belong to the text field
  if (key_pressed(ImGuiKey_RightArrow)) state.step_by(+1);
  if (key_pressed(ImGuiKey_LeftArrow)) state.step_by(-1);
  if (key_pressed(ImGuiKey_Home)) state.step_by(-100);
  if (key_pressed(ImGuiKey_End)) state.step_by(+100);
  if (key_pressed(ImGuiKey_Escape)) state.pinned = CellRef{};
  if (letter_pressed('R')) toggle_row_scale(state);
  if (state.model_source() && state.model.is_open()) {
    if (key_pressed(ImGuiKey_PageDown)) state.select_layer(state.model.layer + 1);
    if (key_pressed(ImGuiKey_PageUp)) state.select_layer(state.model.layer - 1);
    if (char_typed(']')) state.select_head(state.head + 1);
    if (char_typed('[')) state.select_head(state.head - 1);
    if (letter_pressed('G')) state.append_top_token();
  }
  if (TeachState& t = state.teach; t.walk_active && t.walk_apply < 0) {
    const int last = static_cast<int>(current_walk(state).size()) - 1;
    if ((letter_pressed('N') || key_pressed(ImGuiKey_Enter)) && t.walk_step < last)
      t.walk_apply = t.walk_step + 1;
    if ((letter_pressed('P') || key_pressed(ImGuiKey_Backspace)) && t.walk_step > 0)
      t.walk_apply = t.walk_step - 1;
  }
}

namespace {

// While the worker computes, a small pill in the middle of the menu bar: the
// matrices on screen are the previous trace's until the new one is adopted.
void draw_computing_indicator(const AppState& state) {
  if (!state.computing()) return;
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const std::string text = state.ui.unicode ? "computing…" : "computing...";
  const ImVec2 ts = ImGui::CalcTextSize(text.c_str());
  const float bar_h = ImGui::GetFrameHeight();
  const ImVec2 at(vp->WorkPos.x + (vp->WorkSize.x - ts.x) * 0.5f,
                  vp->WorkPos.y + (bar_h - ts.y) * 0.5f);
  ImDrawList* dl = ImGui::GetForegroundDrawList();
  dl->AddRectFilled(ImVec2(at.x - 10, vp->WorkPos.y + 2),
                    ImVec2(at.x + ts.x + 10, vp->WorkPos.y + bar_h - 2),
                    IM_COL32(240, 160, 40, 235), bar_h * 0.5f);
  dl->AddText(at, IM_COL32(20, 20, 20, 255), text.c_str());
}

// A warning across the top of the window until dismissed (clears `text`).
void draw_warning_banner(const char* id, std::string& text) {
  if (text.empty()) return;
  ImGui::PushStyleColor(ImGuiCol_ChildBg, ImVec4(0.45f, 0.28f, 0.05f, 1.0f));
  // As tall as the wrapped text (long paths, parse errors), within a third of the window.
  const ImGuiStyle& style = ImGui::GetStyle();
  const float wrap =
      std::max(ImGui::GetContentRegionAvail().x - 120 - 2 * style.WindowPadding.x, 1.0f);
  const float text_h = ImGui::CalcTextSize(text.c_str(), nullptr, false, wrap).y;
  const float least = ImGui::GetFrameHeightWithSpacing() * 2.2f;
  const float most =
      std::max(ImGui::GetMainViewport()->WorkSize.y / 3, least);  // never below least
  // The last line also holds the Dismiss button, a frame taller than text.
  const float needed =
      text_h + 2 * (style.WindowPadding.y + style.FramePadding.y) + style.ItemSpacing.y;
  const float h = std::clamp(needed, least, most);
  ImGui::BeginChild(id, ImVec2(0, h), true, h < needed ? 0 : ImGuiWindowFlags_NoScrollbar);
  ImGui::PushTextWrapPos(std::max(ImGui::GetContentRegionAvail().x - 120, 1.0f));
  ImGui::TextUnformatted(text.c_str());
  ImGui::PopTextWrapPos();
  ImGui::SameLine(std::max(ImGui::GetContentRegionAvail().x - 100, 0.0f));
  if (ImGui::Button("Dismiss")) text.clear();
  ImGui::EndChild();
  ImGui::PopStyleColor();
}

// The first-run card: a learner who just opened the app is offered the
// guided tour of chapter 3. Starting it or "Not now" hides the card for
// good (the session remembers); Help > Start the chapter 3 walkthrough
// stays for later.
void draw_welcome_card(AppState& state) {
  const ImGuiStyle& style = ImGui::GetStyle();
  const std::string text =
      display(state,
              "New here? The walkthrough leads you through chapter 3 step by step, with the "
              "book's numbers.");
  const float wrap = ImGui::GetContentRegionAvail().x - style.WindowPadding.x * 2;
  const float text_h = ImGui::CalcTextSize(text.c_str(), nullptr, false, wrap).y;
  const float h =
      text_h + style.ItemSpacing.y + ImGui::GetFrameHeight() + style.WindowPadding.y * 2;
  ImGui::PushStyleColor(ImGuiCol_ChildBg, ImVec4(0.16f, 0.30f, 0.22f, 1.0f));
  ImGui::BeginChild("welcome", ImVec2(0, h), true, ImGuiWindowFlags_NoScrollbar);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(text.c_str());
  ImGui::PopTextWrapPos();
  if (ImGui::Button("Start the chapter 3 walkthrough")) {
    start_walkthrough(state, 0);
    state.ui.welcome_dismissed = true;
  }
  ImGui::SameLine();
  if (ImGui::Button("Not now")) state.ui.welcome_dismissed = true;
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Hide this card; Help > Start the chapter 3 walkthrough starts it later.");
  ImGui::EndChild();
  ImGui::PopStyleColor();
}

// The window's colour in the gaps around the three columns. The frame is
// cleared in the columns' colour (main.cpp clears to ChildBg) and the columns
// draw no background of their own: in software GL (llvmpipe) a blended fill
// the size of the window was half of every frame's CPU time. `outer` is the
// host's area below the menu bar; the columns share a top and a bottom.
void fill_around_columns(ImVec2 outer_min, ImVec2 outer_max, const ImVec2 (&columns)[3][2]) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 col = ImGui::GetColorU32(ImGuiCol_WindowBg);
  dl->PushClipRect(outer_min, outer_max);  // the window's margin included
  auto rect = [&](float x0, float y0, float x1, float y1) {
    if (x1 > x0 && y1 > y0) dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, y1), col);
  };
  const float top = columns[0][0].y, bottom = columns[0][1].y;
  rect(outer_min.x, outer_min.y, outer_max.x, top);
  rect(outer_min.x, bottom, outer_max.x, outer_max.y);
  float x = outer_min.x;
  for (const auto& c : columns) {
    rect(x, top, c[0].x, bottom);
    x = c[1].x;
  }
  rect(x, top, outer_max.x, bottom);
  // Each column's rounded corners: the square corner minus its quarter circle,
  // as a fan from the corner (wound as ImGui winds its shapes, so the
  // anti-aliased edge lies on the arc).
  const float r = ImGui::GetStyle().ChildRounding;
  constexpr float kPi = 3.14159265358979f;
  for (const auto& c : columns) {
    const ImVec2 a = c[0], b = c[1];
    if (r <= 0.0f || b.x - a.x < 2 * r || b.y - a.y < 2 * r) continue;
    const struct {
      ImVec2 corner, centre;
      float from, to;
    } corners[4] = {{a, ImVec2(a.x + r, a.y + r), 1.5f * kPi, kPi},
                    {ImVec2(b.x, a.y), ImVec2(b.x - r, a.y + r), 2.0f * kPi, 1.5f * kPi},
                    {b, ImVec2(b.x - r, b.y - r), 0.5f * kPi, 0.0f},
                    {ImVec2(a.x, b.y), ImVec2(a.x + r, b.y - r), kPi, 0.5f * kPi}};
    for (const auto& k : corners) {
      dl->PathLineTo(k.corner);
      dl->PathArcTo(k.centre, r, k.from, k.to, 6);
      dl->PathFillConvex(col);
    }
  }
  dl->PopClipRect();
}

}  // namespace

void draw_ui(AppState& state) {
  state.poll_model_loader();
  state.poll_compare_loader();
  state.recompute_if_dirty();  // the frame's recompute point (post_if_dirty ends it)
  note_text_glyphs(state);     // characters the fonts lack: baked before the next frame
  state.textures.collect(ImGui::GetFrameCount());
  handle_shortcuts(state);

  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->WorkPos);
  ImGui::SetNextWindowSize(vp->WorkSize);
  constexpr ImGuiWindowFlags kHost =
      ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
      ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_MenuBar |
      ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoScrollWithMouse |
      ImGuiWindowFlags_NoBackground;
  ImGui::PushStyleVar(ImGuiStyleVar_WindowRounding, 0.0f);
  ImGui::Begin("attnscope", nullptr, kHost);
  ImGui::PopStyleVar();
  const ImVec2 outer_min(ImGui::GetWindowPos().x,
                         ImGui::GetCursorScreenPos().y - ImGui::GetStyle().WindowPadding.y);
  const ImVec2 outer_max(ImGui::GetWindowPos().x + ImGui::GetWindowSize().x,
                         ImGui::GetWindowPos().y + ImGui::GetWindowSize().y);
  // The gaps' fill is drawn last (the columns' places are known then) but
  // into a channel below everything else: child windows draw their
  // backgrounds (the banners') into this draw list too.
  ImDrawList* host = ImGui::GetWindowDrawList();
  host->ChannelsSplit(2);
  host->ChannelsSetCurrent(1);
  draw_menu_bar(state);

  draw_warning_banner("warning", state.ui.session_warning);
  draw_warning_banner("autosave", state.ui.autosave_warning);

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const float font = ImGui::GetFontSize();
  // Side columns at a quarter of the width each, within readable limits; on
  // small windows the centre (the matrices) keeps at least half.
  const float left_w =
      std::min(std::clamp(avail.x * 0.25f, font * 16.0f, font * 30.0f), avail.x * 0.26f);
  const float right_w =
      std::min(std::clamp(avail.x * 0.23f, font * 15.0f, font * 28.0f), avail.x * 0.24f);
  const float centre_w = std::max(avail.x - left_w - right_w - 2 * gap, 100.0f);
  // Each column's rectangle as ImGui placed it (rounded to pixels).
  ImVec2 columns[3][2];
  auto place = [&](int i) {
    columns[i][0] = ImGui::GetWindowPos();
    columns[i][1] = ImVec2(columns[i][0].x + ImGui::GetWindowSize().x,
                           columns[i][0].y + ImGui::GetWindowSize().y);
  };
  // The columns' background, and that of the panes inside them, is the
  // cleared frame: no child window within them fills its own.
  ImGui::PushStyleColor(ImGuiCol_ChildBg, ImVec4(0, 0, 0, 0));

  ImGui::BeginChild("left", ImVec2(left_w, avail.y), true);
  place(0);
  draw_source_switch(state);
  if (state.model_source()) {
    draw_model_panel(state);
  } else {
    draw_controls_panel(state);
    draw_embedding_panel(state);
  }
  ImGui::EndChild();

  ImGui::SameLine();
  constexpr ImGuiWindowFlags kFixed =
      ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse;
  ImGui::BeginChild("centre", ImVec2(centre_w, avail.y), false, kFixed);
  place(1);
  if (state.teach.walk_active) state.ui.welcome_dismissed = true;
  if (!state.ui.welcome_dismissed && !state.model_source()) draw_welcome_card(state);
  if (state.model_source())
    draw_model_centre(state);
  else
    draw_stage_area(state);
  ImGui::EndChild();

  ImGui::SameLine();
  ImGui::BeginChild("right", ImVec2(right_w, avail.y), true);
  place(2);
  if (state.teach.walk_active) {
    // The walkthrough takes the column's foot, the inspector the rest: the
    // panel never covers the inspector it points at, nor the matrices.
    const float column_h = ImGui::GetContentRegionAvail().y;
    const float walk_h = walkthrough_height(column_h);
    ImGui::BeginChild("inspector", ImVec2(0, column_h - walk_h - ImGui::GetStyle().ItemSpacing.y));
    draw_inspector_panel(state);
    ImGui::EndChild();
    draw_walkthrough(state);
  } else if (state.model_source() && state.model.view == ModelView::Model) {
    draw_head_scores(state);
  } else if (state.model_source() && state.model.view == ModelView::Tokens) {
    draw_token_focus(state);
  } else {
    draw_inspector_panel(state);
  }
  ImGui::EndChild();
  ImGui::PopStyleColor();
  host->ChannelsSetCurrent(0);
  fill_around_columns(outer_min, outer_max, columns);
  host->ChannelsMerge();

  ImGui::End();
  draw_menu_popups(state);
  draw_learn_windows(state);  // teach/teach.hpp
  if (state.model_source()) draw_lens_window(state);
  if (state.model_source()) draw_checkpoint_compare(state);
  draw_get_model_window(state);
  draw_computing_indicator(state);
  // An edit made while drawing this frame (a keystroke, a click) goes to
  // the engine now, while the frame is rendered and shown, not a frame later.
  state.post_if_dirty();
}

}  // namespace attnscope::gui
