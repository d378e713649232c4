// json_formats.cpp: the JSON side of the formats: the private helpers of
// json_matrix.hpp (documents, matrices, numbers, UTF-8), shared by the
// readers of formats, weights, sessions and configs, and the stage JSON
// reader (parse_stage_json).
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

std::string shape_text(Eigen::Index rows, Eigen::Index cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

}  // namespace

// ---------------------------------------------------------------------------
// JSON helpers (json_matrix.hpp)

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
                     "): at most " + std::to_string(kMaxEntries) +
                     " rows and columns are supported");
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
// Stage JSON reader

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
  if (doc.contains("layer")) {  // absent in files written before stages had a layer: 0
    const json& layer = doc["layer"];
    if (!layer.is_number_integer() || layer.get<long long>() < 0 ||
        layer.get<long long>() >= kMaxLayers)
      fail(source, "layer must be a whole number from 0 to " + std::to_string(kMaxLayers - 1));
    out.stage.layer = layer.get<int>();
  }
  out.variant = doc["variant"].get<std::string>();
  if (!doc["tokens"].is_array()) fail(source, "tokens must be a list of strings");
  for (const auto& t : doc["tokens"]) {
    if (!t.is_string()) fail(source, "tokens must be a list of strings");
    out.tokens.push_back(t.get<std::string>());
  }
  out.stage.mutable_data() =
      detail::json_matrix(doc["data"], source, "data", false, NonFinite::Allow);
  const json& shape = doc["shape"];
  if (!shape.is_array() || shape.size() != 2 || !shape[0].is_number_integer() ||
      !shape[1].is_number_integer() || shape[0].get<long long>() != out.stage.data().rows() ||
      shape[1].get<long long>() != out.stage.data().cols())
    fail(source, "shape " + shape.dump() + " does not match the data (" +
                     shape_text(out.stage.data().rows(), out.stage.data().cols()) + ")");
  return out;
}

}  // namespace attnscope::core
