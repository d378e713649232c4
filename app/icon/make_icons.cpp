// make_icons.cpp: writes the icon files the install rules ship:
//   make_icons OUT_DIR ID SIZE...  ->  OUT_DIR/ID.svg, OUT_DIR/<SIZE>/ID.png
// Run at build time, so the installed icons are always the current shapes.
#include <stb_image_write.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "icon/app_icon.hpp"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc < 4) {
    std::fprintf(stderr, "usage: make_icons OUT_DIR ID SIZE...\n");
    return 2;
  }
  const fs::path out(argv[1]);
  const std::string id = argv[2];
  fs::create_directories(out);
  std::ofstream(out / (id + ".svg")) << attnscope::icon::svg();
  for (int i = 3; i < argc; ++i) {
    const int size = std::stoi(argv[i]);
    const fs::path dir = out / std::to_string(size);
    fs::create_directories(dir);
    const auto pixels = attnscope::icon::rgba(size);
    const std::string file = (dir / (id + ".png")).string();
    if (stbi_write_png(file.c_str(), size, size, 4, pixels.data(), size * 4) == 0) {
      std::fprintf(stderr, "make_icons: cannot write %s\n", file.c_str());
      return 1;
    }
  }
  return 0;
}
