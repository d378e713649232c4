// fonts.hpp: fonts and style. DejaVu Sans (fonts-dejavu-core) when installed,
// ImGui's built-in font otherwise, at a size that follows the UI scale.
// Characters of shown texts beyond the fixed ranges (Cyrillic, CJK, ...)
// are added on demand, from DejaVu or else from a fallback font merged in.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

struct ImFont;

namespace attnscope::gui {

// Pixel size of body text at scale 1.
inline constexpr float kBaseFontPx = 17.0f;

// The UI scale in effect: the monitor's content scale times the user's
// factor, clamped to 0.5..4.
float effective_scale(float content_scale, float ui_scale);

// The DejaVu Sans file the UI uses, "" when none is installed (off-screen
// figure rendering bakes its own sizes from it).
std::string sans_font_file();

// The fonts setup_fonts_and_style built beside the default (body) font.
struct FontSet {
  bool unicode = true;        // the body font has −, ∞, √, ᵀ, → (false: built-in font)
  ImFont* heading = nullptr;  // larger, for titles (nullptr: the default font)
  ImFont* mono = nullptr;     // fixed width, for tables of numbers (nullptr: none)
};

// At most this many characters are added to the fixed ranges (each one is
// baked three times: body, heading, mono).
inline constexpr std::size_t kMaxExtraGlyphs = 8000;

// Whether the fixed glyph ranges (Latin, Greek, arrows, math, ...) hold `cp`.
bool in_fixed_glyph_ranges(char32_t cp);

// Adds to `extra` every character of the UTF-8 `text` that the fixed ranges
// lack and that this ImGui build can draw (up to IM_UNICODE_CODEPOINT_MAX:
// with 16-bit characters ImGui shows anything above U+FFFF as U+FFFD, which
// the fixed ranges hold), while `extra` holds fewer than `cap`. Malformed
// bytes are skipped. Returns how many were new.
std::size_t collect_extra_glyphs(std::string_view text, std::set<char32_t>& extra,
                                 std::size_t cap = kMaxExtraGlyphs);

// The character ImGui is given to draw `cp`: itself, or U+FFFD above what
// this build's ImWchar holds.
char32_t drawable_codepoint(char32_t cp);
// The UTF-8 `text` as ImGui should be given it to draw (drawable_codepoint
// for each character; malformed bytes become U+FFFD).
std::string drawable_text(std::string_view text);

// The first Chinese and Japanese font installed (Droid Sans Fallback, Noto
// Sans CJK), "" when none.
std::string cjk_font_file();

// The fallback font files installed, in the order they are merged after
// DejaVu for the extra characters (each gives only what the ones before
// lack): the CJK font, a Korean one (Nanum Gothic), a symbol one (Symbola).
std::vector<std::string> fallback_font_files();

// Rebuilds the font atlas (regular, heading, mono) and the style for
// `scale`, with the fixed ranges plus `extra`. The renderer's font texture
// must be recreated afterwards.
FontSet setup_fonts_and_style(float scale, const std::set<char32_t>& extra = {});

}  // namespace attnscope::gui
