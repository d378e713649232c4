// formats.cpp: stage writers (CSV, NPY, JSON, torch text) and readers.
//
// Sections
//   1. shared helpers: numbers, UTF-8, JSON (json_matrix.hpp)
//   2. stage labels
//   3. writers
//   4. CSV reader
//   5. NPY reader
//   6. stage JSON reader
//   7. embeddings import
//   8. export_stages
#include "attnscope/formats.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "attnscope/files.hpp"
#include "attnscope/io.hpp"
#include "json_matrix.hpp"

namespace attnscope::core {

namespace {

constexpr std::size_t kMaxEntries =
    static_cast<std::size_t>(kMaxTokens > kMaxDim ? kMaxTokens : kMaxDim);

[[noreturn]] void fail(std::string_view source, const std::string& what) {
  throw ParseError(std::string(source) + ": " + what);
}

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

std::string shape_text(Eigen::Index rows, Eigen::Index cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

}  // namespace

// ---------------------------------------------------------------------------
// 1. Shared helpers (json_matrix.hpp)

namespace detail {

bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1Fu;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0Fu;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07u;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // the sequence runs past the end
    for (std::size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3Fu);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
      return false;
    i += n + 1;
  }
  return true;
}

std::string json_type_name(const json& v) {
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "true/false";
  if (v.is_null()) return "null";
  if (v.is_array()) return "a list";
  if (v.is_object()) return "an object";
  return "a number";
}

// The pre-scan refuses only lists far beyond any limit (twice the largest),
// so that a list just over a limit still gets the specific message from the
// reader that knows what the list is ("too many tokens (4097)").
constexpr std::size_t kPreScanEntries = 2 * kMaxEntries;

json parse_json_document(std::string_view text, std::string_view source) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    fail(source, "is empty: expected JSON");
  // A linear pre-scan counts the entries of every list and object, so that a
  // file with a list longer than any limit is refused before nlohmann builds
  // it (a 256 MB file of numbers would take gigabytes as a DOM).
  {
    std::vector<std::size_t> commas;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (in_string) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          in_string = false;
        continue;
      }
      if (c == '"') {
        in_string = true;
      } else if (c == '[' || c == '{') {
        commas.push_back(0);
      } else if ((c == ']' || c == '}') && !commas.empty()) {
        commas.pop_back();
      } else if (c == ',' && !commas.empty() && ++commas.back() >= kPreScanEntries) {
        fail(source, "has a list with more than " + std::to_string(kPreScanEntries) +
                         " entries: at most " + std::to_string(kMaxTokens) + " tokens and " +
                         std::to_string(kMaxDim) + " dimensions are supported");
      }
    }
  }
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::out_of_range& e) {
    std::string what = e.what();
    const auto quote = what.find('\'');
    const std::string literal = quote == std::string::npos ? "" : " " + what.substr(quote);
    fail(source, "a number is out of range" + literal + ": every value must fit in a 32-bit float");
  } catch (const json::exception& e) {
    std::string what = e.what();
    const auto pos = what.find("] ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    fail(source, "is not valid JSON: " + what);
  }
}

