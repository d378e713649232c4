// step.cpp: the steps of each variant, their names, and the matrices each shows.
#include "state/step.hpp"

#include <algorithm>
#include <array>

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/base/stages.hpp"

namespace attnscope::gui {

// ---------------------------------------------------------------------------
// Steps and their names

namespace {

namespace id = core::stage_id;

// Each step, the stages it shows (the first is the one it makes), and how
// it is named. Which steps a block has, and in what order, comes from the
// stage catalogue's rows for its recipe (steps_for), not from this table.
struct StepRow {
  Step step;
  std::string_view id;
  std::string_view label;
  std::array<std::string_view, 3> shows;
};
// stage-literals: off (step names)
constexpr StepRow kSteps[] = {
    {Step::Inputs, "inputs", "Inputs", {id::inputs, id::embeddings}},
    {Step::Memory, "memory", "Memory", {id::memory}},
    {Step::LayerNorm, "ln_1", "LayerNorm", {id::ln_1}},
    {Step::Latent, "latent", "Latent", {id::latent_kv}},
    {Step::Projections, "qkv", "Q/K/V", {id::queries, id::keys, id::values}},
    {Step::SplitHeads, "split", "Split heads", {id::queries}},
    {Step::QkNorm, "qk_norm", "Q/K norm", {id::queries_normed, id::keys_normed}},
    {Step::Rotate, "rope", "RoPE", {id::queries_rotated, id::keys_rotated}},
    {Step::KvGroups, "kv_groups", "K/V heads", {id::group_keys, id::group_values}},
    {Step::Scores, "scores", "Scores", {id::scores}},
    {Step::Mask, "mask", "Mask", {id::mask}},
    {Step::WindowMask, "window", "Window", {id::window_mask}},
    {Step::Masked, "masked", "Masked", {id::masked_scores}},
    {Step::Scaled, "scaled", "Scaled", {id::scaled_scores}},
    {Step::Softmax, "softmax", "Softmax", {id::weights}},
    {Step::Dropout, "dropout", "Dropout", {id::dropped_weights, id::dropout_mask}},
    {Step::Context, "context", "Context", {id::context}},
    {Step::Concat, "concat", "Concat", {id::concat}},
    {Step::OutProj, "output", "Out proj", {id::output}},
    {Step::Residual, "residual", "Residual", {id::attn_output}},
    {Step::LayerNorm2, "ln_2", "LayerNorm 2", {id::ln_2}},
    {Step::MlpHidden, "fc", "MLP fc", {id::mlp_hidden}},
    {Step::Activation, "gelu", "GELU", {id::mlp_activation}},
    {Step::MlpOutput, "mlp_proj", "MLP proj", {id::mlp_output}},
    {Step::BlockOutput, "block_output", "Residual 2", {id::block_output}},
    {Step::FinalNorm, "ln_f", "Final norm", {id::ln_f}},
    {Step::Logits, "logits", "Logits", {id::logits}},
};
// Other spellings people type for a step (stage ids are read from kSteps).
struct StepSpelling {
  std::string_view word;
  Step step;
};
constexpr StepSpelling kSpellings[] = {
    {"projections", Step::Projections},
    {"split_heads", Step::SplitHeads},
    {"heads", Step::SplitHeads},
    {"attn_weights", Step::Softmax},
    {"context_vec", Step::Context},
    {"out_proj", Step::OutProj},
    {"layernorm", Step::LayerNorm},
    {"rotate", Step::Rotate},
    {"gqa", Step::KvGroups},
    {"groups", Step::KvGroups},
    {"sliding_window", Step::WindowMask},
};
// stage-literals: on

const StepRow& row_of(Step s) {
  for (const auto& r : kSteps)
    if (r.step == s) return r;
  return kSteps[0];
}

// The step that shows the catalogue's stage `stage` in a block of recipe
// `r`, if one does: a fused [Q | K | V] is split as it is projected, and
// the wrapper's output is its heads' contexts side by side (a projection
// split into heads gets its step from steps_for).
std::optional<Step> step_showing(std::string_view stage, const core::BlockRecipe& r) {
  if (stage == id::output && !r.has(core::BlockPart::OutProj)) return Step::Concat;
  for (const auto& row : kSteps)
    if (row.shows[0] == stage) return row.step;  // queries: Projections, the first
  return std::nullopt;
}

}  // namespace

std::vector<Step> steps_for(const core::BlockRecipe& recipe) {
  std::vector<Step> out;
  for (std::string_view stage : core::block_stage_ids(recipe)) {
    if (std::optional<Step> s = step_showing(stage, recipe);
        s && std::find(out.begin(), out.end(), *s) == out.end())
      out.push_back(*s);
    // Splitting a projection into heads comes right after it.
    if (stage == id::values && recipe.split_heads && !recipe.fused_qkv)
      out.push_back(Step::SplitHeads);
  }
  return out;
}

std::vector<Step> steps_for(core::Variant v) { return steps_for(core::chapter3_recipe(v)); }

std::vector<Step> steps_for(const core::Trace& trace) {
  std::vector<Step> out = steps_for(trace.recipe());
  // The last block of a model run goes on through the head of the model.
  if (trace.is_model() && trace.find(core::StageKey{-1, -1, id::ln_f}))
    out.push_back(Step::FinalNorm);
  if (trace.is_model() && trace.find(core::StageKey{-1, -1, id::logits}))
    out.push_back(Step::Logits);
  return out;
}

std::string_view step_id(Step s) { return row_of(s).id; }

std::string_view step_label(Step s) { return row_of(s).label; }

std::optional<Step> parse_step(std::string_view name) {
  for (const auto& r : kSteps)
    if (r.id == name) return r.step;
  for (const auto& r : kSteps)
    for (std::string_view stage : r.shows)
      if (!stage.empty() && stage == name) return r.step;
  for (const auto& w : kSpellings)
    if (w.word == name) return w.step;
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Matrices of a step

std::string_view per_head_stage(Step step, const core::Trace& trace) {
  const core::BlockRecipe r = trace.recipe();
  if (!r.has(core::BlockPart::Heads)) return {};
  switch (step) {
    case Step::Projections:  // per head unless one projection is split afterwards
      return r.split_heads && !r.fused_qkv ? "" : id::queries;
    case Step::Concat:
      return id::context;
    case Step::KvGroups:  // the keys each query head reads: shared heads look alike
      return id::keys;
    case Step::Inputs:
    case Step::Memory:
    case Step::Latent:
    case Step::LayerNorm:
    case Step::OutProj:
    case Step::Residual:
    case Step::LayerNorm2:
    case Step::MlpHidden:
    case Step::Activation:
    case Step::MlpOutput:
    case Step::BlockOutput:
    case Step::FinalNorm:
    case Step::Logits:
      return {};
    default:
      return row_of(step).shows[0];
  }
}

namespace {

// The steps after attention in a model's block: the MLP half, the second
// residual, and at the last block the final LayerNorm and the logits.
StepMatrices mlp_step_matrices(Step step, const core::Trace& t) {
  const int l = t.layer;
  StepMatrices m;
  auto add = [&](std::vector<const core::Stage*>& to, std::string_view sid, int hh) {
    if (const core::Stage* s = t.find(core::StageKey{l, hh, sid})) to.push_back(s);
  };
  auto add_key = [&](std::vector<const core::Stage*>& to, const core::StageKey& key) {
    if (const core::Stage* s = t.find(key)) to.push_back(s);
  };
  switch (step) {
    case Step::LayerNorm2:
      add(m.outputs, id::ln_2, -1);
      add(m.inputs, id::attn_output, -1);
      break;
    case Step::MlpHidden:
      add(m.outputs, id::mlp_hidden, -1);
      add(m.inputs, id::ln_2, -1);
      break;
    case Step::Activation:
      add(m.outputs, id::mlp_activation, -1);
      add(m.inputs, id::mlp_hidden, -1);
      break;
    case Step::MlpOutput:
      add(m.outputs, id::mlp_output, -1);
      add(m.inputs, id::mlp_activation, -1);
      break;
    case Step::BlockOutput:
      add(m.outputs, id::block_output, -1);
      add(m.inputs, id::attn_output, -1);
      add(m.inputs, id::mlp_output, -1);
      break;
    case Step::FinalNorm:
      add_key(m.outputs, core::StageKey{-1, -1, id::ln_f});
      add(m.inputs, id::block_output, -1);
      break;
    case Step::Logits:
      add_key(m.outputs, core::StageKey{-1, -1, id::logits});
      add_key(m.inputs, core::StageKey{-1, -1, id::ln_f});
      break;
    default:  // the attention's steps: step_matrices
      break;
  }
  return m;
}

// The steps of the classes after chapter 3: the second sequence, the
// latent, RoPE, the shared K/V heads and the window.
StepMatrices after_chapter3_matrices(Step step, const core::Trace& t, int h) {
  const int l = t.layer;
  const core::StageKey input = t.block_input_key();
  StepMatrices m;
  auto add = [&](std::vector<const core::Stage*>& to, std::string_view sid, int hh) {
    if (const core::Stage* s = t.find(core::StageKey{l, hh, sid})) to.push_back(s);
  };
  auto add_key = [&](std::vector<const core::Stage*>& to, const core::StageKey& key) {
    if (const core::Stage* s = t.find(key)) to.push_back(s);
  };
  switch (step) {
    case Step::Memory:
      add(m.outputs, id::memory, -1);
      add_key(m.inputs, input);
      break;
    case Step::Latent:
      add(m.outputs, id::latent_kv, -1);
      add_key(m.inputs, input);
      add(m.inputs, id::W_down, -1);
      add(m.inputs, id::b_down, -1);
      break;
    case Step::QkNorm:
      add(m.outputs, id::queries_normed, h);
      add(m.outputs, id::keys_normed, h);
      add(m.inputs, id::queries, h);
      add(m.inputs, id::keys, h);
      break;
    case Step::Rotate: {
      add(m.outputs, id::queries_rotated, h);
      add(m.outputs, id::keys_rotated, h);
      const bool normed = t.find(core::StageKey{l, h, id::queries_normed}) != nullptr;
      add(m.inputs, normed ? id::queries_normed : id::queries, h);
      add(m.inputs, normed ? id::keys_normed : id::keys, h);
      break;
    }
    case Step::KvGroups:
      for (int g = 0; t.find(core::StageKey{l, g, id::group_keys}); ++g) {
        add(m.outputs, id::group_keys, g);
        add(m.outputs, id::group_values, g);
      }
      add(m.inputs, id::keys, -1);
      add(m.inputs, id::values, -1);
      break;
    case Step::WindowMask:
      add(m.outputs, id::window_mask, h);
      add(m.inputs, id::mask, h);
      break;
    default:  // the chapter-3 steps: step_matrices
      break;
  }
  return m;
}

}  // namespace

StepMatrices step_matrices(Step step, const core::Trace& t, int head) {
  const int h = core::stage_head(t, head);
  const core::BlockRecipe r = t.recipe();
  const bool projected = r.has(core::BlockPart::Projection);
  // One projection split into heads afterwards is the whole layer's.
  const int proj_head = r.split_heads && !r.fused_qkv ? -1 : h;
  const int l = t.layer;
  const core::StageKey input = t.block_input_key();
  StepMatrices m;
  auto add = [&](std::vector<const core::Stage*>& to, std::string_view sid, int hh) {
    if (const core::Stage* s = t.find(core::StageKey{l, hh, sid})) to.push_back(s);
  };
  auto add_key = [&](std::vector<const core::Stage*>& to, const core::StageKey& key) {
    if (const core::Stage* s = t.find(key)) to.push_back(s);
  };
  // What the projections read: the normalised input when the block has a norm.
  const core::StageKey projected_from =
      r.has(core::BlockPart::Norm) ? core::StageKey{l, -1, id::ln_1} : input;
  switch (step) {
    case Step::Inputs:
      add_key(m.outputs, input);
      break;
    case Step::Memory:
    case Step::Latent:
    case Step::QkNorm:
    case Step::Rotate:
    case Step::KvGroups:
    case Step::WindowMask:
      return after_chapter3_matrices(step, t, h);
    case Step::LayerNorm:
      add(m.outputs, id::ln_1, -1);
      add_key(m.inputs, input);
      break;
    case Step::Projections:
      for (auto sid : {id::queries, id::keys, id::values}) add(m.outputs, sid, proj_head);
      add_key(m.inputs, projected_from);
      add(m.inputs, id::memory, -1);     // cross: keys and values come from it
      add(m.inputs, id::latent_kv, -1);  // latent: keys and values come up from it
      for (auto sid : {id::W_query, id::W_key, id::W_value, id::W_up_key, id::W_up_value,
                       id::b_query, id::b_key, id::b_value, id::b_up_key, id::b_up_value})
        add(m.inputs, sid, proj_head);
      break;
    case Step::SplitHeads:
      for (auto sid : {id::queries, id::keys, id::values}) add(m.outputs, sid, h);
      for (auto sid : {id::queries, id::keys, id::values}) add(m.inputs, sid, -1);
      break;
    case Step::Scores: {
      add(m.outputs, id::scores, h);
      const bool rotated = t.find(id::queries_rotated, h) != nullptr;
      if (!projected) {
        add_key(m.inputs, input);
      } else {
        add(m.inputs, rotated ? id::queries_rotated : id::queries, h);
        add(m.inputs, rotated ? id::keys_rotated : id::keys, h);
      }
      break;
    }
    case Step::Scaled:  // causal: the masked scores are what gets scaled
      add(m.outputs, id::scaled_scores, h);
      add(m.inputs, t.find(id::masked_scores, h) ? id::masked_scores : id::scores, h);
      break;
    case Step::Mask:
      add(m.outputs, id::mask, h);
      add(m.inputs, id::scores, h);
      break;
    case Step::Masked:  // a sliding window's scores take the window's mask
      add(m.outputs, id::masked_scores, h);
      add(m.inputs, id::scores, h);
      add(m.inputs, t.find(id::window_mask, h) ? id::window_mask : id::mask, h);
      break;
    case Step::Softmax:
      add(m.outputs, id::weights, h);
      add(m.inputs, t.find(id::scaled_scores, h) ? id::scaled_scores : id::scores, h);
      break;
    case Step::Dropout:
      add(m.outputs, id::dropped_weights, h);
      add(m.outputs, id::dropout_mask, h);
      add(m.inputs, id::weights, h);
      break;
    case Step::Context:
      add(m.outputs, id::context, h);
      add(m.inputs, t.find(id::dropped_weights, h) ? id::dropped_weights : id::weights, h);
      if (projected)
        add(m.inputs, id::values, h);
      else
        add_key(m.inputs, input);
      break;
    case Step::Concat:
      add(m.outputs, r.has(core::BlockPart::OutProj) ? id::concat : id::output, -1);
      // A model's heads (12 of T x 64 in GPT-2) would share the inputs' column
      // in boxes too small for their cells: its focused head's context, the
      // slice the concat's band of that head holds; the heads grid has them all.
      if (t.is_model())
        add(m.inputs, id::context, h);
      else
        for (int k = 0; k < t.heads_shown(); ++k) add(m.inputs, id::context, k);
      break;
    case Step::OutProj:
      add(m.outputs, id::output, -1);
      add(m.inputs, id::concat, -1);
      add(m.inputs, id::W_out, -1);
      add(m.inputs, id::b_out, -1);
      break;
    case Step::Residual:
      add(m.outputs, id::attn_output, -1);
      add_key(m.inputs, input);
      add(m.inputs, id::output, -1);
      break;
    case Step::LayerNorm2:
    case Step::MlpHidden:
    case Step::Activation:
    case Step::MlpOutput:
    case Step::BlockOutput:
    case Step::FinalNorm:
    case Step::Logits:
      return mlp_step_matrices(step, t);
  }
  return m;
}

}  // namespace attnscope::gui
