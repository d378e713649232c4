// test_family_model.cpp: the Llama/Mistral/Qwen/Gemma 3 path.
//   FamilyConfig   config.json parsing and its refusals (no files)
//   FamilyLoad     safetensors written here: a missing or misshapen tensor
//   FamilyOracle   tiny checkpoints of every family against plain PyTorch
//                  (family_oracle.py, run into ATTNSCOPE_FAMILY_FIXTURES by
//                  the family_fixtures test; skipped without python3-torch)
//   FamilySpeed    a random SmolLM2-135M-shaped model at T = 512
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "attnscope/attention/modern.hpp"
#include "attnscope/model/family_config.hpp"
#include "attnscope/model/family_model.hpp"
#include "model/family_internal.hpp"
#include "temp_dir.hpp"

namespace attnscope::core {
namespace {

using json = nlohmann::json;

json tiny(const std::string& model_type) {
  return {{"model_type", model_type}, {"vocab_size", 300},      {"hidden_size", 64},
          {"intermediate_size", 96},  {"num_hidden_layers", 2}, {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"rms_norm_eps", 1e-5},   {"rope_theta", 10000.0}};
}

// The ParseError's message for `doc`, or "" when it parses.
std::string refusal(const json& doc) {
  try {
    parse_family_config(doc.dump(), "config.json");
  } catch (const ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(FamilyConfig, ReadsLlamaWithLlama3Scaling) {
  json doc = tiny("llama");
  doc["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", 32.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192}};
  doc["tie_word_embeddings"] = true;
  const FamilyConfig c = parse_family_config(doc.dump(), "config.json");
  EXPECT_EQ(c.family, ModelFamily::Llama);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.kv_groups(), 2);
  EXPECT_TRUE(c.rope_scaling.enabled);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 32.0);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.q_bias);
  EXPECT_DOUBLE_EQ(c.query_scale, 0.25);
  EXPECT_EQ(c.sliding, std::vector<bool>({false, false}));
}

TEST(FamilyConfig, QwenBiasesAndUnusedWindow) {
  json doc = tiny("qwen2");
  doc["use_sliding_window"] = false;
  doc["sliding_window"] = 32768;
  const FamilyConfig c = parse_family_config(doc.dump(), "config.json");
  EXPECT_TRUE(c.q_bias && c.k_bias && c.v_bias);
  EXPECT_FALSE(c.o_bias);
  EXPECT_EQ(c.sliding, std::vector<bool>({false, false}));
  doc["use_sliding_window"] = true;
  EXPECT_NE(refusal(doc).find("use_sliding_window"), std::string::npos);
}

TEST(FamilyConfig, Qwen3HeadDimAndQkNorm) {
  json doc = tiny("qwen3");
  doc["head_dim"] = 32;
  const FamilyConfig c = parse_family_config(doc.dump(), "config.json");
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.q_width(), 128);
  EXPECT_EQ(c.kv_width(), 64);
}

TEST(FamilyConfig, GemmaLayersSlideByPatternOrList) {
  json doc = tiny("gemma3_text");
  doc["num_hidden_layers"] = 7;
  doc["head_dim"] = 16;
  doc["query_pre_attn_scalar"] = 64;
  doc["sliding_window"] = 512;
  doc["sliding_window_pattern"] = 3;
  FamilyConfig c = parse_family_config(doc.dump(), "config.json");
  EXPECT_TRUE(c.gemma && c.qk_norm && c.tie_word_embeddings);
  EXPECT_EQ(c.activation, FamilyActivation::GeluTanh);
  EXPECT_EQ(c.sliding, std::vector<bool>({true, true, false, true, true, false, true}));
  EXPECT_DOUBLE_EQ(c.query_scale, 0.125);
  EXPECT_EQ(c.sliding_window, 512);
  doc["num_hidden_layers"] = 2;
  doc["layer_types"] = {"full_attention", "sliding_attention"};
  c = parse_family_config(doc.dump(), "config.json");
  EXPECT_EQ(c.sliding, std::vector<bool>({false, true}));
  doc["layer_types"] = {"full_attention", "chunked_attention"};
  EXPECT_NE(refusal(doc).find("chunked_attention"), std::string::npos);
}

