// stage_panel.cpp: the centre of the window.
//
// Sections
//   1. stage strip: Prev, every step of the variant (current highlighted), Next
//   2. explanation: plain words, formula, shapes; a warning when the run made NaN/inf
//   3. matrices: the step's outputs large, its inputs beside them
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attnscope/base/stages.hpp"
#include "attnscope/model/predictions.hpp"
#include "panels/panels.hpp"
#include "teach/teach.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/widgets.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {

namespace {

// ---------------------------------------------------------------------------
// 1. Strip

void draw_strip(AppState& state) {
  const auto steps = state.steps();
  const auto at = std::find(steps.begin(), steps.end(), state.step) - steps.begin();
  const float right = ImGui::GetWindowContentRegionMax().x + ImGui::GetWindowPos().x;
  const ImGuiStyle& style = ImGui::GetStyle();

  ImGui::BeginDisabled(at == 0);
  if (ImGui::ArrowButton("prev", ImGuiDir_Left)) state.step_by(-1);
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Previous stage (Left arrow)");

  // Arrows between the steps read as a pipeline; when the strip would wrap
  // onto more than two lines they are left out.
  std::string arrow = display(state, "→");
  float total = 0;
  for (std::size_t k = 0; k < steps.size(); ++k)
    total += ImGui::CalcTextSize(
                 (std::to_string(k + 1) + " " + std::string(step_label(steps[k]))).c_str())
                 .x +
             style.FramePadding.x * 2 + style.ItemSpacing.x * 2 +
             ImGui::CalcTextSize(arrow.c_str()).x;
  if (total > 2 * (right - ImGui::GetCursorScreenPos().x)) arrow.clear();
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const std::string label = std::to_string(k + 1) + " " + std::string(step_label(steps[k]));
    const float w = ImGui::CalcTextSize(label.c_str()).x + style.FramePadding.x * 2 +
                    ImGui::CalcTextSize(arrow.c_str()).x + style.ItemSpacing.x * 2;
    ImGui::SameLine();
    // Wrap onto a new line instead of running off the edge.
    if (ImGui::GetCursorScreenPos().x + w + ImGui::GetFrameHeight() > right) ImGui::NewLine();
    if (k > 0 && !arrow.empty()) {
      ImGui::AlignTextToFramePadding();
      ImGui::TextDisabled("%s", arrow.c_str());
      ImGui::SameLine();
    }
    const bool current = static_cast<long>(k) == at;
    if (current) {
      ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(0.95f, 0.62f, 0.15f, 1.0f));
      ImGui::PushStyleColor(ImGuiCol_ButtonHovered, ImVec4(1.0f, 0.70f, 0.25f, 1.0f));
      ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.05f, 0.05f, 0.05f, 1.0f));
    }
    if (ImGui::Button(label.c_str())) state.step = steps[k];
    if (current) ImGui::PopStyleColor(3);
    if (ImGui::IsItemHovered() && state.trace)
      ImGui::SetTooltip(
          "%s", display(state, describe_step(steps[k], *state.trace, state.head).title).c_str());
  }
  ImGui::SameLine();
  ImGui::BeginDisabled(at + 1 >= static_cast<long>(steps.size()));
  if (ImGui::ArrowButton("next", ImGuiDir_Right)) state.step_by(+1);
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Next stage (Right arrow)");
}

// ---------------------------------------------------------------------------
// 2. Explanation

void draw_explanation(AppState& state) {
  const core::Trace& t = *state.trace;
  const auto steps = state.steps();
  const auto at = std::find(steps.begin(), steps.end(), state.step) - steps.begin();
  const StepText text = describe_step(state.step, t, state.head);

  if (state.ui.font_heading) ImGui::PushFont(state.ui.font_heading);
  ImGui::Text("%d / %d  %s", static_cast<int>(at + 1), static_cast<int>(steps.size()),
              display(state, text.title).c_str());
  if (state.ui.font_heading) ImGui::PopFont();
  text_wrapped(state, text.plain);
  if (state.ui.font_mono) ImGui::PushFont(state.ui.font_mono);
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.80f, 0.45f, 1.0f));
  text_wrapped(state, text.formula);
  ImGui::PopStyleColor();
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.55f, 0.80f, 1.0f, 1.0f));
  text_wrapped(state, text.shapes);
  ImGui::PopStyleColor();
  if (state.ui.font_mono) ImGui::PopFont();
}

// The run holds a NaN or an infinity the math does not expect (core/diagnose.hpp):
// the cells only show "nan" or "∞", so say on every step where it first
// appeared, what overflowed and what to change.
void draw_nonfinite_warning(const AppState& state) {
  if (!state.nonfinite) return;
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.35f, 1.0f));
  text_wrapped(state, "Not a number: " + state.nonfinite->message());
  ImGui::PopStyleColor();
}

