// model_view.cpp: the centre of the window while a trained model is the source.
//
// Sections
//   1. no model yet: where to get one
//   2. the model view: every layer x head as a thumbnail
//   3. the head view: lines from one token to the tokens it attends to
//   4. the centre: view switch, then the chosen view
//   5. the right column beside the model view: one head's scores
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <string>
#include <utility>

#include "attnscope/base/stages.hpp"
#include "attnscope/model/family_config.hpp"
#include "attnscope/model/head_patterns.hpp"
#include "attnscope/text/tokenizer.hpp"
#include "export/files.hpp"
#include "export/files_ui.hpp"
#include "imgui.h"
#include "panels/panels.hpp"
#include "render/heatmap.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

ImU32 to_u32(Rgba8 c) { return IM_COL32(c.r, c.g, c.b, c.a); }

// ---------------------------------------------------------------------------
// 1. No model

void draw_no_model(AppState& state) {
  const ModelState& m = state.model;
  ImGui::PushTextWrapPos(0.0f);
  if (m.loader->loading()) {
    ImGui::Text("Loading %s ...", m.loader->path().c_str());
    ImGui::PopTextWrapPos();
    return;
  }
  ImGui::TextUnformatted("No model is open yet.");
  ImGui::Spacing();
  text_wrapped(state,
               "Trained GPT-2 weights are one download away: Get a model fetches them from the "
               "Hugging Face Hub (548 MB for GPT-2 124M) and opens them.");
  if (ImGui::Button("Get a model...")) open_get_model_window(state);
  ImGui::Spacing();
  text_wrapped(state,
               "A model already on your disk: open it (Checkpoint, on the left) or drop onto this "
               "window:");
  text_wrapped(state,
               "  • a Hugging Face gpt2 folder: config.json, model.safetensors, vocab.json and "
               "merges.txt (huggingface-cli download openai-community/gpt2 puts one in the "
               "Hugging Face cache, which Find models searches);");
  text_wrapped(state,
               "  • the book's chapter-5 model.pth (torch.save(model.state_dict(), ...)) with its "
               "GPT_CONFIG as JSON in config.json beside it, or named in the config field;");
  text_wrapped(state,
               "  • a Llama 3, SmolLM2, Mistral, Qwen2, Qwen3 or Gemma 3 folder: config.json, "
               "model.safetensors (or its shards) and tokenizer.json.");
  std::string folders;
  for (const auto& f : core::model_search_folders()) folders += "  " + f.string() + "\n";
  ImGui::TextDisabled("Find models looks in:\n%s", folders.c_str());
  ImGui::PopTextWrapPos();
  ImGui::Spacing();
  text_wrapped(state,
               "No model at hand? The book's own attention classes run on any sentence too: "
               "GPT-2's tokens with seeded chapter-2 embeddings.");
  if (ImGui::Button("Use the chapter 3 classes on typed text")) {
    state.set_source(Source::Text);
  }
}

// ---------------------------------------------------------------------------
// 2. Model view

// What a family model's layout adds to the grid: heads sharing a K/V head
// stand together, and sliding-window layers are marked. GPT-2: one head a
// group, no window.
struct GridLayout {
  int group = 1;              // query heads per K/V head
  int kv_heads = 0;           // K/V heads (0: GPT-2, every head its own)
  std::vector<bool> sliding;  // per layer (empty: none slides)
  int window = 0;

  bool slides(int layer) const {
    return layer < static_cast<int>(sliding.size()) && sliding[static_cast<std::size_t>(layer)];
  }
};

GridLayout grid_layout(const ModelState& m) {
  GridLayout g;
  if (!m.family) return g;
  const core::FamilyConfig& c = m.family->model->config();
  g.group = c.kv_groups();
  g.kv_heads = c.num_key_value_heads;
  g.sliding = c.sliding;
  g.window = c.sliding_window;
  return g;
}

// The tooltip of one head: where it is and its pattern scores.
void head_tooltip(const ModelOverview& o, const GridLayout& g, int layer, int head) {
  ImGui::BeginTooltip();
  ImGui::Text("layer %d, head %d", layer, head);
  if (g.kv_heads > 0)
    ImGui::Text("reads K/V head %d (shared by heads %d-%d)", head / g.group,
                head / g.group * g.group, head / g.group * g.group + g.group - 1);
  if (g.slides(layer)) ImGui::Text("sliding window: each query sees its last %d tokens", g.window);
  for (core::PatternKind k : core::kPatternKinds)
    ImGui::Text("%-22s %.3f", std::string(core::pattern_name(k)).c_str(),
                pattern_value(o, k, layer * o.heads + head));
  ImGui::TextDisabled("click: open this head");
  ImGui::EndTooltip();
}

