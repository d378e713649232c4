// text_editor.cpp: see text_editor.hpp. ImGui's InputTextMultiline is the
// model for the keyboard focus: the box takes the active id on a click, keeps
// it alive each frame, lets other items be hovered while the mouse is up,
// and sets WantTextInputNextFrame (io.WantTextInput on the next frame).
//
// Sections
//   1. measuring and layout
//   2. mouse
//   3. keys and typed characters
//   4. drawing
//   5. the widget
#include "widgets/text_editor.hpp"

#include <algorithm>
#include <cmath>

#include "imgui_internal.h"  // the active id and WantTextInputNextFrame, as InputText uses them
#include "platform/fonts.hpp"
#include "platform/imgui_compat.hpp"

namespace attnscope::gui {

// ---------------------------------------------------------------------------
// 1. Measuring and layout

float editor_char_advance(char32_t c) {
  return font_char_advance(static_cast<ImWchar>(drawable_codepoint(c)));
}

float text_editor_height(int lines) {
  return static_cast<float>(lines) * ImGui::GetFontSize() + 2 * ImGui::GetStyle().FramePadding.y;
}

namespace {

const Advance kAdvance = [](char32_t c) { return editor_char_advance(c); };

// The box's wrapped text, and where it starts on screen.
struct Layout {
  std::vector<VisualLine> lines;
  ImVec2 origin;         // the first line's top-left, scrolled
  float line_h = 0;      // one visual line's height
  float wrap = 0;        // the width lines wrap at
  bool scrolls = false;  // taller than the box: a vertical scrollbar
};

// The lines at the box's inner width, and again narrower by a scrollbar when
// they are taller than the box (decided here, before the child window, so
// the width never flips between frames).
Layout lay_out(const std::string& text, ImVec2 size) {
  const ImGuiStyle& style = ImGui::GetStyle();
  Layout l;
  l.line_h = ImGui::GetFontSize();
  l.wrap = std::max(size.x - 2 * style.FramePadding.x, 1.0f);
  l.lines = wrap_lines(text, l.wrap, kAdvance);
  if (static_cast<float>(l.lines.size()) * l.line_h + 2 * style.FramePadding.y > size.y) {
    l.scrolls = true;
    l.wrap = std::max(l.wrap - style.ScrollbarSize, 1.0f);
    l.lines = wrap_lines(text, l.wrap, kAdvance);
  }
  return l;
}

// ---------------------------------------------------------------------------
// 2. Mouse

// The caret place under the pointer: its offset and whether it is a soft
// line's end.
std::size_t offset_under(const std::string& text, const Layout& l, ImVec2 mouse, bool* at_end) {
  const float row = std::floor((mouse.y - l.origin.y) / l.line_h);
  const std::size_t line =
      static_cast<std::size_t>(std::clamp(row, 0.0f, static_cast<float>(l.lines.size() - 1)));
  return offset_at_x(text, l.lines[line], mouse.x - l.origin.x, kAdvance, at_end);
}

void handle_mouse(const std::string& text, const Layout& l, TextEditState& edit, bool clicked) {
  const ImGuiIO& io = ImGui::GetIO();
  bool at_end = false;
  if (clicked) {
    const std::size_t at = offset_under(text, l, io.MousePos, &at_end);
    if (io.MouseClickedCount[0] >= 2 && !io.KeyShift) {
      const auto [begin, end] = word_at(text, at);
      move_caret(edit, end, false);
      edit.anchor = begin;
    } else {
      move_caret(edit, at, io.KeyShift, at_end);
    }
    edit.dragging = true;
    return;
  }
  if (!io.MouseDown[0]) {
    edit.dragging = false;
    return;
  }
  if (!edit.dragging || (io.MouseDelta.x == 0 && io.MouseDelta.y == 0)) return;
  const std::size_t at = offset_under(text, l, io.MousePos, &at_end);
  if (at != edit.caret) move_caret(edit, at, true, at_end);
}

// ---------------------------------------------------------------------------
// 3. Keys and typed characters

bool handle_shortcuts(std::string& text, TextEditState& edit) {
  const ImGuiIO& io = ImGui::GetIO();
  if (!io.KeyCtrl || io.KeyAlt) return false;
  if (key_pressed(ImGuiKey_A)) select_all(text, edit);
  if (key_pressed(ImGuiKey_C) && edit.has_selection())
    ImGui::SetClipboardText(selected_text(text, edit).c_str());
  if (key_pressed(ImGuiKey_X) && edit.has_selection()) {
    ImGui::SetClipboardText(selected_text(text, edit).c_str());
    return erase_back(text, edit, false);
  }
  if (key_pressed(ImGuiKey_V)) {
    const char* clip = ImGui::GetClipboardText();
    if (clip) return insert_text(text, edit, clip);
  }
  if (key_pressed(ImGuiKey_Z)) return io.KeyShift ? redo(text, edit) : undo(text, edit);
  if (key_pressed(ImGuiKey_Y)) return redo(text, edit);
  return false;
}

bool handle_keys(std::string& text, const Layout& l, float visible_h, TextEditState& edit) {
  const ImGuiIO& io = ImGui::GetIO();
  const bool ctrl = io.KeyCtrl, shift = io.KeyShift;
  const int page = std::max(1, static_cast<int>(visible_h / l.line_h) - 1);
  bool changed = handle_shortcuts(text, edit);
  if (key_pressed(ImGuiKey_LeftArrow)) move_left(text, edit, ctrl, shift);
  if (key_pressed(ImGuiKey_RightArrow)) move_right(text, edit, ctrl, shift);
  if (key_pressed(ImGuiKey_UpArrow)) move_lines(text, l.lines, edit, -1, shift, kAdvance);
  if (key_pressed(ImGuiKey_DownArrow)) move_lines(text, l.lines, edit, 1, shift, kAdvance);
  if (key_pressed(ImGuiKey_PageUp)) move_lines(text, l.lines, edit, -page, shift, kAdvance);
  if (key_pressed(ImGuiKey_PageDown)) move_lines(text, l.lines, edit, page, shift, kAdvance);
  if (key_pressed(ImGuiKey_Home)) {
    if (ctrl)
      move_caret(edit, 0, shift);
    else
      move_home(text, l.lines, edit, shift);
  }
  if (key_pressed(ImGuiKey_End)) {
    if (ctrl)
      move_caret(edit, text.size(), shift);
    else
      move_end(text, l.lines, edit, shift);
  }
  if (key_pressed(ImGuiKey_Backspace)) changed |= erase_back(text, edit, ctrl);
  if (key_pressed(ImGuiKey_Delete)) changed |= erase_forward(text, edit, ctrl);
  if (key_pressed(ImGuiKey_Enter) || key_pressed(kKeypadEnter))
    changed |= insert_text(text, edit, "\n", TextEditState::Group::Typing);
  // Characters typed (not while Ctrl makes a shortcut of the key).
  if (!(ctrl && !io.KeyAlt)) {
    std::string typed;
    for (int i = 0; i < io.InputQueueCharacters.Size; ++i)
      append_utf8(typed, static_cast<char32_t>(io.InputQueueCharacters[i]));
    if (!typed.empty()) changed |= insert_text(text, edit, typed, TextEditState::Group::Typing);
  }
  return changed;
}

// ---------------------------------------------------------------------------
// 4. Drawing

// Draws the visible lines, the selection behind them and the caret.
void draw_text(const std::string& text, const Layout& l, const TextEditState* edit) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 clip_min = draw->GetClipRectMin(), clip_max = draw->GetClipRectMax();
  const ImU32 text_col = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 select_col = ImGui::GetColorU32(ImGuiCol_TextSelectedBg);
  const float newline_w = editor_char_advance(' ') * 0.5f;
  const std::size_t sel_b = edit ? edit->selection_begin() : 0;
  const std::size_t sel_e = edit ? edit->selection_end() : 0;
  for (std::size_t k = 0; k < l.lines.size(); ++k) {
    const float top = l.origin.y + static_cast<float>(k) * l.line_h;
    if (top + l.line_h < clip_min.y || top > clip_max.y) continue;
    const VisualLine& line = l.lines[k];
    if (sel_b < sel_e && sel_b <= line.end && sel_e > line.begin) {
      const float x0 = x_in_line(text, line, std::max(sel_b, line.begin), kAdvance);
      float x1 = x_in_line(text, line, std::min(sel_e, line.end), kAdvance);
      if (sel_e > line.end && line.hard && line.end < text.size()) x1 += newline_w;  // the '\n'
      if (x1 > x0)
        draw->AddRectFilled(ImVec2(l.origin.x + x0, top), ImVec2(l.origin.x + x1, top + l.line_h),
                            select_col);
    }
    const std::string shown =
        drawable_text(std::string_view(text).substr(line.begin, line.end - line.begin));
    draw->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(l.origin.x, top), text_col,
                  shown.data(), shown.data() + shown.size());
  }
  // The caret blinks as InputText's does: on 0.8 s, off 0.4 s, on while moving.
  if (edit && (edit->blink <= 0.0f || std::fmod(edit->blink, 1.2f) <= 0.8f)) {
    const CaretPlace c = caret_place(text, l.lines, *edit, kAdvance);
    const float x = std::floor(l.origin.x + c.x) + 0.5f;
    const float top = l.origin.y + static_cast<float>(c.line) * l.line_h;
    draw->AddLine(ImVec2(x, top), ImVec2(x, top + l.line_h - 1.0f), text_col);
  }
}

