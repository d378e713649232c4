// svg.cpp: heatmap_svg(). Layout, top to bottom: title, column labels
// (rotated), then the grid with row labels on its left and the colour bar on
// its right.
#include "figure/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

namespace attnscope::figure {

namespace {

constexpr const char* kMaskedFill = "#5c5c5c";
constexpr const char* kNanFill = "#ff00ff";

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// A value as printed in a cell or on the colour bar.
std::string value_text(double v, bool short_form) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v))
    return v > 0 ? "+\xE2\x88\x9E" : "\xE2\x88\x92\xE2\x88\x9E";  // +inf, U+2212 inf
  char buf[32];
  if (short_form && std::fabs(v) < 100)
    std::snprintf(buf, sizeof buf, "%.2f", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  std::string s = buf;
  if (s == "-0.00") s = "0.00";
  if (!s.empty() && s[0] == '-') s = "\xE2\x88\x92" + s.substr(1);  // a real minus sign
  return s;
}

// Length of a UTF-8 string in characters (for width estimates).
std::size_t char_count(const std::string& s) {
  std::size_t n = 0;
  for (const char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  const std::string replacement = "\xEF\xBF\xBD";  // U+FFFD
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&apos;";
          break;
        default:
          if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
            out += replacement;
          else
            out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A multi-byte sequence: copied when well-formed, else one U+FFFD per byte.
    std::size_t n = (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 0;
    std::uint32_t cp = n == 1 ? (c & 0x1Fu) : n == 2 ? (c & 0x0Fu) : (c & 0x07u);
    bool ok = n > 0 && i + n < s.size();
    for (std::size_t k = 1; ok && k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3Fu);
    }
    if (ok && ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
               (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF || cp == 0xFFFE || cp == 0xFFFF))
      ok = false;
    if (!ok) {
      out += replacement;
      ++i;
      continue;
    }
    out.append(s, i, n + 1);
    i += n + 1;
  }
  return out;
}

bool svg_supported(int rows, int cols) {
  return rows >= 1 && cols >= 1 && static_cast<long long>(rows) * cols <= kMaxSvgCells;
}

