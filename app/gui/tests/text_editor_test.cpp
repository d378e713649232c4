// text_editor_test.cpp: the wrapping text box. First its editing
// (platform/text_edit.hpp) with made-up character widths, where every wrap
// and caret place can be worked out by hand; then the ImGui widget
// (widgets/text_editor.hpp) driven through ImGuiIO with ImGui's null
// backend: keyboard focus, io.WantTextInput, mouse, clipboard, drawing.
//
// Sections
//   1. UTF-8 and sanitizing
//   2. wrapping
//   3. moves and edits
//   4. a sweep of every caret and selection
//   5. the widget
#include "widgets/text_editor.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "imgui.h"
#include "imgui_internal.h"  // the box's child window
#include "platform/text_edit.hpp"

namespace attnscope::gui {
namespace {

// Every character one unit wide; CJK (U+3000 and up) two.
float unit_advance(char32_t c) { return c >= 0x3000 ? 2.0f : 1.0f; }
const Advance kUnit = unit_advance;

// The lines as "begin-end" ("h" after a hard end), for readable failures.
std::string spans(const std::vector<VisualLine>& lines) {
  std::string out;
  for (const VisualLine& l : lines)
    out += std::to_string(l.begin) + "-" + std::to_string(l.end) + (l.hard ? "h " : " ");
  return out;
}

// ---------------------------------------------------------------------------
// 1. UTF-8 and sanitizing

TEST(TextEdit, BoundariesStepOverWholeCodePoints) {
  const std::string text =
      "a\xc3\xa9\xf0\x9f\x98\x80"
      "b";  // a é 😀 b
  std::vector<std::size_t> forward{0}, backward{text.size()};
  for (std::size_t i = 0; i < text.size();) forward.push_back(i = next_boundary(text, i));
  for (std::size_t i = text.size(); i > 0;)
    backward.insert(backward.begin(), i = prev_boundary(text, i));
  EXPECT_EQ(forward, (std::vector<std::size_t>{0, 1, 3, 7, 8}));
  EXPECT_EQ(backward, forward);
  EXPECT_EQ(snap_to_boundary(text, 2), 1u);  // inside é
  EXPECT_EQ(snap_to_boundary(text, 5), 3u);  // inside 😀
  EXPECT_EQ(snap_to_boundary(text, 99), text.size());
}

TEST(TextEdit, MalformedBytesAreOneCharacterEach) {
  const std::string text =
      "a\xff\xe2\x82"
      "b\x80";  // a, 0xFF, a cut €, b, a stray continuation
  std::vector<std::size_t> forward{0};
  for (std::size_t i = 0; i < text.size();) forward.push_back(i = next_boundary(text, i));
  EXPECT_EQ(forward, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6}));
  for (std::size_t i = 1; i <= text.size(); ++i) EXPECT_EQ(prev_boundary(text, i), i - 1);
  EXPECT_EQ(sanitized_input(text),
            "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
            "b\xef\xbf\xbd");
}

TEST(TextEdit, InputKeepsNewlinesAndTabsAndDropsOtherControls) {
  EXPECT_EQ(sanitized_input("one\r\ntwo\rthree\n\tfour\x01\x7f"), "one\ntwo\nthree\n\tfour");
  EXPECT_EQ(sanitized_input("\xee\x80\x80x"), "x");  // private use (the app's own glyphs)
}

// ---------------------------------------------------------------------------
// 2. Wrapping

TEST(TextEdit, WrapsAfterTheLastSpaceThatFits) {
  // "the cat " | "sat on " | "the mat": the spaces stay at the ends.
  EXPECT_EQ(spans(wrap_lines("the cat sat on the mat", 8, kUnit)), "0-8 8-15 15-22h ");
  // Wide enough for all: one line.
  EXPECT_EQ(spans(wrap_lines("the cat sat on the mat", 22, kUnit)), "0-22h ");
}

TEST(TextEdit, BreaksAWordLongerThanTheLineBetweenCharacters) {
  EXPECT_EQ(spans(wrap_lines("abcdefghij", 4, kUnit)), "0-4 4-8 8-10h ");
  EXPECT_EQ(spans(wrap_lines("ab abcdefghij", 4, kUnit)), "0-3 3-7 7-11 11-13h ");
  // Never an empty line: one character wider than the line still takes one.
  EXPECT_EQ(spans(wrap_lines("\xe6\x97\xa5\xe6\x9c\xac", 1, kUnit)), "0-3 3-6h ");
}

