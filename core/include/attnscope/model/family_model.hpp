// family_model.hpp: an open decoder model of the Llama, Mistral, Qwen2,
// Qwen3 or Gemma 3 family (family_config.hpp), loaded from Hugging Face
// safetensors, and its forward pass with every head's attention at hand.
//
// The forward, in float32 (eval mode):
//   x0 = embed_tokens[ids]   (Gemma: x sqrt(hidden_size) as a float)
//   for each block l:
//     h = RMSNorm_in(x); q = h Wq (+bq), k = h Wk (+bk), v = h Wv (+bv)
//     per head: q_h, k_g -> RMSNorm over head_dim (Qwen3, Gemma 3) -> RoPE
//       (rotate-half pairs (i, i + hd/2), positions from 0, theta of the
//       layer, Llama 3 scaling where configured)
//     head h reads K/V group g = h / (heads / kv_heads)
//     scores = q_h k_gᵀ * scale, causal (and j > i - W on a sliding layer),
//     weights = softmax, context = weights v_g; out = concat Wo (+bo)
//     Llama/Mistral/Qwen: x += out; x += MLP(RMSNorm_post(x))
//     Gemma 3: x += RMSNorm_post_attn(out);
//              x += RMSNorm_post_ff(MLP(RMSNorm_pre_ff(x)))
//     MLP = down(act(gate) * up), act silu or gelu (tanh)
//   logits = RMSNorm_final(x) lm_headᵀ (tied: embed_tokens), Gemma softcapped
// RMSNorm is x * rsqrt(mean(x²) + eps) * w, Gemma's * (1 + w).
// A run keeps each block's input residual (T x d); a layer's stages and
// head weights are recomputed from it when asked for.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/base/matrix.hpp"
#include "attnscope/formats/checkpoint.hpp"
#include "attnscope/model/family_config.hpp"
#include "attnscope/model/gpt2_model.hpp"

namespace attnscope::core {

class FamilyModel {
 public:
  struct Weights;  // core/src/model/family_internal.hpp

  // Loads a folder holding config.json and model.safetensors or
  // model.safetensors.index.json, or such a weights file with config.json
  // beside it. F32, BF16 and F16 tensors are widened to float32. Throws
  // ParseError naming the file: a refused config (parse_family_config), a
  // missing tensor or one of the wrong shape (naming the tensor and the
  // shape the config needs).
  static std::shared_ptr<const FamilyModel> load(const std::filesystem::path& path,
                                                 LoadProgress* progress = nullptr);
  // The same from a config and an open tensor file.
  static std::shared_ptr<const FamilyModel> load(const FamilyConfig& config,
                                                 std::shared_ptr<const TensorFile> file,
                                                 LoadProgress* progress = nullptr);
  explicit FamilyModel(std::shared_ptr<const Weights> weights);
  ~FamilyModel();

  const FamilyConfig& config() const;
  const Weights& weights() const { return *weights_; }
  // The bytes the weights take in memory. BF16 projections, embeddings and
  // LM head stay BF16 in memory (about half of what the same model takes
  // from an F32 file), each widened to float32 inside the kernel's packing
  // just before it is used: every number is that of the widened weights.
  std::size_t weight_bytes() const;

 private:
  std::shared_ptr<const Weights> weights_;
};

// The memory floor of an edit's row: reading every weight a new token
// multiplies (each block's projections and the LM head, as the model holds
// them: BF16 where the file was) once, on all threads (gpt2_model.hpp).
WeightStream stream_weights(const FamilyModel& model, int repeat = 3);

// One layer's attention stages, all heads side by side (head h in columns
// [h * head_dim, (h + 1) * head_dim), K/V group g likewise).
struct FamilyLayerStages {
  int layer = 0;
  RowMatrix normed;           // T x d: the block's input after its first RMSNorm
  RowMatrix queries;          // T x heads*hd, projected
  RowMatrix keys;             // T x kv*hd, projected (before RoPE)
  RowMatrix values;           // T x kv*hd
  RowMatrix queries_normed;   // after q_norm (empty without qk norm)
  RowMatrix keys_normed;      // after k_norm (empty without qk norm)
  RowMatrix queries_rotated;  // after RoPE
  RowMatrix keys_rotated;     // after RoPE
  bool sliding = false;       // does this layer slide
  int window = 0;             // W where it slides
};

class FamilyRun {
 public:
  struct Options {
    bool all_logits = false;  // keep every position's logits, not only the last
    // Every layer's rotated queries are kept while they take at most this
    // (Qwen3 0.6B's whole run up to T = 1170; past it, an edit's new rows
    // only): layer_weights and weight_rows then project nothing.
    std::size_t kept_query_bytes = std::size_t{256} << 20;
  };
  // Runs the forward over `ids`. Throws std::invalid_argument when ids is
  // empty, longer than 4096 or holds an id outside the vocabulary.
  FamilyRun(std::shared_ptr<const FamilyModel> model, std::vector<int> ids, Options options);
  FamilyRun(std::shared_ptr<const FamilyModel> model, std::vector<int> ids)
      : FamilyRun(std::move(model), std::move(ids), Options{}) {}

