// gpt2_forward.cpp: the forward pass of a GPT-2-family model over one text,
// and the stages of any (layer, head) recomputed on demand.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "attnscope/base/stages.hpp"
#include "attnscope/model/gpt2_model.hpp"
#include "attnscope/model/predictions.hpp"
#include "kernels/cpu_share.hpp"
#include "model/gpt2_internal.hpp"

namespace attnscope::core {

namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
constexpr Eigen::Index kRowBlock = 64;  // query rows per score product

// What multiplies a head's masked scores: 1/√d_head where the config scales
// (scale_attn_weights), and 1/(layer + 1) where it also scales by layer.
float score_scale(const Gpt2Config& c, int layer) {
  double s = 1.0;
  if (c.scale_attn_weights) s /= std::sqrt(static_cast<double>(c.head_dim()));
  if (c.scale_attn_by_inverse_layer_idx) s /= static_cast<double>(layer + 1);
  return static_cast<float>(s);
}

// The T x T stages of one head before its weights, when a viewer asks.
struct ScoreStages {
  RowMatrix* scores = nullptr;  // Q_h K_hᵀ
  RowMatrix* masked = nullptr;  // -inf where key j > query i
  RowMatrix* scaled = nullptr;  // masked x score_scale
};

// The softmax of row i's visible scores (keys 0..i) x scale into w (T
// floats; zero past the visible keys).
void softmax_row(const float* scores, Eigen::Index keys, Eigen::Index T, float scale, float* w) {
  auto visible = Eigen::Map<Eigen::ArrayXf>(w, keys);
  visible = Eigen::Map<const Eigen::ArrayXf>(scores, keys) * scale;
  visible = (visible - visible.maxCoeff()).exp();  // vectorised exp
  visible *= 1.0f / visible.sum();
  std::fill(w + keys, w + T, 0.0f);
}

// Packing K and V costs as much as one row's products: the kernel pays off
// from a few tiles of new rows on (a fresh run, not an append).
bool tiled_rows(Eigen::Index new_rows) { return new_rows >= 4 * gemm::kTileRows; }

// head_rows on the projection kernel (gemm.hpp), 8 query rows at a time:
// their scores against K_hᵀ's panels up to the tile's last visible key, the
// rows' softmax while in cache, then their context over the visible keys.
// False, with nothing computed, where the kernel may not run (no kernel,
// or a sum that could overflow: the reason is in gemm.hpp).
bool head_rows_tiled(const Eigen::Ref<const RowMatrix>& qkv, float qkv_largest, int n_embd,
                     int head_dim, int h, Eigen::Index r0, float scale, RowMatrix& weights,
                     Eigen::Index w0, Eigen::Index ctx_col, RowMatrix& ctx) {
  if (!gemm::available()) return false;
  const Eigen::Index T = qkv.rows(), hd = head_dim;
  const auto q = qkv.block(r0, h * hd, T - r0, hd);
  const auto k = qkv.middleCols(n_embd + h * hd, hd);
  const auto v = qkv.middleCols(2 * n_embd + h * hd, hd);
  if (!gemm::sums_stay_finite(qkv_largest, qkv_largest, hd) ||
      !gemm::sums_stay_finite(1.0f, qkv_largest, T))  // softmax weights are at most 1
    return false;
  const gemm::PackedWeights keys_t = gemm::pack_transposed(k);
  const gemm::PackedWeights values = gemm::pack_weights(v);
  // The tile holds 8 rows of Q over head_dim columns, then 8 rows of the
  // weights over at most T keys: sized for the longer of the two.
  thread_local gemm::Buffer<float> tile, scores;
  tile.resize(static_cast<std::size_t>(std::max(T, hd) * gemm::kTileRows));
  scores.resize(static_cast<std::size_t>(T * gemm::kTileRows));
  for (Eigen::Index b = r0; b < T; b += gemm::kTileRows) {
    const Eigen::Index m = std::min(gemm::kTileRows, T - b), e = b + m;  // keys 0..e-1 visible
    gemm::pack_tile(q.data() + (b - r0) * q.outerStride(), q.outerStride(), m, hd, tile.data());
    for (Eigen::Index p = 0; p * gemm::kPanelCols < e; ++p)
      gemm::multiply_tile(tile.data(), keys_t.panel(p), hd, m,
                          std::min(gemm::kPanelCols, T - p * gemm::kPanelCols),
                          scores.data() + p * gemm::kPanelCols, T);
    for (Eigen::Index i = 0; i < m; ++i)
      softmax_row(scores.data() + i * T, b + i + 1, T, scale, weights.row(b + i - w0).data());
    gemm::pack_tile(weights.row(b - w0).data(), weights.outerStride(), m, e, tile.data());
    for (Eigen::Index p = 0; p < values.panels(); ++p)
      gemm::multiply_tile(tile.data(), values.panel(p), e, m,
                          std::min(gemm::kPanelCols, hd - p * gemm::kPanelCols),
                          &ctx(b - r0, ctx_col + p * gemm::kPanelCols), ctx.outerStride());
  }
  return true;
}

// Rows [r0, T) of head h's weights and context from the layer's [Q | K | V]
// (T x 3d). Row i of the weights goes to weights.row(i - w0) (weights has
// at least T - w0 rows and T columns); row i of the context to
// ctx->row(i - r0), columns [ctx_col, ctx_col + d_head), unless ctx is null
// (the weights alone). Causal: row i reads
// keys 0..i only. The score stages, when asked, are T x T.
// qkv_largest is gemm::max_abs of qkv where the kernel may serve (see tiled_rows),
// else negative.
void head_rows(const Eigen::Ref<const RowMatrix>& qkv, float qkv_largest, int n_embd, int head_dim,
               int h, Eigen::Index r0, float scale, RowMatrix& weights, Eigen::Index w0,
               Eigen::Index ctx_col, RowMatrix* ctx, const ScoreStages& out) {
  const Eigen::Index T = qkv.rows();
  if (!out.scores && ctx && qkv_largest >= 0.0f &&
      head_rows_tiled(qkv, qkv_largest, n_embd, head_dim, h, r0, scale, weights, w0, ctx_col, *ctx))
    return;
  const auto q = qkv.middleCols(h * head_dim, head_dim);
  const auto k = qkv.middleCols(n_embd + h * head_dim, head_dim);
  const auto v = qkv.middleCols(2 * n_embd + h * head_dim, head_dim);
  RowMatrix s;
  for (Eigen::Index b = r0; b < T; b += kRowBlock) {
    const Eigen::Index e = std::min(T, b + kRowBlock), m = e - b;
    s.noalias() = q.middleRows(b, m) * k.topRows(e).transpose();  // m x e
    for (Eigen::Index i = 0; i < m; ++i) {
      const Eigen::Index row = b + i, keys = row + 1;
      softmax_row(s.row(i).data(), keys, T, scale, weights.row(row - w0).data());
      if (out.scores) {
        out.scores->row(row).head(e) = s.row(i);
        out.scores->row(row).tail(T - e) = q.row(row) * k.bottomRows(T - e).transpose();
        out.masked->row(row) = out.scores->row(row);
        out.masked->row(row).tail(T - keys).setConstant(kMinusInf);
        out.scaled->row(row) = out.masked->row(row) * scale;
      }
    }
    if (ctx)
      ctx->middleRows(b - r0, m).middleCols(ctx_col, head_dim).noalias() =
          weights.block(b - w0, 0, m, e) * v.topRows(e);
  }
}

// y += x, rows in parallel (T x 768 adds are too many for one thread to do
// while the other waits).
void add_rows_to(const Eigen::Ref<const RowMatrix>& x, Eigen::Ref<RowMatrix> y) {
#pragma omp parallel for schedule(static) if (y.size() > 100000)
  for (Eigen::Index i = 0; i < y.rows(); ++i) y.row(i) += x.row(i);
}

std::size_t bytes_of(const RowMatrix& m) { return static_cast<std::size_t>(m.size()) * 4; }

}  // namespace

