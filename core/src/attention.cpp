// attention.cpp: the six book modules, written as readable reference math.
//
// Sections
//   1. parameter initialisation (nn.Linear / torch.rand, in constructor order)
//   2. reference path: projection, softmax, one attention head, each variant
//   3. fast path: the same stages, fused per row, heads in parallel
//   4. public API: run_attention = seed, build, forward
//
// Arithmetic is float32, like the book's tensors. Where PyTorch's rounding
// is observable (scale factor, softmax normalisation, dropout scale) we round
// the way it does; see the comments at each place.
#include "attnscope/attention.hpp"

#include "gemm.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#if defined(ATTNSCOPE_HAVE_OPENMP)
#include <omp.h>
#endif

namespace attnscope::core {

// A module's parameters prepared once for repeated runs (ParameterCache):
// each weight matrix packed for the projections' kernel, and each parameter
// as a matrix that every trace's W_* / b_* stage shares instead of copying.
struct PreparedParameters {
  struct Layer {
    gemm::PackedWeights packed;                     // empty without the kernel
    float max_abs = 0.0f;                           // gemm::max_abs(weight)
    std::shared_ptr<RowMatrix> weight, bias;        // the stages' matrices
  };
  struct Qkv {
    Layer query, key, value;
  };
  std::vector<Qkv> qkv;
  Layer out;  // multihead only
};

namespace {

// ---------------------------------------------------------------------------
// 1. Parameter initialisation

// nn.Linear(in, out, bias): weight (out, in) ~ kaiming_uniform_(a=sqrt(5)),
// then bias (out) ~ U(-1/sqrt(in), 1/sqrt(in)). Returned transposed, as used.
Projection init_linear(int in, int out, bool bias, TorchGenerator& gen) {
  // torch.nn.init.kaiming_uniform_, evaluated in double exactly as Python does.
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1.0 + std::pow(a, 2)));
  const double stddev = gain / std::sqrt(static_cast<double>(in));
  const auto bound = static_cast<float>(std::sqrt(3.0) * stddev);

  RowMatrix torch_weight(out, in);  // (out, in): nn.Linear's storage order
  gen.fill_uniform(torch_weight, -bound, bound);

  Projection p;
  p.weight = torch_weight.transpose();  // (in, out)
  if (bias) {
    const auto bias_bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(in)));
    p.bias.resize(1, out);
    gen.fill_uniform(p.bias, -bias_bound, bias_bound);
  }
  return p;
}

// nn.Parameter(torch.rand(in, out)): SelfAttention_v1's weights.
Projection init_rand(int in, int out, TorchGenerator& gen) {
  Projection p;
  p.weight.resize(in, out);
  gen.fill_uniform(p.weight, 0.0f, 1.0f);
  return p;
}

QkvProjections init_qkv_linear(int d_in, int d_out, bool bias, TorchGenerator& gen) {
  QkvProjections qkv;  // constructor order: W_query, W_key, W_value
  qkv.query = init_linear(d_in, d_out, bias, gen);
  qkv.key = init_linear(d_in, d_out, bias, gen);
  qkv.value = init_linear(d_in, d_out, bias, gen);
  return qkv;
}

// ---------------------------------------------------------------------------
// 2. Reference path: the math as the book writes it, one stage at a time

// x . weight + bias, for x (T, in) -> (T, out).
RowMatrix project(const RowMatrix& x, const Projection& p) {
  RowMatrix y(x.rows(), p.weight.cols());
  y.noalias() = x * p.weight;
  if (p.bias.size() > 0) y.rowwise() += p.bias.row(0);
  return y;
}

void add_stage(Trace& trace, const char* id, int head, RowMatrix data) {
  trace.stages.push_back(Stage{id, head, std::move(data)});
}

void add_projection_stages(Trace& trace, const QkvProjections& qkv, int head) {
  add_stage(trace, "W_query", head, qkv.query.weight);
  add_stage(trace, "W_key", head, qkv.key.weight);
  add_stage(trace, "W_value", head, qkv.value.weight);
  if (qkv.query.bias.size() > 0) {
    add_stage(trace, "b_query", head, qkv.query.bias);
    add_stage(trace, "b_key", head, qkv.key.bias);
    add_stage(trace, "b_value", head, qkv.value.bias);
  }
}

