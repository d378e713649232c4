// heatmap_test.cpp: the CPU side of heatmaps: ranges, colours, −∞ handling,
// label and number fitting, the texture cache's upload rule.
#include "render/heatmap.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "render/colormap.hpp"
#include "render/texture.hpp"

namespace attnscope::gui {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

core::RowMatrix mat(std::initializer_list<std::initializer_list<float>> rows) {
  core::RowMatrix m(static_cast<Eigen::Index>(rows.size()),
                    static_cast<Eigen::Index>(rows.begin()->size()));
  Eigen::Index r = 0;
  for (const auto& row : rows) {
    Eigen::Index c = 0;
    for (float v : row) m(r, c++) = v;
    ++r;
  }
  return m;
}

int distance(Rgba8 a, Rgba8 b) {
  return std::abs(a.r - b.r) + std::abs(a.g - b.g) + std::abs(a.b - b.b);
}

TEST(ValueRange, DivergingIsSymmetricAroundZero) {
  const auto r = value_range(mat({{-0.5f, 2.0f}, {1.0f, 0.0f}}), ScaleKind::Diverging);
  EXPECT_FLOAT_EQ(r.lo, -2.0f);
  EXPECT_FLOAT_EQ(r.hi, 2.0f);
  EXPECT_FLOAT_EQ(r.data_min, -0.5f);
  EXPECT_FLOAT_EQ(r.data_max, 2.0f);
  EXPECT_FLOAT_EQ(scale_position(0.0f, r), 0.5f);
}

TEST(ValueRange, SequentialStartsAtZeroForNonNegativeData) {
  const auto r = value_range(mat({{0.2f, 0.7f}}), ScaleKind::Sequential);
  EXPECT_FLOAT_EQ(r.lo, 0.0f);
  EXPECT_FLOAT_EQ(r.hi, 0.7f);
}

TEST(ValueRange, IgnoresInfinitiesAndNanButCountsThem) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto r = value_range(mat({{1.0f, -kInf, -kInf}, {-3.0f, nan, kInf}}), ScaleKind::Diverging);
  EXPECT_FLOAT_EQ(r.lo, -3.0f);
  EXPECT_FLOAT_EQ(r.hi, 3.0f);
  EXPECT_EQ(r.neg_inf, 2);
  EXPECT_EQ(r.pos_inf, 1);
  EXPECT_EQ(r.nan, 1);
  EXPECT_EQ(r.finite, 2);
}

TEST(ValueRange, ConstantOrAllZeroDataStillHasAWidth) {
  EXPECT_LT(value_range(mat({{0, 0}}), ScaleKind::Diverging).lo, 0.0f);
  const auto s = value_range(mat({{0.5f, 0.5f}}), ScaleKind::Sequential);
  EXPECT_LT(s.lo, s.hi);
  const auto all_masked = value_range(mat({{-kInf}}), ScaleKind::Diverging);
  EXPECT_LT(all_masked.lo, all_masked.hi);
}

TEST(ScaleKind, WeightsAndMasksAreSequentialEverythingElseDiverging) {
  for (auto id : {"weights", "dropped_weights", "mask", "dropout_mask"})
    EXPECT_EQ(scale_kind_for(id), ScaleKind::Sequential) << id;
  for (auto id :
       {"scores", "scaled_scores", "masked_scores", "queries", "context", "output", "inputs"})
    EXPECT_EQ(scale_kind_for(id), ScaleKind::Diverging) << id;
}

TEST(Colorize, MakesOneRgbaPixelPerCellInRowMajorOrder) {
  const auto m = mat({{-1.0f, 0.0f, 1.0f}, {0.5f, -0.5f, 0.25f}});
  const auto r = value_range(m, ScaleKind::Diverging);
  const RgbaImage img = colorize(m, r, Colormap::RdBu);
  ASSERT_EQ(img.width, 3);
  ASSERT_EQ(img.height, 2);
  ASSERT_EQ(img.pixels.size(), 3u * 2u * 4u);
  EXPECT_EQ(distance(img.at(0, 0), sample(Colormap::RdBu, 0.0f)), 0);  // most negative: blue end
  EXPECT_EQ(distance(img.at(2, 0), sample(Colormap::RdBu, 1.0f)), 0);  // most positive: red end
  EXPECT_LE(distance(img.at(1, 0), Rgba8{0xf7, 0xf7, 0xf7, 255}), 3);  // 0: the white centre
  EXPECT_EQ(img.at(1, 1).a, 255);
}

