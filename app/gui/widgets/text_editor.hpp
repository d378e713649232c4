// text_editor.hpp: a multi-line text box whose lines wrap at spaces to its
// width (ImGui 1.86's InputTextMultiline cannot wrap). The editing itself is
// platform/text_edit.hpp's; this file takes ImGui's mouse and keys and draws.
#pragma once

#include <string>

#include "imgui.h"
#include "platform/text_edit.hpp"

namespace attnscope::gui {

// A text box `size` big (ImGui item sizes: x <= 0 is the available width
// minus -x) editing the UTF-8 `text`; true when the text changed this frame.
// `edit` is the caret, selection and undo of whichever box has the keyboard
// (UiState::text_edit for the app's boxes). Like ImGui's InputText it holds
// the active id while it has the keyboard and then sets io.WantTextInput for
// the next frame; Escape or a click elsewhere lets go. IsItemHovered() after
// it asks about the box.
//
// Mouse: click places the caret, drag and Shift+click select, double-click
// selects a word. Keys: arrows (Ctrl: by word), Up/Down by visual line
// keeping x, Home/End of the visual line (Ctrl: of the text), PageUp/Down,
// Backspace/Delete (Ctrl: a word), Enter a newline, Ctrl+A/C/X/V,
// Ctrl+Z, Ctrl+Y and Ctrl+Shift+Z.
bool text_editor(const char* label, std::string& text, ImVec2 size, TextEditState& edit);

// The height of a text_editor that shows `lines` whole lines (and its padding).
float text_editor_height(int lines);

// How wide the current font draws the character `c` (the glyph ImGui shows
// for it in this build).
float editor_char_advance(char32_t c);

}  // namespace attnscope::gui
