// widgets.cpp: small widgets the panels and the Learn windows share.
#include "widgets/widgets.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "attnscope/base/stages.hpp"
#include "attnscope/text/tokenizer.hpp"
#include "figure/scale.hpp"
#include "imgui_internal.h"  // the window's wrap position
#include "platform/fonts.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {

std::string display(const AppState& state, const std::string& text) {
  return state.ui.unicode ? text : ascii_fallback(text);
}

void error_text(const AppState& state, const std::string& text) {
  if (text.empty()) return;
  ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
  text_wrapped(state, text);
  ImGui::PopStyleColor();
}

void text_wrapped(const AppState& state, const std::string& text) {
  // ImGui's own wrapping also breaks after '.' and ',', which splits numbers
  // ("0." / "2058"); here lines break at spaces only. The right edge is the
  // wrap position a caller pushed, else the window's edge.
  const std::string t = display(state, text);
  const ImGuiWindow* w = ImGui::GetCurrentWindow();
  const float right =
      w->DC.TextWrapPos > 0.0f ? w->Pos.x - w->Scroll.x + w->DC.TextWrapPos : w->WorkRect.Max.x;
  const float space = ImGui::CalcTextSize(" ").x;
  const float gap_y = ImGui::GetStyle().ItemSpacing.y;
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(0, 0));  // lines as tight as TextWrapped's
  bool first = true;
  int spaces = 1;  // runs of spaces (used to separate formulas) are kept
  std::size_t at = 0;
  while (at <= t.size()) {
    std::size_t end = t.find(' ', at);
    if (end == std::string::npos) end = t.size();
    if (end == at) {
      ++spaces;
    } else {
      const char* b = t.data() + at;
      const char* e = t.data() + end;
      if (!first) {
        ImGui::SameLine(0.0f, space * static_cast<float>(spaces));
        if (ImGui::GetCursorScreenPos().x + ImGui::CalcTextSize(b, e).x > right) ImGui::NewLine();
      }
      ImGui::TextUnformatted(b, e);
      first = false;
      spaces = 1;
    }
    at = end + 1;
  }
  if (first) ImGui::TextUnformatted("");
  ImGui::PopStyleVar();
  ImGui::SetCursorPosY(ImGui::GetCursorPosY() + gap_y);
}

// A token as a chip: its text with spaces shown as "·", a colour per
// position, the id and byte span on hover.
std::string token_label(std::string_view token) {
  std::string out;
  for (const char ch : token) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += ch;
    }
  }
  return drawable_text(out);
}

std::vector<std::string> percent_texts(const std::vector<double>& probabilities) {
  constexpr int kFewest = 2, kMost = 6;
  constexpr double kTiny = 1e-4;  // below 0.01 %: in powers of ten
  auto tiny = [&](double p) { return p > 0 && p < kTiny; };
  auto print = [&](int decimals) {
    std::vector<std::string> out;
    for (double p : probabilities) {
      char s[64];
      if (tiny(p))
        std::snprintf(s, sizeof s, "%.2g %%", 100.0 * p);  // "3.2e-07 %"
      else
        std::snprintf(s, sizeof s, "%.*f %%", decimals, 100.0 * p);
      out.emplace_back(s);
    }
    return out;
  };
  for (int d = kFewest;; ++d) {
    std::vector<std::string> out = print(d);
    bool apart = true;
    for (std::size_t i = 0; i < out.size() && apart; ++i)
      for (std::size_t j = i + 1; j < out.size() && apart; ++j)
        if (!tiny(probabilities[i]) && !tiny(probabilities[j]) &&
            probabilities[i] != probabilities[j] && out[i] == out[j])
          apart = false;
    if (apart || d == kMost) return out;
  }
}

