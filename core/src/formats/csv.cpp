// csv.cpp: the CSV table reader (parse_csv_table): RFC 4180 quoting,
// numbers as Python's float() and numpy read them, an optional header row
// and row labels.
#include <algorithm>
#include <bit>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "attnscope/formats/formats.hpp"
#include "formats/formats_internal.hpp"
#include "formats/json_matrix.hpp"

namespace attnscope::core {

using detail::fail;
using detail::kMaxEntries;

namespace {

// Parses a whole string as a number the way Python's float() and numpy do:
// decimal or exponent notation, optional sign, inf/infinity/nan in any case.
// Surrounding spaces are allowed. nullopt when it is not a number; +-HUGE_VAL
// when it is out of double range.
std::optional<double> parse_number(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.empty()) return std::nullopt;
  bool negative = false;
  if (s.front() == '+' || s.front() == '-') {
    negative = s.front() == '-';
    s.remove_prefix(1);
    if (s.empty() || s.front() == '+' || s.front() == '-') return std::nullopt;
  }
  double d = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ptr != s.data() + s.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    // Overflow or underflow: tell them apart by the exponent's sign.
    const auto e = s.find_first_of("eE");
    const bool tiny = e != std::string_view::npos && e + 1 < s.size() && s[e + 1] == '-';
    d = tiny ? 0.0 : HUGE_VAL;
  } else if (ec != std::errc()) {
    return std::nullopt;
  }
  return negative ? -d : d;
}

}  // namespace

// ---------------------------------------------------------------------------
// CSV reader

namespace {

// One CSV record: its cells and the line it starts on (1-based).
struct CsvRecord {
  std::vector<std::string> cells;
  std::size_t line = 0;
};

// Splits CSV text into records one at a time (RFC 4180 quoting).
class CsvScanner {
 public:
  CsvScanner(std::string_view text, std::string_view source) : text_(text), source_(source) {
    if (text_.starts_with("\xEF\xBB\xBF")) text_.remove_prefix(3);  // UTF-8 BOM
  }

  // The next non-blank record, or false at the end.
  bool next(CsvRecord& rec) {
    for (;;) {
      if (pos_ >= text_.size()) return false;
      rec.cells.clear();
      rec.line = line_;
      read_record(rec);
      const bool blank = rec.cells.size() == 1 &&
                         rec.cells[0].find_first_not_of(" \t") == std::string::npos &&
                         !last_quoted_;
      if (!blank) return true;
    }
  }