// How one attention head treats its scores.
struct HeadOptions {
  bool causal = false;     // hide key j from query i when j > i
  bool dropout_on = false; // nn.Dropout applies (training mode)
  double dropout = 0.0;    // its probability
};

// Scaled dot-product attention of one head, from queries/keys/values on.
// Appends scores ... context for `head` and returns the context (T, d_v).
RowMatrix attention_head_reference(Trace& trace, int head, const RowMatrix& queries, const RowMatrix& keys,
                         const RowMatrix& values, const HeadOptions& opt, TorchGenerator& gen) {
  const Eigen::Index T = queries.rows();

  RowMatrix scores(T, T);  // (T, T) omega: row i = query i . every key
  scores.noalias() = queries * keys.transpose();
  add_stage(trace, "scores", head, scores);

  // PyTorch divides by the Python float d_k**0.5, which the float kernel
  // rounds to float first: scores / float(sqrt(d_k)).
  const auto sqrt_dk = static_cast<float>(std::pow(static_cast<double>(keys.cols()), 0.5));
  RowMatrix weights;  // (T, T) row softmax; rows sum to 1
  if (opt.causal) {
    // The book's order: masked_fill_ on the raw scores, then the division by
    // sqrt(d_k) inside the softmax (-inf / sqrt(d_k) stays -inf).
    RowMatrix mask(T, T);  // (T, T) 1 where key j is in query i's future (j > i)
    RowMatrix masked = scores;  // (T, T) scores, -inf where j > i
    for (Eigen::Index i = 0; i < T; ++i)
      for (Eigen::Index j = 0; j < T; ++j) {
        mask(i, j) = j > i ? 1.0f : 0.0f;
        if (j > i) masked(i, j) = -std::numeric_limits<float>::infinity();
      }
    add_stage(trace, "mask", head, std::move(mask));
    RowMatrix scaled = masked / sqrt_dk;  // (T, T)
    add_stage(trace, "masked_scores", head, std::move(masked));
    weights = softmax_rows(scaled);
    add_stage(trace, "scaled_scores", head, std::move(scaled));
  } else {
    RowMatrix scaled = scores / sqrt_dk;  // (T, T)
    weights = softmax_rows(scaled);
    add_stage(trace, "scaled_scores", head, std::move(scaled));
  }
  add_stage(trace, "weights", head, weights);

  if (!opt.causal) {  // SelfAttention_v1/v2 have no dropout
    RowMatrix context(T, values.cols());
    context.noalias() = weights * values;
    add_stage(trace, "context", head, context);
    return context;
  }

  // nn.Dropout: noise = bernoulli(1 - p) / (1 - p), in float; out = w * noise.
  RowMatrix dropout_mask = RowMatrix::Ones(T, T);
  if (opt.dropout_on && opt.dropout > 0.0) {
    std::vector<std::uint8_t> keep(static_cast<std::size_t>(T * T));
    gen.dropout_keep(opt.dropout, keep.size(), keep.data());
    const float scale = opt.dropout >= 1.0 ? 0.0f : 1.0f / static_cast<float>(1.0 - opt.dropout);
    for (Eigen::Index k = 0; k < T * T; ++k)
      dropout_mask.data()[k] = keep[static_cast<std::size_t>(k)] ? scale : 0.0f;
  }
  RowMatrix dropped = weights.cwiseProduct(dropout_mask);  // (T, T)
  add_stage(trace, "dropout_mask", head, std::move(dropout_mask));
  add_stage(trace, "dropped_weights", head, dropped);

  RowMatrix context(T, values.cols());  // (T, d_v) row i = sum_j w_ij v_j
  context.noalias() = dropped * values;
  add_stage(trace, "context", head, context);
  return context;
}


