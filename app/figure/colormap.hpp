// colormap.hpp: the two colour scales of exported figures, with no GUI and
// no core dependency: a viridis-like sequential scale for non-negative
// matrices (weights, masks) and a blue-white-red diverging scale centred on
// 0 for signed ones (scores, Q/K/V, context, parameters).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace attnscope::figure {

// One 8-bit sRGB colour.
struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(const Rgb&, const Rgb&) = default;
};

// Which scale a matrix is drawn with.
enum class Scale {
  Sequential,  // lo -> dark purple, hi -> yellow (viridis control points)
  Diverging,   // -m -> blue, 0 -> white, +m -> red (ColorBrewer RdBu, reversed)
};

// The sequential scale at t (clamped to [0, 1]); linear between control points.
Rgb viridis(double t);
// The diverging scale at t (clamped to [0, 1]); 0.5 is white.
Rgb blue_white_red(double t);
// The colour of `scale` at t in [0, 1].
Rgb sample(Scale scale, double t);

// "#rrggbb".
std::string hex(Rgb c);
// True when black text reads better than white on `c` (WCAG relative luminance).
bool prefers_dark_text(Rgb c);

// The value range a matrix is drawn over.
struct Range {
  double lo = 0, hi = 1;
};

// The range of the finite values: [min, max] for Sequential, [-m, m] with
// m = max |v| for Diverging; widened when it would be empty. Non-finite
// values are ignored (they are drawn as marked cells).
Range value_range(Scale scale, const float* values, std::size_t count);
// Where v lies in the range, as t in [0, 1] for sample().
double position(Range range, double v);

}  // namespace attnscope::figure