RowMatrix json_matrix(const json& v, std::string_view source, const std::string& where,
                      bool allow_vector, NonFinite nonfinite) {
  const std::string shape_hint =
      allow_vector ? "a list of numbers" : "a list of rows (lists of numbers)";
  if (!v.is_array()) fail(source, where + " must be " + shape_hint + ", got " + json_type_name(v));
  if (v.empty()) fail(source, where + " is empty");
  const bool vector = allow_vector && !v[0].is_array();
  const std::size_t rows = vector ? 1 : v.size();
  std::size_t cols = vector ? v.size() : 0;
  if (rows > kMaxEntries || cols > kMaxEntries)
    fail(source, where + " is too large (" + std::to_string(rows) + " x " + std::to_string(cols) +
                     "): at most " + std::to_string(kMaxEntries) + " rows and columns are supported");
  if (!vector) {
    for (std::size_t r = 0; r < rows; ++r) {
      const json& row = v[r];
      const std::string at = where + "[" + std::to_string(r) + "]";
      if (!row.is_array())
        fail(source, at + " must be a list of numbers, got " + json_type_name(row));
      if (r == 0) {
        cols = row.size();
        if (cols == 0) fail(source, at + " is empty");
        if (cols > kMaxEntries) fail(source, where + " has too many columns");
      } else if (row.size() != cols) {
        fail(source, where + " is ragged: row " + std::to_string(r) + " has " +
                         std::to_string(row.size()) + " numbers but row 0 has " +
                         std::to_string(cols) + "; every row needs the same length");
      }
    }
  }
  RowMatrix m(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const json& cell = vector ? v[c] : v[r][c];
      const std::string at = vector
                                 ? where + "[" + std::to_string(c) + "]"
                                 : where + "[" + std::to_string(r) + "][" + std::to_string(c) + "]";
      double d = 0;
      if (cell.is_number()) {
        d = cell.get<double>();
        if (std::fabs(d) > static_cast<double>(FLT_MAX))
          fail(source,
               at + " (" + cell.dump() + ") is too large for a 32-bit float (max about 3.4e38)");
      } else if (cell.is_string() && nonfinite == NonFinite::Allow) {
        const std::string s = cell.get<std::string>();
        if (s == "inf")
          d = HUGE_VAL;
        else if (s == "-inf")
          d = -HUGE_VAL;
        else if (s == "nan")
          d = std::numeric_limits<double>::quiet_NaN();
        else
          fail(source, at + " must be a number (or \"inf\", \"-inf\", \"nan\"), got \"" + s + "\"");
      } else if (cell.is_string() && (cell == "inf" || cell == "-inf" || cell == "nan")) {
        fail(source,
             at + " is " + cell.get<std::string>() + ": every value must be a finite number");
      } else {
        fail(source, at + " must be a number, got " + json_type_name(cell));
      }
      m(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = static_cast<float>(d);
    }
  return m;
}

void append_float(std::string& out, float v, std::string_view pos_inf, std::string_view neg_inf,
                  std::string_view nan) {
  if (std::isnan(v)) {
    out += nan;
  } else if (std::isinf(v)) {
    out += v > 0 ? pos_inf : neg_inf;
  } else if (v == 0.0f && std::signbit(v)) {
    // "-0" would read back as the integer 0 in JSON and Python: keep the sign.
    out += "-0.0";
  } else {
    // 9 significant digits: the decimal lies within 5e-9 (relative) of v,
    // far inside v's rounding interval, so it reads back as v even when a
    // reader goes through double first (Python, nlohmann).
    char buf[32];
    const int n = std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
    out.append(buf, static_cast<std::size_t>(n));
  }
}

std::string json_quoted(std::string_view s) { return json(std::string(s)).dump(); }

void append_json_rows(std::string& out, const RowMatrix& m) {
  out += "[";
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    out += r ? ", [" : "[";
    for (Eigen::Index c = 0; c < m.cols(); ++c) {
      if (c) out += ", ";
      append_float(out, m(r, c), "\"inf\"", "\"-inf\"", "\"nan\"");
    }
    out += "]";
  }
  out += "]";
}

void append_json_vector(std::string& out, const RowMatrix& m) {
  out += "[";
  for (Eigen::Index k = 0; k < m.size(); ++k) {
    if (k) out += ", ";
    append_float(out, m.data()[k], "\"inf\"", "\"-inf\"", "\"nan\"");
  }
  out += "]";
}

}  // namespace detail

using detail::append_float;
using detail::json;
using detail::json_quoted;
using detail::json_type_name;

// ---------------------------------------------------------------------------
// 2. Stage labels

