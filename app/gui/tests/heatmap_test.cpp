// heatmap_test.cpp: the CPU side of heatmaps: ranges, colours, −∞ handling,
// label and number fitting, the texture cache's upload rule.
#include "render/heatmap.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "render/colormap.hpp"
#include "render/texture.hpp"

namespace attnscope::gui {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

using core::matrix_from_rows;

int distance(Rgba8 a, Rgba8 b) {
  return std::abs(a.r - b.r) + std::abs(a.g - b.g) + std::abs(a.b - b.b);
}

TEST(ValueRange, DivergingIsSymmetricAroundZero) {
  const auto r = value_range(matrix_from_rows({{-0.5f, 2.0f}, {1.0f, 0.0f}}), ScaleKind::Diverging);
  EXPECT_FLOAT_EQ(r.lo, -2.0f);
  EXPECT_FLOAT_EQ(r.hi, 2.0f);
  EXPECT_FLOAT_EQ(r.data_min, -0.5f);
  EXPECT_FLOAT_EQ(r.data_max, 2.0f);
  EXPECT_FLOAT_EQ(scale_position(0.0f, r), 0.5f);
}

TEST(ValueRange, SequentialStartsAtZeroForNonNegativeData) {
  const auto r = value_range(matrix_from_rows({{0.2f, 0.7f}}), ScaleKind::Sequential);
  EXPECT_FLOAT_EQ(r.lo, 0.0f);
  EXPECT_FLOAT_EQ(r.hi, 0.7f);
}

TEST(ValueRange, IgnoresInfinitiesAndNanButCountsThem) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto r = value_range(matrix_from_rows({{1.0f, -kInf, -kInf}, {-3.0f, nan, kInf}}),
                             ScaleKind::Diverging);
  EXPECT_FLOAT_EQ(r.lo, -3.0f);
  EXPECT_FLOAT_EQ(r.hi, 3.0f);
  EXPECT_EQ(r.neg_inf, 2);
  EXPECT_EQ(r.pos_inf, 1);
  EXPECT_EQ(r.nan, 1);
  EXPECT_EQ(r.finite, 2);
}