// ---------------------------------------------------------------------------
// 3. Matrices

// Column groups of a (T, width) matrix whose columns are split between heads.
std::vector<ColumnBand> head_bands(const core::Trace& t, const core::Stage& s) {
  std::vector<ColumnBand> bands;
  const core::BlockRecipe r = t.recipe();
  if (!r.has(core::BlockPart::Heads) || s.head >= 0) return bands;
  const bool split_ids = s.id == core::stage_id::queries || s.id == core::stage_id::keys ||
                         s.id == core::stage_id::values || s.id == core::stage_id::concat;
  if (!(r.split_heads ? split_ids : s.id == core::stage_id::output)) return bands;
  const int width = t.head_dim();
  const int heads = t.heads_shown();
  if (width <= 0 || width * heads != s.data().cols()) return bands;
  for (int h = 0; h < heads; ++h)
    bands.push_back(
        ColumnBand{h * width, (h + 1) * width, head_color(h), "head " + std::to_string(h)});
  return bands;
}

// A row of vocabulary scores (the logits: 1 × 50257) is no picture: its
// largest entries as a table, each with its token and softmax probability.
void draw_vocab_scores(AppState& state, const core::Stage& s, ImVec2 size) {
  if (!state.model.is_open()) return;  // only a model's run has a vocabulary
  const core::RowMatrix& m = s.data();
  constexpr int kShown = 15;
  const std::vector<core::NextToken> top =
      core::top_tokens(m, kShown, [&](int id) { return state.model.token_name(id); });
  ImGui::BeginChild("##vocab_scores", size, false);
  const int at = state.model.overview ? state.model.overview->next_at : -1;
  ImGui::Text("logits after token %d (1 × %lld): the %d largest", at,
              static_cast<long long>(m.cols()), kShown);
  if (ImGui::BeginTable("##vocab", 4, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp)) {
    ImGui::TableSetupColumn("token");
    ImGui::TableSetupColumn("id");
    ImGui::TableSetupColumn("logit");
    ImGui::TableSetupColumn("softmax");
    ImGui::TableHeadersRow();
    for (const core::NextToken& t : top) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("\"%s\"", t.token.c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%d", t.id);
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", static_cast<double>(m(0, t.id)));
      ImGui::TableNextColumn();
      ImGui::Text("%.3g %%", 100.0 * t.probability);
    }
    ImGui::EndTable();
  }
  ImGui::EndChild();
}

void draw_one(AppState& state, const core::Stage& s, const std::string& slot, ImVec2 size) {
  if (const core::StageInfo* info = core::find_stage_info(s.id);
      info && info->cols == core::Axis::Vocab) {
    draw_vocab_scores(state, s, size);
    return;
  }
  HeatmapSpec spec;
  spec.slot = slot;
  spec.stage = &s;
  spec.bands = head_bands(*state.trace, s);
  const PinMarks m = pin_marks(state, s);
  spec.pin_row = m.pin_row;
  spec.pin_col = m.pin_col;
  spec.mark_row = m.mark_row;
  spec.mark_col = m.mark_col;
  spec.title_reserve = stage_book_badge_width(state, s);  // teach/teach.hpp
  // A model's Concat shows one head's context (the text says where it goes).
  if (state.step == Step::Concat && state.trace->is_model() && s.id == core::stage_id::context &&
      s.head >= 0)
    spec.title = "head " + std::to_string(s.head) + "'s context";
  const HeatmapResult r = draw_heatmap(state, spec, size);
  if (spec.title_reserve > 0) stage_book_badge(state, s, r.title_end);
  if (r.clicked) state.pinned = CellRef{s.id, s.head, r.row, r.col};
}

// How big the cells of the worst-off matrix get when each sits in a box of
// w × h (the widget's labels, title and colour bar take roughly this much;
// the bar goes beside the cells or under them, wherever they get bigger).
float cell_in_box(const core::Stage& s, float w, float h) {
  const float px = ImGui::GetFontSize() / 17.0f;
  const float line = ImGui::GetTextLineHeight();
  const auto cols = static_cast<float>(s.data().cols()), rows = static_cast<float>(s.data().rows());
  const float beside = std::min((w - 75 * px) / cols, (h - 4 * line - 30 * px) / rows);
  const float below = std::min((w - 70 * px) / cols, (h - 5 * line - 50 * px) / rows);
  return std::min(std::max(beside, below), 110.0f * px);
}