TEST(TextEdit, WrapsWideCharactersWithoutSplittingThem) {
  // 日本語テキスト at 2 units each in 5 units: two per line, 3 bytes each.
  EXPECT_EQ(spans(wrap_lines("日本語テキスト", 5, kUnit)), "0-6 6-12 12-18 18-21h ");
}

TEST(TextEdit, SpacesHangAndNewlinesEndLines) {
  EXPECT_EQ(spans(wrap_lines("aaaa     bbbb", 4, kUnit)), "0-9 9-13h ");
  EXPECT_EQ(spans(wrap_lines("ab\n\ncd\n", 10, kUnit)), "0-2h 3-3h 4-6h 7-7h ");
  EXPECT_EQ(spans(wrap_lines("", 10, kUnit)), "0-0h ");
}

// ---------------------------------------------------------------------------
// 3. Moves and edits

// An editor on `text` with its caret at `caret`.
TextEditState at(const std::string& text, std::size_t caret) {
  TextEditState s;
  begin_editing(s, 1, text);
  move_caret(s, caret, false);
  return s;
}

TEST(TextEdit, UpAndDownKeepTheColumnAcrossWrappedLines) {
  const std::string text = "the cat sat on the mat";  // 0-8 | 8-15 | 15-22
  const std::vector<VisualLine> lines = wrap_lines(text, 8, kUnit);
  TextEditState s = at(text, 7);  // "the cat|"
  move_lines(text, lines, s, 1, false, kUnit);
  EXPECT_EQ(s.caret, 14u);  // "sat on|": the line's last place, before its hanging space
  move_lines(text, lines, s, 1, false, kUnit);
  EXPECT_EQ(s.caret, 22u);  // "the mat|": x 7 again
  move_lines(text, lines, s, -1, false, kUnit);
  EXPECT_EQ(s.caret, 14u);
  move_lines(text, lines, s, -1, false, kUnit);
  EXPECT_EQ(s.caret, 7u);  // back in the column it started from
  move_lines(text, lines, s, -1, false, kUnit);
  EXPECT_EQ(s.caret, 0u);  // above the first line: the start
}

TEST(TextEdit, HomeAndEndStayOnTheVisualLine) {
  const std::string text = "abcdefghij";  // 0-4 | 4-8 | 8-10, broken mid-word
  const std::vector<VisualLine> lines = wrap_lines(text, 4, kUnit);
  TextEditState s = at(text, 5);
  move_end(text, lines, s, false);
  EXPECT_EQ(s.caret, 8u);
  EXPECT_TRUE(s.at_line_end);  // drawn at the end of line 1, not the start of line 2
  EXPECT_EQ(line_of(lines, s.caret, s.at_line_end), 1u);
  EXPECT_EQ(caret_place(text, lines, s, kUnit).x, 4.0f);
  move_home(text, lines, s, false);
  EXPECT_EQ(s.caret, 4u);
  // A soft wrap after a space: End stops before the space.
  const std::string words = "the cat sat";
  const std::vector<VisualLine> word_lines = wrap_lines(words, 8, kUnit);  // 0-8 | 8-11
  TextEditState w = at(words, 1);
  move_end(words, word_lines, w, false);
  EXPECT_EQ(w.caret, 7u);
  EXPECT_FALSE(w.at_line_end);
}

TEST(TextEdit, ShiftSelectsAndBackspaceDeletesTheSelection) {
  std::string text = "hello world";
  TextEditState s = at(text, 0);
  for (int k = 0; k < 5; ++k) move_right(text, s, false, true);
  EXPECT_EQ(selected_text(text, s), "hello");
  EXPECT_TRUE(erase_back(text, s, false));
  EXPECT_EQ(text, " world");
  EXPECT_EQ(s.caret, 0u);
  EXPECT_FALSE(s.has_selection());
  move_right(text, s, true, true);  // Ctrl+Shift+Right: to the next word's start
  EXPECT_EQ(selected_text(text, s), " ");
  move_right(text, s, true, true);
  EXPECT_EQ(selected_text(text, s), " world");
  EXPECT_TRUE(erase_forward(text, s, false));
  EXPECT_EQ(text, "");
}

