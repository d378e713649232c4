// stage_figure.cpp: core stages to heatmaps.
#include "figure/stage_figure.hpp"

#include "attnscope/formats.hpp"

namespace attnscope::figure {

std::string stage_title(const core::Trace& trace, const core::Stage& stage) {
  std::string title = stage.id;
  if (stage.head >= 0) title += ", head " + std::to_string(stage.head);
  title += " \xE2\x80\x94 " + std::string(core::variant_id(trace.config.variant)) + " (" +
           std::string(core::variant_book_name(trace.config.variant)) + ")";
  return title;
}

Heatmap stage_heatmap(const core::Trace& trace, const core::Stage& stage,
                      const FigureStyle& style) {
  core::StageAxes axes = core::stage_axes(trace, stage);
  Heatmap h;
  h.title = stage_title(trace, stage);
  if (!style.unicode)  // the em dash is the only non-ASCII character a title has
    h.title.replace(h.title.find("\xE2\x80\x94"), 3, "-");
  h.row_title = std::move(axes.row_title);
  h.col_title = std::move(axes.col_title);
  h.row_labels = std::move(axes.row_labels);
  h.col_labels = std::move(axes.col_labels);
  h.values = stage.data();
  h.kind = scale_kind_for(stage.id);
  h.palette = style.palette;
  h.show_values = style.show_values;
  h.scope = style.scope;
  h.decimals = style.decimals;
  h.unicode = style.unicode;
  h.masks = holds_mask(stage.id) && core::is_causal(trace.config.variant);
  return h;
}

}  // namespace attnscope::figure