// The cell side the numbers of the step's small matrices need at the
// decimals setting (0 when numbers are off or every matrix is large): the
// layout gives the outputs that much first, so that they read like the book.
float text_cell(const AppState& state, const std::vector<const core::Stage*>& ms) {
  if (!state.ui.show_values) return 0;
  float need = 0;
  for (const core::Stage* m : ms) {
    if (m->data().rows() > 32 || m->data().cols() > 32) continue;
    const ValueRange range = value_range(m->data(), scale_kind_for(m->id));
    need = std::max(need, cell_for_text(number_width(state, range)(state.ui.decimals)));
  }
  return need;
}

// A grid of equal boxes for `ms` in w × h: the column count that gives the
// smallest cells the most room.
struct Grid {
  int cols = 1;
  ImVec2 box{0, 0};
  float cell = 0;  // the worst-off matrix's cell size
};
Grid best_grid(const std::vector<const core::Stage*>& ms, float w, float h, float gap) {
  Grid best;
  best.cell = -1e9f;
  const int n = static_cast<int>(ms.size());
  for (int k = 1; k <= std::max(n, 1); ++k) {
    const int rows = (n + k - 1) / k;
    const ImVec2 box(
        (w - gap * static_cast<float>(k - 1)) / static_cast<float>(k),
        (h - gap * static_cast<float>(rows - 1)) / static_cast<float>(std::max(rows, 1)));
    float cell = 1e9f;
    for (const core::Stage* m : ms) cell = std::min(cell, cell_in_box(*m, box.x, box.y));
    if (cell > best.cell + 0.5f) best = Grid{k, box, cell};
  }
  return best;
}

void draw_grid(AppState& state, const std::vector<const core::Stage*>& ms, const char* prefix,
               ImVec2 at, const Grid& g, float gap) {
  for (std::size_t k = 0; k < ms.size(); ++k) {
    const auto col = static_cast<float>(static_cast<int>(k) % g.cols);
    const auto row = static_cast<float>(static_cast<int>(k) / g.cols);
    ImGui::SetCursorScreenPos(ImVec2(at.x + col * (g.box.x + gap), at.y + row * (g.box.y + gap)));
    draw_one(state, *ms[k], prefix + std::to_string(k), g.box);
  }
}

void draw_matrices(AppState& state) {
  const core::Trace& t = *state.trace;
  const StepMatrices mats = step_matrices(state.step, t, state.head);
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  if (avail.x < 50 || avail.y < 50 || mats.outputs.empty()) return;
  const float gap = ImGui::GetStyle().ItemSpacing.x * 2;
  const ImVec2 origin = ImGui::GetCursorScreenPos();

  // Inputs on the left (data flows left to right). Their share of the width
  // is chosen so that the outputs get the biggest cells while the inputs'
  // cells stay at least two thirds as big.
  float in_w = 0;
  Grid in_grid, out_grid = best_grid(mats.outputs, avail.x, avail.y, gap);
  // Small outputs first get cells that hold their numbers at the decimals
  // setting (View > Decimals), when some split gives them that.
  const float need = text_cell(state, mats.outputs);
  if (!mats.inputs.empty()) {
    float best = -1e9f;
    for (float f : {0.2f, 0.25f, 0.3f, 0.35f, 0.4f, 0.45f, 0.5f}) {
      const float w_in = avail.x * f;
      const Grid gi = best_grid(mats.inputs, w_in, avail.y, gap);
      const Grid go = best_grid(mats.outputs, avail.x - w_in - gap, avail.y, gap);
      const float readable = need > 0 && go.cell >= need ? 1e6f : 0.0f;
      if (f < 0.25f && readable == 0.0f) continue;  // the inputs' fifth only for readable outputs
      const float score = readable + std::min(go.cell, gi.cell * 1.5f);
      if (score > best + 0.5f) {
        best = score;
        in_w = w_in;
        in_grid = gi;
        out_grid = go;
      }
    }
    draw_grid(state, mats.inputs, "in/", origin, in_grid, gap);
    // The flow arrow between inputs and outputs.
    const float ax = origin.x + in_w + gap * 0.5f;
    const float ay = origin.y + avail.y * 0.4f;
    ImGui::GetWindowDrawList()->AddTriangleFilled(ImVec2(ax - 5, ay - 8), ImVec2(ax - 5, ay + 8),
                                                  ImVec2(ax + 6, ay),
                                                  ImGui::GetColorU32(ImGuiCol_TextDisabled));
  }
  draw_grid(state, mats.outputs, "out/",
            ImVec2(origin.x + (in_w > 0 ? in_w + gap : 0.0f), origin.y), out_grid, gap);
  ImGui::SetCursorScreenPos(origin);
  ImGui::Dummy(avail);
}

