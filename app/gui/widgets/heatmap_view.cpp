// heatmap_view.cpp: the heatmap widget.
//
// Sections
//   1. labels and small helpers
//   2. layout: title, margins, fit and zoom
//   3. interaction: hover, click, wheel zoom, drag pan
//   4. drawing: image, −∞ hatching, grid, numbers, outlines
//   5. axes and colour bar
#include "widgets/heatmap_view.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <optional>

#include "attnscope/base/stages.hpp"
#include "export/files_ui.hpp"
#include "figure/text_fit.hpp"
#include "platform/fonts.hpp"
#include "render/heatmap.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {

// ---------------------------------------------------------------------------
// 1. Labels and helpers

namespace {

ImVec2 add(ImVec2 a, ImVec2 b) { return ImVec2(a.x + b.x, a.y + b.y); }
ImU32 to_u32(Rgba8 c) { return IM_COL32(c.r, c.g, c.b, c.a); }

std::string row_label(const core::Stage& s, const core::Trace& t, int r) {
  if (const auto* tokens = row_tokens(s, t))
    return drawable_text((*tokens)[static_cast<std::size_t>(r)]);
  return std::to_string(r);
}

std::string col_label(const core::Stage& s, const core::Trace& t, int c) {
  if (const auto* tokens = col_tokens(s, t))
    return drawable_text((*tokens)[static_cast<std::size_t>(c)]);
  return std::to_string(c);
}

// What rows and columns mean, for the tooltip.
// (A difference heatmap, "diff_weights", has the axes of the stage it subtracts.)
// The words are the catalogue's (core::axis_noun), so every string is a literal.
const char* row_noun(const core::Stage& s, const core::Trace& t) {
  const core::StageInfo* info = core::find_stage_info(s.id);
  const core::Axis a = info ? info->rows : core::Axis::Token;
  if (!rows_are_tokens(s, t))
    return a == core::Axis::InDim || a == core::Axis::Bias ? core::axis_noun(a).data() : "row";
  return core::axis_noun(cols_are_tokens(s, t) ? core::Axis::Query : core::Axis::Token).data();
}
const char* col_noun(const core::Stage& s, const core::Trace& t) {
  if (cols_are_tokens(s, t)) return core::axis_noun(core::Axis::Key).data();
  const core::StageInfo* info = core::find_stage_info(s.id);
  return core::axis_noun(info && info->cols == core::Axis::OutDim ? core::Axis::OutDim
                                                                  : core::Axis::Dim)
      .data();
}

// Diagonal hatching of one square cell, lines clipped to the square.
void hatch_cell(ImDrawList* dl, ImVec2 p, float s, ImU32 col, float spacing, float thickness) {
  for (float d = -s + spacing * 0.5f; d < s; d += spacing) {
    const ImVec2 a(p.x + std::max(0.0f, d), p.y + std::max(0.0f, -d));
    const ImVec2 b(p.x + s + std::min(0.0f, d), p.y + s - std::max(0.0f, d));
    dl->AddLine(a, b, col, thickness);
  }
}

// Where the colour bar goes: its top-left corner and its length. A
// horizontal bar may grow to the left, to `max_length`, for its labels.
struct ColourBarPlace {
  ImVec2 at;
  float length = 0;
  bool horizontal = false;
  float max_length = 0;
};

// What the colour bar took: the right end of its labels, and its bottom.
struct ColourBarExtent {
  float right = 0, bottom = 0;
};

// The colormap as a gradient with the range's ends (and 0 for diverging
// scales), plus a swatch for each kind of cell that is on no scale
// (`legend`: masked, overflowed, NaN), its label clipped at `right_edge`.
ColourBarExtent draw_colour_bar(ImDrawList* dl, ColourBarPlace p, Colormap map,
                                const ValueRange& range, ScaleKind kind, ScaleScope scope,
                                int decimals, bool uni, float px,
                                const std::vector<LegendEntry>& legend, float right_edge) {
  const float thick = (p.horizontal ? 10.0f : 14.0f) * px;
  const float line_h = ImGui::GetTextLineHeight();
  const ImU32 text_col = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 dim_col = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const bool zero = kind == ScaleKind::Diverging;
  auto text_w = [](const std::string& t) { return ImGui::CalcTextSize(t.c_str()).x; };
  // Numbers with the cells' decimals setting; a row scale's ends are words.
  auto [hi, lo] = bar_labels(range, kind, scope, scope == ScaleScope::Row ? 4 : decimals, uni);
  BarLabelPlaces places;
  if (p.horizontal) {
    // A short bar: fewer decimals (or shorter words), then a longer bar;
    // the two ends never run together.
    const float gap = 8 * px, zero_w = text_w("0");
    places = place_bar_labels(p.length, p.length, text_w(lo), text_w(hi), zero_w, zero, gap);
    if (!places.lo) {
      const BarLabels shorter = bar_labels(range, kind, scope, std::min(2, decimals), uni);
      lo = shorter.lo;
      hi = shorter.hi;
      places = place_bar_labels(p.length, std::max(p.length, p.max_length), text_w(lo), text_w(hi),
                                zero_w, zero, gap);
    }
    p.at.x -= places.length - p.length;  // grown to the left
    p.length = places.length;
  }
  constexpr int kSegments = 32;
  for (int k = 0; k < kSegments; ++k) {
    const float t0 = static_cast<float>(k) / kSegments;
    const float t1 = static_cast<float>(k + 1) / kSegments;
    if (p.horizontal) {  // low on the left
      const ImU32 a = to_u32(sample(map, t0));
      const ImU32 b = to_u32(sample(map, t1));
      dl->AddRectFilledMultiColor(ImVec2(p.at.x + t0 * p.length, p.at.y),
                                  ImVec2(p.at.x + t1 * p.length, p.at.y + thick), a, b, b, a);
    } else {  // high at the top
      const ImU32 a = to_u32(sample(map, 1.0f - t0));
      const ImU32 b = to_u32(sample(map, 1.0f - t1));
      dl->AddRectFilledMultiColor(ImVec2(p.at.x, p.at.y + t0 * p.length),
                                  ImVec2(p.at.x + thick, p.at.y + t1 * p.length), a, a, b, b);
    }
  }
  const ImVec2 end = p.horizontal ? ImVec2(p.at.x + p.length, p.at.y + thick)
                                  : ImVec2(p.at.x + thick, p.at.y + p.length);
  dl->AddRect(p.at, end, dim_col);
  ColourBarExtent extent;
  ImVec2 swatch;
  if (p.horizontal) {
    const float y = p.at.y + thick + 2 * px;
    if (places.lo) dl->AddText(ImVec2(p.at.x + places.lo_x, y), text_col, lo.c_str());
    dl->AddText(ImVec2(p.at.x + places.hi_x, y), text_col, hi.c_str());
    if (places.zero) {
      const float x0 = p.at.x + p.length * 0.5f;
      dl->AddLine(ImVec2(x0, p.at.y - 2), ImVec2(x0, end.y + 2), text_col);
      dl->AddText(ImVec2(p.at.x + places.zero_x, y), dim_col, "0");
    }
    swatch = ImVec2(p.at.x, y + line_h + 2 * px);
    extent = {end.x, y + line_h};
  } else {
    const float x = end.x + 4 * px;
    dl->AddText(ImVec2(x, p.at.y), text_col, hi.c_str());
    dl->AddText(ImVec2(x, end.y - line_h), text_col, lo.c_str());
    if (zero && p.length > 4 * line_h) {
      const float y0 = p.at.y + p.length * 0.5f;
      dl->AddLine(ImVec2(p.at.x - 2, y0), ImVec2(end.x + 2, y0), text_col);
      dl->AddText(ImVec2(x, y0 - line_h * 0.5f), dim_col, "0");
    }
    swatch = ImVec2(p.at.x, end.y + 6 * px);
    extent = {x + std::max(text_w(hi), text_w(lo)), end.y};
  }
  // Side by side under a horizontal bar, one under the other below a vertical one.
  const float side = 14.0f * px;
  for (const LegendEntry& e : legend) {
    const bool nan = e.kind == LegendEntry::NotANumber;
    const ImVec2 s_max(swatch.x + side, swatch.y + side);
    dl->AddRectFilled(swatch, s_max, to_u32(nan ? kNanFill : masked_fill(map)));
    if (!nan) {
      dl->PushClipRect(swatch, s_max, true);
      hatch_cell(dl, swatch, side, to_u32(masked_hatch(map)), 4.0f, 1.0f);
      dl->PopClipRect();
    }
    dl->AddRect(swatch, s_max, dim_col);
    // "−∞ masked", or just "−∞" where the words do not fit.
    const float x = s_max.x + 4 * px, room = right_edge - x;
    std::string label = e.text;
    if (ImGui::CalcTextSize(label.c_str()).x > room) label = label.substr(0, label.find(' '));
    const ImVec2 at(x, swatch.y + (side - line_h) * 0.5f);
    dl->PushClipRect(ImVec2(x, at.y), ImVec2(std::max(x, right_edge), at.y + line_h), true);
    dl->AddText(at, text_col, label.c_str());
    dl->PopClipRect();
    extent.bottom = std::max(extent.bottom, swatch.y + std::max(side, line_h));
    if (p.horizontal)
      swatch.x = x + ImGui::CalcTextSize(label.c_str()).x + 10 * px;
    else
      swatch.y += std::max(side, line_h) + 4 * px;
  }
  return extent;
}

}  // namespace

