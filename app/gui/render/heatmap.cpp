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

BarLabelPlaces place_bar_labels(float length, float max_length, float lo_w, float hi_w,
                                float zero_w, bool diverging, float gap) {
  BarLabelPlaces p;
  const float need = lo_w + gap + hi_w;
  p.length = std::max(length, std::min(need, max_length));
  p.lo = need <= p.length;
  p.lo_x = 0;
  p.hi_x = p.length - hi_w;
  // "0" centred on the bar, `gap` from whichever end labels are shown.
  p.zero_x = (p.length - zero_w) * 0.5f;
  const float left_end = p.lo ? p.lo_x + lo_w + gap : 0.0f;
  p.zero = diverging && p.zero_x >= left_end && p.zero_x + zero_w + gap <= p.hi_x;
  return p;
}

std::vector<AxisLabel> place_axis_labels(int first, int last, int stride, float origin, float cell,
                                         float lo, float hi, float gap,
                                         const std::function<float(int)>& extent) {
  std::vector<AxisLabel> out;
  if (stride < 1 || first >= last) return out;
  float end = -std::numeric_limits<float>::infinity();  // where the last label placed ends
  for (int i = first - first % stride; i < last; i += stride) {
    const float e = extent(i);
    // Every cell labelled: centred on it. Every k-th: from its cell's start,
    // so that the first one (row 0, the image's top) needs no moving and the
    // rest keep their k cells' spacing.
    float start = origin + static_cast<float>(i) * cell + (stride == 1 ? (cell - e) * 0.5f : 0.0f);
    start = std::max(start, lo);
    start = std::min(start, hi - e);
    if (out.empty() ? start < lo - 0.5f : start < end + gap) continue;
    out.push_back({i, start});
    end = start + e;
  }
  return out;
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
