// rendered_image.hpp: what the GL side hands back: RGBA pixels of a figure
// rendered off screen or of the window. Writing them to files is export/'s
// job (export/png.hpp encodes, export/files.hpp writes).
#pragma once

#include <cstdint>
#include <vector>

namespace attnscope::gui {

// RGBA pixels, top row first.
struct RenderedImage {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgba;  // (height, width, 4)
};

}  // namespace attnscope::gui