std::string fit_text(const std::string& text, float max_width, bool unicode) {
  const figure::TextWidth width = [](std::string_view t) {
    return ImGui::CalcTextSize(t.data(), t.data() + t.size()).x;
  };
  return figure::fit_text(text, max_width, width, unicode, figure::WhenNothingFits::Empty);
}

std::function<float(int)> number_width(const AppState& state, const ValueRange& range) {
  ImFont* font = state.ui.font_mono ? state.ui.font_mono : ImGui::GetFont();
  return [font, range](int d) {
    const std::string widest = widest_number_text(range.data_min, range.data_max, d);
    return font->CalcTextSizeA(font->FontSize, 1e9f, 0, widest.c_str()).x;
  };
}

float line_h_mono(const AppState& state) {
  return state.ui.font_mono ? state.ui.font_mono->FontSize : ImGui::GetFontSize();
}

std::vector<std::string> heatmap_titles(const HeatmapSpec& spec) {
  if (spec.title.empty()) return stage_titles(*spec.stage);
  // A caller's title: then without its parenthesis ("keep mask (1 kept, 0
  // dropped)" -> "keep mask"), or what comes before a colon.
  std::vector<std::string> out{spec.title};
  for (const char* cut : {" (", ": "}) {
    const auto at = out.back().find(cut);
    if (at != std::string::npos && at > 0) out.push_back(out.back().substr(0, at));
  }
  return out;
}

std::string pick_title(const std::vector<std::string>& candidates, float max_width, bool unicode) {
  if (candidates.empty()) return {};
  for (const std::string& c : candidates) {
    const std::string t = unicode ? c : ascii_fallback(c);
    if (ImGui::CalcTextSize(t.c_str()).x <= max_width) return t;
  }
  const std::string last = unicode ? candidates.back() : ascii_fallback(candidates.back());
  return fit_text(last, max_width, unicode);
}

ImU32 head_color(int head, float alpha) {
  // Distinct hues that read on dark backgrounds and against the colormaps.
  static constexpr ImU32 kColors[] = {
      IM_COL32(255, 170, 60, 255), IM_COL32(80, 220, 255, 255),  IM_COL32(255, 110, 200, 255),
      IM_COL32(170, 255, 90, 255), IM_COL32(200, 150, 255, 255), IM_COL32(255, 240, 90, 255),
  };
  ImU32 c = kColors[static_cast<std::size_t>(std::max(0, head)) % std::size(kColors)];
  const auto a = static_cast<ImU32>(std::clamp(alpha, 0.0f, 1.0f) * 255.0f);
  return (c & ~IM_COL32_A_MASK) | (a << IM_COL32_A_SHIFT);
}
// ---------------------------------------------------------------------------
// 2. Layout: title, margins, fit and zoom

