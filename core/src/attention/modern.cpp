// modern.cpp: the bonus attention classes' constructors and forward passes
// (attention/modern.hpp), one stage at a time:
//
//   names and sizes       book_class_name, head_dim, kv_heads, latent_width
//   validate              one sentence per bad value
//   init_parameters       the nn.Linear constructions in each class's order
//   forward               projections, K/V heads (latent up-projection), RoPE,
//                         scores, mask, softmax, dropout, context, out_proj
//
// RoPE is in modern_rope.cpp, the KV cache in modern_cache.cpp; what they
// share is modern_internal.hpp.
#include "attnscope/attention/modern.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

#include "attention/attention_internal.hpp"
#include "attention/modern_internal.hpp"
#include "attnscope/base/config.hpp"
#include "kernels/cpu_share.hpp"

#if defined(ATTNSCOPE_HAVE_OPENMP)
#include <omp.h>
#endif

namespace attnscope::core::modern {

// ---------------------------------------------------------------------------
// Names and sizes

const char* book_class_name(Kind kind) {
  switch (kind) {
    case Kind::GroupedQuery:
      return "GroupedQueryAttention";
    case Kind::Multihead:
      return "MultiHeadAttention";
    case Kind::SlidingWindow:
      return "MultiHeadAttentionWithSWA";
    case Kind::Latent:
      return "MultiHeadLatentAttention";
    case Kind::Cross:
      return "CrossAttention";
  }
  return "";
}

int head_dim(const Config& config) { return config.d_out / config.num_heads; }

int kv_heads(const Config& config) {
  return config.kind == Kind::GroupedQuery ? config.num_kv_groups : config.num_heads;
}

int latent_width(const Config& config) {
  return config.latent_dim ? *config.latent_dim : std::max(16, config.d_out / 8);
}

// ---------------------------------------------------------------------------
// Validation

namespace {

// "1, 2, 3 or 6": the divisors of n, for a message that says what would work.
std::string divisors_of(int n) {
  std::vector<int> d;
  for (int k = 1; k <= n; ++k)
    if (n % k == 0) d.push_back(k);
  std::ostringstream out;
  for (std::size_t i = 0; i < d.size(); ++i)
    out << (i == 0 ? "" : i + 1 == d.size() ? " or " : ", ") << d[i];
  return out.str();
}

std::string validate_matrix(const char* name, const RowMatrix& m) {
  std::ostringstream msg;
  if (m.rows() < 1)
    msg << "the " << name << " has no tokens: give at least one row";
  else if (m.rows() > kMaxTokens)
    msg << "the " << name << " has too many tokens (" << m.rows() << "): at most " << kMaxTokens
        << " are supported";
  else if (m.cols() < 1 || m.cols() > kMaxDim)
    msg << "the " << name << "'s width (" << m.cols() << ") must be between 1 and " << kMaxDim;
  else if (!m.allFinite())
    msg << "the " << name << " contains NaN or infinity: every value must be a finite number";
  return msg.str();
}

std::string validate_sizes(const Config& c) {
  std::ostringstream msg;
  if (c.d_out < 1 || c.d_out > kMaxDim)
    msg << "d_out (" << c.d_out << ") must be between 1 and " << kMaxDim;
  else if (c.num_heads < 1 || c.num_heads > kMaxHeads)
    msg << "num_heads (" << c.num_heads << ") must be between 1 and " << kMaxHeads;
  else if (c.d_out % c.num_heads != 0)
    msg << "d_out (" << c.d_out << ") must be divisible by num_heads (" << c.num_heads
        << "): try num_heads " << divisors_of(c.d_out);
  else if (c.kind == Kind::GroupedQuery &&
           (c.num_kv_groups < 1 || c.num_heads % c.num_kv_groups != 0))
    msg << "num_kv_groups (" << c.num_kv_groups << ") must divide num_heads (" << c.num_heads
        << "): try " << divisors_of(c.num_heads) << " (1 is multi-query attention, " << c.num_heads
        << " is plain multi-head attention)";
  else if (c.kind == Kind::SlidingWindow && c.window && *c.window < 1)
    msg << "sliding_window_size (" << *c.window
        << ") must be at least 1: 1 lets each token see only itself, the number of tokens or "
           "more is plain causal attention";
  else if (c.kind == Kind::Latent && c.latent_dim && (*c.latent_dim < 1 || *c.latent_dim > kMaxDim))
    msg << "latent_dim (" << *c.latent_dim << ") must be between 1 and " << kMaxDim
        << " (the book's default for d_out " << c.d_out << " is " << std::max(16, c.d_out / 8)
        << ")";
  else if (!(c.dropout >= 0.0 && c.dropout <= 1.0))
    msg << "dropout (" << c.dropout << ") must be between 0 and 1";
  return msg.str();
}

std::string validate_rope(const Config& c) {
  std::ostringstream msg;
  if (!c.rope) return "";
  if (c.kind == Kind::Latent)
    msg << "RoPE is not part of the book's MultiHeadLatentAttention: turn RoPE off for latent "
           "attention";
  else if (c.kind == Kind::Cross)
    msg << "RoPE is for self-attention, where queries and keys share positions: turn RoPE off "
           "for cross-attention";
  else if (head_dim(c) % 2 != 0)
    msg << "RoPE needs an even head_dim, but d_out " << c.d_out << " / num_heads " << c.num_heads
        << " = " << head_dim(c) << ": choose d_out and num_heads whose quotient is even";
  else if (!(std::isfinite(c.rope_theta) && c.rope_theta > 0.0))
    msg << "the RoPE theta (" << c.rope_theta << ") must be a positive number, e.g. 10000";
  return msg.str();
}

}  // namespace

std::string validate(const Config& config, const RowMatrix& x, const RowMatrix* memory) {
  std::string msg = validate_matrix("input", x);
  if (msg.empty() && config.kind == Kind::Cross) {
    if (memory == nullptr || memory->size() == 0)
      msg =
          "cross-attention needs a second sequence (the memory its keys and values come from): "
          "give it at least one row";
    else
      msg = validate_matrix("second sequence", *memory);
  }
  if (msg.empty()) msg = validate_sizes(config);
  if (msg.empty()) msg = validate_rope(config);
  return msg;
}

// ---------------------------------------------------------------------------
// Construction: nn.Linear after nn.Linear, in the class's order

Parameters init_parameters(const Config& c, int d_in, int d_memory, TorchGenerator& gen) {
  using core::detail::init_linear;
  const int kv_width = kv_heads(c) * head_dim(c);
  Parameters p;
  switch (c.kind) {
    case Kind::GroupedQuery:  // W_key, W_value, W_query, out_proj(bias=False)
      p.key = init_linear(d_in, kv_width, c.qkv_bias, gen);
      p.value = init_linear(d_in, kv_width, c.qkv_bias, gen);
      p.query = init_linear(d_in, c.d_out, c.qkv_bias, gen);
      p.out = init_linear(c.d_out, c.d_out, /*bias=*/false, gen);
      break;
    case Kind::Multihead:
    case Kind::SlidingWindow:
    case Kind::Cross: {  // W_query, W_key, W_value, out_proj
      const int d_kv = c.kind == Kind::Cross ? d_memory : d_in;
      p.query = init_linear(d_in, c.d_out, c.qkv_bias, gen);
      p.key = init_linear(d_kv, c.d_out, c.qkv_bias, gen);
      p.value = init_linear(d_kv, c.d_out, c.qkv_bias, gen);
      p.out = init_linear(c.d_out, c.d_out, /*bias=*/true, gen);
      break;
    }
    case Kind::Latent:  // W_query, W_DKV, W_UK, W_UV, out_proj
      p.query = init_linear(d_in, c.d_out, c.qkv_bias, gen);
      p.down = init_linear(d_in, latent_width(c), c.qkv_bias, gen);
      p.up_key = init_linear(latent_width(c), c.d_out, c.qkv_bias, gen);
      p.up_value = init_linear(latent_width(c), c.d_out, c.qkv_bias, gen);
      p.out = init_linear(c.d_out, c.d_out, /*bias=*/true, gen);
      break;
  }
  return p;
}

// ---------------------------------------------------------------------------
// The shared arithmetic

namespace detail {

namespace {
bool in_parallel() {
#if defined(ATTNSCOPE_HAVE_OPENMP)
  return omp_in_parallel() != 0;
#else
  return false;
#endif
}
}  // namespace

// x . W (+ b). A large product is split into row blocks over the free
// cores (Eigen's own threading is off); each row's sums are the same.
RowMatrix project(const RowMatrix& x, const Projection& p) {
  RowMatrix y(x.rows(), p.weight.cols());
  const double flops = 2.0 * static_cast<double>(x.rows()) * static_cast<double>(x.cols()) *
                       static_cast<double>(p.weight.cols());
  const Eigen::Index rows = x.rows();
  if (flops >= 4e6 && rows >= 4 && core::detail::team_size() > 1 && !in_parallel()) {
    const core::detail::ThreadShare share;
    const Eigen::Index blocks = std::min<Eigen::Index>(rows / 2, 2 * share.threads());
#pragma omp parallel for schedule(static)
    for (Eigen::Index b = 0; b < blocks; ++b) {
      const Eigen::Index begin = rows * b / blocks, end = rows * (b + 1) / blocks;
      y.middleRows(begin, end - begin).noalias() = x.middleRows(begin, end - begin) * p.weight;
    }
  } else {
    y.noalias() = x * p.weight;
  }
  if (p.bias.size() > 0) y.rowwise() += p.bias.row(0);
  return y;
}

float root_dk(int head_dim) {
  // keys.shape[-1]**0.5 is a Python float; the float kernel rounds it first.
  return static_cast<float>(std::pow(static_cast<double>(head_dim), 0.5));
}

bool hidden(const MaskRule& rule, long long q_pos, long long k_pos) {
  if (!rule.causal) return false;
  const long long diff = q_pos - k_pos;
  return diff < 0 || (rule.window > 0 && diff >= rule.window);
}

}  // namespace detail

namespace {

using detail::MaskRule;

// masked_fill(mask, -inf) then softmax(scores / sqrt(hd)); without a mask
// (Cross) only the scaling and the softmax. One pass per row over the keys
// the query may see (a causal band: lo .. hi - 1), with Eigen's vectorized
// exp; the hidden keys get mask 1, -inf and weight 0 * (1 / sum), which is
// NaN, as in PyTorch, only in a row whose scores overflowed.
void mask_and_softmax(Head& h, const MaskRule& rule, float sqrt_dk) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const Eigen::Index T = h.scores.rows(), S = h.scores.cols();
  if (rule.causal) {
    h.mask.resize(T, S);
    h.masked_scores.resize(T, S);
  }
  h.scaled_scores.resize(T, S);
  h.weights.resize(T, S);
  // Dividing by a power of two and multiplying by its inverse round alike.
  int exponent = 0;
  const bool by_inverse = std::frexp(sqrt_dk, &exponent) == 0.5f;
  const float root = sqrt_dk, inv_root = 1.0f / sqrt_dk;
  for (Eigen::Index i = 0; i < T; ++i) {
    Eigen::Index lo = 0, hi = S;
    if (rule.causal) {
      hi = std::min<Eigen::Index>(i + 1, S);
      if (rule.window > 0) lo = std::max<Eigen::Index>(0, i - rule.window + 1);
      float* m = &h.mask(i, 0);
      float* ms = &h.masked_scores(i, 0);
      const float* sr = &h.scores(i, 0);
      std::fill(m, m + S, 1.0f);
      std::fill(m + lo, m + hi, 0.0f);
      std::fill(ms, ms + S, kNegInf);
      std::copy(sr + lo, sr + hi, ms + lo);
    }
    const float* in = &h.scores(i, 0);
    float* sc = &h.scaled_scores(i, 0);
    std::fill(sc, sc + lo, kNegInf);
    std::fill(sc + hi, sc + S, kNegInf);
    if (by_inverse)
      for (Eigen::Index j = lo; j < hi; ++j) sc[j] = in[j] * inv_root;
    else
      for (Eigen::Index j = lo; j < hi; ++j) sc[j] = in[j] / root;
    Eigen::Map<const Eigen::ArrayXf> logits(sc + lo, hi - lo);
    const float row_max = logits.maxCoeff();
    float* w = &h.weights(i, 0);
    Eigen::Map<Eigen::ArrayXf> e(w + lo, hi - lo);
    e = (logits - row_max).exp();
    const float inv = 1.0f / e.sum();  // PyTorch multiplies by the reciprocal
    e *= inv;
    std::fill(w, w + lo, 0.0f * inv);
    std::fill(w + hi, w + S, 0.0f * inv);
  }
}

// nn.Dropout on the (1, heads, T, S) weights: one draw over all heads in
// row-major order, noise = keep / (1 - p) in float.
void dropout_all_heads(std::vector<Head>& heads, const Config& c, TorchGenerator& gen) {
  const bool on = c.training && c.dropout > 0.0;
  std::vector<std::uint8_t> keep;
  std::size_t per_head = 0;
  if (on && !heads.empty()) {
    per_head = static_cast<std::size_t>(heads.front().weights.size());
    keep.resize(per_head * heads.size());
    gen.dropout_keep(c.dropout, keep.size(), keep.data());
  }
  const float scale = c.dropout >= 1.0 ? 0.0f : 1.0f / static_cast<float>(1.0 - c.dropout);
  for (std::size_t h = 0; h < heads.size(); ++h) {
    Head& head = heads[h];
    head.dropout_mask = RowMatrix::Ones(head.weights.rows(), head.weights.cols());
    if (on)
      for (std::size_t k = 0; k < per_head; ++k)
        head.dropout_mask.data()[k] = keep[h * per_head + k] ? scale : 0.0f;
    head.dropped_weights = head.weights.cwiseProduct(head.dropout_mask);
  }
}

// The module's Q, K, V (Latent: the latent and its up-projections).
void project_all(Run& r, const RowMatrix& x, const RowMatrix& memory) {
  const Parameters& p = r.params;
  r.queries = detail::project(x, p.query);
  if (r.config.kind == Kind::Latent) {
    r.latent = detail::project(x, p.down);
    r.keys = detail::project(r.latent, p.up_key);
    r.values = detail::project(r.latent, p.up_value);
    return;
  }
  const RowMatrix& kv_source = r.config.kind == Kind::Cross ? memory : x;
  r.keys = detail::project(kv_source, p.key);
  r.values = detail::project(kv_source, p.value);
}

// The K/V heads and the query heads, split from the projections, rotated
// with RoPE; each query head notes the K/V head it reads.
void split_heads(Run& r) {
  const Config& c = r.config;
  const int hd = head_dim(c), groups = kv_heads(c), group_size = c.num_heads / groups;
  if (c.rope) r.rope = compute_rope_params(hd, c.rope_theta, static_cast<int>(r.queries.rows()));
  r.kv.resize(static_cast<std::size_t>(groups));
  for (int g = 0; g < groups; ++g) {
    KvHead& kv = r.kv[static_cast<std::size_t>(g)];
    kv.keys = r.keys.middleCols(g * hd, hd);
    kv.values = r.values.middleCols(g * hd, hd);
    if (c.rope) kv.keys_rotated = apply_rope(kv.keys, r.rope);
  }
  r.heads.resize(static_cast<std::size_t>(c.num_heads));
  for (int h = 0; h < c.num_heads; ++h) {
    Head& head = r.heads[static_cast<std::size_t>(h)];
    head.kv_head = h / group_size;  // repeat_interleave(group_size, dim=1)
    r.kv[static_cast<std::size_t>(head.kv_head)].query_heads.push_back(h);
    head.queries = r.queries.middleCols(h * hd, hd);
    if (c.rope) head.queries_rotated = apply_rope(head.queries, r.rope);
  }
}

}  // namespace

