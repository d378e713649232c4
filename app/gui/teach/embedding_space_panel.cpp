// embedding_space_panel.cpp: the token vectors as points (2-D, or a 3-D view
// you can rotate); dragging a point edits that embedding and every heatmap
// follows. Only the inputs are drawn here; nothing is computed.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "teach/teach.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

struct View {
  ImVec2 origin;  // canvas centre, px
  float scale;    // px per unit
  float yaw, pitch;
  bool three_d;
};

// Screen position of a point (x, y, z).
ImVec2 project(const View& v, float x, float y, float z) {
  if (!v.three_d) return ImVec2(v.origin.x + x * v.scale, v.origin.y - y * v.scale);
  const float cy = std::cos(v.yaw), sy = std::sin(v.yaw);
  const float cp = std::cos(v.pitch), sp = std::sin(v.pitch);
  const float x1 = cy * x + sy * z, z1 = -sy * x + cy * z;
  const float y1 = cp * y - sp * z1;
  return ImVec2(v.origin.x + x1 * v.scale, v.origin.y - y1 * v.scale);
}

bool overlaps(ImVec2 a, ImVec2 as, ImVec2 b, ImVec2 bs) {
  return a.x < b.x + bs.x && b.x < a.x + as.x && a.y < b.y + bs.y && b.y < a.y + as.y;
}

ImVec2 clamp_into(ImVec2 p, ImVec2 size, ImVec4 bounds) {
  return ImVec2(std::clamp(p.x, bounds.x, std::max(bounds.x, bounds.z - size.x)),
                std::clamp(p.y, bounds.y, std::max(bounds.y, bounds.w - size.y)));
}

}  // namespace

std::vector<ImVec2> place_point_labels(const std::vector<ImVec2>& points,
                                       const std::vector<ImVec2>& sizes, ImVec4 bounds) {
  std::vector<ImVec2> placed;
  placed.reserve(points.size());
  for (std::size_t k = 0; k < points.size() && k < sizes.size(); ++k) {
    const ImVec2 p = points[k], s = sizes[k];
    constexpr float gap = 7.0f;
    // Right of the dot, left of it, above, below, then further down the
    // right side (points closer than a line height, e.g. "journey" and
    // "starts" in the book's embeddings).
    std::vector<ImVec2> spots = {{p.x + gap, p.y - s.y * 0.5f},
                                 {p.x - gap - s.x, p.y - s.y * 0.5f},
                                 {p.x - s.x * 0.5f, p.y - gap - s.y},
                                 {p.x - s.x * 0.5f, p.y + gap}};
    for (int step = 1; step <= static_cast<int>(points.size()); ++step) {
      spots.emplace_back(p.x + gap, p.y - s.y * 0.5f + static_cast<float>(step) * (s.y + 2.0f));
      spots.emplace_back(p.x + gap, p.y - s.y * 0.5f - static_cast<float>(step) * (s.y + 2.0f));
    }
    ImVec2 best = clamp_into(spots.front(), s, bounds);
    for (const ImVec2& spot : spots) {
      const ImVec2 q = clamp_into(spot, s, bounds);
      bool clear = true;
      for (std::size_t j = 0; j < placed.size() && clear; ++j)
        clear = !overlaps(q, s, placed[j], sizes[j]);
      if (clear) {
        best = q;
        break;
      }
    }
    placed.push_back(best);
  }
  return placed;
}