namespace {

// A wide matrix's cells keep at least this many px (at UI scale 1).
constexpr float kMinCell = 8.0f;

// What every part of one heatmap draws with: the stage, its box and the
// frame's style.
struct HeatmapFrame {
  const core::Stage& st;
  const core::Trace& tr;
  int rows = 0, cols = 0;  // the matrix's shape
  bool uni = false;
  bool compact = false;  // a tile
  ImDrawList* dl = nullptr;
  ImGuiIO& io;
  float line_h = 0;
  float px = 1;  // 1 at UI scale 1
  ImU32 text_col = 0, dim_col = 0;
  ImVec2 box_min, box_max, size;
};

// How the stage is coloured: its scale, colormap, texture and the cells on no scale.
struct HeatmapColouring {
  ScaleKind kind;
  Colormap map;
  ScaleScope scope;
  HeatmapTexture tex;
  std::vector<LegendEntry> legend;  // masked, overflowed, NaN: listed under the colour bar
};

// Where the cells go in the box, and how big they are at zoom 1.
struct HeatmapLayout {
  float body_top = 0;                      // under the title
  float row_label_w = 0, col_label_w = 0;  // the widest labels (capped)
  bool bar_below = false;                  // the colour bar under the cells, not beside them
  ImVec2 area_min, area_max;               // the cells' area (they may scroll in it)
  float area_w = 0, area_h = 0;
  float fit = 0;  // a cell's side at zoom 1
  float max_zoom = 1;
};

// The cells at the current zoom and pan, and the one under the mouse.
struct CellGeometry {
  float cell = 0;    // a cell's width (and height, except in tiles)
  float cell_h = 0;  // a cell's height
  float img_w = 0, img_h = 0;
  ImVec2 origin, img_max;  // the whole matrix on screen (it may reach past the area)
  ImVec2 vis_max;          // where the visible part of it ends
  CellSpan rs, cs;         // the rows and columns in view
  int hover_r = -1, hover_c = -1;