// Recomputed stages, least recently used evicted first once over budget.
struct ModelRun::Cache {
  using Key = std::tuple<int, int, std::string>;
  struct Entry {
    std::shared_ptr<const RowMatrix> matrix;
    std::size_t bytes = 0;
    std::uint64_t used = 0;
    // >= 0: an edit left only the rows before this one valid, and the
    // forward has not joined the new rows yet (get() does not answer).
    Eigen::Index rows_kept = -1;
  };
  std::map<Key, Entry> entries;
  std::size_t bytes = 0, budget = 0;
  std::uint64_t clock = 0;

  std::shared_ptr<const RowMatrix> get(const Key& key) {
    auto it = entries.find(key);
    if (it == entries.end() || it->second.rows_kept >= 0) return nullptr;
    it->second.used = ++clock;
    return it->second.matrix;
  }
  void put(const Key& key, std::shared_ptr<const RowMatrix> m) {
    erase(key);
    const std::size_t size = bytes_of(*m);
    if (size > budget) return;
    entries[key] = Entry{std::move(m), size, ++clock};
    bytes += size;
    while (bytes > budget) {
      auto oldest = std::min_element(entries.begin(), entries.end(), [](auto& a, auto& b) {
        return a.second.used < b.second.used;
      });
      erase(oldest->first);
    }
  }
  void erase(const Key& key) {
    if (std::get<2>(key) == stage_id::weights) pending.erase({std::get<0>(key), std::get<1>(key)});
    auto it = entries.find(key);
    if (it == entries.end()) return;
    bytes -= it->second.bytes;
    entries.erase(it);
  }

