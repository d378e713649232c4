// step.cpp: the steps of each variant, their names, and the matrices each shows.
#include "state/step.hpp"

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/model/model_trace.hpp"

namespace attnscope::gui {

// ---------------------------------------------------------------------------
// Steps and their names

namespace {

struct StepName {
  Step step;
  std::string_view id;
  std::string_view label;
};
// stage-literals: off (step names)
constexpr StepName kStepNames[] = {
    {Step::Inputs, "inputs", "Inputs"},         {Step::Projections, "qkv", "Q/K/V"},
    {Step::SplitHeads, "split", "Split heads"}, {Step::Scores, "scores", "Scores"},
    {Step::Scaled, "scaled", "Scaled"},         {Step::Mask, "mask", "Mask"},
    {Step::Masked, "masked", "Masked"},         {Step::Softmax, "softmax", "Softmax"},
    {Step::Dropout, "dropout", "Dropout"},      {Step::Context, "context", "Context"},
    {Step::Concat, "concat", "Concat"},         {Step::OutProj, "output", "Out proj"},
    {Step::LayerNorm, "ln_1", "LayerNorm"},     {Step::Residual, "residual", "Residual"},
};
// stage-literals: on

// Trace stage ids (and a few spellings people type) that name a step.
struct StepAlias {
  std::string_view alias;
  Step step;
};
constexpr StepAlias kAliases[] = {
    {"embeddings", Step::Inputs},  // not a stage id
    {"projections", Step::Projections},
    {core::stage_id::queries, Step::Projections},
    {core::stage_id::keys, Step::Projections},
    {core::stage_id::values, Step::Projections},
    {"split_heads", Step::SplitHeads},
    {"heads", Step::SplitHeads},
    {core::stage_id::scaled_scores, Step::Scaled},
    {core::stage_id::masked_scores, Step::Masked},
    {core::stage_id::weights, Step::Softmax},
    {"attn_weights", Step::Softmax},
    {core::stage_id::dropout_mask, Step::Dropout},
    {core::stage_id::dropped_weights, Step::Dropout},
    {"context_vec", Step::Context},
    {"out_proj", Step::OutProj},
    {"layernorm", Step::LayerNorm},
    {core::stage_id::attn_output, Step::Residual},
};

}  // namespace

std::vector<Step> steps_for(core::Variant v) {
  using enum Step;
  switch (v) {
    case core::Variant::Simple:
      return {Inputs, Scores, Softmax, Context};
    case core::Variant::SelfAttentionV1:
    case core::Variant::SelfAttentionV2:
      return {Inputs, Projections, Scores, Scaled, Softmax, Context};
    case core::Variant::Causal:
      // The book's CausalAttention masks the raw scores, then scales them.
      return {Inputs, Projections, Scores, Mask, Masked, Scaled, Softmax, Dropout, Context};
    case core::Variant::MultiheadWrapper:
      return {Inputs, Projections, Scores, Mask, Masked, Scaled, Softmax, Dropout, Context, Concat};
    case core::Variant::Multihead:
      return {Inputs, Projections, SplitHeads, Scores,  Mask,   Masked,
              Scaled, Softmax,     Dropout,    Context, Concat, OutProj};
  }
  return {Inputs};
}

std::vector<Step> steps_for(const core::Trace& trace) {
  using enum Step;
  if (!trace.model.empty())  // a model's block: no dropout in eval mode, no fused projection
    return {Inputs, LayerNorm, Projections, Scores, Mask,    Masked,
            Scaled, Softmax,   Context,     Concat, OutProj, Residual};
  return steps_for(trace.config.variant);
}

std::string_view step_id(Step s) {
  for (const auto& n : kStepNames)
    if (n.step == s) return n.id;
  return "?";
}

std::string_view step_label(Step s) {
  for (const auto& n : kStepNames)
    if (n.step == s) return n.label;
  return "?";
}

std::optional<Step> parse_step(std::string_view id) {
  for (const auto& n : kStepNames)
    if (n.id == id) return n.step;
  for (const auto& a : kAliases)
    if (a.alias == id) return a.step;
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Matrices of a step

std::string_view per_head_stage(Step step, const core::Trace& trace) {
  const core::Variant variant = trace.config.variant;
  if (!core::has_heads(variant)) return {};
  switch (step) {
    case Step::Projections:  // a model's block shows each head's slice of [Q | K | V]
      return variant == core::Variant::MultiheadWrapper || !trace.model.empty()
                 ? core::stage_id::queries
                 : "";
    case Step::SplitHeads:
      return core::stage_id::queries;
    case Step::Scores:
      return core::stage_id::scores;
    case Step::Scaled:
      return core::stage_id::scaled_scores;
    case Step::Mask:
      return core::stage_id::mask;
    case Step::Masked:
      return core::stage_id::masked_scores;
    case Step::Softmax:
      return core::stage_id::weights;
    case Step::Dropout:
      return core::stage_id::dropped_weights;
    case Step::Context:
    case Step::Concat:
      return core::stage_id::context;
    case Step::Inputs:
    case Step::LayerNorm:
    case Step::OutProj:
    case Step::Residual:
      return {};
  }
  return {};
}

namespace {

// The steps of a model's block that differ from the chapter-3 classes': the
// block's input is another layer's stage, and there is no fused projection.
std::optional<StepMatrices> model_step_matrices(Step step, const core::Trace& t, int h) {
  StepMatrices m;
  auto add = [&](std::vector<const core::Stage*>& to, const core::StageKey& key) {
    if (const core::Stage* s = t.find(key)) to.push_back(s);
  };
  const core::StageKey input = core::block_input_key(t.layer);
  const int l = t.layer;
  switch (step) {
    case Step::Inputs:
      add(m.outputs, input);
      return m;
    case Step::LayerNorm:
      add(m.outputs, {l, -1, core::stage_id::ln_1});
      add(m.inputs, input);
      return m;
    case Step::Projections:
      for (auto id : {core::stage_id::queries, core::stage_id::keys, core::stage_id::values})
        add(m.outputs, {l, h, id});
      add(m.inputs, {l, -1, core::stage_id::ln_1});
      return m;
    case Step::Residual:
      add(m.outputs, {l, -1, core::stage_id::attn_output});
      add(m.inputs, input);
      add(m.inputs, {l, -1, core::stage_id::output});
      return m;
    default:
      return std::nullopt;  // the same as the book's classes
  }
}

}  // namespace

StepMatrices step_matrices(Step step, const core::Trace& t, int head) {
  const int h = core::stage_head(t, head);
  if (!t.model.empty())
    if (std::optional<StepMatrices> m = model_step_matrices(step, t, h)) return std::move(*m);
  const bool simple = t.config.variant == core::Variant::Simple;
  // Multihead projects once for all heads; the wrapper has one projection per head.
  const int proj_head = t.config.variant == core::Variant::Multihead ? -1 : h;
  StepMatrices m;
  auto add = [&](std::vector<const core::Stage*>& to, std::string_view id, int hh) {
    if (const core::Stage* s = t.find(id, hh)) to.push_back(s);
  };
  switch (step) {
    case Step::Inputs:
      add(m.outputs, core::stage_id::inputs, -1);
      break;
    case Step::Projections:
      for (auto id : {core::stage_id::queries, core::stage_id::keys, core::stage_id::values})
        add(m.outputs, id, proj_head);
      add(m.inputs, core::stage_id::inputs, -1);
      for (auto id : {core::stage_id::W_query, core::stage_id::W_key, core::stage_id::W_value,
                      core::stage_id::b_query, core::stage_id::b_key, core::stage_id::b_value})
        add(m.inputs, id, proj_head);
      break;
    case Step::SplitHeads:
      for (auto id : {core::stage_id::queries, core::stage_id::keys, core::stage_id::values})
        add(m.outputs, id, h);
      for (auto id : {core::stage_id::queries, core::stage_id::keys, core::stage_id::values})
        add(m.inputs, id, -1);
      break;
    case Step::Scores:
      add(m.outputs, core::stage_id::scores, h);
      if (simple) {
        add(m.inputs, core::stage_id::inputs, -1);
      } else {
        add(m.inputs, core::stage_id::queries, h);
        add(m.inputs, core::stage_id::keys, h);
      }
      break;
    case Step::Scaled:  // causal: the masked scores are what gets scaled
      add(m.outputs, core::stage_id::scaled_scores, h);
      add(m.inputs,
          t.find(core::stage_id::masked_scores, h) ? core::stage_id::masked_scores
                                                   : core::stage_id::scores,
          h);
      break;
    case Step::Mask:
      add(m.outputs, core::stage_id::mask, h);
      add(m.inputs, core::stage_id::scores, h);
      break;
    case Step::Masked:
      add(m.outputs, core::stage_id::masked_scores, h);
      add(m.inputs, core::stage_id::scores, h);
      add(m.inputs, core::stage_id::mask, h);
      break;
    case Step::Softmax:
      add(m.outputs, core::stage_id::weights, h);
      add(m.inputs,
          t.find(core::stage_id::scaled_scores, h) ? core::stage_id::scaled_scores
                                                   : core::stage_id::scores,
          h);
      break;
    case Step::Dropout:
      add(m.outputs, core::stage_id::dropped_weights, h);
      add(m.outputs, core::stage_id::dropout_mask, h);
      add(m.inputs, core::stage_id::weights, h);
      break;
    case Step::Context:
      add(m.outputs, core::stage_id::context, h);
      if (t.find(core::stage_id::dropped_weights, h))
        add(m.inputs, core::stage_id::dropped_weights, h);
      else
        add(m.inputs, core::stage_id::weights, h);
      add(m.inputs, simple ? core::stage_id::inputs : core::stage_id::values, simple ? -1 : h);
      break;
    case Step::Concat:
      add(m.outputs,
          t.config.variant == core::Variant::Multihead ? core::stage_id::concat
                                                       : core::stage_id::output,
          -1);
      for (int k = 0; k < t.heads_shown(); ++k) add(m.inputs, core::stage_id::context, k);
      break;
    case Step::OutProj:
      add(m.outputs, core::stage_id::output, -1);
      add(m.inputs, core::stage_id::concat, -1);
      add(m.inputs, core::stage_id::W_out, -1);
      add(m.inputs, core::stage_id::b_out, -1);
      break;
    case Step::LayerNorm:
    case Step::Residual:
      break;  // a model's steps only (model_step_matrices)
  }
  return m;
}

}  // namespace attnscope::gui
