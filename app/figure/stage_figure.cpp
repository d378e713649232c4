// stage_figure.cpp: core stages to heatmaps.
#include "figure/stage_figure.hpp"

#include "attnscope/formats.hpp"

namespace attnscope::figure {

Scale stage_scale(std::string_view id) {
  return id == "weights" || id == "dropped_weights" || id == "mask" || id == "dropout_mask"
             ? Scale::Sequential
             : Scale::Diverging;
}

std::string stage_title(const core::Trace& trace, const core::Stage& stage) {
  std::string title = stage.id;
  if (stage.head >= 0) title += ", head " + std::to_string(stage.head);
  title += " \xE2\x80\x94 " + std::string(core::variant_id(trace.config.variant)) + " (" +
           std::string(core::variant_book_name(trace.config.variant)) + ")";
  return title;
}

Heatmap stage_heatmap(const core::Trace& trace, const core::Stage& stage) {
  core::StageAxes axes = core::stage_axes(trace, stage);
  Heatmap h;
  h.title = stage_title(trace, stage);
  h.row_title = std::move(axes.row_title);
  h.col_title = std::move(axes.col_title);
  h.row_labels = std::move(axes.row_labels);
  h.col_labels = std::move(axes.col_labels);
  h.rows = static_cast<int>(stage.data.rows());
  h.cols = static_cast<int>(stage.data.cols());
  h.values.assign(stage.data.data(), stage.data.data() + stage.data.size());
  h.scale = stage_scale(stage.id);
  return h;
}

}  // namespace attnscope::figure
