// stage_figure.hpp: a core Stage as a figure::Heatmap (title, labels from
// core::stage_axes, the scale kind that suits the stage, the palette and
// cell-number setting it is shown with).
#pragma once

#include <string>

#include "attnscope/trace.hpp"
#include "figure/heatmap_figure.hpp"

namespace attnscope::figure {

// How a figure is shown: what the app's View menu says (the CLI: defaults).
struct FigureStyle {
  Palette palette = Palette::Standard;
  bool show_values = true;
  bool unicode = true;
  ScaleScope scope = ScaleScope::Matrix;  // View > Colour each row on its own scale
  int decimals = kBookDecimals;           // View > Decimals: places in cells
};

// "<stage>, head <h> — <variant id> (<book class>)" (no head part for -1).
std::string stage_title(const core::Trace& trace, const core::Stage& stage);

// The heatmap of `stage`: its values, labels and scale.
Heatmap stage_heatmap(const core::Trace& trace, const core::Stage& stage,
                      const FigureStyle& style = {});

}  // namespace attnscope::figure
