// stages.hpp: the stage catalogue, one row per kind of matrix a trace holds.
//
// Everything that names a stage (the engine that makes it, the trace files,
// the exporters, the colour scale, the axes, the words on screen) reads this
// table: adding a stage is one row here, the engine code that fills it,
// and, for the app's stepper, its step (docs/ARCHITECTURE.md says where).
// Code refers to a stage by its constant in `stage_id` (stage_id::weights),
// never by a string literal: a misspelt constant does not compile.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "attnscope/base/config.hpp"
#include "attnscope/base/recipe.hpp"

namespace attnscope::core {

// The ids as they appear in traces and file names (docs/trace-format.md).
// Character arrays, so that a constant goes wherever a literal went
// (std::string, std::string_view, const char*).
namespace stage_id {
inline constexpr char inputs[] = "inputs";
inline constexpr char W_query[] = "W_query";
inline constexpr char W_key[] = "W_key";
inline constexpr char W_value[] = "W_value";
inline constexpr char b_query[] = "b_query";
inline constexpr char b_key[] = "b_key";
inline constexpr char b_value[] = "b_value";
inline constexpr char queries[] = "queries";
inline constexpr char keys[] = "keys";
inline constexpr char values[] = "values";
inline constexpr char scores[] = "scores";
inline constexpr char mask[] = "mask";
inline constexpr char masked_scores[] = "masked_scores";
inline constexpr char scaled_scores[] = "scaled_scores";
inline constexpr char weights[] = "weights";
inline constexpr char dropout_mask[] = "dropout_mask";
inline constexpr char dropped_weights[] = "dropped_weights";
inline constexpr char context[] = "context";
inline constexpr char concat[] = "concat";
inline constexpr char W_out[] = "W_out";
inline constexpr char b_out[] = "b_out";
inline constexpr char output[] = "output";
// Stages only real models (GPT-2, the book's GPTModel) make.
inline constexpr char embeddings[] = "embeddings";
inline constexpr char ln_1[] = "ln_1";
inline constexpr char attn_output[] = "attn_output";
inline constexpr char ln_2[] = "ln_2";
inline constexpr char mlp_hidden[] = "mlp_hidden";
inline constexpr char mlp_activation[] = "mlp_activation";
inline constexpr char mlp_output[] = "mlp_output";
inline constexpr char block_output[] = "block_output";
inline constexpr char ln_f[] = "ln_f";
inline constexpr char logits[] = "logits";
// Stages of the mechanisms that came after chapter 3 (base/recipe.hpp's
// Rotary, QkNorm, KvGroups, Window, Latent, Cache and Cross parts).
inline constexpr char latent_kv[] = "latent_kv";
inline constexpr char queries_normed[] = "queries_normed";
inline constexpr char keys_normed[] = "keys_normed";
inline constexpr char queries_rotated[] = "queries_rotated";
inline constexpr char keys_rotated[] = "keys_rotated";
inline constexpr char cached_keys[] = "cached_keys";
inline constexpr char cached_values[] = "cached_values";
inline constexpr char group_keys[] = "group_keys";
inline constexpr char group_values[] = "group_values";
inline constexpr char window_mask[] = "window_mask";
// Latent attention's parameters: down to the latent, up to keys and values.
inline constexpr char W_down[] = "W_down";
inline constexpr char b_down[] = "b_down";
inline constexpr char W_up_key[] = "W_up_key";
inline constexpr char b_up_key[] = "b_up_key";
inline constexpr char W_up_value[] = "W_up_value";
inline constexpr char b_up_value[] = "b_up_value";
// Cross-attention's second sequence (keys and values are computed from it).
inline constexpr char memory[] = "memory";
}  // namespace stage_id

// How a stage's values are coloured.
enum class StageScale {
  Signed,     // any real number, centred on 0 (inputs, Q, K, V, scores, context)
  Weights,    // probabilities in [0, 1] (weights, dropped weights)
  Mask,       // 0/1 (causal mask) or 0/scale (dropout keep mask)
  Parameter,  // learned numbers of either sign (W_*, b_*)
};

// What a stage's rows or columns stand for.
enum class Axis {
  Query,   // one row per token, as the query of a T x T stage
  Key,     // one column per token, as the key
  Token,   // one row per token (inputs, Q, K, V, context)
  Dim,     // feature dimensions ("d0", "d1", ...)
  InDim,   // rows of a weight matrix: input features ("in0", ...)
  OutDim,  // columns of a weight matrix: output features ("out0", ...)
  Bias,    // the single row of a bias vector
  Vocab,   // one column per vocabulary entry (token id)
};

// Where a real model's forward makes a stage: once per run (embeddings, ln_f,
// logits), once per layer, or in every head of every layer. None: only the
// chapter-3 classes make it (their inputs, parameters and dropout).
enum class ModelScope : unsigned char { None, Run, Layer, Head };

struct StageInfo {
  std::string_view id;            // stage_id::weights
  BlockPart part;                 // the part of a block's recipe that makes it (recipe.hpp)
  std::string_view symbol;        // shape lines: "Q", "ω", "weights"
  std::string_view short_symbol;  // narrowest title that still tells stages apart: "W_q"
  std::string_view name;          // for people: "attention weights"
  std::string_view formula;       // how it is computed: "softmax(scaled scores, row)"
  StageScale scale;
  Axis rows, cols;
  std::string_view source;  // the stage it is computed from in the causal pipeline
                            // ("" for inputs, parameters and the mask); see stage_source
  bool holds_mask = false;  // in a causal run its future cells are the mask's
                            // (the mask itself, and the scores it filled with -inf)
  bool model_only = false;  // made by real models only, not by the chapter-3 classes
  ModelScope model_scope = ModelScope::None;  // where a model's forward makes it
  std::string_view model_symbol = {};  // its name in a model's block texts ("Q_h"); "" as symbol