// On steps that show token-by-token matrices (a row per query: its scores or
// weights), a switch for View > Colour each row on its own scale. In long
// sequences most weights are ~1/T and all sit near the bottom of one shared
// scale; each row on its own range shows which keys its query favours. It
// shows what the matrices show; while the setting is automatic it says so.
void draw_row_scale_toggle(AppState& state) {
  const core::Trace& t = *state.trace;
  const StepMatrices mats = step_matrices(state.step, t, state.head);
  bool token_by_token = false;
  for (const core::Stage* m : mats.outputs)
    token_by_token = token_by_token || cols_are_tokens(*m, t);
  if (!token_by_token) return;
  const bool automatic = state.ui.row_scale == figure::RowScale::Auto;
  const char* label =
      automatic ? "Colour each row on its own scale (auto)" : "Colour each row on its own scale";
  const float w =
      ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(label).x;
  // At the right end of the card's last line (inside its padding), or on a line of its own.
  const float pad = ImGui::GetStyle().WindowPadding.x;  // the card's, as draw_stage_panel gives it
  ImGui::SameLine();
  if (ImGui::GetContentRegionAvail().x - pad < w) ImGui::NewLine();
  const float free = ImGui::GetContentRegionAvail().x - pad - w;
  ImGui::SetCursorPosX(ImGui::GetCursorPosX() + std::max(0.0f, free));
  bool on = rows_on_own_scale(state);
  if (ImGui::Checkbox(label, &on)) toggle_row_scale(state);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "Off: one scale for the whole matrix, so any two cells compare.\n"
        "On: each row on its own range (weights: 0 to the row's largest; scores:\n"
        "-max to +max of the row's |values|), so the keys one query favours\n"
        "stand out even when its weights are all ~1/T.\n"
        "Auto (until you choose): on for a model's heads (as All heads shows them)\n"
        "and from T = %ld tokens, off below.\n"
        "Also in View and on the R key; exports follow it.",
        figure::kAutoRowScaleTokens);
}

}  // namespace

void draw_stage_panel(AppState& state) {
  draw_strip(state);
  if (!state.trace) {
    ImGui::Spacing();
    text_wrapped(state, "Nothing to show yet: fix the problem shown in red on the left.");
    return;
  }
  ImGui::Spacing();
  // A card behind the text: draw the text first (channel 1), then the
  // background under it (channel 0) once its size is known.
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 pad = ImGui::GetStyle().WindowPadding;
  const float width = ImGui::GetContentRegionAvail().x;
  dl->ChannelsSplit(2);
  dl->ChannelsSetCurrent(1);
  const ImVec2 top = ImGui::GetCursorScreenPos();
  ImGui::SetCursorScreenPos(ImVec2(top.x + pad.x, top.y + pad.y));
  ImGui::BeginGroup();
  ImGui::PushTextWrapPos(ImGui::GetCursorPos().x + width - 2 * pad.x);
  draw_explanation(state);
  draw_stage_learn_links(state);  // book badges + "Learn more" (teach/learn_menu.cpp)
  draw_row_scale_toggle(state);
  ImGui::PopTextWrapPos();
  ImGui::EndGroup();
  const float bottom = ImGui::GetItemRectMax().y + pad.y;
  dl->ChannelsSetCurrent(0);
  dl->AddRectFilled(top, ImVec2(top.x + width, bottom), ImGui::GetColorU32(ImGuiCol_FrameBg),
                    ImGui::GetStyle().ChildRounding);
  dl->ChannelsMerge();
  ImGui::SetCursorScreenPos(ImVec2(top.x, bottom));
  ImGui::Dummy(ImVec2(width, 0));
  ImGui::Spacing();
  draw_nonfinite_warning(state);
  draw_matrices(state);
}

void draw_stage_area(AppState& state) {
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const float font = ImGui::GetFontSize();
  constexpr ImGuiWindowFlags kFixed =
      ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse;
  const float centre_h = ImGui::GetContentRegionAvail().y;
  // The heads grid only for steps that have a matrix per head.
  const bool heads = state.trace && !per_head_stage(state.step, *state.trace).empty();
  const float heads_h = heads ? std::clamp(centre_h * 0.22f, font * 8.0f, font * 14.0f) : 0.0f;
  ImGui::BeginChild("stage", ImVec2(0, centre_h - heads_h - (heads ? gap : 0.0f)), false, kFixed);
  if (!state.trace && state.computing())  // the first trace is on its way
    ImGui::TextDisabled("Computing the first trace (%d tokens)...",
                        static_cast<int>(state.inputs.tokens.size()));
  else
    draw_stage_panel(state);
  ImGui::EndChild();
  if (heads) {
    ImGui::BeginChild("heads", ImVec2(0, heads_h), true, ImGuiWindowFlags_HorizontalScrollbar);
    draw_heads_panel(state);
    ImGui::EndChild();
  }
}

}  // namespace attnscope::gui
