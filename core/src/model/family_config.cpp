// family_config.cpp: the config.json reader of the Llama, Mistral, Qwen2,
// Qwen3 and Gemma 3 families.
#include "attnscope/model/family_config.hpp"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "attnscope/formats/files.hpp"
#include "formats/formats_internal.hpp"

namespace attnscope::core {

using detail::fail;
using json = nlohmann::json;

namespace {

constexpr std::pair<std::string_view, ModelFamily> kFamilies[] = {
    {"llama", ModelFamily::Llama},        {"mistral", ModelFamily::Mistral},
    {"qwen2", ModelFamily::Qwen2},        {"qwen3", ModelFamily::Qwen3},
    {"gemma3_text", ModelFamily::Gemma3},
};
constexpr std::string_view kSupported = "llama, mistral, qwen2, qwen3, gemma3_text";

// Keys that only a model attnscope does not run has (mixtures of experts,
// vision towers, Gemma 2's attention softcapping, EmbeddingGemma's
// bidirectional attention); null, 0 and false mean "none".
constexpr std::string_view kRefusedKeys[] = {
    "num_experts",           "num_local_experts",      "n_routed_experts",
    "moe_intermediate_size", "num_experts_per_tok",    "vision_config",
    "text_config",           "attn_logit_softcapping", "use_bidirectional_attention",
};

bool present(const json& doc, const char* key) { return doc.contains(key) && !doc[key].is_null(); }

// A positive whole number; `required` ones must be there.
void read_size(const json& doc, const char* key, int& out, std::string_view source,
               bool required = false) {
  if (!present(doc, key)) {
    if (required) fail(source, std::string("\"") + key + "\" is missing");
    return;
  }
  const json& v = doc[key];
  if (!v.is_number_integer() || v.get<std::int64_t>() <= 0 ||
      v.get<std::int64_t>() > std::numeric_limits<int>::max())
    fail(source, std::string("\"") + key + "\" must be a positive whole number, not " + v.dump());
  out = static_cast<int>(v.get<std::int64_t>());
}

void read_number(const json& doc, const char* key, double& out, std::string_view source) {
  if (!present(doc, key)) return;
  const json& v = doc[key];
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
    fail(source, std::string("\"") + key + "\" must be a positive number, not " + v.dump());
  out = v.get<double>();
}

void read_bool(const json& doc, const char* key, bool& out, std::string_view source) {
  if (!present(doc, key)) return;
  if (!doc[key].is_boolean())
    fail(source, std::string("\"") + key + "\" must be true or false, not " + doc[key].dump());
  out = doc[key].get<bool>();
}

ModelFamily read_family(const json& doc, std::string_view source) {
  if (!doc.contains("model_type"))
    fail(source, "\"model_type\" is missing (one of " + std::string(kSupported) + ")");
  const json& v = doc["model_type"];
  for (const auto& [name, family] : kFamilies)
    if (v.is_string() && v.get<std::string>() == name) return family;
  fail(source, "\"model_type\" " + v.dump() + " is not one attnscope runs (" +
                   std::string(kSupported) + ")");
}

void refuse_unsupported_keys(const json& doc, std::string_view source) {
  for (std::string_view key : kRefusedKeys) {
    const std::string k(key);
    if (!present(doc, k.c_str())) continue;
    const json& v = doc[k];
    if (v.is_number_integer() && v.get<std::int64_t>() == 0) continue;  // "no experts"
    if (v.is_boolean() && !v.get<bool>()) continue;
    fail(source, "\"" + k + "\" is set: attnscope runs dense text-only decoders (" +
                     std::string(kSupported) +
                     ") without mixtures of experts, vision "
                     "towers, attention softcapping or bidirectional attention");
  }
}

void read_rope_scaling(const json& doc, FamilyConfig& c, std::string_view source) {
  if (!present(doc, "rope_scaling")) return;
  const json& s = doc["rope_scaling"];
  if (!s.is_object()) fail(source, "\"rope_scaling\" must be an object or null, not " + s.dump());
  const json& type = s.contains("rope_type") ? s["rope_type"]
                     : s.contains("type")    ? s["type"]
                                             : json();
  if (type.is_string() && type.get<std::string>() == "default") return;
  if (!type.is_string() || type.get<std::string>() != "llama3")
    fail(source, "\"rope_scaling\" type " + type.dump() +
                     " is not one attnscope runs (none, \"default\", \"llama3\")");
  Llama3RopeScaling& r = c.rope_scaling;
  r.enabled = true;
  read_number(s, "factor", r.factor, source);
  read_number(s, "low_freq_factor", r.low_freq_factor, source);
  read_number(s, "high_freq_factor", r.high_freq_factor, source);
  read_size(s, "original_max_position_embeddings", r.original_max_position_embeddings, source);
  if (!(r.high_freq_factor > r.low_freq_factor))
    fail(source, "\"rope_scaling\" needs high_freq_factor > low_freq_factor");
}

// The activation key the family names, and the value it must hold.
void read_activation(const json& doc, FamilyConfig& c, std::string_view source) {
  const char* key =
      c.gemma && doc.contains("hidden_activation") ? "hidden_activation" : "hidden_act";
  c.activation = c.gemma ? FamilyActivation::GeluTanh : FamilyActivation::Silu;
  if (!present(doc, key)) return;
  const std::string want = c.gemma ? "gelu_pytorch_tanh" : "silu";
  const json& v = doc[key];
  if (!v.is_string() || v.get<std::string>() != want)
    fail(source, std::string("\"") + key + "\" " + v.dump() + " is not what " +
                     std::string(model_family_name(c.family)) + " runs (\"" + want + "\")");
}

// Which layers slide, and by how much.
void read_windows(const json& doc, FamilyConfig& c, std::string_view source) {
  const auto layers = static_cast<std::size_t>(c.num_hidden_layers);
  c.sliding.assign(layers, false);
  if (c.family == ModelFamily::Qwen2 || c.family == ModelFamily::Qwen3) {
    bool use = false;
    read_bool(doc, "use_sliding_window", use, source);
    if (use)
      fail(source, "\"use_sliding_window\" is true: attnscope runs Qwen without a sliding window");
    return;
  }
  if (c.family == ModelFamily::Llama) return;
  if (c.gemma) c.sliding_window = 4096;
  if (doc.contains("sliding_window") && doc["sliding_window"].is_null()) {
    c.sliding_window = 0;
  } else {
    read_size(doc, "sliding_window", c.sliding_window, source);
  }
  if (c.sliding_window == 0) return;
  if (!c.gemma) {
    c.sliding.assign(layers, true);
    return;
  }
  if (present(doc, "layer_types")) {
    const json& t = doc["layer_types"];
    if (!t.is_array() || t.size() != layers)
      fail(source, "\"layer_types\" must list one type per layer (" + std::to_string(layers) + ")");
    for (std::size_t i = 0; i < layers; ++i) {
      const std::string v = t[i].is_string() ? t[i].get<std::string>() : t[i].dump();
      if (v != "sliding_attention" && v != "full_attention")
        fail(source, "\"layer_types\" holds \"" + v +
                         "\" (read: \"sliding_attention\", \"full_attention\")");
      c.sliding[i] = v == "sliding_attention";
    }
    return;
  }
  int pattern = 6;
  read_size(doc, "sliding_window_pattern", pattern, source);
  for (std::size_t i = 0; i < layers; ++i) c.sliding[i] = (static_cast<int>(i) + 1) % pattern != 0;
}

void read_biases(const json& doc, FamilyConfig& c, std::string_view source) {
  if (c.family == ModelFamily::Qwen2) {
    c.q_bias = c.k_bias = c.v_bias = true;
    return;
  }
  if (c.family == ModelFamily::Mistral) return;
  bool attention = false;
  read_bool(doc, "attention_bias", attention, source);
  c.q_bias = c.k_bias = c.v_bias = c.o_bias = attention;
  if (c.family == ModelFamily::Llama) read_bool(doc, "mlp_bias", c.mlp_bias, source);
}

void read_sizes(const json& doc, FamilyConfig& c, std::string_view source) {
  read_size(doc, "vocab_size", c.vocab_size, source, true);
  read_size(doc, "hidden_size", c.hidden_size, source, true);
  read_size(doc, "intermediate_size", c.intermediate_size, source, true);
  read_size(doc, "num_hidden_layers", c.num_hidden_layers, source, true);
  read_size(doc, "num_attention_heads", c.num_attention_heads, source, true);
  c.num_key_value_heads = c.num_attention_heads;
  read_size(doc, "num_key_value_heads", c.num_key_value_heads, source);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    fail(source, "\"num_attention_heads\" " + std::to_string(c.num_attention_heads) +
                     " is not divisible by \"num_key_value_heads\" " +
                     std::to_string(c.num_key_value_heads));
  c.head_dim = c.gemma ? 256 : c.hidden_size / c.num_attention_heads;
  read_size(doc, "head_dim", c.head_dim, source);
  if (c.head_dim % 2 != 0)
    fail(source, "\"head_dim\" " + std::to_string(c.head_dim) + " must be even for RoPE");
  if (c.family != ModelFamily::Qwen3 && !c.gemma && !present(doc, "head_dim") &&
      c.hidden_size % c.num_attention_heads != 0)
    fail(source,
         "\"hidden_size\" is not divisible by \"num_attention_heads\" and no "
         "\"head_dim\" is given");
  c.max_position_embeddings = 4096;
  read_size(doc, "max_position_embeddings", c.max_position_embeddings, source);
}

}  // namespace

std::string_view model_family_name(ModelFamily f) {
  for (const auto& [name, family] : kFamilies)
    if (family == f) return name;
  return "llama";
}

FamilyConfig parse_family_config(std::string_view json_text, std::string_view source) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::exception& e) {
    fail(source, std::string("is not valid JSON (") + e.what() + ")");
  }
  if (!doc.is_object()) fail(source, "is not a JSON object (a Hugging Face config.json)");
  FamilyConfig c;
  c.family = read_family(doc, source);
  refuse_unsupported_keys(doc, source);
  c.gemma = c.family == ModelFamily::Gemma3;
  c.qk_norm = c.gemma || c.family == ModelFamily::Qwen3;
  read_sizes(doc, c, source);
  read_number(doc, "rms_norm_eps", c.rms_norm_eps, source);
  read_number(doc, "rope_theta", c.rope_theta, source);
  read_number(doc, "rope_local_base_freq", c.rope_local_base_freq, source);
  read_rope_scaling(doc, c, source);
  read_activation(doc, c, source);
  read_biases(doc, c, source);
  read_windows(doc, c, source);
  c.tie_word_embeddings = c.gemma;
  read_bool(doc, "tie_word_embeddings", c.tie_word_embeddings, source);
  double scalar = c.head_dim;
  if (c.gemma) {
    scalar = 256;
    read_number(doc, "query_pre_attn_scalar", scalar, source);
    if (present(doc, "final_logit_softcapping"))
      read_number(doc, "final_logit_softcapping", c.final_logit_softcapping, source);
  }
  c.query_scale = 1.0 / std::sqrt(scalar);
  return c;
}

FamilyConfig read_family_config(const std::string& path) {
  return parse_family_config(read_text_file(path), path);
}

namespace fs = std::filesystem;

fs::path model_folder(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) ? path : path.parent_path();
}

std::optional<std::string> family_model_type(const fs::path& path) {
  std::error_code ec;
  const fs::path config = model_folder(path) / "config.json";
  if (!fs::is_regular_file(config, ec)) return std::nullopt;
  const std::string e = path.extension().string();
  if (e == ".pth" || e == ".pt") return std::nullopt;
  const json j = json::parse(read_text_file(config.string()), nullptr, false);
  if (!j.is_object() || !j.contains("model_type") || !j["model_type"].is_string())
    return std::nullopt;
  std::string type = j["model_type"].get<std::string>();
  if (type == "gpt2") return std::nullopt;
  return type;
}

fs::path family_tokenizer_path(const fs::path& folder) {
  std::error_code ec;
  const fs::path file = folder / "tokenizer.json";
  if (!fs::exists(file, ec))
    throw ParseError(
        folder.string() +
        ": no tokenizer.json in this folder; add the model's tokenizer.json (and "
        "tokenizer_config.json) from its Hugging Face repository to read text with it");
  return file;
}

}  // namespace attnscope::core
