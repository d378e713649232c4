// family_folder.hpp: a Hugging Face folder of an open model family written
// by a test: config.json, model.safetensors of random float32 weights named
// and shaped as the family's checkpoints are, and a small byte-level BPE
// tokenizer.json (the 256 bytes, "Ġt", "he", "Ġthe", a BOS the
// post-processor adds). Shared by the core's and the app's tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace attnscope::testing {

// The GPT-2 byte-to-character map byte-level BPE files use.
inline std::string byte_level_char(int b) {
  auto utf8 = [](int cp) {
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
  };
  if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) return utf8(b);
  int n = 0;
  for (int k = 0; k < b; ++k)
    if (!((k >= 33 && k <= 126) || (k >= 161 && k <= 172) || (k >= 174 && k <= 255))) ++n;
  return utf8(256 + n);
}

// A byte-level BPE tokenizer.json of `vocab` ids: the 256 bytes, three
// merges, fillers, and the special token <|begin_of_text|> as the last id,
// which its post-processor puts first.
inline nlohmann::json byte_level_tokenizer(int vocab) {
  using nlohmann::json;
  json v = json::object();
  for (int b = 0; b < 256; ++b) v[byte_level_char(b)] = b;
  const std::string G = "\xC4\xA0";  // Ġ, the space
  v[G + "t"] = 256;
  v["he"] = 257;
  v[G + "the"] = 258;
  const int bos = vocab - 1;
  for (int id = 259; id < bos; ++id) v["w" + std::to_string(id)] = id;
  const std::string regex =
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  json added = json::array({{{"id", bos},
                             {"content", "<|begin_of_text|>"},
                             {"special", true},
                             {"single_word", false},
                             {"lstrip", false},
                             {"rstrip", false},
                             {"normalized", false}}});
  json post = {
      {"type", "TemplateProcessing"},
      {"single", json::array({{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
      {"special_tokens",
       {{"<|begin_of_text|>",
         {{"id", "<|begin_of_text|>"}, {"ids", {bos}}, {"tokens", {"<|begin_of_text|>"}}}}}}};
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern", {{"Regex", regex}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"},
               {"add_prefix_space", false},
               {"trim_offsets", true},
               {"use_regex", false}}}}}},
          {"post_processor", post},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"ignore_merges", false},
            {"vocab", v},
            {"merges", {G + " t", "h e", G + "t he"}}}}};
}

// Every tensor of the checkpoint `config` describes, with its shape
// (nn.Linear's (out, in)).
inline std::map<std::string, std::vector<std::uint64_t>> family_tensors(
    const nlohmann::json& config) {
  const std::string type = config.at("model_type");
  const std::uint64_t d = config.at("hidden_size"), inner = config.at("intermediate_size");
  const std::uint64_t heads = config.at("num_attention_heads");
  const std::uint64_t kv = config.value("num_key_value_heads", heads);
  const std::uint64_t hd = config.value("head_dim", d / heads);
  const std::uint64_t vocab = config.at("vocab_size");
  const bool gemma = type == "gemma3_text", qk_norm = gemma || type == "qwen3";
  std::map<std::string, std::vector<std::uint64_t>> t;
  t["model.embed_tokens.weight"] = {vocab, d};
  t["model.norm.weight"] = {d};
  if (!config.value("tie_word_embeddings", gemma)) t["lm_head.weight"] = {vocab, d};
  for (int l = 0; l < config.at("num_hidden_layers").get<int>(); ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t[p + "input_layernorm.weight"] = {d};
    t[p + "post_attention_layernorm.weight"] = {d};
    if (gemma) {
      t[p + "pre_feedforward_layernorm.weight"] = {d};
      t[p + "post_feedforward_layernorm.weight"] = {d};
    }
    t[p + "self_attn.q_proj.weight"] = {heads * hd, d};
    t[p + "self_attn.k_proj.weight"] = {kv * hd, d};
    t[p + "self_attn.v_proj.weight"] = {kv * hd, d};
    t[p + "self_attn.o_proj.weight"] = {d, heads * hd};
    if (type == "qwen2")
      for (const char* b : {"q", "k", "v"})
        t[p + "self_attn." + b + "_proj.bias"] = {b[0] == 'q' ? heads * hd : kv * hd};
    if (qk_norm) {
      t[p + "self_attn.q_norm.weight"] = {hd};
      t[p + "self_attn.k_norm.weight"] = {hd};
    }
    t[p + "mlp.gate_proj.weight"] = {inner, d};
    t[p + "mlp.up_proj.weight"] = {inner, d};
    t[p + "mlp.down_proj.weight"] = {d, inner};
  }
  return t;
}

