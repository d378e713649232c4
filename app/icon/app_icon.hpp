// app_icon.hpp: attnscope's icon, drawn from one list of shapes: the SVG that
// is installed as the scalable icon, and the pixels of the PNG sizes and of
// the window's icon. Both come from the same shapes, so they cannot differ.
//
// The picture is a causal attention-weight matrix: five tokens, each row's
// weights on the tokens up to it (coloured by the app's own sequential
// scale), the masked future as dark empty cells.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::icon {

// A filled rectangle with round corners, in the icon's 256 x 256 units.
struct RoundedRect {
  float x = 0, y = 0, w = 0, h = 0, radius = 0;
  std::uint8_t r = 0, g = 0, b = 0, a = 255;
};

// The icon's shapes, back to front.
std::vector<RoundedRect> shapes();

// The icon as an SVG document (viewBox 0 0 256 256).
std::string svg();

// The icon at size x size pixels as straight (not premultiplied) RGBA8, rows
// top to bottom; each pixel averages 8 x 8 samples so small sizes stay smooth.
std::vector<std::uint8_t> rgba(int size);

}  // namespace attnscope::icon
