// model_step_text.cpp: what each step of a real model's block says: the
// same ideas as the book's classes, with GPT-2's names (ln_1, c_attn,
// c_proj) and the numbers of the trace on screen.
#include <cmath>
#include <string>

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/io/io.hpp"
#include "attnscope/model/model_trace.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {

namespace {

namespace id = core::stage_id;

// The factor the block's scores were divided by, read from the trace: the
// masked score over the scaled one at the first visible cell where both are
// clearly non-zero (0 when the trace cannot tell).
double measured_scale(const core::Stage* masked, const core::Stage* scaled) {
  if (!masked || !scaled) return 0.0;
  const core::RowMatrix& m = masked->data();
  const core::RowMatrix& s = scaled->data();
  for (Eigen::Index i = 0; i < std::min(m.rows(), s.rows()); ++i)
    for (Eigen::Index j = 0; j <= i && j < std::min(m.cols(), s.cols()); ++j)
      if (std::isfinite(m(i, j)) && std::abs(s(i, j)) > 1e-3f)
        return static_cast<double>(m(i, j)) / static_cast<double>(s(i, j));
  return 0.0;
}

}  // namespace

// stage-literals: off (the symbols the texts print, not stage ids)
namespace {

// What every step's text of a block is computed from: the trace, the block
// and head shown, and the numbers several steps quote.
struct BlockStepContext {
  const core::Trace& t;
  int h = -1;                          // the stage head shown (core::stage_head)
  int l = 0;                           // the block (t.layer)
  std::string H;                       // h as text
  std::string T;                       // the number of tokens
  int d = 0;                           // the residual stream's width (t.d_in)
  int heads = 0;                       // the block's number of heads
  int d_head = 0;                      // one head's width
  std::string where;                   // " Block l, head h."
  const core::Stage* input = nullptr;  // the block's input
  std::string x_name;                  // the input's name in the residual step