// The chosen score's range over every head, for the frames' colours.
std::pair<double, double> score_range(const ModelOverview& o, core::PatternKind kind) {
  double lo = pattern_value(o, kind, 0), hi = lo;
  for (int k = 0; k < o.layers * o.heads; ++k) {
    lo = std::min(lo, pattern_value(o, kind, k));
    hi = std::max(hi, pattern_value(o, kind, k));
  }
  return {lo, hi};
}

// What the frames' colours mean: the colour map from the lowest score of
// any head to the highest, with both numbers.
void draw_pattern_legend(const AppState& state, core::PatternKind kind) {
  const auto [lo, hi] = score_range(*state.model.overview, kind);
  const Colormap map = sequential_map(state.ui.palette);
  char low[32], high[32];
  std::snprintf(low, sizeof low, "%.3f", lo);
  std::snprintf(high, sizeof high, "%.3f", hi);
  ImGui::TextDisabled("frame colour: %s", low);
  ImGui::SameLine();
  const float w = ImGui::GetFontSize() * 8, h = ImGui::GetTextLineHeight() * 0.8f;
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const float y0 = p0.y + (ImGui::GetTextLineHeight() - h) * 0.5f;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  constexpr int kSteps = 32;
  for (int k = 0; k < kSteps; ++k) {
    const float x0 = p0.x + w * static_cast<float>(k) / kSteps;
    const float x1 = p0.x + w * static_cast<float>(k + 1) / kSteps;
    dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, y0 + h),
                      to_u32(sample(map, (static_cast<float>(k) + 0.5f) / kSteps)));
  }
  ImGui::Dummy(ImVec2(w, ImGui::GetTextLineHeight()));
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Frame colours: from the lowest-scoring head (%s) to the highest (%s)", low,
                      high);
  ImGui::SameLine();
  ImGui::TextDisabled("%s", high);
}

// The model view's first line: colour (and sort) the heads by a pattern score.
void draw_pattern_choice(AppState& state) {
  PatternChoice& p = state.model.pattern;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Head patterns:");
  ImGui::SameLine();
  const std::string current = p.kind ? std::string(core::pattern_name(*p.kind)) : "none";
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 11);
  if (ImGui::BeginCombo("##colour_by", current.c_str())) {
    if (ImGui::Selectable("none", !p.kind)) p.kind.reset();
    for (core::PatternKind k : core::kPatternKinds) {
      if (ImGui::Selectable(std::string(core::pattern_name(k)).c_str(), p.kind == k)) p.kind = k;
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("%s", std::string(core::pattern_explanation(k)).c_str());
    }
    ImGui::EndCombo();
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Colour each head's frame by a score measured on this text (bright: high)");
  ImGui::SameLine();
  ImGui::BeginDisabled(!p.kind);
  ImGui::Checkbox("sort each layer", &p.sort);
  ImGui::EndDisabled();
  if (p.kind) {
    ImGui::SameLine();
    draw_pattern_legend(state, *p.kind);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    text_wrapped(state, std::string(core::pattern_explanation(*p.kind)));
    ImGui::PopStyleColor();
  }
}

// What the grid shows, under it: the tiles' scale, the K/V groups, the windows.
void draw_grid_caption(AppState& state, const GridLayout& layout, ScaleScope scope, bool grouped,
                       bool any_sliding) {
  const ModelOverview& o = *state.model.overview;
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  text_wrapped(state,
               std::to_string(o.tokens) +
                   " tokens. Each tile is one head's attention "
                   "weights (" +
                   (scope == ScaleScope::Row ? "each row on its own scale, View > R"
                                             : "on one scale, 0 to 1") +
                   (o.tokens > kThumbnailCells ? "), each cell the largest weight of a block of " +
                                                     std::to_string(o.thumb_block()) + " × " +
                                                     std::to_string(o.thumb_block()) + " tokens."
                                               : std::string(").")));
  if (layout.kv_heads > 0 && layout.group > 1)
    text_wrapped(state, std::to_string(o.heads) + " query heads read " +
                            std::to_string(layout.kv_heads) + " K/V head" +
                            (layout.kv_heads > 1 ? "s" : "") + " (grouped-query attention): " +
                            (grouped ? "the heads of each group stand together, " +
                                           std::to_string(layout.group) + " to a group."
                                     : "every head shares the same keys and values."));
  if (any_sliding)
    text_wrapped(state, "W: a sliding-window layer (each query sees its last " +
                            std::to_string(layout.window) +
                            " tokens); the other layers see every earlier token.");
  ImGui::PopStyleColor();
}

