// fonts.cpp: font files, glyph ranges, and the app's look.
#include "platform/fonts.hpp"

#include <stb_truetype.h>  // libstb's copy (ImGui's own is static inside it)

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "imgui.h"
#include "platform/text_edit.hpp"  // append_utf8

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
// Chinese and Japanese (Droid Sans Fallback has no Hangul syllables; Noto
// Sans CJK has all three): Debian's fonts-droid-fallback or fonts-noto-cjk,
// then Fedora's and Arch's places for the same files.
constexpr const char* kCjkPaths[] = {
    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/google-droid-sans-fonts/DroidSansFallbackFull.ttf",
    "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",
};
// Korean (fonts-nanum), for when the CJK font has no Hangul.
constexpr const char* kKoreanPaths[] = {
    "/usr/share/fonts/truetype/nanum/NanumGothic.ttf",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/nanum-gothic-fonts/NanumGothic.ttf",
    "/usr/share/fonts/TTF/NanumGothic.ttf",
};
// Symbols and dingbats DejaVu lacks (fonts-symbola).
constexpr const char* kSymbolPaths[] = {
    "/usr/share/fonts/truetype/ancient-scripts/Symbola_hint.ttf",
    "/usr/share/fonts/gdouros-symbola/Symbola.ttf",
    "/usr/share/fonts/TTF/Symbola.ttf",
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

// Glyph ranges of the last build: ImFontConfig points at them, so they
// outlive setup_fonts_and_style. All: the fixed ranges plus the extra
// characters; extra: those alone, for the fallback fonts.
ImVector<ImWchar> g_all_ranges;
ImVector<ImWchar> g_extra_ranges;

// Characters above U+FFFF (emoji) where ImWchar is 16-bit: ImGui cannot name
// them, so each one a font has gets a Private Use Area stand-in from U+E000,
// whose glyph this file rasterizes (stb_truetype) into the atlas as a custom
// glyph of every font. The stand-ins of the last build; drawable_codepoint
// reads them. (ImGui 1.92 bakes glyphs on demand and no longer takes custom
// glyphs this way; there they stay U+FFFD unless ImWchar is 32-bit.)
#if IM_UNICODE_CODEPOINT_MAX < 0x10FFFF && IMGUI_VERSION_NUM < 19200
#define ATTNSCOPE_STAND_INS 1
constexpr bool kStandIns = true;
#else
constexpr bool kStandIns = false;
#endif
constexpr char32_t kFirstStandIn = 0xE000;
constexpr std::size_t kMaxStandIns = 0xF8FF - 0xE000 + 1;
std::map<char32_t, char32_t> g_stand_ins;

// The UTF-8 sequence at text[i]: its length and character, or 0 when the
// bytes there are not a well-formed one (overlong, surrogate, cut short).
std::size_t utf8_at(std::string_view text, std::size_t i, char32_t& cp) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  // Length, the lead byte's bits and the least character of that length.
  const std::size_t len = (b0 & 0xE0) == 0xC0   ? 2
                          : (b0 & 0xF0) == 0xE0 ? 3
                          : (b0 & 0xF8) == 0xF0 ? 4
                                                : 0;
  if (len == 0) return 0;
  constexpr char32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  const char32_t least = kLeast[len];
  cp = b0 & (0x7F >> len);
  if (i + len > text.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(text[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < least || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

void build_ranges(const std::set<char32_t>& extra) {
  ImFontGlyphRangesBuilder all, only;
  all.AddRanges(kGlyphRanges);
  for (const char32_t cp : extra) {
    if (cp > IM_UNICODE_CODEPOINT_MAX) continue;  // a stand-in glyph, if any
    all.AddChar(static_cast<ImWchar>(cp));
    only.AddChar(static_cast<ImWchar>(cp));
  }
  g_all_ranges.clear();
  g_extra_ranges.clear();
  all.BuildRanges(&g_all_ranges);
  only.BuildRanges(&g_extra_ranges);
}

// A fallback file's bytes, read once: every rebuild merges it into three
// fonts. Empty when it cannot be read. Fonts are built on the UI thread only.
const std::vector<char>& font_file_bytes(const std::string& path) {
  static std::map<std::string, std::vector<char>> cache;
  auto [it, fresh] = cache.try_emplace(path);
  if (fresh) {
    std::ifstream in(path, std::ios::binary);
    it->second.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return it->second;
}

// One font of `file` at `px` with every range, and the fallback fonts merged
// into it for the extra characters DejaVu lacks (a merged font never
// replaces a glyph an earlier one gave).
ImFont* add_font(const char* file, float px, const std::vector<std::string>& fallbacks) {
  ImFontAtlas& atlas = *ImGui::GetIO().Fonts;
  ImFontConfig cfg;
  cfg.OversampleH = 2;
  cfg.OversampleV = 1;
  ImFont* font = atlas.AddFontFromFileTTF(file, px, &cfg, g_all_ranges.Data);
  if (!font || g_extra_ranges.Size <= 1) return font;
  for (const std::string& path : fallbacks) {
    const std::vector<char>& bytes = font_file_bytes(path);
    if (bytes.empty()) continue;
    ImFontConfig merge;
    merge.MergeMode = true;
    merge.FontDataOwnedByAtlas = false;  // the cache keeps the bytes; ImGui only reads them
    merge.OversampleH = 1;               // thousands of CJK glyphs: keep the atlas small
    merge.OversampleV = 1;
    atlas.AddFontFromMemoryTTF(const_cast<char*>(bytes.data()), static_cast<int>(bytes.size()), px,
                               &merge, g_extra_ranges.Data);
  }
  return font;
}

const char* first_existing(const char* const* paths, std::size_t n) {
  std::error_code ec;
  for (std::size_t k = 0; k < n; ++k)
    if (std::filesystem::exists(paths[k], ec)) return paths[k];
  return nullptr;
}

#if ATTNSCOPE_STAND_INS
// One font file opened for stb_truetype (its bytes stay in font_file_bytes'
// cache).
struct Face {
  stbtt_fontinfo info{};
  bool ok = false;
};

std::vector<Face> open_faces(const std::vector<std::string>& files) {
  std::vector<Face> faces(files.size());
  for (std::size_t k = 0; k < files.size(); ++k) {
    const std::vector<char>& bytes = font_file_bytes(files[k]);
    if (bytes.empty()) continue;
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    const int offset = stbtt_GetFontOffsetForIndex(data, 0);
    faces[k].ok = offset >= 0 && stbtt_InitFont(&faces[k].info, data, offset) != 0;
  }
  return faces;
}

// A stand-in glyph waiting for its pixels: its atlas rectangle in one font
// and how to draw it.
struct StandInGlyph {
  ImFont* font = nullptr;
  int rect = -1;
  const Face* face = nullptr;
  int glyph = 0;
  float scale = 0;
  int w = 0, h = 0;
  ImWchar code = 0;
};

// Before the atlas is built: a stand-in for each character of `extra` above
// U+FFFF that one of `faces` has (the first that has it), and a custom glyph
// rectangle for it in each of `fonts` at its pixel size.
std::vector<StandInGlyph> reserve_stand_ins(const std::set<char32_t>& extra,
                                            const std::vector<Face>& faces,
                                            const std::vector<std::pair<ImFont*, float>>& fonts) {
  g_stand_ins.clear();
  std::vector<StandInGlyph> out;
  ImFontAtlas& atlas = *ImGui::GetIO().Fonts;
  for (auto it = extra.upper_bound(0xFFFF); it != extra.end() && g_stand_ins.size() < kMaxStandIns;
       ++it) {
    const Face* face = nullptr;
    int glyph = 0;
    for (const Face& f : faces)
      if (f.ok && (glyph = stbtt_FindGlyphIndex(&f.info, static_cast<int>(*it))) != 0) {
        face = &f;
        break;
      }
    if (!face) continue;  // no font has it: U+FFFD
    const auto code = static_cast<ImWchar>(kFirstStandIn + g_stand_ins.size());
    g_stand_ins[*it] = code;
    for (const auto& [font, px] : fonts) {
      if (!font) continue;
      StandInGlyph g{font, -1, face, glyph, stbtt_ScaleForPixelHeight(&face->info, px), 0, 0, code};
      int advance = 0, bearing = 0, x0 = 0, y0 = 0, x1 = 0, y1 = 0;
      stbtt_GetGlyphHMetrics(&face->info, glyph, &advance, &bearing);
      stbtt_GetGlyphBitmapBox(&face->info, glyph, g.scale, g.scale, &x0, &y0, &x1, &y1);
      g.w = std::max(x1 - x0, 1);
      g.h = std::max(y1 - y0, 1);
      // The box from the baseline for now; draw_stand_ins adds the ascent.
      g.rect =
          atlas.AddCustomRectFontGlyph(font, code, g.w, g.h, static_cast<float>(advance) * g.scale,
                                       ImVec2(static_cast<float>(x0), static_cast<float>(y0)));
      out.push_back(g);
    }
  }
  return out;
}

// After the atlas is built: each stand-in's pixels into its rectangle, and
// its box moved down from the baseline by the font's ascent (as ImGui places
// the glyphs it bakes; the ascent is known only now).
void draw_stand_ins(const std::vector<StandInGlyph>& glyphs) {
  ImFontAtlas& atlas = *ImGui::GetIO().Fonts;
  if (!atlas.TexPixelsAlpha8) return;
  for (const StandInGlyph& g : glyphs) {
    const ImFontAtlasCustomRect* r = atlas.GetCustomRectByIndex(g.rect);
    if (!r || !r->IsPacked()) continue;
    stbtt_MakeGlyphBitmap(&g.face->info, atlas.TexPixelsAlpha8 + r->Y * atlas.TexWidth + r->X, g.w,
                          g.h, atlas.TexWidth, g.scale, g.scale, g.glyph);
    const float top = std::floor(g.font->Ascent + 0.5f);
    for (ImFontGlyph& glyph : g.font->Glyphs)
      if (glyph.Codepoint == g.code) {
        glyph.Y0 += top;
        glyph.Y1 += top;
      }
  }
}
#endif  // ATTNSCOPE_STAND_INS

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

bool in_fixed_glyph_ranges(char32_t cp) {
  for (const ImWchar* r = kGlyphRanges; r[0] != 0; r += 2)
    if (cp >= r[0] && cp <= r[1]) return true;
  return false;
}

std::size_t collect_extra_glyphs(std::string_view text, std::set<char32_t>& extra,
                                 std::size_t cap) {
  std::size_t added = 0;
  for (std::size_t i = 0; i < text.size() && extra.size() < cap;) {
    char32_t cp = 0;
    const std::size_t len = utf8_at(text, i, cp);
    i += len == 0 ? 1 : len;
    if (len == 0 || cp < 0x20 || (cp > IM_UNICODE_CODEPOINT_MAX && !kStandIns) ||
        in_fixed_glyph_ranges(cp))
      continue;
    added += extra.insert(cp).second ? 1 : 0;
  }
  return added;
}

char32_t drawable_codepoint(char32_t cp) {
  if (cp > IM_UNICODE_CODEPOINT_MAX) {
    const auto it = g_stand_ins.find(cp);
    return it != g_stand_ins.end() ? it->second : IM_UNICODE_CODEPOINT_INVALID;
  }
  // A private use character of the text itself would show a stand-in's glyph.
  if (cp >= kFirstStandIn && cp < kFirstStandIn + g_stand_ins.size())
    return IM_UNICODE_CODEPOINT_INVALID;
  return cp;
}

std::string drawable_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    const std::size_t len = utf8_at(text, i, cp);
    const char32_t drawn = len == 0 ? IM_UNICODE_CODEPOINT_INVALID : drawable_codepoint(cp);
    if (len > 0 && drawn == cp)
      out.append(text.substr(i, len));
    else
      append_utf8(out, drawn);
    i += len == 0 ? 1 : len;
  }
  return out;
}

std::string cjk_font_file() {
  const char* cjk = first_existing(kCjkPaths, std::size(kCjkPaths));
  return cjk ? cjk : "";
}

std::vector<std::string> fallback_font_files() {
  std::vector<std::string> out;
  for (const auto& [paths, n] : {std::pair{kCjkPaths, std::size(kCjkPaths)},
                                 std::pair{kKoreanPaths, std::size(kKoreanPaths)},
                                 std::pair{kSymbolPaths, std::size(kSymbolPaths)}}) {
    const char* file = first_existing(paths, n);
    if (file && std::find(out.begin(), out.end(), file) == out.end()) out.emplace_back(file);
  }
  return out;
}

std::string sans_font_file() {
  const char* sans = first_existing(kSansPaths, std::size(kSansPaths));
  return sans ? sans : "";
}

float effective_scale(float content_scale, float ui_scale) {
  return std::clamp(content_scale * ui_scale, 0.5f, 4.0f);
}

FontSet setup_fonts_and_style(float scale, const std::set<char32_t>& extra) {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  FontSet fonts;

  const char* sans = first_existing(kSansPaths, std::size(kSansPaths));
  const char* mono = first_existing(kMonoPaths, std::size(kMonoPaths));
  build_ranges(extra);
  const std::vector<std::string> fallbacks =
      g_extra_ranges.Size > 1 ? fallback_font_files() : std::vector<std::string>{};
  ImFont* body = nullptr;
  if (sans) {
    body = add_font(sans, kBaseFontPx * scale, fallbacks);
    fonts.heading = add_font(sans, kBaseFontPx * 1.3f * scale, fallbacks);
    if (mono) fonts.mono = add_font(mono, (kBaseFontPx - 2.0f) * scale, fallbacks);
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
  g_stand_ins.clear();
#if ATTNSCOPE_STAND_INS
  std::vector<Face> faces;
  std::vector<StandInGlyph> stand_ins;
  if (sans && extra.upper_bound(0xFFFF) != extra.end()) {
    std::vector<std::string> files = fallback_font_files();
    files.insert(files.begin(), sans);
    faces = open_faces(files);
    stand_ins = reserve_stand_ins(extra, faces,
                                  {{body, kBaseFontPx * scale},
                                   {fonts.heading, kBaseFontPx * 1.3f * scale},
                                   {fonts.mono, (kBaseFontPx - 2.0f) * scale}});
  }
  io.Fonts->Build();
  draw_stand_ins(stand_ins);
#else
  io.Fonts->Build();
#endif
  apply_style(scale);
  return fonts;
}

}  // namespace attnscope::gui
