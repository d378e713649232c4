// model_job.cpp: a model run, one block's trace, and the overview of every head.
#include "compute/model_job.hpp"

#include <algorithm>
#include <span>
#include <stdexcept>

#include "attnscope/analysis/thumbnail.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/model/family_trace.hpp"
#include "attnscope/model/head_patterns.hpp"
#include "attnscope/model/model_trace.hpp"

namespace attnscope::gui {

namespace {

namespace id = core::stage_id;

// The run for job.ids: `kept` edited or reused when it can be, else new
// (the old one freed first: two runs of a 1024-token text never coexist).
// An edit keeps the rows before its first changed token (ModelRun::retext);
// the tokens kept are counted in `kept_tokens`.
std::shared_ptr<core::ModelRun> run_for(const std::shared_ptr<const core::Gpt2Model>& model,
                                        const std::vector<int>& ids,
                                        std::shared_ptr<core::ModelRun>& kept, int& kept_tokens,
                                        bool& reused) {
  kept_tokens = 0;
  reused = false;
  if (const auto& base = kept; base && &base->model() == model.get()) {
    if (base->ids() == ids) {
      reused = true;
      kept_tokens = base->num_tokens();
      return base;
    }
    try {
      kept_tokens = base->retext(ids);
    } catch (...) {
      // Refused ids leave the run as it was, but a forward that ran out of
      // memory halfway does not: the next job starts afresh either way.
      kept.reset();
      throw;
    }
    return base;
  }
  kept.reset();
  kept = std::make_shared<core::ModelRun>(model, ids, core::ModelRun::Options{kAppRunCacheBytes});
  return kept;
}

// The position whose next tokens the overview lists for `job`.
int next_position(const core::ModelRun& run, const ModelJob& job) {
  return job.next_at < 0 || job.next_at >= run.num_tokens() ? run.num_tokens() - 1 : job.next_at;
}

// Tokens the run's text shares with `before`'s, from the start.
std::size_t shared_prefix(const std::vector<int>& a, const std::vector<int>& b) {
  return static_cast<std::size_t>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first -
                                  a.begin());
}

// The lens column at o.next_at and the grid, where the job asks for them
// (the grid's columns before the first changed token taken from `before`'s).
void lens_of(core::ModelRun& run, const ModelJob& job, ModelOverview& o,
             const ModelOverview* before) {
  if (!job.lens) return;
  if (o.lens.layers.empty() || o.lens.position != o.next_at)
    o.lens = core::logit_lens(run, o.next_at, kLensTop);
  if (o.grid) return;
  const core::LensGrid* known = before && before->grid ? before->grid.get() : nullptr;
  const int reuse = known ? static_cast<int>(shared_prefix(before->ids, o.ids)) : 0;
  o.grid =
      std::make_shared<const core::LensGrid>(core::logit_lens_grid(run, nullptr, known, reuse));
}

// The loss, the last logits and the lens of a new text; what `before` (the
// previous text's overview) computed for the tokens they share is reused.
// The loss of the new tokens reads the logits the run's forward made.
void predictions_of(core::ModelRun& run, const ModelJob& job, ModelOverview& o,
                    const ModelOverview* before) {
  o.ids = run.ids();
  std::span<const double> known;
  if (before) {
    // per_token[i] reads tokens 0..i + 1: it stands while those are unchanged.
    const std::size_t shared = shared_prefix(before->ids, o.ids);
    known = std::span<const double>(before->loss.per_token)
                .first(std::min(before->loss.per_token.size(), shared > 0 ? shared - 1 : 0));
  }
  o.loss = core::text_loss(run, known);
  o.last_logits = std::make_shared<const core::RowMatrix>(run.logits());
  lens_of(run, job, o, before);
}

// An edit that leaves more rows than this to make runs layer by layer over
// whole maps (all heads' rows at once would take 144 x 64 x 1024 floats at
// most, 38 MB).
constexpr int kOverviewRowsAtOnce = 64;

// The first row whose thumbnail blocks and pattern terms must be made
// again: 0 unless `before` (the last text's overview, same model) has the
// same blocks; else the start of the block holding the first changed token.
// Causal attention leaves every row before that token as it was, and the
// columns the text gained or lost are zero in those rows.
int first_row_to_make(const ModelOverview& o, const std::vector<int>& ids, int block,
                      const ModelOverview* before) {
  if (!before || before->thumb_block() != block || before->layers != o.layers ||
      before->heads != o.heads || before->pattern_rows.size() != o.pattern_rows.size())
    return 0;
  const auto shared = static_cast<int>(shared_prefix(before->ids, ids));
  const int first = shared / block * block;
  // All heads' new rows are held at once: a long new tail goes map by map.
  return static_cast<int>(ids.size()) - first <= kOverviewRowsAtOnce ? first : 0;
}

// Head `at`'s thumbnail and pattern terms from its rows [first, T) (`rows`)
// and, before `first`, from `before`'s.
void fold_rows(ModelOverview& o, std::size_t at, int layer, int head,
               const Eigen::Ref<const core::RowMatrix>& rows, int first,
               const ModelOverview* before) {
  const int block = o.thumb_block(), cells = core::thumbnail_blocks(o.tokens, kThumbnailCells);
  core::RowMatrix thumb = core::RowMatrix::Zero(cells, cells);
  std::vector<core::PatternRow> terms;
  if (first > 0) {
    const core::RowMatrix& old = before->thumbs[at].data();
    const Eigen::Index kept = first / block, cols = std::min<Eigen::Index>(old.cols(), cells);
    thumb.topLeftCorner(kept, cols) = old.topLeftCorner(kept, cols);
    const std::vector<core::PatternRow>& old_terms = before->pattern_rows[at];
    terms.assign(old_terms.begin(), old_terms.begin() + first);
  }
  thumb.bottomRows(cells - first / block) = core::downsample_max_rows(rows, block, block);
  std::vector<core::PatternRow> fresh = core::pattern_rows(rows, first);
  terms.insert(terms.end(), fresh.begin(), fresh.end());
  o.patterns[at] = core::pattern_scores_of_rows(terms);
  o.pattern_rows[at] = std::move(terms);
  o.thumbs[at] = core::Stage(id::weights, head, std::move(thumb), layer);
}

std::shared_ptr<ModelOverview> overview_of(core::ModelRun& run, const ModelJob& job,
                                           const ModelOverview* before) {
  auto o = std::make_shared<ModelOverview>();
  o->layers = run.num_layers();
  o->heads = run.num_heads();
  o->tokens = run.num_tokens();
  const auto n = static_cast<std::size_t>(o->layers * o->heads);
  o->thumbs.resize(n);
  o->patterns.resize(n);
  o->pattern_rows.resize(n);
  const int first = first_row_to_make(*o, run.ids(), o->thumb_block(), before);
  if (first > 0) {
    // After an edit only the rows from `first` on, every head at once.
    const std::vector<core::RowMatrix> rows = run.weight_rows(first);
#pragma omp parallel for schedule(dynamic, 4)
    for (int k = 0; k < o->layers * o->heads; ++k)
      fold_rows(*o, static_cast<std::size_t>(k), k / o->heads, k % o->heads,
                rows[static_cast<std::size_t>(k)], first, before);
  } else {
    // A layer's maps at once (those the run's cache lacks are computed on
    // every thread and not cached: the cached ones stay for the next edit),
    // then folded into the thumbnails and scores on every thread.
    for (int l = o->layers - 1; l >= 0; --l) {
      const std::vector<std::shared_ptr<const core::RowMatrix>> maps = run.layer_weights(l);
#pragma omp parallel for schedule(dynamic, 1)
      for (int h = 0; h < o->heads; ++h)
        fold_rows(*o, static_cast<std::size_t>(l * o->heads + h), l, h,
                  *maps[static_cast<std::size_t>(h)], 0, nullptr);
    }
  }
  o->induction = job.induction
                     ? job.induction
                     : std::make_shared<const std::vector<double>>(
                           core::model_patterns(run, job.model, kInductionTokens, 0).induction);
  o->next_at = next_position(run, job);
  o->next = run.next_tokens_at(o->next_at, 10);
  o->next_last = o->next_at == run.num_tokens() - 1 ? o->next : run.next_tokens(10);
  predictions_of(run, job, *o, before);
  return o;
}

// Checkpoint B on the job's ids beside `run` (A's): B's run is kept and
// edited as A's is; the per-head numbers stand while both models and the
// ids do. A B that cannot read the ids (another shape, a smaller vocabulary
// or context) gives a comparison holding only the reason.
std::shared_ptr<const ModelComparison> compare_with(const ModelJob& job, core::ModelRun& run,
                                                    KeptRun& kept) {
  auto c = std::make_shared<ModelComparison>();
  c->model_a = job.model;
  c->model_b = job.compare;
  c->ids = job.ids;
  c->error = core::compare_refusal(job.model->config(), job.compare->config(), job.model->name(),
                                   job.compare->name());
  if (!c->error.empty()) {
    kept.compare_run.reset();
    return c;
  }
  int kept_tokens = 0;
  bool reused = false;
  std::shared_ptr<core::ModelRun> b;
  try {
    b = run_for(job.compare, job.ids, kept.compare_run, kept_tokens, reused);
  } catch (const std::invalid_argument& e) {
    c->error = std::string("B cannot read this text: ") + e.what();
    return c;
  }
  const ModelComparison* before = kept.comparison.get();
  if (reused && before && before->model_a == job.model && before->model_b == job.compare &&
      before->ids == job.ids && before->error.empty())
    c->every_head = before->every_head;
  else
    c->every_head = core::compare_runs(run, *b);
  const core::Gpt2Config& cfg = job.model->config();
  c->layer = std::clamp(job.layer, 0, cfg.n_layer - 1);
  c->head = std::clamp(job.head, 0, cfg.n_head - 1);
  const core::StageKey key{c->layer, c->head, id::weights};
  c->a = run.stage(key);
  c->b = b->stage(key);
  kept.comparison = c;
  return c;
}

}  // namespace