// Over the grid: each K/V group's name across its heads (when grouped),
// and each head's name over its column, centred; where the names are wider
// than the tiles (many heads, a large UI scale) every n-th, so none overlap.
// column_x(k, cell) is column k's left edge from `origin`; a tile is `tile` wide.
void draw_grid_header(const ModelOverview& o, const GridLayout& layout, bool grouped, ImVec2 origin,
                      float top, float cell, float tile,
                      const std::function<float(int, float)>& column_x) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float font = ImGui::GetFontSize(), line = ImGui::GetTextLineHeightWithSpacing();
  const ImU32 label_colour = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  for (int g = 0; grouped && g < layout.kv_heads; ++g) {
    const float x0 = origin.x + column_x(g * layout.group, cell);
    const float x1 = x0 + cell * static_cast<float>(layout.group - 1) + tile;
    const std::string name = "K/V " + std::to_string(g);
    const float w = ImGui::CalcTextSize(name.c_str()).x;
    dl->AddLine(ImVec2(x0, origin.y + line * 0.5f), ImVec2(x1, origin.y + line * 0.5f),
                label_colour);
    dl->AddRectFilled(ImVec2((x0 + x1 - w) * 0.5f - 3, origin.y),
                      ImVec2((x0 + x1 + w) * 0.5f + 3, origin.y + line),
                      ImGui::GetColorU32(ImGuiCol_WindowBg));
    dl->AddText(ImVec2((x0 + x1 - w) * 0.5f, origin.y), label_colour, name.c_str());
  }
  const float name_w = ImGui::CalcTextSize(("H" + std::to_string(o.heads - 1)).c_str()).x;
  const int every = std::max(1, static_cast<int>(std::ceil((name_w + font * 0.4f) / cell)));
  for (int k = 0; k < o.heads; k += every) {
    const std::string name = "H" + std::to_string(k);
    const float w = ImGui::CalcTextSize(name.c_str()).x;
    dl->AddText(ImVec2(origin.x + column_x(k, cell) + (tile - w) * 0.5f, origin.y + top - line),
                label_colour, name.c_str());
  }
}

