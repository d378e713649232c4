// figure_test.cpp: colour scales, value ranges, XML escaping, the heatmap
// figure layout and the structure of heatmap SVGs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnscope/attention/attention.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/io/io.hpp"
#include "attnscope/model/gpt2_model.hpp"
#include "attnscope/model/model_trace.hpp"
#include "figure/colormap.hpp"
#include "figure/head_grid_figure.hpp"
#include "figure/heatmap_figure.hpp"
#include "figure/scale.hpp"
#include "figure/stage_figure.hpp"
#include "figure/svg.hpp"
#include "figure/theme.hpp"

namespace attnscope::figure {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1))
    ++n;
  return n;
}

TEST(Colormap, ViridisRunsFromPurpleToYellow) {
  EXPECT_EQ(hex(sample(Colormap::Viridis, 0)), "#440154");
  EXPECT_EQ(hex(sample(Colormap::Viridis, 1)), "#fde725");
  EXPECT_EQ(sample(Colormap::Viridis, -3), sample(Colormap::Viridis, 0));
  EXPECT_EQ(sample(Colormap::Viridis, 7), sample(Colormap::Viridis, 1));
  EXPECT_EQ(sample(Colormap::Viridis, std::nanf("")), sample(Colormap::Viridis, 0));
}

TEST(Colormap, DivergingScaleIsBlueNearWhiteRed) {
  const Rgba8 lo = sample(Colormap::RdBu, 0), mid = sample(Colormap::RdBu, 0.5f),
              hi = sample(Colormap::RdBu, 1);
  EXPECT_GT(lo.b, lo.r);
  EXPECT_EQ(mid, (Rgba8{0xf7, 0xf7, 0xf7, 255}));
  EXPECT_GT(hi.r, hi.b);
}

TEST(Colormap, TextIsDarkOnLightColoursAndLightOnDarkOnes) {
  EXPECT_EQ(text_color_on(Rgba8{255, 255, 255, 255}), (Rgba8{0, 0, 0, 255}));
  EXPECT_EQ(text_color_on(sample(Colormap::Viridis, 1)), (Rgba8{0, 0, 0, 255}));
  EXPECT_EQ(text_color_on(sample(Colormap::Viridis, 0)), (Rgba8{255, 255, 255, 255}));
  EXPECT_EQ(text_color_on(sample(Colormap::RdBu, 0)), (Rgba8{255, 255, 255, 255}));
}

using core::matrix_from_rows;

TEST(ValueRange, IsSymmetricForDivergingAndIgnoresInfinities) {
  const core::RowMatrix m = matrix_from_rows({{-0.5f, 2.0f, -kInf, std::nanf("")}});
  const ValueRange d = value_range(m, ScaleKind::Diverging);
  EXPECT_EQ(d.lo, -2.0f);
  EXPECT_EQ(d.hi, 2.0f);
  EXPECT_EQ(d.neg_inf, 1);
  EXPECT_EQ(d.nan, 1);
  const ValueRange s = value_range(m, ScaleKind::Sequential);
  EXPECT_EQ(s.lo, -0.5f);
  EXPECT_EQ(s.hi, 2.0f);
  EXPECT_EQ(scale_position(0.0f, d), 0.5f);
}

// Values near float32's limit: hi - lo = 6e38 overflowed float, the position
// became inf / inf = NaN and colorize() read its colour table at index
// lround(NaN) (found by the sanitized GUI tests on embeddings of 3e38).
TEST(ValueRange, ValuesNearTheFloatLimitStillGetColoursAtTheEnds) {
  constexpr float kMax = std::numeric_limits<float>::max();
  const core::RowMatrix m = matrix_from_rows({{-kMax, -3e38f, 0.0f, 3e38f, kMax}});
  for (ScaleKind kind : {ScaleKind::Diverging, ScaleKind::Sequential}) {
    const ValueRange r = value_range(m, kind);
    EXPECT_EQ(scale_position(-kMax, r), 0.0f);
    EXPECT_EQ(scale_position(kMax, r), 1.0f);
    const float mid = scale_position(0.0f, r);
    EXPECT_TRUE(mid > 0.0f && mid < 1.0f) << mid;
    const RgbaImage img = colorize(m, r, colormap_for(Palette::Standard, kind));
    ASSERT_EQ(img.width, 5);
    EXPECT_EQ(img.at(0, 0), sample(colormap_for(Palette::Standard, kind), 0.0f));
    EXPECT_EQ(img.at(4, 0), sample(colormap_for(Palette::Standard, kind), 1.0f));
  }
  // Not finite: the low end, never NaN (the cells themselves get their own fills).
  const ValueRange r = value_range(m, ScaleKind::Diverging);
  EXPECT_EQ(scale_position(std::nanf(""), r), 0.0f);
}

