// family_trace.hpp: a Llama/Mistral/Qwen/Gemma 3 run as the app reads it:
// one block's stages as a Trace in the stage catalogue's ids (the stepper,
// the heatmaps and the exports read it as they read GPT-2's), the logits
// after any position, the next tokens, the text's loss and the induction
// scores of every head.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "attnscope/base/trace.hpp"
#include "attnscope/model/family_model.hpp"
#include "attnscope/model/predictions.hpp"

namespace attnscope::core {

// The block of layer `layer` as a recipe: RMSNorm, split heads from one
// fused projection, RoPE, q/k norm where the config has it, K/V groups
// where there are fewer K/V heads than query heads, the window where the
// layer slides, a gated MLP (SwiGLU or GeGLU).
BlockDescription family_block(const FamilyConfig& c, int layer);

// One layer's stages that are computed row by row (every stage of the block
// but the T x T maps and the contexts), as a family_layer_trace made them
// for the text `ids`. Row i of each depends on the tokens 0..i only (the
// model is causal), so the next trace of the layer copies the rows of the
// tokens its text shares with `ids`: an edit at the end of a text projects
// and runs the MLP for its new rows only. Kept while the rows take at most
// kMaxBytes; past that the trace computes every row and keeps none.
struct FamilyLayerRows {
  static constexpr std::size_t kMaxBytes = std::size_t{256} << 20;
  const FamilyModel* model = nullptr;  // whose weights made the rows
  int layer = -1;
  std::vector<int> ids;
  FamilyLayerStages stages;  // normed, Q, K, V, after q/k norm, after RoPE
  // After the heads: the same matrices the trace's stages hold (shared).
  std::shared_ptr<RowMatrix> output, attn_output, ln_2, mlp_hidden, mlp_activation, mlp_output;
  void clear() { *this = FamilyLayerRows{}; }
};

// Block `layer` of `run` as a ModelBlock trace: its input (the embeddings,
// or the previous block's output), the input norm (ln_1), per head Q, K, V
// (a head's K and V are its K/V group's), after q/k norm, after RoPE, the
// scores, causal mask, window mask (sliding layers), masked and scaled
// scores, weights and context (every head's when `every_head`, else head
// `head`'s and every head's weights), each K/V group's keys and values, the
// heads side by side, the output projection, the residual after attention
// (Gemma: after its post-attention norm), the pre-MLP norm (ln_2), [gate |
// up], the gated activation, the MLP's output and the block's output. The
// last block adds the final norm (ln_f) and the logits after `position`
// (-1: the last token). `tokens` name the rows; `text` is the decoded text.
// Throws std::invalid_argument for a layer or head the model does not have.
//
// `rows`, when given, holds the layer's row-wise stages from the last trace
// (FamilyLayerRows): the rows of the tokens that text shares with this one
// are copied from it, not computed, and it is left holding this trace's.
Trace family_layer_trace(const FamilyRun& run, int layer, int head, bool every_head,
                         std::vector<std::string> tokens, std::string text, std::string model,
                         int position = -1, FamilyLayerRows* rows = nullptr);

// The logits (1 x vocab) after token `position`: the final norm of its
// last residual through the LM head (softcapped where the config says).
// Throws std::invalid_argument outside 0..T-1.
RowMatrix family_position_logits(const FamilyRun& run, int position);

// The k most likely next tokens after `position`, named by `token_name`.
std::vector<NextToken> family_next_tokens(const FamilyRun& run, int position, int k,
                                          const std::function<std::string(int)>& token_name);

// The cross-entropy of each next token of the run's text, as text_loss
// does for GPT-2 (`known`: the losses of a text sharing the first
// known.size() + 1 tokens, kept as they are).
TextLoss family_text_loss(const FamilyRun& run, std::span<const double> known = {});

// Every head's induction score (layer-major), as model_patterns measures
// GPT-2's: n distinct random ids (induction_ids with `seed`) repeated
// twice, after `bos` when the tokenizer has one (bos < 0: none).
std::vector<double> family_induction(const std::shared_ptr<const FamilyModel>& model, int n,
                                     std::uint64_t seed, int bos);

}  // namespace attnscope::core