  // Rows of a head's weights computed after its whole map was cached (by
  // append or retext), joined below the map's valid top-left square by
  // ModelRun::settle when someone asks for it. Each block is rows x the
  // text's length then; a row's columns past its own position are zero, so
  // a block's first rows stay valid when a later edit cuts it. Not counted
  // in `bytes`.
  struct Rows {
    std::shared_ptr<const RowMatrix> matrix;
    Eigen::Index rows = 0;  // the valid rows of matrix, from its first
  };
  struct Pending {
    Eigen::Index base_rows = 0;  // the cached map's valid rows (and columns)
    std::vector<Rows> blocks;    // the rows after those, in order
    Eigen::Index covered() const {
      Eigen::Index n = base_rows;
      for (const Rows& b : blocks) n += b.rows;
      return n;
    }
  };
  std::map<std::pair<int, int>, Pending> pending;

  // Rows the cached map of head (layer, h) and its pending blocks hold (-1: no map).
  Eigen::Index covered(int layer, int h) const {
    auto it = entries.find({layer, h, std::string(stage_id::weights)});
    if (it == entries.end()) return -1;
    auto p = pending.find({layer, h});
    return p == pending.end() ? it->second.matrix->rows() : p->second.covered();
  }
  // Rows [r0, r0 + rows.rows()) of head (layer, h)'s weights: pending when
  // the cached map and the rows already pending end at r0; otherwise the
  // head's map is dropped, to be recomputed whole when asked for.
  void add_rows(int layer, int h, Eigen::Index r0, std::shared_ptr<const RowMatrix> rows) {
    const Key key{layer, h, std::string(stage_id::weights)};
    auto it = entries.find(key);
    if (covered(layer, h) != r0) {
      erase(key);
      return;
    }
    auto [p, fresh] = pending.try_emplace({layer, h});
    if (fresh) p->second.base_rows = it->second.matrix->rows();
    const Eigen::Index n = rows->rows();
    p->second.blocks.push_back(Rows{std::move(rows), n});
  }
  // Every head's map keeps its rows before `row` only (retext: the text
  // changes from there on).
  void cut_weights(Eigen::Index row) {
    for (auto& [key, entry] : entries) {
      if (std::get<2>(key) != stage_id::weights) continue;
      const std::pair<int, int> head{std::get<0>(key), std::get<1>(key)};
      auto it = pending.find(head);
      if (it == pending.end()) {
        if (entry.matrix->rows() <= row) continue;  // the map is before the change
        it = pending.emplace(head, Pending{entry.matrix->rows(), {}}).first;
      }
      Pending& p = it->second;
      Eigen::Index left = row;  // rows still to keep
      p.base_rows = std::min(p.base_rows, left);
      left -= p.base_rows;
      for (Rows& b : p.blocks) {
        b.rows = std::min(b.rows, left);
        left -= b.rows;
      }
      std::erase_if(p.blocks, [](const Rows& b) { return b.rows == 0; });
    }
  }
  void clear() {
    entries.clear();
    pending.clear();
    bytes = 0;
  }
  // Row i of these stages reads row i of the block's input (and, for a
  // head's context, the keys and values up to it): an edit keeps their rows
  // before its first changed token, and the forward joins the new ones.
  static bool row_wise(const Key& key) {
    const std::string& id = std::get<2>(key);
    if (std::get<1>(key) >= 0) return id == stage_id::context;
    return std::get<0>(key) >= 0 &&
           (id == stage_id::ln_1 || id == stage_id::concat || id == stage_id::output ||
            id == stage_id::attn_output || id == stage_id::ln_2 || id == stage_id::mlp_hidden ||
            id == stage_id::mlp_activation || id == stage_id::mlp_output);
  }
  // The text changes from `row` on (an append: row = the old length): the
  // row-wise stages keep their rows before it, waiting for extend(); every
  // other entry but the attention weights (cut_weights) goes.
  void cut_rows(Eigen::Index row) {
    for (auto it = entries.begin(); it != entries.end();) {
      Entry& e = it->second;
      if (std::get<2>(it->first) == stage_id::weights) {
        ++it;
      } else if (row_wise(it->first) && row > 0) {
        const Eigen::Index valid = e.rows_kept >= 0 ? e.rows_kept : e.matrix->rows();
        e.rows_kept = std::min(valid, row);
        ++it;
      } else {
        bytes -= e.bytes;
        it = entries.erase(it);
      }
    }
  }
  // Whether the forward should hand the rows from r0 on of `key` to extend().
  bool wants_rows(const Key& key, Eigen::Index r0) const {
    auto it = entries.find(key);
    return it != entries.end() && it->second.rows_kept == r0;
  }
  // The rows from r0 on of a cut stage, joined below its kept rows.
  void extend(const Key& key, Eigen::Index r0, const Eigen::Ref<const RowMatrix>& rows) {
    if (!wants_rows(key, r0)) return;
    const RowMatrix& kept = *entries.find(key)->second.matrix;
    auto whole = std::make_shared<RowMatrix>(r0 + rows.rows(), rows.cols());
    whole->topRows(r0) = kept.topRows(r0);
    whole->bottomRows(rows.rows()) = rows;
    put(key, std::move(whole));
  }
  // After the forward: a cut stage that kept all `rows` of the text (which
  // only lost its end) is cut to them; the others the forward did not
  // extend go.
  void drop_cut(Eigen::Index rows) {
    std::vector<Key> whole, gone;
    for (const auto& [key, e] : entries)
      if (e.rows_kept >= 0) (e.rows_kept == rows && rows > 0 ? whole : gone).push_back(key);
    for (const Key& key : gone) erase(key);
    for (const Key& key : whole) {
      auto it = entries.find(key);  // put() may have evicted it
      if (it != entries.end())
        put(key, std::make_shared<RowMatrix>(it->second.matrix->topRows(rows)));
    }
  }
};