std::shared_ptr<core::Trace> model_layer_trace(core::ModelRun& run, int layer, int head,
                                               int position) {
  const core::Gpt2Config& c = run.model().config();
  layer = std::clamp(layer, 0, c.n_layer - 1);
  head = std::clamp(head, 0, c.n_head - 1);
  const bool every_head = run.num_tokens() <= kEveryHeadUpTo;
  static const core::BlockStages block = core::block_stages();
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
  const bool last = layer == c.n_layer - 1;
  if (last) keys.push_back({-1, -1, id::ln_f});
  auto t = std::make_shared<core::Trace>(core::model_trace(run, keys));
  if (last) {  // the clicked token's logits, not only the last one's
    const int at = position < 0 || position >= run.num_tokens() ? run.num_tokens() - 1 : position;
    t->stages.emplace_back(id::logits, -1, core::position_logits(run, at), -1);
  }
  t->kind = core::TraceKind::ModelBlock;  // model_trace described the block (gpt2_block)
  t->layer = layer;
  return t;
}

std::string FamilyModelOpen::token_name(int id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= tokenizer->vocab_size())
    return "<" + std::to_string(id) + ">";
  try {
    return core::printable_token(tokenizer->token_bytes(id));
  } catch (const core::ParseError&) {
    return "<" + std::to_string(id) + ">";  // an id past the tokenizer's last (a padded vocabulary)
  }
}

