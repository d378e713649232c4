// figure_renderer.hpp: heatmap figures rendered off screen into an OpenGL
// framebuffer object at 1×, 2× or 4×, for PNG export. The figure is laid
// out by app/figure (the layout the SVG export uses, with this font's
// metrics) and painted with an ImDrawList in pixel coordinates at the scale,
// text from a font atlas baked at each size × scale, so a 4× PNG is crisp,
// not a scaled screen grab. The cells are a nearest-filtered texture, one
// texel per cell, as on screen.
//
// It returns pixels and writes no file: export/ encodes and writes them
// (PNG export, Export all, --export-png through FilesState::render_png).
#pragma once

#include "figure/head_grid_figure.hpp"
#include "figure/heatmap_figure.hpp"
#include "render/rendered_image.hpp"

namespace attnscope::gui {

// Renders figures; needs a current GL context with the ImGui OpenGL3 backend
// initialised (ImGui_ImplOpenGL3_Init) and an ImGui context.
class OffscreenFigureRenderer {
 public:
  // The (scale × width, scale × height) RGBA pixels of the figure; throws
  // std::runtime_error when the framebuffer would exceed the GPU's limits or
  // cannot be created.
  RenderedImage render(const figure::Heatmap& heatmap, int scale) const;
  // The layout render() draws (logical px at scale 1, this font's metrics).
  figure::Scene layout(const figure::Heatmap& heatmap) const;
  // The same for every head of a model as one figure (the model view).
  RenderedImage render(const figure::HeadGrid& grid, int scale) const;
  figure::Scene layout(const figure::HeadGrid& grid) const;

 private:
  // Paints a laid-out figure whose texts are among `texts` (their glyphs are baked).
  RenderedImage render(const figure::Scene& scene, const std::vector<std::string>& texts,
                       int scale) const;
};

}  // namespace attnscope::gui
