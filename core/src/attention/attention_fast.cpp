// attention_fast.cpp: the fast forward pass (EnginePath::Fast).
//
// Same stages, same order, same RNG draws as attention_reference.cpp, which
// it is tested against (core/tests/test_fast_path.cpp). Differences:
// - every matrix is built in place and moved into the trace (no copies);
// - the row-wise work (scale, mask, softmax, dropout) is one fused pass per
//   row, with Eigen's vectorized exp;
// - dropout keep-flags for all heads are drawn up front, in the order PyTorch
//   draws them, so that the heads can then run in parallel (OpenMP);
// - causal context products skip the zero upper triangle;
// - projections and per-head products run on the packed kernel (gemm.hpp)
//   where its sums cannot overflow, tiled 8 query rows at a time;
// - a few coarse parallel regions instead of Eigen's per-product threading:
//   projection column blocks together with the dropout draws and parameter
//   copies, then whole heads (or row blocks of one head), then out_proj.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "attention/attention_internal.hpp"
#include "kernels/cpu_share.hpp"

#if defined(ATTNSCOPE_HAVE_OPENMP)
#include <omp.h>

#include "attnscope/base/stages.hpp"
#endif

namespace attnscope::core::detail {

namespace {

// Runs fn(begin, end) over row blocks of [0, rows), in parallel when the
// work (rows x cost_per_row flops) is worth a parallel region and we are not
// inside one already. Eigen's own threading is off (EIGEN_DONT_PARALLELIZE):
// a few coarse regions stall far less on a busy machine than one per product.
template <typename Fn>
void for_row_blocks(Eigen::Index rows, double cost_per_row, Fn&& fn) {
  constexpr double kMinParallelFlops = 4e6;  // ~40 us of work
#if defined(ATTNSCOPE_HAVE_OPENMP)
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads > 1 && rows >= 2 * threads &&
      static_cast<double>(rows) * cost_per_row >= kMinParallelFlops) {
    const Eigen::Index blocks = std::min<Eigen::Index>(rows, 4 * threads);
#pragma omp parallel for schedule(dynamic, 1)
    for (Eigen::Index b = 0; b < blocks; ++b) {
      const Eigen::Index begin = rows * b / blocks, end = rows * (b + 1) / blocks;
      if (end > begin) fn(begin, end);
    }
    return;
  }
#endif
  fn(Eigen::Index{0}, rows);
}

// Columns [col, col + cols) of y = x . p.weight + p.bias.
struct ColumnBlock {
  const Projection* p;
  bool kernel;                        // on the kernel (else Eigen's product)
  const gemm::PackedWeights* packed;  // p.weight packed, or nullptr: pack per panel
  RowMatrix* y;
  Eigen::Index col, cols;  // whole panels of the kernel when it runs
};

// x and, when the kernel runs (gemm::available()), x packed for it.
struct ProjectionInput {
  const RowMatrix& x;
  const gemm::PackedRows* packed;  // nullptr: Eigen's product
};

void run_block(const ProjectionInput& in, const ColumnBlock& b) {
  if (b.kernel) {
    thread_local std::vector<float> scratch;  // one panel of weights packed
    for (Eigen::Index q = b.col / gemm::kPanelCols; q * gemm::kPanelCols < b.col + b.cols; ++q) {
      const float* panel = nullptr;
      if (b.packed) {
        panel = b.packed->panel(q);
      } else {
        scratch.resize(static_cast<std::size_t>(b.p->weight.rows() * gemm::kPanelCols));
        gemm::pack_panel(b.p->weight, q, scratch.data());
        panel = scratch.data();
      }
      gemm::multiply_panel(*in.packed, panel, q, b.p->bias, *b.y);
    }
    return;
  }
  auto dst = b.y->middleCols(b.col, b.cols);
  dst.noalias() = in.x * b.p->weight.middleCols(b.col, b.cols);
  if (b.p->bias.size() > 0) dst.rowwise() += b.p->bias.row(0).segment(b.col, b.cols);
}

// Sizes y and cuts x . p.weight into column blocks for the threads to share.
// By columns, not by rows of x: every block then packs only its own share of
// the weights (Eigen repacks the whole right-hand side for every product, and
// with row blocks at T = 256 that packing cost as much as the products). With
// Eigen the blocks are about 256 columns wide or wider, so x is packed only a
// few times; the kernel reads x packed once, so its blocks are two panels.
// `prepared` is p prepared, or null. The kernel runs where its sums cannot
// overflow (gemm.hpp says why), else Eigen's product.
void add_column_blocks(std::vector<ColumnBlock>& blocks, const ProjectionInput& in,
                       const Projection& p, const PreparedParameters::Layer* prepared, RowMatrix& y,
                       int threads) {
  const bool kernel =
      in.packed && gemm::sums_stay_finite(in.packed->max_abs,
                                          prepared ? prepared->max_abs : gemm::max_abs(p.weight),
                                          p.weight.rows());
  const gemm::PackedWeights* packed = kernel && prepared ? &prepared->packed : nullptr;
  const Eigen::Index unit = kernel ? gemm::kPanelCols : 1;  // cut between these
  const Eigen::Index min_units = kernel ? 2 : 256;
  const Eigen::Index n = p.weight.cols();
  const Eigen::Index units = (n + unit - 1) / unit;
  y.resize(in.x.rows(), n);
  // A multiple of the thread count, so that no thread is left with one block more.
  const Eigen::Index count =
      std::min(units, threads * std::max<Eigen::Index>(1, units / (threads * min_units)));
  for (Eigen::Index b = 0; b < count; ++b) {
    const Eigen::Index begin = units * b / count * unit;
    const Eigen::Index end = std::min(n, units * (b + 1) / count * unit);
    if (end > begin) blocks.push_back(ColumnBlock{&p, kernel, packed, &y, begin, end - begin});
  }
}

int worth_threads(double flops) {
#if defined(ATTNSCOPE_HAVE_OPENMP)
  constexpr double kMinParallelFlops = 4e6;  // ~40 us of work
  if (!omp_in_parallel() && flops >= kMinParallelFlops) return omp_get_max_threads();
#endif
  (void)flops;
  return 1;
}

// Runs every job once, in parallel when threads > 1, longest-first order
// being the caller's: dynamic scheduling hands the next job to whichever
// thread is free, so serial side jobs (the dropout draws, copies) hide behind
// the column blocks of the products.
void run_jobs(std::vector<std::function<void()>>& jobs, int threads) {
  const auto n = static_cast<int>(jobs.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1 && n > 1)
  for (int i = 0; i < n; ++i) jobs[static_cast<std::size_t>(i)]();
}

double projection_flops(const RowMatrix& x, Eigen::Index out_cols) {
  return 2.0 * static_cast<double>(x.rows()) * static_cast<double>(x.cols()) *
         static_cast<double>(out_cols);
}

// x packed for the kernel into `storage`, or Eigen's product without one.
ProjectionInput projection_input(const RowMatrix& x, gemm::PackedRows& storage) {
  if (!gemm::available()) return ProjectionInput{x, nullptr};
  gemm::pack_rows(x, storage);
  return ProjectionInput{x, &storage};
}

// x . weight + bias, the column blocks shared among the threads.
RowMatrix project_fast(const ProjectionInput& in, const Projection& p,
                       const PreparedParameters::Layer* prepared) {
  RowMatrix y;
  const int threads = worth_threads(projection_flops(in.x, p.weight.cols()));
  std::vector<ColumnBlock> blocks;
  add_column_blocks(blocks, in, p, prepared, y, threads);
  std::vector<std::function<void()>> jobs;
  for (const ColumnBlock& b : blocks) jobs.emplace_back([&in, b] { run_block(in, b); });
  run_jobs(jobs, threads);
  return y;
}

float root_dk(Eigen::Index d_k) {
  return static_cast<float>(std::pow(static_cast<double>(d_k), 0.5));
}

// One head's (T, T) stages and its context, filled row by row.
struct HeadMatrices {
  RowMatrix scores, scaled, weights;        // (T, T) each
  RowMatrix masked, dropout_mask, dropped;  // (T, T) each, causal only
  RowMatrix context;                        // (T, d_v)
  HeadMatrices(Eigen::Index T, Eigen::Index d_v, bool causal)
      : scores(T, T), scaled(T, T), weights(T, T), context(T, d_v) {
    if (causal) {
      masked.resize(T, T);
      dropout_mask.resize(T, T);
      dropped.resize(T, T);
    }
  }
};

// Everything after the scores for one query row: masked, scaled, softmax,
// dropout mask and dropped weights.
struct RowFinisher {
  HeadMatrices& m;
  const HeadOptions& opt;
  const std::uint8_t* keep;  // T*T flags when dropout draws, else nullptr
  float dropout_scale;
  Eigen::Index T;
  float sqrt_dk, inv_sqrt_dk;
  bool scale_by_inverse;
  float inactive_scale;  // the dropout mask when nothing is drawn

