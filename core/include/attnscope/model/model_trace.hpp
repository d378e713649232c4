// model_trace.hpp: the chosen stages of a model run, as a Trace (for the
// exporters) and as the JSON of `attnscope-cli model trace`
// (docs/trace-format.md, "Model traces").
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/base/stages.hpp"
#include "attnscope/base/trace.hpp"
#include "attnscope/model/gpt2_config.hpp"
#include "attnscope/model/gpt2_model.hpp"

namespace attnscope::core {

// Which stages to take; an empty list means the default.
struct ModelStageSelection {
  std::vector<int> layers;          // default: every layer
  std::vector<int> heads;           // default: every head
  std::vector<std::string> stages;  // default: weights, logits
};

// Where a model's stage lives (the catalogue's model_scope): in every head
// of a layer, once per layer, or once per run (layer -1: embeddings, ln_f,
// logits). nullopt: not a stage a model run makes (the chapter-3 classes'
// inputs, dropout and parameters).
std::optional<ModelScope> model_stage_scope(std::string_view id);

// The stages of a whole block as the stepper walks it, in the catalogue's
// order: the layer stages before the heads (ln_1), the head stages (queries
// ... context), and the layer stages after them: the heads put together
// (concat, output, attn_output), then the MLP half (ln_2, mlp_hidden,
// mlp_activation, mlp_output) and block_output, the next block's input.
struct BlockStages {
  std::vector<std::string_view> before_heads, heads, after_heads;
};
BlockStages block_stages();

// The keys of the selection in pipeline order (run stages before and after
// the layers as the forward makes them). Throws ParseError naming a stage
// that is not a model stage (listing those that are), a layer or a head out
// of range.
std::vector<StageKey> select_model_stages(const ModelRun& run, const ModelStageSelection& s);

// The stages at `keys` as a Trace: tokens, the model's name, one layer per block.
Trace model_trace(ModelRun& run, const std::vector<StageKey>& keys);

// Writes {"model", "ids", "tokens", "spans", "config", "stages",
// "next_token", "next_token_position"} to `out`: the stages at `keys` as in
// chapter-3 traces (id, layer, head, shape, data), each fetched and written
// in turn (a model's whole trace is never held), and the 10 most likely
// tokens after token `next_at` (-1: the last; ModelRun::next_tokens_at).
// Spans are byte offsets of each token in the decoded text.
void write_model_trace_json(ModelRun& run, const std::vector<StageKey>& keys, std::ostream& out,
                            int next_at = -1);
// The same for people: tokens, next tokens, and each stage (its values when
// it is small, else its shape and range).
void write_model_trace_text(ModelRun& run, const std::vector<StageKey>& keys, std::ostream& out,
                            int next_at = -1);

// The config as one JSON object (the keys of config.json that the forward uses).
std::string gpt2_config_json(const Gpt2Config& c);

}  // namespace attnscope::core
