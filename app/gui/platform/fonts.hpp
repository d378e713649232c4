// fonts.hpp: fonts and style. DejaVu Sans (fonts-dejavu-core) when installed,
// ImGui's built-in font otherwise, at a size that follows the UI scale.
#pragma once

#include <string>

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

// Rebuilds the font atlas (regular, heading, mono) and the style for
// `scale`. The renderer's font texture must be recreated afterwards.
FontSet setup_fonts_and_style(float scale);

}  // namespace attnscope::gui