TEST(TextEdit, WordMovesAndWordDeletes) {
  std::string text = "the cat, sat";
  EXPECT_EQ(word_right(text, 0), 4u);
  EXPECT_EQ(word_right(text, 4), 7u);  // "cat" ends at the comma
  EXPECT_EQ(word_left(text, 12), 9u);
  EXPECT_EQ(word_left(text, 9), 7u);
  EXPECT_EQ(word_at(text, 5), (std::pair<std::size_t, std::size_t>{4, 7}));
  TextEditState s = at(text, 12);
  EXPECT_TRUE(erase_back(text, s, true));  // Ctrl+Backspace
  EXPECT_EQ(text, "the cat, ");
  std::string cjk = "日本 語";
  EXPECT_EQ(word_at(cjk, 3), (std::pair<std::size_t, std::size_t>{0, 6}));
}

TEST(TextEdit, UndoAndRedoStepByWordAndByEdit) {
  std::string text;
  TextEditState s = at(text, 0);
  for (const char* c : {"a", "b", "c", " ", "d", "e", "f"})
    insert_text(text, s, c, TextEditState::Group::Typing);
  EXPECT_EQ(text, "abc def");
  move_left(text, s, false, false);
  erase_back(text, s, false);  // "abc df"
  EXPECT_EQ(text, "abc df");
  EXPECT_TRUE(undo(text, s));
  EXPECT_EQ(text, "abc def");
  EXPECT_EQ(s.caret, 6u);
  EXPECT_TRUE(undo(text, s));
  EXPECT_EQ(text, "abc");
  EXPECT_TRUE(undo(text, s));
  EXPECT_EQ(text, "");
  EXPECT_FALSE(undo(text, s));
  EXPECT_TRUE(redo(text, s));
  EXPECT_EQ(text, "abc");
  EXPECT_TRUE(redo(text, s));
  EXPECT_TRUE(redo(text, s));
  EXPECT_EQ(text, "abc df");
  EXPECT_FALSE(redo(text, s));
  EXPECT_TRUE(undo(text, s));
  insert_text(text, s, "X");  // a new edit drops what could be redone
  EXPECT_FALSE(redo(text, s));
}

TEST(TextEdit, PasteOfSeveralLinesReplacesTheSelection) {
  std::string text = "one two three";
  TextEditState s = at(text, 4);
  move_right(text, s, true, true);
  EXPECT_TRUE(insert_text(text, s, "first line\r\nsecond line\r\n"));
  EXPECT_EQ(text, "one first line\nsecond line\nthree");
  EXPECT_EQ(s.caret, 27u);
  const std::vector<VisualLine> lines = wrap_lines(text, 100, kUnit);
  EXPECT_EQ(spans(lines), "0-14h 15-26h 27-32h ");
  EXPECT_EQ(line_of(lines, s.caret, false), 2u);
}

TEST(TextEdit, AnOutsideChangeResetsUndoAndClampsTheCaret) {
  std::string text = "abcdef";
  TextEditState s = at(text, 6);
  insert_text(text, s, "g");
  text = "\xe6\x97\xa5";  // a session replaced the text: 日
  sync_with_text(s, text);
  EXPECT_EQ(s.caret, 3u);
  EXPECT_FALSE(undo(text, s));
  s.caret = 2;  // inside the character
  sync_with_text(s, text);
  EXPECT_EQ(s.caret, 0u);
}

// ---------------------------------------------------------------------------
// 4. A sweep: from every caret and anchor (boundaries or not, snapped as the
// widget snaps them) every move and edit at several widths keeps the caret
// and anchor on boundaries inside the text, the text well-formed, and each
// caret on a line that holds it. The sanitizer build runs it too.

bool well_formed(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = 1;
    if (decode_utf8(text, i, &length) == 0xFFFD && text.compare(i, 3, "\xef\xbf\xbd") != 0)
      return false;
    i += length;
  }
  return true;
}

void check_place(const std::string& text, const TextEditState& s, float width) {
  ASSERT_LE(s.caret, text.size());
  ASSERT_LE(s.anchor, text.size());
  ASSERT_EQ(snap_to_boundary(text, s.caret), s.caret);
  ASSERT_EQ(snap_to_boundary(text, s.anchor), s.anchor);
  ASSERT_TRUE(well_formed(text));
  const std::vector<VisualLine> lines = wrap_lines(text, width, kUnit);
  const std::size_t line = line_of(lines, s.caret, s.at_line_end);
  ASSERT_LT(line, lines.size());
  ASSERT_GE(s.caret, lines[line].begin);
  ASSERT_LE(s.caret, lines[line].end);
}

