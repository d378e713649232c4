// weights.hpp: running with explicit (imported) weights instead of seeded ones.
//
// A weights file names its tensors (docs/file-formats.md, "Weights"):
//   as used, the trace's orientation (y = x . W + b):
//     W_query, W_key, W_value  (d_in, d_out)      b_query, b_key, b_value  (d_out)
//     W_out                    (d_out, d_out)     b_out                    (d_out)
//   PyTorch state_dict names, transposed on load (nn.Linear stores (out, in)):
//     W_query.weight (d_out, d_in), W_query.bias (d_out), ..., out_proj.weight,
//     out_proj.bias; SelfAttention_v1's nn.Parameter W_query is (d_in, d_out)
//     already and so is the plain name.
//   MultiHeadAttentionWrapper heads: "heads": [{...}, {...}] in JSON, or
//     names prefixed "heads.<h>." (state_dict style, and NPY file names).
//   Buffers ("mask", "heads.<h>.mask") are accepted and ignored.
//
// Reading gives a WeightSet (named tensors, oriented as used); checking it
// against a Config and d_in gives the module's Parameters; running them uses
// the same forward pass as seeded runs (attention.hpp).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/attention/attention.hpp"
#include "attnscope/base/config.hpp"

namespace attnscope::core {

// One imported tensor, already oriented as used.
struct WeightTensor {
  std::string name;    // canonical: W_query, W_key, W_value, b_query, b_key, b_value, W_out, b_out
  int head = -1;       // MultiHeadAttentionWrapper head, or -1 for the whole layer
  RowMatrix value;     // (in, out) for W_*, (1, out) for b_*
  std::string origin;  // where it came from, for messages: "w.json: heads.1.W_key.weight"
  bool transposed = false;  // true when the file held PyTorch's (out, in) and it was transposed
};

// Tensors read from weight files, not yet checked against a run.
struct WeightSet {
  std::vector<WeightTensor> tensors;
  std::string source;  // the file(s) they came from, for messages

  // The tensor with this canonical name and head, or nullptr.
  const WeightTensor* find(std::string_view name, int head = -1) const;
};

// Parses a weights JSON document (an object of named matrices; see above).
// Values must be finite float32; throws ParseError naming `source`.
WeightSet parse_weights_json(std::string_view text, std::string_view source);

// Reads weights from `path`: a JSON file; a .npy file holding the one tensor
// its name says (W_query.npy, heads.0.W_key.weight.npy, b_out.npy ...); or
// a folder of such .npy files. Throws ParseError naming the file.
WeightSet read_weights(const std::filesystem::path& path);

// Adds `more` to `into`; throws ParseError when a tensor is given twice.
void merge_weights(WeightSet& into, const WeightSet& more);

// Checks the set against the run (every tensor the variant needs, nothing
// it does not have, each shape for d_in/d_out/num_heads/qkv_bias) and
// returns the module's parameters; throws ParseError saying what to change.
Parameters parameters_from_weights(const WeightSet& weights, const Config& config, int d_in);

// "" when `params` has exactly the tensors and shapes the module for
// config + d_in has (a wrapper: one set per head; qkv_bias: biases; multihead:
// out_proj); otherwise one sentence saying what does not fit.
std::string validate_parameters(const Parameters& params, const Config& config, int d_in);

// The parameters as named tensors, e.g. to check them against a changed
// config with parameters_from_weights (a wrapper's qkv[h] becomes head h).
WeightSet weights_of(const Parameters& params, const Config& config);

// The parameters as a weights JSON document in canonical names, as used
// (what sessions store; parse_weights_json reads it back exactly).
std::string weights_json(const Parameters& params, const Config& config);

// Runs the module with explicit parameters, as a notebook does:
//   torch.manual_seed(seed); m = Class(...); m.load_state_dict(w); m(x)
// The generator is seeded and then advanced past the parameter draws the
// explicit weights replace, so dropout masks equal those of the seeded run.
// Precondition: validate(config, inputs) is empty and `params` came from
// parameters_from_weights(.., config, d_in).
Trace run_with_explicit_parameters(const Config& config, const Inputs& inputs,
                                   const Parameters& params, EnginePath path = EnginePath::Fast);

}  // namespace attnscope::core