namespace {

// The dimensions shown and the 3-D switch, and what the canvas shows.
void draw_space_controls(AppState& state, int d) {
  TeachState& ts = state.teach;
  ts.space_x = std::clamp(ts.space_x, 0, d - 1);
  ts.space_y = std::clamp(ts.space_y, 0, d - 1);
  ts.space_z = std::clamp(ts.space_z, 0, d - 1);
  if (d >= 3) {
    ImGui::Checkbox("3-D (drag with the right mouse button to rotate)", &ts.space_3d);
  } else {
    ts.space_3d = false;
  }
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4);
  ImGui::SliderInt("x dim", &ts.space_x, 0, d - 1);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4);
  ImGui::SliderInt("y dim", &ts.space_y, 0, d - 1);
  if (ts.space_3d) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4);
    ImGui::SliderInt("z dim", &ts.space_z, 0, d - 1);
  }
  text_wrapped(
      state, ts.space_3d ? "Each dot is a token's embedding. Rotate with the right button to see "
                           "which tokens point the same way: their dot products (scores) are large."
                         : "Each dot is a token's embedding. Drag one: its row of the "
                           "embeddings changes and every heatmap follows. Tokens pointing the "
                           "same way from the origin have large dot products (scores).");
}

// The axes through the origin, named at their positive ends inside `inside`.
void draw_space_axes(const TeachState& ts, ImDrawList* dl, const View& v, float extent,
                     const ImVec4& inside) {
  const ImU32 axis = IM_COL32(120, 120, 130, 255);
  const float z = 0;
  dl->AddLine(project(v, -extent, 0, z), project(v, extent, 0, z), axis);
  dl->AddLine(project(v, 0, -extent, z), project(v, 0, extent, z), axis);
  if (ts.space_3d) dl->AddLine(project(v, 0, 0, -extent), project(v, 0, 0, extent), axis);
  // Axis names at the axes' positive ends, moved inside the canvas.
  auto axis_name = [&](ImVec2 at, int dim) {
    const std::string name = "dim " + std::to_string(dim);
    const ImVec2 size = ImGui::CalcTextSize(name.c_str());
    dl->AddText(clamp_into(ImVec2(at.x + 2, at.y - size.y - 1), size, inside), axis, name.c_str());
  };
  axis_name(project(v, extent, 0, z), ts.space_x);
  axis_name(project(v, 0, extent, z), ts.space_y);
  if (ts.space_3d) axis_name(project(v, 0, 0, extent), ts.space_z);
}

// Each token's dot and name; returns the token whose dot is nearest the
// mouse (within 12 px), or -1.
int draw_space_points(const AppState& state, ImDrawList* dl, const View& v, const ImVec4& inside) {
  const TeachState& ts = state.teach;
  const core::RowMatrix& e = state.inputs.embeddings;
  const int T = static_cast<int>(e.rows());
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  int nearest = -1;
  float best = 12.0f * 12.0f;
  std::vector<ImVec2> points, sizes;
  std::vector<std::string> names;
  for (int r = 0; r < T; ++r) {
    const ImVec2 q =
        project(v, e(r, ts.space_x), e(r, ts.space_y), ts.space_3d ? e(r, ts.space_z) : 0);
    const ImU32 col = head_color(r % 8);
    dl->AddLine(v.origin, q, (col & 0x00ffffff) | 0x60000000);
    dl->AddCircleFilled(q, r == ts.space_drag ? 7.0f : 5.0f, col);
    names.push_back(state.inputs.tokens.size() > static_cast<std::size_t>(r)
                        ? state.inputs.tokens[static_cast<std::size_t>(r)]
                        : "?");
    points.push_back(q);
    sizes.push_back(ImGui::CalcTextSize(names.back().c_str()));
    const float dx = q.x - mouse.x, dy = q.y - mouse.y;
    if (dx * dx + dy * dy < best) {
      best = dx * dx + dy * dy;
      nearest = r;
    }
  }
  // Token names beside their dots, nudged apart where dots nearly coincide;
  // a name moved off its dot is tied to it by a thin leader line.
  const std::vector<ImVec2> at = place_point_labels(points, sizes, inside);
  for (std::size_t r = 0; r < at.size(); ++r) {
    const ImVec2 q = points[r], a = at[r], s = sizes[r];
    const ImVec2 near(std::clamp(q.x, a.x, a.x + s.x), std::clamp(q.y, a.y, a.y + s.y));
    const float dx = near.x - q.x, dy = near.y - q.y;
    if (dx * dx + dy * dy > 12.0f * 12.0f)
      dl->AddLine(q, near, (head_color(static_cast<int>(r) % 8) & 0x00ffffff) | 0xA0000000);
    dl->AddText(a, IM_COL32_WHITE, names[r].c_str());
  }
  return nearest;
}

