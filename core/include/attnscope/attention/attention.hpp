// attention.hpp: the engine. One pure entry point, run_attention(), computes
// the book's module under torch.manual_seed(seed) and keeps every stage.
#pragma once

#include <memory>
#include <optional>
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

// Row-wise softmax with the row max subtracted first; -inf entries get 0.
// A row of only -inf becomes NaN, as in PyTorch.
RowMatrix softmax_rows(const RowMatrix& scores);

}  // namespace attnscope::core
