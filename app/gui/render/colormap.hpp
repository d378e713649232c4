// colormap.hpp: the colour scales heatmaps use. They live in app/figure
// (GUI-free, shared with the SVG and PNG exporters, so that an exported
// figure has the screen's colours); this header brings them into gui.
#pragma once

#include "figure/colormap.hpp"

namespace attnscope::gui {

using figure::Colormap;
using figure::colormap_name;
using figure::diverging_map;
using figure::kAllPalettes;
using figure::kNanFill;
using figure::masked_fill;
using figure::masked_hatch;
using figure::Palette;
using figure::palette_id;
using figure::palette_label;
using figure::parse_palette;
using figure::Rgba8;
using figure::sample;
using figure::sequential_map;

}  // namespace attnscope::gui