TEST(FamilyConfig, MistralSlidesEveryLayer) {
  json doc = tiny("mistral");
  doc["sliding_window"] = 4096;
  EXPECT_EQ(parse_family_config(doc.dump(), "c").sliding, std::vector<bool>({true, true}));
  doc["sliding_window"] = nullptr;
  EXPECT_EQ(parse_family_config(doc.dump(), "c").sliding, std::vector<bool>({false, false}));
}

TEST(FamilyConfig, RefusesMixturesOfExperts) {
  json doc = tiny("qwen3");
  doc["num_experts"] = 128;
  const std::string e = refusal(doc);
  EXPECT_NE(e.find("\"num_experts\""), std::string::npos) << e;
  EXPECT_NE(e.find("llama, mistral, qwen2, qwen3, gemma3_text"), std::string::npos) << e;
  json mixtral = tiny("mistral");
  mixtral["num_local_experts"] = 8;
  EXPECT_NE(refusal(mixtral).find("num_local_experts"), std::string::npos);
  json qwen = tiny("qwen2");
  qwen["num_experts"] = 0;  // a dense model's "no experts"
  EXPECT_EQ(refusal(qwen), "");
}

TEST(FamilyConfig, RefusesVisionTowers) {
  json doc = tiny("gemma3_text");
  doc["vision_config"] = json::object();
  EXPECT_NE(refusal(doc).find("\"vision_config\""), std::string::npos);
}

TEST(FamilyConfig, RefusesUnknownRopeScaling) {
  json doc = tiny("llama");
  doc["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  const std::string e = refusal(doc);
  EXPECT_NE(e.find("rope_scaling"), std::string::npos) << e;
  EXPECT_NE(e.find("\"yarn\""), std::string::npos) << e;
  EXPECT_NE(e.find("\"llama3\""), std::string::npos) << e;
  doc["rope_scaling"] = {{"type", "default"}};
  EXPECT_EQ(refusal(doc), "");
}

TEST(FamilyConfig, RefusesUnknownModelType) {
  const std::string e = refusal(tiny("gpt_neox"));
  EXPECT_NE(e.find("\"model_type\" \"gpt_neox\""), std::string::npos) << e;
  EXPECT_NE(e.find("llama, mistral, qwen2, qwen3, gemma3_text"), std::string::npos) << e;
  EXPECT_NE(refusal(tiny("gemma3")).find("gemma3_text"), std::string::npos);
}

TEST(FamilyConfig, RefusesBadShapesAndActivations) {
  json doc = tiny("llama");
  doc["num_key_value_heads"] = 3;
  EXPECT_NE(refusal(doc).find("num_key_value_heads"), std::string::npos);
  doc = tiny("llama");
  doc.erase("hidden_size");
  EXPECT_NE(refusal(doc).find("\"hidden_size\" is missing"), std::string::npos);
  doc = tiny("llama");
  doc["hidden_act"] = "gelu";
  EXPECT_NE(refusal(doc).find("hidden_act"), std::string::npos);
}

// Configs shaped as the Hub's small models publish them (every key a
// loader meets there, the values of the smallest model of each family).
TEST(FamilyConfig, ReadsTheHubsSmallModels) {
  const FamilyConfig smol = parse_family_config(R"({"architectures": ["LlamaForCausalLM"],
      "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 0, "eos_token_id": 0,
      "hidden_act": "silu", "hidden_size": 576, "initializer_range": 0.041,
      "intermediate_size": 1536, "max_position_embeddings": 8192, "mlp_bias": false,
      "model_type": "llama", "num_attention_heads": 9, "num_hidden_layers": 30,
      "num_key_value_heads": 3, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
      "rope_scaling": null, "rope_theta": 100000, "tie_word_embeddings": true,
      "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 49152})",
                                                "smollm2");
  EXPECT_EQ(smol.head_dim, 64);
  EXPECT_EQ(smol.kv_groups(), 3);
  const FamilyConfig llama = parse_family_config(R"({"model_type": "llama",
      "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 32,
      "num_hidden_layers": 16, "num_key_value_heads": 8, "head_dim": 64,
      "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": true,
      "vocab_size": 128256, "hidden_act": "silu", "max_position_embeddings": 131072,
      "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                       "original_max_position_embeddings": 8192, "rope_type": "llama3"}})",
                                                 "llama-3.2-1b");
  EXPECT_TRUE(llama.rope_scaling.enabled);
  EXPECT_EQ(llama.rope_scaling.original_max_position_embeddings, 8192);
  const FamilyConfig qwen2 = parse_family_config(R"({"model_type": "qwen2",
      "hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14,
      "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
      "rope_theta": 1000000.0, "sliding_window": 32768, "use_sliding_window": false,
      "max_window_layers": 21, "tie_word_embeddings": true, "vocab_size": 151936,
      "hidden_act": "silu", "rope_scaling": null})",
                                                 "qwen2.5-0.5b");
  EXPECT_EQ(qwen2.head_dim, 64);
  EXPECT_EQ(qwen2.sliding_window, 0);
  const FamilyConfig qwen3 = parse_family_config(R"({"model_type": "qwen3",
      "hidden_size": 1024, "intermediate_size": 3072, "num_attention_heads": 16,
      "num_hidden_layers": 28, "num_key_value_heads": 8, "head_dim": 128,
      "attention_bias": false, "rms_norm_eps": 1e-06, "rope_theta": 1000000,
      "sliding_window": null, "use_sliding_window": false, "max_window_layers": 28,
      "tie_word_embeddings": true, "vocab_size": 151936, "hidden_act": "silu",
      "rope_scaling": null})",
                                                 "qwen3-0.6b");
  EXPECT_EQ(qwen3.q_width(), 2048);
  const FamilyConfig gemma = parse_family_config(R"({"model_type": "gemma3_text",
      "hidden_size": 640, "intermediate_size": 2048, "num_attention_heads": 4,
      "num_hidden_layers": 18, "num_key_value_heads": 1, "head_dim": 256,
      "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
      "rope_local_base_freq": 10000.0, "rope_scaling": null, "sliding_window": 512,
      "_sliding_window_pattern": 6, "attn_logit_softcapping": null,
      "final_logit_softcapping": null, "use_bidirectional_attention": false,
      "hidden_activation": "gelu_pytorch_tanh", "vocab_size": 262144,
      "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention",
        "sliding_attention", "sliding_attention", "full_attention", "sliding_attention",
        "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
        "full_attention", "sliding_attention", "sliding_attention", "sliding_attention",
        "sliding_attention", "sliding_attention", "full_attention"]})",
                                                 "gemma-3-270m");
  EXPECT_TRUE(gemma.tie_word_embeddings);
  EXPECT_EQ(gemma.final_logit_softcapping, 0.0);
  EXPECT_DOUBLE_EQ(gemma.query_scale, 1.0 / 16.0);
  EXPECT_EQ(gemma.theta_of(0), 10000.0);
  EXPECT_EQ(gemma.theta_of(5), 1000000.0);
  json bidirectional = tiny("gemma3_text");
  bidirectional["use_bidirectional_attention"] = true;
  EXPECT_NE(refusal(bidirectional).find("use_bidirectional_attention"), std::string::npos);
}

