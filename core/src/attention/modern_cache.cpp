// modern_cache.cpp: generating token by token with the KV cache, as the
// book's classes do with use_cache=True (cache_k / cache_v and
// ptr_current_pos; MultiHeadAttentionWithSWA keeps only the window;
// MultiHeadLatentAttention caches the latent and up-projects all of it each
// step), each step checked against a full forward pass.
#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "attention/modern_internal.hpp"

namespace attnscope::core::modern {

namespace {

// Appends row to m (rows grow by one); drops rows from the front beyond keep
// (keep <= 0: keep all).
void append_row(RowMatrix& m, const RowMatrix& row, int keep) {
  RowMatrix grown(m.rows() + 1, row.cols());
  if (m.rows() > 0) grown.topRows(m.rows()) = m;
  grown.bottomRows(1) = row;
  if (keep > 0 && grown.rows() > keep) {
    m = grown.bottomRows(keep);
  } else {
    m = std::move(grown);
  }
}

using Cache = KvCache;

// Fills the step's view of the cache: the K/V heads the new query attends
// to (Latent: the latent and its up-projection, made whole each step, as
// the book's class does) and the bytes the cache holds.
void expose(const Cache& cache, CacheStep& step, const Config& c, const Parameters& p) {
  if (c.kind == Kind::Latent) {
    const int hd = head_dim(c);
    step.latent = cache.latent;
    const RowMatrix keys = detail::project(cache.latent, p.up_key);  // (S, d_out)
    const RowMatrix values = detail::project(cache.latent, p.up_value);
    for (int g = 0; g < kv_heads(c); ++g) {
      step.keys.emplace_back(keys.middleCols(g * hd, hd));
      step.values.emplace_back(values.middleCols(g * hd, hd));
    }
    step.cache_bytes = static_cast<std::size_t>(cache.latent.size()) * sizeof(float);
    return;
  }
  step.keys = cache.keys;
  step.values = cache.values;
  step.cache_bytes = 0;
  for (std::size_t g = 0; g < cache.keys.size(); ++g)
    step.cache_bytes +=
        static_cast<std::size_t>(cache.keys[g].size() + cache.values[g].size()) * sizeof(float);
}

// The rows a sliding window keeps (0: all).
int window_rows(const Config& c) {
  return c.kind == Kind::SlidingWindow && c.window ? *c.window : 0;
}

// One step of use_cache: token t's keys and values (rotated at position t)
// or latent enter the cache, which SWA trims to the window.
void update_cache(Cache& cache, const Config& c, const Parameters& p, const RowMatrix& x_t,
                  const RopeTables& rope, int t) {
  if (c.kind == Kind::Latent) {
    append_row(cache.latent, detail::project(x_t, p.down), 0);
    return;
  }
  const int hd = head_dim(c), groups = kv_heads(c);
  const RowMatrix k_new = detail::project(x_t, p.key);  // (1, groups x hd)
  const RowMatrix v_new = detail::project(x_t, p.value);
  cache.keys.resize(static_cast<std::size_t>(groups));
  cache.values.resize(static_cast<std::size_t>(groups));
  for (int g = 0; g < groups; ++g) {
    const auto gi = static_cast<std::size_t>(g);
    RowMatrix k = k_new.middleCols(g * hd, hd);
    if (c.rope) k = apply_rope(k, rope, t);  // rotated at its position, then cached
    append_row(cache.keys[gi], k, window_rows(c));
    append_row(cache.values[gi], v_new.middleCols(g * hd, hd), window_rows(c));
  }
}

// The cache as steps 0 .. t leave it, made at once from x's rows (the
// projections are row by row, so these are the same rows up to float
// reassociation in the products).
Cache prefilled_cache(const Config& c, const Parameters& p, const RowMatrix& x, int t,
                      const RopeTables& rope) {
  Cache cache;
  if (c.kind == Kind::Latent) {
    cache.latent = detail::project(x.topRows(t + 1), p.down);
    return cache;
  }
  const int keep = window_rows(c) > 0 ? std::min(t + 1, window_rows(c)) : t + 1;
  const int first = t + 1 - keep, hd = head_dim(c);
  const RowMatrix rows = x.middleRows(first, keep);
  const RowMatrix keys = detail::project(rows, p.key);  // (keep, groups x hd)
  const RowMatrix values = detail::project(rows, p.value);
  for (int g = 0; g < kv_heads(c); ++g) {
    RowMatrix k = keys.middleCols(g * hd, hd);
    if (c.rope) k = apply_rope(k, rope, first);
    cache.keys.push_back(std::move(k));
    cache.values.emplace_back(values.middleCols(g * hd, hd));
  }
  return cache;
}

// The new query row against the cache: scores, mask, softmax, context, out_proj.
void attend_step(CacheStep& step, const Config& c, const Parameters& p, const RowMatrix& x_t,
                 const RopeTables& rope) {
  const int hd = head_dim(c), group_size = c.num_heads / kv_heads(c);
  const RowMatrix q = detail::project(x_t, p.query);  // (1, d_out)
  const auto S = static_cast<int>(step.keys.front().rows());
  step.first_key_position = step.position + 1 - S;
  const detail::MaskRule rule = detail::mask_rule(c);
  const float sqrt_dk = detail::root_dk(hd);
  RowMatrix concat(1, c.d_out);
  for (int h = 0; h < c.num_heads; ++h) {
    RowMatrix q_h = q.middleCols(h * hd, hd);
    if (c.rope) q_h = apply_rope(q_h, rope, step.position);
    const auto g = static_cast<std::size_t>(h / group_size);
    RowMatrix scores(1, S);
    scores.noalias() = q_h * step.keys[g].transpose();
    RowMatrix scaled = scores;
    for (int j = 0; j < S; ++j)
      if (detail::hidden(rule, step.position, step.first_key_position + j))
        scaled(0, j) = -std::numeric_limits<float>::infinity();
    scaled /= sqrt_dk;
    RowMatrix weights = softmax_rows(scaled);
    concat.middleCols(h * hd, hd).noalias() = weights * step.values[g];
    step.queries.push_back(std::move(q_h));
    step.scores.push_back(std::move(scores));
    step.weights.push_back(std::move(weights));
  }
  step.output = detail::project(concat, p.out);
}

}  // namespace

std::string validate_cache(const Config& config, const RowMatrix& x, int step) {
  if (config.kind == Kind::Cross)
    return "cross-attention has no KV cache to grow: its keys and values come from the second "
           "sequence, projected once; choose a self-attention class to generate token by token";
  std::string msg = validate(config, x);
  if (!msg.empty()) return msg;
  if (step < 0 || step >= x.rows())
    return "cache step " + std::to_string(step) +
           " is outside the sequence: give a step from 0 to " + std::to_string(x.rows() - 1);
  return "";
}

std::vector<CacheStep> run_cached(const Config& config, const RowMatrix& x) {
  if (config.kind == Kind::Cross) return {};  // refused by validate_cache
  Config eval = config;
  eval.training = false;  // generating: no dropout, nothing drawn after the constructor
  TorchGenerator gen(config.seed);
  const Parameters params = init_parameters(eval, static_cast<int>(x.cols()), 0, gen);
  const Run full = run_with_parameters(eval, params, x, RowMatrix(), gen);
  const auto T = static_cast<int>(x.rows());
  RopeTables rope;
  if (config.rope) rope = compute_rope_params(head_dim(config), config.rope_theta, T);

  Cache cache;
  std::vector<CacheStep> steps(static_cast<std::size_t>(T));
  for (int t = 0; t < T; ++t) {
    CacheStep& step = steps[static_cast<std::size_t>(t)];
    step.position = t;
    const RowMatrix x_t = x.row(t);
    update_cache(cache, eval, params, x_t, rope, t);
    expose(cache, step, eval, params);
    attend_step(step, eval, params, x_t, rope);
    step.max_abs_diff = (step.output - full.output.row(t)).cwiseAbs().maxCoeff();
  }
  return steps;
}

CachedModule::CachedModule(const Config& config, int d_in, int max_tokens) : config_(config) {
  config_.training = false;  // generating: no dropout
  TorchGenerator gen(config.seed);
  params_ = init_parameters(config_, d_in, 0, gen);
  if (config_.rope)
    rope_ = compute_rope_params(head_dim(config_), config_.rope_theta, std::max(1, max_tokens));
}

CacheStep CachedModule::step(const RowMatrix& x_t) {
  CacheStep step;
  step.position = position_;
  update_cache(cache_, config_, params_, x_t, rope_, position_);
  expose(cache_, step, config_, params_);
  attend_step(step, config_, params_, x_t, rope_);
  ++position_;
  return step;
}

CacheStep cache_step(const Config& config, const RowMatrix& x, int t, bool check) {
  Config eval = config;
  eval.training = false;
  TorchGenerator gen(config.seed);
  const Parameters params = init_parameters(eval, static_cast<int>(x.cols()), 0, gen);
  RopeTables rope;
  if (config.rope) rope = compute_rope_params(head_dim(config), config.rope_theta, t + 1);
  CacheStep step;
  step.position = t;
  expose(prefilled_cache(eval, params, x, t, rope), step, eval, params);
  const RowMatrix x_t = x.row(t);
  attend_step(step, eval, params, x_t, rope);
  if (check) {  // recompute x[0 .. t] in full
    const Run full = run_with_parameters(eval, params, x.topRows(t + 1), RowMatrix(), gen);
    step.max_abs_diff = (step.output - full.output.row(t)).cwiseAbs().maxCoeff();
  }
  return step;
}

}  // namespace attnscope::core::modern
