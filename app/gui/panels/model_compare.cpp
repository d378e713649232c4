// model_compare.cpp: the Compare checkpoints window. The open model is A; the
// learner opens a second checkpoint B of the same shape (another epoch of
// their training, another model), the worker runs it on A's token ids
// (ModelJob::compare), and the window shows the selected head of A and B
// side by side, B − A on the signed scale chapter 3's Compare uses, and
// every head's mean |B − A| as a layers × heads grid (click a cell to
// select that head). Numbers: core::compare_runs (model/run_compare.hpp).
//
// Sections
//   1. B's path, loading, errors
//   2. the grid of every head
//   3. the window
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include "attnscope/base/stages.hpp"
#include "attnscope/book/teach.hpp"
#include "imgui.h"
#include "imgui_stdlib.h"  // needs imgui.h first
#include "panels/panels.hpp"
#include "platform/native_dialog.hpp"
#include "render/colormap.hpp"
#include "teach/teach.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

std::string file_name(const std::string& path) {
  std::filesystem::path p(path);
  if (!p.has_filename()) p = p.parent_path();  // "folder/"
  return p.filename().string().empty() ? path : p.filename().string();
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  const bool same = std::filesystem::equivalent(a, b, ec);
  return ec ? a == b : same;
}

std::string shape_text(const core::Gpt2Config& c) {
  return std::to_string(c.n_layer) + " layers × " + std::to_string(c.n_head) + " heads";
}

// "%.4g" of a difference: small ones keep their digits.
std::string small_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// ---------------------------------------------------------------------------
// 1. B's path

void poll_compare_browse(AppState& state) {
  CheckpointCompare& c = state.model.compare;
  if (!c.browse) return;
  const std::optional<NativeDialog::Result> result = c.browse->result();
  if (!result) return;
  c.browse.reset();
  if (result->status == NativeDialog::Result::Status::Failed) c.error = result->error;
  if (result->status != NativeDialog::Result::Status::Chosen) return;
  const std::filesystem::path chosen(result->path);
  state.open_compare_model(chosen.filename() == "config.json" ? chosen.parent_path().string()
                                                              : result->path);
}

void draw_b_path(AppState& state) {
  CheckpointCompare& c = state.model.compare;
  poll_compare_browse(state);
  const ImGuiStyle& style = ImGui::GetStyle();
  const DialogTool tool = state.files.dialog_tool();
  const bool browse = tool != DialogTool::Builtin && !c.browse;
  float buttons = ImGui::CalcTextSize("Open B").x + style.FramePadding.x * 2 + style.ItemSpacing.x;
  if (browse)
    buttons += ImGui::CalcTextSize("Browse...").x + style.FramePadding.x * 2 + style.ItemSpacing.x;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(c.model ? "Another B:" : "B:");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(
      std::max(ImGui::GetContentRegionAvail().x - buttons, ImGui::GetFontSize() * 8));
  const bool entered =
      ImGui::InputTextWithHint("##compare_path", "checkpoint B: folder, .safetensors or .pth",
                               &c.path, ImGuiInputTextFlags_EnterReturnsTrue);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "Another checkpoint with as many layers and heads as A: an earlier or "
        "later epoch of your training, or another GPT-2 of the same size");
  ImGui::SameLine();
  ImGui::BeginDisabled(c.path.empty());
  if ((ImGui::Button("Open B") || entered) && !c.path.empty()) state.open_compare_model(c.path);
  ImGui::EndDisabled();
  if (browse) {
    ImGui::SameLine();
    if (ImGui::Button("Browse...")) c.browse = open_checkpoint_dialog(state, tool, c.path);
  }
  ImGui::SetNextItemWidth(-1);
  ImGui::InputTextWithHint("##compare_config", "B's config file (optional, for a .pth)", &c.config);
  if (c.loader->loading()) {
    ImGui::Text("Loading %s (%.1f s)", file_name(c.loader->path()).c_str(), c.loader->seconds());
    ImGui::SameLine();
    if (ImGui::Button("Cancel##compare")) c.loader->cancel();
  }
  error_text(state, c.error);
}

// ---------------------------------------------------------------------------
// 2. The grid of every head