std::string_view format_extension(DataFormat f) {
  switch (f) {
    case DataFormat::Csv:
      return ".csv";
    case DataFormat::Npy:
      return ".npy";
    case DataFormat::Json:
      return ".json";
    case DataFormat::Torch:
      return ".py";
  }
  return "";
}

std::string_view format_id(DataFormat f) {
  switch (f) {
    case DataFormat::Csv:
      return "csv";
    case DataFormat::Npy:
      return "npy";
    case DataFormat::Json:
      return "json";
    case DataFormat::Torch:
      return "torch";
  }
  return "";
}

std::optional<DataFormat> parse_data_format(std::string_view id) {
  for (auto f : {DataFormat::Csv, DataFormat::Npy, DataFormat::Json, DataFormat::Torch})
    if (format_id(f) == id) return f;
  return std::nullopt;
}

StageAxes stage_axes(const Trace& trace, const Stage& stage) {
  StageAxes axes;
  const Eigen::Index rows = stage.data().rows();
  const Eigen::Index cols = stage.data().cols();
  auto numbered = [](std::string_view prefix, Eigen::Index n) {
    std::vector<std::string> labels;
    labels.reserve(static_cast<std::size_t>(n));
    for (Eigen::Index k = 0; k < n; ++k) labels.push_back(std::string(prefix) + std::to_string(k));
    return labels;
  };
  const StageInfo* info = find_stage_info(stage.id);
  const Axis row_axis = info ? info->rows : Axis::Token;
  const Axis col_axis = info ? info->cols : Axis::Dim;
  axes.row_title = axis_title(row_axis);
  if (row_axis == Axis::Bias)
    axes.row_labels.assign(static_cast<std::size_t>(rows), "bias");
  else if (row_axis == Axis::InDim)
    axes.row_labels = numbered(axis_label_prefix(row_axis), rows);
  else  // token rows; "r0", "r1", ... when they do not match the tokens
    axes.row_labels = rows == trace.num_tokens() ? trace.tokens : numbered("r", rows);
  if (col_axis == Axis::Key && cols == trace.num_tokens()) {
    axes.col_title = axis_title(Axis::Key);
    axes.col_labels = trace.tokens;
  } else {
    const Axis a = col_axis == Axis::Key ? Axis::Dim : col_axis;
    axes.col_title = axis_title(a);
    axes.col_labels = numbered(axis_label_prefix(a), cols);
  }
  return axes;
}

// ---------------------------------------------------------------------------
// 3. Writers

namespace {

// A CSV field, quoted when it contains a separator, a quote, a line break or
// surrounding spaces (RFC 4180: quotes inside are doubled).
void append_csv_field(std::string& out, std::string_view s) {
  const bool quote = s.find_first_of(",\"\r\n") != std::string_view::npos ||
                     (!s.empty() && (s.front() == ' ' || s.back() == ' ' || s.front() == '\t' ||
                                     s.back() == '\t'));
  if (!quote) {
    out += s;
    return;
  }
  out += '"';
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

}  // namespace

std::string stage_csv(const Trace& trace, const Stage& stage) {
  const StageAxes axes = stage_axes(trace, stage);
  const RowMatrix& m = stage.data();
  std::string out;
  out.reserve(static_cast<std::size_t>(m.size()) * 14 + 64);
  // Corner cell left empty: that is how a reader tells a label column from
  // data even when token names look like numbers (as pandas writes it too).
  for (const auto& label : axes.col_labels) {
    out += ',';
    append_csv_field(out, label);
  }
  out += '\n';
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    append_csv_field(out, axes.row_labels[static_cast<std::size_t>(r)]);
    for (Eigen::Index c = 0; c < m.cols(); ++c) {
      out += ',';
      append_float(out, m(r, c), "inf", "-inf", "nan");
    }
    out += '\n';
  }
  return out;
}

