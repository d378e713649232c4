// gpt2_config.hpp: a Hugging Face GPT-2 config.json, read into the numbers
// the forward pass needs. Keys that are absent take the defaults Hugging
// Face's GPT2Config uses (GPT-2 small); anything attnscope cannot run the
// same way is refused with the key named (docs/file-formats.md).
#pragma once

#include <string>
#include <string_view>

#include "attnscope/base/errors.hpp"
#include "attnscope/base/trace.hpp"

namespace attnscope::core {

// The MLP's activation (config key "activation_function").
enum class Gpt2Activation {
  GeluNew,          // "gelu_new": the tanh approximation (GPT-2's own)
  GeluPytorchTanh,  // "gelu_pytorch_tanh": the same formula
  Gelu,             // "gelu": the exact erf form
  Relu,             // "relu"
};

// The config's name for `a` ("gelu_new", ...).
std::string_view gpt2_activation_name(Gpt2Activation a);

struct Gpt2Config {
  int n_layer = 12;        // transformer blocks
  int n_head = 12;         // heads per block
  int n_embd = 768;        // model width d (divisible by n_head)
  int n_positions = 1024;  // context length (rows of wpe)
  int vocab_size = 50257;  // rows of wte
  double layer_norm_epsilon = 1e-5;
  Gpt2Activation activation_function = Gpt2Activation::GeluNew;
  int n_inner = 4 * 768;           // MLP width; null or absent in the file = 4 * n_embd
  bool scale_attn_weights = true;  // scores / sqrt(head_dim)
  bool scale_attn_by_inverse_layer_idx = false;  // scores also / (layer + 1)
  bool tie_word_embeddings = true;               // LM head = wte unless lm_head.weight

  int head_dim() const { return n_embd / n_head; }
};

// A GPT-2 block as a recipe: LayerNorm before attention and the MLP,
// learned positions, one fused [Q | K | V] projection split into heads, the
// causal mask, scaling, the output projection and the residual (no dropout:
// a trained model runs in eval mode).
BlockDescription gpt2_block(const Gpt2Config& c);

// Parses config.json text; `source` names it in errors. Throws ParseError
// naming the key: model_type other than "gpt2", add_cross_attention true, an
// unknown activation_function, a size that is not a positive whole number,
// n_embd not divisible by n_head, a value of the wrong type.
Gpt2Config parse_gpt2_config(std::string_view json_text, std::string_view source);
// Reads and parses a config.json file; throws ParseError naming the file.
Gpt2Config read_gpt2_config(const std::string& path);

}  // namespace attnscope::core