void forward_simple_reference(Trace& trace, const RowMatrix& x) {
  RowMatrix scores(x.rows(), x.rows());  // (T, T) x_i . x_j
  scores.noalias() = x * x.transpose();
  RowMatrix weights = softmax_rows(scores);  // (T, T) rows sum to 1
  RowMatrix context(x.rows(), x.cols());     // (T, d_in)
  context.noalias() = weights * x;
  add_stage(trace, "scores", -1, std::move(scores));
  add_stage(trace, "weights", -1, std::move(weights));
  add_stage(trace, "context", -1, std::move(context));
}

// SelfAttention_v1/v2 and CausalAttention (also one head of the wrapper).
RowMatrix forward_single_head_reference(Trace& trace, int head, const RowMatrix& x,
                              const QkvProjections& qkv, const HeadOptions& opt,
                              TorchGenerator& gen) {
  add_projection_stages(trace, qkv, head);
  RowMatrix queries = project(x, qkv.query);  // (T, d_out)
  RowMatrix keys = project(x, qkv.key);       // (T, d_out)
  RowMatrix values = project(x, qkv.value);   // (T, d_out)
  add_stage(trace, "queries", head, queries);
  add_stage(trace, "keys", head, keys);
  add_stage(trace, "values", head, values);
  return attention_head_reference(trace, head, queries, keys, values, opt, gen);
}

void forward_multihead_reference(Trace& trace, const Config& config, const RowMatrix& x,
                       const Parameters& params, const HeadOptions& opt, TorchGenerator& gen) {
  const auto& qkv = params.qkv.front();
  add_projection_stages(trace, qkv, -1);
  const RowMatrix queries = project(x, qkv.query);  // (T, d_out), heads side by side
  const RowMatrix keys = project(x, qkv.key);
  const RowMatrix values = project(x, qkv.value);
  add_stage(trace, "queries", -1, queries);
  add_stage(trace, "keys", -1, keys);
  add_stage(trace, "values", -1, values);

  // view(T, h, head_dim).transpose: head h owns columns [h*hd, (h+1)*hd).
  // Dropout over the (h, T, T) tensor draws head by head, so running the
  // heads in order draws the same numbers in the same order.
  const int hd = config.d_out / config.num_heads;
  RowMatrix concat(x.rows(), config.d_out);  // (T, d_out) head contexts side by side
  for (int h = 0; h < config.num_heads; ++h) {
    RowMatrix q = queries.middleCols(h * hd, hd);  // (T, hd)
    RowMatrix k = keys.middleCols(h * hd, hd);
    RowMatrix v = values.middleCols(h * hd, hd);
    add_stage(trace, "queries", h, q);
    add_stage(trace, "keys", h, k);
    add_stage(trace, "values", h, v);
    concat.middleCols(h * hd, hd) = attention_head_reference(trace, h, q, k, v, opt, gen);
  }
  add_stage(trace, "concat", -1, concat);
  add_stage(trace, "W_out", -1, params.out.weight);
  add_stage(trace, "b_out", -1, params.out.bias);
  add_stage(trace, "output", -1, project(concat, params.out));
}