// value_range and colorize run vectorized (AVX2 / AVX) in the native build;
// these are their readable definitions, cell by cell.
// What value_range scans (its scale ends follow from these, unchanged).
ValueRange plain_scan(const core::RowMatrix& m) {
  ValueRange r;
  float lo = kInf, hi = -kInf;
  for (Eigen::Index k = 0; k < m.size(); ++k) {
    const float v = m.data()[k];
    if (std::isnan(v)) {
      ++r.nan;
    } else if (std::isinf(v)) {
      ++(v < 0 ? r.neg_inf : r.pos_inf);
    } else {
      ++r.finite;
      lo = std::min(lo, v);  // of equal values the first stays
      hi = std::max(hi, v);
    }
  }
  r.data_min = r.finite > 0 ? lo : 0.0f;
  r.data_max = r.finite > 0 ? hi : 0.0f;
  return r;
}

Rgba8 plain_color(float v, const ValueRange& r, Colormap map) {
  if (std::isnan(v)) return kNanFill;
  if (std::isinf(v)) return masked_fill(map);
  return sample(map, static_cast<float>(std::lround(scale_position(v, r) * 255.0f)) / 255.0f);
}

void expect_same_bits(float a, float b, const char* what) {
  EXPECT_EQ(std::signbit(a), std::signbit(b)) << what << ": " << a << " vs " << b;
  EXPECT_EQ(a, b) << what;
}

void expect_plain(const core::RowMatrix& m, const std::string& what) {
  SCOPED_TRACE(what);
  for (ScaleKind kind : {ScaleKind::Sequential, ScaleKind::Diverging}) {
    const ValueRange fast = value_range(m, kind), plain = plain_scan(m);
    EXPECT_EQ(fast.finite, plain.finite);
    EXPECT_EQ(fast.nan, plain.nan);
    EXPECT_EQ(fast.neg_inf, plain.neg_inf);
    EXPECT_EQ(fast.pos_inf, plain.pos_inf);
    expect_same_bits(fast.data_min, plain.data_min, "data_min");
    expect_same_bits(fast.data_max, plain.data_max, "data_max");
    const Colormap map = colormap_for(Palette::Standard, kind);
    const RgbaImage img = colorize(m, fast, map);
    for (Eigen::Index k = 0; k < m.size(); ++k) {
      const int x = static_cast<int>(k % m.cols()), y = static_cast<int>(k / m.cols());
      ASSERT_EQ(img.at(x, y), plain_color(m(y, x), fast, map)) << "cell " << k << " = " << m(y, x);
    }
  }
}

TEST(ValueRange, TheVectorizedRangeAndColoursEqualThePlainLoopsCellByCell) {
  constexpr float kMax = std::numeric_limits<float>::max();
  constexpr float kTiny = std::numeric_limits<float>::denorm_min();
  const float nan = std::nanf("");
  // Every length from 1 to 40 (the vector loops' tails), random values with
  // the special ones sprinkled in.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2.0f, 3.0f);
  const float special[] = {nan, kInf, -kInf, 0.0f, -0.0f, kMax, -kMax, kTiny, -kTiny, 1.0f};
  for (int n = 1; n <= 40; ++n) {
    core::RowMatrix m(1, n);
    for (int k = 0; k < n; ++k) m(0, k) = rng() % 4 == 0 ? special[rng() % 10] : u(rng);
    expect_plain(m, "random, " + std::to_string(n) + " cells");
  }
  // The sign of a zero that is the minimum or the maximum: the first one seen.
  expect_plain(matrix_from_rows({{0.5f, -0.0f, 0.2f, 0.0f, 0.3f, 0.0f, 0.1f, 0.4f, 0.9f, 0.0f}}),
               "min -0 first");
  expect_plain(matrix_from_rows({{0.5f, 0.0f, 0.2f, -0.0f, 0.3f, 0.0f, 0.1f, 0.4f, 0.9f, -0.0f}}),
               "min +0 first");
  expect_plain(matrix_from_rows({{-0.5f, -0.2f, -0.0f, -0.3f, 0.0f, -1.0f, -0.1f, -0.4f, -0.9f}}),
               "max -0 first");
  expect_plain(matrix_from_rows({{-0.5f, -0.2f, 0.0f, -0.3f, -0.0f, -1.0f, -0.1f, -0.4f, -0.9f}}),
               "max +0 first");
  expect_plain(matrix_from_rows({{0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, 0.0f, 0.0f, 0.0f}}),
               "all zeros");
  // The first zero in a later lane than a zero of the other sign in a later
  // vector: lane order alone would pick the wrong one.
  for (float first : {0.0f, -0.0f}) {
    core::RowMatrix up = core::RowMatrix::Constant(1, 24, 0.5f), down = -up;
    up(0, 5) = down(0, 5) = first;
    up(0, 8) = down(0, 8) = -first;
    up(0, 17) = down(0, 17) = first;
    expect_plain(up, std::string("min zero, first ") + (std::signbit(first) ? "-0" : "+0"));
    expect_plain(down, std::string("max zero, first ") + (std::signbit(first) ? "-0" : "+0"));
  }
  expect_plain(matrix_from_rows({{nan, kInf, -kInf, nan, kInf, -kInf, nan, kInf, -kInf}}),
               "nothing finite");
  // Positions that land on a half step of the 255-entry scale: k / 510.
  core::RowMatrix halves(1, 511);
  for (int k = 0; k <= 510; ++k) halves(0, k) = static_cast<float>(k) / 510.0f;
  expect_plain(halves, "half steps");
  // The causal weights of a 64-token head: zeros above the diagonal.
  core::RowMatrix weights = core::RowMatrix::Zero(64, 64);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j <= i; ++j) weights(i, j) = 1.0f / static_cast<float>(i + 1);
  expect_plain(weights, "causal weights");
}

