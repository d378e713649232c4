// gpt2_model.hpp: a trained GPT-2-family model, its forward pass, and the
// run of one text through it, whose stages come on demand (every layer, every head).
//
// Two kinds of checkpoint load into the same weights (docs/file-formats.md):
// - a Hugging Face GPT-2 folder or .safetensors file (Conv1D layout: x . W + b),
//   with config.json;
// - the book's GPTModel state_dict saved by chapter 5 (.pth), with its
//   GPT_CONFIG as JSON (--config, or config.json / gpt_config.json beside it).
// The forward is the model in eval mode (no dropout):
//   x0 = wte[ids] + wpe[0..T)                                   embeddings
//   for each block l: a = LN1(x); [Q | K | V] = a . W_attn + b
//     per head h: scores = Q_h K_hᵀ, masked (j > i -> -inf), scaled
//     (÷ √d_head, also ÷ (l + 1) where configured), weights = softmax,
//     context = weights . V_h; concat; output = concat . W_proj + b
//     attn_output = x + output; block_output = attn_output + MLP(LN2(attn_output))
//   ln_f = LN_f(x_L); logits = ln_f[T-1] . wteᵀ (or lm_head)
// A run keeps per layer only its input residual and Q|K|V (12 MB per layer
// of GPT-2 small at T = 1024); every other stage is recomputed on demand
// into a cache bounded in bytes (docs/ARCHITECTURE.md, "Real models").
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/base/matrix.hpp"
#include "attnscope/base/trace.hpp"
#include "attnscope/model/gpt2_config.hpp"
#include "attnscope/text/tokenizer.hpp"

namespace attnscope::core {

// Which layout the weights came in.
enum class ModelFormat {
  HuggingFace,  // transformer.h.N.attn.c_attn.weight, ... (Conv1D: in x out)
  Book,         // trf_blocks.N.att.W_query.weight, ... (nn.Linear: out x in)
};

// The files a model path resolves to.
struct ModelFiles {
  std::filesystem::path weights;    // .safetensors, model.safetensors.index.json or .pth
  std::filesystem::path config;     // config.json (Hugging Face) or the book's GPT_CONFIG JSON
  std::filesystem::path tokenizer;  // folder with vocab.json + merges.txt or encoder.json +
                                    // vocab.bpe; empty: GPT-2's own (assets/gpt2)
};

// What a model argument names: `model` itself when that file or folder
// exists (a path always wins); else, when it reads as a Hub repo id
// "org/name[@revision]" (hub::parse_repo_ref), the snapshot folder the
// Hugging Face cache (hub::cache_root) holds for it: refs/<revision> ->
// snapshots/<commit>, a commit naming itself. Throws ParseError naming
// `attnscope-cli model pull org/name` when the id is not in the cache, and
// "no such file or folder" when `model` is neither.
std::filesystem::path resolve_model_path(const std::filesystem::path& model);

// Resolves a folder, a .safetensors / .index.json file, a .pth file or a
// pulled repo id (resolve_model_path) to its files; `config` overrides the
// config found beside the weights. Throws ParseError naming the path and
// what to add when something is missing.
ModelFiles locate_model(const std::filesystem::path& path,
                        const std::optional<std::filesystem::path>& config = std::nullopt);

// A model found on disk by find_models.
struct FoundModel {
  std::string name;            // "openai-community/gpt2", or the file's or folder's name
  std::filesystem::path path;  // what Gpt2Model::load takes
  std::string where;           // "huggingface-cache" or "attnscope"
  std::string repo;            // the Hub's "org/name" (huggingface-cache only)
  std::string commit;          // the snapshot's commit (huggingface-cache only)
  std::string revision;        // a ref naming that commit, "main" first ("" when none)
  std::uint64_t bytes = 0;     // the files' total size (symlinks followed)
};
// The folders find_models searches: the Hugging Face hub cache ($HF_HUB_CACHE,
// else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub) and attnscope's own ($XDG_DATA_HOME/attnscope/models,
// else ~/.local/share/attnscope/models).
std::vector<std::filesystem::path> model_search_folders();
// Every model in those folders: the hub's models--*/snapshots/* folders with
// a config.json, and in attnscope's folder every sub-folder with weights and
// every .safetensors or .pth file. Sorted by name; unreadable entries skipped.
std::vector<FoundModel> find_models();

// The book's GPT_CONFIG_124M as JSON ({"vocab_size": 50257, "context_length":
// 1024, "emb_dim": 768, "n_heads": 12, "n_layers": 12, "drop_rate": 0.1,
// "qkv_bias": false}) as a GPT-2 config: the book's LayerNorm (eps 1e-5) and
// GELU (tanh) are GPT-2's. Keys other than these are refused by name.
struct BookConfig {
  Gpt2Config config;
  bool qkv_bias = false;
  double drop_rate = 0.1;  // read and kept for scripts; a trained model runs without dropout
};
BookConfig parse_book_config(std::string_view json_text, std::string_view source);

// A load watched from another thread: how many blocks are read and packed
// (of `blocks`, known once the config is read), and a request to stop, which
// the load honours before its next block by throwing LoadCancelled.
struct LoadProgress {
  std::atomic<int> blocks{0};
  std::atomic<int> blocks_done{0};
  std::atomic<bool> cancel{false};
  // blocks_done / blocks, 0 before the config is read.
  double fraction() const {
    const int total = blocks.load();
    return total > 0 ? static_cast<double>(blocks_done.load()) / total : 0.0;
  }
};
struct LoadCancelled : std::runtime_error {
  LoadCancelled() : std::runtime_error("the load was cancelled") {}
};

class Gpt2Model {
 public:
  struct Weights;  // the parameters, packed for the engine (core/src/model/gpt2_internal.hpp)