std::string heatmap_svg(const Heatmap& h) {
  if (!svg_supported(h.rows, h.cols))
    throw std::invalid_argument("a " + std::to_string(h.rows) + "x" + std::to_string(h.cols) +
                                " matrix is too large for SVG (at most " +
                                std::to_string(kMaxSvgCells) + " cells)");
  const auto rows = static_cast<std::size_t>(h.rows), cols = static_cast<std::size_t>(h.cols);
  if (h.values.size() != rows * cols || h.row_labels.size() != rows || h.col_labels.size() != cols)
    throw std::invalid_argument("heatmap labels or values do not match its shape");

  const bool small = h.rows <= kMaxValueLabelSide && h.cols <= kMaxValueLabelSide;
  const int side = std::max(h.rows, h.cols);
  const double cell = small ? 48.0 : std::clamp(640.0 / side, 1.0, 48.0);
  const double label_font = std::clamp(cell * 0.7, 3.0, 12.0);
  const double value_font = std::clamp(cell * 0.26, 6.0, 12.0);

  std::size_t longest_row = 1, longest_col = 1;
  for (const auto& l : h.row_labels) longest_row = std::max(longest_row, char_count(l));
  for (const auto& l : h.col_labels) longest_col = std::max(longest_col, char_count(l));
  const double char_w = label_font * 0.6;
  const double margin = 12;
  const double title_h = 30;
  // The axis names ("query ↓  key →") sit left of the grid's top edge.
  const std::string axes =
      h.row_title.empty()   ? (h.col_title.empty() ? "" : h.col_title + " \xE2\x86\x92")
      : h.col_title.empty() ? h.row_title + " \xE2\x86\x93"
                            : h.row_title + " \xE2\x86\x93  " + h.col_title + " \xE2\x86\x92";
  const double axes_w = static_cast<double>(char_count(axes)) * 11 * 0.6 + 8;
  const double left =
      margin + std::max(axes_w, std::min(240.0, static_cast<double>(longest_row) * char_w + 8));
  const double top = title_h + std::min(240.0, static_cast<double>(longest_col) * char_w + 10);
  const double grid_w = cell * h.cols, grid_h = cell * h.rows;
  const double bar_x = left + grid_w + 16, bar_w = 14, bar_h = std::max(grid_h, 100.0);
  const double title_w = 2 * margin + static_cast<double>(char_count(h.title)) * 15 * 0.62;
  const double width = std::max(bar_x + bar_w + 70, title_w);
  const double height = top + std::max(grid_h, bar_h) + margin + 16;

  const Range range = value_range(h.scale, h.values.data(), h.values.size());
  std::string out;
  out.reserve(rows * cols * 90 + 4096);
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" +
         num(height) + "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n";
  out += "<title>" + xml_escape(h.title) + "</title>\n";
  // Masked cells: grey with light diagonal hatching, so they never read as a value.
  out +=
      "<defs>\n<pattern id=\"hatch\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" "
      "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"" +
      std::string(kMaskedFill) +
      "\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#969696\" "
      "stroke-width=\"2\"/></pattern>\n";
  out += "<linearGradient id=\"bar\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
  for (int k = 0; k <= 10; ++k)
    out += "<stop offset=\"" + num(k / 10.0) + "\" stop-color=\"" + hex(sample(h.scale, k / 10.0)) +
           "\"/>";
  out += "</linearGradient>\n</defs>\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text class=\"title\" x=\"" + num(margin) +
         "\" y=\"20\" font-size=\"15\" font-weight=\"bold\">" + xml_escape(h.title) + "</text>\n";
  if (!axes.empty()) {
    out += "<text class=\"axes\" x=\"" + num(margin) + "\" y=\"" + num(top - 6) +
           "\" font-size=\"11\" fill=\"#555555\">" + xml_escape(axes) + "</text>\n";
  }

  // Column labels, rotated to read upwards, anchored just above their column.
  out += "<g class=\"col-labels\" font-size=\"" + num(label_font) + "\">\n";
  for (std::size_t c = 0; c < cols; ++c) {
    const double x = left + cell * (static_cast<double>(c) + 0.5);
    const double y = top - 4;
    out += "<text class=\"col-label\" x=\"" + num(x) + "\" y=\"" + num(y) +
           "\" transform=\"rotate(-60 " + num(x) + " " + num(y) + ")\">" +
           xml_escape(h.col_labels[c]) + "</text>\n";
  }
  out +=
      "</g>\n<g class=\"row-labels\" font-size=\"" + num(label_font) + "\" text-anchor=\"end\">\n";
  for (std::size_t r = 0; r < rows; ++r) {
    out += "<text class=\"row-label\" x=\"" + num(left - 4) + "\" y=\"" +
           num(top + cell * (static_cast<double>(r) + 0.5) + label_font * 0.35) + "\">" +
           xml_escape(h.row_labels[r]) + "</text>\n";
  }
  out += "</g>\n";

  // The grid: one rect per cell, then the value texts of small matrices.
  out += "<g class=\"cells\" shape-rendering=\"crispEdges\">\n";
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const float v = h.values[r * cols + c];
      std::string cls = "cell", fill;
      if (std::isnan(v)) {
        cls += " nan";
        fill = kNanFill;
      } else if (std::isinf(v)) {
        cls += " masked";
        fill = "url(#hatch)";
      } else {
        fill = hex(sample(h.scale, position(range, v)));
      }
      out += "<rect class=\"" + cls + "\" x=\"" + num(left + cell * static_cast<double>(c)) +
             "\" y=\"" + num(top + cell * static_cast<double>(r)) + "\" width=\"" + num(cell) +
             "\" height=\"" + num(cell) + "\" fill=\"" + fill + "\"/>\n";
    }
  out += "</g>\n";
  // Masked cells keep their "−∞" label at every size that can hold text.
  if (small || cell >= 14) {
    out += "<g class=\"values\" font-size=\"" + num(value_font) + "\" text-anchor=\"middle\">\n";
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) {
        const float v = h.values[r * cols + c];
        if (!small && std::isfinite(v)) continue;
        const bool finite = std::isfinite(v);
        const bool dark = finite ? prefers_dark_text(sample(h.scale, position(range, v))) : false;
        out += "<text class=\"value\" x=\"" + num(left + cell * (static_cast<double>(c) + 0.5)) +
               "\" y=\"" + num(top + cell * (static_cast<double>(r) + 0.5) + value_font * 0.35) +
               "\" fill=\"" + (dark ? "#000000" : "#ffffff") + "\">" + value_text(v, true) +
               "</text>\n";
      }
    out += "</g>\n";
  }

  // Colour bar: the scale from min (bottom) to max (top).
  out += "<g class=\"colorbar\" font-size=\"11\">\n";
  out += "<rect x=\"" + num(bar_x) + "\" y=\"" + num(top) + "\" width=\"" + num(bar_w) +
         "\" height=\"" + num(bar_h) +
         "\" fill=\"url(#bar)\" stroke=\"#888888\" stroke-width=\"0.5\"/>\n";
  out += "<text class=\"max\" x=\"" + num(bar_x + bar_w + 4) + "\" y=\"" + num(top + 9) + "\">" +
         value_text(range.hi, false) + "</text>\n";
  out += "<text class=\"min\" x=\"" + num(bar_x + bar_w + 4) + "\" y=\"" + num(top + bar_h) +
         "\">" + value_text(range.lo, false) + "</text>\n";
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace attnscope::figure
