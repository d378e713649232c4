// headless_imgui.hpp: the start shared by the GUI tests that draw without a
// window (ImGui's null backend): a context that never writes imgui.ini, a
// 1600 x 1000 display at 60 Hz, the book preset, the app's fonts and style,
// and the font atlas built. Each fixture maps the keys it presses itself.
// Then frames of the whole UI, and clicks, as the fixtures drive them.
#pragma once

#include "imgui.h"
#include "platform/fonts.hpp"
#include "shell/ui.hpp"
#include "state/app_state.hpp"

namespace attnscope::gui {

inline void start_headless_imgui(AppState& state) {
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // never write imgui.ini from a test
  io.DisplaySize = ImVec2(1600, 1000);
  io.DeltaTime = 1.0f / 60.0f;
  state.load_preset("book");
  rebuild_fonts(state.ui);
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
}

// One frame of the whole UI, 1/60 s after the last; returns the vertices drawn.
inline int headless_frame(AppState& state) {
  ImGui::GetIO().DeltaTime = 1.0f / 60.0f;
  ImGui::NewFrame();
  draw_ui(state);
  ImGui::Render();
  return ImGui::GetDrawData()->TotalVtxCount;
}

inline void headless_frames(AppState& state, int n) {
  for (int k = 0; k < n; ++k) headless_frame(state);
}

// The pointer moves to `p`, presses and releases: one frame each.
inline void headless_click(AppState& state, ImVec2 p) {
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = p;
  io.MouseDown[0] = false;
  headless_frame(state);
  io.MouseDown[0] = true;
  headless_frame(state);
  io.MouseDown[0] = false;
  headless_frame(state);
}

}  // namespace attnscope::gui
