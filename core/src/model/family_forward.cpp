// family_forward.cpp: the forward pass of the Llama/Mistral/Qwen/Gemma 3
// families: RMSNorm, RoPE, grouped-query attention in row blocks (causal,
// sliding where the layer slides), the gated MLP, the LM head.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/cpu_share.hpp"
#include "model/family_internal.hpp"

#if defined(ATTNSCOPE_HAVE_OPENMP)
#include <omp.h>
#endif

namespace attnscope::core {

using detail::FamilyBlock;

namespace detail {

RowMatrix rms_norm(const Eigen::Ref<const RowMatrix>& x, const RowMatrix& gain, double eps) {
  RowMatrix y(x.rows(), x.cols());
  const auto d = static_cast<float>(x.cols());
  const auto e = static_cast<float>(eps);
#pragma omp parallel for schedule(static) if (x.size() > 100000)
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const auto row = x.row(i).array();
    const float inv = 1.0f / std::sqrt(row.square().sum() / d + e);
    y.row(i).array() = (row * inv) * gain.row(0).array();
  }
  return y;
}

void rms_norm_heads(RowMatrix& x, const RowMatrix& gain, double eps) {
  const Eigen::Index hd = gain.cols();
  const Eigen::Index heads = x.cols() / hd;
  const auto d = static_cast<float>(hd);
  const auto e = static_cast<float>(eps);
#pragma omp parallel for schedule(static) if (x.size() > 100000)
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    for (Eigen::Index h = 0; h < heads; ++h) {
      auto v = x.row(i).segment(h * hd, hd).array();
      const float inv = 1.0f / std::sqrt(v.square().sum() / d + e);
      v = (v * inv) * gain.row(0).array();
    }
}

FamilyRope family_rope(int head_dim, double theta, const Llama3RopeScaling* scaling, int T) {
  const int half = head_dim / 2;
  FamilyRope r;
  r.inv_freq.resize(1, half);
  const auto base = static_cast<float>(theta);
  for (int i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    r.inv_freq(0, i) = 1.0f / std::pow(base, exponent);
  }
  if (scaling && scaling->enabled) {  // llama3.py's freq_config, in float32
    const auto original = static_cast<float>(scaling->original_max_position_embeddings);
    const auto factor = static_cast<float>(scaling->factor);
    const auto low = static_cast<float>(scaling->low_freq_factor);
    const auto high = static_cast<float>(scaling->high_freq_factor);
    const float low_wavelen = original / low;
    const float high_wavelen = original / high;
    for (int i = 0; i < half; ++i) {
      const float inv = r.inv_freq(0, i);
      const float wavelen = 2.0f * static_cast<float>(M_PI) / inv;
      float scaled = wavelen > low_wavelen ? inv / factor : inv;
      if (wavelen <= low_wavelen && wavelen >= high_wavelen) {
        const float smooth = (original / wavelen - low) / (high - low);
        scaled = (1.0f - smooth) * (inv / factor) + smooth * inv;
      }
      r.inv_freq(0, i) = scaled;
    }
  }
  r.cos.resize(T, head_dim);
  r.sin.resize(T, head_dim);
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < half; ++i) {
      const float angle = static_cast<float>(t) * r.inv_freq(0, i);
      r.cos(t, i) = r.cos(t, i + half) = std::cos(angle);
      r.sin(t, i) = r.sin(t, i + half) = std::sin(angle);
    }
  return r;
}

void apply_family_rope(RowMatrix& x, const FamilyRope& rope, int head_dim, Eigen::Index first) {
  const Eigen::Index half = head_dim / 2;
  const Eigen::Index heads = x.cols() / head_dim;
#pragma omp parallel for schedule(static) if (x.size() > 100000)
  for (Eigen::Index t = 0; t < x.rows(); ++t)
    for (Eigen::Index h = 0; h < heads; ++h) {
      float* v = x.row(t).data() + h * head_dim;
      const Eigen::Index p = first + t;
      for (Eigen::Index i = 0; i < half; ++i) {
        const float x1 = v[i], x2 = v[i + half];
        const float a1 = x1 * rope.cos(p, i), b1 = -x2 * rope.sin(p, i);
        const float a2 = x2 * rope.cos(p, i + half), b2 = x1 * rope.sin(p, i + half);
        v[i] = a1 + b1;
        v[i + half] = a2 + b2;
      }
    }
}

