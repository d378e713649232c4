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
// lack and that this build can draw, while `extra` holds fewer than `cap`:
// above U+FFFF (emoji) too, which a 16-bit ImWchar cannot name and which
// the fonts then draw through stand-ins (drawable_codepoint), except with
// ImGui 1.92 and later, where only a 32-bit ImWchar draws them. Malformed
// bytes are skipped. Returns how many were new.
std::size_t collect_extra_glyphs(std::string_view text, std::set<char32_t>& extra,
                                 std::size_t cap = kMaxExtraGlyphs);

// The character ImGui is given to draw `cp`. Itself, except above what this
// build's ImWchar holds: the Private Use Area stand-in (from U+E000) whose
// glyph the last setup_fonts_and_style made from a font that has `cp`
// (Symbola for emoji), or U+FFFD. A private use character of the text that
// a stand-in took is U+FFFD too. With a 32-bit ImWchar: always itself.
char32_t drawable_codepoint(char32_t cp);
// The UTF-8 `text` as ImGui should be given it to draw: drawable_codepoint
// of each character, malformed bytes as U+FFFD. For what the app draws of
// user text (the text boxes, token chips, heatmap labels, next tokens);
// the text itself keeps its real characters.
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