bool draw_token_chip(const core::Token& t, std::size_t index, float max_x, bool selected) {
  std::string shown = drawable_text(core::printable_token(t.text));
  for (std::size_t at = 0; (at = shown.find(' ', at)) != std::string::npos;)
    shown.replace(at, 1, "\xc2\xb7");  // U+00B7 middle dot
  if (shown.empty()) shown = "\xc2\xb7";
  const float hue = static_cast<float>((index * 37) % 100) / 100.0f;
  ImVec4 fill;
  ImGui::ColorConvertHSVtoRGB(hue, 0.45f, 0.55f, fill.x, fill.y, fill.z);
  fill.w = 1.0f;
  const ImGuiStyle& style = ImGui::GetStyle();
  const float width = ImGui::CalcTextSize(shown.c_str()).x + 2 * style.FramePadding.x;
  if (index > 0) {
    ImGui::SameLine(0, 2);
    if (ImGui::GetCursorPosX() + width > max_x) ImGui::NewLine();
  }
  if (selected) ImGui::PushStyleVar(ImGuiStyleVar_FrameBorderSize, 2.0f);
  ImGui::PushStyleColor(ImGuiCol_Border, ImVec4(1.0f, 0.85f, 0.3f, 1.0f));
  ImGui::PushStyleColor(ImGuiCol_Button, fill);
  ImGui::PushStyleColor(ImGuiCol_ButtonHovered, fill);
  ImGui::PushStyleColor(ImGuiCol_ButtonActive, fill);
  ImGui::PushID(static_cast<int>(index));
  const bool clicked = ImGui::Button(shown.c_str());
  ImGui::PopID();
  ImGui::PopStyleColor(4);
  if (selected) ImGui::PopStyleVar();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("token %zu: id %d\nbytes %zu..%zu of the text", index, t.id, t.start, t.end);
  return clicked;
}

PinMarks pin_marks(const AppState& state, const core::Stage& stage) {
  PinMarks m;
  const CellRef& p = state.pinned;
  if (!p.valid()) return m;
  if (stage.id == p.stage && stage.head == p.head) {
    m.pin_row = p.row;
    m.pin_col = p.col;
    return m;
  }
  // Related matrices of the same head (or the shared ones) get the row or
  // column the pinned cell was computed from.
  const bool same_head = stage.head == p.head || stage.head == -1;
  if (!same_head) return m;
  if (core::is_token_by_token(p.stage)) {
    if (core::is_token_by_token(stage.id)) {
      m.mark_row = p.row;
    } else if (stage.id == core::stage_id::queries || stage.id == core::stage_id::inputs ||
               stage.id == core::stage_id::context) {
      m.mark_row = p.row;
    } else if (stage.id == core::stage_id::keys) {
      m.mark_row = p.col;
    }
  } else if (p.stage == core::stage_id::context) {
    if (core::is_token_by_token(stage.id)) m.mark_row = p.row;
    if (stage.id == core::stage_id::values ||
        (stage.id == core::stage_id::inputs && stage.head == -1))
      m.mark_col = p.col;
  } else if (stage.data().rows() == state.trace->num_tokens() &&
             stage.id != core::stage_id::W_out) {
    m.mark_row = p.row;
  }
  return m;
}

bool drag_finite_cell(const char* id, float& cell, float& start, float speed, float lo, float hi,
                      const std::function<std::string()>& name, const char* kind,
                      std::string& refused) {
  const float before = cell;
  float v = cell;
  // Shown as the heatmaps show numbers: "0.0000" for a value that rounds to
  // zero (never "-0.0000"), and 1e30 as "1e+30" rather than 31 digits
  // clipped to the cell's width.
  const char* format = std::fabs(v) >= figure::kCompactFrom                    ? "%.3g"
                       : core::fixed_text(v, 4) == "0.0000" && std::signbit(v) ? "0.0000"
                                                                               : "%.4f";
  const bool edited = ImGui::DragFloat(id, &v, speed, lo, hi, format);
  if (ImGui::IsItemActivated()) start = before;
  if (!edited) return false;
  if (std::isfinite(v)) {
    cell = v;
    return true;
  }
  const std::string kept = figure::format_value(start, 4);
  refused = name() + " cannot be " +
            (std::isnan(v) ? "NaN"
             : v > 0       ? "+inf"
                           : "-inf") +
            ": " + kind +
            " must be finite numbers (float32 ends at about ±3.4e38; larger numbers " +
            "become ±inf). It stays " + kept + ".";
  if (cell == start) return false;
  cell = start;
  return true;
}

}  // namespace attnscope::gui