  // The block's stage `id` of head `head` (-1: the layer's), or nullptr.
  const core::Stage* find(std::string_view id, int head) const {
    return t.find(core::StageKey{l, head, id});
  }
};

BlockStepContext block_step_context(const core::Trace& t, int head) {
  const int h = core::stage_head(t, head);
  const int l = t.layer;
  const std::string L = std::to_string(l), H = std::to_string(h);
  const int d = t.d_in;
  const int heads = t.heads_shown();
  return BlockStepContext{
      .t = t,
      .h = h,
      .l = l,
      .H = H,
      .T = std::to_string(t.num_tokens()),
      .d = d,
      .heads = heads,
      .d_head = heads > 0 ? d / heads : d,
      .where = " Block " + L + ", head " + H + ".",
      .input = t.find(t.block_input_key()),
      .x_name = l == 0 ? "x (embeddings)" : "x (block " + std::to_string(l - 1) + ")"};
}

// The block's input, ln_1 and the projections to Q, K and V.
StepText describe_block_input(Step step, const BlockStepContext& x) {
  const auto& [t, h, l, H, T, d, heads, d_head, where, input, x_name] = x;
  StepText s;
  switch (step) {
    case Step::Inputs:
      s.title = "The block's input: the residual stream";
      s.plain = l == 0 ? "Each token's row is its token embedding plus its position's embedding "
                         "(wte[id] + wpe[position]): the model's version of chapter 2's inputs, "
                         "learned instead of random."
                       : "Each token's row is what block " + std::to_string(l - 1) +
                             " handed on: the embeddings plus every earlier block's additions "
                             "(the residual stream). Attention in this block reads it.";
      s.formula =
          l == 0 ? "x = wte[ids] + wpe[0..T)" : "x = block " + std::to_string(l - 1) + " output";
      s.shapes =
          sym(input, Wording::Model) + ": " + T + " tokens × " + std::to_string(d) + " dimensions";
      break;
    case Step::LayerNorm:
      s.title = "LayerNorm before attention (ln_1)";
      s.plain =
          "Each row is shifted to mean 0 and scaled to variance 1, then multiplied by a learned "
          "gain and shifted by a learned bias. GPT-2 normalises before attention (pre-LN), so "
          "the residual stream itself keeps its size.";
      s.formula = "ln_1(x) = (x − mean) / √(var + ε) · γ + β";
      s.shapes = sym(input, Wording::Model) + " → " + sym(x.find(id::ln_1, -1), Wording::Model);
      break;
    case Step::Projections:
      s.title = "Queries, keys and values of head " + H;
      s.plain = "One learned layer (c_attn) maps each normalised row to " + std::to_string(3 * d) +
                " numbers: Q, K and V side by side. Head " + H + " takes columns " +
                std::to_string(h * d_head) + " to " + std::to_string((h + 1) * d_head - 1) +
                " of each, as MultiHeadAttention's view(b, T, heads, head_dim) does.";
      s.formula = "[Q | K | V] = ln_1 · W_attn + b_attn";
      s.shapes = sym(x.find(id::ln_1, -1), Wording::Model) + " → " +
                 sym(x.find(id::queries, h), Wording::Model) + ", the same for K and V";
      break;
    default:  // the other groups' steps
      break;
  }
  return s;
}

// One head's attention: scores, mask, scaling, softmax and context vectors.
StepText describe_block_attention(Step step, const BlockStepContext& x) {
  const auto& [t, h, l, H, T, d, heads, d_head, where, input, x_name] = x;
  StepText s;
  switch (step) {
    case Step::Scores:
      s.title = "Attention scores";
      s.plain =
          "Each query row is compared with every key row by a dot product: a high score "
          "means the token (row) finds that token (column) relevant." +
          where;
      s.formula = "ω = Q_h · K_hᵀ";
      s.shapes = sym(x.find(id::queries, h), Wording::Model) + " · K_hᵀ → " +
                 sym(x.find(id::scores, h), Wording::Model);
      break;
    case Step::Mask:
      s.title = "The causal mask";
      s.plain =
          "GPT-2 predicts the next token, so a token may not look at later ones: the "
          "cells above the diagonal are marked to be hidden.";
      s.formula = "mask[i][j] = 1 where j > i";
      s.shapes = sym(x.find(id::mask, h), Wording::Model) + ", " + T + " × " + T;
      break;
    case Step::Masked:
      s.title = "Masked scores";
      s.plain = "The future's scores become −∞, so softmax will give them weight 0 exactly.";
      s.formula = stage_symbol(id::masked_scores, Wording::Model) + " = " +
                  stage_symbol(id::scores, Wording::Model) + " where j ≤ i, else −∞";
      s.shapes = sym(x.find(id::scores, h), Wording::Model) + " → " +
                 sym(x.find(id::masked_scores, h), Wording::Model);
      break;
    case Step::Scaled: {
      s.title = "Scaled scores";
      const double f = measured_scale(x.find(id::masked_scores, h), x.find(id::scaled_scores, h));
      const double root = std::sqrt(static_cast<double>(d_head));
      s.plain = "Dividing by √d_head = √" + std::to_string(d_head) + " = " +
                core::fixed_text(root, 3) +
                " keeps the scores from growing with the head's width, which would push softmax "
                "towards one-hot rows.";
      if (f > 0 && std::abs(f - root) > 1e-3 * root)
        s.plain +=
            " This model also divides by the layer number + 1 (scale_attn_by_inverse_"
            "layer_idx): the scores here are divided by " +
            core::fixed_text(f, 3) + ".";
      s.formula = stage_symbol(id::masked_scores, Wording::Model) + " / √d_head";
      s.shapes = sym(x.find(id::masked_scores, h), Wording::Model) + " ÷ " +
                 core::fixed_text(f, 3) + " → " + sym(x.find(id::scaled_scores, h), Wording::Model);
      break;
    }
    case Step::Softmax:
      s.title = "Attention weights";
      s.plain =
          "Softmax turns each row into weights that are positive and sum to 1: how much of "
          "each earlier token this token takes in." +
          where;
      s.formula = stage_symbol(id::weights, Wording::Model) + " = softmax(" +
                  stage_symbol(id::scaled_scores, Wording::Model) + ", row)";
      s.shapes = sym(x.find(id::scaled_scores, h), Wording::Model) + " → " +
                 sym(x.find(id::weights, h), Wording::Model) + ", each row sums to 1";
      break;
    case Step::Context:
      s.title = "Context vectors of head " + H;
      s.plain = "Each token's new row is the weighted sum of the value rows it attends to.";
      s.formula = "Z_h = weights · V_h";
      s.shapes = sym(x.find(id::weights, h), Wording::Model) + " · " +
                 sym(x.find(id::values, h), Wording::Model) + " → " +
                 sym(x.find(id::context, h), Wording::Model);
      break;
    default:  // the other groups' steps
      break;
  }
  return s;
}

// The heads put together, c_proj and the addition to the residual stream.
StepText describe_block_output(Step step, const BlockStepContext& x) {
  const auto& [t, h, l, H, T, d, heads, d_head, where, input, x_name] = x;
  StepText s;
  switch (step) {
    case Step::Concat:
      s.title = "The heads side by side";
      s.plain = "The " + std::to_string(heads) + " heads' context vectors, each " +
                std::to_string(d_head) +
                " wide, are put next to each other: " + std::to_string(heads) + " × " +
                std::to_string(d_head) + " = " + std::to_string(d) +
                " columns again. On the left, head " + std::to_string(h) + "'s part: columns " +
                std::to_string(h * d_head) + " to " + std::to_string((h + 1) * d_head - 1) +
                " of the concatenation; the grid below shows every head's.";
      s.formula = "concat = [Z_0 | Z_1 | … | Z_" + std::to_string(heads - 1) + "]";
      s.shapes = sym(x.find(id::concat, -1), Wording::Model);
      break;
    case Step::OutProj:
      s.title = "Output projection (c_proj)";
      s.plain = "A learned layer mixes the heads' columns, as the book's out_proj does.";
      s.formula = "output = concat · W_proj + b_proj";
      s.shapes = sym(x.find(id::concat, -1), Wording::Model) + " → " +
                 sym(x.find(id::output, -1), Wording::Model);
      break;
    case Step::Residual:
      s.title = "Back into the residual stream";
      s.plain =
          "The block adds attention's output to its input instead of replacing it (the "
          "shortcut of chapter 4). The MLP then adds its own part before block " +
          std::to_string(l + 1) + " reads the sum.";
      s.formula = "attn_output = x + output";
      s.shapes = sym(input, x_name) + " + " + sym(x.find(id::output, -1), Wording::Model) + " → " +
                 sym(x.find(id::attn_output, -1), Wording::Model);
      break;
    default:  // the other groups' steps
      break;
  }
  return s;
}

// The block's second half, the feed-forward network (chapter 4's FeedForward
// with its GELU and LayerNorm), the second shortcut, and at the last block
// the final LayerNorm and the logits.
StepText describe_block_mlp(Step step, const BlockStepContext& x) {
  const auto& [t, h, l, H, T, d, heads, d_head, where, input, x_name] = x;
  const core::Stage* hidden = x.find(core::stage_id::mlp_hidden, -1);
  const std::string wide = hidden ? std::to_string(hidden->data().cols()) : "4 × d";
  const bool last = t.find(core::StageKey{-1, -1, core::stage_id::ln_f}) != nullptr;
  const std::string next = last ? "the final LayerNorm" : "block " + std::to_string(l + 1);
  StepText s;
  switch (step) {
    case Step::LayerNorm2:
      s.title = "LayerNorm before the MLP (ln_2)";
      s.plain =
          "The residual after attention is normalised again, row by row: mean 0, variance 1, "
          "then the learned scale and shift. As in chapter 4, each sub-layer of the block reads "
          "a normalised copy while the stream itself keeps its scale.";
      s.formula = "ln_2 = (a − mean) / √(var + ε) · γ₂ + β₂,  a = x + attn";
      s.shapes = sym(x.find(core::stage_id::attn_output, -1), Wording::Model) + " → " +
                 sym(x.find(core::stage_id::ln_2, -1), Wording::Model);
      break;
    case Step::MlpHidden:
      s.title = "Feed forward, first layer (c_fc): " + std::to_string(d) + " → " + wide;
      s.plain =
          "Each token on its own (no token reads another here) goes through a linear layer "
          "that widens it to " +
          wide +
          " columns: the book's FeedForward expands by four so the next step has room to mix "
          "features.";
      s.formula = "h = ln_2 · W_fc + b_fc";
      s.shapes = sym(x.find(core::stage_id::ln_2, -1), Wording::Model) + " → " +
                 sym(hidden, Wording::Model);
      break;
    case Step::Activation:
      s.title = "GELU";
      s.plain =
          "Each value goes through GELU, the smooth cousin of ReLU that chapter 4 uses: large "
          "positive values pass almost unchanged, large negative ones become almost 0, and "
          "small negative ones stay slightly negative. Compare the two maps: the blue cells "
          "fade.";
      s.formula = "GELU(h) ≈ 0.5 · h · (1 + tanh(√(2/π) · (h + 0.044715 · h³)))";
      s.shapes = sym(hidden, Wording::Model) + " → " +
                 sym(x.find(core::stage_id::mlp_activation, -1), Wording::Model);
      break;
    case Step::MlpOutput:
      s.title = "Feed forward, second layer (c_proj): " + wide + " → " + std::to_string(d);
      s.plain = "A second linear layer brings each token back to the residual stream's " +
                std::to_string(d) + " columns: what the MLP adds to it.";
      s.formula = "mlp = GELU(h) · W_proj + b_proj";
      s.shapes = sym(x.find(core::stage_id::mlp_activation, -1), Wording::Model) + " → " +
                 sym(x.find(core::stage_id::mlp_output, -1), Wording::Model);
      break;
    case Step::BlockOutput:
      s.title = "The second shortcut: the block's output";
      s.plain =
          "The MLP's output is added to the residual after attention, the second shortcut "
          "connection of chapter 4's TransformerBlock. The sum is what " +
          next + " reads.";
      s.formula = "x' = (x + attn) + mlp";
      s.shapes = sym(x.find(core::stage_id::attn_output, -1), Wording::Model) + " + " +
                 sym(x.find(core::stage_id::mlp_output, -1), Wording::Model) + " → " +
                 sym(x.find(core::stage_id::block_output, -1), Wording::Model);
      break;
    case Step::FinalNorm:
      s.title = "The final LayerNorm (ln_f)";
      s.plain =
          "After the last block, GPTModel normalises every row once more (final_norm in the "
          "book) before the output head reads it.";
      s.formula = "ln_f = LayerNorm(x_" + std::to_string(l + 1) + ")";
      s.shapes = sym(x.find(core::stage_id::block_output, -1), Wording::Model) + " → " +
                 sym(t.find(core::StageKey{-1, -1, core::stage_id::ln_f}), Wording::Model);
      break;
    case Step::Logits:
      s.title = "Logits: a score for every token of the vocabulary";
      s.plain =
          "The output head (out_head in the book; GPT-2 reuses the token embeddings) turns "
          "the chosen token's row of ln_f into one score per vocabulary entry. The softmax of "
          "these scores is the next-token distribution; the largest wins in greedy decoding.";
      s.formula = "logits = ln_f[i] · W_headᵀ";
      s.shapes = sym(t.find(core::StageKey{-1, -1, core::stage_id::ln_f}), Wording::Model) +
                 " row → " +
                 sym(t.find(core::StageKey{-1, -1, core::stage_id::logits}), Wording::Model);
      break;
    default:  // the other groups' steps
      break;
  }
  return s;
}

}  // namespace

