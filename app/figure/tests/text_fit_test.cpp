// text_fit_test.cpp: labels shortened to a width stay valid UTF-8 and are cut
// only between clusters (a base with its combining marks, an emoji with its
// skin tone, a ZWJ family), for the app's heatmap labels and the figures'.
#include "figure/text_fit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "figure/heatmap_figure.hpp"

namespace figure = attnscope::figure;
using figure::WhenNothingFits;

namespace {

// Well-formed UTF-8: no stray continuation byte, no cut sequence, no overlong
// form, no surrogate, nothing past U+10FFFF.
bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t len = b < 0x80             ? 1
                      : (b & 0xE0) == 0xC0 ? 2
                      : (b & 0xF0) == 0xE0 ? 3
                      : (b & 0xF8) == 0xF0 ? 4
                                           : 0;
    if (len == 0 || i + len > s.size()) return false;
    char32_t cp = len == 1 ? b : b & (0x7F >> len);
    for (std::size_t k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    const char32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

// 10 px per code point: "…" is 10 px, ".." 20 px.
float width(std::string_view s) {
  float w = 0;
  for (const char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) w += 10;
  return w;
}

const std::string kDots = "\xE2\x80\xA6";

struct Case {
  std::string text;
  std::vector<std::size_t> cuts;  // where a reader may see it cut, in bytes
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"a\xC3\xA9", {0, 1, 3}},  // "aé"
      {"\xC3\xA9x", {0, 2, 3}},  // "éx"
      {"a\xC3\xA9"
       "bc",
       {0, 1, 3, 4, 5}},                                                // "aébc"
      {"\xC3\xA9xyz", {0, 2, 3, 4, 5}},                                 // "éxyz"
      {"caf\xC3\xA9", {0, 1, 2, 3, 5}},                                 // "café"
      {"\xE6\xB3\xA8\xE6\x84\x8F\xE5\x8A\x9B\xE6\xA9\x9F\xE6\xA7\x8B",  // "注意力機構"
       {0, 3, 6, 9, 12, 15}},
      {"\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD", {0, 8}},  // "👍🏽": thumbs up, skin tone
      {"\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7",  // "👨‍👩‍👧"
       {0, 18}},
      {"e\xCC\x81", {0, 3}},          // "e" + combining acute
      {"xe\xCC\x81y", {0, 1, 4, 5}},  // "xéy" with a combining acute
      {"a\xEF\xB8\x8F"
       "b",
       {0, 4, 5}},  // "a" + variation selector 16, "b"
      {"e\xE2\x83\x97"
       "f",
       {0, 4, 5}},  // "e" + combining right arrow above
  };
  return all;
}

}  // namespace

TEST(TextFit, ClusterBoundariesKeepMarksEmojiModifiersAndZwjSequencesWhole) {
  for (const Case& c : cases()) EXPECT_EQ(figure::cluster_boundaries(c.text), c.cuts) << c.text;
  EXPECT_EQ(figure::cluster_boundaries(""), std::vector<std::size_t>{0});
}