// ---------------------------------------------------------------------------
// Files written here

void write_f32_safetensors(const std::filesystem::path& path,
                           const std::map<std::string, std::vector<std::uint64_t>>& shapes) {
  json header;
  std::string data;
  for (const auto& [name, shape] : shapes) {
    std::uint64_t n = 1;
    for (auto s : shape) n *= s;
    std::vector<float> values(n, 0.01f);
    const std::size_t start = data.size();
    data.append(reinterpret_cast<const char*>(values.data()), n * sizeof(float));
    header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {start, data.size()}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t size = text.size();
  out.write(reinterpret_cast<const char*>(&size), 8);
  out << text << data;
}

// Every tensor a tiny tied Llama has.
std::map<std::string, std::vector<std::uint64_t>> tiny_llama_tensors() {
  std::map<std::string, std::vector<std::uint64_t>> t;
  t["model.embed_tokens.weight"] = {300, 64};
  t["model.norm.weight"] = {64};
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t[p + "input_layernorm.weight"] = {64};
    t[p + "post_attention_layernorm.weight"] = {64};
    t[p + "self_attn.q_proj.weight"] = {64, 64};
    t[p + "self_attn.k_proj.weight"] = {32, 64};
    t[p + "self_attn.v_proj.weight"] = {32, 64};
    t[p + "self_attn.o_proj.weight"] = {64, 64};
    t[p + "mlp.gate_proj.weight"] = {96, 64};
    t[p + "mlp.up_proj.weight"] = {96, 64};
    t[p + "mlp.down_proj.weight"] = {64, 96};
  }
  return t;
}

