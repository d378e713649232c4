// png.cpp: stb_image_write; Debian's libstb holds the implementation.
#include "export/png.hpp"

#include <stb_image_write.h>

namespace attnscope::gui {

namespace {
bool size_ok(int width, int height, const std::vector<std::uint8_t>& rgba) {
  return width > 0 && height > 0 &&
         rgba.size() == static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 4;
}
}  // namespace

std::string encode_png(int width, int height, const std::vector<std::uint8_t>& rgba) {
  if (!size_ok(width, height, rgba)) return {};
  std::string out;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data),
                                               static_cast<std::size_t>(size));
  };
  if (stbi_write_png_to_func(append, &out, width, height, 4, rgba.data(), width * 4) == 0)
    return {};
  return out;
}

bool write_png(const std::string& path, int width, int height,
               const std::vector<std::uint8_t>& rgba) {
  if (!size_ok(width, height, rgba)) return false;
  return stbi_write_png(path.c_str(), width, height, 4, rgba.data(), width * 4) != 0;
}

}  // namespace attnscope::gui
