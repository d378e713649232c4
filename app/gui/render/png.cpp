// png.cpp: stb_image_write; Debian's libstb holds the implementation.
#include "render/png.hpp"

#include <stb_image_write.h>

namespace attnscope::gui {

bool write_png(const std::string& path, int width, int height,
               const std::vector<std::uint8_t>& rgba) {
  if (width <= 0 || height <= 0 ||
      rgba.size() != static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 4)
    return false;
  return stbi_write_png(path.c_str(), width, height, 4, rgba.data(), width * 4) != 0;
}

}  // namespace attnscope::gui