std::string matrix_npy(const RowMatrix& m) {
  // NPY v1.0: magic, version, uint16 LE header length, a Python dict literal
  // padded with spaces and ending in '\n' so that the data starts on a
  // 64-byte boundary (what numpy itself writes).
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(m.rows()) + ", " + std::to_string(m.cols()) + "), }";
  const std::size_t preamble = 10;
  const std::size_t total = (preamble + header.size() + 1 + 63) / 64 * 64;
  header.append(total - preamble - header.size() - 1, ' ');
  header += '\n';

  std::string out;
  const std::size_t data_bytes = static_cast<std::size_t>(m.size()) * sizeof(float);
  out.reserve(total + data_bytes);
  out += "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  const auto len = static_cast<std::uint16_t>(header.size());
  out += static_cast<char>(len & 0xFF);
  out += static_cast<char>(len >> 8);
  out += header;
  const std::size_t start = out.size();
  out.resize(start + data_bytes);
  if (data_bytes > 0)  // an empty matrix has no data pointer to copy from
    std::memcpy(out.data() + start, m.data(), data_bytes);  // RowMatrix: C order already
  if constexpr (std::endian::native == std::endian::big) {
    for (std::size_t k = start; k < out.size(); k += 4) {
      std::swap(out[k], out[k + 3]);
      std::swap(out[k + 1], out[k + 2]);
    }
  }
  return out;
}

std::string stage_json(const Trace& trace, const Stage& stage) {
  std::string out =
      "{\"id\": " + json_quoted(stage.id) + ", \"head\": " + std::to_string(stage.head) +
      ", \"variant\": " + json_quoted(variant_id(trace.config.variant)) + ",\n \"tokens\": [";
  for (std::size_t i = 0; i < trace.tokens.size(); ++i)
    out += (i ? ", " : "") + json_quoted(trace.tokens[i]);
  out += "],\n \"shape\": [" + std::to_string(stage.data().rows()) + ", " +
         std::to_string(stage.data().cols()) + "],\n \"data\": ";
  detail::append_json_rows(out, stage.data());
  out += "}\n";
  return out;
}

std::string matrix_torch(const RowMatrix& m) {
  // Laid out as torch prints a 2-D tensor: one row per line, aligned.
  std::string out = "torch.tensor([";
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    if (r) out += ",\n              ";
    out += "[";
    for (Eigen::Index c = 0; c < m.cols(); ++c) {
      if (c) out += ", ";
      append_float(out, m(r, c), "float('inf')", "float('-inf')", "float('nan')");
    }
    out += "]";
  }
  out += "])\n";
  return out;
}

std::string stage_file_bytes(const Trace& trace, const Stage& stage, DataFormat f) {
  switch (f) {
    case DataFormat::Csv:
      return stage_csv(trace, stage);
    case DataFormat::Npy:
      return matrix_npy(stage.data());
    case DataFormat::Json:
      return stage_json(trace, stage);
    case DataFormat::Torch:
      return matrix_torch(stage.data());
  }
  return {};
}

// ---------------------------------------------------------------------------
// 4. CSV reader

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

// ---------------------------------------------------------------------------
// 5. NPY reader

namespace {

// The parsed header dict of an .npy file.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;
};