void ModelRun::check_ids(const Gpt2Config& c, const std::vector<int>& ids) {
  if (ids.empty()) throw std::invalid_argument("the text has no tokens: type something");
  if (static_cast<int>(ids.size()) > c.n_positions)
    throw std::invalid_argument(
        "the text is " + std::to_string(ids.size()) +
        " tokens but the model reads at most n_positions = " + std::to_string(c.n_positions));
  for (int id : ids)
    if (id < 0 || id >= c.vocab_size)
      throw std::invalid_argument("token id " + std::to_string(id) +
                                  " is outside the vocabulary (0.." +
                                  std::to_string(c.vocab_size - 1) + ")");
}

ModelRun::ModelRun(std::shared_ptr<const Gpt2Model> model, std::vector<int> ids, Options options)
    : model_(std::move(model)), cache_(std::make_unique<Cache>()) {
  cache_->budget = options.cache_bytes;
  const Gpt2Config& c = model_->config();
  check_ids(c, ids);
  // resize leaves the rows unwritten, so the pages past T are never touched.
  residual_.resize(static_cast<std::size_t>(c.n_layer) + 1);
  for (RowMatrix& r : residual_) r.resize(c.n_positions, c.n_embd);
  qkv_.resize(static_cast<std::size_t>(c.n_layer));
  for (RowMatrix& r : qkv_) r.resize(c.n_positions, 3 * c.n_embd);
  for (int id : ids) tokens_.push_back(detail::token_text(model_->tokenizer(), id));
  ids_ = std::move(ids);
  forward_from(0);
}

void ModelRun::forward_from(int first_row) {
  const Gpt2Model::Weights& w = model_->weights();
  const auto T = static_cast<Eigen::Index>(ids_.size());
  RowMatrix& x = residual_[0];
  for (Eigen::Index t = first_row; t < T; ++t)
    x.row(t) = w.wte.map().row(ids_[static_cast<std::size_t>(t)]) + w.wpe.map().row(t);
  if (first_row < T)
    for (int l = 0; l < model_->config().n_layer; ++l) forward_layer(l, first_row);
  finish(static_cast<int>(first_row));
}

ModelRun::~ModelRun() = default;

int ModelRun::num_layers() const { return model_->config().n_layer; }
int ModelRun::num_heads() const { return model_->config().n_head; }

std::size_t ModelRun::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cache_->bytes;
}

