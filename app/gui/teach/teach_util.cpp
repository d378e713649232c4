// teach_util.cpp: helpers the Learn windows share (see teach.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "attnscope/io/io.hpp"
#include "imgui_internal.h"  // RenderCheckMark
#include "teach/teach.hpp"
#include "widgets/heatmap_view.hpp"

namespace attnscope::gui {

std::string num(float v, int decimals) { return core::fixed_text(v, decimals); }

namespace {

// A dropout setting as the controls show it ("0.5"), with more digits only
// when it has them.
std::string dropout_setting(double p) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f", p);
  if (std::abs(std::strtod(s, nullptr) - p) > 1e-12) std::snprintf(s, sizeof s, "%g", p);
  return s;
}

std::string book_dropout_note(double book_dropout, double run_dropout) {
  return "printed at dropout " + dropout_setting(book_dropout) + "; you have " +
         dropout_setting(run_dropout);
}

std::string dropout_tooltip(double book_dropout, double run_dropout) {
  return "The book printed this with its class at dropout " + dropout_setting(book_dropout) +
         ". This run drops each weight with probability " + dropout_setting(run_dropout) +
         " (training mode), so its numbers differ from the book's whatever else is the same. "
         "Set dropout to " +
         dropout_setting(book_dropout) + " or switch to eval to compare.";
}

}  // namespace

void book_badge(const core::BookMatrix& book, const core::BookCheck& check) {
  const std::string name = std::string(book.name) + " §" + std::string(book.section);
  // Another dropout makes any difference meaningless: name the two settings.
  const std::string tail = check.dropout_differs
                               ? ": " + book_dropout_note(check.book_dropout, check.run_dropout)
                           : !check.comparable ? "  shape differs"
                           : check.matches     ? ""
                                               : "  off by " + num(check.max_diff, 4);
  const float h = ImGui::GetTextLineHeight();
  const float mark = check.matches ? h : 0.0f;
  const ImVec2 pad(5, 1);
  const std::string label = "book " + name + tail;
  const ImVec2 text = ImGui::CalcTextSize(label.c_str());
  const ImVec2 size(text.x + mark + pad.x * 3, h + pad.y * 2);
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 bg = check.matches ? IM_COL32(40, 120, 60, 255) : IM_COL32(150, 100, 20, 255);
  dl->AddRectFilled(p, ImVec2(p.x + size.x, p.y + size.y), bg, 4.0f);
  if (check.matches)
    ImGui::RenderCheckMark(dl, ImVec2(p.x + pad.x, p.y + pad.y + h * 0.1f), IM_COL32_WHITE,
                           h * 0.8f);
  dl->AddText(ImVec2(p.x + pad.x * 2 + mark, p.y + pad.y), IM_COL32_WHITE, label.c_str());
  ImGui::Dummy(size);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("%s", check.dropout_differs
                                ? dropout_tooltip(check.book_dropout, check.run_dropout).c_str()
                            : check.matches ? "Every cell equals the book's printed value to 4 "
                                              "decimals."
                                            : "The largest difference from the book's printed "
                                              "value: something differs from the book's run (an "
                                              "edit?).");
}

namespace {

struct TitleBadge {
  core::StageBookCheck check;
  std::string label;
  ImVec2 size{0, 0};
};

TitleBadge title_badge(const AppState& state, const core::Stage& s) {
  TitleBadge b;
  if (!state.trace || s.head >= 0) return b;
  b.check = core::check_book_stage(*state.trace, s.id);
  if (b.check.count == 0) return b;
  b.label = b.check.matches ? "book"
            : b.check.dropout_differs
                ? "book " + book_dropout_note(b.check.book_dropout, b.check.run_dropout)
            : std::isfinite(b.check.max_diff)
                ? (state.ui.unicode ? "book Δ " : "book diff ") + num(b.check.max_diff, 4)
                : std::string("book: differs");
  const float h = ImGui::GetTextLineHeight();
  const float mark = b.check.matches ? h * 0.9f : 0.0f;
  const ImVec2 t = ImGui::CalcTextSize(b.label.c_str());
  b.size = ImVec2(t.x + mark + 12.0f, h);
  return b;
}

}  // namespace

