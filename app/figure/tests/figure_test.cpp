// figure_test.cpp: colour scales, value ranges, XML escaping and the
// structure of heatmap SVGs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "attnscope/attention.hpp"
#include "attnscope/io.hpp"
#include "figure/colormap.hpp"
#include "figure/stage_figure.hpp"
#include "figure/svg.hpp"

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
  EXPECT_EQ(hex(viridis(0)), "#440154");
  EXPECT_EQ(hex(viridis(1)), "#fde725");
  EXPECT_EQ(viridis(-3), viridis(0));
  EXPECT_EQ(viridis(7), viridis(1));
  EXPECT_EQ(viridis(std::nan("")), viridis(0));
}

TEST(Colormap, DivergingScaleIsBlueWhiteRed) {
  const Rgb lo = blue_white_red(0), mid = blue_white_red(0.5), hi = blue_white_red(1);
  EXPECT_GT(lo.b, lo.r);
  EXPECT_EQ(mid, (Rgb{255, 255, 255}));
  EXPECT_GT(hi.r, hi.b);
}

TEST(Colormap, TextIsDarkOnLightColoursAndLightOnDarkOnes) {
  EXPECT_TRUE(prefers_dark_text(Rgb{255, 255, 255}));
  EXPECT_TRUE(prefers_dark_text(viridis(1)));
  EXPECT_FALSE(prefers_dark_text(viridis(0)));
  EXPECT_FALSE(prefers_dark_text(blue_white_red(0)));
}

TEST(ValueRange, IsSymmetricForDivergingAndIgnoresInfinities) {
  const float v[] = {-0.5f, 2.0f, -kInf, std::nanf("")};
  const Range d = value_range(Scale::Diverging, v, 4);
  EXPECT_EQ(d.lo, -2.0);
  EXPECT_EQ(d.hi, 2.0);
  const Range s = value_range(Scale::Sequential, v, 4);
  EXPECT_EQ(s.lo, -0.5);
  EXPECT_EQ(s.hi, 2.0);
  EXPECT_EQ(position(d, 0.0), 0.5);
}

TEST(ValueRange, WidensAConstantMatrixAroundItsValue) {
  const float ones[] = {1, 1, 1};
  const Range r = value_range(Scale::Sequential, ones, 3);
  EXPECT_LT(r.lo, 1.0);
  EXPECT_GT(r.hi, 1.0);
  EXPECT_EQ(position(r, 1.0), 0.5);
  const float zeros[] = {0, 0};
  const Range z = value_range(Scale::Diverging, zeros, 2);
  EXPECT_LT(z.lo, z.hi);
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
  h.rows = 2;
  h.cols = 3;
  h.values = {1, -kInf, 0.5f, 2, 3, std::nanf("")};
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
  EXPECT_EQ(count(svg, "class=\"value\""), 6u);  // small: every cell shows its value
  EXPECT_NE(svg.find("class=\"colorbar\""), std::string::npos);
}

TEST(HeatmapSvg, LeavesValuesOutOfLargeMatrices) {
  Heatmap h;
  h.rows = h.cols = 20;
  for (int i = 0; i < 20; ++i) {
    h.row_labels.push_back("r" + std::to_string(i));
    h.col_labels.push_back("c" + std::to_string(i));
  }
  h.values.assign(400, 0.25f);
  const std::string svg = heatmap_svg(h);
  EXPECT_EQ(count(svg, "<rect class=\"cell"), 400u);
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

TEST(StageHeatmap, UsesTokensAndTheSequentialScaleForWeights) {
  core::Config c;
  c.variant = core::Variant::MultiheadWrapper;
  c.num_heads = 2;
  const core::Trace t = core::run_attention(c, *core::find_preset("shiny"));
  const Heatmap w = stage_heatmap(t, *t.find("weights", 1));
  EXPECT_EQ(w.scale, Scale::Sequential);
  EXPECT_EQ(w.row_labels, t.tokens);
  EXPECT_EQ(w.col_labels, t.tokens);
  EXPECT_EQ(w.title, "weights, head 1 \xE2\x80\x94 multihead_wrapper (MultiHeadAttentionWrapper)");
  const Heatmap q = stage_heatmap(t, *t.find("W_query", 0));
  EXPECT_EQ(q.scale, Scale::Diverging);
  EXPECT_EQ(q.row_labels.front(), "in0");
  EXPECT_EQ(stage_scale("masked_scores"), Scale::Diverging);
  EXPECT_EQ(stage_scale("dropout_mask"), Scale::Sequential);
}

}  // namespace
}  // namespace attnscope::figure
