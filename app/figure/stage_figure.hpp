// stage_figure.hpp: a core Stage as a figure::Heatmap (the stage's name as
// title and the run as subtitle, labels from core::stage_axes, the scale kind
// that suits the stage, the palette and cell-number setting it is shown with).
#pragma once

#include <string>
#include <string_view>

#include "attnscope/base/trace.hpp"
#include "figure/heatmap_figure.hpp"

namespace attnscope::figure {

// How a figure is shown: what the app's View menu says (the CLI: defaults).
struct FigureStyle {
  Palette palette = Palette::Standard;
  bool show_values = true;
  bool unicode = true;
  ScaleScope scope = ScaleScope::Matrix;  // View > Colour each row on its own scale
  int decimals = kBookDecimals;           // View > Decimals: places in cells
  Theme theme = kDefaultTheme;            // the export menus' Theme: Dark / Light
};

// The stage's name for people, e.g. "scaled scores" or "Q (queries)"; an
// unknown id as it is. A difference of two runs' stages, "diff_<id>", is
// "difference of <name>".
std::string stage_name(std::string_view id);

// "<stage name>[, layer <l>], head <h>" (no head part for -1; the layer only
// in a model's trace), e.g. "attention weights, head 1".
std::string stage_title(const core::Trace& trace, const core::Stage& stage);

// The run that made the trace, in one line: "<book class> (<variant id>)",
// then d_out, heads, seed, dropout where the variant has them, e.g.
// "CausalAttention (causal), d_out 2, seed 789, dropout 0.5" (ASCII only);
// for a model's trace the model and its text: "gpt2, 4 tokens: \"Every
// effort moves you\"" (the text's first ~60 bytes, whole tokens, then "…").
std::string run_subtitle(const core::Trace& trace);

// The heatmap of `stage`: its values, labels and scale.
Heatmap stage_heatmap(const core::Trace& trace, const core::Stage& stage,
                      const FigureStyle& style = {});

}  // namespace attnscope::figure