TEST(TextEdit, EveryCaretAndSelectionSurvivesEveryMoveAndEdit) {
  const std::string base = "ab c\n\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80x\n\nlongwordhere  end";
  for (const float width : {1.0f, 3.0f, 5.0f, 100.0f}) {
    for (std::size_t c = 0; c <= base.size(); ++c) {
      for (std::size_t a = 0; a <= base.size(); a += 3) {
        for (int op = 0; op < 16; ++op) {
          std::string text = base;
          TextEditState s;
          begin_editing(s, 1, text);
          s.caret = c;
          s.anchor = a;
          sync_with_text(s, text);
          const std::vector<VisualLine> lines = wrap_lines(text, width, kUnit);
          const bool shift = (op & 1) != 0;
          switch (op / 2) {
            case 0:
              move_left(text, s, op % 4 == 1, shift);
              break;
            case 1:
              move_right(text, s, c % 2 == 0, shift);
              break;
            case 2:
              move_lines(text, lines, s, shift ? -1 : 1, shift, kUnit);
              break;
            case 3:
              shift ? move_home(text, lines, s, true) : move_end(text, lines, s, false);
              break;
            case 4:
              erase_back(text, s, shift);
              break;
            case 5:
              erase_forward(text, s, shift);
              break;
            case 6:
              insert_text(text, s, shift ? "\xc3\xa9\n" : " ");
              break;
            default:
              insert_text(text, s, "z");
              undo(text, s);
              redo(text, s);
              break;
          }
          check_place(text, s, width);
          if (HasFatalFailure()) {
            ADD_FAILURE() << "width " << width << " caret " << c << " anchor " << a << " op " << op;
            return;
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// 5. The widget, in a window at (0, 0) with ImGui's own font, the box
// 200 x 60 at its top-left and a button under it.

class TextEditorHeadless : public ::testing::Test {
 protected:
  void SetUp() override {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(800, 600);
    io.DeltaTime = 1.0f / 60.0f;
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->AddFontDefault();
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
#if IMGUI_VERSION_NUM < 18700
    for (int k = 0; k < ImGuiKey_COUNT; ++k) io.KeyMap[k] = k;  // key k at index k
#endif
  }
  void TearDown() override { ImGui::DestroyContext(); }

  // One frame; returns whether the text changed.
  bool frame() {
    ImGui::GetIO().DeltaTime = 1.0f / 60.0f;
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(400, 300));
    ImGui::Begin("w", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove);
    const bool changed = text_editor("##box", text, ImVec2(200, box_h), edit);
    box_hovered = ImGui::IsItemHovered();
    button = ImGui::Button("elsewhere");
    ImGui::End();
    ImGui::Render();
    return changed;
  }
  void mouse(ImVec2 p, bool down) {
    ImGui::GetIO().MousePos = p;
    ImGui::GetIO().MouseDown[0] = down;
    frame();
  }
  void click(ImVec2 p) {
    mouse(p, false);
    mouse(p, true);
    mouse(p, false);
  }
  void press(ImGuiKey key, bool ctrl = false, bool shift = false) {
    ImGuiIO& io = ImGui::GetIO();
#if IMGUI_VERSION_NUM < 18700
    io.KeyCtrl = ctrl;
    io.KeyShift = shift;
    io.KeysDown[key] = true;
    frame();
    io.KeysDown[key] = false;
    io.KeyCtrl = io.KeyShift = false;
    frame();
#else
#if IMGUI_VERSION_NUM >= 18900
    const ImGuiKey kCtrl = ImGuiMod_Ctrl, kShift = ImGuiMod_Shift;
#else
    const ImGuiKey kCtrl = ImGuiKey_ModCtrl, kShift = ImGuiKey_ModShift;
#endif
    io.AddKeyEvent(kCtrl, ctrl);
    io.AddKeyEvent(kShift, shift);
    io.AddKeyEvent(key, true);
    frame();
    io.AddKeyEvent(key, false);
    io.AddKeyEvent(kCtrl, false);
    io.AddKeyEvent(kShift, false);
    frame();
#endif
  }
  void type(const char* utf8) {
    ImGui::GetIO().AddInputCharactersUTF8(utf8);
    frame();
  }
  // Where the box draws the first line's text (its frame padding in).
  ImVec2 text_origin() const {
    const ImGuiStyle& style = ImGui::GetStyle();
    return ImVec2(style.WindowPadding.x + style.FramePadding.x,
                  style.WindowPadding.y + style.FramePadding.y);
  }
  // A point inside character `column` of visual line `row` (ImGui's font is
  // monospaced).
  ImVec2 char_point(int row, float column) const {
    const ImVec2 o = text_origin();
    return ImVec2(o.x + (column + 0.5f) * editor_char_advance('x'),
                  o.y + (static_cast<float>(row) + 0.5f) * ImGui::GetFontSize());
  }

  std::string text = "the quick brown fox";
  float box_h = 60;
  TextEditState edit;
  bool box_hovered = false, button = false;
};

TEST_F(TextEditorHeadless, AClickTakesTheKeyboardAndSetsWantTextInputForTheNextFrame) {
  frame();
  EXPECT_FALSE(ImGui::GetIO().WantTextInput);
  click(char_point(0, 4));  // on "q"
  EXPECT_TRUE(ImGui::GetIO().WantTextInput);
  EXPECT_EQ(edit.caret, 4u);
  type("very ");
  EXPECT_EQ(text, "the very quick brown fox");
  EXPECT_TRUE(ImGui::GetIO().WantTextInput);
  frame();
  EXPECT_TRUE(ImGui::GetIO().WantTextInput);  // every frame while it has the keyboard
  press(ImGuiKey_Escape);
  frame();
  EXPECT_FALSE(ImGui::GetIO().WantTextInput);
  type("x");
  EXPECT_EQ(text, "the very quick brown fox") << "typing without the keyboard";
}

TEST_F(TextEditorHeadless, AClickElsewhereLetsGoOfTheKeyboard) {
  frame();
  click(char_point(0, 1));
  ASSERT_TRUE(ImGui::GetIO().WantTextInput);
  const ImGuiStyle& style = ImGui::GetStyle();
  const float below =
      style.WindowPadding.y + 60 + style.ItemSpacing.y + ImGui::GetFrameHeight() / 2;
  mouse(ImVec2(30, below), false);
  EXPECT_FALSE(box_hovered);
  mouse(ImVec2(30, below), true);
  mouse(ImVec2(30, below), false);
  EXPECT_TRUE(button) << "the button under the box takes the click";
  frame();
  EXPECT_FALSE(ImGui::GetIO().WantTextInput);
}

TEST_F(TextEditorHeadless, TypingReportsAChangeAndEnterInsertsANewline) {
  frame();
  click(char_point(0, 24));  // right of the text: the end
  EXPECT_EQ(edit.caret, text.size());
  ImGui::GetIO().AddInputCharactersUTF8("!");
  EXPECT_TRUE(frame());
  EXPECT_FALSE(frame());
  press(ImGuiKey_Enter);
  type("\xc3\xa9t\xc3\xa9");  // été
  EXPECT_EQ(text, "the quick brown fox!\n\xc3\xa9t\xc3\xa9");
  press(ImGuiKey_Backspace);
  EXPECT_EQ(text, "the quick brown fox!\n\xc3\xa9t");  // a whole é, never half
  press(ImGuiKey_Z, true);
  EXPECT_EQ(text, "the quick brown fox!\n\xc3\xa9t\xc3\xa9");
  press(ImGuiKey_Y, true);
  EXPECT_EQ(text, "the quick brown fox!\n\xc3\xa9t");
  press(ImGuiKey_Z, true);
  press(ImGuiKey_Z, true, true);  // Ctrl+Shift+Z redoes too
  EXPECT_EQ(text, "the quick brown fox!\n\xc3\xa9t");
}

TEST_F(TextEditorHeadless, LongTextWrapsInsideTheBoxAndScrollsToTheCaret) {
  text = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen";
  frame();
  click(char_point(0, 0));
  press(ImGuiKey_End, true);  // Ctrl+End: the end of the text
  frame();
  EXPECT_EQ(edit.caret, text.size());
  // Every glyph the box drew lies inside it (its child window's draw list).
  const ImDrawList* box = nullptr;
  for (const ImGuiWindow* w : ImGui::GetCurrentContext()->Windows)
    if (w->ParentWindow) box = w->DrawList;
  ASSERT_NE(box, nullptr);
  const ImVec2 white = ImGui::GetIO().Fonts->TexUvWhitePixel;  // shapes, not glyphs
  const float right = ImGui::GetStyle().WindowPadding.x + 200;
  int glyph_vertices = 0;
  for (const ImDrawVert& v : box->VtxBuffer)
    if (v.uv.x != white.x || v.uv.y != white.y) {
      EXPECT_LE(v.pos.x, right);
      ++glyph_vertices;
    }
  EXPECT_GT(glyph_vertices, 0);
  // The box scrolled down to show the caret on the last line.
  const ImGuiStyle& style = ImGui::GetStyle();
  const std::vector<VisualLine> lines =
      wrap_lines(text, 200 - 2 * style.FramePadding.x - style.ScrollbarSize,
                 [](char32_t c) { return editor_char_advance(c); });
  EXPECT_GE(lines.size(), 4u);
  EXPECT_EQ(line_of(lines, edit.caret, edit.at_line_end), lines.size() - 1);
  // Up twice keeps the caret's column (ImGui's font is monospaced).
  const float x =
      x_in_line(text, lines.back(), edit.caret, [](char32_t c) { return editor_char_advance(c); });
  press(ImGuiKey_UpArrow);
  press(ImGuiKey_UpArrow);
  const std::size_t line = line_of(lines, edit.caret, edit.at_line_end);
  EXPECT_EQ(line, lines.size() - 3);
  const float up_x =
      x_in_line(text, lines[line], edit.caret, [](char32_t c) { return editor_char_advance(c); });
  EXPECT_LE(up_x, x + 0.01f);
}

TEST_F(TextEditorHeadless, ABoxOfNLinesShowsNLinesWithoutAScrollbar) {
  // The box's child window (the only one with a parent).
  auto scrollbar = [] {
    for (const ImGuiWindow* w : ImGui::GetCurrentContext()->Windows)
      if (w->ParentWindow) return w->ScrollbarY;
    return true;
  };
  text = "one\ntwo\nthree";
  frame();  // (the font's size is known once a frame began)
  box_h = text_editor_height(3);
  frame();
  frame();
  EXPECT_FALSE(scrollbar());
  text += "\nfour";
  frame();
  frame();
  EXPECT_TRUE(scrollbar());
}

TEST_F(TextEditorHeadless, DragShiftClickAndDoubleClickSelect) {
  frame();
  mouse(char_point(0, 4), false);
  mouse(char_point(0, 4), true);  // before "quick"
  mouse(char_point(0, 9), true);  // drag to after it
  mouse(char_point(0, 9), false);
  EXPECT_EQ(selected_text(text, edit), "quick");
  ImGui::GetIO().KeyShift = true;
  click(char_point(0, 15));  // Shift+click: "quick brown "
  ImGui::GetIO().KeyShift = false;
  EXPECT_EQ(selected_text(text, edit), "quick brown");
  // Double-click on "fox" (a second click within the double-click time).
  mouse(char_point(0, 17), false);
  mouse(char_point(0, 17), true);
  mouse(char_point(0, 17), false);
  mouse(char_point(0, 17), true);
  mouse(char_point(0, 17), false);
  EXPECT_EQ(selected_text(text, edit), "fox");
}

TEST_F(TextEditorHeadless, CopyCutPasteAndSelectAll) {
  frame();
  click(char_point(0, 1));
  press(ImGuiKey_A, true);
  EXPECT_EQ(selected_text(text, edit), text);
  press(ImGuiKey_C, true);
  EXPECT_STREQ(ImGui::GetClipboardText(), "the quick brown fox");
  press(ImGuiKey_RightArrow);
  ImGui::SetClipboardText("\nand a second line\r\nand a third");
  press(ImGuiKey_V, true);
  EXPECT_EQ(text, "the quick brown fox\nand a second line\nand a third");
  press(ImGuiKey_LeftArrow, true, true);  // Ctrl+Shift+Left: "third"
  press(ImGuiKey_X, true);
  EXPECT_STREQ(ImGui::GetClipboardText(), "third");
  EXPECT_EQ(text, "the quick brown fox\nand a second line\nand a ");
}

}  // namespace
}  // namespace attnscope::gui
