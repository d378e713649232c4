// model_job.cpp: a model run, one block's trace, and the overview of every head.
#include "compute/model_job.hpp"

#include <algorithm>
#include <stdexcept>

#include "attnscope/analysis/thumbnail.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/model/model_trace.hpp"

namespace attnscope::gui {

namespace {

namespace id = core::stage_id;

// The run for job.ids: `kept` edited or reused when it can be, else new
// (the old one freed first: two runs of a 1024-token text never coexist).
// An edit keeps the rows before its first changed token (ModelRun::retext);
// the tokens kept are counted in `kept_tokens`.
std::shared_ptr<core::ModelRun> run_for(const ModelJob& job, std::shared_ptr<core::ModelRun>& kept,
                                        int& kept_tokens, bool& reused) {
  kept_tokens = 0;
  reused = false;
  if (const auto& base = kept; base && &base->model() == job.model.get()) {
    if (base->ids() == job.ids) {
      reused = true;
      kept_tokens = base->num_tokens();
      return base;
    }
    try {
      kept_tokens = base->retext(job.ids);
    } catch (...) {
      // Refused ids leave the run as it was, but a forward that ran out of
      // memory halfway does not: the next job starts afresh either way.
      kept.reset();
      throw;
    }
    return base;
  }
  kept.reset();
  kept = std::make_shared<core::ModelRun>(job.model, job.ids,
                                          core::ModelRun::Options{kAppRunCacheBytes});
  return kept;
}

// The position whose next tokens the overview lists for `job`.
int next_position(const core::ModelRun& run, const ModelJob& job) {
  return job.next_at < 0 || job.next_at >= run.num_tokens() ? run.num_tokens() - 1 : job.next_at;
}

std::shared_ptr<ModelOverview> overview_of(core::ModelRun& run, const ModelJob& job) {
  auto o = std::make_shared<ModelOverview>();
  o->layers = run.num_layers();
  o->heads = run.num_heads();
  o->tokens = run.num_tokens();
  const auto n = static_cast<std::size_t>(o->layers * o->heads);
  o->thumbs.resize(n);
  o->patterns.resize(n);
  // A layer's maps at once (those the run's cache lacks are computed on
  // every thread and not cached: the cached ones stay for the next edit),
  // then scored on every thread.
  for (int l = o->layers - 1; l >= 0; --l) {
    const std::vector<std::shared_ptr<const core::RowMatrix>> maps = run.layer_weights(l);
#pragma omp parallel for schedule(dynamic, 1)
    for (int h = 0; h < o->heads; ++h) {
      const core::RowMatrix& w = *maps[static_cast<std::size_t>(h)];
      const auto at = static_cast<std::size_t>(l * o->heads + h);
      o->thumbs[at] = core::Stage(id::weights, h, core::downsample_max(w, kThumbnailCells), l);
      o->patterns[at] = core::pattern_scores(w);
    }
  }
  o->induction = job.induction
                     ? job.induction
                     : std::make_shared<const std::vector<double>>(
                           core::model_patterns(run, job.model, kInductionTokens, 0).induction);
  o->next_at = next_position(run, job);
  o->next = run.next_tokens_at(o->next_at, 10);
  o->next_last = o->next_at == run.num_tokens() - 1 ? o->next : run.next_tokens(10);
  return o;
}

}  // namespace

std::shared_ptr<core::Trace> model_layer_trace(core::ModelRun& run, int layer, int head) {
  const core::Gpt2Config& c = run.model().config();
  layer = std::clamp(layer, 0, c.n_layer - 1);
  head = std::clamp(head, 0, c.n_head - 1);
  const bool every_head = run.num_tokens() <= kEveryHeadUpTo;
  static const core::BlockStages block = core::attention_block_stages();
  std::vector<core::StageKey> keys{core::block_input_key(layer)};
  for (std::string_view s : block.before_heads) keys.push_back({layer, -1, s});
  for (int h = 0; h < c.n_head; ++h) {
    if (every_head || h == head) {
      for (std::string_view s : block.heads) keys.push_back({layer, h, s});
    } else {
      keys.push_back({layer, h, id::weights});
    }
  }
  for (std::string_view s : block.after_heads) keys.push_back({layer, -1, s});
  auto t = std::make_shared<core::Trace>(core::model_trace(run, keys));
  t->kind = core::TraceKind::ModelBlock;  // model_trace described the block (gpt2_block)
  t->layer = layer;
  return t;
}

ModelResult run_model_job(const ModelJob& job, KeptRun& kept) {
  if (!job.model) throw std::invalid_argument("no model is loaded");
  ModelResult r;
  bool reused = false;
  r.run = run_for(job, kept.run, r.kept_tokens, reused);
  r.trace = model_layer_trace(*r.run, job.layer, job.head);
  if (reused && kept.overview) {
    // The same text and model: every head's thumbnail and scores stand;
    // only another clicked position asks for other next tokens.
    const int at = next_position(*r.run, job);
    if (at != kept.overview->next_at) {
      auto o = std::make_shared<ModelOverview>(*kept.overview);
      o->next_at = at;
      o->next = r.run->next_tokens_at(at, 10);
      kept.overview = std::move(o);
    }
  } else {
    kept.overview = overview_of(*r.run, job);
  }
  r.overview = kept.overview;
  return r;
}

}  // namespace attnscope::gui