StepText describe_model_step(Step step, const core::Trace& t, int head) {
  if (!t.block.family.empty()) return describe_family_step(step, t, head);
  const BlockStepContext x = block_step_context(t, head);
  switch (step) {
    case Step::Inputs:
    case Step::LayerNorm:
    case Step::Projections:
      return describe_block_input(step, x);
    case Step::Scores:
    case Step::Mask:
    case Step::Masked:
    case Step::Scaled:
    case Step::Softmax:
    case Step::Context:
      return describe_block_attention(step, x);
    case Step::Concat:
    case Step::OutProj:
    case Step::Residual:
      return describe_block_output(step, x);
    case Step::LayerNorm2:
    case Step::MlpHidden:
    case Step::Activation:
    case Step::MlpOutput:
    case Step::BlockOutput:
    case Step::FinalNorm:
    case Step::Logits:
      return describe_block_mlp(step, x);
    case Step::SplitHeads:
    case Step::Dropout: {
      StepText s;
      s.title = std::string(step_label(step));
      s.plain = "A model's block has no such step (eval mode, one fused projection).";
      return s;
    }
    case Step::Memory:
    case Step::Latent:
    case Step::QkNorm:
    case Step::Rotate:
    case Step::KvGroups:
    case Step::WindowMask: {
      StepText s;
      s.title = std::string(step_label(step));
      s.plain =
          "GPT-2's attention has no such step: it is one of the mechanisms that came after it "
          "(a second sequence, a K/V latent, RoPE, shared K/V heads, a sliding window).";
      return s;
    }
  }
  return {};
}
// stage-literals: on

}  // namespace attnscope::gui