 private:
  void read_record(CsvRecord& rec) {
    std::string cell;
    bool quoted = false;
    last_quoted_ = false;
    for (;;) {
      if (pos_ >= text_.size()) {
        rec.cells.push_back(std::move(cell));
        return;
      }
      const char c = text_[pos_];
      if (c == '"' && cell.find_first_not_of(" \t") == std::string::npos && !quoted) {
        // A quoted field: up to the closing quote, "" is one quote.
        cell.clear();
        quoted = true;
        last_quoted_ = true;
        const std::size_t open_line = line_;
        ++pos_;
        for (;;) {
          if (pos_ >= text_.size())
            fail(source_, "line " + std::to_string(open_line) +
                              ": a quoted field is never closed (missing \")");
          const char q = text_[pos_++];
          if (q == '"') {
            if (pos_ < text_.size() && text_[pos_] == '"') {
              cell += '"';
              ++pos_;
            } else {
              break;
            }
          } else {
            if (q == '\n') ++line_;
            cell += q;
          }
        }
        // Only spaces may follow the closing quote before the separator.
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
        if (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '\n' && text_[pos_] != '\r')
          fail(source_, "line " + std::to_string(line_) + ", column " +
                            std::to_string(rec.cells.size() + 1) +
                            ": unexpected text after a closing quote");
        continue;
      }
      ++pos_;
      if (c == ',') {
        rec.cells.push_back(std::move(cell));
        cell.clear();
        quoted = false;
        if (rec.cells.size() > kMaxEntries + 1)
          fail(source_, "line " + std::to_string(rec.line) + " has more than " +
                            std::to_string(kMaxEntries + 1) + " cells: at most " +
                            std::to_string(kMaxDim) + " dimensions are supported");
      } else if (c == '\n' || c == '\r') {
        if (c == '\r' && pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
        ++line_;
        rec.cells.push_back(std::move(cell));
        return;
      } else if (!quoted) {
        cell += c;
      }
    }
  }

  std::string_view text_;
  std::string_view source_;
  std::size_t pos_ = 0;
  std::size_t line_ = 1;
  bool last_quoted_ = false;
};

bool is_number_cell(const std::string& s) { return parse_number(s).has_value(); }

// A cell as quoted in a message: at most 40 bytes, control characters
// (line breaks, terminal escapes) as '?'.
std::string shown(const std::string& cell) {
  std::string s = cell.size() > 40 ? cell.substr(0, 40) + "..." : cell;
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return "'" + s + "'";
}

}  // namespace

Table parse_csv_table(std::string_view text, std::string_view source, NonFinite nonfinite) {
  CsvScanner scanner(text, source);
  CsvRecord first;
  if (!scanner.next(first)) fail(source, "is empty: expected rows of comma-separated numbers");

  auto at = [](const CsvRecord& rec, std::size_t col) {
    return "line " + std::to_string(rec.line) + ", column " + std::to_string(col + 1);
  };

  // Header: an empty first cell (a label column's corner, as pandas writes
  // it), or every cell after the first is not a number (or a lone cell is not one).
  auto blank = [](const std::string& s) { return s.find_first_not_of(" \t") == std::string::npos; };
  bool header = false;
  if (first.cells.size() == 1) {
    header = !is_number_cell(first.cells[0]);
  } else {
    header = blank(first.cells[0]) ||
             std::none_of(first.cells.begin() + 1, first.cells.end(), is_number_cell);
  }

  Table table;
  CsvRecord rec;
  const CsvRecord* data0 = &first;
  if (header) {
    if (!scanner.next(rec)) fail(source, "has a header line but no data lines");
    data0 = &rec;
  }
  const bool labels = (header && first.cells.size() > 1 && blank(first.cells[0])) ||
                      !is_number_cell(data0->cells[0]);
  const std::size_t width = data0->cells.size();
  const std::size_t skip = labels ? 1 : 0;
  if (width <= skip) fail(source, at(*data0, 0) + ": a line holds a name but no numbers");
  const std::size_t cols = width - skip;
  if (cols > static_cast<std::size_t>(kMaxDim))
    fail(source, "has " + std::to_string(cols) + " columns of numbers: at most " +
                     std::to_string(kMaxDim) + " are supported");
  if (header) {
    if (first.cells.size() != width)
      fail(source, "the header (line " + std::to_string(first.line) + ") has " +
                       std::to_string(first.cells.size()) + " cells but line " +
                       std::to_string(data0->line) + " has " + std::to_string(width) +
                       "; every line needs the same number of cells");
    for (std::size_t c = skip; c < first.cells.size(); ++c) {
      if (!detail::valid_utf8(first.cells[c]))
        fail(source, at(first, c) + ": the column name is not valid UTF-8 text");
      table.col_labels.push_back(first.cells[c]);
    }
  }

  std::vector<float> values;
  std::size_t rows = 0;
  const std::size_t header_line = first.line;
  auto take = [&](const CsvRecord& r) {
    if (r.cells.size() != width)
      fail(source, "line " + std::to_string(r.line) + " has " + std::to_string(r.cells.size()) +
                       (r.cells.size() == 1 ? " cell" : " cells") + " but line " +
                       std::to_string(header ? header_line : first.line) + " has " +
                       std::to_string(width) + "; every line needs the same number of cells");
    if (++rows > static_cast<std::size_t>(kMaxTokens))
      fail(source, "has more than " + std::to_string(kMaxTokens) + " rows: at most " +
                       std::to_string(kMaxTokens) + " tokens are supported");
    if (labels) {
      if (!detail::valid_utf8(r.cells[0]))
        fail(source, at(r, 0) + ": the name is not valid UTF-8 text");
      table.row_labels.push_back(r.cells[0]);
    }
    for (std::size_t c = skip; c < width; ++c) {
      const std::string& cell = r.cells[c];
      const auto d = parse_number(cell);
      if (!d) {
        if (cell.find_first_not_of(" \t") == std::string::npos)
          fail(source, at(r, c) + " is empty: every cell needs a number");
        fail(source, at(r, c) + ": " + shown(cell) + " is not a number");
      }
      if (!std::isfinite(*d)) {
        if (std::isinf(*d) && cell.find_first_of("iI") == std::string::npos)
          fail(source, at(r, c) + ": " + shown(cell) +
                           " is too large for a 32-bit float (max about 3.4e38)");
        if (nonfinite == NonFinite::Reject)
          fail(source, at(r, c) + " is " + shown(cell) + ": every value must be a finite number");
      } else if (std::fabs(*d) > static_cast<double>(FLT_MAX)) {
        fail(source,
             at(r, c) + ": " + shown(cell) + " is too large for a 32-bit float (max about 3.4e38)");
      }
      values.push_back(static_cast<float>(*d));
    }
  };
  take(*data0);
  while (scanner.next(rec)) take(rec);

  table.values.resize(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  std::copy(values.begin(), values.end(), table.values.data());
  return table;
}

}  // namespace attnscope::core