void ModelRun::forward_layer(int layer, int first_row) {
  const detail::ThreadShare share;  // as many threads as there are free CPUs now
  const Gpt2Config& c = model_->config();
  const detail::Block& b = model_->weights().blocks[static_cast<std::size_t>(layer)];
  const auto L = static_cast<std::size_t>(layer);
  const Eigen::Index T = static_cast<Eigen::Index>(ids_.size()), r0 = first_row, n = T - r0;
  const auto x = residual_[L].middleRows(r0, n);
  // Stages an edit cut (Cache::cut_rows) take the new rows as they are made.
  auto wants = [&](std::string_view id, int h = -1) {
    return r0 > 0 && cache_->wants_rows({layer, h, std::string(id)}, r0);
  };
  auto extend = [&](std::string_view id, const Eigen::Ref<const RowMatrix>& rows, int h = -1) {
    if (r0 > 0) cache_->extend({layer, h, std::string(id)}, r0, rows);
  };
  const RowMatrix normed_1 = b.ln_1.apply(x, c.layer_norm_epsilon);
  extend(stage_id::ln_1, normed_1);
  b.attn.apply_into(normed_1, qkv_[L].middleRows(r0, n));
  const auto qkv = used(qkv_[L]);

  RowMatrix concat(n, c.n_embd);
  const float scale = score_scale(c, layer);
  // A fresh run keeps each head's whole weights map (when the budget allows
  // one); an append computes the new rows only and, where the head's map is
  // cached, leaves them pending below it (settle() joins them on demand).
  std::vector<std::shared_ptr<RowMatrix>> maps(static_cast<std::size_t>(c.n_head));
  const bool whole = r0 == 0 && static_cast<std::size_t>(T * T) * sizeof(float) <= cache_->budget;
  for (auto& m : maps) m = std::make_shared<RowMatrix>(whole ? T : n, T);
  const Eigen::Index w0 = whole ? 0 : r0;
  // qkv is the first T rows of qkv_[L]: contiguous.
  const float bound = tiled_rows(n) ? gemm::max_abs(qkv.data(), qkv.size()) : -1.0f;
#pragma omp parallel for schedule(dynamic, 1)
  for (int h = 0; h < c.n_head; ++h)
    head_rows(qkv, bound, c.n_embd, c.head_dim(), h, r0, scale, *maps[static_cast<std::size_t>(h)],
              w0, h * c.head_dim(), &concat, {});
  for (int h = 0; h < c.n_head; ++h) {
    auto& m = maps[static_cast<std::size_t>(h)];
    if (whole)
      cache_->put({layer, h, stage_id::weights}, std::move(m));
    else if (r0 > 0)
      cache_->add_rows(layer, h, r0, std::move(m));
  }

  extend(stage_id::concat, concat);
  for (int h = 0; h < c.n_head; ++h)
    extend(stage_id::context, concat.middleCols(h * c.head_dim(), c.head_dim()), h);

  RowMatrix attn, hidden;
  b.proj.apply(concat, attn);
  if (wants(stage_id::output)) extend(stage_id::output, RowMatrix(attn));
  add_rows_to(x, attn);  // the attention's residual
  extend(stage_id::attn_output, attn);
  const RowMatrix normed_2 = b.ln_2.apply(attn, c.layer_norm_epsilon);
  extend(stage_id::ln_2, normed_2);
  b.fc.apply(normed_2, hidden);
  if (wants(stage_id::mlp_hidden)) extend(stage_id::mlp_hidden, RowMatrix(hidden));
  detail::activate(hidden, c.activation_function);
  extend(stage_id::mlp_activation, hidden);
  auto next = residual_[L + 1].middleRows(r0, n);
  b.fc_proj.apply_into(hidden, next);
  if (wants(stage_id::mlp_output)) extend(stage_id::mlp_output, RowMatrix(next));
  add_rows_to(attn, next);  // the MLP's residual
}

void ModelRun::finish(int first_row) {
  const auto T = static_cast<Eigen::Index>(ids_.size());
  // The loss of the tokens from first_row on reads the logits of the rows
  // before them: row first_row - 1 (unchanged, but its target is new) on.
  const Eigen::Index from = std::max<Eigen::Index>(first_row - 1, 0);
  loss_from_ = T - 1 - from <= kLossRowsWithLogits ? from : T - 1;
  logits_of_row(T - 1, logits_, loss_from_, &loss_logits_);
}

void ModelRun::logits_of_row(Eigen::Index row, RowMatrix& logits, Eigen::Index extra_from,
                             RowMatrix* extra) const {
  const detail::ThreadShare share;
  const Gpt2Model::Weights& w = model_->weights();
  const Gpt2Config& c = w.config;
  const RowMatrix x = w.ln_f.apply(residual_.back().middleRows(row, 1), c.layer_norm_epsilon);
  const Eigen::Index extra_rows = extra ? std::max<Eigen::Index>(row - extra_from, 0) : 0;
  const RowMatrix x_extra =
      w.ln_f.apply(residual_.back().middleRows(extra_from, extra_rows), c.layer_norm_epsilon);
  const auto head = w.head().map();  // V x d
  logits.resize(1, head.rows());
  if (extra) extra->resize(extra_rows, head.rows());
  const Eigen::Index V = head.rows(), chunk = 1024;  // 50 chunks of 3 MB for GPT-2
  const auto chunks = static_cast<int>((V + chunk - 1) / chunk);
  // Bound by reading the head: each thread streams its own range in order
  // and then helps with the others' (cpu_share.hpp). The extra rows read
  // each chunk while it is still in cache, as head_logits would compute them.
  detail::RangeShare ranges(chunks, detail::team_size());
#pragma omp parallel num_threads(detail::team_size())
  ranges.run([&](int k, bool) {
    const Eigen::Index begin = k * chunk, size = std::min(chunk, V - begin);
    logits.middleCols(begin, size).noalias() = x * head.middleRows(begin, size).transpose();
    if (extra_rows > 0)
      extra->middleCols(begin, size).noalias() = x_extra * head.middleRows(begin, size).transpose();
  });
}

