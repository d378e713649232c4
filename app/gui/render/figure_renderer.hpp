// figure_renderer.hpp: heatmap figures rendered off screen into an OpenGL
// framebuffer object at 1×, 2× or 4×, for PNG export. The figure is laid
// out by app/figure (the layout the SVG export uses, with this font's
// metrics) and painted with an ImDrawList in pixel coordinates at the scale,
// text from a font atlas baked at each size × scale, so a 4× PNG is crisp,
// not a scaled screen grab. The cells are a nearest-filtered texture, one
// texel per cell, as on screen.
//
// Also here because they need GL: the window screenshot (F12) and the
// command line's --export-png.
#pragma once

#include <string>

#include "app_state.hpp"
#include "export/files_state.hpp"
#include "figure/heatmap_figure.hpp"

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
};

// Reads the window's back buffer (before the swap), encodes it as PNG and
// writes it into the export folder; sets the notice.
void save_window_screenshot(AppState& state, int framebuffer_width, int framebuffer_height);

// --export-png DIR: every stage of the state's run (every head) as a PNG in
// the existing folder `dir` at `scale`, named as exports are; prints each
// path on stdout. Returns the exit code (0, or 2 with "error: ..." on stderr).
int export_pngs(AppState& state, const std::string& dir, int scale);

}  // namespace attnscope::gui
