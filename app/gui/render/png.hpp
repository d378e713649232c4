// png.hpp: writing RGBA pixels as a PNG file (stb_image_write). No GL, so
// screenshots and future heatmap exports share it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::gui {

// Writes (height, width, 4) RGBA pixels, top row first; false on failure.
bool write_png(const std::string& path, int width, int height,
               const std::vector<std::uint8_t>& rgba);

}  // namespace attnscope::gui