  // Loads the model at `path` (see locate_model). Throws ParseError naming
  // the file and the problem: a missing or misshapen tensor, a config that
  // contradicts the tensors, an unreadable file.
  // With `progress`, reports each block packed and stops when asked.
  static std::shared_ptr<const Gpt2Model> load(
      const std::filesystem::path& path,
      const std::optional<std::filesystem::path>& config = std::nullopt,
      LoadProgress* progress = nullptr);
  // A model from weights already built (tests, random models).
  Gpt2Model(std::shared_ptr<const Weights> weights, std::string name, ModelFormat format,
            std::shared_ptr<const Gpt2Tokenizer> tokenizer);
  ~Gpt2Model();

  const Gpt2Config& config() const;
  // The folder's or file's name, as UTF-8 (U+FFFD for bytes that are not).
  const std::string& name() const { return name_; }
  ModelFormat format() const { return format_; }
  const Gpt2Tokenizer& tokenizer() const { return *tokenizer_; }
  const Weights& weights() const { return *weights_; }

 private:
  std::shared_ptr<const Weights> weights_;
  std::string name_;
  ModelFormat format_;
  std::shared_ptr<const Gpt2Tokenizer> tokenizer_;
};

// A random GPT-2 with the given shape (normal(0, 0.02) weights from `seed`,
// LayerNorm gains 1): the benchmarks' stand-in for a downloaded model.
std::shared_ptr<const Gpt2Model> random_gpt2(const Gpt2Config& config, std::uint64_t seed);

struct NextToken {
  int id = 0;
  std::string token;  // printable_token of its bytes
  double probability = 0.0;
};

// One text through one model. Construction runs the forward pass over every
// layer; stage() answers any (layer, head, stage) after it. Thread-safe.
class ModelRun final {
 public:
  struct Options {
    // Bytes of recomputed stages kept for reuse (least recently used go
    // first). The forward's attention weights enter it as they are made.
    std::size_t cache_bytes = std::size_t{768} << 20;
  };
  // Throws std::invalid_argument when ids is empty, longer than n_positions,
  // or holds an id outside the vocabulary.
  ModelRun(std::shared_ptr<const Gpt2Model> model, std::vector<int> ids, Options options);
  ModelRun(std::shared_ptr<const Gpt2Model> model, std::vector<int> ids)
      : ModelRun(std::move(model), std::move(ids), Options{}) {}
  ~ModelRun();

  // Appends one token and computes only its position in every layer (the
  // keys and values of the others are kept): the cost of one row, not T.
  // Throws std::invalid_argument, the run unchanged, for an id outside the
  // vocabulary or a text that already fills n_positions.
  void append(int id);
  // Makes the run's text `ids`, recomputing only what the change reaches.
  // Attention is causal: the rows before the first position where `ids`
  // and ids() differ keep their residuals and Q | K | V, and every layer
  // runs the rows from there on (an append's cost times the new rows). The
  // cached attention maps keep their rows before that position and take the
  // new ones below them (settled into a T x T map when asked for); every
  // other cached stage goes. A text that differs from the first token on is
  // a full forward; the same text, nothing. Returns the first recomputed
  // position: ids.size() when none was (the same text, or a text that only
  // lost its end). Throws std::invalid_argument as the constructor does, the
  // run unchanged. An error during the forward itself (std::bad_alloc)
  // leaves the run unusable, as with append: drop it.
  int retext(std::vector<int> ids);