int FamilyModelOpen::max_tokens() const {
  const int context = model->config().max_position_embeddings;
  return context > 0 ? std::min(context, core::FamilyRun::kMaxTokens) : core::FamilyRun::kMaxTokens;
}

namespace {

// The overview of a family run: as GPT-2's, computed whole (no rows are
// kept from the last text), without the logit lens.
std::shared_ptr<ModelOverview> family_overview(const core::FamilyRun& run, const ModelJob& job,
                                               const ModelOverview* before) {
  const FamilyModelOpen& f = *job.family;
  auto o = std::make_shared<ModelOverview>();
  o->layers = run.num_layers();
  o->heads = run.num_heads();
  o->tokens = run.num_tokens();
  const auto n = static_cast<std::size_t>(o->layers * o->heads);
  o->thumbs.resize(n);
  o->patterns.resize(n);
  o->pattern_rows.resize(n);
  if (const int first = first_row_to_make(*o, run.ids(), o->thumb_block(), before); first > 0) {
    const std::vector<core::RowMatrix> rows = run.weight_rows(first);  // every head's new rows
#pragma omp parallel for schedule(dynamic, 4)
    for (int k = 0; k < o->layers * o->heads; ++k)
      fold_rows(*o, static_cast<std::size_t>(k), k / o->heads, k % o->heads,
                rows[static_cast<std::size_t>(k)], first, before);
  } else {
    for (int l = o->layers - 1; l >= 0; --l) {
      const std::vector<core::RowMatrix> maps = run.layer_weights(l);
#pragma omp parallel for schedule(dynamic, 1)
      for (int h = 0; h < o->heads; ++h)
        fold_rows(*o, static_cast<std::size_t>(l * o->heads + h), l, h,
                  maps[static_cast<std::size_t>(h)], 0, nullptr);
    }
  }
  o->induction = job.induction ? job.induction
                               : std::make_shared<const std::vector<double>>(core::family_induction(
                                     f.model, kInductionTokens, 0, f.tokenizer->bos_id()));
  const auto name = [&f](int id) { return f.token_name(id); };
  o->next_at =
      job.next_at < 0 || job.next_at >= run.num_tokens() ? run.num_tokens() - 1 : job.next_at;
  o->next = core::family_next_tokens(run, o->next_at, 10, name);
  o->next_last = o->next_at == run.num_tokens() - 1
                     ? o->next
                     : core::family_next_tokens(run, run.num_tokens() - 1, 10, name);
  o->ids = run.ids();
  std::span<const double> known;
  if (before) {
    const std::size_t shared = shared_prefix(before->ids, o->ids);
    known = std::span<const double>(before->loss.per_token)
                .first(std::min(before->loss.per_token.size(), shared > 0 ? shared - 1 : 0));
  }
  o->loss = core::family_text_loss(run, known);
  o->last_logits = std::make_shared<const core::RowMatrix>(run.last_logits());
  return o;
}

}  // namespace

