// colormap.hpp: the colour scales of every heatmap attnscope draws, on
// screen (app/gui) and in exported figures (SVG, PNG). Pure functions, no
// GUI, no GL: the one implementation, so an export looks like the screen.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace attnscope::figure {

// One 8-bit sRGB colour with alpha.
struct Rgba8 {
  std::uint8_t r = 0, g = 0, b = 0, a = 255;
  friend bool operator==(const Rgba8&, const Rgba8&) = default;
};

// A single colour scale, sampled on t in [0, 1].
enum class Colormap {
  Viridis,   // sequential, perceptually uniform (matplotlib's default)
  Cividis,   // sequential, designed to read the same with colour-vision deficiency
  Magma,     // sequential, black -> purple -> cream
  RdBu,      // diverging, blue (negative) -> white (0) -> red (positive)
  PuOr,      // diverging, purple -> white -> orange; colour-blind safe
  Greys,     // sequential, white -> black (for print)
  GreysDiv,  // diverging, black -> grey -> white (for print)
};

// Which pair of scales is used: one sequential (weights, masks) and one
// diverging centred on 0 (scores, Q, K, V, context, ...).
enum class Palette {
  Standard,        // Viridis + RdBu
  ColorBlindSafe,  // Cividis + PuOr
  Warm,            // Magma + RdBu
  Greys,           // Greys + GreysDiv
};
inline constexpr Palette kAllPalettes[] = {Palette::Standard, Palette::ColorBlindSafe,
                                           Palette::Warm, Palette::Greys};

// The palette's name as shown in the View menu, e.g. "Cividis / purple-orange".
std::string_view palette_label(Palette p);
// The id stored in sessions and given to --colors, e.g. "colorblind".
std::string_view palette_id(Palette p);
// Parses palette_id(); returns Standard when unknown.
Palette parse_palette(std::string_view id);

Colormap sequential_map(Palette p);
Colormap diverging_map(Palette p);
// The scale's name, e.g. "viridis".
std::string_view colormap_name(Colormap m);

// The colour at t (clamped to [0, 1]; NaN counts as 0); linear interpolation
// between the scale's published control points.
Rgba8 sample(Colormap m, float t);

// Not on any scale: the fill of masked (-inf) cells (a dark grey, hatched
// lighter) and of NaN cells. The grey scales contain every grey, so with them
// masked cells are a dark red instead.
Rgba8 masked_fill(Colormap m);
Rgba8 masked_hatch(Colormap m);
inline constexpr Rgba8 kNanFill{255, 0, 255, 255};

// "#rrggbb" (alpha dropped).
std::string hex(Rgba8 c);
// Black or white, whichever contrasts more with bg (WCAG relative luminance).
Rgba8 text_color_on(Rgba8 bg);

}  // namespace attnscope::figure