// Reads numpy's header: a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
class NpyHeaderParser {
 public:
  NpyHeaderParser(std::string_view text, std::string_view source) : s_(text), source_(source) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      skip_space();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"')
          bad("the dtype is a structured type: save a plain float32 or float64 array");
        h.descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        have_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        have_shape = true;
      } else {
        bad("unknown header key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_space();
      if (peek() != '}') bad("expected ',' or '}'");
    }
    if (!have_descr || !have_order || !have_shape)
      bad("the header lacks 'descr', 'fortran_order' or 'shape'");
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& what) {
    fail(source_, "is not a valid .npy file: bad header (" + what + ")");
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string_literal() {
    skip_space();
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string");
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != q) out += s_[i_++];
    if (i_ >= s_.size()) bad("a string is not closed");
    ++i_;
    return out;
  }
  bool boolean() {
    if (s_.substr(i_).starts_with("True")) {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_).starts_with("False")) {
      i_ += 5;
      return false;
    }
    bad("fortran_order must be True or False");
  }
  std::vector<std::uint64_t> tuple() {
    expect('(');
    std::vector<std::uint64_t> dims;
    for (;;) {
      skip_space();
      if (peek() == ')') {
        ++i_;
        return dims;
      }
      std::uint64_t d = 0;
      const char* b = s_.data() + i_;
      const auto [ptr, ec] = std::from_chars(b, s_.data() + s_.size(), d);
      if (ec != std::errc() || ptr == b) bad("the shape must be a tuple of whole numbers");
      i_ += static_cast<std::size_t>(ptr - b);
      if (dims.size() > 32) bad("the shape has too many dimensions");
      dims.push_back(d);
      skip_space();
      if (peek() == ',')
        ++i_;
      else if (peek() != ')')
        bad("the shape must be a tuple of whole numbers");
    }
  }

  std::string_view s_;
  std::string_view source_;
  std::size_t i_ = 0;
};

std::string shape_tuple(const std::vector<std::uint64_t>& dims) {
  std::string s = "(";
  for (std::size_t k = 0; k < dims.size(); ++k) s += (k ? ", " : "") + std::to_string(dims[k]);
  if (dims.size() == 1) s += ",";
  return s + ")";
}

std::uint32_t read_le32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

}  // namespace

RowMatrix parse_npy(std::string_view bytes, std::string_view source, NpyRank rank,
                    NonFinite nonfinite) {
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 10 || !bytes.starts_with("\x93NUMPY"))
    fail(source, "is not a .npy file (it does not start with the NumPy magic \\x93NUMPY)");
  const unsigned major = u[6];
  std::size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<std::size_t>(u[8]) | static_cast<std::size_t>(u[9]) << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(source, "is not a valid .npy file: the header is truncated");
    header_len = read_le32(u + 8);
    header_start = 12;
  } else {
    fail(source, "has .npy format version " + std::to_string(major) + "." + std::to_string(u[7]) +
                     ", which is not supported (1.0, 2.0 and 3.0 are)");
  }
  if (header_start + header_len > bytes.size())
    fail(source, "is not a valid .npy file: the header is truncated");
  const NpyHeader h = NpyHeaderParser(bytes.substr(header_start, header_len), source).parse();

  std::size_t item = 0;
  bool big_endian = false;
  const std::string& d = h.descr;
  if (d.size() == 3 && (d[0] == '<' || d[0] == '>' || d[0] == '=') && d[1] == 'f' &&
      (d[2] == '4' || d[2] == '8')) {
    item = d[2] == '4' ? 4 : 8;
    big_endian = d[0] == '>' || (d[0] == '=' && std::endian::native == std::endian::big);
  } else {
    fail(source, "has dtype '" + d +
                     "', which is not supported: save float32 or float64 "
                     "(np.save(path, a.astype(np.float32)))");
  }
  if (h.fortran_order)
    fail(source,
         "is stored in Fortran order (fortran_order is True): save a C-ordered array "
         "(np.save(path, np.ascontiguousarray(a)))");

  const auto& dims = h.shape;
  const bool vector_ok = rank == NpyRank::MatrixOrVector;
  if (dims.size() != 2 && !(vector_ok && dims.size() == 1))
    fail(source, "has shape " + shape_tuple(dims) + ": expected a 2-D array" +
                     (vector_ok ? " (or 1-D for a bias)" : ""));
  const std::uint64_t rows = dims.size() == 2 ? dims[0] : 1;
  const std::uint64_t cols = dims.size() == 2 ? dims[1] : dims[0];
  if (rows == 0 || cols == 0) fail(source, "has shape " + shape_tuple(dims) + ": it is empty");
  // Sizes are checked before anything is allocated or read.
  if (rows > kMaxEntries || cols > kMaxEntries)
    fail(source, "has shape " + shape_tuple(dims) + ": at most " + std::to_string(kMaxEntries) +
                     " rows and " + std::to_string(kMaxEntries) + " columns are supported");
  const std::size_t count = static_cast<std::size_t>(rows * cols);
  const std::size_t need = count * item;
  const std::size_t have = bytes.size() - header_start - header_len;
  if (have < need)
    fail(source, "is truncated: shape " + shape_tuple(dims) + " of " +
                     (item == 4 ? "float32" : "float64") + " needs " + std::to_string(need) +
                     " bytes of data, the file has " + std::to_string(have));
  if (have > need)
    fail(source, "has " + std::to_string(have - need) + " bytes after the data of shape " +
                     shape_tuple(dims) + ": it is not a single array");

  const unsigned char* p = u + header_start + header_len;
  RowMatrix m(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  for (std::size_t k = 0; k < count; ++k, p += item) {
    unsigned char b[8];
    for (std::size_t j = 0; j < item; ++j) b[j] = big_endian ? p[item - 1 - j] : p[j];
    double v = 0;
    if (item == 4) {
      float f = 0;
      std::uint32_t w = read_le32(b);
      std::memcpy(&f, &w, 4);
      v = f;
    } else {
      std::uint64_t w = static_cast<std::uint64_t>(read_le32(b)) |
                        static_cast<std::uint64_t>(read_le32(b + 4)) << 32;
      std::memcpy(&v, &w, 8);
    }
    const std::size_t r = k / cols, c = k % cols;
    const std::string where = dims.size() == 2
                                  ? "[" + std::to_string(r) + ", " + std::to_string(c) + "]"
                                  : "[" + std::to_string(c) + "]";
    if (!std::isfinite(v) && nonfinite == NonFinite::Reject)
      fail(source, "the value at index " + where + " is " +
                       (std::isnan(v) ? "nan"
                        : v > 0       ? "inf"
                                      : "-inf") +
                       ": every value must be a finite number");
    if (std::isfinite(v) && std::fabs(v) > static_cast<double>(FLT_MAX)) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%g", v);
      fail(source, "the value at index " + where + " (" + buf +
                       ") is too large for a 32-bit float (max about 3.4e38)");
    }
    m.data()[k] = static_cast<float>(v);
  }
  return m;
}

