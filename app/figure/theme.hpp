// theme.hpp: the colours of an exported figure around its cells: the
// background, the texts, the frames of the colour bar and swatches, and the
// lines between big cells. Every figure (heatmap_figure, head_grid_figure)
// takes them from here, so the SVG painter and the app's PNG renderer draw
// a theme alike. The cells keep their palette's colours (colormap.hpp) in
// every theme: a theme changes what surrounds the values, never the values.
#pragma once

#include <optional>
#include <string_view>

#include "figure/colormap.hpp"

namespace attnscope::figure {

enum class Theme {
  Dark,   // the app's screen: its window background, light text
  Light,  // a page: white background, dark text, light lines (papers, slides)
};
inline constexpr Theme kAllThemes[] = {Theme::Dark, Theme::Light};
// What figures were before themes existed, and what a session without a
// theme (or the CLI without --theme) gets.
inline constexpr Theme kDefaultTheme = Theme::Light;

struct ThemeColors {
  Rgba8 background;
  Rgba8 text;        // titles, the colour bar's numbers, layer labels
  Rgba8 dim;         // subtitles, axis names, token labels
  Rgba8 frame;       // outlines of the colour bar and the legend swatches
  Rgba8 cell_lines;  // hairlines between cells big enough to have them (translucent)
};

const ThemeColors& theme_colors(Theme t);

// "dark" / "light": sessions and --theme.
std::string_view theme_id(Theme t);
// "Dark" / "Light": the export menus.
std::string_view theme_label(Theme t);
// Parses theme_id(); nullopt when unknown.
std::optional<Theme> parse_theme(std::string_view id);
// "dark or light", for messages that name the valid values.
inline constexpr std::string_view kThemeNames = "dark or light";

}  // namespace attnscope::figure