  RowFinisher(HeadMatrices& matrices, const HeadOptions& options, const std::uint8_t* flags,
              float scale, Eigen::Index d_k)
      : m(matrices), opt(options), keep(flags), dropout_scale(scale), T(matrices.scores.rows()) {
    sqrt_dk = root_dk(d_k);
    // Dividing by a power of two and multiplying by its inverse both round the
    // same real number once, so they give the same bits; the multiply is
    // several times cheaper. That is the case for d_k = 4, 16, 64 (GPT-2's), ...
    int exponent = 0;
    scale_by_inverse = std::frexp(sqrt_dk, &exponent) == 0.5f;
    inv_sqrt_dk = 1.0f / sqrt_dk;
    inactive_scale = opt.dropout_on && opt.dropout >= 1.0 ? 0.0f : 1.0f;
  }

  void operator()(Eigen::Index i) const {
    const Eigen::Index visible = opt.causal ? i + 1 : T;  // keys query i may see
    const float* s = &m.scores(i, 0);
    float* sc = &m.scaled(i, 0);
    // Local copies: the stores through sc cannot alias them, so the loops vectorize.
    const float root = sqrt_dk, inv_root = inv_sqrt_dk;
    if (scale_by_inverse)
      for (Eigen::Index j = 0; j < visible; ++j) sc[j] = s[j] * inv_root;
    else
      for (Eigen::Index j = 0; j < visible; ++j) sc[j] = s[j] / root;

    Eigen::Map<const Eigen::ArrayXf> logits(sc, visible);
    const float row_max = logits.maxCoeff();
    float* w = &m.weights(i, 0);
    Eigen::Map<Eigen::ArrayXf> e(w, visible);
    e = (logits - row_max).exp();
    const float inv = 1.0f / e.sum();  // PyTorch multiplies by the reciprocal
    e *= inv;
    // Masked keys: exp(-inf - max) * inv = 0 * inv, as in the reference and
    // PyTorch. That is 0, except in a row whose scores overflowed: there the
    // sum is NaN (inf - inf) and the whole row, masked keys included, is NaN.
    std::fill(w + visible, w + T, 0.0f * inv);

    if (opt.causal) finish_causal_row(i, visible, s, sc, w);
  }