void draw_model_grid(AppState& state) {
  draw_pattern_choice(state);
  ModelState& m = state.model;
  const ModelOverview& o = *m.overview;
  const float font = ImGui::GetFontSize();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const GridLayout layout = grid_layout(m);
  const bool any_sliding =
      std::find(layout.sliding.begin(), layout.sliding.end(), true) != layout.sliding.end();
  const float label_w = ImGui::CalcTextSize(any_sliding ? "L00 W " : "L00 ").x;
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float gap = std::max(2.0f, font * 0.15f);
  const bool sorted = m.pattern.kind && m.pattern.sort;
  // Heads sharing a K/V head side by side, the groups apart (not when each
  // layer is sorted by score).
  const bool grouped = !sorted && layout.group > 1 && layout.group < o.heads;
  const float group_gap = grouped ? gap * 4 : 0.0f;
  const float groups_gap = grouped ? group_gap * static_cast<float>(o.heads / layout.group - 1) : 0;
  const float top = line * (grouped ? 2.0f : 1.0f);  // a row naming the K/V heads
  const auto column_x = [&](int k, float cell_w) {
    return label_w + cell_w * static_cast<float>(k) +
           (grouped ? group_gap * static_cast<float>(k / layout.group) : 0.0f);
  };
  const float cell =
      std::max(std::min((avail.x - label_w - groups_gap) / static_cast<float>(o.heads),
                        (avail.y - top - ImGui::GetTextLineHeightWithSpacing()) /
                            static_cast<float>(o.layers)),
               font);
  const float tile = cell - gap;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const Colormap map = sequential_map(state.ui.palette);
  // Row scale unless the learner turned it off: each query's strongest key stands out.
  const ScaleScope scope =
      state.ui.row_scale == figure::RowScale::Off ? ScaleScope::Matrix : ScaleScope::Row;
  const auto [lo, hi] =
      m.pattern.kind ? score_range(o, *m.pattern.kind) : std::pair<double, double>(0.0, 1.0);
  const ImU32 label_colour = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  if (!sorted)
    draw_grid_header(o, layout, grouped, origin, top, cell, tile, column_x);
  else
    dl->AddText(ImVec2(origin.x + label_w, origin.y), label_colour,
                "heads sorted by score, highest on the left (plate: the head and its score)");
  ImGui::InvisibleButton("grid", ImVec2(label_w + groups_gap + cell * static_cast<float>(o.heads),
                                        top + cell * static_cast<float>(o.layers)));
  const bool hovered = ImGui::IsItemHovered();
  const bool clicked = ImGui::IsItemClicked();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  m.hovered = -1;
  // Every head's thumbnail in one texture, a row of cells per layer.
  const TextureCache::Atlas& atlas = state.textures.atlas(
      "thumbs", m.overview_version, o.thumbs, o.heads,
      o.thumbs.empty() ? ScaleKind::Sequential : scale_kind_for(o.thumbs[0].id), map, scope);
  for (int l = 0; l < o.layers; ++l) {
    const float y = origin.y + top + cell * static_cast<float>(l);
    dl->AddText(ImVec2(origin.x, y + tile * 0.5f - font * 0.5f),
                l == m.layer ? ImGui::GetColorU32(ImGuiCol_Text) : label_colour,
                ("L" + std::to_string(l) + (layout.slides(l) ? " W" : "")).c_str());
    if (hovered && mouse.x < origin.x + label_w && mouse.y >= y && mouse.y < y + cell)
      ImGui::SetTooltip(layout.slides(l) ? "layer %d slides: each query sees its last %d tokens"
                                         : "layer %d attends to every earlier token (full)",
                        l, layout.window);
    const std::vector<int> order = heads_in_order(o, l, m.pattern);
    for (int k = 0; k < o.heads; ++k) {
      const int h = order[static_cast<std::size_t>(k)];
      const int index = l * o.heads + h;
      const ImVec2 p0(origin.x + column_x(k, cell), y);
      const ImVec2 p1(p0.x + tile, p0.y + tile);
      const ImVec4 uv = atlas.uv[static_cast<std::size_t>(index)];
      if (atlas.id && uv.z > uv.x)
        dl->AddImage(atlas.id, p0, p1, ImVec2(uv.x, uv.y), ImVec2(uv.z, uv.w));
      else
        dl->AddRectFilled(p0, p1, IM_COL32(60, 60, 60, 255));
      if (m.pattern.kind) {
        const double v = pattern_value(o, *m.pattern.kind, index);
        const float t = hi > lo ? static_cast<float>((v - lo) / (hi - lo)) : 0.0f;
        dl->AddRect(p0, p1, to_u32(sample(map, t)), 0.0f, 0, std::max(2.0f, tile * 0.06f));
      }
      if (sorted && tile > font * 1.6f) {  // which head this is and its score, on a dark plate
        char score[32];
        std::snprintf(score, sizeof score, "%.2f", pattern_value(o, *m.pattern.kind, index));
        const std::string number = tile > ImGui::CalcTextSize("00 0.00").x + 6
                                       ? std::to_string(h) + " " + score
                                       : std::to_string(h);
        const ImVec2 ts = ImGui::CalcTextSize(number.c_str());
        dl->AddRectFilled(ImVec2(p0.x + 2, p0.y + 2), ImVec2(p0.x + 5 + ts.x, p0.y + 3 + ts.y),
                          IM_COL32(0, 0, 0, 190));
        dl->AddText(ImVec2(p0.x + 3.5f, p0.y + 2.5f), IM_COL32(255, 255, 255, 255), number.c_str());
      }
      if (l == m.layer && h == state.head)
        dl->AddRect(ImVec2(p0.x - 1, p0.y - 1), ImVec2(p1.x + 1, p1.y + 1),
                    IM_COL32(255, 200, 60, 255), 0.0f, 0, 2.0f);
      const bool over = hovered && mouse.x >= p0.x && mouse.x < p0.x + cell && mouse.y >= p0.y &&
                        mouse.y < p0.y + cell;
      if (!over) continue;
      m.hovered = index;
      head_tooltip(o, layout, l, h);
      if (clicked) {
        state.select_layer(l);
        state.select_head(h);
        m.view = ModelView::Head;
      }
    }
  }
  draw_grid_caption(state, layout, scope, grouped, any_sliding);
}

