// family_trace.cpp: a family run's block as a Trace, its logits after any
// position, its next tokens, loss and induction scores.
#include "attnscope/model/family_trace.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "attnscope/base/stages.hpp"
#include "attnscope/model/head_patterns.hpp"
#include "kernels/cpu_share.hpp"
#include "model/family_internal.hpp"

namespace attnscope::core {

namespace {

namespace id = stage_id;

// Rows of the text's logits at a time (a row is vocab floats).
constexpr Eigen::Index kLogitRows = 32;

void check_position(const FamilyRun& run, int position) {
  if (position < 0 || position >= run.num_tokens())
    throw std::invalid_argument("position " + std::to_string(position) +
                                " is not a token of the text (0.." +
                                std::to_string(run.num_tokens() - 1) + ")");
}

// The logits of rows [r0, r0 + m) of the last block's output.
RowMatrix head_logits(const FamilyRun& run, Eigen::Index r0, Eigen::Index m) {
  const FamilyModel::Weights& w = run.model().weights();
  const FamilyConfig& c = w.config;
  const RowMatrix normed = detail::rms_norm(run.residual(run.num_layers()).middleRows(r0, m),
                                            w.final_norm, c.rms_norm_eps);
  RowMatrix logits = w.logits(normed);
  if (c.final_logit_softcapping > 0) {
    const auto cap = static_cast<float>(c.final_logit_softcapping);
    logits.array() = (logits.array() / cap).tanh() * cap;
  }
  return logits;
}

// 1 where query i may not see key j: the future, and on a sliding layer
// the keys W or more back.
RowMatrix hidden_keys(Eigen::Index T, const FamilyLayerStages& s, bool window) {
  RowMatrix m = RowMatrix::Zero(T, T);
  for (Eigen::Index i = 0; i < T; ++i)
    for (Eigen::Index j = 0; j < T; ++j)
      if (j > i || (window && j <= i - s.window)) m(i, j) = 1.0f;
  return m;
}

struct HeadMaps {
  RowMatrix weights, context;
};

// Rows [0, first) of `kept` above `fresh` (the rows from first on). A stage
// a model does not have (q/k norm) is empty in both and stays empty.
RowMatrix stacked(const RowMatrix& kept, Eigen::Index first, RowMatrix fresh) {
  if (first == 0) return fresh;
  if (kept.size() == 0) return RowMatrix();
  if (fresh.rows() == 0) return kept.topRows(first);
  RowMatrix m(first + fresh.rows(), kept.cols());
  m.topRows(first) = kept.topRows(first);
  m.bottomRows(fresh.rows()) = fresh;
  return m;
}

// Every row-wise stage of `kept`'s first rows above the same stage of `fresh`.
FamilyLayerStages stacked(const FamilyLayerStages& kept, Eigen::Index first,
                          FamilyLayerStages fresh) {
  FamilyLayerStages s;
  s.layer = kept.layer;
  s.sliding = kept.sliding;
  s.window = kept.window;
  for (auto m : {&FamilyLayerStages::normed, &FamilyLayerStages::queries, &FamilyLayerStages::keys,
                 &FamilyLayerStages::values, &FamilyLayerStages::queries_normed,
                 &FamilyLayerStages::keys_normed, &FamilyLayerStages::queries_rotated,
                 &FamilyLayerStages::keys_rotated})
    s.*m = stacked(kept.*m, first, std::move(fresh.*m));
  return s;
}

// The bytes of one row of every stage FamilyLayerRows keeps: hidden-wide
// ln_1, o_proj's output, the residual, ln_2 and the MLP's output; Q, Q after
// q/k norm and after RoPE; K the same and V; [gate | up] and the activation.
std::size_t layer_row_bytes(const FamilyConfig& c) {
  const auto d = static_cast<std::size_t>(c.hidden_size), q = static_cast<std::size_t>(c.q_width()),
             kv = static_cast<std::size_t>(c.kv_width()),
             ff = static_cast<std::size_t>(c.intermediate_size);
  return (d * 5 + q * 3 + kv * 5 + ff * 3) * sizeof(float);
}

class BlockTrace {
 public:
  BlockTrace(const FamilyRun& run, int layer, Trace& t)
      : run_(run), c_(run.model().config()), layer_(layer), t_(t) {}

  void add(std::string_view stage, int head, RowMatrix m, int layer) {
    t_.stages.emplace_back(stage, head, std::move(m), layer);
  }
  // A stage that shares its matrix (with the rows kept for the next trace).
  void add(std::string_view stage, int head, std::shared_ptr<RowMatrix> m, int layer) {
    t_.stages.emplace_back(stage, head, std::move(m), layer);
  }