Run run_with_parameters(const Config& config, const Parameters& params, const RowMatrix& x,
                        const RowMatrix& memory, TorchGenerator& gen) {
  Run r;
  r.config = config;
  r.params = params;
  project_all(r, x, memory);
  split_heads(r);
  const MaskRule rule = detail::mask_rule(config);
  const float sqrt_dk = detail::root_dk(head_dim(config));
  const int hd = head_dim(config), heads = config.num_heads;
  // Heads run in parallel only when each has real work (as in
  // attention_fast.cpp); the dropout draws between the two loops stay in
  // order, one draw over all heads.
  const core::detail::ThreadShare share;
  const bool parallel = heads > 1 && x.rows() >= 128;
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
  for (int h = 0; h < heads; ++h) {
    Head& head = r.heads[static_cast<std::size_t>(h)];
    const KvHead& kv = r.kv[static_cast<std::size_t>(head.kv_head)];
    const RowMatrix& q = config.rope ? head.queries_rotated : head.queries;
    const RowMatrix& k = config.rope ? kv.keys_rotated : kv.keys;
    head.scores.resize(q.rows(), k.rows());
    head.scores.noalias() = q * k.transpose();
    mask_and_softmax(head, rule, sqrt_dk);
  }
  dropout_all_heads(r.heads, config, gen);
  r.concat.resize(x.rows(), config.d_out);
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
  for (int h = 0; h < heads; ++h) {
    Head& head = r.heads[static_cast<std::size_t>(h)];
    head.context.resize(x.rows(), hd);
    head.context.noalias() =
        head.dropped_weights * r.kv[static_cast<std::size_t>(head.kv_head)].values;
    r.concat.middleCols(static_cast<Eigen::Index>(h) * hd, hd) = head.context;
  }
  r.output = detail::project(r.concat, r.params.out);
  return r;
}

Run run(const Config& config, const RowMatrix& x, const RowMatrix& memory) {
  TorchGenerator gen(config.seed);  // torch.manual_seed(seed)
  const auto d_memory = static_cast<int>(config.kind == Kind::Cross ? memory.cols() : 0);
  const Parameters params = init_parameters(config, static_cast<int>(x.cols()), d_memory, gen);
  return run_with_parameters(config, params, x, memory, gen);
}

}  // namespace attnscope::core::modern