// ---------------------------------------------------------------------------
// 3. Head view

void draw_head_toggles(AppState& state, int heads) {
  std::vector<bool>& off = state.model.heads_off;
  off.resize(static_cast<std::size_t>(heads), false);
  ImGui::TextUnformatted("Heads:");
  for (int h = 0; h < heads; ++h) {
    ImGui::SameLine();
    const bool on = !off[static_cast<std::size_t>(h)];
    ImGui::PushID(h);
    ImGui::PushStyleColor(ImGuiCol_Button, on ? head_color(h) : IM_COL32(70, 70, 70, 255));
    ImGui::PushStyleColor(ImGuiCol_Text,
                          on ? IM_COL32(0, 0, 0, 255) : IM_COL32(180, 180, 180, 255));
    if (ImGui::SmallButton(std::to_string(h).c_str())) off[static_cast<std::size_t>(h)] = on;
    ImGui::PopStyleColor(2);
    ImGui::PopID();
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("head %d: click to %s it", h, on ? "hide" : "show");
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("all")) off.assign(off.size(), false);
  ImGui::SameLine();
  if (ImGui::SmallButton("none")) off.assign(off.size(), true);
}

// The head view's layer: ◀ and ▶ beside a slider, so that a learner walks
// the layers without leaving the view.
void draw_head_view_layer(AppState& state) {
  const int layers = std::max(state.model.num_layers(), 1);
  const int layer = state.model.layer;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Layer");
  ImGui::SameLine();
  ImGui::BeginDisabled(layer <= 0);
  if (ImGui::Button(state.ui.unicode ? "◀##layer" : "<##layer")) state.select_layer(layer - 1);
  ImGui::EndDisabled();
  ImGui::SameLine();
  int pick = layer;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10);
  if (ImGui::SliderInt("##head_view_layer", &pick, 0, layers - 1, "%d")) state.select_layer(pick);
  ImGui::SameLine();
  ImGui::BeginDisabled(layer >= layers - 1);
  if (ImGui::Button(state.ui.unicode ? "▶##layer" : ">##layer")) state.select_layer(layer + 1);
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::TextDisabled("of %d (PgUp / PgDn)", layers);
}

void draw_head_view(AppState& state) {
  ModelState& m = state.model;
  const core::Trace& t = *state.trace;
  const int T = t.num_tokens();
  const int heads = t.heads_shown();
  draw_head_view_layer(state);
  draw_head_toggles(state, heads);
  const int q = m.query < 0 || m.query >= T ? T - 1 : m.query;
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  text_wrapped(state,
               "Hover or click a token on the left: lines go to the tokens it attends to, as "
               "thick as the weight, one colour per head (each head has its own lane in a "
               "token's row).");
  ImGui::PopStyleColor();
  // Rows share the panel's height (up to three lines each); a long text scrolls.
  const float text_h = ImGui::GetTextLineHeightWithSpacing();
  const float line_h = std::clamp(
      ImGui::GetContentRegionAvail().y / static_cast<float>(std::max(T, 1)), text_h, text_h * 3.0f);
  ImGui::BeginChild("head_view", ImVec2(0, 0), false);
  const float width = ImGui::GetContentRegionAvail().x;
  const float col_w = std::min(width * 0.3f, ImGui::GetFontSize() * 12);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float left_x = origin.x + col_w, right_x = origin.x + width - col_w;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  auto row_y = [&](int i) { return origin.y + line_h * (static_cast<float>(i) + 0.5f); };
  int hovered_row = -1;
  for (int i = 0; i < T; ++i) {
    // The run's tokens: the text box may hold a text that was refused since.
    const std::string& label = t.tokens[static_cast<std::size_t>(i)];
    const float w = ImGui::CalcTextSize(label.c_str()).x;
    ImGui::SetCursorScreenPos(ImVec2(left_x - w - 6, row_y(i) - text_h * 0.5f));
    ImGui::PushID(i);
    const bool sel = i == q;
    if (ImGui::Selectable(label.c_str(), sel, 0, ImVec2(w, 0))) {
      m.query = i;
    }
    if (ImGui::IsItemHovered()) hovered_row = i;
    ImGui::PopID();
    dl->AddText(ImVec2(right_x + 6, row_y(i) - ImGui::GetFontSize() * 0.5f),
                ImGui::GetColorU32(ImGuiCol_Text), label.c_str());
  }
  const int from = hovered_row >= 0 ? hovered_row : q;
  // Each head's lines start and end in a lane of their own within the row,
  // so that heads attending to the same token stay apart.
  auto lane = [&](int h) {
    return text_h * 0.7f * ((static_cast<float>(h) + 0.5f) / static_cast<float>(heads) - 0.5f);
  };
  for (int h = 0; h < heads; ++h) {
    if (h < static_cast<int>(m.heads_off.size()) && m.heads_off[static_cast<std::size_t>(h)])
      continue;
    const core::Stage* w = t.find(core::stage_id::weights, h);
    if (!w || w->data().rows() <= from) continue;
    for (int j = 0; j <= from && j < w->data().cols(); ++j) {
      const float v = w->data()(from, j);
      if (!(v > 0.01f)) continue;  // lines thinner than a hair only hide the others
      dl->AddLine(ImVec2(left_x, row_y(from) + lane(h)), ImVec2(right_x, row_y(j) + lane(h)),
                  head_color(h, 0.45f + 0.55f * v), 1.0f + 7.0f * v);
    }
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + line_h * static_cast<float>(T)));
  ImGui::Dummy(ImVec2(1, 1));
  ImGui::EndChild();
}

}  // namespace

