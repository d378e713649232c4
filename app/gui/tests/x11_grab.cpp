// x11_grab: writes the whole X screen ($DISPLAY) as a PNG, for the Xvfb test.
//   x11_grab OUT.png
//   x11_grab OUT.ppm   binary PPM (P6, RGB): unfiltered, for counting colours in Python
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <stb_image_write.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {
// The shift that brings a channel mask's lowest bit to bit 0.
int shift_of(unsigned long mask) {
  int s = 0;
  while (mask && !(mask & 1)) {
    mask >>= 1;
    ++s;
  }
  return s;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: x11_grab OUT.png\n");
    return 2;
  }
  Display* d = XOpenDisplay(nullptr);
  if (!d) {
    std::fprintf(stderr, "error: cannot open the X display\n");
    return 1;
  }
  const Window root = DefaultRootWindow(d);
  XWindowAttributes attr;
  XGetWindowAttributes(d, root, &attr);
  XImage* img = XGetImage(d, root, 0, 0, static_cast<unsigned>(attr.width),
                          static_cast<unsigned>(attr.height), AllPlanes, ZPixmap);
  if (!img) {
    std::fprintf(stderr, "error: XGetImage failed\n");
    return 1;
  }
  const int rs = shift_of(img->red_mask), gs = shift_of(img->green_mask),
            bs = shift_of(img->blue_mask);
  std::vector<std::uint8_t> rgba(static_cast<std::size_t>(attr.width) *
                                 static_cast<std::size_t>(attr.height) * 4);
  std::size_t k = 0;
  for (int y = 0; y < attr.height; ++y)
    for (int x = 0; x < attr.width; ++x) {
      const unsigned long p = XGetPixel(img, x, y);
      rgba[k++] = static_cast<std::uint8_t>((p & img->red_mask) >> rs);
      rgba[k++] = static_cast<std::uint8_t>((p & img->green_mask) >> gs);
      rgba[k++] = static_cast<std::uint8_t>((p & img->blue_mask) >> bs);
      rgba[k++] = 255;
    }
  XDestroyImage(img);
  XCloseDisplay(d);
  const std::string out = argv[1];
  if (out.size() > 4 && out.compare(out.size() - 4, 4, ".ppm") == 0) {
    std::FILE* f = std::fopen(out.c_str(), "wb");
    if (!f) return 1;
    std::fprintf(f, "P6\n%d %d\n255\n", attr.width, attr.height);
    for (std::size_t i = 0; i < rgba.size(); i += 4) std::fwrite(&rgba[i], 1, 3, f);
    return std::fclose(f) == 0 ? 0 : 1;
  }
  return stbi_write_png(argv[1], attr.width, attr.height, 4, rgba.data(), attr.width * 4) ? 0 : 1;
}