TEST(ValueRange, ConstantOrAllZeroDataStillHasAWidth) {
  EXPECT_LT(value_range(matrix_from_rows({{0, 0}}), ScaleKind::Diverging).lo, 0.0f);
  const auto s = value_range(matrix_from_rows({{0.5f, 0.5f}}), ScaleKind::Sequential);
  EXPECT_LT(s.lo, s.hi);
  const auto all_masked = value_range(matrix_from_rows({{-kInf}}), ScaleKind::Diverging);
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
  const auto m = matrix_from_rows({{-1.0f, 0.0f, 1.0f}, {0.5f, -0.5f, 0.25f}});
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
  const auto m = matrix_from_rows({{0.1f, -kInf}, {0.3f, 0.4f}});
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

// 512 rows in a 150 px box: the first label ("t0") used to be pushed down
// onto the image and drawn over the next one ("t57"). Placed labels keep
// their gap, stay inside the span, and start with row 0.
TEST(Labels, AxisLabelsNeverOverlap) {
  auto check = [](int count, float cell, float extent, float gap, float lo, float hi) {
    const int stride = label_stride(cell, extent + gap);
    const auto placed =
        place_axis_labels(0, count, stride, lo, cell, lo, hi, gap, [&](int) { return extent; });
    EXPECT_FALSE(placed.empty());
    for (std::size_t k = 0; k < placed.size(); ++k) {
      EXPECT_GE(placed[k].start, lo);
      EXPECT_LE(placed[k].start + extent, hi + 0.01f);
      if (k > 0) {
        EXPECT_GE(placed[k].start, placed[k - 1].start + extent + gap - 0.01f) << k;
      }
    }
    return placed;
  };
  const auto rows = check(512, 150.0f / 512.0f, 16.0f, 2.0f, 0.0f, 150.0f);
  EXPECT_EQ(rows.front().index, 0);
  ASSERT_GE(rows.size(), 2u);
  // Evenly spaced: every stride-th label, none skipped between.
  EXPECT_EQ(rows[1].index, label_stride(150.0f / 512.0f, 18.0f));
  EXPECT_EQ(rows[2].index, 2 * rows[1].index);
  check(6, 40.0f, 16.0f, 2.0f, 0.0f, 240.0f);  // the book: every row, centred
  EXPECT_FLOAT_EQ(check(6, 40.0f, 16.0f, 2.0f, 0.0f, 240.0f)[1].start, 40.0f + 12.0f);
  check(512, 700.0f / 512.0f, 28.0f, 4.0f, 0.0f, 700.0f);  // columns "t100" wide
  // Labels of different widths (t5, t50, t500): never closer than the gap.
  const auto cols = place_axis_labels(0, 512, 7, 0.0f, 2.0f, 0.0f, 1024.0f, 4.0f, [](int i) {
    return i < 10 ? 12.0f : i < 100 ? 18.0f : 24.0f;
  });
  for (std::size_t k = 1; k < cols.size(); ++k) {
    const float prev_w = cols[k - 1].index < 10 ? 12.0f : cols[k - 1].index < 100 ? 18.0f : 24.0f;
    EXPECT_GE(cols[k].start, cols[k - 1].start + prev_w + 4.0f - 0.01f) << cols[k].index;
  }
  EXPECT_TRUE(
      place_axis_labels(0, 4, 1, 0.0f, 10.0f, 0.0f, 8.0f, 2.0f, [](int) { return 16.0f; }).empty())
      << "a span shorter than one label";
}

// Under a narrow heatmap the colour bar's ends ("−max" and "max") used to
// run together as "−max+max": the bar grows, or shows its top end alone.
TEST(Labels, ColourBarEndsKeepTheirGap) {
  const auto fits = place_bar_labels(200.0f, 200.0f, 40.0f, 30.0f, 8.0f, true, 8.0f);
  EXPECT_FLOAT_EQ(fits.length, 200.0f);
  EXPECT_TRUE(fits.lo);
  EXPECT_FLOAT_EQ(fits.hi_x, 170.0f);
  EXPECT_TRUE(fits.zero);
  EXPECT_FLOAT_EQ(fits.zero_x, 96.0f);
  const auto grown = place_bar_labels(50.0f, 300.0f, 40.0f, 30.0f, 8.0f, true, 8.0f);
  EXPECT_FLOAT_EQ(grown.length, 78.0f);
  EXPECT_TRUE(grown.lo);
  EXPECT_GE(grown.hi_x, grown.lo_x + 40.0f + 8.0f);
  EXPECT_FALSE(grown.zero) << "no room for 0 between them";
  const auto tight = place_bar_labels(50.0f, 60.0f, 40.0f, 30.0f, 8.0f, true, 8.0f);
  EXPECT_FALSE(tight.lo);
  EXPECT_FLOAT_EQ(tight.hi_x, tight.length - 30.0f);
  EXPECT_FALSE(place_bar_labels(200.0f, 200.0f, 40.0f, 30.0f, 8.0f, false, 8.0f).zero);
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

// A texture that keeps what was uploaded into it, for the atlas's pixels.
class KeptTexture final : public Texture {
 public:
  explicit KeptTexture(std::shared_ptr<RgbaImage> image) : image_(std::move(image)) {}
  void upload(const RgbaImage& image) override { *image_ = image; }
  ImTextureID id() const override { return const_cast<KeptTexture*>(this); }

 private:
  std::shared_ptr<RgbaImage> image_;
};

TEST(TextureCache, AnAtlasHoldsEachStageInItsCellColouredAsGetColoursIt) {
  auto image = std::make_shared<RgbaImage>();
  TextureCache cache;
  cache.set_factory([image] { return std::make_unique<KeptTexture>(image); });
  std::vector<core::Stage> stages;
  for (int i = 0; i < 5; ++i) {  // 3 x 3 ones, and a 2 x 2 one last
    const int n = i == 4 ? 2 : 3;
    core::RowMatrix m(n, n);
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < n; ++c) m(r, c) = static_cast<float>((r * 7 + c * 3 + i * 5) % 11) - 2.0f;
    stages.emplace_back("weights", i, m, 0);
  }
  for (const ScaleScope scope : {ScaleScope::Matrix, ScaleScope::Row}) {
    const TextureCache::Atlas& a =
        cache.atlas("grid", 7, stages, 2, ScaleKind::Diverging, Colormap::RdBu, scope);
    ASSERT_NE(a.id, nullptr);
    ASSERT_EQ(a.uv.size(), stages.size());
    EXPECT_EQ(image->width, 2 * 4) << "two cells of 3 texels and a gap";
    EXPECT_EQ(image->height, 3 * 4);
    for (std::size_t i = 0; i < stages.size(); ++i) {
      const core::RowMatrix& m = stages[i].data();
      const RgbaImage want = colorize(m, value_range(m, ScaleKind::Diverging), ScaleKind::Diverging,
                                      scope, Colormap::RdBu);
      const int x0 = static_cast<int>(i % 2) * 4, y0 = static_cast<int>(i / 2) * 4;
      EXPECT_FLOAT_EQ(a.uv[i].x, static_cast<float>(x0) / 8.0f);
      EXPECT_FLOAT_EQ(a.uv[i].y, static_cast<float>(y0) / 12.0f);
      EXPECT_FLOAT_EQ(a.uv[i].z, static_cast<float>(x0 + m.cols()) / 8.0f);
      EXPECT_FLOAT_EQ(a.uv[i].w, static_cast<float>(y0 + m.rows()) / 12.0f);
      for (int y = 0; y < want.height; ++y)
        for (int x = 0; x < want.width; ++x)
          for (int k = 0; k < 4; ++k)
            ASSERT_EQ(image->pixels[static_cast<std::size_t>(((y0 + y) * 8 + x0 + x) * 4 + k)],
                      want.pixels[static_cast<std::size_t>((y * want.width + x) * 4 + k)])
                << "stage " << i << " at " << x << ", " << y;
    }
  }
  EXPECT_EQ(cache.uploads(), 2);  // one per scope
  for (int k = 0; k < 5; ++k)
    cache.atlas("grid", 7, stages, 2, ScaleKind::Diverging, Colormap::RdBu, ScaleScope::Row);
  EXPECT_EQ(cache.uploads(), 2) << "idle frames upload nothing";
  cache.atlas("grid", 8, stages, 2, ScaleKind::Diverging, Colormap::RdBu, ScaleScope::Row);
  EXPECT_EQ(cache.uploads(), 3) << "new data";
  cache.atlas("grid", 8, stages, 2, ScaleKind::Diverging, Colormap::Viridis, ScaleScope::Row);
  EXPECT_EQ(cache.uploads(), 4) << "another palette";
}

TEST(TextureCache, UploadsOnlyWhenTraceStagePaletteOrKindChange) {
  TextureCache cache;  // NullTexture: no GL needed
  core::Stage s{"scores", -1, matrix_from_rows({{1, 2}, {3, 4}})};
  cache.get("a", 1, s, ScaleKind::Diverging, Colormap::RdBu);
  EXPECT_EQ(cache.uploads(), 1);
  for (int k = 0; k < 10; ++k) cache.get("a", 1, s, ScaleKind::Diverging, Colormap::RdBu);
  EXPECT_EQ(cache.uploads(), 1);  // an idle frame re-uploads nothing
  cache.get("a", 2, s, ScaleKind::Diverging, Colormap::RdBu);
  EXPECT_EQ(cache.uploads(), 2);  // new trace
  cache.get("a", 2, s, ScaleKind::Diverging, Colormap::PuOr);
  EXPECT_EQ(cache.uploads(), 3);  // new colormap
  core::Stage w{"weights", -1, matrix_from_rows({{1, 0}, {0, 1}})};
  const HeatmapTexture t = cache.get("a", 2, w, ScaleKind::Sequential, Colormap::Viridis);
  EXPECT_EQ(cache.uploads(), 4);  // another stage in the same slot
  EXPECT_FLOAT_EQ(t.range.hi, 1.0f);
  cache.get("b", 2, w, ScaleKind::Sequential, Colormap::Viridis);
  EXPECT_EQ(cache.uploads(), 5);  // another slot
  EXPECT_EQ(cache.size(), 2u);
  cache.collect(1000);  // neither slot drawn for a long time
  EXPECT_EQ(cache.size(), 0u);
}

// Keeps every picture it was given, for tests that look at the uploaded texels.
class RecordingTexture final : public Texture {
 public:
  explicit RecordingTexture(std::vector<RgbaImage>* log) : log_(log) {}
  void upload(const RgbaImage& image) override { log_->push_back(image); }
  ImTextureID id() const override { return nullptr; }

 private:
  std::vector<RgbaImage>* log_;
};

TEST(TextureCache, SwitchingToRowScopeRecoloursEachRowOnItsOwnRange) {
  std::vector<RgbaImage> uploaded;
  TextureCache cache;
  cache.set_factory([&] { return std::make_unique<RecordingTexture>(&uploaded); });
  core::Stage w{"weights", -1, matrix_from_rows({{1.0f, 0.0f}, {0.02f, 0.01f}})};
  const HeatmapTexture whole = cache.get("a", 1, w, ScaleKind::Sequential, Colormap::Viridis);
  cache.get("a", 1, w, ScaleKind::Sequential, Colormap::Viridis, 0, ScaleScope::Matrix);
  ASSERT_EQ(uploaded.size(), 1u);  // Matrix is the default: nothing changed
  const HeatmapTexture rows =
      cache.get("a", 1, w, ScaleKind::Sequential, Colormap::Viridis, 0, ScaleScope::Row);
  ASSERT_EQ(uploaded.size(), 2u);
  EXPECT_EQ(rows.range, whole.range);  // the colour bar's counts are the matrix's either way
  EXPECT_EQ(uploaded[1].pixels,
            figure::colorize_rows(w.data(), ScaleKind::Sequential, Colormap::Viridis).pixels);
  EXPECT_NE(uploaded[0].at(0, 1), uploaded[1].at(0, 1));  // 0.02: near the bottom, then the top
  EXPECT_EQ(uploaded[1].at(0, 1), uploaded[1].at(0, 0));

  // A new trace prepared for a slot shown by row is coloured by row too.
  core::Trace next;
  next.stages.push_back(
      core::Stage{"weights", -1, matrix_from_rows({{0.5f, 0.5f}, {0.03f, 0.01f}})});
  while (!cache.prepare(next, 2, 100.0)) {
  }
  cache.commit_prepared(2);
  ASSERT_EQ(uploaded.size(), 3u);
  EXPECT_EQ(uploaded[2].pixels,
            figure::colorize_rows(next.stages[0].data(), ScaleKind::Sequential, Colormap::Viridis)
                .pixels);
}

// The R key pressed while a recomputed trace is being prepared: what is
// swapped in is coloured all by row, never half one way and half the other.
TEST(TextureCache, AScopeSwitchDuringAPreparationStartsItsColouringAgain) {
  std::vector<RgbaImage> uploaded;
  TextureCache cache;
  cache.set_factory([&] { return std::make_unique<RecordingTexture>(&uploaded); });
  core::RowMatrix a(512, 512), b(512, 512);  // 4 bands of 128 rows
  for (Eigen::Index i = 0; i < 512; ++i)
    for (Eigen::Index j = 0; j < 512; ++j) {
      a(i, j) = static_cast<float>((i * 7 + j * 3) % 11) / static_cast<float>(i + 1);
      b(i, j) = static_cast<float>((i * 5 + j) % 13) / static_cast<float>(i + 1);
    }
  const core::Stage sa{"weights", -1, a};
  int frame = 0;
  auto show = [&](std::uint64_t version, const core::Stage& s, ScaleScope scope) {
    HeatmapTexture t;
    do {
      cache.collect(++frame);
      t = cache.get("s", version, s, ScaleKind::Sequential, Colormap::Viridis, 0, scope);
    } while (!t.ready);
  };
  show(1, sa, ScaleScope::Matrix);
  core::Trace next;
  next.stages.push_back(core::Stage{"weights", -1, b});
  ASSERT_FALSE(cache.prepare(next, 2, 0.0));  // one band of the next trace, on the matrix's scale
  show(1, sa, ScaleScope::Row);               // R: the trace on screen is coloured by row
  while (!cache.prepare(next, 2, 0.0)) {
  }
  cache.commit_prepared(2);
  const auto before = uploaded.size();
  cache.get("s", 2, next.stages[0], ScaleKind::Sequential, Colormap::Viridis, 0, ScaleScope::Row);
  EXPECT_EQ(uploaded.size(), before);  // the prepared texture was swapped in, not coloured again
  EXPECT_EQ(uploaded.back().pixels,
            figure::colorize_rows(b, ScaleKind::Sequential, Colormap::Viridis).pixels);
}

TEST(TextureCache, LargeStagesAreColouredOverSeveralFramesWithinTheBudget) {
  TextureCache cache;
  cache.set_frame_budget(0.0);  // only the first large stage of a frame moves, one band at a time
  const core::Stage big{"weights", 0, core::RowMatrix::Constant(1024, 1024, 0.25f)};
  const core::Stage other{"weights", 1, core::RowMatrix::Constant(1024, 1024, 0.5f)};
  const core::Stage small{"scores", -1, matrix_from_rows({{1, 2}, {3, 4}})};
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

TEST(ReducedTexture, EachTexelIsTheRoundedMeanColourOfTheCellsItCovers) {
  core::RowMatrix m(5, 5);
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 5; ++c) m(r, c) = static_cast<float>(r * 5 + c) - 12.0f;
  const ValueRange range = value_range(m, ScaleKind::Diverging);
  const RgbaImage full = colorize(m, range, Colormap::RdBu);
  EXPECT_EQ(texel_factor(5, 5, 2), 3);
  EXPECT_EQ(texel_factor(5, 5, 5), 1) << "a picture that fits is not reduced";
  EXPECT_EQ(texel_factor(5, 5, 0), 1) << "0: no limit";

  // Reduced by 2: 3 x 3 texels, the last column and row covering one cell.
  RgbaImage whole = reduced_image(5, 5, 2);
  ASSERT_EQ(whole.width, 3);
  ASSERT_EQ(whole.height, 3);
  add_band(full, 0, 2, whole);
  const auto mean = [&](int r0, int nr, int c0, int nc, int k) {
    unsigned sum = 0;
    for (int r = r0; r < r0 + nr; ++r)
      for (int c = c0; c < c0 + nc; ++c)
        sum += full.pixels[static_cast<std::size_t>((r * 5 + c) * 4 + k)];
    const auto n = static_cast<unsigned>(nr * nc);
    return static_cast<int>((sum + n / 2) / n);
  };
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(whole.pixels[static_cast<std::size_t>(k)], mean(0, 2, 0, 2, k)) << "a 2 x 2 block";
    EXPECT_EQ(whole.pixels[static_cast<std::size_t>((0 * 3 + 2) * 4 + k)], mean(0, 2, 4, 1, k))
        << "the right edge: 2 x 1 cells";
    EXPECT_EQ(whole.pixels[static_cast<std::size_t>((2 * 3 + 1) * 4 + k)], mean(4, 1, 2, 2, k))
        << "the bottom edge: 1 x 2 cells";
    EXPECT_EQ(whole.pixels[static_cast<std::size_t>((2 * 3 + 2) * 4 + k)], mean(4, 1, 4, 1, k))
        << "the corner: one cell";
  }
  EXPECT_NE(whole.at(0, 0).r, whole.at(2, 2).r) << "the picture is not uniform";

  // Band by band (2, 2, then the last 1 row) gives the same texels as at once.
  RgbaImage banded = reduced_image(5, 5, 2);
  for (int r0 = 0; r0 < 5; r0 += 2) {
    const int rows = std::min(2, 5 - r0);
    add_band(colorize(m.middleRows(r0, rows), range, Colormap::RdBu), r0, 2, banded);
  }
  EXPECT_EQ(banded.pixels, whole.pixels);

  // Factor 1 is a copy.
  RgbaImage same = reduced_image(5, 5, 1);
  add_band(full, 0, 1, same);
  EXPECT_EQ(same.pixels, full.pixels);
}