// Every width from nothing to the whole text, both ellipses, both ends.
TEST(TextFit, ResultIsValidUtf8APrefixAtAClusterBoundaryAndFits) {
  for (const Case& c : cases())
    for (const bool unicode : {true, false})
      for (const auto nothing : {WhenNothingFits::Empty, WhenNothingFits::Ellipsis})
        for (float max_width = 0; max_width <= width(c.text) + 10; max_width += 5) {
          const std::string dots = unicode ? kDots : "..";
          const std::string r = figure::fit_text(c.text, max_width, width, unicode, nothing);
          SCOPED_TRACE(c.text + " at " + std::to_string(max_width) + " px -> " + r);
          ASSERT_TRUE(valid_utf8(r));
          if (width(c.text) <= max_width) {
            EXPECT_EQ(r, c.text);
            continue;
          }
          if (r.empty() || r == dots) {
            // Nothing fits, not even one cluster with the ellipsis.
            EXPECT_EQ(r, nothing == WhenNothingFits::Empty && width(dots) > max_width ? "" : dots);
            EXPECT_GT(width(c.text.substr(0, c.cuts[1]) + dots), max_width);
            continue;
          }
          ASSERT_GT(r.size(), dots.size());
          ASSERT_EQ(r.substr(r.size() - dots.size()), dots);
          const std::string kept = r.substr(0, r.size() - dots.size());
          EXPECT_EQ(c.text.compare(0, kept.size(), kept), 0) << "not a prefix";
          EXPECT_NE(std::find(c.cuts.begin(), c.cuts.end(), kept.size()), c.cuts.end())
              << "cut inside a cluster";
          EXPECT_LE(width(r), max_width);
          // The longest such prefix: one cluster more does not fit.
          const auto next = std::upper_bound(c.cuts.begin(), c.cuts.end(), kept.size());
          if (next != c.cuts.end() && *next < c.text.size()) {
            EXPECT_GT(width(c.text.substr(0, *next) + dots), max_width) << "cut too short";
          }
        }
}

TEST(TextFit, AccentsSurviveTheCut) {
  // "aébc" in 30 px: "aé…" (the old figure cut kept half of é: "a\xC3…").
  EXPECT_EQ(figure::fit_text("a\xC3\xA9"
                             "bc",
                             30, width, true, WhenNothingFits::Ellipsis),
            "a\xC3\xA9" + kDots);
  // "éxyz" in 20 px: "é…" (the old app cut dropped é with x: "…").
  EXPECT_EQ(figure::fit_text("\xC3\xA9xyz", 20, width, true, WhenNothingFits::Empty),
            "\xC3\xA9" + kDots);
  EXPECT_EQ(figure::fit_text("caf\xC3\xA9xyz", 60, width, false, WhenNothingFits::Empty),
            "caf\xC3\xA9..");
}

// ASCII labels are cut as before: one character at a time from the end, the
// ellipsis after; what happens when not even the ellipsis fits is the caller's.
TEST(TextFit, AsciiIsCutOneCharacterAtATime) {
  EXPECT_EQ(figure::fit_text("abcdef", 60, width, true, WhenNothingFits::Empty), "abcdef");
  EXPECT_EQ(figure::fit_text("abcdef", 59, width, true, WhenNothingFits::Empty), "abcd" + kDots);
  EXPECT_EQ(figure::fit_text("abcdef", 35, width, false, WhenNothingFits::Empty), "a..");
  EXPECT_EQ(figure::fit_text("abcdef", 10, width, true, WhenNothingFits::Empty), kDots);
  EXPECT_EQ(figure::fit_text("abcdef", 15, width, false, WhenNothingFits::Empty), "");
  EXPECT_EQ(figure::fit_text("abcdef", 15, width, false, WhenNothingFits::Ellipsis), "..");
}

// The figures' labels (SVG and PNG export) go through it.
TEST(TextFit, HeatmapFigureLabelsStayValidUtf8) {
  figure::Heatmap h;
  h.values = attnscope::core::RowMatrix::Zero(2, 2);
  std::string accents;  // "éé…é", far wider than a label's 200 px
  for (int k = 0; k < 60; ++k) accents += "\xC3\xA9";
  h.row_labels = {accents, "a\xC3\xA9"};
  h.col_labels = h.row_labels;
  const figure::Scene sc = figure::layout_heatmap(h);
  bool shortened = false;
  for (const auto& t : sc.texts) {
    EXPECT_TRUE(valid_utf8(t.text)) << t.text;
    if (t.text.size() >= kDots.size() &&
        t.text.compare(t.text.size() - kDots.size(), kDots.size(), kDots) == 0)
      shortened = true;
  }
  EXPECT_TRUE(shortened) << "the long label should have been shortened";
}
