// svg.cpp: a laid-out figure (heatmap_figure.hpp) as SVG elements, in the
// scene's drawing order.
#include "figure/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

namespace attnscope::figure {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string paint(Rgba8 c) {
  std::string s = "\"" + hex(c) + "\"";
  return s;
}

// fill="#rrggbb" plus fill-opacity when not opaque (or stroke=...).
std::string colour_attr(const char* name, Rgba8 c) {
  std::string s = std::string(" ") + name + "=" + paint(c);
  if (c.a != 255) s += std::string(" ") + name + "-opacity=\"" + num(c.a / 255.0) + "\"";
  return s;
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

std::string scene_svg(const Scene& sc) {
  const CellGrid& g = sc.grid;
  const auto rows = static_cast<std::size_t>(g.rows()), cols = static_cast<std::size_t>(g.cols());
  std::string out;
  out.reserve(rows * cols * 90 + sc.texts.size() * 120 + 4096);
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(sc.width) + "\" height=\"" +
         num(sc.height) + "\" viewBox=\"0 0 " + num(sc.width) + " " + num(sc.height) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n";
  out += "<title>" + xml_escape(sc.title) + "</title>\n<defs>\n";
  // Masked cells: the app's masked colour with lighter diagonal hatching, so
  // they never read as a value.
  const double sp = g.hatch_spacing > 0 ? g.hatch_spacing : 6;
  out += "<pattern id=\"hatch\" patternUnits=\"userSpaceOnUse\" width=\"" + num(sp) +
         "\" height=\"" + num(sp) + "\" patternTransform=\"rotate(-45)\"><rect width=\"" + num(sp) +
         "\" height=\"" + num(sp) + "\" fill=" + paint(g.masked_fill) + "/>";
  if (g.hatch_spacing > 0)
    out += "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"" + num(sp) +
           "\" stroke=" + paint(g.masked_hatch) + " stroke-width=\"1.5\"/>";
  out += "</pattern>\n";
  for (std::size_t k = 0; k < sc.gradients.size(); ++k) {
    out +=
        "<linearGradient id=\"bar" + std::to_string(k) + "\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
    constexpr int kStops = 32;
    for (int i = 0; i <= kStops; ++i) {
      const float t = static_cast<float>(i) / kStops;
      out += "<stop offset=\"" + num(t) + "\" stop-color=" + paint(sample(sc.gradients[k].map, t)) +
             "/>";
    }
    out += "</linearGradient>\n";
  }
  out +=
      "</defs>\n<rect width=\"100%\" height=\"100%\"" + colour_attr("fill", sc.background) + "/>\n";

  // The grid: one rect per cell.
  out += "<g class=\"cells\" shape-rendering=\"crispEdges\">\n";
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const auto mark = g.marks[r * cols + c];
      std::string cls = "cell", fill;
      if (mark == CellGrid::NotANumber) {
        cls += " nan";
        fill = paint(kNanFill);
      } else if (mark == CellGrid::Masked) {
        cls += " masked";
        fill = "\"url(#hatch)\"";
      } else {
        fill = paint(g.colors.at(static_cast<int>(c), static_cast<int>(r)));
      }
      out += "<rect class=\"" + cls + "\" x=\"" + num(g.x + g.cell * static_cast<double>(c)) +
             "\" y=\"" + num(g.y + g.cell * static_cast<double>(r)) + "\" width=\"" + num(g.cell) +
             "\" height=\"" + num(g.cell) + "\" fill=" + fill + "/>\n";
    }
  out += "</g>\n";
  if (g.hairlines) {
    const double x1 = g.x + g.cell * static_cast<double>(cols);
    const double y1 = g.y + g.cell * static_cast<double>(rows);
    out += "<g class=\"grid\"" + colour_attr("stroke", g.lines) + " stroke-width=\"1\">\n";
    for (std::size_t c = 1; c < cols; ++c) {
      const double x = g.x + g.cell * static_cast<double>(c);
      out += "<line x1=\"" + num(x) + "\" y1=\"" + num(g.y) + "\" x2=\"" + num(x) + "\" y2=\"" +
             num(y1) + "\"/>\n";
    }
    for (std::size_t r = 1; r < rows; ++r) {
      const double y = g.y + g.cell * static_cast<double>(r);
      out += "<line x1=\"" + num(g.x) + "\" y1=\"" + num(y) + "\" x2=\"" + num(x1) + "\" y2=\"" +
             num(y) + "\"/>\n";
    }
    out += "</g>\n";
  }

  for (const RectItem& r : sc.rects) {
    out += "<rect class=\"" + r.role + "\" x=\"" + num(r.x) + "\" y=\"" + num(r.y) + "\" width=\"" +
           num(r.w) + "\" height=\"" + num(r.h) + "\"";
    out += r.hatched ? std::string(" fill=\"url(#hatch)\"") : colour_attr("fill", r.fill);
    if (r.outlined) out += colour_attr("stroke", r.stroke) + " stroke-width=\"0.5\"";
    out += "/>\n";
  }
  for (std::size_t k = 0; k < sc.gradients.size(); ++k) {
    const GradientItem& gr = sc.gradients[k];
    out += "<rect class=\"" + gr.role + "\" x=\"" + num(gr.x) + "\" y=\"" + num(gr.y) +
           "\" width=\"" + num(gr.w) + "\" height=\"" + num(gr.h) + "\" fill=\"url(#bar" +
           std::to_string(k) + ")\"" + colour_attr("stroke", gr.frame) +
           " stroke-width=\"0.5\"/>\n";
  }
  for (const LineItem& l : sc.lines)
    out += "<line class=\"" + l.role + "\" x1=\"" + num(l.x1) + "\" y1=\"" + num(l.y1) +
           "\" x2=\"" + num(l.x2) + "\" y2=\"" + num(l.y2) + "\"" + colour_attr("stroke", l.color) +
           " stroke-width=\"" + num(l.width) + "\"/>\n";

  // Texts: y is the line's centre; the baseline sits 0.36 em below it.
  for (const TextItem& t : sc.texts) {
    const char* anchor = t.anchor == Anchor::Start    ? "start"
                         : t.anchor == Anchor::Middle ? "middle"
                                                      : "end";
    out += "<text class=\"" + t.role + "\" x=\"" + num(t.x) + "\" y=\"" + num(t.y + 0.36 * t.size) +
           "\" font-size=\"" + num(t.size) + "\"" + colour_attr("fill", t.color);
    if (t.anchor != Anchor::Start) out += std::string(" text-anchor=\"") + anchor + "\"";
    if (t.bold) out += " font-weight=\"bold\"";
    if (t.angle != 0)
      out += " transform=\"rotate(" + num(t.angle) + " " + num(t.x) + " " + num(t.y) + ")\"";
    out += ">" + xml_escape(t.text) + "</text>\n";
  }
  out += "</svg>\n";
  return out;
}

std::string heatmap_svg(const Heatmap& h) {
  if (!svg_supported(h.rows(), h.cols()))
    throw std::invalid_argument("a " + std::to_string(h.rows()) + "x" + std::to_string(h.cols()) +
                                " matrix is too large for SVG (at most " +
                                std::to_string(kMaxSvgCells) + " cells)");
  return scene_svg(layout_heatmap(h));
}

}  // namespace attnscope::figure