TEST(XmlEscape, EscapesMarkupAndReplacesWhatXmlForbids) {
  EXPECT_EQ(xml_escape("<a & 'b' \"c\">"), "&lt;a &amp; &apos;b&apos; &quot;c&quot;&gt;");
  EXPECT_EQ(xml_escape("\xC3\xBC\xE2\x88\x9E"), "\xC3\xBC\xE2\x88\x9E");  // ü∞ stay
  EXPECT_EQ(xml_escape("a\x01"
                       "b"),
            "a\xEF\xBF\xBD"
            "b");                                                                 // control char
  EXPECT_EQ(xml_escape("\xff"), "\xEF\xBF\xBD");                                  // not UTF-8
  EXPECT_EQ(xml_escape("\xC3"), "\xEF\xBF\xBD");                                  // truncated
  EXPECT_EQ(xml_escape("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
}

Heatmap small() {
  Heatmap h;
  h.title = "scores <test>";
  h.row_title = "query";
  h.col_title = "key";
  h.row_labels = {"a", "b"};
  h.col_labels = {"a", "b", "c"};
  h.values = matrix_from_rows({{1, -kInf, 0.5f}, {2, 3, std::nanf("")}});
  return h;
}

TEST(HeatmapSvg, HasOneCellRectPerEntryAndEveryLabel) {
  const std::string svg = heatmap_svg(small());
  EXPECT_TRUE(svg.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "));
  EXPECT_EQ(count(svg, "<rect class=\"cell"), 6u);
  EXPECT_EQ(count(svg, "class=\"cell masked\""), 1u);
  EXPECT_EQ(count(svg, "class=\"cell nan\""), 1u);
  EXPECT_EQ(count(svg, "class=\"row-label\""), 2u);
  EXPECT_EQ(count(svg, "class=\"col-label\""), 3u);
  EXPECT_NE(svg.find(">\xE2\x88\x92\xE2\x88\x9E</text>"), std::string::npos);  // −∞
  EXPECT_NE(svg.find("scores &lt;test&gt;"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"value\""), 6u);              // small: every cell shows its value
  EXPECT_NE(svg.find(">1.0000</text>"), std::string::npos);  // 4 decimals, as on screen
  EXPECT_NE(svg.find(">nan</text>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"colorbar\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"masked-swatch\""), std::string::npos);
}

TEST(HeatmapSvg, CellsHaveTheColoursTheAppDrawsWithThePalette) {
  Heatmap h = small();
  h.values = matrix_from_rows({{-1, 0, 1}, {0.5f, -0.5f, 0.25f}});
  for (Palette p : kAllPalettes) {
    h.palette = p;
    const std::string svg = heatmap_svg(h);
    const Colormap map = diverging_map(p);
    const ValueRange r = value_range(h.values, ScaleKind::Diverging);
    // Every cell's fill is the app's colour for that value.
    for (float v : {-1.0f, 1.0f})
      EXPECT_NE(svg.find("fill=\"" + hex(cell_color(v, r, map)) + "\"/>"), std::string::npos)
          << palette_id(p);
  }
}

TEST(HeatmapSvg, HidesNumbersWhenTheScreenDoes) {
  Heatmap h = small();
  h.show_values = false;
  EXPECT_EQ(count(heatmap_svg(h), "class=\"value\""), 0u);
}

TEST(HeatmapSvg, LeavesValuesOutOfLargeMatrices) {
  Heatmap h;
  for (int i = 0; i < 40; ++i) {
    h.row_labels.push_back("r" + std::to_string(i));
    h.col_labels.push_back("c" + std::to_string(i));
  }
  h.values = core::RowMatrix::Constant(40, 40, 0.25f);
  const std::string svg = heatmap_svg(h);
  EXPECT_EQ(count(svg, "<rect class=\"cell"), 1600u);
  EXPECT_EQ(count(svg, "class=\"value\""), 0u);
}

TEST(HeatmapSvg, RefusesInconsistentOrHugeHeatmaps) {
  Heatmap h = small();
  h.col_labels.pop_back();
  EXPECT_THROW(heatmap_svg(h), std::invalid_argument);
  EXPECT_FALSE(svg_supported(513, 512));
  EXPECT_TRUE(svg_supported(512, 512));
  EXPECT_FALSE(svg_supported(0, 3));
}

// The fill or stroke value (`attr`="...") of the first element of class `cls`.
std::string attr_of(const std::string& svg, const std::string& cls, const std::string& attr) {
  const auto at = svg.find("class=\"" + cls + "\"");
  if (at == std::string::npos) return "no " + cls;
  const auto from = svg.find(attr + "=\"", at) + attr.size() + 2;
  return svg.substr(from, svg.find('"', from) - from);
}

// Light is a page (white, dark text, light lines between cells); dark is the
// app's screen. The cells keep the palette's colours in both.
TEST(Theme, LightSvgIsAWhitePageWithDarkTextAndDarkIsTheScreens) {
  Heatmap h = small();  // cells of 64 px: lines between them
  h.theme = Theme::Light;
  const std::string light = heatmap_svg(h);
  h.theme = Theme::Dark;
  const std::string dark = heatmap_svg(h);
  EXPECT_NE(light.find("<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>"),
            std::string::npos);
  EXPECT_EQ(attr_of(light, "title", "fill"), "#222222");
  EXPECT_EQ(attr_of(light, "row-label", "fill"), "#555555");
  EXPECT_EQ(attr_of(light, "bar-label max", "fill"), "#222222");
  EXPECT_EQ(attr_of(light, "grid", "stroke"), "#ffffff");

  const ThemeColors& screen = theme_colors(Theme::Dark);
  EXPECT_NE(
      dark.find("<rect width=\"100%\" height=\"100%\" fill=\"" + hex(screen.background) + "\"/>"),
      std::string::npos);
  EXPECT_EQ(attr_of(dark, "title", "fill"), hex(screen.text));
  EXPECT_EQ(attr_of(dark, "row-label", "fill"), hex(screen.dim));
  EXPECT_EQ(attr_of(dark, "grid", "stroke"), "#000000");
  EXPECT_GT(screen.text.r, 200);  // light text on a dark ground
  EXPECT_LT(screen.background.r, 60);

  auto cells = [](const std::string& svg) {
    const auto from = svg.find("<g class=\"cells\"");
    return svg.substr(from, svg.find("</g>", from) - from);
  };
  EXPECT_EQ(cells(light), cells(dark));
  EXPECT_EQ(parse_theme("dark"), Theme::Dark);
  EXPECT_EQ(parse_theme("light"), Theme::Light);
  EXPECT_EQ(parse_theme("sepia"), std::nullopt);
}

TEST(Theme, TheHeadGridsGapsAreTheThemesBackground) {
  HeadGrid g;
  g.layers = 2;
  g.heads = 2;
  g.maps.assign(4, core::RowMatrix::Constant(8, 8, 0.5f));
  g.theme = Theme::Dark;
  const Scene sc = layout_head_grid(g);
  EXPECT_EQ(sc.background, theme_colors(Theme::Dark).background);
  EXPECT_EQ(sc.grid.colors.at(8, 0), sc.background);  // the column between the first two tiles
  EXPECT_EQ(attr_of(scene_svg(sc), "title", "fill"), hex(theme_colors(Theme::Dark).text));
}

TEST(HeadGridLayout, SortedHeadNumbersSitOnADarkPlateAsOnScreen) {
  // Every tile at the map's top in its corner (the brightest colour):
  // white numbers must have a dark plate under them to be read.
  HeadGrid g;
  g.layers = 2;
  g.heads = 3;
  g.maps.assign(6, core::RowMatrix::Ones(8, 8));
  g.order = {{2, 0, 1}, {1, 2, 0}};
  const Scene sc = layout_head_grid(g);
  int numbers = 0;
  for (const TextItem& t : sc.texts) {
    if (t.role != "head-label") continue;
    ++numbers;
    const float w = estimate_text_width(t.text, t.size);
    bool plated = false;
    for (const RectItem& r : sc.rects)
      if (r.role == "head-label-plate" && r.x <= t.x && r.x + r.w >= t.x + w &&
          r.y <= t.y - t.size * 0.5f && r.y + r.h >= t.y + t.size * 0.5f) {
        plated = true;
        // Dark and mostly opaque: white reads on it whatever the tile's colour.
        EXPECT_LT(r.fill.r + r.fill.g + r.fill.b, 100) << t.text;
        EXPECT_GE(r.fill.a, 160) << t.text;
      }
    EXPECT_TRUE(plated) << "head " << t.text << " has no plate";
  }
  EXPECT_EQ(numbers, 6);
  // The plates are drawn in the SVG too.
  EXPECT_NE(scene_svg(sc).find("class=\"head-label-plate\""), std::string::npos);
}

TEST(Layout, SizeIsWholePixelsAndHoldsGridAndColourBar) {
  const Scene sc = layout_heatmap(small());
  EXPECT_GT(sc.width, 0);
  EXPECT_GE(static_cast<float>(sc.width), sc.gradients.at(0).x + sc.gradients[0].w);
  EXPECT_GE(static_cast<float>(sc.height), sc.grid.y + sc.grid.cell * 2);
  EXPECT_EQ(sc.decimals, 4);
  EXPECT_EQ(sc.grid.marks[1], CellGrid::Masked);
  EXPECT_EQ(sc.grid.marks[5], CellGrid::NotANumber);
}

// The colour colorize gives position t on the scale (its table has 256 steps).
Rgba8 on_scale(Colormap map, float t) {
  return sample(map, static_cast<float>(std::lround(t * 255.0f)) / 255.0f);
}

TEST(RowScope, EachRowIsColouredOnItsOwnRange) {
  // Row 1's weights are row 0's divided by 50: on one scale they are all near
  // the bottom; each on its own range they get row 0's colours cell by cell.
  core::RowMatrix m(3, 3);
  m << 0.0f, 0.5f, 1.0f,   //
      0.0f, 0.01f, 0.02f,  //
      0.0f, 0.0f, 0.0f;    // a constant row: widened, never a division by 0
  const Colormap map = Colormap::Viridis;
  const RgbaImage rows = colorize_rows(m, ScaleKind::Sequential, map);
  const RgbaImage whole = colorize(m, value_range(m, ScaleKind::Sequential), map);
  for (int c = 0; c < 3; ++c) EXPECT_EQ(rows.at(c, 1), rows.at(c, 0)) << c;
  EXPECT_NE(whole.at(2, 1), whole.at(2, 0));
  EXPECT_EQ(whole.at(2, 1), on_scale(map, 0.02f));  // the matrix's range: 0 .. 1
  EXPECT_EQ(rows.at(0, 2), on_scale(map, 0.0f));    // [0, 0] widened to [0, 1]
  // Row 0 is the same on both: its range is the matrix's.
  for (int c = 0; c < 3; ++c) EXPECT_EQ(rows.at(c, 0), whole.at(c, 0)) << c;
  // The scope switch picks one or the other.
  const ValueRange r = value_range(m, ScaleKind::Sequential);
  EXPECT_EQ(colorize(m, r, ScaleKind::Sequential, ScaleScope::Row, map).pixels, rows.pixels);
  EXPECT_EQ(colorize(m, r, ScaleKind::Sequential, ScaleScope::Matrix, map).pixels, whole.pixels);
}

TEST(RowScope, DivergingRowsAreSymmetricAndMaskedCellsKeepTheirColour) {
  core::RowMatrix m(2, 3);
  m << -4.0f, 2.0f, -kInf,  //
      0.1f, -0.2f, 0.0f;
  const ValueRange r0 = row_range(m, 0, ScaleKind::Diverging);
  EXPECT_FLOAT_EQ(r0.lo, -4.0f);
  EXPECT_FLOAT_EQ(r0.hi, 4.0f);
  EXPECT_EQ(r0.neg_inf, 1);
  const ValueRange r1 = row_range(m, 1, ScaleKind::Diverging);
  EXPECT_FLOAT_EQ(r1.hi, 0.2f);
  const Colormap map = Colormap::RdBu;
  const RgbaImage img = colorize_rows(m, ScaleKind::Diverging, map);
  EXPECT_EQ(img.at(2, 0), masked_fill(map));
  EXPECT_EQ(img.at(1, 1), on_scale(map, 0.0f));   // -0.2 is row 1's low end
  EXPECT_EQ(img.at(0, 0), on_scale(map, 0.0f));   // -4 is row 0's
  EXPECT_EQ(img.at(2, 1), on_scale(map, 0.5f));   // 0 in the middle
  EXPECT_EQ(img.at(0, 1), on_scale(map, 0.75f));  // 0.1 of 0.2
}

TEST(RowScope, TheColourBarSaysRowsNotNumbers) {
  ValueRange r;
  r.lo = -2.0f;
  r.hi = 2.0f;
  r.data_min = -1.5f;
  EXPECT_EQ(bar_labels(r, ScaleKind::Diverging, ScaleScope::Matrix, 4).hi, "2.0000");
  EXPECT_EQ(bar_labels(r, ScaleKind::Diverging, ScaleScope::Matrix, 2).lo, "-2.00");
  // Words a learner reads: the row's largest |value| and its negative.
  EXPECT_EQ(bar_labels(r, ScaleKind::Diverging, ScaleScope::Row, 4).hi, "row max");
  EXPECT_EQ(bar_labels(r, ScaleKind::Diverging, ScaleScope::Row, 4).lo, "\xE2\x88\x92row max");
  EXPECT_EQ(bar_labels(r, ScaleKind::Diverging, ScaleScope::Row, 4, false).lo, "-row max");
  EXPECT_EQ(bar_labels(r, ScaleKind::Sequential, ScaleScope::Row, 4).lo, "row min");
  // A short bar (fewer decimals): short words.
  EXPECT_EQ(bar_labels(r, ScaleKind::Diverging, ScaleScope::Row, 2).hi, "max");
  EXPECT_EQ(bar_labels(r, ScaleKind::Diverging, ScaleScope::Row, 2, false).lo, "-max");
  EXPECT_EQ(bar_labels(r, ScaleKind::Sequential, ScaleScope::Row, 2).lo, "min");
  r.data_min = 0.0f;
  EXPECT_EQ(bar_labels(r, ScaleKind::Sequential, ScaleScope::Row, 4).hi, "row max");
  EXPECT_EQ(bar_labels(r, ScaleKind::Sequential, ScaleScope::Row, 4).lo, "0");

  // A figure in Row scope: row colours, worded bar labels and the note.
  Heatmap h;
  h.title = "weights";
  h.values = core::RowMatrix(2, 2);
  h.values << 1.0f, 0.0f, 0.02f, 0.01f;
  h.row_labels = h.col_labels = {"a", "b"};
  h.kind = ScaleKind::Sequential;
  h.scope = ScaleScope::Row;
  const Scene sc = layout_heatmap(h);
  const Colormap map = colormap_for(h.palette, h.kind);
  EXPECT_EQ(sc.grid.colors.at(0, 1), sample(map, 1.0f));  // 0.02: row 1's top
  std::vector<std::string> bar;
  for (const auto& t : sc.texts)
    if (t.role.starts_with("bar-label")) bar.push_back(t.text);
  EXPECT_EQ(bar, (std::vector<std::string>{"row max", "0", kRowScopeNote}));
  const std::string svg = heatmap_svg(h);
  EXPECT_NE(svg.find("row max"), std::string::npos);
  EXPECT_NE(svg.find(hex(sample(map, 1.0f))), std::string::npos);
  // Numbers in cells read on their own row's colours: 0.02 is on the top
  // (bright yellow) and gets dark text, as 1.0 does.
  int checked = 0;
  for (const auto& t : sc.texts) {
    if (t.role != "value" || (t.text != "0.0200" && t.text != "1.0000")) continue;
    EXPECT_EQ(t.color, text_color_on(sample(map, 1.0f))) << t.text;
    ++checked;
  }
  EXPECT_EQ(checked, 2);
  h.scope = ScaleScope::Matrix;
  EXPECT_EQ(heatmap_svg(h).find("row max"), std::string::npos);
}

// Auto colours the token-by-token matrices by row from 128 tokens on (one
// shared scale draws their ~1/T weights in one flat colour) and nothing
// else; On and Off hold everywhere. R turns what the scores and weights
// show into the opposite, explicit choice.
TEST(RowScope, AutoTurnsOnForTokenByTokenMatricesFrom128Tokens) {
  EXPECT_EQ(scale_scope(RowScale::Auto, true, 6), ScaleScope::Matrix);  // the book's example
  EXPECT_EQ(scale_scope(RowScale::Auto, true, 127), ScaleScope::Matrix);
  EXPECT_EQ(scale_scope(RowScale::Auto, true, 128), ScaleScope::Row);
  EXPECT_EQ(scale_scope(RowScale::Auto, false, 1024), ScaleScope::Matrix);  // Q, context, ...
  EXPECT_EQ(scale_scope(RowScale::On, false, 6), ScaleScope::Row);
  EXPECT_EQ(scale_scope(RowScale::Off, true, 1024), ScaleScope::Matrix);
  EXPECT_EQ(toggled(RowScale::Auto, 512), RowScale::Off);
  EXPECT_EQ(toggled(RowScale::Auto, 6), RowScale::On);
  EXPECT_EQ(toggled(RowScale::On, 512), RowScale::Off);
  EXPECT_EQ(toggled(RowScale::Off, 6), RowScale::On);
  for (RowScale s : {RowScale::Auto, RowScale::On, RowScale::Off})
    EXPECT_EQ(parse_row_scale(row_scale_id(s)), s);
  EXPECT_EQ(row_scale_id(RowScale::Auto), "auto");
  EXPECT_EQ(parse_row_scale("true"), std::nullopt);
  // The screen's note says whether it is automatic, and what changes it.
  EXPECT_EQ(row_scope_notes(RowScale::Auto).front(),
            "each row on its own scale (auto at T \xE2\x89\xA5 128, R to change)");
  EXPECT_EQ(row_scope_notes(RowScale::Auto, false).front(),
            "each row on its own scale (auto at T >= 128, R to change)");
  EXPECT_EQ(row_scope_notes(RowScale::On).front(), "each row on its own scale (R to change)");
}

// The book prints 4 decimals (0.1921, 0.9995); a figure does too by
// default, follows the decimals setting, and widens a small matrix's cells
// to the text rather than printing fewer places.
TEST(Layout, NumbersInCellsFollowTheDecimalsSettingAndSmallCellsFitTheText) {
  Heatmap h = small();
  h.values = matrix_from_rows({{0.19211f, -0.9995f, 0.5f}, {2, 3, 0.25f}});
  auto values = [](const Scene& sc) {
    std::vector<std::string> out;
    for (const TextItem& t : sc.texts)
      if (t.role == "value") out.push_back(t.text);
    return out;
  };
  EXPECT_EQ(h.decimals, 4);
  Scene sc = layout_heatmap(h);
  EXPECT_EQ(sc.decimals, 4);
  EXPECT_EQ(values(sc).front(), "0.1921");
  EXPECT_EQ(values(sc)[1], "-0.9995");
  h.decimals = 2;
  sc = layout_heatmap(h);
  EXPECT_EQ(values(sc).front(), "0.19");
  EXPECT_EQ(sc.grid.cell, 64.0f);
  h.decimals = 6;
  sc = layout_heatmap(h);
  EXPECT_EQ(sc.decimals, 6);
  EXPECT_EQ(values(sc).front(), "0.192110");
  EXPECT_GT(sc.grid.cell, 64.0f) << "widened to the text";
  EXPECT_GE(sc.grid.cell, estimate_text_width("-0.999500", 12) + 8);
}

TEST(Layout, LongColumnLabelsAreRotatedAndShortOnesAreNot) {
  Heatmap h = small();
  EXPECT_EQ(layout_heatmap(h).texts[0].role, "title");
  auto col_angles = [](const Scene& sc) {
    std::vector<float> a;
    for (const auto& t : sc.texts)
      if (t.role == "col-label") a.push_back(t.angle);
    return a;
  };
  for (float a : col_angles(layout_heatmap(h))) EXPECT_EQ(a, 0.0f);
  h.col_labels = {"a very long token", "b", "c"};
  for (float a : col_angles(layout_heatmap(h))) EXPECT_NE(a, 0.0f);
}

TEST(DecimalsThatFit, TakeTheSettingOrTheMostThatFit) {
  auto width = [](int d) { return 10.0f * static_cast<float>(d + 2); };  // "0." + d digits
  EXPECT_EQ(decimals_that_fit(68, 68, 4, width, 17), 4);
  EXPECT_EQ(decimals_that_fit(60, 60, 4, width, 17), 3);
  EXPECT_EQ(decimals_that_fit(200, 200, 2, width, 17), 2);
  EXPECT_EQ(decimals_that_fit(30, 30, 4, width, 17), 0);
  EXPECT_EQ(decimals_that_fit(200, 12, 4, width, 17), 0);  // shorter than a line
  EXPECT_EQ(widest_number_text(-12.5f, 3.0f, 4), "-00.0000");
  EXPECT_EQ(widest_number_text(0.0f, 1.0f, 2), "0.00");
}

// On screen and in every figure: a value that rounds to zero has no minus
// sign, and huge values are short.
TEST(FormatValue, NoNegativeZeroAndCompactHugeValues) {
  EXPECT_EQ(format_value(-0.001f, 2), "0.00");
  EXPECT_EQ(format_value(-0.0f, 4), "0.0000");
  EXPECT_EQ(format_value(-0.00004f, 4), "0.0000");
  EXPECT_EQ(format_value(-0.006f, 2), "-0.01");
  EXPECT_EQ(format_value(999999.0f, 1), "999999.0");
  EXPECT_EQ(format_value(1e30f, 4), "1e30");
  EXPECT_EQ(format_value(-3.4e38f, 4), "-3.4e38");
  EXPECT_EQ(format_value(1234567.0f, 2), "1.23e6");
  EXPECT_EQ(compact_value(2.5e-7f), "2.5e-7");
  // The template cells are measured with covers the compact form.
  EXPECT_EQ(widest_number_text(-1e30f, 1e30f, 2), "-000000.00");
  EXPECT_EQ(widest_number_text(0.0f, 1e30f, 1), "000000.0");
}

TEST(Layout, NoNegativeZeroInCellsOrOnTheColourBar) {
  Heatmap h = small();
  h.values = matrix_from_rows({{-0.00001f, -0.0f, 0.5f}, {2, 3, 0.25f}});
  const std::string svg = heatmap_svg(h);
  EXPECT_EQ(svg.find(">-0.0000<"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">0.0000<"), std::string::npos);
}

// Embeddings of 1e30 overflow: the bar's ends are short, and the +inf and
// NaN cells that follow each get a legend entry.
TEST(Layout, HugeValuesOverflowAndNaNGetShortLabelsAndLegendEntries) {
  Heatmap h = small();
  h.values = matrix_from_rows({{1e30f, -2e30f, kInf}, {0.5f, std::nanf(""), 1}});
  h.masks = false;
  const Scene sc = layout_heatmap(h);
  std::string hi, lo, overflow, nan, masked;
  for (const TextItem& t : sc.texts) {
    if (t.role == "bar-label max") hi = t.text;
    if (t.role == "bar-label min") lo = t.text;
    if (t.role == "bar-label overflow-swatch") overflow = t.text;
    if (t.role == "bar-label nan-swatch") nan = t.text;
    if (t.role == "bar-label masked-swatch") masked = t.text;
  }
  EXPECT_EQ(hi, "2e30");
  EXPECT_EQ(lo, "-2e30");
  EXPECT_EQ(overflow, "+\xE2\x88\x9E overflow");
  EXPECT_EQ(nan, "nan");
  EXPECT_EQ(masked, "") << "no cell of this stage is masked";
  Heatmap plain = h;  // the same layout with small numbers and legend entries
  plain.values = matrix_from_rows({{1, -2, kInf}, {0.5f, std::nanf(""), 1}});
  EXPECT_EQ(sc.width, layout_heatmap(plain).width) << "the labels do not widen the figure";
  // A masking stage's -inf cells are masked, its +inf ones overflowed.
  h.masks = true;
  h.values = matrix_from_rows({{1, -kInf, kInf}, {0.5f, 2, 1}});
  const std::vector<LegendEntry> legend = off_scale_legend(value_range(h.values, h.kind), true);
  ASSERT_EQ(legend.size(), 2u);
  EXPECT_EQ(legend[0].kind, LegendEntry::Masked);
  EXPECT_EQ(legend[1].kind, LegendEntry::Overflow);
}

TEST(StageHeatmap, UsesTokensAndTheSequentialScaleForWeights) {
  core::Config c;
  c.variant = core::Variant::MultiheadWrapper;
  c.num_heads = 2;
  const core::Trace t = core::run_attention(c, *core::find_preset("shiny"));
  const Heatmap w = stage_heatmap(t, *t.find("weights", 1), {Palette::ColorBlindSafe, true, true});
  EXPECT_EQ(w.kind, ScaleKind::Sequential);
  EXPECT_EQ(w.palette, Palette::ColorBlindSafe);
  EXPECT_EQ(w.row_labels, t.tokens);
  EXPECT_EQ(w.col_labels, t.tokens);
  // The stage's name for people, and the run under it.
  EXPECT_EQ(w.title, "attention weights, head 1");
  EXPECT_EQ(w.subtitle,
            "MultiHeadAttentionWrapper (multihead_wrapper), d_out 2, 2 heads, seed 123, dropout 0");
  EXPECT_EQ(stage_heatmap(t, *t.find("masked_scores", 0)).title, "masked scores, head 0");
  EXPECT_EQ(stage_heatmap(t, *t.find("scores", 0), {Palette::Standard, true, false}).title,
            "w (scores), head 0");
  const Scene sc = layout_heatmap(w);
  EXPECT_EQ(sc.title, w.title + " \xE2\x80\x94 " + w.subtitle);
  ASSERT_GE(sc.texts.size(), 2u);
  EXPECT_EQ(sc.texts[1].role, "subtitle");
  EXPECT_EQ(sc.texts[1].text, w.subtitle);
  Heatmap bare = w;
  bare.subtitle.clear();
  EXPECT_GT(sc.grid.y, layout_heatmap(bare).grid.y);  // room for the subtitle
  const Heatmap q = stage_heatmap(t, *t.find("W_query", 0));
  EXPECT_EQ(q.kind, ScaleKind::Diverging);
  EXPECT_EQ(q.row_labels.front(), "in0");
  EXPECT_EQ(scale_kind_for("masked_scores"), ScaleKind::Diverging);
  EXPECT_EQ(scale_kind_for("dropout_mask"), ScaleKind::Sequential);
}

TEST(StageHeatmap, AModelRunsSubtitleDecodesItsTextAsAWhole) {
  // 東 is two GPT-2 tokens (E6 9D, then B1); 126 is C2, the start of a
  // character the text never finishes.
  core::Gpt2Config c;
  c.n_layer = 1;
  c.n_head = 1;
  c.n_embd = 4;
  c.n_inner = 8;
  c.n_positions = 64;
  c.vocab_size = 50257;
  const auto model = core::random_gpt2(c, 3);
  const std::vector<core::StageKey> keys{{0, 0, core::stage_id::weights}};
  core::ModelRun run(model, {30266, 109, 126});
  const core::Trace t = core::model_trace(run, keys);
  EXPECT_EQ(t.tokens, (std::vector<std::string>{"<0xE6><0x9D>", "<0xB1>", "<0xC2>"}))
      << "each token alone shows its bytes";
  EXPECT_EQ(t.text, "東\xef\xbf\xbd");
  EXPECT_EQ(run_subtitle(t), "random, 3 tokens: \"東\xef\xbf\xbd\"");
  // 25 × 東 is 75 bytes: cut after 20 characters (60 bytes), never inside one.
  std::vector<int> ids;
  for (int k = 0; k < 25; ++k) ids.insert(ids.end(), {30266, 109});
  core::ModelRun long_run(model, ids);
  std::string twenty;
  for (int k = 0; k < 20; ++k) twenty += "東";
  EXPECT_EQ(run_subtitle(core::model_trace(long_run, keys)),
            "random, 50 tokens: \"" + twenty + "\xe2\x80\xa6\"");
}

}  // namespace
}  // namespace attnscope::figure
