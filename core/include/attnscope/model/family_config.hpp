// family_config.hpp: the config.json of today's open decoder models (Llama
// 3.x and SmolLM2, Mistral, Qwen2/2.5, Qwen3, Gemma 3 text), read into the
// numbers their forward pass needs. Keys that are absent take Hugging Face's
// defaults for the model_type; anything attnscope cannot run the same way
// (mixtures of experts, vision towers, an unknown rope_scaling or
// model_type) is refused with a ParseError naming the key and what is read.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/base/errors.hpp"

namespace attnscope::core {

// The config's "model_type".
enum class ModelFamily { Llama, Mistral, Qwen2, Qwen3, Gemma3 };

// The config's spelling of `f` ("llama", ..., "gemma3_text").
std::string_view model_family_name(ModelFamily f);

// rope_scaling {"rope_type": "llama3", ...}: Llama 3.1's stretch of the low
// frequencies (the book's llama3.py, compute_rope_params' freq_config).
struct Llama3RopeScaling {
  bool enabled = false;
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int original_max_position_embeddings = 8192;
};

enum class FamilyActivation {
  Silu,      // SwiGLU: down(silu(gate) * up)
  GeluTanh,  // GeGLU: down(gelu_tanh(gate) * up) (Gemma's gelu_pytorch_tanh)
};

struct FamilyConfig {
  ModelFamily family = ModelFamily::Llama;
  int vocab_size = 0;
  int hidden_size = 0;        // d
  int intermediate_size = 0;  // MLP width
  int num_hidden_layers = 0;
  int num_attention_heads = 0;  // query heads
  int num_key_value_heads = 0;  // K/V heads (GQA groups); divides the query heads
  int head_dim = 0;             // hidden / heads unless the config says otherwise
  int max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;            // full-attention layers
  double rope_local_base_freq = 10000.0;  // Gemma 3's sliding layers
  Llama3RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool q_bias = false, k_bias = false, v_bias = false, o_bias = false;
  bool mlp_bias = false;
  bool qk_norm = false;       // per-head RMSNorm of queries and keys before RoPE (Qwen3, Gemma 3)
  bool gemma = false;         // Gemma 3: (1 + w) norms, four norms a block, embeddings x sqrt(d)
  double query_scale = 0;     // scores multiplier: head_dim^-0.5, Gemma query_pre_attn_scalar^-0.5
  int sliding_window = 0;     // W of the sliding layers (0: none slides)
  std::vector<bool> sliding;  // per layer: does it slide (query i sees keys i-W < j <= i)
  double final_logit_softcapping = 0;  // 0: none; else logits = tanh(logits / c) * c
  FamilyActivation activation = FamilyActivation::Silu;

  int kv_groups() const { return num_attention_heads / num_key_value_heads; }
  int q_width() const { return num_attention_heads * head_dim; }
  int kv_width() const { return num_key_value_heads * head_dim; }
  // The RoPE base of layer l (Gemma's sliding layers use the local one).
  double theta_of(int layer) const {
    return gemma && sliding[static_cast<std::size_t>(layer)] ? rope_local_base_freq : rope_theta;
  }
  // Llama 3 scaling applies to the layer's frequencies (not Gemma's local ones).
  bool scaled(int layer) const {
    return rope_scaling.enabled && !(gemma && sliding[static_cast<std::size_t>(layer)]);
  }
};

// Parses config.json text; `source` names it in errors. Throws ParseError
// naming the key: a model_type other than the five above, MoE keys
// (num_experts, num_local_experts, n_routed_experts, moe_intermediate_size,
// ...), vision_config, a rope_scaling other than none / "default" /
// "llama3", an activation the family does not use, a missing or
// non-positive size, query heads not divisible by the K/V heads.
FamilyConfig parse_family_config(std::string_view json_text, std::string_view source);
// Reads and parses a config.json file; throws ParseError naming the file.
FamilyConfig read_family_config(const std::string& path);

// The folder holding a model: `path` itself, or the folder of a weights file.
std::filesystem::path model_folder(const std::filesystem::path& path);
// The model_type of the config.json in `path`'s folder when it is not
// "gpt2" (a family folder to read with FamilyModel), else nullopt: no
// config.json, a .pth/.pt file (the book's GPTModel), or GPT-2.
std::optional<std::string> family_model_type(const std::filesystem::path& path);
// The path of the folder's tokenizer.json; throws ParseError saying what
// to add when the folder has none.
std::filesystem::path family_tokenizer_path(const std::filesystem::path& folder);

}  // namespace attnscope::core