  // The book masks the raw scores, then scales: both hold -inf past i.
  void finish_causal_row(Eigen::Index i, Eigen::Index visible, const float* s, float* sc,
                         const float* w) const {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    float* ms = &m.masked(i, 0);
    std::copy(s, s + visible, ms);
    std::fill(ms + visible, ms + T, kNegInf);
    std::fill(sc + visible, sc + T, kNegInf);
    float* dm = &m.dropout_mask(i, 0);
    float* d = &m.dropped(i, 0);
    if (keep) {
      // Flags are 0 or 1, so flag * scale is 0 or the scale exactly. A local
      // scale (the stores cannot alias it) lets the loop vectorize.
      const std::uint8_t* k = keep + i * T;
      const float scale = dropout_scale;
      for (Eigen::Index j = 0; j < T; ++j) dm[j] = static_cast<float>(k[j]) * scale;
    } else {
      std::fill(dm, dm + T, inactive_scale);
    }
    for (Eigen::Index j = 0; j < T; ++j) d[j] = w[j] * dm[j];
  }
};

// On the kernel (gemm.hpp), a tile of 8 query rows at a time: its scores,
// its rows' softmax and dropout while they are in cache, then its context
// rows. The kernel runs where no sum can overflow (the reason is in
// gemm.hpp): |Q| |K| d_k for the scores, and for the context |V| T times the
// largest weight, 1 or the dropout scale (softmax of finite scores is at
// most 1). V is then finite, so the causal context may stop at the tile's
// last visible key: the weights past it are exact zeros. False, with nothing
// computed, where the kernel may not run.
bool head_products_tiled(HeadMatrices& m, const RowFinisher& finish_row, const RowMatrix& queries,
                         const RowMatrix& keys, const RowMatrix& values, double cost_per_row) {
  const Eigen::Index T = queries.rows();
  const bool causal = finish_row.opt.causal;
  if (!gemm::available() || T == 0) return false;
  gemm::PackedRows q_tiles;
  gemm::pack_rows(queries, q_tiles);
  const float largest_weight =
      causal && finish_row.keep ? finish_row.dropout_scale : 1.0f;  // 1/(1-p) > 1
  if (!gemm::sums_stay_finite(q_tiles.max_abs, gemm::max_abs(keys), keys.cols()) ||
      !gemm::sums_stay_finite(largest_weight, gemm::max_abs(values), T))
    return false;
  const gemm::PackedWeights keys_t = gemm::pack_transposed(keys);
  const gemm::PackedWeights value_panels = gemm::pack_weights(values);
  const Eigen::Index tiles = q_tiles.tiles();
  for_row_blocks(
      tiles, cost_per_row * gemm::kTileRows, [&](Eigen::Index t_begin, Eigen::Index t_end) {
        std::vector<float> tile(static_cast<std::size_t>(T * gemm::kTileRows));
        const RowMatrix& mixing = causal ? m.dropped : m.weights;  // what multiplies V
        for (Eigen::Index t = t_begin; t < t_end; ++t) {
          const Eigen::Index r0 = t * gemm::kTileRows;
          const Eigen::Index rows = std::min(gemm::kTileRows, T - r0);
          for (Eigen::Index p = 0; p < keys_t.panels(); ++p)
            gemm::multiply_tile(q_tiles.tile(t), keys_t.panel(p), keys.cols(), rows,
                                std::min(gemm::kPanelCols, T - p * gemm::kPanelCols),
                                &m.scores(r0, p * gemm::kPanelCols), T);
          for (Eigen::Index i = r0; i < r0 + rows; ++i) finish_row(i);
          const Eigen::Index K = causal ? std::min(T, r0 + gemm::kTileRows) : T;
          gemm::pack_tile(&mixing(r0, 0), T, rows, K, tile.data());
          for (Eigen::Index p = 0; p < value_panels.panels(); ++p)
            gemm::multiply_tile(tile.data(), value_panels.panel(p), K, rows,
                                std::min(gemm::kPanelCols, values.cols() - p * gemm::kPanelCols),
                                &m.context(r0, p * gemm::kPanelCols), values.cols());
        }
      });
  return true;
}

// Rows [begin, end) of every stage with Eigen's products: query rows are
// independent. The causal product may skip the zero weights above the
// diagonal only when 0 * value is 0 for every value: no value overflowed.
void head_products_eigen(HeadMatrices& m, const RowFinisher& finish_row, const RowMatrix& queries,
                         const RowMatrix& keys, const RowMatrix& values, double cost_per_row) {
  const bool causal = finish_row.opt.causal;
  const bool future_values_finite = !causal || all_finite(values);
  for_row_blocks(queries.rows(), cost_per_row, [&](Eigen::Index begin, Eigen::Index end) {
    const Eigen::Index n = end - begin;
    m.scores.middleRows(begin, n).noalias() = queries.middleRows(begin, n) * keys.transpose();
    for (Eigen::Index i = begin; i < end; ++i) finish_row(i);
    if (causal && future_values_finite)  // rows < end see keys < end: skip the zeros
      m.context.middleRows(begin, n).noalias() =
          m.dropped.block(begin, 0, n, end) * values.topRows(end);
    else if (causal)  // 0 * inf = NaN: a future token's infinite value reaches every row
      m.context.middleRows(begin, n).noalias() = m.dropped.middleRows(begin, n) * values;
    else
      m.context.middleRows(begin, n).noalias() = m.weights.middleRows(begin, n) * values;
  });
}

// The stages one head appends, computed from its queries/keys/values.
// `keep` holds T*T flags when dropout draws, else nullptr.
// `mask` is the causal mask every head shares (causal variants only).
void attention_head_fast(std::vector<Stage>& out, int head, const RowMatrix& queries,
                         const RowMatrix& keys, const RowMatrix& values, const HeadOptions& opt,
                         const std::shared_ptr<RowMatrix>& mask, const std::uint8_t* keep,
                         float dropout_scale) {
  HeadMatrices m(queries.rows(), values.cols(), opt.causal);
  const RowFinisher finish_row(m, opt, keep, dropout_scale, keys.cols());
  const double cost_per_row =
      4.0 * static_cast<double>(queries.rows()) * static_cast<double>(keys.cols() + values.cols());
  if (!head_products_tiled(m, finish_row, queries, keys, values, cost_per_row))
    head_products_eigen(m, finish_row, queries, keys, values, cost_per_row);

  auto push = [&](const char* id, RowMatrix&& x) { out.push_back(Stage{id, head, std::move(x)}); };
  push(stage_id::scores, std::move(m.scores));
  if (opt.causal) {
    out.push_back(Stage{stage_id::mask, head, mask});
    push(stage_id::masked_scores, std::move(m.masked));
  }
  push(stage_id::scaled_scores, std::move(m.scaled));
  push(stage_id::weights, std::move(m.weights));
  if (opt.causal) {
    push(stage_id::dropout_mask, std::move(m.dropout_mask));
    push(stage_id::dropped_weights, std::move(m.dropped));
  }
  push(stage_id::context, std::move(m.context));  // last: the caller reads it as out.back()
}

// A parameter's stage: sharing the prepared matrix when there is one.
Stage parameter_stage(const char* id, int head, const RowMatrix& value,
                      const std::shared_ptr<RowMatrix>* prepared) {
  return prepared ? Stage{id, head, *prepared} : Stage{id, head, value};
}

void push_projection_stages(std::vector<Stage>& out, const QkvProjections& qkv, int head,
                            const PreparedParameters::Qkv* prepared) {
  const auto* pq = prepared;
  out.push_back(
      parameter_stage(stage_id::W_query, head, qkv.query.weight, pq ? &pq->query.weight : nullptr));
  out.push_back(
      parameter_stage(stage_id::W_key, head, qkv.key.weight, pq ? &pq->key.weight : nullptr));
  out.push_back(
      parameter_stage(stage_id::W_value, head, qkv.value.weight, pq ? &pq->value.weight : nullptr));
  if (qkv.query.bias.size() > 0) {
    out.push_back(
        parameter_stage(stage_id::b_query, head, qkv.query.bias, pq ? &pq->query.bias : nullptr));
    out.push_back(
        parameter_stage(stage_id::b_key, head, qkv.key.bias, pq ? &pq->key.bias : nullptr));
    out.push_back(
        parameter_stage(stage_id::b_value, head, qkv.value.bias, pq ? &pq->value.bias : nullptr));
  }
}

// The causal mask: 1 where key j is in query i's future (j > i).
std::shared_ptr<RowMatrix> causal_mask(Eigen::Index T) {
  auto mask = std::make_shared<RowMatrix>(T, T);
  for (Eigen::Index i = 0; i < T; ++i) {
    float* m = &(*mask)(i, 0);
    std::fill(m, m + i + 1, 0.0f);
    std::fill(m + i + 1, m + T, 1.0f);
  }
  return mask;
}

// Draws every head's dropout flags in PyTorch's order: head 0's T*T first.
gemm::Buffer<std::uint8_t> draw_dropout(const HeadOptions& opt, int heads, Eigen::Index T,
                                        TorchGenerator& gen) {
  gemm::Buffer<std::uint8_t> keep;
  if (opt.causal && opt.dropout_on && opt.dropout > 0.0 && opt.dropout < 1.0) {
    keep.resize(static_cast<std::size_t>(heads) * static_cast<std::size_t>(T * T));
    gen.dropout_keep(opt.dropout, keep.size(), keep.data());
  }
  return keep;
}

// What the first phase of forward_fast leaves for the heads.
struct FirstPhase {
  gemm::Buffer<std::uint8_t> keep;          // every head's dropout flags, or empty
  std::shared_ptr<RowMatrix> mask;          // the causal mask (causal variants)
  std::vector<Stage> parameter_stages;      // W_query ... b_value (not the wrapper's)
  std::vector<Stage> out_parameter_stages;  // W_out, b_out (multihead)
  RowMatrix queries, keys, values;          // (T, d_out) whole-layer Q/K/V (not the wrapper)
};

// The first phase, as one set of jobs for the threads to share: the dropout
// draws (one serial mt19937 stream), the causal mask, the parameters'
// stages (copies unless the parameters were prepared), and the whole-layer
// Q/K/V products in column blocks (all variants but the wrapper, whose
// heads own their projections).
void run_first_phase(FirstPhase& first, const Config& config, const ProjectionInput& in,
                     const Parameters& params, const PreparedParameters* prepared,
                     const HeadOptions& opt, int heads, TorchGenerator& gen) {
  const Eigen::Index T = in.x.rows();
  const bool split = config.variant == Variant::Multihead;
  const bool wrapper = config.variant == Variant::MultiheadWrapper;
  std::vector<std::function<void()>> jobs;
  jobs.emplace_back([&] { first.keep = draw_dropout(opt, heads, T, gen); });
  if (opt.causal) jobs.emplace_back([&] { first.mask = causal_mask(T); });
  double flops = 0.0;
  std::vector<ColumnBlock> blocks;
  if (!wrapper) {
    const auto& qkv = params.qkv.front();
    const PreparedParameters::Qkv* pq = prepared ? &prepared->qkv.front() : nullptr;
    jobs.emplace_back([&, pq] { push_projection_stages(first.parameter_stages, qkv, -1, pq); });
    if (split)
      jobs.emplace_back([&] {
        const PreparedParameters::Layer* po = prepared ? &prepared->out : nullptr;
        first.out_parameter_stages.push_back(
            parameter_stage(stage_id::W_out, -1, params.out.weight, po ? &po->weight : nullptr));
        first.out_parameter_stages.push_back(
            parameter_stage(stage_id::b_out, -1, params.out.bias, po ? &po->bias : nullptr));
      });
    flops = projection_flops(in.x, 3 * qkv.query.weight.cols());
    const int threads = worth_threads(flops);
    add_column_blocks(blocks, in, qkv.query, pq ? &pq->query : nullptr, first.queries, threads);
    add_column_blocks(blocks, in, qkv.key, pq ? &pq->key : nullptr, first.keys, threads);
    add_column_blocks(blocks, in, qkv.value, pq ? &pq->value : nullptr, first.values, threads);
  }
  for (const ColumnBlock& b : blocks) jobs.emplace_back([&in, b] { run_block(in, b); });
  run_jobs(jobs, worth_threads(flops));
}

}  // namespace

