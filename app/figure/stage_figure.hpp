// stage_figure.hpp: a core Stage as a figure::Heatmap (title, labels from
// core::stage_axes, the scale that suits the stage).
#pragma once

#include <string_view>

#include "attnscope/trace.hpp"
#include "figure/svg.hpp"

namespace attnscope::figure {

// Sequential for matrices that are never negative by construction
// (weights, dropped_weights, mask, dropout_mask), else Diverging.
Scale stage_scale(std::string_view stage_id);

// "<stage>, head <h> — <variant id> (<book class>)" (no head part for -1).
std::string stage_title(const core::Trace& trace, const core::Stage& stage);

// The heatmap of `stage`: its values, labels and scale.
Heatmap stage_heatmap(const core::Trace& trace, const core::Stage& stage);

}  // namespace attnscope::figure
