// export_png_test.cpp: the off-screen PNG renderer with a real GL context
// (run under xvfb-run; see CMakeLists.txt). For a small known matrix: the
// image is exactly scale × the figure's size at 1×, 2× and 4×; it is not
// blank; every cell has the colour the screen gives it (figure::colorize);
// masked cells are hatched in the masked colours; text is drawn.
#include <GLFW/glfw3.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "figure/heatmap_figure.hpp"
#include "imgui.h"
#include "imgui_impl_opengl3.h"
#include "render/figure_renderer.hpp"

namespace attnscope::gui {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// One hidden window, an ImGui context and the OpenGL3 backend for all tests.
class Gl : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_TRUE(glfwInit()) << "no display: run under xvfb-run";
    glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    window_ = glfwCreateWindow(64, 64, "export_png_test", nullptr, nullptr);
    ASSERT_NE(window_, nullptr);
    glfwMakeContextCurrent(window_);
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr;
    ASSERT_TRUE(ImGui_ImplOpenGL3_Init("#version 330 core"));
  }
  void TearDown() override {
    ImGui_ImplOpenGL3_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(window_);
    glfwTerminate();
  }

 private:
  GLFWwindow* window_ = nullptr;
};

figure::Heatmap known() {
  figure::Heatmap h;
  h.title = "masked_scores — test";
  h.row_title = "query";
  h.col_title = "key";
  h.row_labels = {"a", "b", "c"};
  h.col_labels = {"a", "b", "c"};
  h.values.resize(3, 3);
  h.values << 0.5f, -kInf, -kInf,  //
      -0.25f, 1.0f, -kInf,         //
      -1.0f, 0.0f, 0.75f;
  h.kind = figure::ScaleKind::Diverging;
  return h;
}

figure::Rgba8 pixel(const RenderedImage& img, float x, float y) {
  const auto k = (static_cast<std::size_t>(std::lround(y)) * static_cast<std::size_t>(img.width) +
                  static_cast<std::size_t>(std::lround(x))) *
                 4;
  return {img.rgba[k], img.rgba[k + 1], img.rgba[k + 2], img.rgba[k + 3]};
}

int distance(figure::Rgba8 a, figure::Rgba8 b) {
  return std::abs(a.r - b.r) + std::abs(a.g - b.g) + std::abs(a.b - b.b);
}

TEST(ExportPng, SizeIsScaleTimesTheFigureAtOneX) {
  const OffscreenFigureRenderer r;
  const figure::Scene sc = r.layout(known());
  for (int scale : {1, 2, 4}) {
    const RenderedImage img = r.render(known(), scale);
    EXPECT_EQ(img.width, sc.width * scale);
    EXPECT_EQ(img.height, sc.height * scale);
    EXPECT_EQ(img.rgba.size(), static_cast<std::size_t>(img.width * img.height * 4));
  }
}

TEST(ExportPng, IsNotBlankAndHasText) {
  const RenderedImage img = OffscreenFigureRenderer{}.render(known(), 2);
  std::set<std::uint32_t> colours;
  long dark = 0;
  for (std::size_t k = 0; k < img.rgba.size(); k += 4) {
    colours.insert(img.rgba[k] << 16 | img.rgba[k + 1] << 8 | img.rgba[k + 2]);
    dark += img.rgba[k] < 80 && img.rgba[k + 1] < 80 && img.rgba[k + 2] < 80;
  }
  EXPECT_GT(colours.size(), 50u);  // cells, antialiased text, the colour bar
  EXPECT_GT(dark, 500);            // title and labels in dark text on white
  EXPECT_EQ(pixel(img, 1, 1), (figure::Rgba8{255, 255, 255, 255}));  // the background
}

// Light is a white page; dark the app's screen. The corners are background.
TEST(ExportPng, TheCornerPixelIsTheThemesBackground) {
  const OffscreenFigureRenderer r;
  for (figure::Theme t : figure::kAllThemes) {
    figure::Heatmap h = known();
    h.theme = t;
    const RenderedImage img = r.render(h, 2);
    const figure::Rgba8 want = t == figure::Theme::Light ? figure::Rgba8{255, 255, 255, 255}
                                                         : figure::theme_colors(t).background;
    EXPECT_EQ(pixel(img, 0, 0), want) << figure::theme_id(t);
    EXPECT_EQ(pixel(img, static_cast<float>(img.width - 1), static_cast<float>(img.height - 1)),
              want)
        << figure::theme_id(t);
  }
  EXPECT_EQ(figure::theme_colors(figure::Theme::Dark).background, (figure::Rgba8{36, 38, 43, 255}));
}

TEST(ExportPng, EveryCellHasTheScreensColourAtEveryScale) {
  const OffscreenFigureRenderer r;
  for (figure::Palette p : figure::kAllPalettes) {
    figure::Heatmap h = known();
    h.palette = p;
    const figure::Scene sc = r.layout(h);
    const figure::Colormap map = figure::colormap_for(p, h.kind);
    const figure::RgbaImage want =
        figure::colorize(h.values, figure::value_range(h.values, h.kind), map);
    for (int scale : {1, 2, 4}) {
      const RenderedImage img = r.render(h, scale);
      const float k = static_cast<float>(scale);
      for (int row = 0; row < 3; ++row)
        for (int col = 0; col < 3; ++col) {
          // Just inside the cell's top-left corner: no text, no hairline.
          const float x = (sc.grid.x + sc.grid.cell * static_cast<float>(col) + 4) * k;
          const float y = (sc.grid.y + sc.grid.cell * static_cast<float>(row) + 4) * k;
          const figure::Rgba8 got = pixel(img, x, y);
          if (std::isinf(h.values(row, col))) {
            // Hatched: the masked fill or its hatch lines, never a scale colour.
            EXPECT_LE(std::min(distance(got, figure::masked_fill(map)),
                               distance(got, figure::masked_hatch(map))),
                      120)
                << "masked cell " << row << "," << col << " at " << scale << "x";
          } else {
            EXPECT_LE(distance(got, want.at(col, row)), 3)
                << figure::palette_id(p) << " cell " << row << "," << col << " at " << scale << "x";
          }
        }
    }
  }
}

TEST(ExportPng, AFigureBeyondTheGpusLimitIsRefusedWithAMessage) {
  figure::Heatmap h;
  h.values = core::RowMatrix::Constant(4000, 4000, 0.5f);
  for (int i = 0; i < 4000; ++i) {
    h.row_labels.push_back("t" + std::to_string(i));
    h.col_labels.push_back("t" + std::to_string(i));
  }
  try {
    OffscreenFigureRenderer{}.render(h, 4);
    SUCCEED() << "this GPU takes 16000 px framebuffers";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("smaller scale"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attnscope::gui

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new attnscope::gui::Gl);
  return RUN_ALL_TESTS();
}
