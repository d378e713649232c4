// model_state.hpp: the app's real-model source: which checkpoint is open,
// the text typed for it, what the model view shows, and the loader that
// reads a checkpoint on its own thread (a 500 MB file never freezes a frame).
//
// The run itself is computed by the ComputeWorker like a chapter-3 trace
// (model_job.hpp); AppState::recompute_if_dirty posts it while `active`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "attnscope/model/gpt2_model.hpp"
#include "attnscope/model/head_patterns.hpp"
#include "attnscope/model/predictions.hpp"
#include "attnscope/text/tokenizer.hpp"
#include "compute/model_job.hpp"
#include "state/model_download.hpp"
#include "state/typed_text.hpp"

namespace attnscope::gui {

class NativeDialog;

// What the centre of the window shows for a model.
enum class ModelView {
  Model,   // every layer x head as a thumbnail
  Head,    // one head's stepper (the chapter-3 stage panel on the block's trace)
  Tokens,  // the head view: lines from a token to the tokens it attends to
};
std::string_view model_view_id(ModelView v);  // "model", "head", "tokens"
std::optional<ModelView> parse_model_view(std::string_view id);

// Reads a checkpoint on a thread of its own, reporting the blocks packed.
// Cancel stops the load before its next block and forgets it: its result,
// if it still comes, is dropped (the thread is joined before the next load
// or on destruction).
class ModelLoader {
 public:
  struct Outcome {
    std::string path;
    std::shared_ptr<const core::Gpt2Model> model;   // GPT-2 or the book's GPTModel, or
    std::shared_ptr<const FamilyModelOpen> family;  // a Llama/Mistral/Qwen/Gemma 3 folder
    std::string error;                              // the engine's message on failure
  };
  ModelLoader() = default;
  ~ModelLoader();
  ModelLoader(const ModelLoader&) = delete;
  ModelLoader& operator=(const ModelLoader&) = delete;

  // Starts loading `path` (Gpt2Model::load with `config` when not empty;
  // a folder whose config.json names another model_type with
  // FamilyModel::load and its tokenizer.json), cancelling a load in progress.
  void start(const std::string& path, const std::string& config);
  void cancel();
  bool loading() const { return loading_; }
  // Seconds since start() while loading.
  double seconds() const;
  // Blocks packed so far and in all (0 until the config is read).
  int blocks_done() const { return progress_ ? progress_->blocks_done.load() : 0; }
  int blocks() const { return progress_ ? progress_->blocks.load() : 0; }
  // The outcome of the load started last, once, when it finished (and was not cancelled).
  std::optional<Outcome> take();
  // Blocks until the current load (if any) finished (tests, --screenshot).
  void wait();
  const std::string& path() const { return path_; }

 private:
  std::thread thread_;
  std::shared_ptr<core::LoadProgress> progress_;  // the load under way's
  std::mutex mutex_;
  std::optional<Outcome> done_;
  std::uint64_t generation_ = 0;  // bumped by start and cancel; a stale outcome is dropped
  bool loading_ = false;
  std::string path_;
  std::chrono::steady_clock::time_point started_;
};

// How the model view orders the heads of each layer and tints them.
struct PatternChoice {
  // The score that colours each thumbnail's frame and orders its row when
  // `sort` (nullopt: heads in their own order, plain frames).
  std::optional<core::PatternKind> kind;
  bool sort = false;
};

// The Sample button: the book's generate() one token at a time. The draws
// continue while the text is the one the last Sample left (so a run of
// Samples picks what generate() picks after torch.manual_seed(seed)); any
// other text, or other settings, starts again from the seed.
struct SamplingState {
  core::Sampling settings;                     // temperature 0: greedy
  std::unique_ptr<core::BookSampler> sampler;  // the draws so far
  std::string after_text;                      // the text the last Sample left
  int drawn = 0;                               // tokens drawn from the seed so far
  // sampling_step of the last logits for `settings`, made when either changes.
  std::optional<core::SamplingStep> step;
  std::uint64_t step_version = 0;
  core::Sampling step_settings;
};

// Compare checkpoints: a second checkpoint B (another epoch of the
// learner's training, another model of the same shape) loaded on a loader
// of its own and run by the worker on A's token ids while the window is
// open (ModelJob::compare). A failed load keeps A and any previous B.
struct CheckpointCompare {
  bool open = false;                             // the Compare checkpoints window
  std::string path;                              // B's path field
  std::string config;                            // B's config file (optional, as A's)
  std::shared_ptr<const core::Gpt2Model> model;  // B, null until one loaded
  std::string model_path;                        // the path B came from
  std::string error;                             // B's last failed load ("" none)
  std::unique_ptr<ModelLoader> loader = std::make_unique<ModelLoader>();
  std::shared_ptr<NativeDialog> browse;  // Browse... for B while open
  // From the worker with the trace on screen: null until B ran (or when the
  // window is closed).
  std::shared_ptr<const ModelComparison> result;
};

// The Get a model window: a model fetched from the Hugging Face Hub into
// the cache, then opened (panels/get_model_window.cpp).
struct GetModel {
  bool open = false;
  std::string field;        // "org/name[@revision]"
  std::string field_error;  // why the field is not a repo id ("" none)
  std::string endpoint;     // as the environment says, read when the window opens
  bool offline = false;     // HF_HUB_OFFLINE
  // model_catalog()'s models in the cache, same order (read when the window
  // opens and when a pull ends).
  std::vector<std::optional<CachedModel>> in_cache;
  std::unique_ptr<ModelDownload> download = std::make_unique<ModelDownload>();
};

struct ModelState {
  // The checkpoint: the path field, an optional config file, recent paths.
  std::string path;
  std::string config;
  std::vector<std::string> recent;  // most recent first, at most kRecent
  static constexpr std::size_t kRecent = 8;
  std::shared_ptr<const core::Gpt2Model> model;   // null until one loaded
  std::shared_ptr<const FamilyModelOpen> family;  // or a family model (model is then null)
  std::string model_path;                         // the path `model` came from
  std::string load_error;                         // the last failed load's message
  std::unique_ptr<ModelLoader> loader = std::make_unique<ModelLoader>();  // movable state
  std::vector<core::FoundModel> found;  // core::find_models(), refreshed on demand
  bool found_scanned = false;
  // Browse...: the desktop's file dialog while it is open (native_dialog.hpp).
  std::shared_ptr<NativeDialog> browse;
  // The load under way reopens a session's model: if it fails, the session
  // falls back to the chapter-3 classes with a banner.
  bool restoring = false;

