// headless_imgui.hpp: the start shared by the GUI tests that draw without a
// window (ImGui's null backend): a context that never writes imgui.ini, a
// 1600 x 1000 display at 60 Hz, the book preset, the app's fonts and style,
// and the font atlas built. Each fixture maps the keys it presses itself.
#pragma once

#include "app_state.hpp"
#include "fonts.hpp"
#include "imgui.h"

namespace attnscope::gui {

inline void start_headless_imgui(AppState& state) {
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // never write imgui.ini from a test
  io.DisplaySize = ImVec2(1600, 1000);
  io.DeltaTime = 1.0f / 60.0f;
  state.load_preset("book");
  setup_fonts_and_style(state);
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
}

}  // namespace attnscope::gui
