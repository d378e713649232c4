// text_edit.cpp: see text_edit.hpp.
//
// Sections
//   1. UTF-8 boundaries
//   2. wrapping
//   3. caret places, words, moves
//   4. edits and undo
#include "platform/text_edit.hpp"

#include <algorithm>

namespace attnscope::gui {

// ---------------------------------------------------------------------------
// 1. UTF-8 boundaries

char32_t decode_utf8(std::string_view text, std::size_t i, std::size_t* length) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned lead = byte(i);
  *length = 1;
  if (lead < 0x80) return lead;
  std::size_t more = 0;
  char32_t cp = 0, least = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    more = 1, cp = lead & 0x1F, least = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    more = 2, cp = lead & 0x0F, least = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    more = 3, cp = lead & 0x07, least = 0x10000;
  } else {
    return 0xFFFD;
  }
  if (i + more >= text.size()) return 0xFFFD;
  for (std::size_t k = 1; k <= more; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0xFFFD;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < least || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0xFFFD;
  *length = more + 1;
  return cp;
}

std::size_t next_boundary(std::string_view text, std::size_t i) {
  if (i >= text.size()) return text.size();
  std::size_t length = 1;
  decode_utf8(text, i, &length);
  return i + length;
}

// A well-formed sequence of two or more bytes that starts at one of the four
// bytes before `i` and ends at `i` (`ending_at_i`) or goes past it: its start,
// the farthest first (else npos).
static std::size_t sequence_over(std::string_view text, std::size_t i, bool ending_at_i) {
  for (std::size_t back = 4; back >= 1; --back) {
    if (i < back) continue;
    std::size_t length = 1;
    decode_utf8(text, i - back, &length);
    if (length > 1 && (ending_at_i ? length == back : length > back)) return i - back;
  }
  return std::string_view::npos;
}

std::size_t prev_boundary(std::string_view text, std::size_t i) {
  i = std::min(i, text.size());
  if (i == 0) return 0;
  const std::size_t start = sequence_over(text, i, true);
  return start != std::string_view::npos ? start : i - 1;
}

std::size_t snap_to_boundary(std::string_view text, std::size_t i) {
  i = std::min(i, text.size());
  if (i == text.size()) return i;
  const std::size_t start = sequence_over(text, i, false);
  return start != std::string_view::npos ? start : i;
}

std::string sanitized_input(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = 1;
    const char32_t c = decode_utf8(text, i, &length);
    i += length;
    if (c == '\r') {
      if (i < text.size() && text[i] == '\n') ++i;
      out += '\n';
    } else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
      continue;  // other control characters
    } else if (c >= 0xE000 && c <= 0xF8FF) {
      continue;  // private use: the app draws its own glyphs there
    } else {
      append_utf8(out, c);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// 2. Wrapping

static bool is_space(char32_t c) { return c == ' ' || c == '\t'; }

static float width_of(std::string_view text, std::size_t from, std::size_t to,
                      const Advance& advance) {
  float x = 0;
  for (std::size_t i = from; i < to;) {
    std::size_t length = 1;
    x += advance(decode_utf8(text, i, &length));
    i += length;
  }
  return x;
}

std::vector<VisualLine> wrap_lines(std::string_view text, float width, const Advance& advance) {
  std::vector<VisualLine> lines;
  std::size_t begin = 0;     // the line being filled starts here
  std::size_t word = begin;  // the last word start after a space on it (== begin: none)
  float x = 0;               // the width of [begin, i)
  bool after_space = false;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = 1;
    const char32_t c = decode_utf8(text, i, &length);
    if (c == '\n') {
      lines.push_back({begin, i, true});
      i += length;
      begin = word = i;
      x = 0;
      after_space = false;
      continue;
    }
    const float a = advance(c);
    if (is_space(c)) {  // spaces never wrap: they hang past the edge
      x += a;
      i += length;
      after_space = true;
      continue;
    }
    if (after_space && i > begin) word = i;
    after_space = false;
    if (x + a > width && i > begin) {
      const std::size_t at = word > begin ? word : i;  // after the spaces, else mid-word
      lines.push_back({begin, at, false});
      begin = word = at;
      x = width_of(text, at, i, advance);
      continue;  // this character again, on the new line
    }
    x += a;
    i += length;
  }
  lines.push_back({begin, text.size(), true});
  return lines;
}

// ---------------------------------------------------------------------------
// 3. Caret places, words, moves

std::size_t line_of(const std::vector<VisualLine>& lines, std::size_t offset, bool at_line_end) {
  const auto after =
      std::upper_bound(lines.begin(), lines.end(), offset,
                       [](std::size_t o, const VisualLine& line) { return o < line.begin; });
  std::size_t index =
      after == lines.begin() ? 0 : static_cast<std::size_t>(after - lines.begin()) - 1;
  if (at_line_end && index > 0 && lines[index].begin == offset && !lines[index - 1].hard &&
      lines[index - 1].end == offset)
    --index;
  return index;
}