// Layers down, heads across, each cell coloured by its mean |B − A| (0 to
// the largest of all heads); the selected head outlined; a click selects.
void draw_head_grid(AppState& state, const ModelComparison& cmp, ImVec2 size) {
  const core::RunDifference& d = cmp.every_head;
  if (d.per_head.empty()) return;
  const float font = ImGui::GetFontSize();
  ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + size.x);  // the captions stay in the column
  text_wrapped(state, "Every head's mean |B − A| (click one):");
  const float label_w = ImGui::CalcTextSize("L00").x + 4;
  const float avail_w = size.x - label_w - 4, avail_h = size.y - font * 6.5f;
  const float cell = std::clamp(
      std::min(avail_w / static_cast<float>(d.heads), avail_h / static_cast<float>(d.layers + 1)),
      6.0f, font * 2.2f);
  double top = 0;
  for (const core::HeadDifference& h : d.per_head) top = std::max(top, h.mean_abs);
  const Colormap map = sequential_map(state.ui.palette);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 cells(origin.x + label_w, origin.y + font * 1.2f);
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const int head_step = cell < font * 1.3f ? std::max(1, d.heads / 4) : 1;
  for (int h = 0; h < d.heads; h += head_step)
    dl->AddText(ImVec2(cells.x + static_cast<float>(h) * cell + 1, origin.y), text,
                std::to_string(h).c_str());
  const int layer_step = cell < font ? std::max(1, d.layers / 6) : 1;
  for (const core::HeadDifference& h : d.per_head) {
    const ImVec2 a(cells.x + static_cast<float>(h.head) * cell,
                   cells.y + static_cast<float>(h.layer) * cell);
    const ImVec2 b(a.x + cell - 1, a.y + cell - 1);
    const float t = top > 0 ? static_cast<float>(h.mean_abs / top) : 0.0f;
    const Rgba8 c = sample(map, t);
    dl->AddRectFilled(a, b, IM_COL32(c.r, c.g, c.b, 255));
    if (h.head == 0 && h.layer % layer_step == 0)
      dl->AddText(ImVec2(origin.x, a.y + (cell - font) * 0.5f), text,
                  ("L" + std::to_string(h.layer)).c_str());
    if (h.layer == cmp.layer && h.head == cmp.head)
      dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(b.x + 1, b.y + 1), IM_COL32(255, 60, 60, 255),
                  0.0f, 0, 2.0f);
  }
  ImGui::SetCursorScreenPos(cells);
  const ImVec2 grid(cell * static_cast<float>(d.heads), cell * static_cast<float>(d.layers));
  ImGui::InvisibleButton("head_grid", ImVec2(std::max(grid.x, 1.0f), std::max(grid.y, 1.0f)));
  if (ImGui::IsItemHovered()) {
    const ImVec2 m = ImGui::GetIO().MousePos;
    const int hh = std::clamp(static_cast<int>((m.x - cells.x) / cell), 0, d.heads - 1);
    const int ll = std::clamp(static_cast<int>((m.y - cells.y) / cell), 0, d.layers - 1);
    const auto at = static_cast<std::size_t>(ll * d.heads + hh);
    if (at < d.per_head.size()) {
      const core::HeadDifference& h = d.per_head[at];
      const std::string tip = "layer " + std::to_string(h.layer) + ", head " +
                              std::to_string(h.head) + "\nmean |B − A| = " + small_num(h.mean_abs) +
                              "\nlargest |B − A| = " + small_num(h.max_abs) +
                              "\nclick to select it";
      ImGui::SetTooltip("%s", display(state, tip).c_str());
      if (ImGui::IsItemClicked()) {
        state.select_layer(h.layer);
        state.select_head(h.head);
      }
    }
  }
  const core::HeadDifference& most = d.most_changed();
  text_wrapped(state, "From 0 to " + small_num(top) + " on the weights' colour scale. Most " +
                          "changed: layer " + std::to_string(most.layer) + ", head " +
                          std::to_string(most.head) + ".");
  ImGui::PopTextWrapPos();
}

// ---------------------------------------------------------------------------
// 3. The window

// What is missing before B's numbers can be drawn, or "" when they can.
std::string waiting_for(const AppState& state, const CheckpointCompare& c) {
  const ModelState& m = state.model;
  if (!c.model)
    return "Open a second checkpoint B with as many layers and heads as A (an earlier or later "
           "epoch of your training, or another model of the same size) to see how each head's "
           "attention on this text differs.";
  const ModelComparison* r = c.result.get();
  if (!r || r->model_b != c.model || r->model_a != m.model || !state.showing_model() ||
      !m.overview || r->ids != m.overview->ids)
    return "Running B on the text...";
  return {};
}

// The window opened on a B the last job did not run (it was closed, or A
// changed): one more job runs B. Not while a job is under way or the text
// is refused (no job would run: this would ask again every frame).
void ask_for_b(AppState& state) {
  const CheckpointCompare& c = state.model.compare;
  const ModelComparison* r = c.result.get();
  const bool ran = r && r->model_b == c.model && r->model_a == state.model.model;
  if (c.model && !ran && !state.computing() && state.model.typed.error.empty()) state.mark_dirty();
}

}  // namespace