  ImVec2 cell_min(int r, int c) const {
    return ImVec2(origin.x + static_cast<float>(c) * cell,
                  origin.y + static_cast<float>(r) * cell_h);
  }
};

// The heatmap's hit area this frame.
struct HeatmapInput {
  bool released_here = false, hovered = false, active = false;
};

// Only a wide matrix (more than twice as many columns as rows: T x 1000 at
// d_out 1000) keeps kMinCell-high cells and scrolls; a square T x T one
// fits its box, sub-pixel cells and all, so its whole triangle shows.
float wide_cell(const HeatmapFrame& f, float fit_cells, float height) {
  const bool wide = f.cols > 2 * f.rows;
  // As tall as a line of text where the box allows: every row keeps its label.
  const float least = std::max(kMinCell * f.px, f.line_h + 2 * f.px);
  return wide ? std::max(fit_cells, std::min(least, height / static_cast<float>(f.rows)))
              : fit_cells;
}

// Title: the full name, or the symbol form when the box is narrow. Per-head
// stages take their head's colour, the same everywhere on screen.
// Full heatmaps have an Export button at the title's right end (tiles:
// right-click only). Returns the top of what comes under it.
float draw_title(const HeatmapFrame& f, const HeatmapSpec& spec, HeatmapResult& res) {
  const char* kExport = "Export";
  const std::vector<std::string> titles = heatmap_titles(spec);
  const bool uni = f.uni;
  float export_w =
      f.compact ? 0.0f : ImGui::CalcTextSize(kExport).x + ImGui::GetStyle().FramePadding.x * 2;
  float title_w = f.size.x - 4 - (f.compact ? 0.0f : export_w + 6 * f.px) - spec.title_reserve;
  const std::string& shortest = uni ? titles.back() : ascii_fallback(titles.back());
  if (export_w > 0 && ImGui::CalcTextSize(shortest.c_str()).x > title_w) {
    // Too narrow for even the shortest title beside the button: the title
    // wins (the right-click menu still exports).
    title_w += export_w + 6 * f.px;
    export_w = 0;
  }
  // Narrow boxes shorten the title by rule (W_query -> W_q, head 0 -> h0,
  // then without the shape), never to an ambiguous "W…"; the tooltip on the
  // title always gives the full name and shape.
  const std::string shown_title = pick_title(titles, title_w, uni);
  f.dl->PushClipRect(f.box_min, f.box_max, true);
  f.dl->AddText(ImVec2(f.box_min.x + 2, f.box_min.y),
                f.st.head >= 0 ? head_color(f.st.head) : f.text_col, shown_title.c_str());
  res.title_end =
      ImVec2(f.box_min.x + 2 + ImGui::CalcTextSize(shown_title.c_str()).x + 6 * f.px, f.box_min.y);
  f.dl->PopClipRect();
  if (ImGui::IsWindowHovered() &&
      ImGui::IsMouseHoveringRect(
          f.box_min, ImVec2(f.box_min.x + std::max(title_w, 8.0f), f.box_min.y + f.line_h))) {
    std::string full =
        spec.title.empty() ? stage_title(f.st) : spec.title + "\n" + stage_title(f.st);
    ImGui::SetTooltip("%s", (uni ? full : ascii_fallback(full)).c_str());
  }
  ImGui::PushID(spec.slot.c_str());
  if (export_w > 0 && f.size.x > export_w + 40) {
    ImGui::SetCursorScreenPos(ImVec2(f.box_max.x - export_w, f.box_min.y));
    if (ImGui::SmallButton(kExport)) ImGui::OpenPopup("##export_menu");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("PNG, SVG, CSV, NPY, JSON or torch.tensor (also: right-click the heatmap)");
  }
  ImGui::PopID();
  return f.box_min.y + f.line_h + 4 * f.px;
}

// The stage's scale, colormap and texture (coloured in the background when
// it is new: TextureCache::get).
HeatmapColouring colour_stage(AppState& state, const HeatmapFrame& f, const HeatmapSpec& spec) {
  const ScaleKind kind = spec.kind ? *spec.kind : scale_kind_for(f.st.id);
  const Colormap map = kind == ScaleKind::Sequential ? sequential_map(state.ui.palette)
                                                     : diverging_map(state.ui.palette);
  // A tile (no zoom) needs no more texels than it has pixels: the smallest
  // power of two at least its size, so that resizing the window re-colours
  // only when it crosses one.
  int max_side = 0;
  if (f.compact) {
    const ImVec2 fb = ImGui::GetIO().DisplayFramebufferScale;
    const float pixels = std::max(f.size.x * std::max(fb.x, 1.0f), f.size.y * std::max(fb.y, 1.0f));
    max_side = static_cast<int>(std::bit_ceil(static_cast<unsigned>(std::max(pixels, 64.0f))));
  }
  const ScaleScope scope = heatmap_scope(state, f.tr, f.st);
  const HeatmapTexture tex = state.textures.get(spec.slot, state.trace_version, f.st, kind, map,
                                                max_side, scope, spec.follows_trace);
  // Cells on no scale, listed under the colour bar: masked, overflowed, NaN.
  std::vector<LegendEntry> legend = off_scale_legend(
      tex.range, holds_mask(f.st.id) && f.tr.recipe().has(core::BlockPart::Mask), f.uni);
  return {kind, map, scope, tex, std::move(legend)};
}

// The margins around the cells (labels, colour bar beside or under them,
// band labels, the row-scale note) and the cells' area; nullopt when no
// area is left.
std::optional<HeatmapLayout> layout_heatmap(const AppState& state, const HeatmapFrame& f,
                                            const HeatmapSpec& spec, const HeatmapColouring& c,
                                            float body_top) {
  HeatmapLayout lay;
  lay.body_top = body_top;
  const float px = f.px, line_h = f.line_h;
  float left = 0, top = 0, right = 0, bottom = 0;
  const float max_label = 110.0f * px;
  if (!f.compact) {
    for (int r = 0; r < f.rows; ++r)
      lay.row_label_w =
          std::max(lay.row_label_w, ImGui::CalcTextSize(row_label(f.st, f.tr, r).c_str()).x);
    for (int col = 0; col < f.cols; ++col)
      lay.col_label_w =
          std::max(lay.col_label_w, ImGui::CalcTextSize(col_label(f.st, f.tr, col).c_str()).x);
    lay.row_label_w = std::min(lay.row_label_w, max_label);
    lay.col_label_w = std::min(lay.col_label_w, max_label);
    left = lay.row_label_w + 8 * px;
    top = line_h + 2 * px;
    // The colour bar beside the cells needs room for "-00.0000" (at 4 decimals; or the
    // words of a row scale); under them, a few lines. It goes where the
    // cells get bigger: under them in narrow boxes and in boxes whose
    // width limits the cells (with room to spare below).
    float label_w =
        ImGui::CalcTextSize(widest_number_text(-10.0f, 10.0f, state.ui.decimals).c_str()).x;
    if (c.scope == ScaleScope::Row) {
      const BarLabels words = bar_labels(c.tex.range, c.kind, c.scope, 4, f.uni);
      label_w = std::max({label_w, ImGui::CalcTextSize(words.hi.c_str()).x,
                          ImGui::CalcTextSize(words.lo.c_str()).x});
    }
    const float right_beside = 14 * px + 8 * px + label_w + 4 * px, right_below = 4 * px;
    const float bands_h = spec.bands.empty() ? 0 : line_h + 4 * px;
    const float below_h = 10 * px + line_h + 8 * px + (c.legend.empty() ? 0.0f : line_h);
    // A row scale says so on a line of its own under everything.
    const float note_h = c.scope == ScaleScope::Row ? line_h + 6 * px : 0.0f;
    const float body_h = f.box_max.y - body_top - top - bands_h - note_h;
    // The cells each place leaves (a wide matrix keeps kMinCell-high cells
    // and scrolls, so for it the height counts).
    auto cells_with = [&](float right_w, float bottom_h) {
      const float h = (body_h - bottom_h) / static_cast<float>(f.rows);
      const float fit_cells = std::min((f.size.x - left - right_w) / static_cast<float>(f.cols), h);
      return wide_cell(f, fit_cells, body_h - bottom_h);
    };
    const float below = cells_with(right_below, below_h), beside = cells_with(right_beside, 0.0f);
    lay.bar_below = f.size.x < 330.0f * px ? below >= beside : below > 1.05f * beside;
    right = lay.bar_below ? right_below : right_beside;
    bottom = bands_h + note_h + (lay.bar_below ? below_h : 0.0f);
  }
  lay.area_min = ImVec2(f.box_min.x + left, body_top + top);
  lay.area_max = ImVec2(f.box_max.x - right, f.box_max.y - bottom);
  lay.area_w = lay.area_max.x - lay.area_min.x;
  lay.area_h = lay.area_max.y - lay.area_min.y;
  if (lay.area_w < 4 || lay.area_h < 4) return std::nullopt;

  const float max_cell = (f.compact ? 48.0f : 110.0f) * px;
  // Zoom 1 fits the whole matrix, except that a wide one (T x 1000 at
  // d_out 1000) would shrink to a line of sub-pixel cells: its cells stay
  // at least kMinCell high (as far as the box's height allows) and the rest
  // of it scrolls (drag, Shift+wheel; a scroll bar shows where you are).
  const float fit_all = std::min(
      {lay.area_w / static_cast<float>(f.cols), lay.area_h / static_cast<float>(f.rows), max_cell});
  lay.fit = f.compact ? fit_all : wide_cell(f, fit_all, lay.area_h);
  lay.max_zoom = std::max(8.0f, 200.0f * px / lay.fit);
  return lay;
}

// ---------------------------------------------------------------------------
// 3. Interaction: hover, click, wheel zoom, drag pan

// The hit area over the cells and its Export context menu; the wheel zooms
// (Shift+wheel scrolls sideways), a drag pans, a double click resets `view`.
HeatmapInput handle_input(AppState& state, const HeatmapFrame& f, const HeatmapSpec& spec,
                          const HeatmapLayout& lay, ViewState& view) {
  const ImGuiIO& io = f.io;
  HeatmapInput in;
  ImGui::SetCursorScreenPos(lay.area_min);
  ImGui::PushID(spec.slot.c_str());
  in.released_here = ImGui::InvisibleButton("##heatmap", ImVec2(lay.area_w, lay.area_h));
  in.hovered = ImGui::IsItemHovered();
  in.active = ImGui::IsItemActive();
  // The Export menu: the button above, or a right-click on the cells.
  if (ImGui::BeginPopupContextItem("##export_menu")) {
    draw_export_menu_items(state, f.st);
    ImGui::EndPopup();
  }
  ImGui::PopID();
  if (f.compact) return in;

  // Shift+wheel (or a horizontal wheel) scrolls sideways instead of zooming.
  const float fit = lay.fit;
  const float wheel_x = io.MouseWheelH != 0.0f ? io.MouseWheelH
                        : io.KeyShift          ? io.MouseWheel
                                               : 0.0f;
  if (in.hovered && wheel_x != 0.0f) {
    view.pan.x -= wheel_x * 5.0f * fit * view.zoom;
  } else if (in.hovered && io.MouseWheel != 0.0f) {
    const float old_cell = fit * view.zoom;
    view.zoom = std::clamp(view.zoom * (io.MouseWheel > 0 ? 1.25f : 0.8f), 1.0f, lay.max_zoom);
    const float new_cell = fit * view.zoom;
    // Keep the point under the mouse where it is.
    const ImVec2 m(io.MousePos.x - lay.area_min.x, io.MousePos.y - lay.area_min.y);
    view.pan.x = (m.x + view.pan.x) / old_cell * new_cell - m.x;
    view.pan.y = (m.y + view.pan.y) / old_cell * new_cell - m.y;
  }
  if (in.active && ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
    view.pan.x -= io.MouseDelta.x;
    view.pan.y -= io.MouseDelta.y;
  }
  if (in.hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) view = ViewState{};
  return in;
}

// The cells at `view`'s zoom and pan (the pan clamped to the matrix), the
// ones in view and the one under the mouse.
CellGeometry cell_geometry(const HeatmapFrame& f, const HeatmapLayout& lay, ViewState& view,
                           bool hovered) {
  CellGeometry g;
  g.cell = lay.fit * view.zoom;
  // A tile cannot scroll: a wide matrix's rows are stretched to at least
  // kMinCell instead (cells taller than wide), so that it never shrinks to a line.
  g.cell_h =
      f.compact
          ? std::max(g.cell, std::min(kMinCell * f.px, lay.area_h / static_cast<float>(f.rows)))
          : g.cell;
  g.img_w = g.cell * static_cast<float>(f.cols);
  g.img_h = g.cell_h * static_cast<float>(f.rows);
  view.pan.x = std::clamp(view.pan.x, 0.0f, std::max(0.0f, g.img_w - lay.area_w));
  view.pan.y = std::clamp(view.pan.y, 0.0f, std::max(0.0f, g.img_h - lay.area_h));
  g.origin = ImVec2(lay.area_min.x - view.pan.x, lay.area_min.y - view.pan.y);
  g.img_max = ImVec2(g.origin.x + g.img_w, g.origin.y + g.img_h);
  g.vis_max = ImVec2(std::min(lay.area_max.x, g.img_max.x), std::min(lay.area_max.y, g.img_max.y));

  const ImGuiIO& io = f.io;
  if (hovered && io.MousePos.x < g.img_max.x && io.MousePos.y < g.img_max.y) {
    g.hover_c = std::clamp(static_cast<int>((io.MousePos.x - g.origin.x) / g.cell), 0, f.cols - 1);
    g.hover_r =
        std::clamp(static_cast<int>((io.MousePos.y - g.origin.y) / g.cell_h), 0, f.rows - 1);
  }
  g.rs = visible_cells(g.origin.y, g.cell_h, lay.area_min.y, g.vis_max.y, f.rows);
  g.cs = visible_cells(g.origin.x, g.cell, lay.area_min.x, g.vis_max.x, f.cols);
  return g;
}

// ---------------------------------------------------------------------------
// 4. Drawing: image, −∞ hatching, grid, numbers, outlines

// The texture (or a placeholder while it is coloured), −∞ hatching and the
// hairlines between cells.
void draw_cell_image(const HeatmapFrame& f, const HeatmapColouring& c, const HeatmapLayout& lay,
                     const CellGeometry& g) {
  ImDrawList* dl = f.dl;
  const HeatmapTexture& tex = c.tex;
  if (tex.ready) {
    dl->AddImage(tex.id, g.origin, g.img_max, ImVec2(0.0f, 0.0f), tex.uv_max);
  } else {  // still being coloured (TextureCache::get): a placeholder with progress
    dl->AddRectFilled(g.origin, g.img_max, IM_COL32(48, 50, 56, 255));
    const ImVec2 mid((lay.area_min.x + g.vis_max.x) * 0.5f, (lay.area_min.y + g.vis_max.y) * 0.5f);
    char text[48];
    std::snprintf(text, sizeof text, "colouring %d%%", static_cast<int>(tex.progress * 100.0f));
    const ImVec2 ts = ImGui::CalcTextSize(text);
    dl->AddText(ImVec2(mid.x - ts.x * 0.5f, mid.y - ts.y * 0.5f), f.dim_col, text);
  }

  const float cell = g.cell, cell_h = g.cell_h;
  if (tex.range.neg_inf + tex.range.pos_inf > 0 && cell >= 6.0f && cell_h == cell) {
    const float spacing = std::max(4.0f, std::min(9.0f * f.px, cell / 2));
    for (int r = g.rs.first; r < g.rs.last; ++r)
      for (int col = g.cs.first; col < g.cs.last; ++col)
        if (std::isinf(f.st.data()(r, col)))
          hatch_cell(dl, g.cell_min(r, col), cell, to_u32(masked_hatch(c.map)), spacing,
                     std::max(1.0f, f.px));
  }
  if (cell >= 14.0f) {  // hairlines between cells, so neighbours of equal colour stay apart
    const ImU32 grid = IM_COL32(0, 0, 0, 60);
    for (int col = g.cs.first + 1; col < g.cs.last; ++col)
      dl->AddLine(g.cell_min(g.rs.first, col),
                  ImVec2(g.origin.x + static_cast<float>(col) * cell, g.vis_max.y), grid);
    for (int r = g.rs.first + 1; r < g.rs.last; ++r)
      dl->AddLine(g.cell_min(r, g.cs.first),
                  ImVec2(g.vis_max.x, g.origin.y + static_cast<float>(r) * cell_h), grid);
  }
}

// Numbers: the decimals setting (View > Decimals) where the widest fits,
// else as many as fit. Returns the decimals shown (0: none).
int draw_cell_numbers(const AppState& state, const HeatmapFrame& f, const HeatmapColouring& c,
                      const CellGeometry& g) {
  const HeatmapTexture& tex = c.tex;
  const int decimals = state.ui.show_values && tex.has_range
                           ? decimals_that_fit(g.cell, g.cell_h, state.ui.decimals,
                                               number_width(state, tex.range), line_h_mono(state))
                           : 0;
  ImFont* num_font = state.ui.font_mono ? state.ui.font_mono : ImGui::GetFont();
  const float num_size = num_font->FontSize;
  if (decimals <= 0) return decimals;
  for (int r = g.rs.first; r < g.rs.last; ++r) {
    // The scale this row's cells are coloured on: the text must read on them.
    const ValueRange cells =
        c.scope == ScaleScope::Row ? row_range(f.st.data(), r, c.kind) : tex.range;
    for (int col = g.cs.first; col < g.cs.last; ++col) {
      const float v = f.st.data()(r, col);
      const std::string s = format_value(v, decimals, f.uni);
      const ImVec2 ts = num_font->CalcTextSizeA(num_size, 1e9f, 0, s.c_str());
      const ImVec2 p = g.cell_min(r, col);
      const Rgba8 bg = std::isinf(v) ? masked_fill(c.map) : cell_color(v, cells, c.map);
      const ImVec2 at(p.x + (g.cell - ts.x) * 0.5f, p.y + (g.cell_h - ts.y) * 0.5f);
      if (std::isinf(v))  // a dark plate keeps "−∞" readable over the hatching
        f.dl->AddRectFilled(ImVec2(at.x - 3, at.y), ImVec2(at.x + ts.x + 3, at.y + ts.y),
                            to_u32(masked_fill(c.map)), 3.0f);
      // Clipped to the cell: a number wider than its cell never spills into the next.
      const ImVec4 clip(p.x + 1, p.y, p.x + g.cell - 1, p.y + g.cell_h);
      f.dl->AddText(num_font, num_size, at, to_u32(text_color_on(bg)), s.c_str(), nullptr, 0.0f,
                    &clip);
    }
  }
  return decimals;
}

// Head bands, the marked row and column, the pinned cell and the hovered one.
void draw_cell_outlines(const HeatmapFrame& f, const HeatmapSpec& spec, const CellGeometry& g) {
  ImDrawList* dl = f.dl;
  const float px = f.px, cell = g.cell, cell_h = g.cell_h;
  for (const ColumnBand& b : spec.bands) {
    const ImVec2 a(g.origin.x + static_cast<float>(b.first) * cell + 1, g.origin.y + 1);
    const ImVec2 z(g.origin.x + static_cast<float>(b.last) * cell - 1, g.img_max.y - 1);
    dl->AddRect(a, z, b.color, 0.0f, 0, 3.0f * px);
  }
  if (spec.mark_row >= 0 && spec.mark_row < f.rows)
    dl->AddRect(g.cell_min(spec.mark_row, 0),
                ImVec2(g.img_max.x, g.origin.y + static_cast<float>(spec.mark_row + 1) * cell_h),
                IM_COL32(255, 225, 90, 230), 0.0f, 0, 2.0f * px);
  if (spec.mark_col >= 0 && spec.mark_col < f.cols)
    dl->AddRect(g.cell_min(0, spec.mark_col),
                ImVec2(g.origin.x + static_cast<float>(spec.mark_col + 1) * cell, g.img_max.y),
                IM_COL32(255, 225, 90, 230), 0.0f, 0, 2.0f * px);
  if (spec.pin_row >= 0 && spec.pin_row < f.rows && spec.pin_col >= 0 && spec.pin_col < f.cols) {
    const ImVec2 a = g.cell_min(spec.pin_row, spec.pin_col);
    const float t = std::max(2.0f, 2.5f * px);
    const float s = std::max(cell, 5.0f);  // tiny cells get a visible ring
    const ImVec2 c(a.x + cell * 0.5f, a.y + cell_h * 0.5f);
    dl->AddRect(ImVec2(c.x - s * 0.5f - t, c.y - s * 0.5f - t),
                ImVec2(c.x + s * 0.5f + t, c.y + s * 0.5f + t), IM_COL32(0, 0, 0, 255), 0.0f, 0,
                t + 2);
    dl->AddRect(ImVec2(c.x - s * 0.5f - t, c.y - s * 0.5f - t),
                ImVec2(c.x + s * 0.5f + t, c.y + s * 0.5f + t), IM_COL32(255, 255, 255, 255), 0.0f,
                0, t);
  }
  if (g.hover_r >= 0 && cell >= 4.0f) {
    const ImVec2 a = g.cell_min(g.hover_r, g.hover_c);
    dl->AddRect(a, ImVec2(a.x + cell, a.y + cell_h), IM_COL32(255, 255, 255, 160), 0.0f, 0, 1.5f);
  }
}

// Scroll bars when the matrix is bigger than its box: where the view is.
void draw_scroll_bars(const HeatmapFrame& f, const HeatmapLayout& lay, const CellGeometry& g,
                      const ViewState& view) {
  const float bar = 4.0f * f.px;
  const ImU32 track = IM_COL32(0, 0, 0, 110), thumb = IM_COL32(255, 255, 255, 170);
  const float area_w = lay.area_w, area_h = lay.area_h;
  if (g.img_w > area_w + 0.5f) {
    const float y = g.vis_max.y - bar;
    const float x0 = lay.area_min.x + view.pan.x / g.img_w * area_w;
    f.dl->AddRectFilled(ImVec2(lay.area_min.x, y), ImVec2(g.vis_max.x, g.vis_max.y), track);
    f.dl->AddRectFilled(ImVec2(x0, y), ImVec2(x0 + area_w * area_w / g.img_w, g.vis_max.y), thumb,
                        bar);
  }
  if (g.img_h > area_h + 0.5f) {
    const float x = g.vis_max.x - bar;
    const float y0 = lay.area_min.y + view.pan.y / g.img_h * area_h;
    f.dl->AddRectFilled(ImVec2(x, lay.area_min.y), ImVec2(g.vis_max.x, g.vis_max.y), track);
    f.dl->AddRectFilled(ImVec2(x, y0), ImVec2(g.vis_max.x, y0 + area_h * area_h / g.img_h), thumb,
                        bar);
  }
}

// ---------------------------------------------------------------------------
// 5. Axes and colour bar

// Row labels, column labels and the bands' labels under the cells.
void draw_axes(const HeatmapFrame& f, const HeatmapSpec& spec, const HeatmapLayout& lay,
               const CellGeometry& g) {
  ImDrawList* dl = f.dl;
  const float px = f.px, line_h = f.line_h, cell = g.cell;
  const bool uni = f.uni;
  const ImVec2 area_min = lay.area_min, area_max = lay.area_max;
  // Row labels, right-aligned against the image; every k-th when dense
  // (place_axis_labels: never two on top of each other).
  const int rstride = label_stride(g.cell_h, line_h + 2 * px);
  dl->PushClipRect(ImVec2(f.box_min.x, area_min.y), ImVec2(area_min.x, area_max.y), true);
  for (const AxisLabel& a :
       place_axis_labels(g.rs.first, g.rs.last, rstride, g.origin.y, g.cell_h, area_min.y,
                         g.vis_max.y, 2 * px, [&](int) { return line_h; })) {
    const std::string l = fit_text(row_label(f.st, f.tr, a.index), lay.row_label_w, uni);
    const float w = ImGui::CalcTextSize(l.c_str()).x;
    dl->AddText(ImVec2(area_min.x - 6 * px - w, a.start),
                a.index == spec.pin_row ? f.text_col : f.dim_col, l.c_str());
  }
  dl->PopClipRect();
  // Column labels, centred over their columns.
  // Every column gets a (shortened) label once a few letters fit; denser
  // columns label every k-th one in full, each starting at its column.
  const float short_w = ImGui::CalcTextSize(uni ? "Abc…" : "Ab..").x + 6 * px;
  const int cstride = cell >= std::min(short_w, lay.col_label_w + 6 * px)
                          ? 1
                          : label_stride(cell, lay.col_label_w + 10 * px);
  const float room = std::max(cell * static_cast<float>(cstride) - 6 * px, 8.0f);
  auto col_text = [&](int c) { return fit_text(col_label(f.st, f.tr, c), room, uni); };
  dl->PushClipRect(ImVec2(f.box_min.x, lay.body_top), ImVec2(f.box_max.x, area_min.y), true);
  for (const AxisLabel& a :
       place_axis_labels(g.cs.first, g.cs.last, cstride, g.origin.x, cell, area_min.x, f.box_max.x,
                         4 * px, [&](int c) { return ImGui::CalcTextSize(col_text(c).c_str()).x; }))
    dl->AddText(ImVec2(a.start, lay.body_top), a.index == spec.pin_col ? f.text_col : f.dim_col,
                col_text(a.index).c_str());
  dl->PopClipRect();
  // Band labels under the image.
  for (const ColumnBand& b : spec.bands) {
    const float x0 = std::max(g.origin.x + static_cast<float>(b.first) * cell, area_min.x);
    const float x1 = std::min(g.origin.x + static_cast<float>(b.last) * cell, area_max.x);
    if (x1 - x0 < 8) continue;
    std::string l = b.label;  // "head 1", or "h1" when the band is narrow
    if (ImGui::CalcTextSize(l.c_str()).x > x1 - x0 && l.starts_with("head ")) l = "h" + l.substr(5);
    l = fit_text(l, x1 - x0, uni);
    const float w = ImGui::CalcTextSize(l.c_str()).x;
    dl->AddText(ImVec2((x0 + x1 - w) * 0.5f, std::min(g.img_max.y, area_max.y) + 2 * px), b.color,
                l.c_str());
  }
}

// Colour bar: beside the image (as tall as it), or under it in narrow
// boxes; with a row scale, the line that says so.
void draw_scale(const AppState& state, const HeatmapFrame& f, const HeatmapSpec& spec,
                const HeatmapColouring& c, const HeatmapLayout& lay, const CellGeometry& g) {
  const float px = f.px, line_h = f.line_h;
  const ImVec2 area_min = lay.area_min, area_max = lay.area_max;
  ColourBarPlace place =
      lay.bar_below
          ? ColourBarPlace{ImVec2(area_min.x, std::min(g.img_max.y, area_max.y) + 6 * px +
                                                  (spec.bands.empty() ? 0 : line_h + 4 * px)),
                           std::max(g.vis_max.x - area_min.x,
                                    std::min(f.box_max.x - area_min.x - 4 * px,
                                             2 * ImGui::CalcTextSize("-0.0000 ").x +
                                                 ImGui::CalcTextSize("0").x * 3)),
                           true}
          : ColourBarPlace{ImVec2(g.vis_max.x + 10 * px, area_min.y),
                           std::max(std::min(g.vis_max.y - area_min.y,
                                             lay.area_h -
                                                 static_cast<float>(c.legend.size()) *
                                                     (std::max(14.0f * px, line_h) + 4 * px) -
                                                 (c.legend.empty() ? 0 : 2 * px)),
                                    2 * line_h),
                           false};
  // A horizontal bar too short for its labels grows into the row-label margin.
  if (place.horizontal) place.max_length = place.at.x + place.length - (f.box_min.x + 2 * px);
  if (!c.tex.has_range) return;
  const ColourBarExtent took = draw_colour_bar(f.dl, place, c.map, c.tex.range, c.kind, c.scope,
                                               state.ui.decimals, f.uni, px, c.legend, f.box_max.x);
  // Row scope: a line that says so (and whether it is automatic, and
  // that R changes it), ending under the bar's labels.
  if (c.scope != ScaleScope::Row) return;
  const std::string note =
      pick_title(figure::row_scope_notes(state.ui.row_scale, f.uni, f.tr.is_model()),
                 f.box_max.x - f.box_min.x - 4 * px, f.uni);
  const float w = ImGui::CalcTextSize(note.c_str()).x;
  const float y = std::max(took.bottom, std::min(g.img_max.y, area_max.y) +
                                            (spec.bands.empty() ? 0 : line_h + 4 * px)) +
                  3 * px;
  const float x = std::max(f.box_min.x + 2 * px, std::min(took.right, f.box_max.x - 2 * px) - w);
  if (y + line_h <= f.box_max.y + 0.5f) f.dl->AddText(ImVec2(x, y), f.dim_col, note.c_str());
}

// Tooltip: which query/key, and the engine's value.
void draw_cell_tooltip(const AppState& state, const HeatmapFrame& f, const HeatmapLayout& lay,
                       const CellGeometry& g) {
  const core::Stage& st = f.st;
  const core::Trace& tr = f.tr;
  const float v = st.data()(g.hover_r, g.hover_c);
  ImGui::BeginTooltip();
  ImGui::Text("%s: %s (row %d)", row_noun(st, tr), row_label(st, tr, g.hover_r).c_str(), g.hover_r);
  ImGui::Text("%s: %s (col %d)", col_noun(st, tr), col_label(st, tr, g.hover_c).c_str(), g.hover_c);
  if (st.head >= 0) ImGui::Text("head %d", st.head);
  if (std::isinf(v) && v < 0)
    ImGui::Text("value: %s  (masked: this key is in the query's future)", f.uni ? "−∞" : "-inf");
  else
    ImGui::Text("value: %s", format_value(v, std::max(4, state.ui.decimals), f.uni).c_str());
  const bool scrolls = g.img_w > lay.area_w + 0.5f || g.img_h > lay.area_h + 0.5f;
  ImGui::TextDisabled("click to pin in the inspector%s",
                      f.compact ? ""
                      : scrolls ? "; drag or Shift+wheel scrolls, wheel zooms"
                                : "; wheel zooms, drag pans");
  ImGui::EndTooltip();
}

}  // namespace