// ---------------------------------------------------------------------------
// 5. The right column beside the model view

void draw_head_scores(AppState& state) {
  const ModelState& m = state.model;
  if (!m.overview) return;
  const ModelOverview& o = *m.overview;
  // The head under the pointer, else the selected one.
  const int index = m.hovered >= 0 ? m.hovered : m.layer * o.heads + state.head;
  if (index < 0 || index >= o.layers * o.heads) return;
  const int layer = index / o.heads, head = index % o.heads;
  if (state.ui.font_heading) ImGui::PushFont(state.ui.font_heading);
  ImGui::Text("Layer %d, head %d", layer, head);
  if (state.ui.font_heading) ImGui::PopFont();
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled(m.hovered >= 0 ? "under the pointer" : "selected; hover another head");
  ImGui::PopTextWrapPos();
  ImGui::Spacing();
  for (core::PatternKind k : core::kPatternKinds) {
    const double v = pattern_value(o, k, index);
    // Where this head stands among all of them on this score, as printed:
    // heads strictly lower, and those showing the same number apart.
    constexpr int kDecimals = 3;
    const HeadRank rank = head_rank(o, k, index, kDecimals);
    ImGui::Text("%s: %.*f", std::string(core::pattern_name(k)).c_str(), kDecimals, v);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    const std::string standing =
        rank.tied == rank.others ? "The same as all the other " + std::to_string(rank.others) +
                                       " heads (to " + std::to_string(kDecimals) + " decimals). "
        : rank.tied > 0
            ? "Higher than " + std::to_string(rank.lower) + " of the other " +
                  std::to_string(rank.others) + " heads, tied with " + std::to_string(rank.tied) +
                  " (to " + std::to_string(kDecimals) + " decimals). "
            : "Higher than " + std::to_string(rank.lower) + " of the other " +
                  std::to_string(rank.others) + " heads. ";
    text_wrapped(state, standing + std::string(core::pattern_explanation(k)));
    ImGui::PopStyleColor();
  }
  ImGui::Spacing();
  text_wrapped(state,
               "Scores are measured on the text on the left, except induction, which "
               "uses " +
                   std::to_string(kInductionTokens) +
                   " random tokens repeated twice (the same as attnscope-cli model "
                   "patterns).");
}