RowMatrix activate_gated(const RowMatrix& gate_up, FamilyActivation a) {
  const Eigen::Index inner = gate_up.cols() / 2;
  RowMatrix out(gate_up.rows(), inner);
  const float c = std::sqrt(2.0f / static_cast<float>(M_PI));
#pragma omp parallel for schedule(static) if (out.size() > 100000)
  for (Eigen::Index r = 0; r < out.rows(); ++r) {
    const auto g = gate_up.row(r).head(inner).array();
    const auto u = gate_up.row(r).tail(inner).array();
    if (a == FamilyActivation::Silu)
      out.row(r).array() = (g / (1.0f + (-g).exp())) * u;
    else
      out.row(r).array() = (0.5f * g * (1.0f + (c * (g + 0.044715f * g.cube())).tanh())) * u;
  }
  return out;
}

}  // namespace detail

void FamilyModel::Weights::embed_row(int id, float* out) const {
  const Eigen::Index d = config.hidden_size;
  if (embed_bf16.empty())
    std::copy_n(embed.data() + static_cast<Eigen::Index>(id) * d, d, out);
  else
    gemm::widen_bf16(embed_bf16.data() + static_cast<Eigen::Index>(id) * d, d, out);
}

RowMatrix FamilyModel::Weights::logits(const RowMatrix& x) const {
  const gemm::Buffer<std::uint16_t>& bits = head_bf16();
  const Eigen::Index d = config.hidden_size, vocab = config.vocab_size;
  constexpr Eigen::Index kBlock = 128;
  const Eigen::Index chunks = (vocab + kBlock - 1) / kBlock;
  if (x.rows() <= gemm::kTileRows) {  // an edit's rows: each head row read once
    RowMatrix out(x.rows(), vocab);
#pragma omp parallel for schedule(dynamic, 8) if (chunks > 1)
    for (Eigen::Index blk = 0; blk < chunks; ++blk) {
      const Eigen::Index r0 = blk * kBlock, n = std::min(kBlock, vocab - r0);
      if (bits.empty())
        gemm::row_dots(x.data(), x.rows(), x.outerStride(), head().data() + r0 * d, n, d,
                       out.data() + r0, out.outerStride());
      else
        gemm::bf16_row_dots(x.data(), x.rows(), x.outerStride(), bits.data() + r0 * d, n, d,
                            out.data() + r0, out.outerStride());
    }
    return out;
  }
  // A block of the head's rows at a time (a BF16 head's widened into a
  // buffer that stays in L2), each block's logits one product of the same
  // shape either way: the vocabulary on every thread.
  RowMatrix out(x.rows(), vocab);
#pragma omp parallel for schedule(dynamic, 8) if (chunks > 1)
  for (Eigen::Index blk = 0; blk < chunks; ++blk) {
    const Eigen::Index r0 = blk * kBlock, n = std::min(kBlock, vocab - r0);
    if (bits.empty()) {
      out.middleCols(r0, n).noalias() = x * head().middleRows(r0, n).transpose();
      continue;
    }
    thread_local RowMatrix rows;
    rows.resize(n, d);
    gemm::widen_bf16(bits.data() + r0 * d, n * d, rows.data());
    out.middleCols(r0, n).noalias() = x * rows.transpose();
  }
  return out;
}

