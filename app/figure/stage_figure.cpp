// stage_figure.cpp: core stages to heatmaps.
#include "figure/stage_figure.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "attnscope/formats/formats.hpp"
#include "figure/text_fit.hpp"

namespace attnscope::figure {

std::string stage_name(std::string_view id) {
  const core::StageInfo* info = core::find_stage_info(id);
  if (!info) return std::string(id);
  if (core::difference_base(id) != id) return "difference of " + std::string(info->name);
  return std::string(info->name);
}

std::string stage_title(const core::Trace& trace, const core::Stage& stage) {
  std::string title = stage_name(stage.id);
  if (!trace.model.empty() && stage.layer >= 0) title += ", layer " + std::to_string(stage.layer);
  if (stage.head >= 0) title += ", head " + std::to_string(stage.head);
  return title;
}

namespace {

// A model run's subtitle: the model and its text, up to about 60 bytes, then
// an ellipsis. The text is the run's, decoded as a whole (a character split
// across tokens reads whole, not as the tokens' <0xHH> bytes), cut between
// characters; a trace without it joins its tokens, whole tokens only.
std::string model_subtitle(const core::Trace& trace) {
  constexpr std::size_t kTextBytes = 60;
  std::string text;
  bool cut = false;
  if (!trace.text.empty()) {
    const std::vector<std::size_t> cuts = cluster_boundaries(trace.text);
    std::size_t end = cuts.size() > 1 ? cuts[1] : 0;  // at least one character
    for (std::size_t c : cuts)
      if (c <= kTextBytes) end = std::max(end, c);
    text = trace.text.substr(0, end);
    cut = end < trace.text.size();
  } else {
    std::size_t shown = 0;
    for (; shown < trace.tokens.size(); ++shown) {
      if (text.size() + trace.tokens[shown].size() > kTextBytes && shown > 0) break;
      text += trace.tokens[shown];
    }
    cut = shown < trace.tokens.size();
  }
  if (cut) text += "…";
  return trace.model + ", " + std::to_string(trace.tokens.size()) + " tokens: \"" + text + "\"";
}

}  // namespace

std::string run_subtitle(const core::Trace& trace) {
  if (!trace.model.empty()) return model_subtitle(trace);
  const core::Config& c = trace.config;
  std::string s = std::string(core::variant_book_name(c.variant)) + " (" +
                  std::string(core::variant_id(c.variant)) + ")";
  if (core::has_weights(c.variant)) s += ", d_out " + std::to_string(c.d_out);
  if (core::has_heads(c.variant)) s += ", " + std::to_string(c.num_heads) + " heads";
  if (core::has_weights(c.variant) || core::is_causal(c.variant))
    s += ", seed " + std::to_string(c.seed);
  if (trace.explicit_weights) s += ", edited weights";
  if (c.qkv_bias && core::has_weights(c.variant) && c.variant != core::Variant::SelfAttentionV1)
    s += ", qkv_bias";  // SelfAttention_v1 has no nn.Linear, so no bias
  if (core::is_causal(c.variant)) {
    char p[32];
    std::snprintf(p, sizeof p, "%g", c.dropout);
    s += std::string(", dropout ") + p + (c.training ? "" : " (eval: off)");
  }
  return s;
}

Heatmap stage_heatmap(const core::Trace& trace, const core::Stage& stage,
                      const FigureStyle& style) {
  // A difference ("diff_weights") is labelled as the stage it subtracts.
  core::StageAxes axes = core::stage_axes(trace, stage);
  Heatmap h;
  h.title = stage_title(trace, stage);
  if (!style.unicode)  // ω is the only non-ASCII character a title has
    if (const auto at = h.title.find("\xCF\x89"); at != std::string::npos)
      h.title.replace(at, 2, "w");
  h.subtitle = run_subtitle(trace);
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
  h.theme = style.theme;
  h.masks = holds_mask(stage.id) && trace.recipe().has(core::BlockPart::Mask);
  return h;
}

}  // namespace attnscope::figure
