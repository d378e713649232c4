// attention.hpp: the engine. One pure entry point, run_attention(), computes
// the book's module under torch.manual_seed(seed) and keeps every stage.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/base/config.hpp"
#include "attnscope/base/rng.hpp"
#include "attnscope/base/trace.hpp"

namespace attnscope::core {

// One nn.Linear (or nn.Parameter matrix) oriented as used: y = x . weight + bias.
struct Projection {
  RowMatrix weight;  // (in, out): for nn.Linear this is its .weight transposed
  RowMatrix bias;    // (1, out), or empty when the layer has no bias
};

// The three projections of one attention head.
struct QkvProjections {
  Projection query, key, value;
};

// Every trainable parameter of a module, in the book's orientation.
struct Parameters {
  std::vector<QkvProjections> qkv;  // empty for simple; one per head for the wrapper; else one
  Projection out;                   // out_proj, multihead only
};

// Parameters prepared for repeated runs: weights packed for the engine's
// matrix-product kernel (core/src/kernels/gemm.hpp) and held as matrices that the
// traces' parameter stages share. Built by ParameterCache.
struct PreparedParameters;

// Which implementation of the forward pass to run. Both compute the same
// stages; Fast fuses the per-row work, runs heads in parallel and skips
// copies, Reference is the readable one it is tested against.
enum class EnginePath { Fast, Reference };

// Builds the module's parameters exactly as its constructor does in PyTorch,
// drawing from `gen` in constructor order.
Parameters init_parameters(const Config& config, int d_in, TorchGenerator& gen);

// Runs the module's forward pass with the given parameters; dropout draws
// come from `gen`. Precondition: validate(config, inputs) is empty.
Trace run_with_parameters(const Config& config, const Inputs& inputs, const Parameters& params,
                          TorchGenerator& gen, EnginePath path = EnginePath::Fast);

// torch.manual_seed(config.seed); module = Class(...); module(inputs).
// Precondition: validate(config, inputs) is empty.
Trace run_attention(const Config& config, const Inputs& inputs, EnginePath path = EnginePath::Fast);

// Remembers the module built for the last (variant, d_in, d_out, heads,
// qkv_bias, seed) and the generator right after its construction, so that a
// recompute after an edit of the inputs, dropout rate or mode skips drawing
// the parameters again (at d = 768 that is 2.4 M draws), packing their
// weights for the matrix-product kernel and copying them into the stages:
// the traces it computes share one copy of the parameters. Not thread-safe:
// one cache per thread that computes traces.
class ParameterCache {
 public:
  // The parameters for config and d_in, building them on a miss; `gen` is set
  // to the generator state right after construction.
  const Parameters& get(const Config& config, int d_in, TorchGenerator& gen);
  // The last get()'s parameters prepared, or null before the first get().
  const PreparedParameters* prepared() const { return prepared_.get(); }

 private:
  struct Key {
    Variant variant;
    int d_in, d_out, num_heads;
    bool qkv_bias;
    std::uint64_t seed;
    bool operator==(const Key&) const = default;
  };
  std::optional<Key> key_;
  Parameters params_;
  std::optional<TorchGenerator> after_init_;
  std::shared_ptr<const PreparedParameters> prepared_;  // params_ prepared
};

// run_attention, reusing the cache's parameters when they match.
Trace run_attention(const Config& config, const Inputs& inputs, ParameterCache& cache,
                    EnginePath path = EnginePath::Fast);

// The classes after chapter 3 (GroupedQuery, SlidingWindow, Latent, Cross,
// and Multihead with RoPE) run on core::modern (modern.hpp): run_attention
// hands them to run_modern, which draws their parameters in their own
// constructors' order (init_parameters and explicit Parameters do not
// describe them). True for such a config.
bool runs_modern(const Config& config);
// torch.manual_seed(seed); module = TheClass(...); module(x) (Cross:
// module(x, memory)), every stage kept as a Trace with chapter 3's ids and
// the catalogue's new ones (docs/trace-format.md).
// Precondition: validate(config, inputs) is empty.
Trace run_modern(const Config& config, const Inputs& inputs);

// Cross-attention's second sequence: `inputs` when it has one, else an
// Inputs whose memory and memory_tokens are the inputs' own (valid until the
// next call on this thread).
const Inputs& memory_of(const Inputs& inputs);

// Step `step` (0-based) of generating token by token with the KV cache, in
// eval mode: a Trace whose `tokens` is the new token and `key_tokens` the
// cached ones, with per head its query row, the cache as it reads it
// (`keys`, `values`; with RoPE `queries_rotated`, `keys_rotated`; Latent also
// `latent_kv`, the cache itself), `scores`, `weights`, then `output` (1,
// d_out), and `cache_step` holding the cache's bytes and the largest
// difference from the full forward's row. Precondition:
// validate_cache_step(...) is empty.
Trace run_cache_step(const Config& config, const Inputs& inputs, int step);
// "" when run_cache_step can run, else one sentence: validate's, that the
// class has no cache (the single-head classes, the wrapper, Cross), or that
// the step is outside 0 .. T-1.
std::string validate_cache_step(const Config& config, const Inputs& inputs, int step);

// Row-wise softmax with the row max subtracted first; -inf entries get 0.
// A row of only -inf becomes NaN, as in PyTorch.
RowMatrix softmax_rows(const RowMatrix& scores);

}  // namespace attnscope::core