TEST(Colorize, MaskedCellsGetAColourThatIsOnNoScale) {
  const auto m = mat({{0.1f, -kInf}, {0.3f, 0.4f}});
  const auto r = value_range(m, ScaleKind::Diverging);
  for (Colormap map :
       {Colormap::Viridis, Colormap::Cividis, Colormap::Magma, Colormap::RdBu, Colormap::PuOr}) {
    const RgbaImage img = colorize(m, r, map);
    EXPECT_EQ(img.at(1, 0), masked_fill(map));
  }
  for (Colormap map : {Colormap::Viridis, Colormap::Cividis, Colormap::Magma, Colormap::RdBu,
                       Colormap::PuOr, Colormap::Greys, Colormap::GreysDiv})
    for (int k = 0; k <= 255; ++k)
      EXPECT_GT(distance(sample(map, static_cast<float>(k) / 255.0f), masked_fill(map)), 60)
          << colormap_name(map) << " at " << k;
  EXPECT_EQ(cell_color(std::numeric_limits<float>::quiet_NaN(), r, Colormap::Viridis), kNanFill);
}

TEST(Colorize, ValuesOutsideTheRangeClampToTheEnds) {
  ValueRange r;
  r.lo = 0.0f;
  r.hi = 1.0f;
  EXPECT_EQ(cell_color(5.0f, r, Colormap::Viridis), sample(Colormap::Viridis, 1.0f));
  EXPECT_EQ(cell_color(-5.0f, r, Colormap::Viridis), sample(Colormap::Viridis, 0.0f));
}

TEST(Colormap, ViridisAndCividisRunDarkToLight) {
  auto lum = [](Rgba8 c) { return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b; };
  for (Colormap map : {Colormap::Viridis, Colormap::Cividis, Colormap::Magma}) {
    double prev = -1;
    for (int k = 0; k <= 20; ++k) {
      const double l = lum(sample(map, static_cast<float>(k) / 20.0f));
      EXPECT_GT(l, prev) << colormap_name(map) << " step " << k;
      prev = l;
    }
  }
}

TEST(Colormap, EveryPaletteOffersASequentialAndADivergingScale) {
  for (Palette p : kAllPalettes) {
    EXPECT_NE(sequential_map(p), diverging_map(p));
    EXPECT_EQ(parse_palette(palette_id(p)), p);
  }
  EXPECT_EQ(sequential_map(Palette::ColorBlindSafe), Colormap::Cividis);
}

TEST(TextColour, IsBlackOnLightAndWhiteOnDarkCells) {
  EXPECT_EQ(text_color_on(Rgba8{250, 250, 250, 255}), (Rgba8{0, 0, 0, 255}));
  EXPECT_EQ(text_color_on(Rgba8{10, 10, 40, 255}), (Rgba8{255, 255, 255, 255}));
  EXPECT_EQ(text_color_on(sample(Colormap::Viridis, 1.0f)), (Rgba8{0, 0, 0, 255}));        // yellow
  EXPECT_EQ(text_color_on(sample(Colormap::Viridis, 0.0f)), (Rgba8{255, 255, 255, 255}));  // purple
  EXPECT_EQ(text_color_on(masked_fill(Colormap::Viridis)), (Rgba8{255, 255, 255, 255}));
}

TEST(Labels, StrideSkipsLabelsThatWouldOverlap) {
  EXPECT_EQ(label_stride(40.0f, 20.0f), 1);
  EXPECT_EQ(label_stride(20.0f, 20.0f), 1);
  EXPECT_EQ(label_stride(1.0f, 20.0f), 20);
  EXPECT_EQ(label_stride(0.5f, 20.0f), 40);
  EXPECT_GT(label_stride(0.0f, 20.0f), 1000000);
  // Whatever the cell size, k-th labels are at least a label apart.
  for (float cell : {0.3f, 1.0f, 2.7f, 7.0f, 19.9f})
    EXPECT_GE(static_cast<float>(label_stride(cell, 18.0f)) * cell, 18.0f);
}

TEST(Labels, NumbersAreShownOnlyWhenTheyFitTheCell) {
  EXPECT_EQ(decimals_that_fit(80, 80, 56, 36, 17), 4);
  EXPECT_EQ(decimals_that_fit(50, 50, 56, 36, 17), 2);
  EXPECT_EQ(decimals_that_fit(30, 30, 56, 36, 17), 0);
  EXPECT_EQ(decimals_that_fit(200, 12, 56, 36, 17), 0);  // too short for a line of text
}

TEST(Labels, VisibleCellsAreTheOnesInsideTheClipSpan) {
  // 100 cells of 10 px starting at x = -55: x in [0, 50) shows cells 5..10.
  EXPECT_EQ(visible_cells(-55.0f, 10.0f, 0.0f, 50.0f, 100), (CellSpan{5, 11}));
  EXPECT_EQ(visible_cells(0.0f, 10.0f, 0.0f, 1000.0f, 6), (CellSpan{0, 6}));
  EXPECT_EQ(visible_cells(500.0f, 10.0f, 0.0f, 100.0f, 6), (CellSpan{0, 0}));
  EXPECT_EQ(visible_cells(0.0f, 0.0f, 0.0f, 100.0f, 6), (CellSpan{0, 0}));
}