  // The text and its tokens (encoded on every edit, with the model's tokenizer).
  TypedText typed{"The attention mechanism lets every token look back at the tokens before it."};
  // Keep the last max_tokens() tokens of a longer text instead of refusing
  // it (as the book's generate crops to context_size). `dropped` counts the
  // tokens left out of `typed.tokens` by the last encode; `too_long` says the
  // last encode refused the text for its length (the panel offers keep_last).
  bool keep_last = false;
  int dropped = 0;
  bool too_long = false;

  // Selection (the head is AppState::head, the step AppState::step).
  int layer = 0;
  ModelView view = ModelView::Model;
  int query = -1;               // the head view's token (-1: the last)
  int next_at = -1;             // the next-token panel's position (-1: the last)
  std::vector<bool> heads_off;  // the head view's heads switched off
  PatternChoice pattern;
  SamplingState sampling;
  bool lens_open = false;  // the Logit lens window (the lens is computed while open)
  CheckpointCompare compare;
  GetModel get;
  int hovered =
      -1;  // the model view's thumbnail under the pointer (layer * heads + head), -1: none

  // From the worker: the overview of the run on screen (the worker keeps
  // the run itself, to extend it when the text grows).
  std::shared_ptr<const ModelOverview> overview;
  std::uint64_t overview_version = 0;  // bumps with every overview adopted
  // The induction scores of `model` once computed (they do not depend on the text).
  std::shared_ptr<const std::vector<double>> induction;

  // Adds `p` in front of `recent` (once).
  void remember(const std::string& p);
  // Re-encodes the typed text with the model's tokenizer (GPT-2's own
  // without a model); its error tells invalid UTF-8, an empty text, or more
  // tokens than the model's n_positions (with keep_last, those first tokens
  // are dropped from typed.tokens instead).
  void encode_text();
  // The most tokens the model reads (1024 without a model).
  int max_tokens() const;
  // A model of either kind is open.
  bool is_open() const { return model || family; }
  // The open model's name ("gpt2", "Qwen3-0.6B"), layers and heads (0 without one).
  std::string model_name() const;
  int num_layers() const;
  int num_heads() const;
  // Token `id` of the open model's tokenizer as the views print it.
  std::string token_name(int id) const;
  // Its bytes; nullopt for an id the tokenizer has no text for (a padded vocabulary).
  std::optional<std::string> token_bytes(int id) const;
};

// A load error in the app's words: where the loader says to pass
// --config FILE, it says to fill in the Model panel's config field
// (kConfigFieldWords, which the panel looks for to mark that field).
inline constexpr const char* kConfigFieldWords =
    "choose the config file in the Model panel's config field (under the path)";
std::string in_the_apps_words(std::string message);

// The score of one head for `kind`, from the overview (layer-major index).
double pattern_value(const ModelOverview& o, core::PatternKind kind, int index);

// Where head `index` stands among all the heads on score `kind`, the
// scores compared as a view prints them, to `decimals` places: the heads
// strictly below it, those that print the same (ties), and all the others.
struct HeadRank {
  int lower = 0, tied = 0, others = 0;
};
HeadRank head_rank(const ModelOverview& o, core::PatternKind kind, int index, int decimals);

// The heads of `layer` in the order the model view shows them: 0..H-1, or
// by the chosen score, highest first.
std::vector<int> heads_in_order(const ModelOverview& o, int layer, const PatternChoice& choice);

}  // namespace attnscope::gui