// ---------------------------------------------------------------------------
// 6. Stage JSON reader

StageFile parse_stage_json(std::string_view text, std::string_view source) {
  const json doc = detail::parse_json_document(text, source);
  if (!doc.is_object()) fail(source, "must be a JSON object, got " + json_type_name(doc));
  StageFile out;
  for (const char* key : {"id", "head", "variant", "tokens", "shape", "data"})
    if (!doc.contains(key)) fail(source, std::string("has no \"") + key + "\" field");
  if (!doc["id"].is_string()) fail(source, "id must be a string");
  if (!doc["head"].is_number_integer() || doc["head"].get<long long>() < -1 ||
      doc["head"].get<long long>() >= kMaxHeads)
    fail(source, "head must be a whole number from -1 to " + std::to_string(kMaxHeads - 1));
  if (!doc["variant"].is_string()) fail(source, "variant must be a string");
  out.stage.id = doc["id"].get<std::string>();
  out.stage.head = doc["head"].get<int>();
  out.variant = doc["variant"].get<std::string>();
  if (!doc["tokens"].is_array()) fail(source, "tokens must be a list of strings");
  for (const auto& t : doc["tokens"]) {
    if (!t.is_string()) fail(source, "tokens must be a list of strings");
    out.tokens.push_back(t.get<std::string>());
  }
  out.stage.mutable_data() = detail::json_matrix(doc["data"], source, "data", false, NonFinite::Allow);
  const json& shape = doc["shape"];
  if (!shape.is_array() || shape.size() != 2 || !shape[0].is_number_integer() ||
      !shape[1].is_number_integer() || shape[0].get<long long>() != out.stage.data().rows() ||
      shape[1].get<long long>() != out.stage.data().cols())
    fail(source, "shape " + shape.dump() + " does not match the data (" +
                     shape_text(out.stage.data().rows(), out.stage.data().cols()) + ")");
  return out;
}

