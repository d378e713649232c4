// attention.cpp: the engine's public API: init_parameters, run_attention,
// ParameterCache. The math is in attention_reference.cpp (the book's modules,
// readable) and attention_fast.cpp (the same stages, fast); the private
// header attention_internal.hpp joins them.
#include "attnscope/attention/attention.hpp"

#include <memory>
#include <vector>

#include "attention/attention_internal.hpp"
#include "attnscope/base/stages.hpp"

namespace attnscope::core {

using detail::add_stage;
using detail::HeadOptions;

Parameters init_parameters(const Config& config, int d_in, TorchGenerator& gen) {
  Parameters params;
  switch (config.variant) {
    case Variant::Simple:
      break;
    case Variant::SelfAttentionV1:
      params.qkv.push_back(detail::init_qkv_rand(d_in, config.d_out, gen));
      break;
    case Variant::SelfAttentionV2:
    case Variant::Causal:
      params.qkv.push_back(detail::init_qkv_linear(d_in, config.d_out, config.qkv_bias, gen));
      break;
    case Variant::MultiheadWrapper:
      for (int h = 0; h < config.num_heads; ++h)
        params.qkv.push_back(detail::init_qkv_linear(d_in, config.d_out, config.qkv_bias, gen));
      break;
    case Variant::Multihead:
      params.qkv.push_back(detail::init_qkv_linear(d_in, config.d_out, config.qkv_bias, gen));
      params.out = detail::init_linear(config.d_out, config.d_out, /*bias=*/true, gen);
      break;
    case Variant::GroupedQuery:  // their parameters are core::modern's (modern.hpp)
    case Variant::SlidingWindow:
    case Variant::Latent:
    case Variant::Cross:
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
    prepared.qkv.push_back(PreparedParameters::Qkv{prepare_layer(qkv.query), prepare_layer(qkv.key),
                                                   prepare_layer(qkv.value)});
  prepared.out = prepare_layer(params.out);
  return prepared;
}

// run_with_parameters; `prepared` is params prepared, or null.
Trace run_forward(const Config& config, const Inputs& inputs, const Parameters& params,
                  const PreparedParameters* prepared, TorchGenerator& gen, EnginePath path) {
  if (runs_modern(config)) return run_modern(config, inputs);  // draws its own parameters
  Trace trace;
  trace.config = config;
  trace.tokens = inputs.tokens;
  trace.d_in = static_cast<int>(inputs.embeddings.cols());
  const RowMatrix& x = inputs.embeddings;  // (T, d_in)
  add_stage(trace, stage_id::inputs, -1, x);

  HeadOptions opt;
  opt.causal = is_causal(config.variant);
  opt.dropout_on = config.training;
  opt.dropout = config.dropout;

  if (path == EnginePath::Fast && config.variant != Variant::Simple) {
    detail::forward_fast(trace, config, x, params, prepared, opt, gen);
    return trace;
  }
  switch (config.variant) {
    case Variant::Simple:  // three small products: the reference path is the fast one
      detail::forward_simple_reference(trace, x);
      break;
    case Variant::SelfAttentionV1:
    case Variant::SelfAttentionV2:
    case Variant::Causal:
      detail::forward_single_head_reference(trace, -1, x, params.qkv.front(), opt, gen);
      break;
    case Variant::MultiheadWrapper:
      detail::forward_wrapper_reference(trace, config, x, params, opt, gen);
      break;
    case Variant::Multihead:
      detail::forward_multihead_reference(trace, config, x, params, opt, gen);
      break;
    case Variant::GroupedQuery:  // run_modern, before this switch
    case Variant::SlidingWindow:
    case Variant::Latent:
    case Variant::Cross:
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
  if (runs_modern(config)) return run_modern(config, inputs);
  TorchGenerator gen(config.seed);  // torch.manual_seed(seed)
  const Parameters params =
      init_parameters(config, static_cast<int>(inputs.embeddings.cols()), gen);
  return run_with_parameters(config, inputs, params, gen, path);
}

const Parameters& ParameterCache::get(const Config& config, int d_in, TorchGenerator& gen) {
  // Fields the module's constructor reads; dropout and training are forward-only.
  const Key key{config.variant,  d_in,
                config.d_out,    has_heads(config.variant) ? config.num_heads : 1,
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
  if (runs_modern(config)) return run_modern(config, inputs);
  TorchGenerator gen(config.seed);
  const Parameters& params = cache.get(config, static_cast<int>(inputs.embeddings.cols()), gen);
  return run_forward(config, inputs, params, cache.prepared(), gen, path);
}

}  // namespace attnscope::core
