// text_edit.hpp: the editing behind the app's multi-line text boxes
// (widgets/text_editor.hpp draws them): a UTF-8 text wrapped into visual
// lines, a caret and a selection as byte offsets on code point boundaries,
// the moves and edits a learner expects of a text box, and undo/redo.
//
// No ImGui here: the widget hands in how wide each character is, so the
// tests can wrap with any widths they like.
//
// Sections
//   1. UTF-8 boundaries
//   2. wrapping into visual lines
//   3. the editor's state and its moves and edits
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attnscope/text/utf8.hpp"

namespace attnscope::gui {

// ---------------------------------------------------------------------------
// 1. UTF-8 boundaries. A byte that does not start a well-formed sequence
// counts as one character of its own (drawn as U+FFFD), so every offset
// these return is a boundary of the same split of the text.

// The code point starting at byte `i` (< text.size()) and its length in bytes
// (1 and U+FFFD for a byte that starts no well-formed sequence).
char32_t decode_utf8(std::string_view text, std::size_t i, std::size_t* length);
// The next and the previous character boundary (text.size() and 0 at the ends).
std::size_t next_boundary(std::string_view text, std::size_t i);
std::size_t prev_boundary(std::string_view text, std::size_t i);
// `i` clamped to the text and moved back to a character boundary.
std::size_t snap_to_boundary(std::string_view text, std::size_t i);
// `text` with every byte that starts no well-formed sequence replaced by
// U+FFFD, "\r\n" and "\r" turned into "\n", and control characters other
// than newline and tab left out: what a paste or typing may insert.
std::string sanitized_input(std::string_view text);
using core::append_utf8;  // one UTF-8 writer, core's

// ---------------------------------------------------------------------------
// 2. Wrapping.

// One visual line: bytes [begin, end) are drawn. `hard`: a '\n' at `end`
// ends it and the next line starts after it (the last line ends the text
// and is hard too). Otherwise it is a soft wrap and the next line starts at
// `end`; spaces before a soft wrap stay on this line, past the right edge.
struct VisualLine {
  std::size_t begin = 0, end = 0;
  bool hard = true;
};

// How wide a character is drawn (pixels, or any unit the width is in).
using Advance = std::function<float(char32_t)>;

// The text's visual lines at `width`: each line breaks after the last space
// that lets its next word fit, and a word wider than the line breaks before
// the first character that does not fit (every line holds at least one
// character). Always at least one line; a text ending in '\n' ends with an
// empty line.
std::vector<VisualLine> wrap_lines(std::string_view text, float width, const Advance& advance);

// ---------------------------------------------------------------------------
// 3. The editor. One state serves every text box (only one has the keyboard
// at a time, as with ImGui's own InputText): the box that takes the keyboard
// resets it.

struct TextEditState {
  unsigned id = 0;  // the text box that has it (an ImGuiID; 0: none)
  // The caret and the other end of the selection (equal: none), byte offsets
  // on character boundaries.
  std::size_t caret = 0, anchor = 0;
  // The caret sits at the end of the line it ends rather than at the start of
  // the next (an offset where a soft wrap falls is both).
  bool at_line_end = false;
  float want_x = -1;             // the x Up/Down keep (-1: the caret's own)
  float blink = 0;               // seconds since the caret last moved (it blinks)
  bool focused = false;          // the box had the keyboard at the end of the last frame
  bool dragging = false;         // the mouse went down in the box and is held
  bool scroll_to_caret = false;  // bring the caret into view next time it is drawn

  // Undo: the text, caret and anchor before each edit (newest last).
  struct Snapshot {
    std::string text;
    std::size_t caret = 0, anchor = 0;
  };
  std::vector<Snapshot> undo, redo;
  // What the last edit was: typed characters and single-character deletions
  // in a row are undone together.
  enum class Group { None, Typing, Deleting };
  Group group = Group::None;
  std::string seen;  // the text as the box left it (another change resets undo)

  static constexpr std::size_t kMaxUndo = 200;

  std::size_t selection_begin() const { return caret < anchor ? caret : anchor; }
  std::size_t selection_end() const { return caret < anchor ? anchor : caret; }
  bool has_selection() const { return caret != anchor; }
};

// Starts editing `text` in the box `id`: caret at the end, no selection, no
// undo.
void begin_editing(TextEditState& s, unsigned id, const std::string& text);
// Brings the state up to date with `text` before a frame's edits: if someone
// else changed the text (a session, a token appended by a key), undo starts
// over; caret and anchor are clamped to character boundaries.
void sync_with_text(TextEditState& s, const std::string& text);

// Where the caret is drawn: its visual line and x.
struct CaretPlace {
  std::size_t line = 0;
  float x = 0;
};
// The visual line holding `offset` (at a soft wrap: the next line's start,
// or this line's end when `at_line_end`).
std::size_t line_of(const std::vector<VisualLine>& lines, std::size_t offset, bool at_line_end);
// x of `offset` within its line `line` (the advances of the characters before it).
float x_in_line(std::string_view text, const VisualLine& line, std::size_t offset,
                const Advance& advance);
CaretPlace caret_place(std::string_view text, const std::vector<VisualLine>& lines,
                       const TextEditState& s, const Advance& advance);
// The offset on `line` nearest to x (between the characters either side);
// `at_end` says it is that line's soft-wrap end.
std::size_t offset_at_x(std::string_view text, const VisualLine& line, float x,
                        const Advance& advance, bool* at_end);

// Word boundaries: a word is a run of letters, digits and other non-ASCII
// characters; spaces and ASCII punctuation separate words.
std::size_t word_left(std::string_view text, std::size_t i);   // start of this or the previous word
std::size_t word_right(std::string_view text, std::size_t i);  // start of the next word
// The word (or run of spaces, or of punctuation) around offset `i`: [begin, end).
std::pair<std::size_t, std::size_t> word_at(std::string_view text, std::size_t i);

// Moves. `select`: keep the anchor (Shift), else the selection collapses.
void move_caret(TextEditState& s, std::size_t to, bool select, bool at_line_end = false);
void move_left(const std::string& text, TextEditState& s, bool word, bool select);
void move_right(const std::string& text, TextEditState& s, bool word, bool select);
// Up (lines < 0) or down by visual lines, keeping want_x.
void move_lines(const std::string& text, const std::vector<VisualLine>& lines, TextEditState& s,
                int by, bool select, const Advance& advance);
// Home and End of the caret's visual line (End stops before the spaces a
// soft wrap leaves hanging).
void move_home(const std::string& text, const std::vector<VisualLine>& lines, TextEditState& s,
               bool select);
void move_end(const std::string& text, const std::vector<VisualLine>& lines, TextEditState& s,
              bool select);
void select_all(const std::string& text, TextEditState& s);

// Edits; each records undo and returns true when the text changed.
// Replaces the selection (or inserts at the caret) with sanitized_input(what).
bool insert_text(std::string& text, TextEditState& s, std::string_view what,
                 TextEditState::Group group = TextEditState::Group::None);
// Backspace / Delete: the selection, else the character (or with `word`, up
// to the word boundary) before / after the caret.
bool erase_back(std::string& text, TextEditState& s, bool word);
bool erase_forward(std::string& text, TextEditState& s, bool word);
std::string selected_text(const std::string& text, const TextEditState& s);
bool undo(std::string& text, TextEditState& s);
bool redo(std::string& text, TextEditState& s);

}  // namespace attnscope::gui