namespace {

constexpr Eigen::Index kRowBlock = 32;

// The first key row block [r0, r1) of a layer reads.
Eigen::Index first_key(const FamilyLayerStages& s, Eigen::Index r0) {
  return s.sliding ? std::max<Eigen::Index>(0, r0 - s.window + 1) : 0;
}

// Softmax over the visible keys of p's rows: the scaled scores of query
// rows r0 + r % n (several heads' n rows stacked) against keys from k0,
// masked (causal, and the window), zero where masked.
void masked_softmax(RowMatrix& p, const FamilyLayerStages& s, float scale, Eigen::Index r0,
                    Eigen::Index n, Eigen::Index k0) {
  for (Eigen::Index r = 0; r < p.rows(); ++r) {
    const Eigen::Index i = r0 + r % n;
    const Eigen::Index lo = s.sliding ? std::max<Eigen::Index>(0, i - s.window + 1) : 0;
    auto row = p.row(r);
    const Eigen::Index first = lo - k0, count = i - lo + 1;
    auto seen = row.segment(first, count).array();
    seen *= scale;
    const float top = seen.maxCoeff();
    seen = (seen - top).exp();
    seen /= seen.sum();
    row.head(first).setZero();
    row.tail(p.cols() - first - count).setZero();
  }
}

// Weights of query rows [r0, r1) of `head` over keys [first_key, r1);
// s.queries_rotated holds the rows from `offset` on, the keys every row.
RowMatrix head_block(const FamilyLayerStages& s, const FamilyConfig& c, int head, Eigen::Index r0,
                     Eigen::Index r1, Eigen::Index offset = 0) {
  const Eigen::Index hd = c.head_dim;
  const Eigen::Index g = head / c.kv_groups();
  const Eigen::Index k0 = first_key(s, r0);
  RowMatrix p = s.queries_rotated.block(r0 - offset, head * hd, r1 - r0, hd) *
                s.keys_rotated.block(k0, g * hd, r1 - k0, hd).transpose();
  masked_softmax(p, s, static_cast<float>(c.query_scale), r0, r1 - r0, k0);
  return p;
}

// The same for every query head reading K/V group g, stacked head after
// head: one product with the group's keys instead of one per head.
RowMatrix group_block(const FamilyLayerStages& s, const FamilyConfig& c, int g, Eigen::Index r0,
                      Eigen::Index r1, Eigen::Index offset) {
  const Eigen::Index hd = c.head_dim, n = r1 - r0, heads = c.kv_groups();
  const Eigen::Index k0 = first_key(s, r0);
  RowMatrix q(heads * n, hd);
  for (Eigen::Index m = 0; m < heads; ++m)
    q.middleRows(m * n, n) = s.queries_rotated.block(r0 - offset, (g * heads + m) * hd, n, hd);
  RowMatrix p = q * s.keys_rotated.block(k0, g * hd, r1 - k0, hd).transpose();
  masked_softmax(p, s, static_cast<float>(c.query_scale), r0, n, k0);
  return p;
}

// What compute_stages keeps: every stage (layer_stages), the rotated
// queries and keys and the values (the forward), or the rotated queries and
// keys only (layer_weights: V's columns are not projected).
enum class Keep { All, Attention, Scores };

// A layer's stages with only what names them set: the layer, whether it
// slides and its window.
FamilyLayerStages stages_of(const FamilyConfig& c, int layer) {
  FamilyLayerStages s;
  s.layer = layer;
  s.sliding = c.sliding[static_cast<std::size_t>(layer)];
  s.window = s.sliding ? c.sliding_window : 0;
  return s;
}

// A layer's stages from its input rows (at positions first.. onwards).
FamilyLayerStages compute_stages(const FamilyModel::Weights& w, int layer, const RowMatrix& x,
                                 Keep keep, Eigen::Index first = 0) {
  const bool keep_all = keep == Keep::All;
  const FamilyConfig& c = w.config;
  const FamilyBlock& b = w.blocks[static_cast<std::size_t>(layer)];
  FamilyLayerStages s = stages_of(c, layer);
  s.normed = detail::rms_norm(x, b.input_norm, c.rms_norm_eps);
  const Eigen::Index qw = c.q_width(), kw = c.kv_width();
  RowMatrix qkv(x.rows(), keep == Keep::Scores ? qw + kw : qw + 2 * kw);
  b.qkv.apply_into(s.normed, qkv);
  s.queries_rotated = qkv.leftCols(qw);
  s.keys_rotated = qkv.middleCols(qw, kw);
  if (keep != Keep::Scores) s.values = qkv.rightCols(kw);
  qkv = RowMatrix();
  if (keep_all) {
    s.queries = s.queries_rotated;
    s.keys = s.keys_rotated;
  } else {
    s.normed = RowMatrix();
  }
  if (c.qk_norm) {
    detail::rms_norm_heads(s.queries_rotated, b.q_norm, c.rms_norm_eps);
    detail::rms_norm_heads(s.keys_rotated, b.k_norm, c.rms_norm_eps);
    if (keep_all) {
      s.queries_normed = s.queries_rotated;
      s.keys_normed = s.keys_rotated;
    }
  }
  const auto T = static_cast<int>(first + x.rows());
  const detail::FamilyRope rope = detail::family_rope(
      c.head_dim, c.theta_of(layer), c.scaled(layer) ? &c.rope_scaling : nullptr, T);
  detail::apply_family_rope(s.queries_rotated, rope, c.head_dim, first);
  detail::apply_family_rope(s.keys_rotated, rope, c.head_dim, first);
  return s;
}

// Every head's context side by side (rows [offset, T) x heads*hd, where
// s.queries_rotated holds those rows and the keys and values all T): row
// blocks of every K/V group on all threads.
RowMatrix attend(const FamilyLayerStages& s, const FamilyConfig& c, Eigen::Index offset) {
  const Eigen::Index T = s.values.rows(), hd = c.head_dim, heads = c.kv_groups();
  const Eigen::Index rows = T - offset;
  RowMatrix context(rows, c.q_width());
  const Eigen::Index blocks = (rows + kRowBlock - 1) / kRowBlock;
  const Eigen::Index jobs = blocks * c.num_key_value_heads;
#pragma omp parallel for schedule(dynamic, 1) if (jobs > 1 && T > 16)
  for (Eigen::Index job = 0; job < jobs; ++job) {
    const auto g = static_cast<int>(job % c.num_key_value_heads);
    const Eigen::Index r0 = offset + (job / c.num_key_value_heads) * kRowBlock;
    const Eigen::Index r1 = std::min(T, r0 + kRowBlock), n = r1 - r0;
    const Eigen::Index k0 = first_key(s, r0);
    const RowMatrix out =
        group_block(s, c, g, r0, r1, offset) * s.values.block(k0, g * hd, r1 - k0, hd);
    for (Eigen::Index m = 0; m < heads; ++m)
      context.block(r0 - offset, (g * heads + m) * hd, n, hd) = out.middleRows(m * n, n);
  }
  return context;
}

// Block `layer` on the rows [first, T) of its input (x, T - first rows):
// their rotated keys and values go below the layer's kept ones (`keys`,
// `values`, first rows), their rotated queries into `queries` when given,
// and the block's output rows are returned.
RowMatrix forward_block(const FamilyModel::Weights& w, int layer, const RowMatrix& x,
                        Eigen::Index first, RowMatrix& keys, RowMatrix& values,
                        RowMatrix* queries) {
  const FamilyConfig& c = w.config;
  const FamilyBlock& b = w.blocks[static_cast<std::size_t>(layer)];
  RowMatrix out;
  {
    FamilyLayerStages s = compute_stages(w, layer, x, Keep::Attention, first);
    const Eigen::Index T = first + x.rows();
    keys.conservativeResize(T, c.kv_width());
    values.conservativeResize(T, c.kv_width());
    keys.bottomRows(x.rows()) = s.keys_rotated;
    values.bottomRows(x.rows()) = s.values;
    // The layer's every key and value, lent to the attention and returned.
    std::swap(s.keys_rotated, keys);
    std::swap(s.values, values);
    const RowMatrix context = attend(s, c, first);
    std::swap(s.keys_rotated, keys);
    std::swap(s.values, values);
    b.o.apply(context, out);
    if (queries) *queries = std::move(s.queries_rotated);
  }
  if (c.gemma) out = detail::rms_norm(out, b.post_attn_norm, c.rms_norm_eps);
  RowMatrix h = x + out;
  const RowMatrix pre =
      detail::rms_norm(h, c.gemma ? b.pre_ff_norm : b.post_attn_norm, c.rms_norm_eps);
  RowMatrix gate_up;
  b.gate_up.apply(pre, gate_up);
  const RowMatrix act = detail::activate_gated(gate_up, c.activation);
  gate_up = RowMatrix();
  b.down.apply(act, out);
  if (c.gemma) out = detail::rms_norm(out, b.post_ff_norm, c.rms_norm_eps);
  h += out;
  return h;
}

}  // namespace