float stage_book_badge_width(const AppState& state, const core::Stage& s) {
  const TitleBadge b = title_badge(state, s);
  return b.check.count > 0 ? b.size.x + 8.0f : 0.0f;
}

void stage_book_badge(const AppState& state, const core::Stage& s, ImVec2 at) {
  const TitleBadge b = title_badge(state, s);
  if (b.check.count == 0 || at.x <= 0) return;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float h = ImGui::GetTextLineHeight();
  const ImVec2 end(at.x + b.size.x, at.y + b.size.y);
  const ImU32 bg = b.check.matches ? IM_COL32(40, 120, 60, 255) : IM_COL32(150, 100, 20, 255);
  dl->AddRectFilled(at, end, bg, 4.0f);
  float x = at.x + 5.0f;
  if (b.check.matches) {
    ImGui::RenderCheckMark(dl, ImVec2(x, at.y + h * 0.15f), IM_COL32_WHITE, h * 0.7f);
    x += h * 0.9f;
  }
  dl->AddText(ImVec2(x, at.y), IM_COL32_WHITE, b.label.c_str());
  if (ImGui::IsMouseHoveringRect(at, end) && ImGui::IsWindowHovered())
    ImGui::SetTooltip(
        "%s", (std::string(b.check.matches ? "Equals the book's printed values to 4 "
                                             "decimals: "
                           : b.check.dropout_differs
                               ? dropout_tooltip(b.check.book_dropout, b.check.run_dropout) + "\n"
                               : "Largest difference from the book's "
                                 "printed values: ") +
               b.check.names)
                  .c_str());
}

std::string grouped(long long n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

void teach_heatmap(AppState& state, const std::string& slot, std::string id, int head,
                   const core::RowMatrix& m, const std::string& title, ImVec2 size) {
  const core::Stage stage{std::move(id), head, m};
  HeatmapSpec spec;
  spec.slot = slot;
  spec.stage = &stage;
  spec.title = title;
  spec.follows_trace = false;  // computed from the trace, or a pinned run's: never its stage
  draw_heatmap(state, spec, size);
}

namespace {

ImVec4 learn_area() {
  // The centre column of ui.cpp's layout (same fractions), below the stage
  // strip and explanation.
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const float font = ImGui::GetFontSize();
  const float W = vp->WorkSize.x, H = vp->WorkSize.y;
  const float left_w = std::min(std::clamp(W * 0.25f, font * 16.0f, font * 30.0f), W * 0.26f);
  const float right_w = std::min(std::clamp(W * 0.23f, font * 15.0f, font * 28.0f), W * 0.24f);
  const float x0 = vp->WorkPos.x + left_w + font;
  const float x1 = vp->WorkPos.x + W - right_w - font * 1.2f;
  const float y0 = vp->WorkPos.y + std::min(H * 0.28f, font * 16.0f);
  const float y1 = vp->WorkPos.y + H - font * 0.6f;
  return ImVec4(x0, y0, std::max(x1, x0 + font * 20.0f), std::max(y1, y0 + font * 12.0f));
}

}  // namespace

bool begin_learn_window(TeachState& teach, const char* title, bool* open, ImVec2 size) {
  // First time a window appears: inside the centre area, cascaded a little
  // per window so that several open ones stay distinguishable; afterwards it
  // stays where the learner puts it.
  int& placed = teach.learn_windows_placed;
  const bool fresh = ImGui::FindWindowByName(title) == nullptr;
  const ImVec4 a = learn_area();
  const float font = ImGui::GetFontSize();
  const float step = fresh ? static_cast<float>(placed % 5) * font * 1.4f : 0.0f;
  if (fresh) ++placed;
  const ImVec2 fit(std::min(size.x, a.z - a.x - step), std::min(size.y, a.w - a.y - step));
  ImGui::SetNextWindowSize(fit, ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(a.x + step, a.y + step), ImGuiCond_FirstUseEver);
  return ImGui::Begin(title, open, ImGuiWindowFlags_NoSavedSettings);
}

}  // namespace attnscope::gui