TEST(Format, PrintsFourDecimalsLikeTorchAndMinusInfinityAsASymbol) {
  EXPECT_EQ(format_value(0.123456f, 4), "0.1235");
  EXPECT_EQ(format_value(-1.5f, 4), "-1.5000");
  EXPECT_EQ(format_value(0.5f, 2), "0.50");
  EXPECT_EQ(format_value(-kInf, 4), "−∞");
  EXPECT_EQ(format_value(-kInf, 4, false), "-inf");
  EXPECT_EQ(format_value(std::numeric_limits<float>::quiet_NaN(), 4), "nan");
}

TEST(TextureCache, UploadsOnlyWhenTraceStagePaletteOrKindChange) {
  TextureCache cache;  // NullTexture: no GL needed
  core::Stage s{"scores", -1, mat({{1, 2}, {3, 4}})};
  cache.get("a", 1, s, ScaleKind::Diverging, Colormap::RdBu);
  EXPECT_EQ(cache.uploads(), 1);
  for (int k = 0; k < 10; ++k) cache.get("a", 1, s, ScaleKind::Diverging, Colormap::RdBu);
  EXPECT_EQ(cache.uploads(), 1);  // an idle frame re-uploads nothing
  cache.get("a", 2, s, ScaleKind::Diverging, Colormap::RdBu);
  EXPECT_EQ(cache.uploads(), 2);  // new trace
  cache.get("a", 2, s, ScaleKind::Diverging, Colormap::PuOr);
  EXPECT_EQ(cache.uploads(), 3);  // new colormap
  core::Stage w{"weights", -1, mat({{1, 0}, {0, 1}})};
  const HeatmapTexture t = cache.get("a", 2, w, ScaleKind::Sequential, Colormap::Viridis);
  EXPECT_EQ(cache.uploads(), 4);  // another stage in the same slot
  EXPECT_FLOAT_EQ(t.range.hi, 1.0f);
  cache.get("b", 2, w, ScaleKind::Sequential, Colormap::Viridis);
  EXPECT_EQ(cache.uploads(), 5);  // another slot
  EXPECT_EQ(cache.size(), 2u);
  cache.collect(1000);  // neither slot drawn for a long time
  EXPECT_EQ(cache.size(), 0u);
}

TEST(TextureCache, LargeStagesAreColouredOverSeveralFramesWithinTheBudget) {
  TextureCache cache;
  cache.set_frame_budget(0.0);  // only the first large stage of a frame moves, one band at a time
  const core::Stage big{"weights", 0, core::RowMatrix::Constant(1024, 1024, 0.25f)};
  const core::Stage other{"weights", 1, core::RowMatrix::Constant(1024, 1024, 0.5f)};
  const core::Stage small{"scores", -1, mat({{1, 2}, {3, 4}})};
  int frame = 1, frames_to_ready = 0;
  HeatmapTexture a, b;
  for (; frame < 100; ++frame) {
    cache.collect(frame);
    a = cache.get("a", 1, big, ScaleKind::Sequential, Colormap::Viridis);
    b = cache.get("b", 1, other, ScaleKind::Sequential, Colormap::Viridis);
    const HeatmapTexture s = cache.get("s", 1, small, ScaleKind::Diverging, Colormap::RdBu);
    EXPECT_TRUE(s.ready) << "a small stage is coloured at once, whatever the budget";
    if (frame == 1) {
      EXPECT_FALSE(a.ready);
      EXPECT_FALSE(b.ready) << "the second large stage waits for a later frame";
      EXPECT_TRUE(cache.pending()) << "the app must draw another frame";
    }
    if (!a.ready) {
      EXPECT_FALSE(b.ready) << "stages are finished one after another";
    }
    if (a.ready && b.ready) break;
    ++frames_to_ready;
  }
  // 16 bands of 64 rows, the range and the upload for each of the two, one step a frame.
  EXPECT_GE(frames_to_ready, 30);
  EXPECT_LT(frame, 100) << "colouring finishes";
  EXPECT_TRUE(a.has_range);
  EXPECT_FLOAT_EQ(a.range.data_max, 0.25f);
  EXPECT_EQ(cache.uploads(), 3);  // each stage once (the small one too)
  cache.collect(++frame);
  EXPECT_TRUE(cache.get("a", 1, big, ScaleKind::Sequential, Colormap::Viridis).ready);
  EXPECT_FALSE(cache.pending());
  EXPECT_EQ(cache.uploads(), 3) << "a shown stage is not coloured again";

  // A new palette: not ready for a frame or more, but the range is kept.
  cache.collect(++frame);
  const HeatmapTexture c = cache.get("a", 1, big, ScaleKind::Sequential, Colormap::Cividis);
  EXPECT_FALSE(c.ready);
  EXPECT_TRUE(c.has_range);

  // With the default budget a step change at T = 1024 still finishes in a few frames.
  TextureCache normal;
  int n = 1;
  for (; n < 100; ++n) {
    normal.collect(n);
    if (normal.get("a", 1, big, ScaleKind::Sequential, Colormap::Viridis).ready) break;
  }
  EXPECT_LT(n, 100);
}

}  // namespace
}  // namespace attnscope::gui