// Writes config.json, model.safetensors (random float32: norms near their
// identity, projections ~ N(0, 1/in); or their upper halves as BF16) and
// tokenizer.json into `dir`.
inline void write_family_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                                std::uint32_t seed, bool bf16 = false) {
  std::filesystem::create_directories(dir);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const bool gemma = config.at("model_type") == "gemma3_text";
  nlohmann::json header;
  std::string data;
  for (const auto& [name, shape] : family_tensors(config)) {
    std::uint64_t n = 1;
    for (auto s : shape) n *= s;
    const bool norm = shape.size() == 1 && name.find("bias") == std::string::npos;
    const float scale = shape.size() == 2 ? 1.0f / std::sqrt(static_cast<float>(shape[1])) : 0.1f;
    std::vector<float> values(n);
    for (float& v : values)
      v = norm ? (gemma ? 0.0f : 1.0f) + 0.1f * normal(rng) : scale * normal(rng);
    const std::size_t start = data.size();
    if (bf16) {
      for (float v : values) {
        std::uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        const auto half = static_cast<std::uint16_t>(bits >> 16);
        data.append(reinterpret_cast<const char*>(&half), sizeof half);
      }
    } else {
      data.append(reinterpret_cast<const char*>(values.data()), n * sizeof(float));
    }
    header[name] = {
        {"dtype", bf16 ? "BF16" : "F32"}, {"shape", shape}, {"data_offsets", {start, data.size()}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(dir / "model.safetensors", std::ios::binary);
  const std::uint64_t size = text.size();
  out.write(reinterpret_cast<const char*>(&size), 8);
  out << text << data;
  std::ofstream(dir / "config.json") << config.dump(2);
  std::ofstream(dir / "tokenizer.json") << byte_level_tokenizer(config.at("vocab_size")).dump();
}

// A Qwen3-shaped config: 3 layers, 8 query heads on 2 K/V heads, head_dim 8
// (not hidden / heads), q/k norm.
inline nlohmann::json tiny_qwen3_config() {
  return {{"model_type", "qwen3"},       {"vocab_size", 300},
          {"hidden_size", 48},           {"intermediate_size", 64},
          {"num_hidden_layers", 3},      {"num_attention_heads", 8},
          {"num_key_value_heads", 2},    {"head_dim", 8},
          {"rms_norm_eps", 1e-6},        {"rope_theta", 1000000.0},
          {"tie_word_embeddings", true}, {"max_position_embeddings", 256}};
}

// A Gemma 3-shaped config: 3 layers (two sliding with W = 4, the last
// full), 4 heads on 1 K/V head, query_pre_attn_scalar != head_dim.
inline nlohmann::json tiny_gemma3_config() {
  return {{"model_type", "gemma3_text"},
          {"vocab_size", 300},
          {"hidden_size", 32},
          {"intermediate_size", 48},
          {"num_hidden_layers", 3},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 1},
          {"head_dim", 16},
          {"rms_norm_eps", 1e-6},
          {"rope_theta", 1000000.0},
          {"rope_local_base_freq", 10000.0},
          {"query_pre_attn_scalar", 12},
          {"sliding_window", 4},
          {"layer_types", {"sliding_attention", "sliding_attention", "full_attention"}},
          {"hidden_activation", "gelu_pytorch_tanh"},
          {"final_logit_softcapping", 30.0},
          {"max_position_embeddings", 256}};
}

}  // namespace attnscope::testing