void ModelRun::append(int id) {
  std::lock_guard lock(mutex_);
  const Gpt2Config& c = model_->config();
  if (id < 0 || id >= c.vocab_size)
    throw std::invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary");
  const auto T = static_cast<int>(ids_.size());
  if (T + 1 > c.n_positions)
    throw std::invalid_argument(
        "the text already fills n_positions = " + std::to_string(c.n_positions) + " tokens");
  ids_.push_back(id);
  tokens_.push_back(detail::token_text(model_->tokenizer(), id));
  cache_->cut_rows(T);
  forward_from(T);
  cache_->drop_cut(static_cast<Eigen::Index>(ids_.size()));
}

int ModelRun::retext(std::vector<int> ids) {
  std::lock_guard lock(mutex_);
  check_ids(model_->config(), ids);
  const auto common = std::mismatch(ids.begin(), ids.end(), ids_.begin(), ids_.end());
  const auto first = static_cast<int>(common.first - ids.begin());
  if (ids.size() == ids_.size() && first == num_tokens()) return first;  // the same text
  tokens_.resize(static_cast<std::size_t>(first));
  for (auto it = common.first; it != ids.end(); ++it)
    tokens_.push_back(detail::token_text(model_->tokenizer(), *it));
  ids_ = std::move(ids);
  if (first == 0) {
    cache_->clear();  // a fresh run's: every map made whole again
  } else {
    cache_->cut_rows(first);
    cache_->cut_weights(first);
  }
  forward_from(first);
  cache_->drop_cut(static_cast<Eigen::Index>(ids_.size()));
  return first;
}

RowMatrix ModelRun::residual_column(int position) const {
  std::lock_guard lock(mutex_);
  const auto T = static_cast<int>(ids_.size());
  if (position < 0 || position >= T)
    throw std::invalid_argument("position " + std::to_string(position) +
                                " is not a token of the text (0.." + std::to_string(T - 1) + ")");
  RowMatrix column(static_cast<Eigen::Index>(residual_.size()), model_->config().n_embd);
  for (std::size_t l = 0; l < residual_.size(); ++l)
    column.row(static_cast<Eigen::Index>(l)) = residual_[l].row(position);
  return column;
}

std::vector<NextToken> ModelRun::next_tokens(int k) const {
  std::lock_guard lock(mutex_);
  return top_tokens(logits_, k);
}

std::vector<NextToken> ModelRun::next_tokens_at(int position, int k) const {
  std::lock_guard lock(mutex_);
  const auto T = static_cast<int>(ids_.size());
  if (position < 0 || position >= T)
    throw std::invalid_argument("position " + std::to_string(position) +
                                " is not a token of the text (0.." + std::to_string(T - 1) + ")");
  if (position == T - 1) return top_tokens(logits_, k);
  RowMatrix logits;
  logits_of_row(position, logits);
  return top_tokens(logits, k);
}

std::vector<NextToken> ModelRun::top_tokens(const RowMatrix& logits, int k) const {
  return core::top_tokens(*model_, logits, k);
}

std::shared_ptr<const RowMatrix> ModelRun::stage(const StageKey& key) {
  std::lock_guard lock(mutex_);
  const Gpt2Config& c = model_->config();
  const StageInfo* info = find_stage_info(key.id);
  if (!info || info->parameter() || key.layer < -1 || key.layer >= c.n_layer || key.head < -1 ||
      key.head >= c.n_head)
    return nullptr;
  if (key.id == stage_id::weights && key.head >= 0) settle(key.layer, key.head);
  if (auto hit = cache_->get({key.layer, key.head, std::string(key.id)})) return hit;
  auto made = compute(key);
  if (made) cache_->put({key.layer, key.head, std::string(key.id)}, made);
  return made;
}

