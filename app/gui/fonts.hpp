// fonts.hpp: fonts and style. DejaVu Sans (fonts-dejavu-core) when installed,
// ImGui's built-in font otherwise, at a size that follows the UI scale.
#pragma once

#include <string>

#include "app_state.hpp"

namespace attnscope::gui {

// Pixel size of body text at scale 1.
inline constexpr float kBaseFontPx = 17.0f;

// The UI scale in effect: the monitor's content scale times the user's factor.
float effective_scale(const UiState& ui);

// The DejaVu Sans file the UI uses, "" when none is installed (off-screen
// figure rendering bakes its own sizes from it).
std::string sans_font_file();

// Rebuilds the font atlas (regular, heading, mono) and the style for
// effective_scale(state.ui); sets ui.unicode and the font pointers. The
// renderer's font texture must be recreated afterwards.
void setup_fonts_and_style(AppState& state);

}  // namespace attnscope::gui