  // Head h's stages from Q to the context (its weights and context given).
  void head_stages(const FamilyLayerStages& s, int h, const HeadMaps& maps) {
    const int g = run_.kv_group(h), hd = c_.head_dim;
    auto cols = [&](const RowMatrix& m, int index) {
      return FamilyRun::head_columns(m, index, hd);
    };
    add(id::queries, h, cols(s.queries, h), layer_);
    add(id::keys, h, cols(s.keys, g), layer_);
    add(id::values, h, cols(s.values, g), layer_);
    if (c_.qk_norm) {
      add(id::queries_normed, h, cols(s.queries_normed, h), layer_);
      add(id::keys_normed, h, cols(s.keys_normed, g), layer_);
    }
    add(id::queries_rotated, h, cols(s.queries_rotated, h), layer_);
    add(id::keys_rotated, h, cols(s.keys_rotated, g), layer_);
    const RowMatrix scores = cols(s.queries_rotated, h) * cols(s.keys_rotated, g).transpose();
    const Eigen::Index T = scores.rows();
    const RowMatrix causal = hidden_keys(T, s, false);
    const RowMatrix hidden = s.sliding ? hidden_keys(T, s, true) : causal;
    RowMatrix masked = scores;
    masked = (hidden.array() > 0.5f).select(-std::numeric_limits<float>::infinity(), masked);
    RowMatrix scaled = masked * static_cast<float>(c_.query_scale);
    add(id::scores, h, scores, layer_);
    add(id::mask, h, causal, layer_);
    if (s.sliding) add(id::window_mask, h, hidden, layer_);
    add(id::masked_scores, h, std::move(masked), layer_);
    add(id::scaled_scores, h, std::move(scaled), layer_);
    add(id::weights, h, maps.weights, layer_);
    add(id::context, h, maps.context, layer_);
  }

  // The heads put together, the output projection, the residual and the
  // MLP half. Rows before `first` are `kept`'s (null: first is 0); when
  // `keep` is given, it shares every stage's matrix with the trace.
  void after_heads(const RowMatrix& concat, const FamilyLayerRows* kept, Eigen::Index first,
                   FamilyLayerRows* keep) {
    const FamilyModel::Weights& w = run_.model().weights();
    const detail::FamilyBlock& b = w.blocks[static_cast<std::size_t>(layer_)];
    const double eps = c_.rms_norm_eps;
    const Eigen::Index n = concat.rows() - first;
    const FamilyLayerRows none;
    const FamilyLayerRows& k = kept ? *kept : none;  // its matrices are shared, never changed
    // The new rows of each stage, then all of them (kept ones above).
    RowMatrix out, h, pre, gate_up, act, down;
    if (n > 0) {
      b.o.apply(first == 0 ? concat : RowMatrix(concat.bottomRows(n)), out);
      h = run_.residual(layer_).bottomRows(n) +
          (c_.gemma ? detail::rms_norm(out, b.post_attn_norm, eps) : out);
      pre = detail::rms_norm(h, c_.gemma ? b.pre_ff_norm : b.post_attn_norm, eps);
      b.gate_up.apply(pre, gate_up);
      act = detail::activate_gated(gate_up, c_.activation);
      b.down.apply(act, down);
      if (c_.gemma) down = detail::rms_norm(down, b.post_ff_norm, eps);
    }
    const RowMatrix none_kept;
    auto whole = [&](const std::shared_ptr<RowMatrix>& kept_rows, RowMatrix fresh) {
      return std::make_shared<RowMatrix>(
          stacked(kept_rows ? *kept_rows : none_kept, first, std::move(fresh)));
    };
    FamilyLayerRows all;
    all.output = whole(k.output, std::move(out));
    all.attn_output = whole(k.attn_output, std::move(h));
    all.ln_2 = whole(k.ln_2, std::move(pre));
    all.mlp_hidden = whole(k.mlp_hidden, std::move(gate_up));
    all.mlp_activation = whole(k.mlp_activation, std::move(act));
    all.mlp_output = whole(k.mlp_output, std::move(down));
    add(id::concat, -1, concat, layer_);
    add(id::output, -1, all.output, layer_);
    add(id::attn_output, -1, all.attn_output, layer_);
    add(id::ln_2, -1, all.ln_2, layer_);
    add(id::mlp_hidden, -1, all.mlp_hidden, layer_);
    add(id::mlp_activation, -1, all.mlp_activation, layer_);
    add(id::mlp_output, -1, all.mlp_output, layer_);
    add(id::block_output, -1, run_.residual(layer_ + 1), layer_);
    if (keep) {
      keep->output = std::move(all.output);
      keep->attn_output = std::move(all.attn_output);
      keep->ln_2 = std::move(all.ln_2);
      keep->mlp_hidden = std::move(all.mlp_hidden);
      keep->mlp_activation = std::move(all.mlp_activation);
      keep->mlp_output = std::move(all.mlp_output);
    }
  }