// The right column beside the head view: for the token the lines start
// from, each head's three strongest keys.
void draw_token_focus(AppState& state) {
  if (!state.showing_model()) return;
  const core::Trace& t = *state.trace;
  const ModelState& m = state.model;
  const int T = t.num_tokens();
  const int q = m.query < 0 || m.query >= T ? T - 1 : m.query;
  // The run's tokens, not the text box's (it may hold a refused text).
  auto name = [&](int i) { return t.tokens[static_cast<std::size_t>(i)]; };
  if (state.ui.font_heading) ImGui::PushFont(state.ui.font_heading);
  ImGui::Text("Token %d \"%s\"", q, name(q).c_str());
  if (state.ui.font_heading) ImGui::PopFont();
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  text_wrapped(state, "layer " + std::to_string(t.layer) + ": where each head looks from it");
  ImGui::PopStyleColor();
  if (!ImGui::BeginTable("focus", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) return;
  ImGui::TableSetupColumn("head", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("keys", ImGuiTableColumnFlags_WidthStretch);  // not a stage id
  for (int h = 0; h < t.heads_shown(); ++h) {
    const core::Stage* w = t.find(core::stage_id::weights, h);
    if (!w || w->data().rows() <= q) continue;
    std::vector<int> keys(static_cast<std::size_t>(q + 1));
    std::iota(keys.begin(), keys.end(), 0);
    const auto row = w->data().row(q);
    const std::size_t top = std::min<std::size_t>(3, keys.size());
    std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(top), keys.end(),
                      [&](int a, int b) { return row(a) > row(b); });
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(head_color(h)), "head %d", h);
    ImGui::TableNextColumn();
    std::string line;
    for (std::size_t k = 0; k < top; ++k) {
      char weight[16];
      std::snprintf(weight, sizeof weight, "%.2f", static_cast<double>(row(keys[k])));
      line += (k ? ", " : "") + name(keys[k]) + " " + weight;
    }
    ImGui::TextWrapped("%s", line.c_str());
  }
  ImGui::EndTable();
}

// ---------------------------------------------------------------------------
// 4. Centre

void draw_model_centre(AppState& state) {
  ModelState& m = state.model;
  if (!m.is_open()) {
    draw_no_model(state);
    return;
  }
  if (!state.showing_model() || !m.overview) {
    if (!state.error.empty())
      text_wrapped(state, state.error);
    else
      ImGui::TextDisabled("Running %s on %zu tokens...", m.model_name().c_str(),
                          m.typed.tokens.size());
    return;
  }
  const char* names[] = {"All heads", "One head", "Head view"};
  for (int v = 0; v < 3; ++v) {
    if (v > 0) ImGui::SameLine();
    const bool current = static_cast<int>(m.view) == v;
    if (current) ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(0.95f, 0.62f, 0.15f, 0.9f));
    if (ImGui::Button(names[v])) m.view = static_cast<ModelView>(v);
    if (current) ImGui::PopStyleColor();
  }
  if (m.view == ModelView::Model) {
    ImGui::SameLine();
    if (ImGui::Button("Export view")) ImGui::OpenPopup("export_model_view");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Every head as one figure, titled with the model and the text");
    if (ImGui::BeginPopup("export_model_view")) {
      for (int scale : {1, 2, 4})
        if (ImGui::MenuItem(("PNG " + std::to_string(scale) + "×").c_str()))
          export_model_view(state, ExportKind::Png, scale);
      if (ImGui::MenuItem("SVG")) export_model_view(state, ExportKind::Svg, 1);
      draw_theme_choice(state);
      ImGui::EndPopup();
    }
  }
  // Where the learner is, and the keys while there is room for them (a
  // narrow window keeps the first part; the keys are in each control's tip).
  char where[256];
  std::snprintf(where, sizeof where, "%s, layer %d, head %d", m.model_name().c_str(), m.layer,
                state.head);
  const std::string keys = std::string(where) + "   (PgUp/PgDn: layer, [ ]: head)";
  ImGui::SameLine();
  const float room = ImGui::GetContentRegionAvail().x;
  ImGui::TextDisabled("%s", ImGui::CalcTextSize(keys.c_str()).x <= room ? keys.c_str()
                            : ImGui::CalcTextSize(where).x <= room      ? where
                                                                        : "");
  if (ImGui::CalcTextSize(where).x > room) ImGui::TextDisabled("%s", where);
  if (!state.error.empty()) text_wrapped(state, state.error);
  switch (m.view) {
    case ModelView::Model:
      draw_model_grid(state);
      break;
    case ModelView::Head:
      draw_stage_area(state);
      break;
    case ModelView::Tokens:
      draw_head_view(state);
      break;
  }
}

}  // namespace attnscope::gui