float x_in_line(std::string_view text, const VisualLine& line, std::size_t offset,
                const Advance& advance) {
  return width_of(text, line.begin, std::clamp(offset, line.begin, line.end), advance);
}

CaretPlace caret_place(std::string_view text, const std::vector<VisualLine>& lines,
                       const TextEditState& s, const Advance& advance) {
  const std::size_t line = line_of(lines, s.caret, s.at_line_end);
  return {line, x_in_line(text, lines[line], s.caret, advance)};
}

// The last caret place on a line: before a space a soft wrap leaves hanging.
static std::size_t visible_end(std::string_view text, const VisualLine& line) {
  if (!line.hard && line.end > line.begin &&
      is_space(static_cast<unsigned char>(text[line.end - 1])))
    return line.end - 1;
  return line.end;
}

std::size_t offset_at_x(std::string_view text, const VisualLine& line, float x,
                        const Advance& advance, bool* at_end) {
  const std::size_t last = visible_end(text, line);
  float pen = 0;
  for (std::size_t i = line.begin; i < last;) {
    std::size_t length = 1;
    const float a = advance(decode_utf8(text, i, &length));
    if (x < pen + a * 0.5f) {
      *at_end = false;
      return i;
    }
    pen += a;
    i += length;
  }
  *at_end = !line.hard && last == line.end;
  return last;
}

