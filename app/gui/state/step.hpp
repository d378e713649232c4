// step.hpp: the stepper's steps. A Step is a point of the attention
// pipeline the stepper walks (not a raw trace stage id); it shows the trace
// stages it produced large and the ones it read beside them.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "attnscope/base/config.hpp"
#include "attnscope/base/trace.hpp"

namespace attnscope::gui {

// Steps: the stages of the stepper. A step shows one or more trace stages
// (Projections shows queries, keys and values). The order a block walks them
// in is the stage catalogue's (steps_for); the enum's order is the same, and
// fix_selection relies on it only to land near the step it left.
enum class Step {
  Inputs,       // X, the token embeddings (a model: the block's input, the residual stream)
  Memory,       // cross-attention: M, the second sequence keys and values come from
  LayerNorm,    // a model's ln_1: each row normalised before attention
  Latent,       // latent attention: C_kv = X . W_DKV, the few columns the cache keeps
  Projections,  // Q, K, V = X . W_query, W_key, W_value
  SplitHeads,   // multihead: Q, K, V cut into num_heads column groups
  QkNorm,       // Qwen3, Gemma 3: each head's q and k rows RMS-normalised before RoPE
  Rotate,       // RoPE: each head's q and k rotated by their positions
  KvGroups,     // grouped-query: the K/V heads and the query heads reading each
  Scores,       // omega = Q . K^T  (simple: X . X^T)
  Mask,         // which keys are in a query's future
  WindowMask,   // sliding window: also the keys more than W - 1 back
  Masked,       // future scores set to -inf (the book masks before scaling)
  Scaled,       // omega / sqrt(d_k) (causal: the masked scores / sqrt(d_k))
  Softmax,      // attention weights, rows sum to 1
  Dropout,      // nn.Dropout on the weights
  Context,      // Z = weights . V
  Concat,       // heads' contexts side by side
  OutProj,      // multihead: output = concat . W_out + b_out
  Residual,     // a model's block: x + output (the attention's part of the residual stream)
  LayerNorm2,   // a model's ln_2: the residual after attention normalised for the MLP
  MlpHidden,    // the MLP's first layer (c_fc): d -> 4d columns
  Activation,   // GELU on each of those values
  MlpOutput,    // the MLP's second layer (c_proj): back to d columns
  BlockOutput,  // x + attn + MLP: the second shortcut, the next block's input
  FinalNorm,    // the last block only: ln_f, the final LayerNorm
  Logits,       // the last block only: the clicked token's next-token scores
};

// The steps of a block of `recipe`, in pipeline order: the catalogue's
// rows for the recipe (core::block_stage_ids) and the step that shows each.
std::vector<Step> steps_for(const core::BlockRecipe& recipe);
// The steps of a chapter-3 class (its recipe's).
std::vector<Step> steps_for(core::Variant v);
// The steps of a trace: its recipe's (a chapter-3 class, or a model's block:
// Inputs, LayerNorm, Q/K/V per head, ..., Concat, OutProj, Residual, then the
// MLP's steps to BlockOutput; the last block adds FinalNorm and Logits).
std::vector<Step> steps_for(const core::Trace& trace);
// The id used on the command line and in sessions, e.g. "scaled".
std::string_view step_id(Step s);
// The short name on the stage strip, e.g. "Q/K/V".
std::string_view step_label(Step s);
// Parses step_id() or a trace stage id ("scaled_scores", "weights", ...).
std::optional<Step> parse_step(std::string_view id);

// The matrices a step shows: what it produced, and what it read.
struct StepMatrices {
  std::vector<const core::Stage*> outputs;
  std::vector<const core::Stage*> inputs;
};
StepMatrices step_matrices(Step step, const core::Trace& trace, int head);

// The per-head stage the heads grid shows for a step ("weights"), or "" when
// the step has no per-head matrix in this trace's variant (or model block).
std::string_view per_head_stage(Step step, const core::Trace& trace);

}  // namespace attnscope::gui