std::string load_error(const std::filesystem::path& folder) {
  try {
    FamilyModel::load(folder);
  } catch (const ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(FamilyLoad, LoadsATinyTiedLlamaAndRuns) {
  testing::TempDir dir;
  json cfg = tiny("llama");
  cfg["tie_word_embeddings"] = true;
  testing::write_text(dir / "config.json", cfg.dump());
  write_f32_safetensors(dir / "model.safetensors", tiny_llama_tensors());
  const auto model = FamilyModel::load(dir.path());
  FamilyRun run(model, {1, 2, 3});
  EXPECT_EQ(run.logits().rows(), 1);
  EXPECT_EQ(run.logits().cols(), 300);
  EXPECT_TRUE(run.logits().allFinite());
  EXPECT_EQ(run.layer_weights(1).size(), 4u);
  EXPECT_EQ(run.kv_group(3), 1);
  EXPECT_THROW(FamilyRun(model, {300}), std::invalid_argument);
  EXPECT_THROW(FamilyRun(model, {}), std::invalid_argument);
}

// Every tensor of `shapes` with random values that BF16 holds exactly,
// written as F32 or as BF16: the same numbers in two dtypes.
void write_random_safetensors(const std::filesystem::path& path,
                              const std::map<std::string, std::vector<std::uint64_t>>& shapes,
                              bool bf16) {
  json header;
  std::string data;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.2f);
  for (const auto& [name, shape] : shapes) {
    std::uint64_t n = 1;
    for (auto s : shape) n *= s;
    const bool gain = shape.size() == 1;  // a norm's: near 1
    const std::size_t start = data.size();
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint16_t bits = gemm::float_to_bf16_bits((gain ? 1.0f : 0.0f) + normal(rng));
      if (bf16) {
        data.append(reinterpret_cast<const char*>(&bits), 2);
      } else {
        const float f = gemm::bf16_to_float(bits);
        data.append(reinterpret_cast<const char*>(&f), 4);
      }
    }
    header[name] = {
        {"dtype", bf16 ? "BF16" : "F32"}, {"shape", shape}, {"data_offsets", {start, data.size()}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t size = text.size();
  out.write(reinterpret_cast<const char*>(&size), 8);
  out << text << data;
}

TEST(FamilyLoad, Bf16WeightsStayHalfTheBytesAndGiveTheWidenedNumbers) {
  // Untied (an lm_head of its own), with q/k norm: every kind of tensor.
  json cfg = tiny("qwen3");
  cfg["tie_word_embeddings"] = false;
  cfg["head_dim"] = 16;
  auto tensors = tiny_llama_tensors();
  tensors["lm_head.weight"] = {300, 64};
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".self_attn.";
    tensors[p + "q_norm.weight"] = {16};
    tensors[p + "k_norm.weight"] = {16};
  }
  testing::TempDir f32_dir, bf16_dir;
  for (const auto* dir : {&f32_dir, &bf16_dir}) {
    testing::write_text(*dir / "config.json", cfg.dump());
    write_random_safetensors(*dir / "model.safetensors", tensors, dir == &bf16_dir);
  }
  const auto f32 = FamilyModel::load(f32_dir.path());
  const auto bf16 = FamilyModel::load(bf16_dir.path());
  const double ratio =
      static_cast<double>(bf16->weight_bytes()) / static_cast<double>(f32->weight_bytes());
  std::printf("FamilyLoad: weights in memory: F32 file %zu bytes, BF16 file %zu (%.3f)\n",
              f32->weight_bytes(), bf16->weight_bytes(), ratio);
  EXPECT_GT(ratio, 0.45);  // half, plus the norms and biases held in float32
  EXPECT_LT(ratio, 0.56);
  std::vector<int> ids(40);
  for (int i = 0; i < 40; ++i) ids[static_cast<std::size_t>(i)] = (i * 37 + 5) % 300;
  for (const bool all : {false, true}) {
    const FamilyRun a(f32, ids, {.all_logits = all}), b(bf16, ids, {.all_logits = all});
    for (int l = 0; l <= a.num_layers(); ++l)
      EXPECT_EQ(a.residual(l), b.residual(l)) << "layer " << l;  // the same bits
    EXPECT_EQ(a.logits(), b.logits());
    EXPECT_TRUE(b.logits().allFinite());
    for (int l = 0; l < a.num_layers(); ++l) {
      const auto wa = a.layer_weights(l), wb = b.layer_weights(l);
      for (std::size_t h = 0; h < wa.size(); ++h) EXPECT_EQ(wa[h], wb[h]) << l << " " << h;
    }
  }
}

TEST(FamilyLoad, RefusesAMissingTensor) {
  testing::TempDir dir;
  testing::write_text(dir / "config.json", tiny("llama").dump());
  auto tensors = tiny_llama_tensors();
  tensors.erase("model.layers.1.mlp.up_proj.weight");
  write_f32_safetensors(dir / "model.safetensors", tensors);
  const std::string e = load_error(dir.path());
  EXPECT_NE(e.find("\"model.layers.1.mlp.up_proj.weight\" is missing"), std::string::npos) << e;
  EXPECT_NE(e.find("[96, 64]"), std::string::npos) << e;
}

TEST(FamilyLoad, RefusesAMissingLmHeadWhenUntied) {
  testing::TempDir dir;
  testing::write_text(dir / "config.json", tiny("llama").dump());
  write_f32_safetensors(dir / "model.safetensors", tiny_llama_tensors());
  const std::string e = load_error(dir.path());
  EXPECT_NE(e.find("\"lm_head.weight\" is missing"), std::string::npos) << e;
}

TEST(FamilyLoad, RefusesAWrongShape) {
  testing::TempDir dir;
  json cfg = tiny("llama");
  cfg["tie_word_embeddings"] = true;
  testing::write_text(dir / "config.json", cfg.dump());
  auto tensors = tiny_llama_tensors();
  tensors["model.layers.0.self_attn.k_proj.weight"] = {64, 64};
  write_f32_safetensors(dir / "model.safetensors", tensors);
  const std::string e = load_error(dir.path());
  EXPECT_NE(e.find("\"model.layers.0.self_attn.k_proj.weight\" has shape [64, 64]"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("needs [32, 64]"), std::string::npos) << e;
}

TEST(FamilyLoad, RefusesMoreLayersThanTheConfigSays) {
  testing::TempDir dir;
  json cfg = tiny("llama");
  cfg["tie_word_embeddings"] = true;
  cfg["num_hidden_layers"] = 1;
  testing::write_text(dir / "config.json", cfg.dump());
  write_f32_safetensors(dir / "model.safetensors", tiny_llama_tensors());
  const std::string e = load_error(dir.path());
  EXPECT_NE(e.find("the file has 2 layers"), std::string::npos) << e;
  EXPECT_NE(e.find("num_hidden_layers 1"), std::string::npos) << e;
}

TEST(FamilyLoad, RefusesAConfigItCannotRun) {
  testing::TempDir dir;
  json cfg = tiny("llama");
  cfg["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  testing::write_text(dir / "config.json", cfg.dump());
  write_f32_safetensors(dir / "model.safetensors", tiny_llama_tensors());
  EXPECT_NE(load_error(dir.path()).find("rope_scaling"), std::string::npos);
}

TEST(FamilyRope, MatchesTheBonusClassesRopeBitForBit) {
  const detail::FamilyRope mine = detail::family_rope(16, 500000.0, nullptr, 50);
  const modern::RopeTables book = modern::compute_rope_params(16, 500000.0, 50);
  EXPECT_TRUE(testing::same_bits(mine.inv_freq, book.inv_freq));
  EXPECT_TRUE(testing::same_bits(mine.cos, book.cos));
  EXPECT_TRUE(testing::same_bits(mine.sin, book.sin));
  RowMatrix x = RowMatrix::Random(50, 16);
  const RowMatrix want = modern::apply_rope(x, book);
  detail::apply_family_rope(x, mine, 16);
  EXPECT_TRUE(testing::same_bits(x, want));
}

TEST(FamilyRope, Llama3ScalingStretchesOnlyLowFrequencies) {
  Llama3RopeScaling s;
  s.enabled = true;
  s.factor = 8.0;
  s.original_max_position_embeddings = 64;  // wavelengths above 64 stretch, below 16 stay
  const detail::FamilyRope plain = detail::family_rope(16, 500000.0, nullptr, 1);
  const detail::FamilyRope scaled = detail::family_rope(16, 500000.0, &s, 1);
  for (Eigen::Index i = 0; i < plain.inv_freq.cols(); ++i) {
    const double wavelen = 2 * M_PI / plain.inv_freq(0, i);
    const double ratio = plain.inv_freq(0, i) / scaled.inv_freq(0, i);
    if (wavelen < 16) {
      EXPECT_EQ(ratio, 1.0) << i;
    } else if (wavelen > 64) {
      EXPECT_NEAR(ratio, 8.0, 1e-5) << i;
    } else {
      EXPECT_TRUE(ratio > 1.0 && ratio < 8.0) << i;
    }
  }
}

TEST(FamilyLoad, RunsFourThousandTokensThroughASlidingWindow) {
  testing::TempDir dir;
  json cfg = tiny("mistral");
  cfg["tie_word_embeddings"] = true;
  cfg["sliding_window"] = 3;
  testing::write_text(dir / "config.json", cfg.dump());
  write_f32_safetensors(dir / "model.safetensors", tiny_llama_tensors());
  const auto model = FamilyModel::load(dir.path());
  std::vector<int> ids(FamilyRun::kMaxTokens);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(i % 300);
  FamilyRun::Options all;
  all.all_logits = true;
  const FamilyRun run(model, ids, all);
  EXPECT_EQ(run.logits().rows(), FamilyRun::kMaxTokens);
  EXPECT_TRUE(run.logits().allFinite());
  const RowMatrix w = run.head_weights(run.layer_stages(1), 2);
  EXPECT_EQ(w.row(4095).head(4093).cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_NEAR(w.row(4095).tail(3).sum(), 1.0f, 1e-6f);
  const FamilyRun last(model, std::vector<int>(ids.end() - 40, ids.end()));
  const FamilyRun tail(model, std::vector<int>(ids.end() - 40, ids.end()), all);
  // One row or all: the LM head's sums may run in another order.
  EXPECT_LE((last.logits() - tail.last_logits()).cwiseAbs().maxCoeff(),
            1e-5f * last.logits().cwiseAbs().maxCoeff());
  ids.push_back(1);
  EXPECT_THROW(FamilyRun(model, ids), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// Against PyTorch

RowMatrix unhex(const json& t) {
  const auto shape = t["shape"].get<std::vector<Eigen::Index>>();
  const std::string hex = t["hex"].get<std::string>();
  RowMatrix m(shape[0], shape.size() > 1 ? shape[1] : 1);
  std::vector<unsigned char> bytes(hex.size() / 2);
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  std::memcpy(m.data(), bytes.data(), bytes.size());
  return m;
}

// max |got - want| relative to the largest |want|; +inf for a shape mismatch.
double relative_error(const RowMatrix& got, const RowMatrix& want) {
  if (got.rows() != want.rows() || got.cols() != want.cols())
    return std::numeric_limits<double>::infinity();
  const double scale = std::max(1e-30, static_cast<double>(want.cwiseAbs().maxCoeff()));
  return static_cast<double>((got - want).cwiseAbs().maxCoeff()) / scale;
}

json oracle_cases() {
  const char* dir = std::getenv("ATTNSCOPE_FAMILY_FIXTURES");
  if (!dir) return json();
  std::ifstream in(std::filesystem::path(dir) / "family_cases.json");
  if (!in) return json();
  return json::parse(in);
}

constexpr double kTolerance = 1e-4;

TEST(FamilyOracle, LogitsWeightsAndStagesMatchPyTorch) {
  const json cases = oracle_cases();
  if (cases.is_null()) GTEST_SKIP() << "no PyTorch-written cases (ATTNSCOPE_FAMILY_FIXTURES)";
  std::map<std::string, std::shared_ptr<const FamilyModel>> models;
  double worst_logits = 0, worst_weights = 0, worst_stages = 0;
  for (const json& k : cases) {
    const std::string name =
        k["name"].get<std::string>() + " T=" + std::to_string(k["T"].get<int>());
    SCOPED_TRACE(name);
    auto& model = models[k["folder"].get<std::string>()];
    if (!model) model = FamilyModel::load(k["folder"].get<std::string>());
    FamilyRun::Options options;
    options.all_logits = true;
    const FamilyRun run(model, k["ids"].get<std::vector<int>>(), options);
    const double logits = relative_error(run.logits(), unhex(k["logits"]));
    EXPECT_LE(logits, kTolerance) << "logits";
    worst_logits = std::max(worst_logits, logits);
    EXPECT_LE(relative_error(run.last_logits(), unhex(k["logits"]).bottomRows(1)), kTolerance);
    for (int l = 0; l < run.num_layers(); ++l) {
      const auto weights = run.layer_weights(l);
      for (int h = 0; h < run.num_heads(); ++h) {
        const double e = relative_error(
            weights[static_cast<std::size_t>(h)],
            unhex(k["weights"][static_cast<std::size_t>(l)][static_cast<std::size_t>(h)]));
        EXPECT_LE(e, kTolerance) << "layer " << l << " head " << h;
        worst_weights = std::max(worst_weights, e);
      }
      const RowMatrix mask = run.window_mask(l);
      EXPECT_EQ(mask.size() != 0, k["sliding"][static_cast<std::size_t>(l)].get<bool>());
      if (mask.size()) {  // the window's zeros are the weights' zeros
        const RowMatrix outside = (mask.array() == 0.0f).cast<float>().matrix();
        EXPECT_EQ(weights[0].cwiseProduct(outside).cwiseAbs().maxCoeff(), 0.0f);
      }
    }
    const FamilyLayerStages s = run.layer_stages(0);
    const std::map<std::string, const RowMatrix*> mine = {{"queries", &s.queries},
                                                          {"keys", &s.keys},
                                                          {"values", &s.values},
                                                          {"queries_normed", &s.queries_normed},
                                                          {"keys_normed", &s.keys_normed},
                                                          {"queries_rotated", &s.queries_rotated},
                                                          {"keys_rotated", &s.keys_rotated}};
    for (const auto& [stage, want] : k["stages"].items()) {
      const double e = relative_error(*mine.at(stage), unhex(want));
      EXPECT_LE(e, kTolerance) << stage;
      worst_stages = std::max(worst_stages, e);
    }
  }
  std::printf(
      "FamilyOracle: %zu runs; worst relative error: logits %.3g, weights %.3g, "
      "stages %.3g\n",
      cases.size(), worst_logits, worst_weights, worst_stages);
}

// ---------------------------------------------------------------------------
// Speed

std::shared_ptr<const FamilyModel> random_smollm2_135m() {
  FamilyConfig c = parse_family_config(R"({"model_type": "llama", "vocab_size": 49152,
      "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
      "num_attention_heads": 9, "num_key_value_heads": 3, "rope_theta": 100000,
      "tie_word_embeddings": true})",
                                       "smollm2-135m");
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  auto random = [&](Eigen::Index r, Eigen::Index k) {
    RowMatrix m(r, k);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
    return m;
  };
  auto w = std::make_shared<FamilyModel::Weights>();
  w->config = c;
  w->embed = random(c.vocab_size, c.hidden_size);
  w->final_norm = RowMatrix::Ones(1, c.hidden_size);
  w->blocks.resize(static_cast<std::size_t>(c.num_hidden_layers));
  for (auto& b : w->blocks) {
    b.input_norm = b.post_attn_norm = RowMatrix::Ones(1, c.hidden_size);
    auto linear = [&](Eigen::Index in, Eigen::Index out) {
      const RowMatrix m = random(in, out);
      return detail::Linear::from(m.data(), in, out, RowMatrix());
    };
    b.qkv = linear(c.hidden_size, c.q_width() + 2 * c.kv_width());
    b.o = linear(c.q_width(), c.hidden_size);
    b.gate_up = linear(c.hidden_size, 2 * c.intermediate_size);
    b.down = linear(c.intermediate_size, c.hidden_size);
  }
  return std::make_shared<const FamilyModel>(std::move(w));
}

TEST(FamilySpeed, Smollm2ShapedModelAt512TokensTakesSeconds) {
  const auto model = random_smollm2_135m();
  std::vector<int> ids(512);
  for (int i = 0; i < 512; ++i) ids[static_cast<std::size_t>(i)] = (i * 7919) % 49152;
  const auto start = std::chrono::steady_clock::now();
  const FamilyRun run(model, ids);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("FamilySpeed: SmolLM2-135M shape, T = 512: %.2f s\n", seconds);
  EXPECT_TRUE(run.logits().allFinite());
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(seconds, 30.0);  // a few seconds alone; generous for a shared machine
#endif
}

}  // namespace
}  // namespace attnscope::core