FamilyRun::FamilyRun(std::shared_ptr<const FamilyModel> model, std::vector<int> ids,
                     Options options)
    : model_(std::move(model)), ids_(std::move(ids)), options_(options) {
  check(ids_);
  const auto layers = static_cast<std::size_t>(model_->config().num_hidden_layers);
  residual_.resize(layers + 1);
  keys_.resize(layers);
  queries_.resize(layers);
  values_.resize(layers);
  run_rows(0, false);
}

void FamilyRun::check(const std::vector<int>& ids) const {
  const FamilyConfig& c = model_->config();
  if (ids.empty()) throw std::invalid_argument("no tokens to run");
  if (ids.size() > static_cast<std::size_t>(kMaxTokens))
    throw std::invalid_argument(std::to_string(ids.size()) + " tokens: at most " +
                                std::to_string(kMaxTokens) + " are run");
  for (int id : ids)
    if (id < 0 || id >= c.vocab_size)
      throw std::invalid_argument("token id " + std::to_string(id) +
                                  " is outside the vocabulary (" + std::to_string(c.vocab_size) +
                                  ")");
}

void FamilyRun::run_rows(Eigen::Index first, bool edit) {
  const FamilyModel::Weights& w = model_->weights();
  const FamilyConfig& c = w.config;
  const auto T = static_cast<Eigen::Index>(ids_.size());
  RowMatrix& x = residual_[0];
  x.conservativeResize(T, c.hidden_size);
  const float embed_scale = c.gemma ? static_cast<float>(std::sqrt(double(c.hidden_size))) : 1.0f;
  for (Eigen::Index t = first; t < T; ++t) {
    w.embed_row(ids_[static_cast<std::size_t>(t)], x.row(t).data());
    if (c.gemma) x.row(t) *= embed_scale;
  }
  // The rotated queries stay, below their budget (layer_weights and
  // weight_rows read them): those kept from before, rows [queries_first_,
  // first), and the new rows'; or only the new rows'; or none.
  const auto row_bytes = static_cast<std::size_t>(c.q_width()) * sizeof(float) *
                         static_cast<std::size_t>(c.num_hidden_layers);
  auto fits = [&](Eigen::Index from) {
    return static_cast<std::size_t>(T - from) * row_bytes <= options_.kept_query_bytes;
  };
  if (queries_first_ > first || !fits(queries_first_)) {
    for (auto& q : queries_) q.resize(0, c.q_width());
    queries_first_ = fits(first) ? first : T;
  }
  const bool keep_queries = queries_first_ < T;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const detail::ThreadShare share;  // as many threads as there are free CPUs now
    const auto at = static_cast<std::size_t>(l);
    const RowMatrix rows = residual_[at].middleRows(first, T - first);
    RowMatrix queries;
    RowMatrix out =
        forward_block(w, l, rows, first, keys_[at], values_[at], keep_queries ? &queries : nullptr);
    if (keep_queries) {
      RowMatrix& q = queries_[at];
      q.conservativeResize(T - queries_first_, c.q_width());
      q.bottomRows(T - first) = queries;
    }
    residual_[at + 1].conservativeResize(T, c.hidden_size);
    residual_[at + 1].bottomRows(T - first) = std::move(out);
  }
  const detail::ThreadShare share;
  const RowMatrix& last = residual_.back();
  // Every position's logits: the kept rows' stay, the new rows' are made.
  // Else the last position's; after an edit of a few rows, also those rows'
  // and the one before (what the loss of the new tokens reads), all in the
  // pass over the LM head the last row needs anyway.
  const bool few = edit && first > 0 && T - first < gemm::kTileRows;
  const Eigen::Index from = options_.all_logits ? first : few ? first - 1 : T - 1;
  RowMatrix logits =
      w.logits(detail::rms_norm(last.middleRows(from, T - from), w.final_norm, c.rms_norm_eps));
  if (c.final_logit_softcapping > 0) {
    const auto cap = static_cast<float>(c.final_logit_softcapping);
    logits.array() = (logits.array() / cap).tanh() * cap;
  }
  if (options_.all_logits) {
    logits_.conservativeResize(T, c.vocab_size);
    logits_.bottomRows(T - first) = logits;
  } else {
    logits_ = std::move(logits);
  }
}