std::vector<std::shared_ptr<const RowMatrix>> ModelRun::layer_weights(int layer) {
  std::lock_guard lock(mutex_);
  const Gpt2Config& c = model_->config();
  if (layer < 0 || layer >= c.n_layer)
    throw std::invalid_argument("layer " + std::to_string(layer) +
                                " is not one of the model's 0.." + std::to_string(c.n_layer - 1));
  std::vector<std::shared_ptr<const RowMatrix>> maps(static_cast<std::size_t>(c.n_head));
  std::vector<int> missing;
  for (int h = 0; h < c.n_head; ++h) {
    settle(layer, h);
    maps[static_cast<std::size_t>(h)] = cache_->get({layer, h, std::string(stage_id::weights)});
    if (!maps[static_cast<std::size_t>(h)]) missing.push_back(h);
  }
  if (missing.empty()) return maps;
  // As head_stage makes them (bit for bit), a head per thread.
  const detail::ThreadShare share;
  const auto qkv = used(qkv_[static_cast<std::size_t>(layer)]);
  const Eigen::Index T = qkv.rows();
  const float scale = score_scale(c, layer);
#pragma omp parallel for schedule(dynamic, 1)
  for (std::size_t k = 0; k < missing.size(); ++k) {
    const int h = missing[k];
    auto w = std::make_shared<RowMatrix>(T, T);
    head_rows(qkv, -1.0f, c.n_embd, c.head_dim(), h, 0, scale, *w, 0, 0, nullptr, {});
    maps[static_cast<std::size_t>(h)] = std::move(w);
  }
  return maps;
}

std::vector<RowMatrix> ModelRun::weight_rows(int first_row) {
  std::lock_guard lock(mutex_);
  const Gpt2Config& c = model_->config();
  const auto T = static_cast<int>(ids_.size());
  if (first_row < 0 || first_row > T)
    throw std::invalid_argument("row " + std::to_string(first_row) + " is not in 0.." +
                                std::to_string(T));
  const Eigen::Index n = T - first_row;
  std::vector<RowMatrix> rows(static_cast<std::size_t>(c.n_layer * c.n_head));
  const detail::ThreadShare share;
  // One task per head of every layer: a few rows each, too little work to
  // share out layer by layer.
#pragma omp parallel for schedule(dynamic, 4)
  for (int k = 0; k < c.n_layer * c.n_head; ++k) {
    const int layer = k / c.n_head, h = k % c.n_head;
    RowMatrix& w = rows[static_cast<std::size_t>(k)];
    w.resize(n, T);
    head_rows(used(qkv_[static_cast<std::size_t>(layer)]), -1.0f, c.n_embd, c.head_dim(), h,
              first_row, score_scale(c, layer), w, first_row, 0, nullptr, {});
  }
  return rows;
}

void ModelRun::settle(int layer, int head) {
  auto it = cache_->pending.find({layer, head});
  if (it == cache_->pending.end()) return;
  const Cache::Pending pending = std::move(it->second);
  cache_->pending.erase(it);
  const Cache::Key key{layer, head, std::string(stage_id::weights)};
  const std::shared_ptr<const RowMatrix> base = cache_->get(key);
  if (!base) return;
  const auto T = static_cast<Eigen::Index>(ids_.size());
  if (pending.covered() != T) {  // not expected: recompute the map whole rather than guess
    cache_->erase(key);
    return;
  }
  auto whole = std::make_shared<RowMatrix>(T, T);
  Eigen::Index row = pending.base_rows;
  whole->topLeftCorner(row, row) = base->topLeftCorner(row, row);
  whole->topRightCorner(row, T - row).setZero();
  for (const Cache::Rows& block : pending.blocks) {
    // Row i's weights end at column i: a block made when the text was longer
    // than T is zero past column T, one made when it was shorter ends early.
    const Eigen::Index n = block.rows, keys = std::min(block.matrix->cols(), T);
    whole->block(row, 0, n, keys) = block.matrix->topLeftCorner(n, keys);
    whole->block(row, keys, n, T - keys).setZero();
    row += n;
  }
  cache_->put(key, std::move(whole));
}

std::shared_ptr<const RowMatrix> ModelRun::compute(const StageKey& key) {
  const Gpt2Model::Weights& w = model_->weights();
  const Gpt2Config& c = w.config;
  const std::string_view id = key.id;
  if (key.layer == -1) {
    if (key.head != -1) return nullptr;
    if (id == stage_id::embeddings) return std::make_shared<RowMatrix>(used(residual_.front()));
    if (id == stage_id::ln_f)
      return std::make_shared<RowMatrix>(
          w.ln_f.apply(used(residual_.back()), c.layer_norm_epsilon));
    if (id == stage_id::logits) return std::make_shared<RowMatrix>(logits_);
    return nullptr;
  }
  if (key.head >= 0) return head_stage(key.layer, key.head, id);
  return layer_stage(key.layer, id);
}