// A left drag moves the dragged token's embedding; a right drag rotates
// the 3-D view.
void handle_space_mouse(AppState& state, const View& v, bool hovered, int nearest) {
  TeachState& ts = state.teach;
  core::RowMatrix& e = state.inputs.embeddings;
  const int T = static_cast<int>(e.rows());
  if (hovered && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) ts.space_drag = nearest;
  if (!ImGui::IsMouseDown(ImGuiMouseButton_Left)) ts.space_drag = -1;
  if (ts.space_drag >= 0 && ts.space_drag < T && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 0)) {
    const ImVec2 delta = ImGui::GetIO().MouseDelta;
    if (!ts.space_3d) {
      e(ts.space_drag, ts.space_x) += delta.x / v.scale;
      e(ts.space_drag, ts.space_y) -= delta.y / v.scale;
    } else {  // move in the screen plane: the inverse rotation of the drag
      const float cy = std::cos(ts.yaw), sy = std::sin(ts.yaw);
      const float cp = std::cos(ts.pitch), sp = std::sin(ts.pitch);
      const float sx = delta.x / v.scale, syv = -delta.y / v.scale;
      // screen x = (cy, 0, sy)·p ; screen y = (sp·sy, cp, −sp·cy)·p (rows of the rotation)
      e(ts.space_drag, ts.space_x) += cy * sx + sp * sy * syv;
      e(ts.space_drag, ts.space_y) += cp * syv;
      if (ts.space_z != ts.space_x && ts.space_z != ts.space_y)
        e(ts.space_drag, ts.space_z) += sy * sx - sp * cy * syv;
    }
    state.mark_dirty();
  }
  if (ts.space_3d && hovered && ImGui::IsMouseDragging(ImGuiMouseButton_Right, 0)) {
    ts.yaw += ImGui::GetIO().MouseDelta.x * 0.01f;
    ts.pitch = std::clamp(ts.pitch + ImGui::GetIO().MouseDelta.y * 0.01f, -1.5f, 1.5f);
  }
}

}  // namespace

void draw_embedding_space(AppState& state) {
  TeachState& ts = state.teach;
  if (!begin_learn_window(state.teach, "Embedding space", &ts.show_embedding, ImVec2(620, 640))) {
    ImGui::End();
    return;
  }
  core::RowMatrix& e = state.inputs.embeddings;
  const int d = static_cast<int>(e.cols());
  const int T = static_cast<int>(e.rows());
  if (d < 2 || T == 0) {
    text_wrapped(state, "Needs embeddings with at least 2 dimensions.");
    ImGui::End();
    return;
  }
  draw_space_controls(state, d);

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float side = std::max(120.0f, std::min(avail.x, avail.y));
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("space", ImVec2(side, side),
                         ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(p0, ImVec2(p0.x + side, p0.y + side), IM_COL32(25, 27, 32, 255));
  dl->PushClipRect(p0, ImVec2(p0.x + side, p0.y + side), true);

  float extent = 1.0f;
  for (int r = 0; r < T; ++r)
    for (int c : {ts.space_x, ts.space_y, ts.space_z}) extent = std::max(extent, std::abs(e(r, c)));
  const View v{ImVec2(p0.x + side * 0.5f, p0.y + side * 0.5f), side * 0.42f / extent, ts.yaw,
               ts.pitch, ts.space_3d};
  const ImVec4 inside(p0.x + 3, p0.y + 3, p0.x + side - 3, p0.y + side - 3);
  draw_space_axes(ts, dl, v, extent, inside);
  const int nearest = draw_space_points(state, dl, v, inside);
  dl->PopClipRect();

  handle_space_mouse(state, v, hovered, nearest);
  ImGui::End();
}

}  // namespace attnscope::gui