int FamilyRun::retext(std::vector<int> ids) {
  check(ids);
  const std::size_t shared = static_cast<std::size_t>(
      std::mismatch(ids.begin(), ids.end(), ids_.begin(), ids_.end()).first - ids.begin());
  // A text equal to the run's, or a shorter one it begins with: the last
  // row must be made again for its logits.
  const auto first = static_cast<Eigen::Index>(std::min(shared, ids.size() - 1));
  ids_ = std::move(ids);
  for (auto& r : residual_) r.conservativeResize(std::min(first, r.rows()), r.cols());
  for (auto& k : keys_) k.conservativeResize(std::min(first, k.rows()), k.cols());
  for (auto& v : values_) v.conservativeResize(std::min(first, v.rows()), v.cols());
  // Kept queries of rows before `first` stay (run_rows restarts them when
  // they begin after it).
  for (auto& q : queries_)
    q.conservativeResize(std::clamp<Eigen::Index>(first - queries_first_, 0, q.rows()), q.cols());
  if (options_.all_logits)
    logits_.conservativeResize(std::min(first, logits_.rows()), logits_.cols());
  try {
    run_rows(first, true);
  } catch (...) {
    // A forward that ran out of memory halfway leaves no run to trust.
    for (auto& r : residual_) r.resize(0, r.cols());
    throw;
  }
  return static_cast<int>(first);
}

