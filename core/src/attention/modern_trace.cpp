// modern_trace.cpp: the classes after chapter 3 as lab runs. A core::Config
// whose variant is GroupedQuery, SlidingWindow, Latent or Cross (or
// Multihead with RoPE) runs on core::modern; its Run and its cache steps
// become Traces with the catalogue's stage ids, laid out as chapter 3's
// MultiHeadAttention lays out its own (docs/trace-format.md).
//
// Sections
//   1. the config in core::modern's terms
//   2. a forward pass as a Trace
//   3. a cache step as a Trace
#include <memory>
#include <string>
#include <utility>

#include "attention/attention_internal.hpp"
#include "attnscope/attention/attention.hpp"
#include "attnscope/attention/modern.hpp"
#include "attnscope/base/stages.hpp"

namespace attnscope::core {

using detail::add_stage;

namespace {

// ---------------------------------------------------------------------------
// 1. The config

modern::Kind modern_kind(Variant v) {
  switch (v) {
    case Variant::GroupedQuery:
      return modern::Kind::GroupedQuery;
    case Variant::SlidingWindow:
      return modern::Kind::SlidingWindow;
    case Variant::Latent:
      return modern::Kind::Latent;
    case Variant::Cross:
      return modern::Kind::Cross;
    default:
      return modern::Kind::Multihead;
  }
}

}  // namespace

modern::Config modern_config_of(const Config& c) {
  modern::Config m;
  m.kind = modern_kind(c.variant);
  m.d_out = c.d_out;
  m.num_heads = c.num_heads;
  if (c.variant == Variant::GroupedQuery) m.num_kv_groups = c.num_kv_groups;
  if (c.variant == Variant::SlidingWindow) m.window = c.window;
  if (c.variant == Variant::Latent) m.latent_dim = c.latent_dim;
  m.dropout = c.dropout;
  m.training = c.training;
  m.qkv_bias = c.qkv_bias;
  m.seed = c.seed;
  m.rope = c.rope && takes_rope(c.variant);
  m.rope_theta = c.rope_theta;
  return m;
}

namespace {

void add_projection(Trace& trace, const char* weight_id, const char* bias_id, const Projection& p) {
  add_stage(trace, weight_id, -1, p.weight);
  if (p.bias.size() > 0) add_stage(trace, bias_id, -1, p.bias);
}

// The causal mask alone (1 where j > i), which a window narrows further.
RowMatrix causal_mask(Eigen::Index T) {
  RowMatrix mask = RowMatrix::Zero(T, T);  // (T, T) 1 = key j after query i
  for (Eigen::Index i = 0; i < T; ++i)
    for (Eigen::Index j = i + 1; j < T; ++j) mask(i, j) = 1.0f;
  return mask;
}

// ---------------------------------------------------------------------------
// 2. A forward pass

void add_parameters(Trace& trace, modern::Run& run, bool latent) {
  const modern::Parameters& p = run.params;
  add_stage(trace, stage_id::W_query, -1, p.query.weight);
  if (!latent) {
    add_stage(trace, stage_id::W_key, -1, p.key.weight);
    add_stage(trace, stage_id::W_value, -1, p.value.weight);
  }
  if (p.query.bias.size() > 0) add_stage(trace, stage_id::b_query, -1, p.query.bias);
  if (!latent && p.key.bias.size() > 0) {
    add_stage(trace, stage_id::b_key, -1, p.key.bias);
    add_stage(trace, stage_id::b_value, -1, p.value.bias);
  }
  if (latent) {
    add_projection(trace, stage_id::W_down, stage_id::b_down, p.down);
    add_projection(trace, stage_id::W_up_key, stage_id::b_up_key, p.up_key);
    add_projection(trace, stage_id::W_up_value, stage_id::b_up_value, p.up_value);
    add_stage(trace, stage_id::latent_kv, -1, std::move(run.latent));
  }
}

// One query head's stages, chapter 3's order with the new ones in place;
// the head's own matrices move into the trace (a group's K and V are copied:
// its query heads share them).
void add_head(Trace& trace, modern::Run& run, int h, const RowMatrix* causal) {
  modern::Head& head = run.heads[static_cast<std::size_t>(h)];
  const modern::KvHead& kv = run.kv[static_cast<std::size_t>(head.kv_head)];
  add_stage(trace, stage_id::queries, h, std::move(head.queries));
  add_stage(trace, stage_id::keys, h, kv.keys);
  add_stage(trace, stage_id::values, h, kv.values);
  if (head.queries_rotated.size() > 0) {
    add_stage(trace, stage_id::queries_rotated, h, std::move(head.queries_rotated));
    add_stage(trace, stage_id::keys_rotated, h, kv.keys_rotated);
  }
  add_stage(trace, stage_id::scores, h, std::move(head.scores));
  if (head.mask.size() > 0) {
    if (causal) {  // a window: the causal mask, then the window's, which the scores take
      add_stage(trace, stage_id::mask, h, *causal);
      add_stage(trace, stage_id::window_mask, h, std::move(head.mask));
    } else {
      add_stage(trace, stage_id::mask, h, std::move(head.mask));
    }
    add_stage(trace, stage_id::masked_scores, h, std::move(head.masked_scores));
  }
  add_stage(trace, stage_id::scaled_scores, h, std::move(head.scaled_scores));
  add_stage(trace, stage_id::weights, h, std::move(head.weights));
  add_stage(trace, stage_id::dropout_mask, h, std::move(head.dropout_mask));
  add_stage(trace, stage_id::dropped_weights, h, std::move(head.dropped_weights));
  add_stage(trace, stage_id::context, h, std::move(head.context));
}

Trace trace_of(const Config& config, const Inputs& inputs, modern::Run&& run) {
  Trace trace;
  trace.config = config;
  trace.tokens = inputs.tokens;
  trace.d_in = static_cast<int>(inputs.embeddings.cols());
  const bool cross = config.variant == Variant::Cross;
  if (cross) trace.key_tokens = memory_of(inputs).memory_tokens;
  add_stage(trace, stage_id::inputs, -1, inputs.embeddings);
  if (cross) add_stage(trace, stage_id::memory, -1, memory_of(inputs).memory);
  add_parameters(trace, run, config.variant == Variant::Latent);
  add_stage(trace, stage_id::queries, -1, std::move(run.queries));
  add_stage(trace, stage_id::keys, -1, std::move(run.keys));
  add_stage(trace, stage_id::values, -1, std::move(run.values));
  if (config.variant == Variant::GroupedQuery)
    for (std::size_t g = 0; g < run.kv.size(); ++g) {
      add_stage(trace, stage_id::group_keys, static_cast<int>(g), run.kv[g].keys);
      add_stage(trace, stage_id::group_values, static_cast<int>(g), run.kv[g].values);
    }
  std::optional<RowMatrix> causal;
  if (config.variant == Variant::SlidingWindow) causal = causal_mask(inputs.embeddings.rows());
  for (int h = 0; h < static_cast<int>(run.heads.size()); ++h)
    add_head(trace, run, h, causal ? &*causal : nullptr);
  add_stage(trace, stage_id::concat, -1, std::move(run.concat));
  add_projection(trace, stage_id::W_out, stage_id::b_out, run.params.out);
  add_stage(trace, stage_id::output, -1, std::move(run.output));
  return trace;
}

}  // namespace

const Inputs& memory_of(const Inputs& inputs) {
  thread_local Inputs self;  // the inputs as their own second sequence
  if (inputs.memory.rows() > 0) return inputs;
  self.memory = inputs.embeddings;
  self.memory_tokens = inputs.tokens;
  return self;
}

bool runs_modern(const Config& config) {
  return is_modern(config.variant) || (config.rope && config.variant == Variant::Multihead);
}

Trace run_modern(const Config& config, const Inputs& inputs) {
  const RowMatrix& memory = memory_of(inputs).memory;
  return trace_of(config, inputs, modern::run(modern_config_of(config), inputs.embeddings, memory));
}

// ---------------------------------------------------------------------------
// 3. A cache step

std::string validate_cache_step(const Config& config, const Inputs& inputs, int step) {
  if (std::string problem = validate(config, inputs); !problem.empty()) return problem;
  if (!split_heads(config.variant) || config.variant == Variant::Cross)
    return "a cache step generates token by token with multihead, gqa, swa or mla, not " +
           std::string(variant_id(config.variant)) +
           (config.variant == Variant::Cross
                ? " (its keys and values come from the second sequence, projected once)"
                : "") +
           ": choose one of those";
  return modern::validate_cache(modern_config_of(config), inputs.embeddings, step);
}

Trace run_cache_step(const Config& config, const Inputs& inputs, int step) {
  const modern::Config m = modern_config_of(config);
  const modern::CacheStep s = modern::cache_step(m, inputs.embeddings, step, /*check=*/true);
  Trace trace;
  trace.config = config;
  trace.config.training = false;  // generating: eval mode, no dropout
  const auto t = static_cast<std::size_t>(step);
  trace.tokens = {inputs.tokens[t]};
  trace.key_tokens.assign(inputs.tokens.begin() + s.first_key_position,
                          inputs.tokens.begin() + static_cast<std::ptrdiff_t>(t) + 1);
  trace.d_in = static_cast<int>(inputs.embeddings.cols());
  trace.cache_step = CacheStepInfo{s.position, s.first_key_position, s.cache_bytes, s.max_abs_diff};
  add_stage(trace, stage_id::inputs, -1, inputs.embeddings.row(step));
  if (s.latent.size() > 0) add_stage(trace, stage_id::latent_kv, -1, s.latent);
  const int groups = modern::kv_heads(m);
  const int per_group = config.num_heads / groups;
  for (int h = 0; h < config.num_heads; ++h) {
    const auto q = static_cast<std::size_t>(h);
    const auto g = static_cast<std::size_t>(h / per_group);
    add_stage(trace, m.rope ? stage_id::queries_rotated : stage_id::queries, h, s.queries[q]);
    add_stage(trace, m.rope ? stage_id::keys_rotated : stage_id::keys, h, s.keys[g]);
    add_stage(trace, stage_id::values, h, s.values[g]);
    add_stage(trace, stage_id::scores, h, s.scores[q]);
    add_stage(trace, stage_id::weights, h, s.weights[q]);
  }
  add_stage(trace, stage_id::output, -1, s.output);
  return trace;
}

}  // namespace attnscope::core
