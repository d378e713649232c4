// model_job.hpp: what the worker computes for a real model (GPT-2 or the
// book's GPTModel): the run of the typed text, one block's stages as a Trace
// for the stepper and heatmaps, and the overview of every head the model
// view draws (thumbnails, pattern scores, next tokens).
//
// A job starts from the last job's run, which the worker keeps (the UI
// holds only traces and overviews, which share no memory the run changes,
// so one run is alive at a time): when the ids are equal, the run is
// reused (a change of layer, head or position); when they differ, the run
// is edited in place (ModelRun::retext: the rows before the first changed
// token stay, every layer runs the rest, so typing at the end of a long
// text costs a row or two per layer, and a change of the first token the
// whole forward); for another model it is freed and a new one runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/analysis/thumbnail.hpp"
#include "attnscope/base/trace.hpp"
#include "attnscope/model/family_model.hpp"
#include "attnscope/model/family_trace.hpp"
#include "attnscope/model/gpt2_model.hpp"
#include "attnscope/model/head_patterns.hpp"
#include "attnscope/model/predictions.hpp"
#include "attnscope/model/run_compare.hpp"
#include "attnscope/text/hf_tokenizer.hpp"

namespace attnscope::gui {

// Cells a side of a head's thumbnail (a T x T map is cut into this many
// blocks each way, keeping each block's largest weight: core/thumbnail.hpp).
inline constexpr int kThumbnailCells = 48;
// Above this many tokens a block's trace keeps every stage of the focused
// head only (and the weights of every head); below, every head's.
inline constexpr int kEveryHeadUpTo = 256;
// The ModelRun cache the app asks for: the maps of every head fit at T = 256
// (144 x 256 KiB), and at T = 1024 the 1.5 GB budget holds with the model.
inline constexpr std::size_t kAppRunCacheBytes = std::size_t{256} << 20;
// Tokens of the repeated random sequence the induction scores run on.
inline constexpr int kInductionTokens = 50;

// A Llama, Mistral, Qwen or Gemma 3 folder, opened with its tokenizer.json.
struct FamilyModelOpen {
  std::shared_ptr<const core::FamilyModel> model;
  std::shared_ptr<const core::HfTokenizer> tokenizer;
  std::string name;  // the folder's name, e.g. "Qwen3-0.6B"
  // A token's bytes as the views print it ("<|im_start|>", "Ġthe" as " the").
  std::string token_name(int id) const;
  // The largest context the app runs: the config's, at most FamilyRun::kMaxTokens.
  int max_tokens() const;
};

struct ModelJob {
  std::shared_ptr<const core::Gpt2Model> model;   // GPT-2 or the book's GPTModel; or
  std::shared_ptr<const FamilyModelOpen> family;  // a family model (then model is null)
  std::vector<int> ids;                           // the text's tokens (1..n_positions)
  int layer = 0;                                  // the block whose stages the trace holds
  int head = 0;                                   // the focused head (all its stages, at any T)
  int next_at = -1;                               // next tokens after this position (-1: the last)
  // The model's induction scores when known (computed once per model, as
  // `attnscope-cli model patterns` does: kInductionTokens ids, seed 0).
  std::shared_ptr<const std::vector<double>> induction;
  // The logit lens at next_at and its grid of every layer x position (the
  // Logit lens window is open).
  bool lens = false;
  // A second checkpoint B to run on the same ids and compare head by head
  // (the Compare checkpoints window is open); null: none.
  std::shared_ptr<const core::Gpt2Model> compare;
};

// Tokens per layer in the overview's logit lens column.
inline constexpr int kLensTop = 5;

// Every head at a glance, for the model view.
struct ModelOverview {
  int layers = 0, heads = 0, tokens = 0;
  // layer-major: thumbs[layer * heads + head], each min(T, kThumbnailCells)
  // square, the largest weight of each block of the head's map; as stages
  // ("weights", its layer and head) for the texture cache.
  std::vector<core::Stage> thumbs;
  std::vector<core::HeadPatternScores> patterns;  // on the text, same order
  // Each head's pattern terms, row by row (same order): what the next edit
  // keeps for the rows before its first changed token.
  std::vector<std::vector<core::PatternRow>> pattern_rows;
  // Tokens a side of a thumbnail's block (core::thumbnail_block_size).
  int thumb_block() const { return core::thumbnail_block_size(tokens, kThumbnailCells); }
  std::shared_ptr<const std::vector<double>> induction;  // same order
  std::vector<core::NextToken> next;                     // the 10 most likely next tokens
  int next_at = 0;                                       // ... after this position
  std::vector<core::NextToken> next_last;                // ... after the last one (to append)
  // What chapter 5 reads from the run: the text's ids, the loss of each
  // next token, the last position's logits (what Sample draws from), the
  // logit lens at next_at, and its grid when the job asked for it.
  std::vector<int> ids;
  core::TextLoss loss;
  std::shared_ptr<const core::RowMatrix> last_logits;
  core::LensColumn lens;
  std::shared_ptr<const core::LensGrid> grid;
};

// Checkpoint B against the job's model A on the same ids: every head's
// mean and largest |B − A| (core::compare_runs) and the selected head's maps.
struct ModelComparison {
  std::shared_ptr<const core::Gpt2Model> model_a, model_b;
  std::vector<int> ids;                         // the text both read
  core::RunDifference every_head;               // every layer and head
  int layer = 0, head = 0;                      // the selected head ...
  std::shared_ptr<const core::RowMatrix> a, b;  // ... its weights in A and B, (T, T) each
  std::string error;  // why B could not run (its shape, vocabulary or context); then no numbers
};

struct ModelResult {
  std::shared_ptr<core::ModelRun> run;  // the run (also left in kept_run); null for a family
  std::shared_ptr<core::Trace> trace;   // one block (Trace::layer)
  std::shared_ptr<const ModelOverview> overview;
  std::shared_ptr<const ModelComparison> comparison;  // when the job named a B
  // The tokens whose rows the last job's run already held (0: the forward
  // ran over the whole text; num_tokens(): nothing was recomputed).
  int kept_tokens = 0;
};

// What the worker keeps between model jobs: the last job's run and its
// overview. The overview depends on the text and the model only (and on the
// clicked position for its next tokens), so a job that reuses the run (a
// change of layer or head) reuses the overview too.
// A job with a checkpoint B keeps B's run too (edited like A's on every
// text change) and the last comparison, whose per-head numbers stand while
// both models and the ids do (a layer or head change only fetches two maps).
struct KeptRun {
  std::shared_ptr<core::ModelRun> run;
  std::shared_ptr<core::FamilyRun> family_run;  // a family model's (run is then null)
  core::FamilyLayerRows family_rows;            // the last family trace's row-wise stages
  std::shared_ptr<const ModelOverview> overview;
  std::shared_ptr<core::ModelRun> compare_run;
  std::shared_ptr<const ModelComparison> comparison;
  void reset() {
    run.reset();
    family_run.reset();
    family_rows.clear();
    overview.reset();
    compare_run.reset();
    comparison.reset();
  }
};

// A family model's job: the kept run is edited in place when the ids
// change (FamilyRun::retext: the rows before the first changed token stay)
// and reused for a layer, head or position change; the trace is
// family_layer_trace's, the overview GPT-2's but for the logit lens (GPT-2
// only), its thumbnails and pattern terms made again from the first
// changed row on.
ModelResult run_family_job(const ModelJob& job, KeptRun& kept);

// Runs `job` on `kept` (see the top of this file) and leaves its run and
// overview there. Throws std::invalid_argument for ids the model cannot
// take, std::bad_alloc when memory runs out.
ModelResult run_model_job(const ModelJob& job, KeptRun& kept);

// The block `layer` of `run` as a Trace the stepper reads: the block's input
// (the embeddings, or the previous block's output), then the catalogue's
// stages of the block's attention (core::block_stages: ln_1; per
// head Q, K, V, scores, mask, masked, scaled, weights and context, every
// head's up to kEveryHeadUpTo tokens, else `head`'s and every head's
// weights; concat, the output projection and the residual sum). Its config says
// Multihead with the model's heads and width.
// At the last block the trace goes on with the run's ln_f and the logits of
// token `position` (-1: the last), for the stepper's FinalNorm and Logits.
std::shared_ptr<core::Trace> model_layer_trace(core::ModelRun& run, int layer, int head,
                                               int position = -1);

}  // namespace attnscope::gui