  bool token_by_token() const { return cols == Axis::Key; }  // T x T: columns are keys
  bool parameter() const { return scale == StageScale::Parameter; }
};

// Every stage, in pipeline order (the causal order: mask before scaling).
// The rows a model makes are in its forward's order, so the catalogue is
// also the list of a model run's stages (ModelScope) and of a block's.
std::span<const StageInfo> stage_catalogue();

// The row for `id`, or nullptr for an id that is not a stage. A difference
// heatmap's id ("diff_weights", see difference_base) is looked up as its base.
const StageInfo* find_stage_info(std::string_view id);
// The row for `id`; an unknown id is a programming error and throws
// std::invalid_argument naming it.
const StageInfo& stage_info(std::string_view id);

// The stage `id` is computed from in `variant`: the catalogue's source, except
// where a variant has no such stage (simplified attention has no projections
// or scaling: its scores read the inputs, its weights the scores; only the
// causal classes mask before scaling and drop out before the context).
std::string_view stage_source(std::string_view id, Variant variant);

// "diff_weights" -> "weights": a difference of two runs' stages is labelled,
// scaled and laid out as the stage it subtracts. Other ids are returned as is.
std::string_view difference_base(std::string_view id);
// The prefix that marks a difference stage.
inline constexpr std::string_view kDifferencePrefix = "diff_";
// "weights" -> "diff_weights": the id of a difference of two runs' `id`.
std::string difference_id(std::string_view id);

// True for T x T stages (scores, masks, weights): their columns are keys.
bool is_token_by_token(std::string_view id);
// True for parameters (W_*, b_*): their rows are not tokens.
bool is_parameter(std::string_view id);

// Words for an axis. `noun` is what the screen calls one row or column
// ("query", "input dim"); `title` is the short axis title of files and
// figures ("query", "in"); `label_prefix` numbers the entries of an axis
// without token names ("d" -> d0, d1, ...; "" for token axes).
std::string_view axis_noun(Axis a);
std::string_view axis_title(Axis a);
std::string_view axis_label_prefix(Axis a);

}  // namespace attnscope::core
