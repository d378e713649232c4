// fonts_test.cpp: the characters the fonts lack, collected from shown texts
// (collect_extra_glyphs): UTF-8 decoding, no duplicates, the cap, and
// characters beyond what this ImGui build can draw.
#include "platform/fonts.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "imgui.h"

namespace attnscope::gui {
namespace {

TEST(ExtraGlyphs, FixedRangesHoldLatinGreekAndMathButNotCyrillicOrCjk) {
  EXPECT_TRUE(in_fixed_glyph_ranges(U'A'));
  EXPECT_TRUE(in_fixed_glyph_ranges(U'\u00e9'));  // é
  EXPECT_TRUE(in_fixed_glyph_ranges(U'\u03c9'));  // ω
  EXPECT_TRUE(in_fixed_glyph_ranges(U'\u2192'));  // →
  EXPECT_TRUE(in_fixed_glyph_ranges(U'\ufffd'));
  EXPECT_FALSE(in_fixed_glyph_ranges(U'\u041f'));  // П
  EXPECT_FALSE(in_fixed_glyph_ranges(U'\u4e16'));  // 世
  EXPECT_FALSE(in_fixed_glyph_ranges(U'\u2605'));  // ★
}

TEST(ExtraGlyphs, CollectsEachNewCharacterOnce) {
  std::set<char32_t> extra;
  // П р и в е т, then п: seven characters; the Latin and Greek ones are in the fixed ranges.
  EXPECT_EQ(collect_extra_glyphs("Привет привет, hello ω → x", extra), 7u);
  EXPECT_EQ(extra.size(), 7u);
  EXPECT_EQ(extra.count(U'\u041f'), 1u);  // П
  EXPECT_EQ(extra.count(U'\u043f'), 1u);  // п
  EXPECT_EQ(collect_extra_glyphs("Привет", extra), 0u);
  EXPECT_EQ(collect_extra_glyphs("世界 ★", extra), 3u);
  EXPECT_EQ(extra.count(U'\u4e16'), 1u);
  EXPECT_EQ(extra.count(U'\u754c'), 1u);
  EXPECT_EQ(extra.count(U'\u2605'), 1u);
}

TEST(ExtraGlyphs, SkipsMalformedBytesAndKeepsWhatFollows) {
  std::set<char32_t> extra;
  // A lone continuation byte, a cut CJK character, an overlong "/", a
  // surrogate, a byte that never starts UTF-8: nothing; then Ж.
  EXPECT_EQ(collect_extra_glyphs("\x80\xe4\xb8 \xc0\xaf\xed\xa0\x80\xff\xd0\x96", extra), 1u);
  EXPECT_EQ(extra, std::set<char32_t>{U'\u0416'});
  EXPECT_EQ(collect_extra_glyphs("\xd0", extra), 0u);  // cut at the end
}

TEST(ExtraGlyphs, StopsAtTheCap) {
  std::set<char32_t> extra;
  std::string text;
  for (char32_t cp = 0x4e00; cp < 0x4e00 + 100; ++cp) {
    text += static_cast<char>(0xE0 | (cp >> 12));
    text += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    text += static_cast<char>(0x80 | (cp & 0x3F));
  }
  EXPECT_EQ(collect_extra_glyphs(text, extra, 10), 10u);
  EXPECT_EQ(extra.size(), 10u);
  EXPECT_EQ(*extra.begin(), U'\u4e00');
  EXPECT_EQ(collect_extra_glyphs("Ж", extra, 10), 0u);
}

TEST(ExtraGlyphs, CharactersAboveUffffAreCollectedWhereTheyCanBeDrawn) {
  // 😀 (U+1F600): a 32-bit ImWchar names it; a 16-bit one draws it through a
  // stand-in glyph, which ImGui 1.92 no longer takes (there it stays U+FFFD).
  std::set<char32_t> extra;
  const std::size_t added = collect_extra_glyphs("\xf0\x9f\x98\x80", extra);
  if constexpr (IM_UNICODE_CODEPOINT_MAX >= 0x1F600 || IMGUI_VERSION_NUM < 19200) {
    EXPECT_EQ(added, 1u);
    EXPECT_EQ(extra.count(U'\U0001F600'), 1u);
  } else {
    EXPECT_EQ(added, 0u);
    EXPECT_TRUE(extra.empty());
  }
}

// The fonts built for a text with an emoji, in a context of their own.
class EmojiGlyph : public ::testing::Test {
 protected:
  void SetUp() override {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(400, 200);
    io.DeltaTime = 1.0f / 60.0f;
  }
  void TearDown() override { ImGui::DestroyContext(); }
};

TEST_F(EmojiGlyph, AnEmojiIsDrawnWithAGlyphOfItsOwnNotTheFallback) {
  if (sans_font_file().empty()) GTEST_SKIP() << "no DejaVu Sans (fonts-dejavu-core)";
  bool symbola = false;
  for (const std::string& f : fallback_font_files())
    symbola |= f.find("Symbola") != std::string::npos;
  if (!symbola) GTEST_SKIP() << "no Symbola (fonts-symbola)";
  if constexpr (IM_UNICODE_CODEPOINT_MAX < 0x1F600 && IMGUI_VERSION_NUM >= 19200)
    GTEST_SKIP() << "ImGui 1.92 with a 16-bit ImWchar draws U+FFFD above U+FFFF";
  std::set<char32_t> extra;
  collect_extra_glyphs(
      "a\xf0\x9f\x98\x80"
      "b",
      extra);
  setup_fonts_and_style(1.0f, extra);
  const char32_t drawn = drawable_codepoint(U'\U0001F600');
  ASSERT_NE(drawn, static_cast<char32_t>(IM_UNICODE_CODEPOINT_INVALID));
  if constexpr (IM_UNICODE_CODEPOINT_MAX < 0x1F600) {
    EXPECT_GE(drawn, 0xE000u);  // a stand-in in the Private Use Area
    EXPECT_LE(drawn, 0xF8FFu);
  } else {
    EXPECT_EQ(drawn, U'\U0001F600');
  }
  EXPECT_EQ(drawable_text("a\xf0\x9f\x98\x80"
                          "b")
                .size(),
            drawn > 0xFFFF ? 6u : 5u);
  ImGuiIO& io = ImGui::GetIO();
  unsigned char* alpha = nullptr;
  int w = 0, h = 0;
  io.Fonts->GetTexDataAsAlpha8(&alpha, &w, &h);
  for (const ImFont* font : io.Fonts->Fonts) {
    const ImFontGlyph* g = font->FindGlyphNoFallback(static_cast<ImWchar>(drawn));
    ASSERT_NE(g, nullptr) << "font " << font->FontSize;
    EXPECT_NE(g, font->FallbackGlyph);
    EXPECT_TRUE(g->Visible);
    EXPECT_GT(g->AdvanceX, font->FontSize * 0.5f);
    // On the line as the letters are: inside the line's height, not above it.
    const ImFontGlyph* a = font->FindGlyphNoFallback('a');
    ASSERT_NE(a, nullptr);
    EXPECT_GE(g->Y0, 0.0f);
    EXPECT_LE(g->Y1, font->FontSize * 1.2f);
    EXPECT_GT(g->Y1, a->Y1 - font->FontSize * 0.3f);
    // Ink in its rectangle of the atlas.
    int ink = 0;
    for (int y = static_cast<int>(g->V0 * static_cast<float>(h));
         y < static_cast<int>(g->V1 * static_cast<float>(h)); ++y)
      for (int x = static_cast<int>(g->U0 * static_cast<float>(w));
           x < static_cast<int>(g->U1 * static_cast<float>(w)); ++x)
        ink += alpha[y * w + x] > 128 ? 1 : 0;
    EXPECT_GT(ink, 10) << "font " << font->FontSize;
  }
}

}  // namespace
}  // namespace attnscope::gui
