// trace.hpp: every intermediate of one attention run, as named stages.
// The GUI and the exporters read a Trace; they never recompute attention.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attnscope/base/config.hpp"
#include "attnscope/base/matrix.hpp"
#include "attnscope/base/recipe.hpp"

namespace attnscope::core {

// The most layers a trace or stage file may name (GPT-2 XL has 48).
inline constexpr int kMaxLayers = 1024;

// Where a stage sits in a model: layer, head, stage id. The chapter-3
// classes are one layer (0); a stage of the whole layer has head -1.
struct StageKey {
  int layer = 0;
  int head = -1;
  std::string_view id;  // a stage_id constant (attnscope/base/stages.hpp)
};

// The stage a model's block `layer` reads: the embeddings before block 0,
// else the previous block's output.
StageKey block_input_key(int layer);

// One named matrix of a run, e.g. id "weights", layer 0, head 1.
//
// The matrix is held by shared pointer: stages with the same values (the
// weights of a module the engine reuses, the causal mask of every head) hold
// one copy, and copying a Trace copies no matrix. Writers go through
// mutable_data(), which first copies a matrix that is shared.
struct Stage {
  std::string id;  // a stage_id constant's text: "inputs", "scores", ... (docs/trace-format.md)
  int head = -1;   // head index, or -1 for stages of the whole layer
  int layer = 0;   // transformer block; 0 for the chapter-3 classes

  Stage() = default;
  Stage(std::string_view stage_id, int stage_head, RowMatrix matrix, int stage_layer = 0)
      : id(stage_id),
        head(stage_head),
        layer(stage_layer),
        data_(std::make_shared<RowMatrix>(std::move(matrix))) {}
  // A stage that shares `matrix` with whoever else holds it.
  Stage(std::string_view stage_id, int stage_head, std::shared_ptr<RowMatrix> matrix,
        int stage_layer = 0)
      : id(stage_id), head(stage_head), layer(stage_layer), data_(std::move(matrix)) {}

  StageKey key() const { return {layer, head, id}; }

  // Shape and meaning depend on id (docs/trace-format.md).
  const RowMatrix& data() const { return data_ ? *data_ : empty_matrix(); }
  RowMatrix& mutable_data() {
    if (!data_)
      data_ = std::make_shared<RowMatrix>();
    else if (data_.use_count() > 1)
      data_ = std::make_shared<RowMatrix>(*data_);
    return *data_;
  }
  // A handle on the matrix that keeps it alive (nullptr for an empty stage).
  std::shared_ptr<const RowMatrix> shared_data() const { return data_; }
  // True when this stage and `other` hold the very same matrix.
  bool shares_data_with(const Stage& other) const { return data_ && data_ == other.data_; }

 private:
  static const RowMatrix& empty_matrix() {
    static const RowMatrix empty;
    return empty;
  }
  std::shared_ptr<RowMatrix> data_;
};

// What a trace is.
enum class TraceKind : unsigned char {
  Chapter3,    // a run of one of the book's classes: `config` made it
  ModelRun,    // stages of a real model's run, any layers (`model` names it)
  ModelBlock,  // one block of a real model's run, `layer` (the app's view of a layer)
};

// A model's block as a recipe with its sizes (a chapter-3 run has its
// recipe and sizes from its config: Trace::recipe()).
struct BlockDescription {
  BlockRecipe recipe;
  int heads = 1;     // heads per block
  int head_dim = 0;  // columns of one head's Q, K, V
  // An open model family's block (Llama, Qwen, Gemma 3): its config's
  // model_type ("" for GPT-2) and the numbers its steps quote.
  std::string family;
  int kv_heads = 0;          // K/V heads (query heads read heads / kv_heads each)
  int window = 0;            // W on a sliding layer, else 0
  double rope_theta = 0;     // this layer's RoPE base
  bool rope_scaled = false;  // Llama 3's stretch of the low frequencies
  double query_scale = 0;    // the scores' factor (head_dim^-1/2, Gemma query_pre_attn_scalar^-1/2)
};

// A trace of one step of generating token by token with the KV cache: the
// new token's query row against the cache (attention/modern.hpp, cache_step).
struct CacheStepInfo {
  int position = 0;             // the new token's position t (0-based)
  int first_key_position = 0;   // the first cached key's position (a window trims the front)
  std::size_t cache_bytes = 0;  // float32 bytes the cache holds after the step
  float max_abs_diff = 0.0f;    // largest |cached output − the full forward's row t|
};

struct Trace {
  TraceKind kind = TraceKind::Chapter3;
  BlockDescription block;           // a model's block (model kinds only)
  Config config;                    // the config that produced a chapter-3 trace
  std::vector<std::string> tokens;  // T token names (rows/cols of T x T stages)
  // The keys' token names where they are not `tokens`: cross-attention's
  // second sequence, or a cache step's cached tokens (`tokens` is then the
  // one new token). Empty when keys are the queries' tokens.
  std::vector<std::string> key_tokens;
  std::optional<CacheStepInfo> cache_step;  // set for a cache step's trace
  int d_in = 0;                             // embedding width
  bool explicit_weights = false;            // parameters were given (imported/edited), not seeded
  std::string model;                        // a real model's name ("gpt2"); empty for chapter 3
  // A model run's text: its tokens' bytes joined, then decoded with U+FFFD
  // for what is not UTF-8 (decode_utf8_replace), so a character split across
  // tokens reads whole; `tokens` show each token alone. Empty for chapter 3.
  std::string text;
  // The layer find(id, head) reads: 0 for the chapter-3 classes; a model
  // trace of one block (the app's view of a layer) names that block.
  int layer = 0;
  std::vector<Stage> stages;  // in pipeline order

  int num_tokens() const { return static_cast<int>(tokens.size()); }
  // The names of the keys: key_tokens, or tokens when that is empty.
  const std::vector<std::string>& keys_tokens() const {
    return key_tokens.empty() ? tokens : key_tokens;
  }
  bool is_model() const { return kind != TraceKind::Chapter3; }
  // What one block of it is made of: the chapter-3 class's recipe, or the model's.
  BlockRecipe recipe() const;
  // The head count a viewer should show: the block's heads (1 without heads).
  int heads_shown() const;
  // Columns of one head's Q, K, V (d_k): d_out, or d_out / num_heads when
  // one projection is split into heads; the model's head size.
  int head_dim() const;
  // The width of the block's projections (d_out): the heads' side by side
  // when one projection is split into them, else one head's.
  int projected_width() const;
  // Where the block's input is: the inputs of a chapter-3 run; in a model,
  // the embeddings before layer 0, else the previous block's output.
  StageKey block_input_key() const;
  // The number of layers the stages span (1 for the chapter-3 classes).
  int num_layers() const;
  // What produced it, for files: the model's name, else the variant's id.
  std::string producer() const;
  // The stage with this id and head in `layer`, or nullptr.
  const Stage* find(std::string_view id, int head = -1) const {
    return find(StageKey{layer, head, id});
  }
  // The stage at this key, or nullptr.
  const Stage* find(const StageKey& key) const;
  // A shared handle on the stage's matrix (no copy), or nullptr.
  std::shared_ptr<const RowMatrix> share(const StageKey& key) const;
};

}  // namespace attnscope::core