// ---------------------------------------------------------------------------
// 7. Embeddings import

EmbeddingFormat detect_embedding_format(const std::filesystem::path& path, std::string_view bytes) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".csv" || ext == ".txt") return EmbeddingFormat::Csv;
  if (ext == ".npy") return EmbeddingFormat::Npy;
  if (ext == ".json") return EmbeddingFormat::Json;
  if (bytes.starts_with("\x93NUMPY")) return EmbeddingFormat::Npy;
  const auto first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (bytes[first] == '[' || bytes[first] == '{'))
    return EmbeddingFormat::Json;
  return EmbeddingFormat::Csv;
}

namespace {

void check_embedding_size(const RowMatrix& m, std::string_view source) {
  if (m.rows() > kMaxTokens)
    fail(source, "has " + std::to_string(m.rows()) + " rows: at most " +
                     std::to_string(kMaxTokens) + " tokens are supported");
  if (m.cols() > kMaxDim)
    fail(source, "has " + std::to_string(m.cols()) + " columns: d_in is at most " +
                     std::to_string(kMaxDim));
}

}  // namespace

ImportedEmbeddings parse_embeddings(std::string_view bytes, std::string_view source,
                                    EmbeddingFormat format) {
  ImportedEmbeddings out;
  switch (format) {
    case EmbeddingFormat::Csv: {
      Table t = parse_csv_table(bytes, source, NonFinite::Reject);
      out.tokens = std::move(t.row_labels);
      out.embeddings = std::move(t.values);
      break;
    }
    case EmbeddingFormat::Npy:
      out.embeddings = parse_npy(bytes, source, NpyRank::Matrix, NonFinite::Reject);
      break;
    case EmbeddingFormat::Json: {
      const json doc = detail::parse_json_document(bytes, source);
      const json* rows = &doc;
      if (doc.is_object()) {
        if (doc.contains("id") && doc.contains("data")) {
          // A stage exported as JSON (stage_json): any stage whose rows are
          // tokens can be fed back in as embeddings.
          StageFile f = parse_stage_json(bytes, source);
          if (is_parameter(f.stage.id))
            fail(source, "holds the parameter " + f.stage.id + ", whose rows are not tokens");
          const RowMatrix& d = f.stage.data();
          for (Eigen::Index r = 0; r < d.rows(); ++r)
            for (Eigen::Index c = 0; c < d.cols(); ++c)
              if (!std::isfinite(d(r, c)))
                fail(source, "data[" + std::to_string(r) + "][" + std::to_string(c) + "] is " +
                                 (std::isnan(d(r, c)) ? "nan"
                                  : d(r, c) > 0       ? "inf"
                                                      : "-inf") +
                                 ": every value must be a finite number");
          if (f.tokens.size() == static_cast<std::size_t>(d.rows()))
            out.tokens = std::move(f.tokens);
          out.embeddings = f.stage.data();
          break;
        }
        for (const auto& [key, value] : doc.items())
          if (key != "tokens" && key != "embeddings" && key != "description")
            fail(source, "unknown field '" + key +
                             "': an embeddings file holds only \"tokens\" and \"embeddings\" "
                             "(a run's config goes to --config)");
        if (!doc.contains("embeddings"))
          fail(source,
               "has no \"embeddings\" field: expected {\"tokens\": [...], "
               "\"embeddings\": [[...], ...]} or a list of rows");
        rows = &doc["embeddings"];
        if (doc.contains("tokens")) {
          const json& tokens = doc["tokens"];
          if (!tokens.is_array())
            fail(source, "tokens must be a list of strings, got " + json_type_name(tokens));
          for (std::size_t i = 0; i < tokens.size(); ++i) {
            if (!tokens[i].is_string())
              fail(source, "tokens[" + std::to_string(i) + "] must be a string, got " +
                               json_type_name(tokens[i]));
            out.tokens.push_back(tokens[i].get<std::string>());
          }
        }
      } else if (!doc.is_array()) {
        fail(source,
             "must be a list of rows or an object {\"tokens\": [...], \"embeddings\": "
             "[[...], ...]}, got " +
                 json_type_name(doc));
      }
      out.embeddings = detail::json_matrix(*rows, source, "embeddings", false, NonFinite::Reject);
      break;
    }
  }
  check_embedding_size(out.embeddings, source);
  if (!out.tokens.empty() && out.tokens.size() != static_cast<std::size_t>(out.embeddings.rows()))
    fail(source, std::to_string(out.tokens.size()) + " token names for " +
                     std::to_string(out.embeddings.rows()) +
                     " rows of embeddings: give exactly one name per row");
  return out;
}