  const Gpt2Model& model() const { return *model_; }
  const std::vector<int>& ids() const { return ids_; }
  const std::vector<std::string>& tokens() const { return tokens_; }
  int num_tokens() const { return static_cast<int>(ids_.size()); }
  int num_layers() const;
  int num_heads() const;
  std::shared_ptr<const RowMatrix> stage(const StageKey& key);
  // The attention weights of every head of `layer` (each T x T), as stage()
  // gives them, for a look at them all: the cached maps with their pending
  // rows joined, the others computed on all threads and not cached (a scan
  // of every head through a cache too small for them all would evict the
  // maps the next edit extends). Throws std::invalid_argument for a layer
  // the model does not have.
  std::vector<std::shared_ptr<const RowMatrix>> layer_weights(int layer);
  // Rows [first_row, T) of the attention weights of every head of every
  // layer (layer-major: rows[layer * heads + head]), each (T - first_row) x T
  // (row i's columns past i are zero), computed on all threads and not
  // cached: what a look at every head needs after an edit from first_row
  // on, when it kept what it made of the rows before. Throws
  // std::invalid_argument for a first_row outside 0..T.
  std::vector<RowMatrix> weight_rows(int first_row);
  // The residual stream at one token ((layers + 1) x d): row l is block l's
  // input at `position` (row 0 the embeddings), the last row the last
  // block's output. Throws std::invalid_argument outside 0..num_tokens()-1.
  RowMatrix residual_column(int position) const;
  // The last position's logits (1 x vocab).
  const RowMatrix& logits() const { return logits_; }
  // The logits of rows [loss_logits_from(), T - 1), read from the LM head
  // in the same pass as the last row's by the last forward: the rows it
  // changed and the one before, what the loss of its new tokens needs
  // (none, from = T - 1, after a forward of more rows than
  // kLossRowsWithLogits).
  static constexpr Eigen::Index kLossRowsWithLogits = 8;
  const RowMatrix& loss_logits() const { return loss_logits_; }
  Eigen::Index loss_logits_from() const { return loss_from_; }
  // The k most likely next tokens after the last position, most likely first.
  std::vector<NextToken> next_tokens(int k = 10) const;
  // The same after token `position` (0-based): what the model predicts there
  // from the tokens up to it (causal: the later ones do not change it).
  // Computes that position's logits (reads the LM head once) unless it is
  // the last. Throws std::invalid_argument outside 0..num_tokens()-1.
  std::vector<NextToken> next_tokens_at(int position, int k = 10) const;
  // Bytes the cache holds now.
  std::size_t cached_bytes() const;

 private:
  struct Cache;
  // The ids' problem as the constructor and retext throw it, if any.
  static void check_ids(const Gpt2Config& c, const std::vector<int>& ids);
  // Rows [first_row, T) of x_0, then of every layer, then the logits.
  void forward_from(int first_row);
  void forward_layer(int layer, int first_row);
  // The logits after a forward from first_row: the last row's, and the
  // loss rows' (loss_logits) where there are few.
  void finish(int first_row);
  std::shared_ptr<const RowMatrix> compute(const StageKey& key);
  std::shared_ptr<const RowMatrix> head_stage(int layer, int head, std::string_view id);
  std::shared_ptr<const RowMatrix> layer_stage(int layer, std::string_view id);
  void settle(int layer, int head);
  std::vector<NextToken> top_tokens(const RowMatrix& logits, int k) const;
  // logits (1 x vocab) of the final residual's row `row`, on every thread;
  // with `extra`, rows [extra_from, row) too, in the same pass over the head.
  void logits_of_row(Eigen::Index row, RowMatrix& logits, Eigen::Index extra_from = 0,
                     RowMatrix* extra = nullptr) const;
  // Rows [0, T) of residual_ or qkv_ (each reserves n_positions rows, which
  // take memory only once written: an append never moves them).
  auto used(const RowMatrix& m) const { return m.topRows(static_cast<Eigen::Index>(ids_.size())); }

  std::shared_ptr<const Gpt2Model> model_;
  std::vector<int> ids_;
  std::vector<std::string> tokens_;
  std::vector<RowMatrix> residual_;  // x_l (T x d) for l = 0..L: inputs of each block, then x_L
  std::vector<RowMatrix> qkv_;       // [Q | K | V] of each block (T x 3d); see used()
  RowMatrix logits_;
  RowMatrix loss_logits_;
  Eigen::Index loss_from_ = 0;
  std::unique_ptr<Cache> cache_;
  mutable std::mutex mutex_;
};

// This machine's fused multiply-add rate now, in GFLOP/s over all threads
// (12 independent vector FMA chains per thread for about `seconds`): the
// floor `model bench` states its time against. 0 without a compiled kernel.
double machine_fma_gflops(double seconds = 0.3);

// The memory floor of an append: the milliseconds it takes to read every
// weight one new token multiplies (the blocks' packed projections and the
// LM head, `bytes` in all) once, summing them on all threads; the best of
// `repeat` passes.
struct WeightStream {
  double bytes = 0.0;
  double ms = 0.0;
};
WeightStream stream_weights(const Gpt2Model& model, int repeat = 3);
// The same over any weights: `spans` of (data, bytes), read as 64-bit words.
WeightStream stream_spans(const std::vector<std::pair<const std::byte*, std::size_t>>& spans,
                          int repeat = 3);

// Greedy continuation, the book's generate_text_simple: n_tokens times, run
// the last n_positions ids and append the most likely next one. Returns the
// new ids only.
std::vector<int> generate_greedy(const std::shared_ptr<const Gpt2Model>& model,
                                 std::vector<int> ids, int n_tokens);

}  // namespace attnscope::core
