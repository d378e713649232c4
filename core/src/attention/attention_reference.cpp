// attention_reference.cpp: the book's six attention modules as readable math
// (EnginePath::Reference), in the order chapter 3 builds them:
//
//   3.3  simplified self-attention (no trainable weights)
//   3.4  SelfAttention_v1 (nn.Parameter weights), SelfAttention_v2 (nn.Linear)
//   3.5  CausalAttention (causal mask, dropout)
//   3.6  MultiHeadAttentionWrapper, MultiHeadAttention
//
// One stage at a time, each appended to the trace under the id the app and
// the exports use. attention_fast.cpp computes the same stages faster;
// core/tests/test_fast_path.cpp holds the two paths equal.
//
// Arithmetic is float32, like the book's tensors. Where PyTorch's rounding
// is observable (scale factor, softmax normalisation, dropout scale) we round
// the way it does; see the comments at each place.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "attention/attention_internal.hpp"
#include "attnscope/base/stages.hpp"

namespace attnscope::core {

namespace detail {

void add_stage(Trace& trace, const char* id, int head, RowMatrix data) {
  trace.stages.push_back(Stage{id, head, std::move(data)});
}

}  // namespace detail

// ---------------------------------------------------------------------------
// 3.3 Simplified self-attention: scores are dot products of the inputs

// 3.3.1: torch.softmax over each row, the row max subtracted first.
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

namespace detail {

// 3.3.2: attn_scores = inputs @ inputs.T; softmax; all_context_vecs = attn_weights @ inputs.
void forward_simple_reference(Trace& trace, const RowMatrix& x) {
  RowMatrix scores(x.rows(), x.rows());  // (T, T) x_i . x_j
  scores.noalias() = x * x.transpose();
  RowMatrix weights = softmax_rows(scores);  // (T, T) rows sum to 1
  RowMatrix context(x.rows(), x.cols());     // (T, d_in)
  context.noalias() = weights * x;
  add_stage(trace, stage_id::scores, -1, std::move(scores));
  add_stage(trace, stage_id::weights, -1, std::move(weights));
  add_stage(trace, stage_id::context, -1, std::move(context));
}

namespace {

// ---------------------------------------------------------------------------
// 3.4.1 Self-attention with trainable weights, step by step

// x . weight + bias, for x (T, in) -> (T, out).
RowMatrix project(const RowMatrix& x, const Projection& p) {
  RowMatrix y(x.rows(), p.weight.cols());
  y.noalias() = x * p.weight;
  if (p.bias.size() > 0) y.rowwise() += p.bias.row(0);
  return y;
}

void add_projection_stages(Trace& trace, const QkvProjections& qkv, int head) {
  add_stage(trace, stage_id::W_query, head, qkv.query.weight);
  add_stage(trace, stage_id::W_key, head, qkv.key.weight);
  add_stage(trace, stage_id::W_value, head, qkv.value.weight);
  if (qkv.query.bias.size() > 0) {
    add_stage(trace, stage_id::b_query, head, qkv.query.bias);
    add_stage(trace, stage_id::b_key, head, qkv.key.bias);
    add_stage(trace, stage_id::b_value, head, qkv.value.bias);
  }
}

// attn_scores = queries @ keys.T: (T, T) omega, row i = query i . every key.
RowMatrix attention_scores(Trace& trace, int head, const RowMatrix& queries,
                           const RowMatrix& keys) {
  RowMatrix scores(queries.rows(), keys.rows());
  scores.noalias() = queries * keys.transpose();
  add_stage(trace, stage_id::scores, head, scores);
  return scores;
}

// The scale d_k**0.5. PyTorch divides by this Python float, which the float
// kernel rounds to float first: scores / float(sqrt(d_k)).
float root_dk(const RowMatrix& keys) {
  return static_cast<float>(std::pow(static_cast<double>(keys.cols()), 0.5));
}

// attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1): (T, T), rows sum to 1.
RowMatrix attention_weights(Trace& trace, int head, const RowMatrix& scores, float sqrt_dk) {
  RowMatrix scaled = scores / sqrt_dk;  // (T, T)
  RowMatrix weights = softmax_rows(scaled);
  add_stage(trace, stage_id::scaled_scores, head, std::move(scaled));
  add_stage(trace, stage_id::weights, head, weights);
  return weights;
}

// context_vec = attn_weights @ values: (T, d_v), row i = sum_j w_ij v_j.
RowMatrix context_vectors(Trace& trace, int head, const RowMatrix& weights,
                          const RowMatrix& values) {
  RowMatrix context(weights.rows(), values.cols());
  context.noalias() = weights * values;
  add_stage(trace, stage_id::context, head, context);
  return context;
}

}  // namespace

// ---------------------------------------------------------------------------
// 3.4.2 SelfAttention_v1: W_query, W_key, W_value = nn.Parameter(torch.rand(d_in, d_out))

QkvProjections init_qkv_rand(int d_in, int d_out, TorchGenerator& gen) {
  QkvProjections qkv;  // constructor order: W_query, W_key, W_value
  for (Projection* p : {&qkv.query, &qkv.key, &qkv.value}) {
    p->weight.resize(d_in, d_out);
    gen.fill_uniform(p->weight, 0.0f, 1.0f);
  }
  return qkv;
}

// ---------------------------------------------------------------------------
// 3.4.2 SelfAttention_v2: the same with nn.Linear(d_in, d_out, bias=qkv_bias)

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

QkvProjections init_qkv_linear(int d_in, int d_out, bool bias, TorchGenerator& gen) {
  QkvProjections qkv;  // constructor order: W_query, W_key, W_value
  qkv.query = init_linear(d_in, d_out, bias, gen);
  qkv.key = init_linear(d_in, d_out, bias, gen);
  qkv.value = init_linear(d_in, d_out, bias, gen);
  return qkv;
}

namespace {

// SelfAttention_v1/v2's attention once queries, keys and values are there:
// attn_scores, attn_weights (scaled softmax), context_vec. No mask, no dropout.
RowMatrix self_attention_head(Trace& trace, int head, const RowMatrix& queries,
                              const RowMatrix& keys, const RowMatrix& values) {
  const RowMatrix scores = attention_scores(trace, head, queries, keys);
  const RowMatrix weights = attention_weights(trace, head, scores, root_dk(keys));
  return context_vectors(trace, head, weights, values);
}

// ---------------------------------------------------------------------------
// 3.5 Causal attention

// 3.5.1: masked_fill_ on the raw scores (mask.bool() -> -inf), then the
// division by sqrt(d_k) inside the softmax (-inf / sqrt(d_k) stays -inf).
RowMatrix causal_attention_weights(Trace& trace, int head, const RowMatrix& scores, float sqrt_dk) {
  const Eigen::Index T = scores.rows();
  RowMatrix mask(T, T);       // (T, T) 1 where key j is in query i's future (j > i)
  RowMatrix masked = scores;  // (T, T) scores, -inf where j > i
  for (Eigen::Index i = 0; i < T; ++i)
    for (Eigen::Index j = 0; j < T; ++j) {
      mask(i, j) = j > i ? 1.0f : 0.0f;
      if (j > i) masked(i, j) = -std::numeric_limits<float>::infinity();
    }
  add_stage(trace, stage_id::mask, head, std::move(mask));
  RowMatrix scaled = masked / sqrt_dk;  // (T, T)
  add_stage(trace, stage_id::masked_scores, head, std::move(masked));
  RowMatrix weights = softmax_rows(scaled);  // (T, T) row softmax; rows sum to 1
  add_stage(trace, stage_id::scaled_scores, head, std::move(scaled));
  add_stage(trace, stage_id::weights, head, weights);
  return weights;
}

// 3.5.2: nn.Dropout: noise = bernoulli(1 - p) / (1 - p), in float; out = w * noise.
// Off (eval mode, or p = 0) the mask is all ones and draws nothing.
RowMatrix dropout_weights(Trace& trace, int head, const RowMatrix& weights, const HeadOptions& opt,
                          TorchGenerator& gen) {
  const Eigen::Index T = weights.rows();
  RowMatrix dropout_mask = RowMatrix::Ones(T, T);
  if (opt.dropout_on && opt.dropout > 0.0) {
    std::vector<std::uint8_t> keep(static_cast<std::size_t>(T * T));
    gen.dropout_keep(opt.dropout, keep.size(), keep.data());
    const float scale = opt.dropout >= 1.0 ? 0.0f : 1.0f / static_cast<float>(1.0 - opt.dropout);
    for (Eigen::Index k = 0; k < T * T; ++k)
      dropout_mask.data()[k] = keep[static_cast<std::size_t>(k)] ? scale : 0.0f;
  }
  RowMatrix dropped = weights.cwiseProduct(dropout_mask);  // (T, T)
  add_stage(trace, stage_id::dropout_mask, head, std::move(dropout_mask));
  add_stage(trace, stage_id::dropped_weights, head, dropped);
  return dropped;
}

// 3.5.3 CausalAttention's attention once queries, keys and values are there:
// attn_scores, masked_fill_, softmax, dropout, context_vec.
RowMatrix causal_attention_head(Trace& trace, int head, const RowMatrix& queries,
                                const RowMatrix& keys, const RowMatrix& values,
                                const HeadOptions& opt, TorchGenerator& gen) {
  const RowMatrix scores = attention_scores(trace, head, queries, keys);
  const RowMatrix weights = causal_attention_weights(trace, head, scores, root_dk(keys));
  return context_vectors(trace, head, dropout_weights(trace, head, weights, opt, gen), values);
}

// One head from queries/keys/values on, as SelfAttention_v1/v2 or as
// CausalAttention (opt.causal). Appends scores ... context for `head` and
// returns the context (T, d_v).
RowMatrix attention_head_reference(Trace& trace, int head, const RowMatrix& queries,
                                   const RowMatrix& keys, const RowMatrix& values,
                                   const HeadOptions& opt, TorchGenerator& gen) {
  return opt.causal ? causal_attention_head(trace, head, queries, keys, values, opt, gen)
                    : self_attention_head(trace, head, queries, keys, values);
}

}  // namespace

// ---------------------------------------------------------------------------
// The forward passes of SelfAttention_v1/v2 (3.4.2) and CausalAttention (3.5.3)

// SelfAttention_v1/v2.forward, and CausalAttention.forward (3.5.3) when
// opt.causal: queries, keys and values, then one attention head.
RowMatrix forward_single_head_reference(Trace& trace, int head, const RowMatrix& x,
                                        const QkvProjections& qkv, const HeadOptions& opt,
                                        TorchGenerator& gen) {
  add_projection_stages(trace, qkv, head);
  RowMatrix queries = project(x, qkv.query);  // (T, d_out)
  RowMatrix keys = project(x, qkv.key);       // (T, d_out)
  RowMatrix values = project(x, qkv.value);   // (T, d_out)
  add_stage(trace, stage_id::queries, head, queries);
  add_stage(trace, stage_id::keys, head, keys);
  add_stage(trace, stage_id::values, head, values);
  return attention_head_reference(trace, head, queries, keys, values, opt, gen);
}

// ---------------------------------------------------------------------------
// 3.6.1 MultiHeadAttentionWrapper: torch.cat([head(x) for head in self.heads], dim=-1)

void forward_wrapper_reference(Trace& trace, const Config& config, const RowMatrix& x,
                               const Parameters& params, const HeadOptions& opt,
                               TorchGenerator& gen) {
  const Eigen::Index d_out = config.d_out;
  RowMatrix output(x.rows(), d_out * config.num_heads);  // (T, h*d_out) heads side by side
  for (int h = 0; h < config.num_heads; ++h)
    output.middleCols(h * d_out, d_out) = forward_single_head_reference(
        trace, h, x, params.qkv[static_cast<std::size_t>(h)], opt, gen);
  add_stage(trace, stage_id::output, -1, std::move(output));
}

// ---------------------------------------------------------------------------
// 3.6.2 MultiHeadAttention: one projection split into heads, then out_proj

void forward_multihead_reference(Trace& trace, const Config& config, const RowMatrix& x,
                                 const Parameters& params, const HeadOptions& opt,
                                 TorchGenerator& gen) {
  const auto& qkv = params.qkv.front();
  add_projection_stages(trace, qkv, -1);
  const RowMatrix queries = project(x, qkv.query);  // (T, d_out), heads side by side
  const RowMatrix keys = project(x, qkv.key);
  const RowMatrix values = project(x, qkv.value);
  add_stage(trace, stage_id::queries, -1, queries);
  add_stage(trace, stage_id::keys, -1, keys);
  add_stage(trace, stage_id::values, -1, values);

  // view(T, h, head_dim).transpose: head h owns columns [h*hd, (h+1)*hd).
  // Dropout over the (h, T, T) tensor draws head by head, so running the
  // heads in order draws the same numbers in the same order.
  const int hd = config.d_out / config.num_heads;
  RowMatrix concat(x.rows(), config.d_out);  // (T, d_out) head contexts side by side
  for (int h = 0; h < config.num_heads; ++h) {
    RowMatrix q = queries.middleCols(h * hd, hd);  // (T, hd)
    RowMatrix k = keys.middleCols(h * hd, hd);
    RowMatrix v = values.middleCols(h * hd, hd);
    add_stage(trace, stage_id::queries, h, q);
    add_stage(trace, stage_id::keys, h, k);
    add_stage(trace, stage_id::values, h, v);
    concat.middleCols(h * hd, hd) = attention_head_reference(trace, h, q, k, v, opt, gen);
  }
  add_stage(trace, stage_id::concat, -1, concat);
  add_stage(trace, stage_id::W_out, -1, params.out.weight);
  add_stage(trace, stage_id::b_out, -1, params.out.bias);
  add_stage(trace, stage_id::output, -1, project(concat, params.out));  // out_proj
}

}  // namespace detail
}  // namespace attnscope::core