ModelResult run_family_job(const ModelJob& job, KeptRun& kept) {
  const FamilyModelOpen& f = *job.family;
  ModelResult r;
  kept.run.reset();  // a GPT-2 run and its comparison are not needed
  kept.compare_run.reset();
  kept.comparison.reset();
  const bool same_model = kept.family_run && &kept.family_run->model() == f.model.get();
  const bool reused = same_model && kept.family_run->ids() == job.ids;
  if (reused) {
    r.kept_tokens = kept.family_run->num_tokens();
  } else if (same_model) {
    try {
      r.kept_tokens = kept.family_run->retext(job.ids);
    } catch (...) {
      kept.family_run.reset();  // the next job starts afresh
      kept.family_rows.clear();
      throw;
    }
  } else {
    kept.family_run.reset();  // two runs of a long text never coexist
    kept.family_rows.clear();
    kept.family_run = std::make_shared<core::FamilyRun>(f.model, job.ids);
  }
  const core::FamilyRun& run = *kept.family_run;
  std::vector<std::string> tokens;
  std::string bytes;
  for (int id : run.ids()) {
    tokens.push_back(f.token_name(id));
    if (id >= 0 && static_cast<std::size_t>(id) < f.tokenizer->vocab_size())
      bytes += f.tokenizer->decode({id});
  }
  const int layer = std::clamp(job.layer, 0, run.num_layers() - 1);
  const int head = std::clamp(job.head, 0, run.num_heads() - 1);
  r.trace = std::make_shared<core::Trace>(core::family_layer_trace(
      run, layer, head, run.num_tokens() <= kEveryHeadUpTo, std::move(tokens),
      core::decode_utf8_replace(bytes), f.name, job.next_at, &kept.family_rows));
  const ModelOverview* was = same_model ? kept.overview.get() : nullptr;
  if (reused && was) {
    const int at =
        job.next_at < 0 || job.next_at >= run.num_tokens() ? run.num_tokens() - 1 : job.next_at;
    if (at != was->next_at) {
      auto o = std::make_shared<ModelOverview>(*was);
      o->next_at = at;
      o->next = core::family_next_tokens(run, at, 10, [&f](int id) { return f.token_name(id); });
      kept.overview = std::move(o);
    }
  } else {
    kept.overview = family_overview(run, job, was);
  }
  r.overview = kept.overview;
  return r;
}

ModelResult run_model_job(const ModelJob& job, KeptRun& kept) {
  if (job.family) return run_family_job(job, kept);
  if (!job.model) throw std::invalid_argument("no model is loaded");
  kept.family_run.reset();
  kept.family_rows.clear();
  ModelResult r;
  bool reused = false;
  // The last overview's numbers carry over only for the same model (the kept
  // run holds it, so the address is that model's).
  const bool same_model = kept.run && &kept.run->model() == job.model.get();
  r.run = run_for(job.model, job.ids, kept.run, r.kept_tokens, reused);
  r.trace = model_layer_trace(*r.run, job.layer, job.head, job.next_at);
  if (reused && kept.overview) {
    // The same text and model: every head's thumbnail and scores stand;
    // only another clicked position asks for other next tokens.
    // The lens is made once asked for (the Logit lens window opened).
    const int at = next_position(*r.run, job);
    const ModelOverview& was = *kept.overview;
    const bool lens_missing =
        job.lens && (!was.grid || was.lens.layers.empty() || was.lens.position != at);
    if (at != was.next_at || lens_missing) {
      auto o = std::make_shared<ModelOverview>(*kept.overview);
      o->next_at = at;
      o->next = r.run->next_tokens_at(at, 10);
      lens_of(*r.run, job, *o, nullptr);
      kept.overview = std::move(o);
    }
  } else {
    kept.overview = overview_of(*r.run, job, same_model ? kept.overview.get() : nullptr);
  }
  r.overview = kept.overview;
  if (job.compare) {
    r.comparison = compare_with(job, *r.run, kept);
  } else {
    kept.compare_run.reset();  // the window closed: B's run is not needed
    kept.comparison.reset();
  }
  return r;
}

}  // namespace attnscope::gui