// Scrolls the box so that the caret's line is inside it.
void scroll_to_caret(const std::string& text, const Layout& l, float visible_h,
                     TextEditState& edit) {
  const ImGuiStyle& style = ImGui::GetStyle();
  const CaretPlace c = caret_place(text, l.lines, edit, kAdvance);
  const float top = style.FramePadding.y + static_cast<float>(c.line) * l.line_h;
  const float scroll = ImGui::GetScrollY();
  if (top - style.FramePadding.y < scroll)
    ImGui::SetScrollY(top - style.FramePadding.y);
  else if (top + l.line_h + style.FramePadding.y > scroll + visible_h)
    ImGui::SetScrollY(top + l.line_h + style.FramePadding.y - visible_h);
  edit.scroll_to_caret = false;
}

}  // namespace

// ---------------------------------------------------------------------------
// 5. The widget

bool text_editor(const char* label, std::string& text, ImVec2 size_arg, TextEditState& edit) {
  ImGuiContext& g = *ImGui::GetCurrentContext();
  ImGuiWindow* parent = ImGui::GetCurrentWindow();
  if (parent->SkipItems) return false;
  const ImGuiStyle& style = ImGui::GetStyle();
  const ImGuiID id = parent->GetID(label);
  const ImVec2 size = ImGui::CalcItemSize(size_arg, ImGui::CalcItemWidth(),
                                          ImGui::GetFontSize() * 8 + 2 * style.FramePadding.y);
  if (edit.id == id) sync_with_text(edit, text);
  Layout l = lay_out(text, size);

  ImGui::PushStyleColor(ImGuiCol_ChildBg, style.Colors[ImGuiCol_FrameBg]);
  ImGui::PushStyleVar(ImGuiStyleVar_ChildRounding, style.FrameRounding);
  ImGui::PushStyleVar(ImGuiStyleVar_ChildBorderSize, style.FrameBorderSize);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0, 0));
  const ImGuiWindowFlags flags =
      ImGuiWindowFlags_NoMove |
      (l.scrolls ? ImGuiWindowFlags_AlwaysVerticalScrollbar : ImGuiWindowFlags_NoScrollbar);
  const bool visible = ImGui::BeginChild(label, size, true, flags);  // the same id
  ImGui::PopStyleVar(3);
  ImGui::PopStyleColor();
  ImGuiWindow* box = ImGui::GetCurrentWindow();
  const ImVec2 inner_min = box->InnerRect.Min, inner_max = box->InnerRect.Max;
  const float visible_h = inner_max.y - inner_min.y;

  const bool hovered =
      visible && ImGui::IsWindowHovered() && ImGui::IsMouseHoveringRect(inner_min, inner_max);
  if (hovered) ImGui::SetMouseCursor(ImGuiMouseCursor_TextInput);
  const bool clicked = hovered && ImGui::IsMouseClicked(0);
  const ImGuiID scrollbar = ImGui::GetWindowScrollbarID(box, ImGuiAxis_Y);
  // Dragging the box's scrollbar takes the active id; the keyboard comes back after.
  const bool after_scrollbar =
      edit.id == id && edit.focused && g.ActiveId == 0 && g.ActiveIdPreviousFrame == scrollbar;
  if ((clicked || after_scrollbar) && g.ActiveId != id) {
    begin_editing(edit, id, text);
    ImGui::SetActiveID(id, box);
    ImGui::FocusWindow(box);
  }
  bool focused = g.ActiveId == id;
  if (focused && ((ImGui::IsMouseClicked(0) && !clicked) || key_pressed(ImGuiKey_Escape))) {
    ImGui::ClearActiveID();  // a click elsewhere, or Escape
    focused = false;
  }

  l.origin =
      ImVec2(box->Pos.x + style.FramePadding.x, box->Pos.y + style.FramePadding.y - box->Scroll.y);
  bool changed = false;
  if (focused) {
    ImGui::KeepAliveID(id);
    g.ActiveIdAllowOverlap = !g.IO.MouseDown[0];  // other items stay hoverable
    g.WantTextInputNextFrame = 1;
    edit.blink += g.IO.DeltaTime;
    handle_mouse(text, l, edit, clicked);
    changed = handle_keys(text, l, visible_h, edit);
    if (changed) l.lines = wrap_lines(text, l.wrap, kAdvance);
    if (edit.scroll_to_caret) scroll_to_caret(text, l, visible_h, edit);
  }
  // Scrolling with the box's own scrollbar keeps the caret and selection shown.
  const bool shows_caret = focused || (edit.id == id && g.ActiveId == scrollbar);
  edit.focused = edit.id == id ? shows_caret : edit.focused;
  if (!focused && edit.id == id && g.ActiveId != scrollbar) edit.dragging = false;
  // Room for the lines (the child's scroll range).
  ImGui::Dummy(
      ImVec2(1.0f, static_cast<float>(l.lines.size()) * l.line_h + 2 * style.FramePadding.y));
  if (visible) {
    // Lines show inside the padding: none peeks in above or below it.
    ImGui::PushClipRect(ImVec2(inner_min.x, inner_min.y + style.FramePadding.y),
                        ImVec2(inner_max.x, inner_max.y - style.FramePadding.y), true);
    draw_text(text, l, shows_caret ? &edit : nullptr);
    ImGui::PopClipRect();
  }
  ImGui::EndChild();
  return changed;
}

}  // namespace attnscope::gui
