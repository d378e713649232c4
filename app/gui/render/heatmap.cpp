// heatmap.cpp: label fitting and culling of the on-screen widget (see heatmap.hpp).
#include "render/heatmap.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnscope::gui {

int label_stride(float cell_px, float label_px) {
  if (!(cell_px > 0.0f)) return std::numeric_limits<int>::max();
  if (label_px <= cell_px) return 1;
  return static_cast<int>(std::ceil(label_px / cell_px));
}

CellSpan visible_cells(float origin, float cell, float clip_min, float clip_max, int count) {
  if (count <= 0 || !(cell > 0.0f) || clip_max <= clip_min) return {};
  const float first = std::floor((clip_min - origin) / cell);
  const float last = std::ceil((clip_max - origin) / cell);
  CellSpan s;
  s.first = static_cast<int>(std::clamp(first, 0.0f, static_cast<float>(count)));
  s.last = static_cast<int>(std::clamp(last, 0.0f, static_cast<float>(count)));
  if (s.last < s.first) s.last = s.first;
  return s;
}

}  // namespace attnscope::gui