HeatmapResult draw_heatmap(AppState& state, const HeatmapSpec& spec, ImVec2 size) {
  HeatmapResult res;
  const ImVec2 box_min = ImGui::GetCursorScreenPos();
  auto finish = [&] {
    ImGui::SetCursorScreenPos(box_min);
    ImGui::Dummy(size);
    return res;
  };
  if (!spec.stage || !state.trace || size.x < 16 || size.y < 16 || spec.stage->data().size() == 0)
    return finish();

  const core::Stage& st = *spec.stage;
  const HeatmapFrame f{.st = st,
                       .tr = *state.trace,
                       .rows = static_cast<int>(st.data().rows()),
                       .cols = static_cast<int>(st.data().cols()),
                       .uni = state.ui.unicode,
                       .compact = spec.compact,
                       .dl = ImGui::GetWindowDrawList(),
                       .io = ImGui::GetIO(),
                       .line_h = ImGui::GetTextLineHeight(),
                       .px = ImGui::GetFontSize() / kBaseFontPx,
                       .text_col = ImGui::GetColorU32(ImGuiCol_Text),
                       .dim_col = ImGui::GetColorU32(ImGuiCol_TextDisabled),
                       .box_min = box_min,
                       .box_max = add(box_min, size),
                       .size = size};

  const float body_top = draw_title(f, spec, res);
  const HeatmapColouring colouring = colour_stage(state, f, spec);
  const std::optional<HeatmapLayout> lay = layout_heatmap(state, f, spec, colouring, body_top);
  if (!lay) return finish();

  ViewState& view = state.ui.views[spec.slot];
  if (f.compact) view = ViewState{};
  view.zoom = std::clamp(view.zoom, 1.0f, lay->max_zoom);
  const HeatmapInput in = handle_input(state, f, spec, *lay, view);
  res.hovered = in.hovered;
  const CellGeometry g = cell_geometry(f, *lay, view, in.hovered);
  const float drag_limit = f.io.MouseDragThreshold * f.io.MouseDragThreshold;
  if (g.hover_r >= 0) {
    res.clicked = in.released_here && f.io.MouseDragMaxDistanceSqr[0] < drag_limit;
    res.row = g.hover_r;
    res.col = g.hover_c;
  }

  f.dl->PushClipRect(lay->area_min, lay->area_max, true);
  draw_cell_image(f, colouring, *lay, g);
  view.decimals = draw_cell_numbers(state, f, colouring, g);
  draw_cell_outlines(f, spec, g);
  draw_scroll_bars(f, *lay, g, view);
  f.dl->PopClipRect();
  res.cells_min = lay->area_min;
  res.cells_max = g.vis_max;
  if (spec.focused) f.dl->AddRect(f.box_min, f.box_max, head_color(st.head), 4.0f, 0, 2.0f * f.px);

  if (!f.compact) {
    draw_axes(f, spec, *lay, g);
    draw_scale(state, f, spec, colouring, *lay, g);
  }
  if (g.hover_r >= 0 && !(in.active && ImGui::IsMouseDragging(ImGuiMouseButton_Left)))
    draw_cell_tooltip(state, f, *lay, g);
  return finish();
}

}  // namespace attnscope::gui