std::shared_ptr<const RowMatrix> ModelRun::head_stage(int layer, int head, std::string_view id) {
  const Gpt2Config& c = model_->config();
  const auto qkv = used(qkv_[static_cast<std::size_t>(layer)]);
  const Eigen::Index T = qkv.rows(), hd = c.head_dim();
  if (id == stage_id::queries) return std::make_shared<RowMatrix>(qkv.middleCols(head * hd, hd));
  if (id == stage_id::keys)
    return std::make_shared<RowMatrix>(qkv.middleCols(c.n_embd + head * hd, hd));
  if (id == stage_id::values)
    return std::make_shared<RowMatrix>(qkv.middleCols(2 * c.n_embd + head * hd, hd));
  if (id == stage_id::mask) {
    auto m = std::make_shared<RowMatrix>(T, T);
    for (Eigen::Index i = 0; i < T; ++i)
      for (Eigen::Index j = 0; j < T; ++j) (*m)(i, j) = j > i ? 1.0f : 0.0f;
    return m;
  }
  const bool before_weights =
      id == stage_id::scores || id == stage_id::masked_scores || id == stage_id::scaled_scores;
  if (!before_weights && id != stage_id::weights && id != stage_id::context) return nullptr;
  auto scores = std::make_shared<RowMatrix>(T, T), masked = std::make_shared<RowMatrix>(T, T),
       scaled = std::make_shared<RowMatrix>(T, T), weights = std::make_shared<RowMatrix>(T, T);
  auto context = std::make_shared<RowMatrix>(T, hd);
  const ScoreStages out =
      before_weights ? ScoreStages{scores.get(), masked.get(), scaled.get()} : ScoreStages{};
  head_rows(qkv, -1.0f, c.n_embd, static_cast<int>(hd), head, 0, score_scale(c, layer), *weights, 0,
            0, context.get(), out);
  cache_->put({layer, head, stage_id::weights}, weights);
  cache_->put({layer, head, stage_id::context}, context);
  if (before_weights) {
    cache_->put({layer, head, stage_id::scores}, scores);
    cache_->put({layer, head, stage_id::masked_scores}, masked);
    cache_->put({layer, head, stage_id::scaled_scores}, scaled);
  }
  if (id == stage_id::scores) return scores;
  if (id == stage_id::masked_scores) return masked;
  if (id == stage_id::scaled_scores) return scaled;
  if (id == stage_id::weights) return weights;
  return context;
}

std::shared_ptr<const RowMatrix> ModelRun::layer_stage(int layer, std::string_view id) {
  const Gpt2Config& c = model_->config();
  const detail::Block& b = model_->weights().blocks[static_cast<std::size_t>(layer)];
  const auto x = used(residual_[static_cast<std::size_t>(layer)]);
  if (id == stage_id::ln_1)
    return std::make_shared<RowMatrix>(b.ln_1.apply(x, c.layer_norm_epsilon));
  if (id == stage_id::block_output)
    return std::make_shared<RowMatrix>(used(residual_[static_cast<std::size_t>(layer) + 1]));
  if (id == stage_id::ln_2 || id == stage_id::mlp_hidden || id == stage_id::mlp_activation ||
      id == stage_id::mlp_output) {
    // The MLP half of the block, from the residual after attention, as
    // forward_layer computes it.
    auto attn = cache_->get({layer, -1, std::string(stage_id::attn_output)});
    if (!attn) attn = layer_stage(layer, stage_id::attn_output);
    auto normed = std::make_shared<RowMatrix>(b.ln_2.apply(*attn, c.layer_norm_epsilon));
    auto hidden = std::make_shared<RowMatrix>();
    b.fc.apply(*normed, *hidden);
    auto activated = std::make_shared<RowMatrix>(*hidden);
    detail::activate(*activated, c.activation_function);
    auto out = std::make_shared<RowMatrix>();
    b.fc_proj.apply(*activated, *out);
    cache_->put({layer, -1, stage_id::ln_2}, normed);
    cache_->put({layer, -1, stage_id::mlp_hidden}, hidden);
    cache_->put({layer, -1, stage_id::mlp_activation}, activated);
    cache_->put({layer, -1, stage_id::mlp_output}, out);
    if (id == stage_id::ln_2) return normed;
    if (id == stage_id::mlp_hidden) return hidden;
    if (id == stage_id::mlp_activation) return activated;
    return out;
  }
  if (id != stage_id::concat && id != stage_id::output && id != stage_id::attn_output)
    return nullptr;
  const Eigen::Index hd = c.head_dim();
  auto concat = std::make_shared<RowMatrix>(x.rows(), c.n_embd);
  for (int h = 0; h < c.n_head; ++h) {
    auto ctx = cache_->get({layer, h, stage_id::context});
    if (!ctx) ctx = head_stage(layer, h, stage_id::context);
    concat->middleCols(h * hd, hd) = *ctx;
  }
  auto out = std::make_shared<RowMatrix>();
  b.proj.apply(*concat, *out);
  auto attn = std::make_shared<RowMatrix>(x + *out);
  cache_->put({layer, -1, stage_id::concat}, concat);
  cache_->put({layer, -1, stage_id::output}, out);
  cache_->put({layer, -1, stage_id::attn_output}, attn);
  if (id == stage_id::concat) return concat;
  if (id == stage_id::output) return out;
  return attn;
}

}  // namespace attnscope::core