void forward_fast(Trace& trace, const Config& config, const RowMatrix& x, const Parameters& params,
                  const PreparedParameters* prepared, const HeadOptions& opt, TorchGenerator& gen) {
  const ThreadShare share;  // as many threads as there are free CPUs now
  const Eigen::Index T = x.rows();
  gemm::PackedRows x_storage;
  const ProjectionInput in = projection_input(x, x_storage);
  const bool split = config.variant == Variant::Multihead;
  const bool wrapper = config.variant == Variant::MultiheadWrapper;
  const int heads = split || wrapper ? config.num_heads : 1;
  const int stage_head_base = split || wrapper ? 0 : -1;

  FirstPhase first;
  run_first_phase(first, config, in, params, prepared, opt, heads, gen);
  for (Stage& st : first.parameter_stages) trace.stages.push_back(std::move(st));
  const gemm::Buffer<std::uint8_t>& keep = first.keep;
  const std::shared_ptr<RowMatrix>& mask = first.mask;
  RowMatrix &queries = first.queries, &keys = first.keys, &values = first.values;

  const float dropout_scale = 1.0f / static_cast<float>(1.0 - opt.dropout);
  const Eigen::Index width = split ? config.d_out / heads : config.d_out;  // per-head d_v

  std::vector<std::vector<Stage>> per_head(static_cast<std::size_t>(heads));
  // The heads' contexts side by side, (T, heads * d_v), filled by the heads
  // themselves; for out_proj also packed for the kernel, head by head.
  RowMatrix concat;
  gemm::PackedRows concat_storage;
  std::vector<float> concat_max_abs(static_cast<std::size_t>(heads), 0.0f);
  const bool packing_concat = split && gemm::available();
  if (split || wrapper) concat.resize(T, width * heads);
  if (packing_concat) gemm::size_rows(T, width * heads, concat_storage);
  // Heads run in parallel only when each has real work: a parallel region
  // costs a barrier, and on a busy machine a descheduled thread turns that
  // into milliseconds (T = 64 went from 0.25 ms to 80 ms under load). One
  // head at a time also lets Eigen parallelise the products inside it.
  const bool parallel_heads = heads > 1 && T >= 128;
#pragma omp parallel for schedule(dynamic, 1) if (parallel_heads)
  for (int h = 0; h < heads; ++h) {
    const auto hs = static_cast<std::size_t>(h);
    std::vector<Stage>& out = per_head[hs];
    const int head = stage_head_base < 0 ? -1 : h;
    RowMatrix q, k, v;
    if (wrapper) {
      const PreparedParameters::Qkv* pq = prepared ? &prepared->qkv[hs] : nullptr;
      push_projection_stages(out, params.qkv[hs], head, pq);
      q = project_fast(in, params.qkv[hs].query, pq ? &pq->query : nullptr);
      k = project_fast(in, params.qkv[hs].key, pq ? &pq->key : nullptr);
      v = project_fast(in, params.qkv[hs].value, pq ? &pq->value : nullptr);
    } else if (split) {
      q = queries.middleCols(h * width, width);
      k = keys.middleCols(h * width, width);
      v = values.middleCols(h * width, width);
    }
    const RowMatrix* qr = &queries;
    const RowMatrix* kr = &keys;
    const RowMatrix* vr = &values;
    if (split || wrapper) {  // the head's own Q, K, V: moved into its stages, read from there
      // (a stage's matrix lives behind its shared pointer: growing `out` does not move it)
      out.push_back(Stage{stage_id::queries, head, std::move(q)});
      out.push_back(Stage{stage_id::keys, head, std::move(k)});
      out.push_back(Stage{stage_id::values, head, std::move(v)});
      qr = &out[out.size() - 3].data();
      kr = &out[out.size() - 2].data();
      vr = &out[out.size() - 1].data();
    }
    const std::uint8_t* head_keep =
        keep.empty() ? nullptr : keep.data() + hs * static_cast<std::size_t>(T * T);
    attention_head_fast(out, head, *qr, *kr, *vr, opt, mask, head_keep, dropout_scale);
    if (split || wrapper) {
      const RowMatrix& context = out.back().data();
      concat.middleCols(h * width, width) = context;
      if (packing_concat)
        concat_max_abs[hs] = gemm::pack_columns(context, h * width, concat_storage);
    }
  }

  if (!wrapper) {
    trace.stages.push_back(Stage{stage_id::queries, -1, std::move(queries)});
    trace.stages.push_back(Stage{stage_id::keys, -1, std::move(keys)});
    trace.stages.push_back(Stage{stage_id::values, -1, std::move(values)});
  }
  for (auto& stages : per_head)
    for (auto& st : stages) trace.stages.push_back(std::move(st));

  if (wrapper || split) {
    if (wrapper) {
      trace.stages.push_back(Stage{stage_id::output, -1, std::move(concat)});
    } else {
      for (float m : concat_max_abs) concat_storage.max_abs = std::max(concat_storage.max_abs, m);
      const ProjectionInput concat_in{concat, packing_concat ? &concat_storage : nullptr};
      RowMatrix output = project_fast(concat_in, params.out, prepared ? &prepared->out : nullptr);
      trace.stages.push_back(Stage{stage_id::concat, -1, std::move(concat)});
      for (Stage& st : first.out_parameter_stages)
        trace.stages.push_back(std::move(st));  // W_out, b_out
      trace.stages.push_back(Stage{stage_id::output, -1, std::move(output)});
    }
  }
}

}  // namespace attnscope::core::detail
