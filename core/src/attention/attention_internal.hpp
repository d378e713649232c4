// attention_internal.hpp: what the engine's three files share.
//
//   attention_reference.cpp  the book's six modules as readable math, in the
//                            chapter's order (the EnginePath::Reference path)
//   attention_fast.cpp       the same stages fused, tiled and in parallel
//                            (EnginePath::Fast), tested against the reference
//   attention.cpp            the public API: init_parameters, run_attention,
//                            ParameterCache
//
// Arithmetic is float32, like the book's tensors. Where PyTorch's rounding
// is observable (scale factor, softmax normalisation, dropout scale) both
// paths round the way it does; see the comments at each place.
#pragma once

#include <memory>
#include <vector>

#include "attnscope/attention/attention.hpp"
#include "kernels/gemm.hpp"

namespace attnscope::core {

// A module's parameters prepared once for repeated runs (ParameterCache):
// each weight matrix packed for the projections' kernel, and each parameter
// as a matrix that every trace's W_* / b_* stage shares instead of copying.
struct PreparedParameters {
  struct Layer {
    gemm::PackedWeights packed;               // empty without the kernel
    float max_abs = 0.0f;                     // gemm::max_abs(weight)
    std::shared_ptr<RowMatrix> weight, bias;  // the stages' matrices
  };
  struct Qkv {
    Layer query, key, value;
  };
  std::vector<Qkv> qkv;
  Layer out;  // multihead only
};

namespace detail {

// How one attention head treats its scores.
struct HeadOptions {
  bool causal = false;      // hide key j from query i when j > i
  bool dropout_on = false;  // nn.Dropout applies (training mode)
  double dropout = 0.0;     // its probability
};

// Appends the stage (id, head) holding `data` to the trace.
void add_stage(Trace& trace, const char* id, int head, RowMatrix data);

// ---------------------------------------------------------------------------
// Parameter initialisation (attention_reference.cpp), in constructor order

// nn.Parameter(torch.rand(d_in, d_out)) x 3: SelfAttention_v1's W_query, W_key, W_value.
QkvProjections init_qkv_rand(int d_in, int d_out, TorchGenerator& gen);
// nn.Linear(in, out, bias), returned transposed: weight (in, out), bias (1, out).
Projection init_linear(int in, int out, bool bias, TorchGenerator& gen);
// nn.Linear(d_in, d_out, bias) x 3: W_query, W_key, W_value.
QkvProjections init_qkv_linear(int d_in, int d_out, bool bias, TorchGenerator& gen);

// ---------------------------------------------------------------------------
// Reference forward passes (attention_reference.cpp); x is (T, d_in)

// Simplified self-attention: no trainable weights.
void forward_simple_reference(Trace& trace, const RowMatrix& x);
// SelfAttention_v1/v2 and CausalAttention (also one head of the wrapper).
// Appends the head's stages and returns its context (T, d_out).
RowMatrix forward_single_head_reference(Trace& trace, int head, const RowMatrix& x,
                                        const QkvProjections& qkv, const HeadOptions& opt,
                                        TorchGenerator& gen);
// MultiHeadAttentionWrapper: num_heads CausalAttention modules, outputs side by side.
void forward_wrapper_reference(Trace& trace, const Config& config, const RowMatrix& x,
                               const Parameters& params, const HeadOptions& opt,
                               TorchGenerator& gen);
// MultiHeadAttention: one projection split into heads, then out_proj.
void forward_multihead_reference(Trace& trace, const Config& config, const RowMatrix& x,
                                 const Parameters& params, const HeadOptions& opt,
                                 TorchGenerator& gen);

// ---------------------------------------------------------------------------
// Fast forward pass (attention_fast.cpp): every variant but Simple.
// `prepared` is params prepared, or null.
void forward_fast(Trace& trace, const Config& config, const RowMatrix& x, const Parameters& params,
                  const PreparedParameters* prepared, const HeadOptions& opt, TorchGenerator& gen);

}  // namespace detail
}  // namespace attnscope::core