std::string describe_head_difference(const core::HeadDifference& d,
                                     const std::vector<std::string>& tokens) {
  auto token = [&](int k) {
    return k >= 0 && k < static_cast<int>(tokens.size())
               ? " \"" + token_label(tokens[static_cast<std::size_t>(k)]) + "\""
               : std::string();
  };
  return "Layer " + std::to_string(d.layer) + ", head " + std::to_string(d.head) +
         ": mean |B − A| = " + small_num(d.mean_abs) +
         ", largest |B − A| = " + small_num(d.max_abs) + " at query " +
         std::to_string(d.max_query) + token(d.max_query) + " → key " + std::to_string(d.max_key) +
         token(d.max_key);
}

void draw_compare_button(AppState& state) {
  if (!state.model.model) return;
  if (ImGui::Button("Compare with another checkpoint...")) state.model.compare.open = true;
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "The same head of this model (A) and of a second checkpoint (B) side by "
        "side, with B − A: e.g. epoch 1 against epoch 10 of your training");
}

void draw_checkpoint_compare(AppState& state) {
  CheckpointCompare& c = state.model.compare;
  if (!c.open) return;
  // Wider than a Learn window: three maps of up to 1024 tokens and the grid
  // side by side. Centred over the model view the first time it opens.
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowSize(
      ImVec2(std::min(1180.0f, vp->WorkSize.x * 0.9f), std::min(680.0f, vp->WorkSize.y * 0.82f)),
      ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(
      ImVec2(vp->WorkPos.x + vp->WorkSize.x * 0.5f, vp->WorkPos.y + vp->WorkSize.y * 0.55f),
      ImGuiCond_FirstUseEver, ImVec2(0.5f, 0.5f));
  if (!ImGui::Begin("Compare checkpoints", &c.open, ImGuiWindowFlags_NoSavedSettings)) {
    ImGui::End();
    return;
  }
  const ModelState& m = state.model;
  if (!m.model) {
    text_wrapped(state, "Open a model first: it is A, the checkpoint B is compared with.");
    ImGui::End();
    return;
  }
  const core::Gpt2Config& ca = m.model->config();
  text_wrapped(state, "A: " + file_name(m.model_path.empty() ? m.model->name() : m.model_path) +
                          " (" + shape_text(ca) + ")");
  if (c.model) {
    std::string lb = "B: " + file_name(c.model_path) + " (" + shape_text(c.model->config()) + ")";
    if (!m.model_path.empty() && same_file(m.model_path, c.model_path))
      lb += " — the same file as A: every difference is 0";
    text_wrapped(state, lb);
  }
  draw_b_path(state);
  if (c.model) {
    const std::string refusal = core::compare_refusal(
        ca, c.model->config(), file_name(m.model_path), file_name(c.model_path));
    if (!refusal.empty()) {
      error_text(state, "Cannot compare head by head: " + refusal + ". Open a B of A's shape.");
      ImGui::End();
      return;
    }
  }
  ask_for_b(state);
  if (const std::string wait = waiting_for(state, c); !wait.empty()) {
    text_wrapped(state, wait);
    ImGui::End();
    return;
  }
  const ModelComparison& r = *c.result;
  if (!r.error.empty()) {
    error_text(state, r.error);
    ImGui::End();
    return;
  }
  const auto at = static_cast<std::size_t>(r.layer * r.every_head.heads + r.head);
  if (at < r.every_head.per_head.size())
    text_wrapped(state, describe_head_difference(r.every_head.per_head[at], state.trace->tokens));
  const core::RowMatrix diff = *r.b - *r.a;
  const core::ShownDifference shown = core::shown_difference(diff, *r.a, *r.b);
  ImGui::TextDisabled(
      "%s", display(state, "B − A: " + core::difference_caption(shown) + "; both run the same " +
                               std::to_string(r.every_head.tokens) + " token ids.")
                .c_str());
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float grid_w = std::clamp(avail.x * 0.24f, ImGui::GetFontSize() * 12, avail.x * 0.4f);
  const float w = (avail.x - grid_w - 4 * ImGui::GetStyle().ItemSpacing.x) / 3.0f;
  const ImVec2 box(std::max(w, 40.0f), std::max(avail.y - 8, 60.0f));
  // Titles only name the model: the line above names the layer and head.
  teach_heatmap(state, "model/cmp/a", core::stage_id::weights, r.head, *r.a, "A: weights", box);
  ImGui::SameLine();
  teach_heatmap(state, "model/cmp/b", core::stage_id::weights, r.head, *r.b, "B: weights", box);
  ImGui::SameLine();
  teach_heatmap(state, "model/cmp/d", core::difference_id(core::stage_id::weights), r.head,
                shown.shown, "B − A", box);
  ImGui::SameLine();
  ImGui::BeginGroup();
  draw_head_grid(state, r, ImVec2(grid_w, box.y));
  ImGui::EndGroup();
  ImGui::End();
}

}  // namespace attnscope::gui