// 0: a space or line break, 1: ASCII punctuation, 2: a word's character.
static int char_class(char32_t c) {
  if (is_space(c) || c == '\n' || c == '\r') return 0;
  if (c < 0x80 &&
      !((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'))
    return 1;
  return 2;
}

static int class_before(std::string_view text, std::size_t i) {
  std::size_t length = 1;
  return char_class(decode_utf8(text, prev_boundary(text, i), &length));
}

static int class_at(std::string_view text, std::size_t i) {
  std::size_t length = 1;
  return char_class(decode_utf8(text, i, &length));
}

std::size_t word_left(std::string_view text, std::size_t i) {
  while (i > 0 && class_before(text, i) == 0) i = prev_boundary(text, i);
  if (i == 0) return 0;
  const int cls = class_before(text, i);
  while (i > 0 && class_before(text, i) == cls) i = prev_boundary(text, i);
  return i;
}

std::size_t word_right(std::string_view text, std::size_t i) {
  if (i < text.size() && class_at(text, i) != 0) {
    const int cls = class_at(text, i);
    while (i < text.size() && class_at(text, i) == cls) i = next_boundary(text, i);
  }
  while (i < text.size() && class_at(text, i) == 0) i = next_boundary(text, i);
  return i;
}

std::pair<std::size_t, std::size_t> word_at(std::string_view text, std::size_t i) {
  i = snap_to_boundary(text, i);
  // The character after the offset, or before it at the end of a line.
  if (i == text.size() || text[i] == '\n') {
    if (i == 0 || text[i - 1] == '\n') return {i, i};
    i = prev_boundary(text, i);
  }
  const int cls = class_at(text, i);
  if (text[i] == '\n') return {i, i};
  std::size_t begin = i, end = next_boundary(text, i);
  while (begin > 0 && text[begin - 1] != '\n' && class_before(text, begin) == cls)
    begin = prev_boundary(text, begin);
  while (end < text.size() && text[end] != '\n' && class_at(text, end) == cls)
    end = next_boundary(text, end);
  return {begin, end};
}

void move_caret(TextEditState& s, std::size_t to, bool select, bool at_line_end) {
  s.caret = to;
  if (!select) s.anchor = to;
  s.at_line_end = at_line_end;
  s.want_x = -1;
  s.blink = 0;
  s.group = TextEditState::Group::None;
  s.scroll_to_caret = true;
}

void move_left(const std::string& text, TextEditState& s, bool word, bool select) {
  if (s.has_selection() && !select)
    move_caret(s, s.selection_begin(), false);
  else
    move_caret(s, word ? word_left(text, s.caret) : prev_boundary(text, s.caret), select);
}

void move_right(const std::string& text, TextEditState& s, bool word, bool select) {
  if (s.has_selection() && !select)
    move_caret(s, s.selection_end(), false);
  else
    move_caret(s, word ? word_right(text, s.caret) : next_boundary(text, s.caret), select);
}

void move_lines(const std::string& text, const std::vector<VisualLine>& lines, TextEditState& s,
                int by, bool select, const Advance& advance) {
  const CaretPlace place = caret_place(text, lines, s, advance);
  const float want = s.want_x >= 0 ? s.want_x : place.x;
  const long target = static_cast<long>(place.line) + by;
  if (target < 0) {
    move_caret(s, 0, select);
  } else if (target >= static_cast<long>(lines.size())) {
    move_caret(s, text.size(), select);
  } else {
    bool at_end = false;
    const std::size_t to =
        offset_at_x(text, lines[static_cast<std::size_t>(target)], want, advance, &at_end);
    move_caret(s, to, select, at_end);
  }
  s.want_x = want;
}

void move_home(const std::string&, const std::vector<VisualLine>& lines, TextEditState& s,
               bool select) {
  move_caret(s, lines[line_of(lines, s.caret, s.at_line_end)].begin, select);
}

void move_end(const std::string& text, const std::vector<VisualLine>& lines, TextEditState& s,
              bool select) {
  const VisualLine& line = lines[line_of(lines, s.caret, s.at_line_end)];
  const std::size_t to = visible_end(text, line);
  move_caret(s, to, select, !line.hard && to == line.end);
}

void select_all(const std::string& text, TextEditState& s) {
  move_caret(s, text.size(), false);
  s.anchor = 0;
}

// ---------------------------------------------------------------------------
// 4. Edits and undo

void begin_editing(TextEditState& s, unsigned id, const std::string& text) {
  if (s.id == id && s.seen == text) return;  // back to the same box: keep its undo
  s = TextEditState{};
  s.id = id;
  s.caret = s.anchor = text.size();
  s.seen = text;
}

void sync_with_text(TextEditState& s, const std::string& text) {
  if (text != s.seen) {
    s.undo.clear();
    s.redo.clear();
    s.group = TextEditState::Group::None;
    s.seen = text;
  }
  s.caret = snap_to_boundary(text, s.caret);
  s.anchor = snap_to_boundary(text, s.anchor);
}

// Records the state before an edit, unless it continues the last edit's group.
static void record(const std::string& text, TextEditState& s, TextEditState::Group group) {
  if (group == TextEditState::Group::None || group != s.group || s.undo.empty()) {
    s.undo.push_back({text, s.caret, s.anchor});
    if (s.undo.size() > TextEditState::kMaxUndo) s.undo.erase(s.undo.begin());
  }
  s.redo.clear();
}

// Replaces [begin, end) with `with` (already sanitized) and puts the caret after it.
static void replace(std::string& text, TextEditState& s, std::size_t begin, std::size_t end,
                    const std::string& with, TextEditState::Group group) {
  record(text, s, group);
  text.replace(begin, end - begin, with);
  move_caret(s, begin + with.size(), false);
  s.group = group;
  s.seen = text;
}

bool insert_text(std::string& text, TextEditState& s, std::string_view what,
                 TextEditState::Group group) {
  const std::string clean = sanitized_input(what);
  if (clean.empty() && !s.has_selection()) return false;
  // Typing groups into words: a space or line break after a word starts a new step.
  if (group == TextEditState::Group::Typing && s.group == group && !clean.empty() &&
      char_class(static_cast<unsigned char>(clean[0])) == 0 && s.caret > 0 &&
      class_before(text, s.caret) != 0)
    s.group = TextEditState::Group::None;
  if (s.has_selection()) group = TextEditState::Group::None;
  replace(text, s, s.selection_begin(), s.selection_end(), clean, group);
  return true;
}

bool erase_back(std::string& text, TextEditState& s, bool word) {
  if (s.has_selection()) {
    replace(text, s, s.selection_begin(), s.selection_end(), "", TextEditState::Group::None);
    return true;
  }
  if (s.caret == 0) return false;
  const std::size_t from = word ? word_left(text, s.caret) : prev_boundary(text, s.caret);
  replace(text, s, from, s.caret, "",
          word ? TextEditState::Group::None : TextEditState::Group::Deleting);
  return true;
}

bool erase_forward(std::string& text, TextEditState& s, bool word) {
  if (s.has_selection()) {
    replace(text, s, s.selection_begin(), s.selection_end(), "", TextEditState::Group::None);
    return true;
  }
  if (s.caret >= text.size()) return false;
  const std::size_t to = word ? word_right(text, s.caret) : next_boundary(text, s.caret);
  const TextEditState::Group group =
      word ? TextEditState::Group::None : TextEditState::Group::Deleting;
  replace(text, s, s.caret, to, "", group);
  return true;
}

std::string selected_text(const std::string& text, const TextEditState& s) {
  return text.substr(s.selection_begin(), s.selection_end() - s.selection_begin());
}

// Moves the current state onto `to` and restores the newest of `from`.
static bool step_history(std::string& text, TextEditState& s,
                         std::vector<TextEditState::Snapshot>& from,
                         std::vector<TextEditState::Snapshot>& to) {
  if (from.empty()) return false;
  to.push_back({text, s.caret, s.anchor});
  TextEditState::Snapshot back = std::move(from.back());
  from.pop_back();
  text = std::move(back.text);
  move_caret(s, snap_to_boundary(text, back.caret), false);
  s.anchor = snap_to_boundary(text, back.anchor);
  s.seen = text;
  return true;
}

bool undo(std::string& text, TextEditState& s) { return step_history(text, s, s.undo, s.redo); }
bool redo(std::string& text, TextEditState& s) { return step_history(text, s, s.redo, s.undo); }

}  // namespace attnscope::gui