TEST(TextureCache, TilesGetAReducedTextureBothWhenDrawnAndWhenANewTraceIsPrepared) {
  std::vector<RgbaImage> uploads;
  TextureCache cache;
  cache.set_factory([&] { return std::make_unique<RecordingTexture>(&uploads); });
  // A thin diagonal: one cell in 1024 of each row is 1, the rest 0.
  const core::Stage eye{"weights", 0, core::RowMatrix::Identity(1024, 1024)};
  HeatmapTexture t;
  for (int frame = 1;
       frame < 200 &&
       !(t = cache.get("tile", 1, eye, ScaleKind::Sequential, Colormap::Viridis, 128)).ready;
       ++frame)
    cache.collect(frame);
  ASSERT_TRUE(t.ready);
  ASSERT_EQ(uploads.size(), 1u);
  ASSERT_EQ(uploads[0].width, 128) << "1024 cells a side in at most 128 texels: 8 x 8 cells each";
  ASSERT_EQ(uploads[0].height, 128);
  EXPECT_FLOAT_EQ(t.uv_max.x, 1.0f);
  const Rgba8 zero = colorize(core::RowMatrix::Zero(1, 1), t.range, Colormap::Viridis).at(0, 0);
  for (int i = 0; i < 128; ++i) {
    EXPECT_GT(distance(uploads[0].at(i, i), zero), 10) << "the diagonal shows in texel " << i;
    EXPECT_EQ(distance(uploads[0].at((i + 64) % 128, i), zero), 0) << "off the diagonal: zeros";
  }

  // 1030 cells do not divide into 128 texels: 9 cells a texel, 115 texels,
  // and the last one is only partly drawn.
  const core::Stage odd{"weights", 1, core::RowMatrix::Constant(1030, 1030, 0.5f)};
  cache.collect(500);
  cache.get("tile", 1, eye, ScaleKind::Sequential, Colormap::Viridis, 128);
  cache.set_frame_budget(1e9);
  const HeatmapTexture o = cache.get("odd", 1, odd, ScaleKind::Sequential, Colormap::Viridis, 128);
  ASSERT_TRUE(o.ready);
  EXPECT_EQ(uploads.back().width, 115);
  EXPECT_FLOAT_EQ(o.uv_max.x, 1030.0f / (115.0f * 9.0f));
  EXPECT_FLOAT_EQ(o.uv_max.y, 1030.0f / (115.0f * 9.0f));

  // The same slot at full resolution (max_side 0) is a new texture.
  const std::size_t before = uploads.size();
  const HeatmapTexture f = cache.get("tile", 1, eye, ScaleKind::Sequential, Colormap::Viridis, 0);
  ASSERT_TRUE(f.ready);
  ASSERT_EQ(uploads.size(), before + 1);
  EXPECT_EQ(uploads.back().width, 1024);
  cache.get("tile", 1, eye, ScaleKind::Sequential, Colormap::Viridis, 128);  // back to the tile

  // A new trace is prepared for the slots drawn in the last frame, reduced like them.
  core::Trace next;
  next.stages.push_back(core::Stage{"weights", 0, core::RowMatrix::Constant(1024, 1024, 0.25f)});
  const std::size_t prepared_from = uploads.size();
  ASSERT_TRUE(cache.prepare(next, 2, 1e9));
  ASSERT_EQ(uploads.size(), prepared_from + 1) << "only the tile showing weights of head 0";
  EXPECT_EQ(uploads.back().width, 128);
  EXPECT_EQ(uploads.back().height, 128);
  cache.commit_prepared(2);
  const std::size_t committed = uploads.size();
  const HeatmapTexture n =
      cache.get("tile", 2, next.stages[0], ScaleKind::Sequential, Colormap::Viridis, 128);
  EXPECT_TRUE(n.ready);
  EXPECT_EQ(uploads.size(), committed) << "the prepared texture is the one shown";
}

}  // namespace
}  // namespace attnscope::gui
