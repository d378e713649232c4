// gpt2_config.cpp: the Hugging Face GPT-2 config.json reader.
#include "attnscope/model/gpt2_config.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "attnscope/formats/files.hpp"
#include "formats/formats_internal.hpp"

namespace attnscope::core {

using detail::fail;
using json = nlohmann::json;

namespace {

constexpr std::pair<std::string_view, Gpt2Activation> kActivations[] = {
    {"gelu_new", Gpt2Activation::GeluNew},
    {"gelu_pytorch_tanh", Gpt2Activation::GeluPytorchTanh},
    {"gelu", Gpt2Activation::Gelu},
    {"relu", Gpt2Activation::Relu},
};

// A positive whole number no larger than int's range, when the key is present.
void read_size(const json& doc, const char* key, int& out, std::string_view source) {
  if (!doc.contains(key)) return;
  const json& v = doc[key];
  if (!v.is_number_integer() || v.get<std::int64_t>() <= 0 ||
      v.get<std::int64_t>() > std::numeric_limits<int>::max())
    fail(source, std::string("\"") + key + "\" must be a positive whole number, not " + v.dump());
  out = static_cast<int>(v.get<std::int64_t>());
}

void read_bool(const json& doc, const char* key, bool& out, std::string_view source) {
  if (!doc.contains(key)) return;
  if (!doc[key].is_boolean())
    fail(source, std::string("\"") + key + "\" must be true or false, not " + doc[key].dump());
  out = doc[key].get<bool>();
}

}  // namespace

BlockDescription gpt2_block(const Gpt2Config& c) {
  using enum BlockPart;
  BlockDescription b;
  b.recipe.with(Norm)
      .with(Projection)
      .with(Mask)
      .with(Scale)
      .with(Heads)
      .with(OutProj)
      .with(Residual)
      .with(Mlp);
  b.recipe.split_heads = true;
  b.recipe.fused_qkv = true;
  b.recipe.norm = NormKind::LayerNorm;
  b.recipe.positions = PositionKind::Learned;
  b.recipe.mlp = c.activation_function == Gpt2Activation::Relu ? MlpKind::Relu : MlpKind::Gelu;
  b.recipe.tied_embeddings = c.tie_word_embeddings;
  b.heads = c.n_head;
  b.head_dim = c.n_embd / std::max(c.n_head, 1);
  return b;
}

std::string_view gpt2_activation_name(Gpt2Activation a) {
  for (const auto& [name, value] : kActivations)
    if (value == a) return name;
  return "gelu_new";
}

Gpt2Config parse_gpt2_config(std::string_view json_text, std::string_view source) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::exception& e) {
    fail(source, std::string("is not valid JSON (") + e.what() + ")");
  }
  if (!doc.is_object()) fail(source, "is not a JSON object (a Hugging Face config.json)");
  if (doc.contains("model_type") &&
      (!doc["model_type"].is_string() || doc["model_type"].get<std::string>() != "gpt2"))
    fail(source, "\"model_type\" is " + doc["model_type"].dump() +
                     ": attnscope reads GPT-2 checkpoints (\"gpt2\") only");
  bool cross = false;
  read_bool(doc, "add_cross_attention", cross, source);
  if (cross)
    fail(source, "\"add_cross_attention\" is true: encoder-decoder GPT-2 is not supported");
  Gpt2Config c;
  read_size(doc, "n_layer", c.n_layer, source);
  read_size(doc, "n_head", c.n_head, source);
  read_size(doc, "n_embd", c.n_embd, source);
  read_size(doc, "n_positions", c.n_positions, source);
  read_size(doc, "vocab_size", c.vocab_size, source);
  if (c.n_embd % c.n_head != 0)
    fail(source, "\"n_embd\" " + std::to_string(c.n_embd) + " is not divisible by \"n_head\" " +
                     std::to_string(c.n_head));
  c.n_inner = c.n_embd <= std::numeric_limits<int>::max() / 4 ? 4 * c.n_embd : 0;
  if (doc.contains("n_inner") && !doc["n_inner"].is_null())
    read_size(doc, "n_inner", c.n_inner, source);
  else if (c.n_inner == 0)
    fail(source, "\"n_embd\" is too large for the default \"n_inner\" (4 * n_embd)");
  if (doc.contains("layer_norm_epsilon")) {
    const json& v = doc["layer_norm_epsilon"];
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      fail(source, "\"layer_norm_epsilon\" must be a positive number, not " + v.dump());
    c.layer_norm_epsilon = v.get<double>();
  }
  if (doc.contains("activation_function")) {
    const json& v = doc["activation_function"];
    bool known = false;
    for (const auto& [name, value] : kActivations)
      if (v.is_string() && v.get<std::string>() == name) {
        c.activation_function = value;
        known = true;
      }
    if (!known)
      fail(source, "\"activation_function\" " + v.dump() +
                       " is not one attnscope runs (gelu_new, gelu_pytorch_tanh, gelu, relu)");
  }
  read_bool(doc, "scale_attn_weights", c.scale_attn_weights, source);
  read_bool(doc, "scale_attn_by_inverse_layer_idx", c.scale_attn_by_inverse_layer_idx, source);
  read_bool(doc, "tie_word_embeddings", c.tie_word_embeddings, source);
  return c;
}

Gpt2Config read_gpt2_config(const std::string& path) {
  return parse_gpt2_config(read_text_file(path), path);
}

}  // namespace attnscope::core