// ---------------------------------------------------------------------------
// 3. Fast path
//
// Same stages, same order, same RNG draws. Differences from the reference:
// - every matrix is built in place and moved into the trace (no copies);
// - the row-wise work (scale, mask, softmax, dropout) is one fused pass per
//   row, with Eigen's vectorized exp;
// - dropout keep-flags for all heads are drawn up front, in the order PyTorch
//   draws them, so that the heads can then run in parallel (OpenMP);
// - causal context products skip the zero upper triangle;
// - a few coarse parallel regions instead of Eigen's per-product threading:
//   projection column blocks together with the dropout draws and parameter
//   copies, then whole heads (or row blocks of one head), then out_proj.

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
                       const Projection& p, const PreparedParameters::Layer* prepared,
                       RowMatrix& y, int threads) {
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
  const Eigen::Index count = std::min(
      units, threads * std::max<Eigen::Index>(1, units / (threads * min_units)));
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
  return 2.0 * static_cast<double>(x.rows()) * static_cast<double>(x.cols()) * static_cast<double>(out_cols);
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

// The stages one head appends, computed from its queries/keys/values.
// `keep` holds T*T flags when dropout draws, else nullptr.
// `mask` is the causal mask every head shares (causal variants only).
void attention_head_fast(std::vector<Stage>& out, int head, const RowMatrix& queries,
                         const RowMatrix& keys, const RowMatrix& values, const HeadOptions& opt,
                         const std::shared_ptr<RowMatrix>& mask, const std::uint8_t* keep,
                         float dropout_scale) {
  const Eigen::Index T = queries.rows();
  const float sqrt_dk = root_dk(keys.cols());
  // Dividing by a power of two and multiplying by its inverse both round the
  // same real number once, so they give the same bits; the multiply is
  // several times cheaper. That is the case for d_k = 4, 16, 64 (GPT-2's), ...
  int exponent = 0;
  const bool scale_by_inverse = std::frexp(sqrt_dk, &exponent) == 0.5f;
  const float inv_sqrt_dk = 1.0f / sqrt_dk;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();

  RowMatrix scores(T, T), scaled(T, T), weights(T, T);  // (T, T) each
  RowMatrix masked, dropout_mask, dropped;
  if (opt.causal) {
    masked.resize(T, T);
    dropout_mask.resize(T, T);
    dropped.resize(T, T);
  }
  RowMatrix context(T, values.cols());  // (T, d_v)
  const bool drawing = keep != nullptr;
  const float inactive_scale = opt.dropout_on && opt.dropout >= 1.0 ? 0.0f : 1.0f;

  // Everything after the scores for query row i: masked, scaled, softmax,
  // dropout mask and dropped weights.
  auto finish_row = [&](Eigen::Index i) {
    const Eigen::Index visible = opt.causal ? i + 1 : T;  // keys query i may see
    const float* s = &scores(i, 0);
    float* sc = &scaled(i, 0);
    if (scale_by_inverse)
      for (Eigen::Index j = 0; j < visible; ++j) sc[j] = s[j] * inv_sqrt_dk;
    else
      for (Eigen::Index j = 0; j < visible; ++j) sc[j] = s[j] / sqrt_dk;

    Eigen::Map<const Eigen::ArrayXf> logits(sc, visible);
    const float row_max = logits.maxCoeff();
    float* w = &weights(i, 0);
    Eigen::Map<Eigen::ArrayXf> e(w, visible);
    e = (logits - row_max).exp();
    const float inv = 1.0f / e.sum();  // PyTorch multiplies by the reciprocal
    e *= inv;
    // Masked keys: exp(-inf - max) * inv = 0 * inv, as in the reference and
    // PyTorch. That is 0, except in a row whose scores overflowed: there the
    // sum is NaN (inf - inf) and the whole row, masked keys included, is NaN.
    std::fill(w + visible, w + T, 0.0f * inv);

    if (!opt.causal) return;
    // The book masks the raw scores, then scales: both hold -inf past i.
    float* ms = &masked(i, 0);
    std::copy(s, s + visible, ms);
    std::fill(ms + visible, ms + T, kNegInf);
    std::fill(sc + visible, sc + T, kNegInf);
    float* dm = &dropout_mask(i, 0);
    float* d = &dropped(i, 0);
    if (drawing) {
      // Flags are 0 or 1, so flag * scale is 0 or the scale exactly. A local
      // scale (the stores cannot alias it) lets the loop vectorize.
      const std::uint8_t* k = keep + i * T;
      const float scale = dropout_scale;
      for (Eigen::Index j = 0; j < T; ++j) dm[j] = static_cast<float>(k[j]) * scale;
    } else {
      std::fill(dm, dm + T, inactive_scale);
    }
    for (Eigen::Index j = 0; j < T; ++j) d[j] = w[j] * dm[j];
  };
  const double cost_per_row =
      4.0 * static_cast<double>(T) * static_cast<double>(keys.cols() + values.cols());

  // On the kernel (gemm.hpp), a tile of 8 query rows at a time: its scores,
  // its rows' softmax and dropout while they are in cache, then its context
  // rows. The kernel runs where no sum can overflow (the reason is in
  // gemm.hpp): |Q| |K| d_k for the scores, and for the context |V| T times the
  // largest weight, 1 or the dropout scale (softmax of finite scores is at
  // most 1). V is then finite, so the causal context may stop at the tile's
  // last visible key: the weights past it are exact zeros.
  gemm::PackedRows q_tiles;
  gemm::PackedWeights keys_t, value_panels;
  bool tiled = gemm::available() && T > 0;
  if (tiled) {
    gemm::pack_rows(queries, q_tiles);
    const float largest_weight = opt.causal && drawing ? dropout_scale : 1.0f;  // 1/(1-p) > 1
    tiled = gemm::sums_stay_finite(q_tiles.max_abs, gemm::max_abs(keys), keys.cols()) &&
            gemm::sums_stay_finite(largest_weight, gemm::max_abs(values), T);
  }
  if (tiled) {
    keys_t = gemm::pack_transposed(keys);
    value_panels = gemm::pack_weights(values);
    const Eigen::Index tiles = q_tiles.tiles();
    for_row_blocks(tiles, cost_per_row * gemm::kTileRows, [&](Eigen::Index t_begin, Eigen::Index t_end) {
      std::vector<float> tile(static_cast<std::size_t>(T * gemm::kTileRows));
      const RowMatrix& mixing = opt.causal ? dropped : weights;  // what multiplies V
      for (Eigen::Index t = t_begin; t < t_end; ++t) {
        const Eigen::Index r0 = t * gemm::kTileRows;
        const Eigen::Index m = std::min(gemm::kTileRows, T - r0);
        for (Eigen::Index p = 0; p < keys_t.panels(); ++p)
          gemm::multiply_tile(q_tiles.tile(t), keys_t.panel(p), keys.cols(), m,
                              std::min(gemm::kPanelCols, T - p * gemm::kPanelCols),
                              &scores(r0, p * gemm::kPanelCols), T);
        for (Eigen::Index i = r0; i < r0 + m; ++i) finish_row(i);
        const Eigen::Index K = opt.causal ? std::min(T, r0 + gemm::kTileRows) : T;
        gemm::pack_tile(&mixing(r0, 0), T, m, K, tile.data());
        for (Eigen::Index p = 0; p < value_panels.panels(); ++p)
          gemm::multiply_tile(tile.data(), value_panels.panel(p), K, m,
                              std::min(gemm::kPanelCols, values.cols() - p * gemm::kPanelCols),
                              &context(r0, p * gemm::kPanelCols), values.cols());
      }
    });
  } else {
    // Rows [begin, end) of every stage with Eigen's products: query rows are
    // independent. The causal product may skip the zero weights above the
    // diagonal only when 0 * value is 0 for every value: no value overflowed.
    const bool future_values_finite = !opt.causal || gemm::all_finite(values);
    for_row_blocks(T, cost_per_row, [&](Eigen::Index begin, Eigen::Index end) {
      const Eigen::Index n = end - begin;
      scores.middleRows(begin, n).noalias() = queries.middleRows(begin, n) * keys.transpose();
      for (Eigen::Index i = begin; i < end; ++i) finish_row(i);
      if (opt.causal && future_values_finite)  // rows < end see keys < end: skip the zeros
        context.middleRows(begin, n).noalias() =
            dropped.block(begin, 0, n, end) * values.topRows(end);
      else if (opt.causal)  // 0 * inf = NaN: a future token's infinite value reaches every row
        context.middleRows(begin, n).noalias() = dropped.middleRows(begin, n) * values;
      else
        context.middleRows(begin, n).noalias() = weights.middleRows(begin, n) * values;
    });
  }

  auto push = [&](const char* id, RowMatrix&& m) { out.push_back(Stage{id, head, std::move(m)}); };
  push("scores", std::move(scores));
  if (opt.causal) {
    out.push_back(Stage{"mask", head, mask});
    push("masked_scores", std::move(masked));
  }
  push("scaled_scores", std::move(scaled));
  push("weights", std::move(weights));
  if (opt.causal) {
    push("dropout_mask", std::move(dropout_mask));
    push("dropped_weights", std::move(dropped));
  }
  push("context", std::move(context));  // last: the caller reads it as out.back()
}

// A parameter's stage: sharing the prepared matrix when there is one.
Stage parameter_stage(const char* id, int head, const RowMatrix& value,
                      const std::shared_ptr<RowMatrix>* prepared) {
  return prepared ? Stage{id, head, *prepared} : Stage{id, head, value};
}

void push_projection_stages(std::vector<Stage>& out, const QkvProjections& qkv, int head,
                            const PreparedParameters::Qkv* prepared) {
  const auto* pq = prepared;
  out.push_back(parameter_stage("W_query", head, qkv.query.weight, pq ? &pq->query.weight : nullptr));
  out.push_back(parameter_stage("W_key", head, qkv.key.weight, pq ? &pq->key.weight : nullptr));
  out.push_back(parameter_stage("W_value", head, qkv.value.weight, pq ? &pq->value.weight : nullptr));
  if (qkv.query.bias.size() > 0) {
    out.push_back(parameter_stage("b_query", head, qkv.query.bias, pq ? &pq->query.bias : nullptr));
    out.push_back(parameter_stage("b_key", head, qkv.key.bias, pq ? &pq->key.bias : nullptr));
    out.push_back(parameter_stage("b_value", head, qkv.value.bias, pq ? &pq->value.bias : nullptr));
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

void forward_fast(Trace& trace, const Config& config, const RowMatrix& x,
                  const Parameters& params, const PreparedParameters* prepared,
                  const HeadOptions& opt, TorchGenerator& gen) {
  const Eigen::Index T = x.rows();
  gemm::PackedRows x_storage;
  const ProjectionInput in = projection_input(x, x_storage);
  const bool split = config.variant == Variant::Multihead;
  const bool wrapper = config.variant == Variant::MultiheadWrapper;
  const int heads = split || wrapper ? config.num_heads : 1;
  const int stage_head_base = split || wrapper ? 0 : -1;

  // First phase, as one set of jobs for the threads to share: the dropout
  // draws (one serial mt19937 stream), the causal mask, the parameters'
  // stages (copies unless the parameters were prepared), and the whole-layer
  // Q/K/V products in column blocks (all variants but the wrapper, whose
  // heads own their projections).
  gemm::Buffer<std::uint8_t> keep;
  std::shared_ptr<RowMatrix> mask;
  std::vector<Stage> parameter_stages, out_parameter_stages;
  RowMatrix queries, keys, values;
  {
    std::vector<std::function<void()>> jobs;
    jobs.emplace_back([&] { keep = draw_dropout(opt, heads, T, gen); });
    if (opt.causal) jobs.emplace_back([&] { mask = causal_mask(T); });
    double flops = 0.0;
    std::vector<ColumnBlock> blocks;
    if (!wrapper) {
      const auto& qkv = params.qkv.front();
      const PreparedParameters::Qkv* pq = prepared ? &prepared->qkv.front() : nullptr;
      jobs.emplace_back([&, pq] { push_projection_stages(parameter_stages, qkv, -1, pq); });
      if (split)
        jobs.emplace_back([&] {
          const PreparedParameters::Layer* po = prepared ? &prepared->out : nullptr;
          out_parameter_stages.push_back(
              parameter_stage("W_out", -1, params.out.weight, po ? &po->weight : nullptr));
          out_parameter_stages.push_back(
              parameter_stage("b_out", -1, params.out.bias, po ? &po->bias : nullptr));
        });
      flops = projection_flops(x, 3 * qkv.query.weight.cols());
      const int threads = worth_threads(flops);
      add_column_blocks(blocks, in, qkv.query, pq ? &pq->query : nullptr, queries, threads);
      add_column_blocks(blocks, in, qkv.key, pq ? &pq->key : nullptr, keys, threads);
      add_column_blocks(blocks, in, qkv.value, pq ? &pq->value : nullptr, values, threads);
    }
    for (const ColumnBlock& b : blocks) jobs.emplace_back([&in, b] { run_block(in, b); });
    run_jobs(jobs, worth_threads(flops));
    for (Stage& st : parameter_stages) trace.stages.push_back(std::move(st));
  }

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
      out.push_back(Stage{"queries", head, std::move(q)});
      out.push_back(Stage{"keys", head, std::move(k)});
      out.push_back(Stage{"values", head, std::move(v)});
      qr = &out[out.size() - 3].data();
      kr = &out[out.size() - 2].data();
      vr = &out[out.size() - 1].data();
    }
    const std::uint8_t* head_keep = keep.empty() ? nullptr : keep.data() + hs * static_cast<std::size_t>(T * T);
    attention_head_fast(out, head, *qr, *kr, *vr, opt, mask, head_keep, dropout_scale);
    if (split || wrapper) {
      const RowMatrix& context = out.back().data();
      concat.middleCols(h * width, width) = context;
      if (packing_concat) concat_max_abs[hs] = gemm::pack_columns(context, h * width, concat_storage);
    }
  }

  if (!wrapper) {
    trace.stages.push_back(Stage{"queries", -1, std::move(queries)});
    trace.stages.push_back(Stage{"keys", -1, std::move(keys)});
    trace.stages.push_back(Stage{"values", -1, std::move(values)});
  }
  for (auto& stages : per_head)
    for (auto& st : stages) trace.stages.push_back(std::move(st));

  if (wrapper || split) {
    if (wrapper) {
      trace.stages.push_back(Stage{"output", -1, std::move(concat)});
    } else {
      for (float m : concat_max_abs) concat_storage.max_abs = std::max(concat_storage.max_abs, m);
      const ProjectionInput concat_in{concat, packing_concat ? &concat_storage : nullptr};
      RowMatrix output = project_fast(concat_in, params.out, prepared ? &prepared->out : nullptr);
      trace.stages.push_back(Stage{"concat", -1, std::move(concat)});
      for (Stage& st : out_parameter_stages) trace.stages.push_back(std::move(st));  // W_out, b_out
      trace.stages.push_back(Stage{"output", -1, std::move(output)});
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// 4. Public API

RowMatrix softmax_rows(const RowMatrix& scores) {
  RowMatrix out(scores.rows(), scores.cols());
  for (Eigen::Index i = 0; i < scores.rows(); ++i) {
    const float row_max = scores.row(i).maxCoeff();
    float sum = 0.0f;
    for (Eigen::Index j = 0; j < scores.cols(); ++j) {
      const float e = std::exp(scores(i, j) - row_max);  // exp(-inf) = 0
      out(i, j) = e;
      sum += e;
    }
    // PyTorch multiplies by the reciprocal of the sum rather than dividing.
    const float inv = 1.0f / sum;
    out.row(i) *= inv;
  }
  return out;
}

Parameters init_parameters(const Config& config, int d_in, TorchGenerator& gen) {
  Parameters params;
  switch (config.variant) {
    case Variant::Simple:
      break;
    case Variant::SelfAttentionV1: {
      QkvProjections qkv;
      qkv.query = init_rand(d_in, config.d_out, gen);
      qkv.key = init_rand(d_in, config.d_out, gen);
      qkv.value = init_rand(d_in, config.d_out, gen);
      params.qkv.push_back(std::move(qkv));
      break;
    }
    case Variant::SelfAttentionV2:
    case Variant::Causal:
      params.qkv.push_back(init_qkv_linear(d_in, config.d_out, config.qkv_bias, gen));
      break;
    case Variant::MultiheadWrapper:
      for (int h = 0; h < config.num_heads; ++h)
        params.qkv.push_back(init_qkv_linear(d_in, config.d_out, config.qkv_bias, gen));
      break;
    case Variant::Multihead:
      params.qkv.push_back(init_qkv_linear(d_in, config.d_out, config.qkv_bias, gen));
      params.out = init_linear(config.d_out, config.d_out, /*bias=*/true, gen);
      break;
  }
  return params;
}

namespace {

PreparedParameters::Layer prepare_layer(const Projection& p) {
  PreparedParameters::Layer layer;
  if (gemm::available()) layer.packed = gemm::pack_weights(p.weight);
  layer.max_abs = gemm::max_abs(p.weight);
  layer.weight = std::make_shared<RowMatrix>(p.weight);
  layer.bias = std::make_shared<RowMatrix>(p.bias);
  return layer;
}

PreparedParameters prepare_parameters(const Parameters& params) {
  PreparedParameters prepared;
  for (const QkvProjections& qkv : params.qkv)
    prepared.qkv.push_back(PreparedParameters::Qkv{
        prepare_layer(qkv.query), prepare_layer(qkv.key), prepare_layer(qkv.value)});
  prepared.out = prepare_layer(params.out);
  return prepared;
}

// run_with_parameters; `prepared` is params prepared, or null.
Trace run_forward(const Config& config, const Inputs& inputs, const Parameters& params,
                  const PreparedParameters* prepared, TorchGenerator& gen, EnginePath path) {
  Trace trace;
  trace.config = config;
  trace.tokens = inputs.tokens;
  trace.d_in = static_cast<int>(inputs.embeddings.cols());
  const RowMatrix& x = inputs.embeddings;  // (T, d_in)
  add_stage(trace, "inputs", -1, x);

  HeadOptions opt;
  opt.causal = is_causal(config.variant);
  opt.dropout_on = config.training;
  opt.dropout = config.dropout;

  if (path == EnginePath::Fast && config.variant != Variant::Simple) {
    forward_fast(trace, config, x, params, prepared, opt, gen);
    return trace;
  }
  switch (config.variant) {
    case Variant::Simple:  // three small products: the reference path is the fast one
      forward_simple_reference(trace, x);
      break;
    case Variant::SelfAttentionV1:
    case Variant::SelfAttentionV2:
    case Variant::Causal:
      forward_single_head_reference(trace, -1, x, params.qkv.front(), opt, gen);
      break;
    case Variant::MultiheadWrapper: {
      const Eigen::Index d_out = config.d_out;
      RowMatrix output(x.rows(), d_out * config.num_heads);  // (T, h*d_out) heads side by side
      for (int h = 0; h < config.num_heads; ++h)
        output.middleCols(h * d_out, d_out) =
            forward_single_head_reference(trace, h, x, params.qkv[static_cast<std::size_t>(h)], opt, gen);
      add_stage(trace, "output", -1, std::move(output));
      break;
    }
    case Variant::Multihead:
      forward_multihead_reference(trace, config, x, params, opt, gen);
      break;
  }
  return trace;
}

}  // namespace

Trace run_with_parameters(const Config& config, const Inputs& inputs, const Parameters& params,
                          TorchGenerator& gen, EnginePath path) {
  return run_forward(config, inputs, params, nullptr, gen, path);
}

Trace run_attention(const Config& config, const Inputs& inputs, EnginePath path) {
  TorchGenerator gen(config.seed);  // torch.manual_seed(seed)
  const Parameters params =
      init_parameters(config, static_cast<int>(inputs.embeddings.cols()), gen);
  return run_with_parameters(config, inputs, params, gen, path);
}

const Parameters& ParameterCache::get(const Config& config, int d_in, TorchGenerator& gen) {
  // Fields the module's constructor reads; dropout and training are forward-only.
  const Key key{config.variant,   d_in, config.d_out, has_heads(config.variant) ? config.num_heads : 1,
                config.qkv_bias, config.seed};
  if (!key_ || !(*key_ == key)) {
    TorchGenerator fresh(config.seed);
    params_ = init_parameters(config, d_in, fresh);
    prepared_ = std::make_shared<const PreparedParameters>(prepare_parameters(params_));
    after_init_ = fresh;
    key_ = key;
  }
  gen = *after_init_;
  return params_;
}

Trace run_attention(const Config& config, const Inputs& inputs, ParameterCache& cache,
                    EnginePath path) {
  TorchGenerator gen(config.seed);
  const Parameters& params = cache.get(config, static_cast<int>(inputs.embeddings.cols()), gen);
  return run_forward(config, inputs, params, cache.prepared(), gen, path);
}

}  // namespace attnscope::core