std::vector<RowMatrix> FamilyRun::weight_rows(int first) const {
  const FamilyModel::Weights& w = model_->weights();
  const FamilyConfig& c = w.config;
  const Eigen::Index T = num_tokens();
  if (first < 0 || first > T)
    throw std::invalid_argument("row " + std::to_string(first) + " is outside 0.." +
                                std::to_string(T));
  const int heads = c.num_attention_heads;
  std::vector<RowMatrix> out(static_cast<std::size_t>(num_layers() * heads),
                             RowMatrix(0, T));  // first == T: no rows changed
  for (int l = 0; l < num_layers() && first < T; ++l) {
    const detail::ThreadShare share;
    const auto at = static_cast<std::size_t>(l);
    // The rows the last edit ran kept their rotated queries; rows before
    // them are projected here.
    const Eigen::Index kept = std::max<Eigen::Index>(first, std::min(T, queries_first_));
    FamilyLayerStages s = kept > first
                              ? compute_stages(w, l, residual_[at].middleRows(first, kept - first),
                                               Keep::Scores, first)
                              : stages_of(c, l);
    if (kept < T) {
      RowMatrix q(T - first, c.q_width());
      q.topRows(kept - first) = s.queries_rotated;
      q.bottomRows(T - kept) = queries_[at].bottomRows(T - kept);
      s.queries_rotated = std::move(q);
    }
    s.keys_rotated = keys_[at];
#pragma omp parallel for schedule(dynamic, 1) if (heads > 1 && T - first > 16)
    for (int h = 0; h < heads; ++h) {
      RowMatrix m = RowMatrix::Zero(T - first, T);
      for (Eigen::Index r0 = first; r0 < T; r0 += kRowBlock) {
        const Eigen::Index r1 = std::min(T, r0 + kRowBlock), k0 = first_key(s, r0);
        m.block(r0 - first, k0, r1 - r0, r1 - k0) = head_block(s, c, h, r0, r1, first);
      }
      out[static_cast<std::size_t>(l * heads + h)] = std::move(m);
    }
  }
  return out;
}

int FamilyRun::num_layers() const { return model_->config().num_hidden_layers; }
int FamilyRun::num_heads() const { return model_->config().num_attention_heads; }
int FamilyRun::kv_group(int head) const { return head / model_->config().kv_groups(); }

