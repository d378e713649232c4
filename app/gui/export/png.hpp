// png.hpp: RGBA pixels as PNG (stb_image_write). No GL: screenshots and
// heatmap exports encode here and write the bytes with core's safe writers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::gui {

// The PNG file bytes of (height, width, 4) RGBA pixels, top row first; empty
// when the size does not match the pixels or encoding fails.
std::string encode_png(int width, int height, const std::vector<std::uint8_t>& rgba);

// Writes (height, width, 4) RGBA pixels, top row first; false on failure.
bool write_png(const std::string& path, int width, int height,
               const std::vector<std::uint8_t>& rgba);

}  // namespace attnscope::gui