ImportedEmbeddings read_embeddings_file(const std::filesystem::path& path) {
  const std::string bytes = read_import_file(path);
  return parse_embeddings(bytes, path.string(), detect_embedding_format(path, bytes));
}

Inputs apply_embeddings(const ImportedEmbeddings& imported,
                        const std::vector<std::string>& current_tokens, std::string_view source) {
  Inputs inputs;
  inputs.embeddings = imported.embeddings;
  const auto T = static_cast<std::size_t>(imported.embeddings.rows());
  if (!imported.tokens.empty()) {
    if (imported.tokens.size() != T)
      fail(source, std::to_string(imported.tokens.size()) + " token names for " +
                       std::to_string(T) + " rows: give exactly one name per row");
    for (std::size_t i = 0; i < T; ++i)
      if (!detail::valid_utf8(imported.tokens[i]))
        fail(source, "token name " + std::to_string(i) + " is not valid UTF-8 text");
    inputs.tokens = imported.tokens;
  } else if (current_tokens.empty()) {
    for (std::size_t t = 0; t < T; ++t) {
      std::string name = std::to_string(t);
      name.insert(name.begin(), 't');
      inputs.tokens.push_back(std::move(name));
    }
  } else if (current_tokens.size() == T) {
    inputs.tokens = current_tokens;
  } else {
    fail(source, "has " + std::to_string(T) + (T == 1 ? " row" : " rows") + " but there are " +
                     std::to_string(current_tokens.size()) +
                     (current_tokens.size() == 1 ? " token" : " tokens") +
                     ": give one row per token, or name the tokens in the file "
                     "(a first column in CSV, \"tokens\" in JSON)");
  }
  return inputs;
}

// ---------------------------------------------------------------------------
// 8. Exporting

std::vector<std::filesystem::path> export_stages(const Trace& trace,
                                                 const std::vector<const Stage*>& stages,
                                                 const std::filesystem::path& dir,
                                                 std::string_view ext, const StageRenderer& render,
                                                 std::chrono::system_clock::time_point t) {
  require_folder(dir);
  const std::string variant(variant_id(trace.config.variant));
  std::vector<std::filesystem::path> written;
  try {
    for (const Stage* st : stages)
      written.push_back(
          write_new_file(dir, export_stem(st->id, st->head, variant, t), ext, render(trace, *st)));
  } catch (...) {
    // Take back this call's files: a half export is harder to use than none.
    std::error_code ec;
    for (const auto& p : written) std::filesystem::remove(p, ec);
    throw;
  }
  return written;
}

StageRenderer data_renderer(DataFormat f) {
  return [f](const Trace& trace, const Stage& stage) { return stage_file_bytes(trace, stage, f); };
}

}  // namespace attnscope::core
