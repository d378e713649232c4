// imgui_compat.hpp: the few ImGui calls that changed between 1.86 (Debian's)
// and later releases (built with -DIMGUI_DIR).
#pragma once

#include "imgui.h"

namespace attnscope::gui {

// A named key went down this frame (with key repeat).
inline bool key_pressed(ImGuiKey key) {
#if IMGUI_VERSION_NUM >= 18700
  return ImGui::IsKeyPressed(key);
#else
  return ImGui::IsKeyPressed(ImGui::GetKeyIndex(key));
#endif
}

// The letter key ('A'..'Z') went down this frame. ImGui 1.86 has no named
// letter keys; its GLFW backend indexes KeysDown by GLFW key code, which for
// letters is the ASCII capital.
inline bool letter_pressed(char upper) {
#if IMGUI_VERSION_NUM >= 18700
  return ImGui::IsKeyPressed(static_cast<ImGuiKey>(ImGuiKey_A + (upper - 'A')), false);
#else
  return ImGui::IsKeyPressed(upper, false);
#endif
}

// The character was typed this frame, wherever the keyboard layout puts it
// ('[' and ']' are not keys of their own on many layouts).
inline bool char_typed(ImWchar c) {
  const ImGuiIO& io = ImGui::GetIO();
  for (int i = 0; i < io.InputQueueCharacters.Size; ++i)
    if (io.InputQueueCharacters[i] == c) return true;
  return false;
}

// The keypad's Enter key (renamed in 1.87).
#if IMGUI_VERSION_NUM >= 18700
inline constexpr ImGuiKey kKeypadEnter = ImGuiKey_KeypadEnter;
#else
inline constexpr ImGuiKey kKeypadEnter = ImGuiKey_KeyPadEnter;
#endif

// How far the current font at the current size advances the pen for `c`
// (1.92 bakes fonts per size).
inline float font_char_advance(ImWchar c) {
#if IMGUI_VERSION_NUM >= 19200
  return ImGui::GetFontBaked()->GetCharAdvance(c);
#else
  const ImFont* font = ImGui::GetFont();
  return font->GetCharAdvance(c) * (ImGui::GetFontSize() / font->FontSize);
#endif
}

}  // namespace attnscope::gui