const RowMatrix& FamilyRun::residual(int layer) const {
  if (layer < 0 || layer > num_layers())
    throw std::invalid_argument("layer " + std::to_string(layer) + " is outside 0.." +
                                std::to_string(num_layers()));
  return residual_[static_cast<std::size_t>(layer)];
}

FamilyLayerStages FamilyRun::layer_stages(int layer, int first) const {
  const detail::ThreadShare share;
  if (layer < 0 || layer >= num_layers())
    throw std::invalid_argument("layer " + std::to_string(layer) + " is outside 0.." +
                                std::to_string(num_layers() - 1));
  if (first < 0 || first >= num_tokens())
    throw std::invalid_argument("row " + std::to_string(first) + " is outside 0.." +
                                std::to_string(num_tokens() - 1));
  const RowMatrix& x = residual_[static_cast<std::size_t>(layer)];
  if (first == 0) return compute_stages(model_->weights(), layer, x, Keep::All);
  return compute_stages(model_->weights(), layer, x.bottomRows(x.rows() - first), Keep::All, first);
}

RowMatrix FamilyRun::head_weights(const FamilyLayerStages& s, int head) const {
  const FamilyConfig& c = model_->config();
  if (head < 0 || head >= c.num_attention_heads)
    throw std::invalid_argument("head " + std::to_string(head) + " is outside the layer");
  const Eigen::Index T = num_tokens();
  RowMatrix weights(T, T);  // each block's rows written once: the keys it sees, zeros around them
  for (Eigen::Index r0 = 0; r0 < T; r0 += kRowBlock) {
    const Eigen::Index r1 = std::min(T, r0 + kRowBlock), n = r1 - r0;
    const Eigen::Index k0 = first_key(s, r0);
    weights.block(r0, 0, n, k0).setZero();
    weights.block(r0, k0, n, r1 - k0) = head_block(s, c, head, r0, r1);
    weights.block(r0, r1, n, T - r1).setZero();
  }
  return weights;
}

std::vector<RowMatrix> FamilyRun::layer_weights(int layer) const {
  if (layer < 0 || layer >= num_layers())
    throw std::invalid_argument("layer " + std::to_string(layer) + " is outside 0.." +
                                std::to_string(num_layers() - 1));
  FamilyLayerStages s;
  const auto at = static_cast<std::size_t>(layer);
  if (queries_first_ == 0 && queries_[at].rows() == num_tokens()) {
    // The forward's own rotated queries and keys: nothing to project.
    s = stages_of(model_->config(), layer);
    s.queries_rotated = queries_[at];
    s.keys_rotated = keys_[at];
  } else {
    const detail::ThreadShare share;
    s = compute_stages(model_->weights(), layer, residual_[at],
                       Keep::Scores);  // the rotated queries and keys: all the weights read
  }
  std::vector<RowMatrix> out(static_cast<std::size_t>(num_heads()));
  const detail::ThreadShare share;
#pragma omp parallel for schedule(dynamic, 1) if (num_tokens() > 64)
  for (int h = 0; h < num_heads(); ++h) out[static_cast<std::size_t>(h)] = head_weights(s, h);
  return out;
}

RowMatrix FamilyRun::window_mask(int layer) const {
  const FamilyConfig& c = model_->config();
  if (layer < 0 || layer >= num_layers())
    throw std::invalid_argument("layer " + std::to_string(layer) + " is outside the model");
  if (!c.sliding[static_cast<std::size_t>(layer)]) return {};
  const Eigen::Index T = num_tokens(), W = c.sliding_window;
  RowMatrix m = RowMatrix::Zero(T, T);
  for (Eigen::Index i = 0; i < T; ++i)
    for (Eigen::Index j = std::max<Eigen::Index>(0, i - W + 1); j <= i; ++j) m(i, j) = 1.0f;
  return m;
}

RowMatrix FamilyRun::head_columns(const RowMatrix& stage, int index, int head_dim) {
  return stage.middleCols(static_cast<Eigen::Index>(index) * head_dim, head_dim);
}

}  // namespace attnscope::core
