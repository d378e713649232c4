// headless_imgui.hpp: the start shared by the GUI tests that draw without a
// window (ImGui's null backend): a context that never writes imgui.ini, a
// 1600 x 1000 display at 60 Hz, the book preset, the app's fonts and style,
// and the font atlas built. Each fixture maps the keys it presses itself.
// Then frames of the whole UI, and clicks, as the fixtures drive them.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "imgui.h"
#include "platform/fonts.hpp"
#include "platform/text_edit.hpp"  // append_utf8
#include "shell/ui.hpp"
#include "state/app_state.hpp"

namespace attnscope::gui {

// The font atlas rebuilt and its pixels made, as main does between frames
// when fonts_dirty is set (without the GL texture).
inline void headless_rebuild_fonts(AppState& state) {
  state.ui.fonts_dirty = false;
  rebuild_fonts(state.ui);
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  ImGui::GetIO().Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
}

inline void start_headless_imgui(AppState& state) {
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // never write imgui.ini from a test
  io.DisplaySize = ImVec2(1600, 1000);
  io.DeltaTime = 1.0f / 60.0f;
  state.load_preset("book");
  headless_rebuild_fonts(state);
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

// One glyph the last frame drew: its character (UTF-8), where the pen was
// (x, and the line's top) and where it went on to.
struct DrawnGlyph {
  std::string text;
  float pen = 0, top = 0, advance = 0;
};

// The glyphs the last frame drew, read back from its vertices: every glyph
// quad (a vertex with a glyph's top-left texture corner, the third after it
// with its bottom-right one) becomes its character, in drawing order.
// ImGui::Text, draw-list AddText, button labels and tooltips alike; clipped
// glyphs are left out.
inline std::vector<DrawnGlyph> headless_glyphs() {
  std::map<std::pair<float, float>, const ImFontGlyph*> glyph_at;
  for (const ImFont* font : ImGui::GetIO().Fonts->Fonts)
    for (const ImFontGlyph& g : font->Glyphs)
      if (g.Visible) glyph_at.emplace(std::make_pair(g.U0, g.V0), &g);
  auto utf8 = [](unsigned c) {
    std::string s;
    append_utf8(s, static_cast<char32_t>(c));
    return s;
  };
  std::vector<DrawnGlyph> out;
  const ImDrawData* data = ImGui::GetDrawData();
  if (!data) return out;
  for (int l = 0; l < data->CmdListsCount; ++l) {
    const ImVector<ImDrawVert>& v = data->CmdLists[l]->VtxBuffer;
    for (int i = 0; i + 2 < v.Size; ++i) {
      const auto it = glyph_at.find(std::make_pair(v[i].uv.x, v[i].uv.y));
      if (it == glyph_at.end()) continue;
      const ImFontGlyph& g = *it->second;
      if (v[i + 2].uv.x != g.U1 || v[i + 2].uv.y != g.V1) continue;
      // Where the pen was (the line's top, the glyph's start): glyphs sit
      // at their offsets from it (fonts drawn at their own size).
      out.push_back({utf8(g.Codepoint), v[i].pos.x - g.X0, v[i].pos.y - g.Y0, g.AdvanceX});
      i += 3;
    }
  }
  return out;
}

// The text the last frame drew (headless_glyphs in order). A new line
// starts where the glyphs' line moves or the pen goes back, a space where
// the pen skipped ahead (spaces draw no quad; compare across words with
// squeezed).
inline std::string headless_text() {
  std::string out;
  float last_x = 0, last_y = -1e9f;
  for (const DrawnGlyph& g : headless_glyphs()) {
    if (std::abs(g.top - last_y) > 1.0f || g.pen < last_x - 1.0f)
      out += '\n';
    else if (g.pen > last_x + 1.0f)
      out += ' ';
    out += g.text;
    last_x = g.pen + g.advance;
    last_y = g.top;
  }
  return out;
}

// Where the last frame drew `label` (spaces ignored): the middle of its
// first glyph's line box, to click a button by its label; nullopt if it was
// not drawn.
inline std::optional<ImVec2> headless_text_at(const std::string& label) {
  std::string want;
  for (char c : label)
    if (c != ' ') want += c;
  const std::vector<DrawnGlyph> glyphs = headless_glyphs();
  for (std::size_t i = 0; i < glyphs.size(); ++i) {
    std::string run;
    for (std::size_t k = i; k < glyphs.size() && run.size() < want.size(); ++k)
      run += glyphs[k].text;
    if (run == want)
      return ImVec2(glyphs[i].pen + glyphs[i].advance * 0.5f,
                    glyphs[i].top + ImGui::GetFontSize() * 0.5f);
  }
  return std::nullopt;
}

// `s` without spaces and line breaks: headless_text() sees no space glyphs,
// only gaps, and wrapped text breaks wherever the panel is narrow.
inline std::string squeezed(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != ' ' && c != '\n') out += c;
  return out;
}

}  // namespace attnscope::gui