 private:
  const FamilyRun& run_;
  const FamilyConfig& c_;
  int layer_;
  Trace& t_;
};

}  // namespace

BlockDescription family_block(const FamilyConfig& c, int layer) {
  using enum BlockPart;
  BlockDescription b;
  b.recipe.with(Norm)
      .with(Projection)
      .with(Mask)
      .with(Scale)
      .with(Heads)
      .with(OutProj)
      .with(Residual)
      .with(Mlp)
      .with(Rotary);
  if (c.qk_norm) b.recipe.with(QkNorm);
  if (c.num_key_value_heads < c.num_attention_heads) b.recipe.with(KvGroups);
  if (layer >= 0 && layer < c.num_hidden_layers && c.sliding[static_cast<std::size_t>(layer)])
    b.recipe.with(Window);
  b.recipe.split_heads = true;
  b.recipe.fused_qkv = true;
  b.recipe.norm = NormKind::RmsNorm;
  b.recipe.positions = PositionKind::Rotary;
  b.recipe.mlp = c.activation == FamilyActivation::Silu ? MlpKind::SwiGlu : MlpKind::GeGlu;
  b.recipe.tied_embeddings = c.tie_word_embeddings;
  b.heads = c.num_attention_heads;
  b.head_dim = c.head_dim;
  b.family = std::string(model_family_name(c.family));
  b.kv_heads = c.num_key_value_heads;
  const bool in_model = layer >= 0 && layer < c.num_hidden_layers;
  b.window = in_model && c.sliding[static_cast<std::size_t>(layer)] ? c.sliding_window : 0;
  b.rope_theta = in_model ? c.theta_of(layer) : c.rope_theta;
  b.rope_scaled = in_model && c.scaled(layer);
  b.query_scale = c.query_scale;
  return b;
}

Trace family_layer_trace(const FamilyRun& run, int layer, int head, bool every_head,
                         std::vector<std::string> tokens, std::string text, std::string model,
                         int position, FamilyLayerRows* rows) {
  const FamilyConfig& c = run.model().config();
  if (layer < 0 || layer >= c.num_hidden_layers)
    throw std::invalid_argument("layer " + std::to_string(layer) +
                                " is not one of the model's 0.." +
                                std::to_string(c.num_hidden_layers - 1));
  if (head < 0 || head >= c.num_attention_heads)
    throw std::invalid_argument("head " + std::to_string(head) + " is not one of the layer's 0.." +
                                std::to_string(c.num_attention_heads - 1));
  Trace t;
  t.kind = TraceKind::ModelBlock;
  t.block = family_block(c, layer);
  t.tokens = std::move(tokens);
  t.text = std::move(text);
  t.model = std::move(model);
  t.layer = layer;
  t.d_in = c.hidden_size;
  const detail::ThreadShare share;
  // The rows `rows` holds for the tokens this text shares with its text.
  const Eigen::Index T = run.num_tokens();
  Eigen::Index first = 0;
  if (rows && rows->model == &run.model() && rows->layer == layer) {
    const std::vector<int>& ids = run.ids();
    const std::size_t most = std::min(rows->ids.size(), ids.size());
    while (first < static_cast<Eigen::Index>(most) &&
           rows->ids[static_cast<std::size_t>(first)] == ids[static_cast<std::size_t>(first)])
      ++first;
  }
  FamilyLayerRows kept;
  if (rows) std::swap(kept, *rows);  // `rows` stays empty until this trace is made
  const bool keep =
      rows && static_cast<std::size_t>(T) * layer_row_bytes(c) <= FamilyLayerRows::kMaxBytes;
  // Every row-wise stage of the layer: the kept rows, then the new ones.
  FamilyLayerStages s =
      first == 0 ? run.layer_stages(layer)
                 : stacked(kept.stages, first,
                           first == T ? FamilyLayerStages{}
                                      : run.layer_stages(layer, static_cast<int>(first)));
  BlockTrace b(run, layer, t);
  if (layer == 0) {
    b.add(id::embeddings, -1, run.residual(0), -1);
  } else {
    b.add(id::block_output, -1, run.residual(layer), layer - 1);
  }
  b.add(id::ln_1, -1, s.normed, layer);
  const int heads = c.num_attention_heads, hd = c.head_dim;
  std::vector<HeadMaps> maps(static_cast<std::size_t>(heads));
#pragma omp parallel for schedule(dynamic, 1) if (run.num_tokens() > 64)
  for (int h = 0; h < heads; ++h) {
    HeadMaps& m = maps[static_cast<std::size_t>(h)];
    m.weights = run.head_weights(s, h);
    m.context = m.weights * FamilyRun::head_columns(s.values, run.kv_group(h), hd);
  }
  RowMatrix concat(run.num_tokens(), static_cast<Eigen::Index>(heads) * hd);
  for (int h = 0; h < heads; ++h) {
    const HeadMaps& m = maps[static_cast<std::size_t>(h)];
    concat.middleCols(static_cast<Eigen::Index>(h) * hd, hd) = m.context;
    if (every_head || h == head)
      b.head_stages(s, h, m);
    else
      b.add(id::weights, h, m.weights, layer);
  }
  for (int g = 0; g < c.num_key_value_heads; ++g) {
    b.add(id::group_keys, g, FamilyRun::head_columns(s.keys_rotated, g, hd), layer);
    b.add(id::group_values, g, FamilyRun::head_columns(s.values, g, hd), layer);
  }
  FamilyLayerRows made;
  b.after_heads(concat, first > 0 ? &kept : nullptr, first, keep ? &made : nullptr);
  if (keep) {
    made.model = &run.model();
    made.layer = layer;
    made.ids = run.ids();
    made.stages = std::move(s);
    *rows = std::move(made);
  }
  if (layer == c.num_hidden_layers - 1) {
    const FamilyModel::Weights& w = run.model().weights();
    b.add(id::ln_f, -1,
          detail::rms_norm(run.residual(c.num_hidden_layers), w.final_norm, c.rms_norm_eps), -1);
    const int at = position < 0 || position >= run.num_tokens() ? run.num_tokens() - 1 : position;
    b.add(id::logits, -1, family_position_logits(run, at), -1);
  }
  return t;
}

RowMatrix family_position_logits(const FamilyRun& run, int position) {
  check_position(run, position);
  const detail::ThreadShare share;
  return head_logits(run, position, 1);
}

std::vector<NextToken> family_next_tokens(const FamilyRun& run, int position, int k,
                                          const std::function<std::string(int)>& token_name) {
  // The last positions' logits are the run's own (no second pass over the LM head).
  if (position >= run.logits_first() && position < run.num_tokens())
    return top_tokens(run.logits().row(position - run.logits_first()), k, token_name);
  return top_tokens(family_position_logits(run, position), k, token_name);
}

TextLoss family_text_loss(const FamilyRun& run, std::span<const double> known) {
  TextLoss loss;
  const int T = run.num_tokens();
  if (T < 2) return loss;
  const auto reused = std::min<std::size_t>(known.size(), static_cast<std::size_t>(T - 1));
  loss.per_token.assign(known.begin(), known.begin() + static_cast<std::ptrdiff_t>(reused));
  const detail::ThreadShare share;
  // The rows whose logits the run kept read them; the others get theirs
  // from the LM head, kLogitRows at a time.
  const Eigen::Index kept = run.logits_first();
  auto add = [&](const auto& logits, Eigen::Index i, Eigen::Index position) {
    const int target = run.ids()[static_cast<std::size_t>(position + 1)];
    loss.per_token.push_back(detail::log_sum_exp(logits.row(i).data(), logits.cols()) -
                             static_cast<double>(logits(i, target)));
  };
  for (auto r = static_cast<Eigen::Index>(reused); r < T - 1;) {
    if (r >= kept) {
      add(run.logits(), r - kept, r);
      ++r;
      continue;
    }
    const Eigen::Index m =
        std::min<Eigen::Index>(kLogitRows, std::min<Eigen::Index>(T - 1, kept) - r);
    const RowMatrix logits = head_logits(run, r, m);
    for (Eigen::Index i = 0; i < m; ++i) add(logits, i, r + i);
    r += m;
  }
  detail::finish_loss(loss);
  return loss;
}

std::vector<double> family_induction(const std::shared_ptr<const FamilyModel>& model, int n,
                                     std::uint64_t seed, int bos) {
  const FamilyConfig& c = model->config();
  const std::vector<int> r = induction_ids(n, seed, c.vocab_size);
  const int offset = bos >= 0 && bos < c.vocab_size ? 1 : 0;
  std::vector<int> ids;
  if (offset) ids.push_back(bos);
  ids.insert(ids.end(), r.begin(), r.end());
  ids.insert(ids.end(), r.begin(), r.end());
  const FamilyRun run(model, ids);
  std::vector<double> out;
  for (int l = 0; l < run.num_layers(); ++l)
    for (const RowMatrix& w : run.layer_weights(l)) out.push_back(induction_score(w, n, offset));
  return out;
}

}  // namespace attnscope::core
