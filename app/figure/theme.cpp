// theme.cpp: the themes' colours (see theme.hpp).
#include "figure/theme.hpp"

namespace attnscope::figure {

namespace {

// The screen's colours: the background of the panels heatmaps sit in
// (ChildBg, 0.14 0.15 0.17 in fonts.cpp's style), text near ImGui's dark
// style's white, and the heatmap widget's lines between cells (black at 60/255).
constexpr ThemeColors kDark{.background = {36, 38, 43, 255},
                            .text = {235, 236, 238, 255},
                            .dim = {160, 164, 172, 255},
                            .frame = {112, 117, 127, 255},
                            .cell_lines = {0, 0, 0, 60}};

// The figures' colours before themes, with light lines between cells
// instead of dark ones, which print heavy on paper.
constexpr ThemeColors kLight{.background = {255, 255, 255, 255},
                             .text = {0x22, 0x22, 0x22, 255},
                             .dim = {0x55, 0x55, 0x55, 255},
                             .frame = {0x88, 0x88, 0x88, 255},
                             .cell_lines = {255, 255, 255, 110}};

}  // namespace

const ThemeColors& theme_colors(Theme t) { return t == Theme::Dark ? kDark : kLight; }

std::string_view theme_id(Theme t) { return t == Theme::Dark ? "dark" : "light"; }

std::string_view theme_label(Theme t) { return t == Theme::Dark ? "Dark" : "Light"; }

std::optional<Theme> parse_theme(std::string_view id) {
  for (Theme t : kAllThemes)
    if (theme_id(t) == id) return t;
  return std::nullopt;
}

}  // namespace attnscope::figure