  // Runs `ids` instead, keeping every row before the first token that
  // differs from the run's (causal attention leaves them as they were):
  // each layer runs the new rows only, against the keys and values it
  // kept, so typing at the end of a text costs a row per layer. Returns the
  // tokens kept (0: the whole forward ran again). Throws as the
  // constructor does, leaving the run as it was.
  int retext(std::vector<int> ids);
  // Every (layer, head)'s weights of the query rows [first, T), layer-major
  // (index layer * heads + head), each (T - first) x T (none at first = T);
  // what an edit changes. Throws std::invalid_argument outside 0..T.
  std::vector<RowMatrix> weight_rows(int first) const;

  static constexpr int kMaxTokens = 4096;

  const FamilyModel& model() const { return *model_; }
  const std::vector<int>& ids() const { return ids_; }
  int num_tokens() const { return static_cast<int>(ids_.size()); }
  int num_layers() const;
  int num_heads() const;
  // The K/V group query head `head` reads.
  int kv_group(int head) const;
  // 1 x vocab: the last position's logits.
  RowMatrix last_logits() const { return logits_.bottomRows(1); }
  // The logits of the last positions, from logits_first() on: T x vocab
  // with Options::all_logits; else the last position's, or after a
  // retext() of fewer than 8 new rows those rows' and the one before.
  const RowMatrix& logits() const { return logits_; }
  // The position of logits()'s first row.
  int logits_first() const { return num_tokens() - static_cast<int>(logits_.rows()); }
  // Block l's input residual (l = num_layers(): the last block's output).
  const RowMatrix& residual(int layer) const;
  // A layer's stages of the rows [first, T), recomputed from its input
  // residual (at their positions: RoPE turns row r by r). Throws
  // std::invalid_argument for a layer the model does not have or a first
  // outside 0..T-1.
  FamilyLayerStages layer_stages(int layer, int first = 0) const;
  // One head's attention weights (T x T, zero where masked) from its layer's stages.
  RowMatrix head_weights(const FamilyLayerStages& stages, int head) const;
  // Every head's weights of `layer`.
  std::vector<RowMatrix> layer_weights(int layer) const;
  // T x T, 1 where query i may see key j on a sliding layer (i - W < j <= i),
  // 0 elsewhere; empty for a layer that does not slide.
  RowMatrix window_mask(int layer) const;
  // A head's columns of a side-by-side stage.
  static RowMatrix head_columns(const RowMatrix& stage, int index, int head_dim);

 private:
  std::shared_ptr<const FamilyModel> model_;
  std::vector<int> ids_;
  // Checks ids as the constructor does (throws std::invalid_argument).
  void check(const std::vector<int>& ids) const;
  // Embeds rows [first, T) and runs every layer over them, then the logits
  // (`edit`: for retext, which keeps a few rows' more).
  void run_rows(Eigen::Index first, bool edit);

  Options options_;
  std::vector<RowMatrix> residual_;  // L + 1 matrices, T x d
  std::vector<RowMatrix> keys_;      // per layer: the rotated keys (T x kv*hd)
  std::vector<RowMatrix> values_;    // per layer: the values (T x kv*hd)
  // Per layer: the rotated queries of rows [queries_first_, T), within
  // Options::kept_query_bytes.
  std::vector<RowMatrix> queries_;
  Eigen::Index queries_first_ = 0;
  RowMatrix logits_;
};

}  // namespace attnscope::core
