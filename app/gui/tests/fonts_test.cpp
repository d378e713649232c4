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

TEST(ExtraGlyphs, CharactersBeyondWhatImGuiDrawsAreLeftOut) {
  // 😀 (U+1F600): with 16-bit ImWchar ImGui decodes it to U+FFFD, which the
  // fixed ranges hold; with 32-bit ImWchar it is collected like any other.
  std::set<char32_t> extra;
  const std::size_t added = collect_extra_glyphs("\xf0\x9f\x98\x80", extra);
  if constexpr (IM_UNICODE_CODEPOINT_MAX >= 0x1F600) {
    EXPECT_EQ(added, 1u);
    EXPECT_EQ(extra.count(U'\U0001F600'), 1u);
  } else {
    EXPECT_EQ(added, 0u);
    EXPECT_TRUE(extra.empty());
  }
}

}  // namespace
}  // namespace attnscope::gui
