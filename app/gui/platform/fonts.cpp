// fonts.cpp: font files, glyph ranges, and the app's look.
#include "platform/fonts.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "imgui.h"

namespace attnscope::gui {

namespace {

constexpr const char* kSansPaths[] = {
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
};
constexpr const char* kMonoPaths[] = {
    "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
    "/usr/share/fonts/TTF/DejaVuSansMono.ttf",
    "/usr/share/fonts/dejavu/DejaVuSansMono.ttf",
};

// Latin, Greek (ω, Σ), sub/superscripts, arrows, math operators (−, √, ∞, ⊙),
// geometric shapes (◀ ▶) and ᵀ. Pairs of [first, last], zero-terminated.
constexpr ImWchar kGlyphRanges[] = {
    0x0020, 0x00FF,  // Basic Latin + Latin-1 (×, ÷, ·)
    0x0370, 0x03FF,  // Greek
    0x1D00, 0x1DBF,  // phonetic extensions: ᵀ (U+1D40)
    0x2000, 0x206F,  // punctuation: – — …
    0x2070, 0x209F,  // super- and subscripts
    0x2190, 0x21FF,  // arrows
    0x2200, 0x22FF,  // math operators
    0x25A0, 0x25FF,  // geometric shapes
    0xFFFD, 0xFFFD,  // replacement character: text cut inside a character
    0,
};

const char* first_existing(const char* const* paths, std::size_t n) {
  std::error_code ec;
  for (std::size_t k = 0; k < n; ++k)
    if (std::filesystem::exists(paths[k], ec)) return paths[k];
  return nullptr;
}

void apply_style(float scale) {
  ImGuiStyle& style = ImGui::GetStyle();
  style = ImGuiStyle();
  ImGui::StyleColorsDark(&style);
  style.WindowRounding = 4.0f;
  style.ChildRounding = 4.0f;
  style.FrameRounding = 3.0f;
  style.GrabRounding = 3.0f;
  style.PopupRounding = 4.0f;
  style.FramePadding = ImVec2(6, 4);
  style.ItemSpacing = ImVec2(8, 6);
  style.WindowPadding = ImVec2(10, 10);
  style.WindowBorderSize = 0.0f;
  // Controls a variant does not use (training/eval in simplified
  // self-attention) must not look active: greyer than the default 0.6.
  style.DisabledAlpha = 0.4f;
  ImVec4* c = style.Colors;
  c[ImGuiCol_WindowBg] = ImVec4(0.11f, 0.12f, 0.14f, 1.0f);
  c[ImGuiCol_ChildBg] = ImVec4(0.14f, 0.15f, 0.17f, 1.0f);
  c[ImGuiCol_MenuBarBg] = ImVec4(0.16f, 0.17f, 0.20f, 1.0f);
  c[ImGuiCol_Border] = ImVec4(0.28f, 0.30f, 0.34f, 1.0f);
  c[ImGuiCol_Header] = ImVec4(0.22f, 0.32f, 0.46f, 1.0f);
  c[ImGuiCol_HeaderHovered] = ImVec4(0.28f, 0.40f, 0.58f, 1.0f);
  c[ImGuiCol_HeaderActive] = ImVec4(0.30f, 0.45f, 0.65f, 1.0f);
  // An integer slider's grab is as wide as one step (half the slider for 0..1)
  // and its digits are drawn over it: a dim grab keeps them readable.
  c[ImGuiCol_SliderGrab] = ImVec4(0.26f, 0.46f, 0.78f, 0.55f);
  c[ImGuiCol_SliderGrabActive] = ImVec4(0.34f, 0.56f, 0.92f, 0.70f);
  style.ScaleAllSizes(scale);
}

}  // namespace

std::string sans_font_file() {
  const char* sans = first_existing(kSansPaths, std::size(kSansPaths));
  return sans ? sans : "";
}

float effective_scale(float content_scale, float ui_scale) {
  return std::clamp(content_scale * ui_scale, 0.5f, 4.0f);
}

FontSet setup_fonts_and_style(float scale) {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  FontSet fonts;

  const char* sans = first_existing(kSansPaths, std::size(kSansPaths));
  const char* mono = first_existing(kMonoPaths, std::size(kMonoPaths));
  ImFontConfig cfg;
  cfg.OversampleH = 2;
  cfg.OversampleV = 1;
  ImFont* body = nullptr;
  if (sans) {
    body = io.Fonts->AddFontFromFileTTF(sans, kBaseFontPx * scale, &cfg, kGlyphRanges);
    fonts.heading =
        io.Fonts->AddFontFromFileTTF(sans, kBaseFontPx * 1.3f * scale, &cfg, kGlyphRanges);
    if (mono)
      fonts.mono =
          io.Fonts->AddFontFromFileTTF(mono, (kBaseFontPx - 2.0f) * scale, &cfg, kGlyphRanges);
  }
  fonts.unicode = body != nullptr;
  if (!body) {
    // ProggyClean is a 13 px bitmap font; scaling it by whole steps keeps it crisp.
    ImFontConfig def;
    def.SizePixels = 13.0f * std::max(1.0f, std::round(scale * 1.3f));
    body = io.Fonts->AddFontDefault(&def);
    fonts.heading = nullptr;
  }
  io.FontDefault = body;
  io.Fonts->Build();
  apply_style(scale);
  return fonts;
}

}  // namespace attnscope::gui
