// test_modern_attention.cpp: the bonus attention classes (attention/modern.hpp)
// and the KV-cache memory estimators (analysis/kv_memory.hpp).
//
//   ModernOracle   every stage of every case modern_oracle.py computed with the
//                  live PyTorch (the book's classes, built in the same order
//                  after the same seed), and every step of the cache; skipped
//                  without the file (ATTNSCOPE_MODERN_FIXTURES; python3-torch)
//   Modern*        PyTorch-free: refusals, invariants over a sweep of shapes
//                  (run by make test-sanitize), how the classes relate
//   KvMemory       the estimators' numbers as the book's READMEs print them
//
// Tolerances: parameters, masks and dropout masks involve no arithmetic that
// could be reordered, so they must be bit-identical. Computed stages may
// differ by float32 reassociation (Eigen's products against PyTorch's
// kernels): within 1e-5 of the stage's largest magnitude (absolute below 1),
// as the chapter-3 oracle. The RoPE tables come from powf/cosf/sinf, which
// PyTorch vectorises with SLEEF (1 ulp): within 1e-6.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attnscope/analysis/kv_memory.hpp"
#include "attnscope/attention/modern.hpp"

namespace attnscope::core {
namespace {

using modern::Kind;

// ---------------------------------------------------------------------------
// Reading the oracle's file

RowMatrix from_hex(const nlohmann::json& j) {
  const auto rows = j.at("shape").at(0).get<Eigen::Index>();
  const auto cols = j.at("shape").size() > 1 ? j.at("shape").at(1).get<Eigen::Index>() : 1;
  const auto hex = j.at("hex").get<std::string>();
  RowMatrix m(rows, cols);
  EXPECT_EQ(hex.size(), static_cast<std::size_t>(m.size()) * 8);
  for (Eigen::Index k = 0; k < m.size(); ++k) {
    std::uint8_t bytes[4];
    for (int b = 0; b < 4; ++b)
      bytes[b] = static_cast<std::uint8_t>(
          std::stoi(hex.substr(static_cast<std::size_t>(k * 8 + b * 2), 2), nullptr, 16));
    std::uint32_t bits = bytes[0] | (bytes[1] << 8) | (bytes[2] << 16) |
                         (static_cast<std::uint32_t>(bytes[3]) << 24);
    std::memcpy(m.data() + k, &bits, 4);
  }
  return m;
}

modern::Config config_of(const nlohmann::json& c) {
  static const std::map<std::string, Kind> kinds{{"gqa", Kind::GroupedQuery},
                                                 {"mha", Kind::Multihead},
                                                 {"swa", Kind::SlidingWindow},
                                                 {"mla", Kind::Latent},
                                                 {"cross", Kind::Cross}};
  modern::Config config;
  config.kind = kinds.at(c.at("kind").get<std::string>());
  config.d_out = c.at("d_out");
  config.num_heads = c.at("num_heads");
  config.num_kv_groups = c.at("num_kv_groups");
  if (!c.at("window").is_null()) config.window = c.at("window").get<int>();
  if (!c.at("latent_dim").is_null()) config.latent_dim = c.at("latent_dim").get<int>();
  config.dropout = c.at("dropout");
  config.training = c.at("training");
  config.qkv_bias = c.at("qkv_bias");
  config.seed = c.at("seed");
  config.rope = c.at("rope");
  config.rope_theta = c.at("theta");
  return config;
}

// Where the engine keeps what the oracle names `key`; null when it has none.
const RowMatrix* engine_stage(const modern::Run& r, const std::string& key) {
  static const std::map<std::string, RowMatrix modern::Head::*> per_head{
      {"q", &modern::Head::queries},
      {"q_rot", &modern::Head::queries_rotated},
      {"scores", &modern::Head::scores},
      {"mask", &modern::Head::mask},
      {"masked", &modern::Head::masked_scores},
      {"scaled", &modern::Head::scaled_scores},
      {"weights", &modern::Head::weights},
      {"dropout_mask", &modern::Head::dropout_mask},
      {"dropped", &modern::Head::dropped_weights},
      {"context", &modern::Head::context}};
  static const std::map<std::string, RowMatrix modern::KvHead::*> per_kv{
      {"k", &modern::KvHead::keys},
      {"k_rot", &modern::KvHead::keys_rotated},
      {"v", &modern::KvHead::values}};
  const std::map<std::string, const RowMatrix*> whole{{"queries_all", &r.queries},
                                                      {"keys_all", &r.keys},
                                                      {"values_all", &r.values},
                                                      {"latent", &r.latent},
                                                      {"concat", &r.concat},
                                                      {"output", &r.output},
                                                      {"cos", &r.rope.cos},
                                                      {"sin", &r.rope.sin},
                                                      {"W_query.weight", &r.params.query.weight},
                                                      {"W_query.bias", &r.params.query.bias},
                                                      {"W_key.weight", &r.params.key.weight},
                                                      {"W_key.bias", &r.params.key.bias},
                                                      {"W_value.weight", &r.params.value.weight},
                                                      {"W_value.bias", &r.params.value.bias},
                                                      {"W_DKV.weight", &r.params.down.weight},
                                                      {"W_DKV.bias", &r.params.down.bias},
                                                      {"W_UK.weight", &r.params.up_key.weight},
                                                      {"W_UK.bias", &r.params.up_key.bias},
                                                      {"W_UV.weight", &r.params.up_value.weight},
                                                      {"W_UV.bias", &r.params.up_value.bias},
                                                      {"out_proj.weight", &r.params.out.weight},
                                                      {"out_proj.bias", &r.params.out.bias}};
  if (auto it = whole.find(key); it != whole.end()) return it->second;
  const auto slash = key.find('/');
  if (slash == std::string::npos) return nullptr;
  const std::string name = key.substr(0, slash);
  const auto index = static_cast<std::size_t>(std::stoi(key.substr(slash + 1)));
  if (auto it = per_head.find(name); it != per_head.end())
    return index < r.heads.size() ? &(r.heads[index].*(it->second)) : nullptr;
  if (auto it = per_kv.find(name); it != per_kv.end())
    return index < r.kv.size() ? &(r.kv[index].*(it->second)) : nullptr;
  return nullptr;
}

bool exact_stage(const std::string& key) {
  return key.find(".weight") != std::string::npos || key.find(".bias") != std::string::npos ||
         key.rfind("mask/", 0) == 0 || key.rfind("dropout_mask/", 0) == 0;
}

// The largest |got - want| / (tol x scale) seen on a computed stage, and how
// many computed stages were bit-identical: printed after the oracle tests.
struct Worst {
  double ratio = 0.0;
  std::string where;
  int identical = 0, total = 0;
};
Worst& worst() {
  static Worst w;
  return w;
}

// Expects got == want: bit for bit when exact, else within tol of the
// largest finite |want| (absolute below 1); infinities must match.
void expect_close(const RowMatrix& got, const RowMatrix& want, bool exact, float tol,
                  const std::string& what) {
  ASSERT_EQ(got.rows(), want.rows()) << what;
  ASSERT_EQ(got.cols(), want.cols()) << what;
  float scale = 1.0f;
  for (Eigen::Index k = 0; k < want.size(); ++k)
    if (std::isfinite(want.data()[k])) scale = std::max(scale, std::abs(want.data()[k]));
  int bad = 0;
  if (!exact) {
    double ratio = 0.0;
    for (Eigen::Index k = 0; k < want.size(); ++k)
      if (std::isfinite(want.data()[k]))
        ratio = std::max(ratio, std::abs(double(got.data()[k]) - want.data()[k]) / (tol * scale));
    if (ratio > worst().ratio) worst() = {ratio, what, worst().identical, worst().total};
    worst().total += 1;
    worst().identical += std::memcmp(got.data(), want.data(), sizeof(float) * want.size()) == 0;
  }
  for (Eigen::Index k = 0; k < want.size() && bad < 3; ++k) {
    const float g = got.data()[k], w = want.data()[k];
    const bool ok = exact ? std::memcmp(&g, &w, 4) == 0
                          : (std::isinf(w) ? g == w : std::abs(g - w) <= tol * scale);
    if (!ok) {
      ADD_FAILURE() << what << " at " << k / want.cols() << "," << k % want.cols() << ": got " << g
                    << ", PyTorch " << w;
      ++bad;
    }
  }
}

class ModernOracle : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("ATTNSCOPE_MODERN_FIXTURES");
    std::ifstream in(dir ? std::string(dir) + "/modern_cases.json" : std::string());
    if (!in) GTEST_SKIP() << "no PyTorch-written cases (ATTNSCOPE_MODERN_FIXTURES; needs torch)";
    cases_ = nlohmann::json::parse(in);
  }
  void TearDown() override {
    if (worst().total > 0)
      std::printf(
          "computed stages: %d of %d bit-identical to PyTorch; worst %.3g of the tolerance (%s)\n",
          worst().identical, worst().total, worst().ratio, worst().where.c_str());
  }
  nlohmann::json cases_;
};

TEST_F(ModernOracle, EveryStageOfEveryClassEqualsTheBooksCode) {
  ASSERT_GE(cases_.size(), 30u);
  for (const auto& c : cases_) {
    const std::string name = c.at("name");
    const modern::Config config = config_of(c);
    const RowMatrix x = from_hex(c.at("x"));
    const RowMatrix memory = c.contains("memory") ? from_hex(c.at("memory")) : RowMatrix();
    ASSERT_EQ(modern::validate(config, x, &memory), "") << name;
    const modern::Run r = modern::run(config, x, memory);
    for (const auto& [key, value] : c.at("stages").items()) {
      const RowMatrix* got = engine_stage(r, key);
      ASSERT_NE(got, nullptr) << name << ": the engine keeps no " << key;
      const float tol = key == "cos" || key == "sin" ? 1e-6f : 1e-5f;
      expect_close(*got, from_hex(value), exact_stage(key), tol, name + " " + key);
    }
  }
}

TEST_F(ModernOracle, EveryCachedStepEqualsTheBooksUseCacheAndTheFullPass) {
  for (const auto& c : cases_) {
    if (!c.contains("cache")) continue;
    const std::string name = c.at("name");
    const modern::Config config = config_of(c);
    const RowMatrix x = from_hex(c.at("x"));
    const auto steps = modern::run_cached(config, x);
    ASSERT_EQ(steps.size(), c.at("cache").size()) << name;
    for (std::size_t t = 0; t < steps.size(); ++t) {
      const auto& want = c.at("cache")[t];
      const std::string at = name + " step " + std::to_string(t);
      expect_close(steps[t].output, from_hex(want.at("output")), false, 1e-5f, at + " output");
      EXPECT_LE(steps[t].max_abs_diff,
                1e-5f * std::max(1.0f, steps[t].output.cwiseAbs().maxCoeff()))
          << at;
      if (want.contains("latent")) {
        expect_close(steps[t].latent, from_hex(want.at("latent")), false, 1e-5f, at + " latent");
        continue;
      }
      ASSERT_EQ(steps[t].keys.size(), want.at("keys").size()) << at;
      for (std::size_t g = 0; g < steps[t].keys.size(); ++g) {
        expect_close(steps[t].keys[g], from_hex(want.at("keys")[g]), false, 1e-5f, at + " keys");
        expect_close(steps[t].values[g], from_hex(want.at("values")[g]), false, 1e-5f,
                     at + " values");
      }
    }
  }
}

// ---------------------------------------------------------------------------
// PyTorch-free: refusals

RowMatrix random_inputs(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
  TorchGenerator gen(seed);
  RowMatrix x(rows, cols);
  gen.fill_uniform(x, -1.0f, 1.0f);
  return x;
}

modern::Config make(Kind kind, int d_out, int heads) {
  modern::Config c;
  c.kind = kind;
  c.d_out = d_out;
  c.num_heads = heads;
  return c;
}

TEST(ModernValidate, RefusesEachBadValueWithOneSentenceSayingWhatWorks) {
  const RowMatrix x = random_inputs(6, 3, 1);
  struct Bad {
    modern::Config config;
    const char* says;
  };
  std::vector<Bad> bad;
  auto add = [&](modern::Config c, const char* says) { bad.push_back({c, says}); };
  modern::Config c = make(Kind::GroupedQuery, 8, 4);
  c.num_kv_groups = 3;
  add(c, "num_kv_groups (3) must divide num_heads (4): try 1, 2 or 4");
  c.num_kv_groups = 0;
  add(c, "num_kv_groups (0) must divide num_heads (4)");
  c = make(Kind::SlidingWindow, 4, 2);
  c.window = 0;
  add(c, "sliding_window_size (0) must be at least 1");
  c.window = -3;
  add(c, "sliding_window_size (-3) must be at least 1");
  c = make(Kind::Latent, 8, 2);
  c.latent_dim = 0;
  add(c, "latent_dim (0) must be between 1 and 4096 (the book's default for d_out 8 is 16)");
  add(make(Kind::Multihead, 6, 4),
      "d_out (6) must be divisible by num_heads (4): try num_heads "
      "1, 2, 3 or 6");
  add(make(Kind::Multihead, 4, 0), "num_heads (0) must be between 1 and 64");
  add(make(Kind::Multihead, 0, 1), "d_out (0) must be between 1 and 4096");
  c = make(Kind::Multihead, 6, 2);
  c.rope = true;
  add(c, "RoPE needs an even head_dim, but d_out 6 / num_heads 2 = 3");
  c = make(Kind::Latent, 8, 2);
  c.rope = true;
  add(c, "RoPE is not part of the book's MultiHeadLatentAttention");
  c = make(Kind::GroupedQuery, 8, 2);
  c.rope = true;
  c.rope_theta = 0.0;
  add(c, "the RoPE theta (0) must be a positive number");
  c.rope_theta = std::nan("");
  add(c, "the RoPE theta (nan) must be a positive number");
  c = make(Kind::Multihead, 4, 2);
  c.dropout = 1.5;
  add(c, "dropout (1.5) must be between 0 and 1");
  for (const Bad& b : bad) {
    const std::string msg = modern::validate(b.config, x);
    EXPECT_NE(msg.find(b.says), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(ModernValidate, RefusesMissingOrBrokenSequences) {
  const RowMatrix x = random_inputs(4, 3, 2);
  modern::Config cross = make(Kind::Cross, 4, 2);
  EXPECT_NE(modern::validate(cross, x).find("cross-attention needs a second sequence"),
            std::string::npos);
  cross.rope = true;
  const RowMatrix memory = random_inputs(2, 5, 3);
  EXPECT_NE(modern::validate(cross, x, &memory).find("turn RoPE off for cross-attention"),
            std::string::npos);
  RowMatrix broken = x;
  broken(1, 1) = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(modern::validate(make(Kind::Multihead, 4, 2), broken).find("NaN or infinity"),
            std::string::npos);
  EXPECT_NE(modern::validate(make(Kind::Multihead, 4, 2), RowMatrix(0, 3)).find("no tokens"),
            std::string::npos);
  EXPECT_EQ(modern::validate(make(Kind::Cross, 4, 2), x, &memory), "");
}

TEST(ModernValidate, RefusesCacheStepsCrossAttentionAndStepsPastTheEnd) {
  const RowMatrix x = random_inputs(4, 3, 2);
  EXPECT_EQ(modern::validate_cache(make(Kind::Latent, 8, 2), x, 3), "");
  EXPECT_NE(modern::validate_cache(make(Kind::Latent, 8, 2), x, 4)
                .find("cache step 4 is outside the sequence: give a step from 0 to 3"),
            std::string::npos);
  EXPECT_NE(modern::validate_cache(make(Kind::Multihead, 8, 2), x, -1).find("cache step -1"),
            std::string::npos);
  EXPECT_NE(modern::validate_cache(make(Kind::Cross, 4, 2), x).find("no KV cache"),
            std::string::npos);
  EXPECT_TRUE(modern::run_cached(make(Kind::Cross, 4, 2), x).empty());
  EXPECT_NE(modern::validate_cache(make(Kind::Multihead, 6, 4), x).find("d_out (6)"),
            std::string::npos);
}

// ---------------------------------------------------------------------------
// PyTorch-free: invariants over a sweep of shapes (make test-sanitize runs it)

// Checks one run: rows sum to 1, hidden keys get weight 0 and mask 1 exactly
// where the class hides them, dropout masks hold 0 or 1/(1-p), each query
// head reads K/V head h / (heads / groups), and the cache equals the full pass.
void check_run(const modern::Config& c, const RowMatrix& x, const std::string& what) {
  const modern::Run r = modern::run(c, x);
  const auto T = x.rows();
  const int groups = modern::kv_heads(c);
  ASSERT_EQ(static_cast<int>(r.kv.size()), groups) << what;
  ASSERT_EQ(static_cast<int>(r.heads.size()), c.num_heads) << what;
  const float keep_value = c.dropout >= 1.0 ? 0.0f : 1.0f / static_cast<float>(1.0 - c.dropout);
  for (int h = 0; h < c.num_heads; ++h) {
    const modern::Head& head = r.heads[static_cast<std::size_t>(h)];
    EXPECT_EQ(head.kv_head, h / (c.num_heads / groups)) << what;
    for (Eigen::Index i = 0; i < T; ++i) {
      EXPECT_NEAR(head.weights.row(i).sum(), 1.0f, 1e-5f) << what;
      for (Eigen::Index j = 0; j < T; ++j) {
        const bool hidden = j > i || (c.window && i - j >= *c.window);
        ASSERT_EQ(head.mask(i, j), hidden ? 1.0f : 0.0f) << what << " " << i << "," << j;
        if (hidden) {
          EXPECT_EQ(head.weights(i, j), 0.0f) << what;
        }
        const float d = head.dropout_mask(i, j);
        EXPECT_TRUE(d == 0.0f || d == keep_value || d == 1.0f) << what;
      }
    }
  }
  EXPECT_TRUE(r.output.allFinite()) << what;
  const auto steps = modern::run_cached(c, x);
  const float scale = std::max(1.0f, r.output.cwiseAbs().maxCoeff());
  // A module fed row by row (what bench --cache-step times) takes the same steps.
  modern::CachedModule module(c, static_cast<int>(x.cols()), static_cast<int>(T));
  for (const modern::CacheStep& s : steps) {
    const modern::CacheStep fed = module.step(x.row(s.position));
    EXPECT_EQ(fed.output, s.output) << what << " step " << s.position;
    EXPECT_EQ(fed.cache_bytes, s.cache_bytes) << what << " step " << s.position;
  }
  EXPECT_EQ(module.position(), static_cast<int>(T)) << what;
  for (const modern::CacheStep& s : steps) {
    EXPECT_LE(s.max_abs_diff, 2e-5f * scale) << what << " step " << s.position;
    if (s.position == 0 || s.position + 1 == static_cast<int>(T) || s.position == 8) {
      const modern::CacheStep alone = modern::cache_step(c, x, s.position);
      EXPECT_EQ(alone.cache_bytes, s.cache_bytes) << what;
      EXPECT_EQ(alone.first_key_position, s.first_key_position) << what;
      EXPECT_LE((alone.output - s.output).cwiseAbs().maxCoeff(), 2e-5f * scale) << what;
      EXPECT_LE(alone.max_abs_diff, 2e-5f * scale) << what;
      for (std::size_t g = 0; g < s.keys.size(); ++g)
        EXPECT_LE((alone.keys[g] - s.keys[g]).cwiseAbs().maxCoeff(), 2e-5f * scale) << what;
    }
    const auto kept = c.window ? std::min<Eigen::Index>(s.position + 1, *c.window) : s.position + 1;
    if (c.kind == Kind::Latent) {
      EXPECT_EQ(s.latent.rows(), s.position + 1) << what;
      EXPECT_EQ(s.cache_bytes, static_cast<std::size_t>(s.latent.size()) * 4) << what;
    } else {
      EXPECT_EQ(s.keys.front().rows(), kept) << what;
      EXPECT_EQ(s.first_key_position, s.position + 1 - kept) << what;
      EXPECT_EQ(s.cache_bytes,
                static_cast<std::size_t>(2 * kept * groups * modern::head_dim(c)) * 4)
          << what;
    }
  }
}

TEST(ModernSweep, InvariantsHoldForEveryClassAndShape) {
  int runs = 0;
  for (const Eigen::Index T : {1, 2, 3, 7, 8, 9, 16, 17, 31, 33, 64, 65}) {
    const RowMatrix x = random_inputs(T, 5, 100 + static_cast<std::uint64_t>(T));
    for (const int groups : {1, 2, 4}) {
      modern::Config c = make(Kind::GroupedQuery, 16, 4);
      c.num_kv_groups = groups;
      c.dropout = groups == 2 ? 0.5 : 0.0;
      c.rope = groups != 1;
      check_run(c, x, "gqa T " + std::to_string(T) + " groups " + std::to_string(groups));
      ++runs;
    }
    for (const int w : {1, 2, 5, static_cast<int>(T), static_cast<int>(T) + 1}) {
      modern::Config c = make(Kind::SlidingWindow, 8, 2);
      c.window = w;
      c.dropout = 0.1;
      c.rope = w % 2 == 0;
      check_run(c, x, "swa T " + std::to_string(T) + " window " + std::to_string(w));
      ++runs;
    }
    for (const int latent : {1, 7}) {
      modern::Config c = make(Kind::Latent, 12, 3);
      c.latent_dim = latent;
      c.qkv_bias = true;
      c.dropout = 1.0;
      check_run(c, x, "mla T " + std::to_string(T) + " latent " + std::to_string(latent));
      ++runs;
    }
  }
  EXPECT_EQ(runs, 12 * 10);
}

// ---------------------------------------------------------------------------
// PyTorch-free: how the classes relate

TEST(ModernCache, OneStepOfALongSequenceNeedsNoEarlierSteps) {
  const RowMatrix x = random_inputs(1024, 16, 11);
  modern::Config c = make(Kind::SlidingWindow, 16, 4);
  c.window = 64;
  c.rope = true;
  const modern::CacheStep step = modern::cache_step(c, x, 1000);
  EXPECT_EQ(step.keys.front().rows(), 64);
  EXPECT_EQ(step.first_key_position, 937);
  EXPECT_EQ(step.cache_bytes, 2u * 64 * 4 * 4 * 4);
  EXPECT_LE(step.max_abs_diff, 1e-5f);
  EXPECT_EQ(modern::cache_step(c, x, 1000, /*check=*/false).max_abs_diff, 0.0f);
}

TEST(ModernRelations, GroupedQueryDrawsKeyValueQueryThenOutProjWithoutBias) {
  // With as many groups as heads every nn.Linear has MultiHeadAttention's
  // shape, so the same seed draws the same matrices in another order.
  modern::Config gqa = make(Kind::GroupedQuery, 8, 4);
  gqa.num_kv_groups = 4;
  TorchGenerator g1(123), g2(123);
  const modern::Parameters a = modern::init_parameters(gqa, 5, 0, g1);
  const modern::Parameters b = modern::init_parameters(make(Kind::Multihead, 8, 4), 5, 0, g2);
  EXPECT_EQ(a.key.weight, b.query.weight);
  EXPECT_EQ(a.value.weight, b.key.weight);
  EXPECT_EQ(a.query.weight, b.value.weight);
  EXPECT_EQ(a.out.weight, b.out.weight);
  EXPECT_EQ(a.out.bias.size(), 0);
  EXPECT_EQ(b.out.bias.size(), 8);
}

TEST(ModernRelations, AWindowAsLongAsTheSequenceIsPlainCausalAttention) {
  const RowMatrix x = random_inputs(7, 4, 9);
  modern::Config swa = make(Kind::SlidingWindow, 8, 2);
  swa.dropout = 0.5;
  swa.window = 7;
  modern::Config mha = swa;
  mha.kind = Kind::Multihead;
  mha.window.reset();
  EXPECT_EQ(modern::run(swa, x).output, modern::run(mha, x).output);
  swa.window = 1;  // each token sees only itself
  const modern::Run one = modern::run(swa, x);
  EXPECT_EQ(one.heads[0].weights, RowMatrix::Identity(7, 7));
}

TEST(ModernRelations, CrossAttentionOnItselfIsMultiHeadAttentionWithoutTheMask) {
  const RowMatrix x = random_inputs(5, 3, 4);
  const modern::Run cross = modern::run(make(Kind::Cross, 4, 2), x, x);
  const modern::Run mha = modern::run(make(Kind::Multihead, 4, 2), x);
  EXPECT_EQ(cross.params.key.weight, mha.params.key.weight);
  EXPECT_EQ(cross.heads[1].scores, mha.heads[1].scores);
  EXPECT_EQ(cross.heads[1].mask.size(), 0);
  EXPECT_GT(cross.heads[1].weights(0, 4), 0.0f);  // the first query sees the last key
  const RowMatrix memory = random_inputs(9, 6, 5);
  const modern::Run other = modern::run(make(Kind::Cross, 4, 2), x, memory);
  EXPECT_EQ(other.heads[0].weights.rows(), 5);
  EXPECT_EQ(other.heads[0].weights.cols(), 9);
  EXPECT_EQ(other.params.key.weight.rows(), 6);
}

TEST(ModernRelations, LatentAttentionKeepsTheLatentAndTheBooksDefaultWidth) {
  EXPECT_EQ(modern::latent_width(make(Kind::Latent, 8, 2)), 16);
  EXPECT_EQ(modern::latent_width(make(Kind::Latent, 768, 12)), 96);
  modern::Config c = make(Kind::Latent, 8, 2);
  c.latent_dim = 3;
  const modern::Run r = modern::run(c, random_inputs(6, 4, 6));
  EXPECT_EQ(r.latent.rows(), 6);
  EXPECT_EQ(r.latent.cols(), 3);
  EXPECT_EQ(r.params.up_key.weight.rows(), 3);
  EXPECT_EQ(r.params.up_key.weight.cols(), 8);
}

// ---------------------------------------------------------------------------
// PyTorch-free: RoPE

TEST(ModernRope, TablesStartAtAngleZeroAndRepeatTheirHalves) {
  const modern::RopeTables t = modern::compute_rope_params(8, 10000.0, 5);
  EXPECT_EQ(t.inv_freq(0, 0), 1.0f);
  EXPECT_EQ(t.cos.row(0), RowMatrix::Ones(1, 8));
  EXPECT_EQ(t.sin.row(0), RowMatrix::Zero(1, 8));
  EXPECT_EQ(t.cos.leftCols(4), t.cos.rightCols(4));
  EXPECT_EQ(t.sin(1, 0), std::sin(1.0f));
  const RowMatrix x = random_inputs(5, 8, 7);
  const RowMatrix rotated = modern::apply_rope(x, t);
  EXPECT_EQ(rotated.row(0), x.row(0));  // position 0 is not rotated
  for (Eigen::Index r = 0; r < 5; ++r)  // each pair (i, i + 4) keeps its length
    for (Eigen::Index i = 0; i < 4; ++i)
      EXPECT_NEAR(std::hypot(rotated(r, i), rotated(r, i + 4)), std::hypot(x(r, i), x(r, i + 4)),
                  1e-5f);
}

TEST(ModernRope, ScoresDependOnlyOnTheDistanceBetweenPositions) {
  const RowMatrix q = random_inputs(6, 16, 8), k = random_inputs(6, 16, 9);
  EXPECT_EQ(modern::rope_shift_max_diff(q, k, 10000.0, 0), 0.0f);
  for (const int shift : {1, 2, 5, 17, 100})
    EXPECT_LT(modern::rope_shift_max_diff(q, k, 10000.0, shift), 1e-4f) << shift;
}

// ---------------------------------------------------------------------------
// KV-cache memory, as the READMEs print the estimators' output

KvModelShape readme_8b() { return *find_kv_model_preset("book-8b"); }

TEST(KvMemory, GqaReadmeExample) {  // --emb_dim 4096 --n_heads 32 --n_layers 32 --n_kv_groups 4
  const auto rows = kv_memory_table(readme_8b(), 32768, *kv_dtype_bytes("bf16"));
  EXPECT_EQ(kv_head_dim(readme_8b()), 128);
  EXPECT_EQ(rows[0].mechanism, "MHA");
  EXPECT_EQ(rows[0].bytes, 17179869184u);
  EXPECT_EQ(format_gb(rows[0].bytes), "17.18 GB");
  EXPECT_EQ(rows[1].mechanism, "GQA");
  EXPECT_EQ(format_gb(rows[1].bytes), "4.29 GB");
  EXPECT_EQ(rows[0].bytes / rows[1].bytes, 4u);  // Ratio (MHA / GQA): 4.00x
}

TEST(KvMemory, SwaReadmeExample) {  // ... --sliding_window_size 1024 --swa_ratio "5:1"
  const SwaLayerSplit split = distribute_swa_layers(32, 5, 1);
  EXPECT_EQ(split.swa, 27);
  EXPECT_EQ(split.full, 5);
  const auto rows = kv_memory_table(readme_8b(), 32768, 2);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[2].mechanism, "MHA + SWA");
  EXPECT_EQ(format_gb(rows[2].bytes), "3.14 GB");
  EXPECT_EQ(rows[3].mechanism, "GQA + SWA");
  EXPECT_EQ(format_gb(rows[3].bytes), "0.78 GB");
}

TEST(KvMemory, MlaReadmeExample) {  // --context_length 8192 --emb_dim 2048 --n_heads 24 ...
  const KvModelShape s = *find_kv_model_preset("book-mla");
  EXPECT_EQ(kv_head_dim(s), 86);  // math.ceil(2048 / 24)
  const auto rows = kv_memory_table(s, 8192, 2);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(format_gb(rows[0].bytes), "3.25 GB");
  EXPECT_EQ(format_gb(rows[1].bytes), "0.81 GB");
  EXPECT_EQ(rows[2].mechanism, "MLA");
  EXPECT_EQ(format_gb(rows[2].bytes), "0.81 GB");
  char ratio[16];
  std::snprintf(ratio, sizeof ratio, "%.2f", double(rows[0].bytes) / double(rows[2].bytes));
  EXPECT_STREQ(ratio, "4.03");  // Ratio (MHA / MLA)   : 4.03x
}

TEST(KvMemory, LayersSplitAsTheSwaEstimatorSplitsThem) {
  EXPECT_EQ(distribute_swa_layers(18, 5, 1).swa, 15);  // Gemma 3 270M's layer_types
  EXPECT_EQ(distribute_swa_layers(18, 5, 1).full, 3);
  EXPECT_EQ(distribute_swa_layers(7, 1, 0).swa, 7);
  EXPECT_EQ(distribute_swa_layers(5, 0, 1).full, 5);
  EXPECT_EQ(distribute_swa_layers(8, 5, 1).swa, 7);  // one block, then min(5, 2) more
  EXPECT_EQ(distribute_swa_layers(8, 5, 1).full, 1);
}

TEST(KvMemory, PresetsAreValidAndUseTheModelsHeadSizes) {
  ASSERT_GE(kv_model_presets().size(), 5u);
  for (const KvModelShape& s : kv_model_presets()) EXPECT_EQ(validate_kv_shape(s), "") << s.id;
  EXPECT_EQ(kv_head_dim(*find_kv_model_preset("qwen3-0.6b")), 128);
  const KvModelShape gemma = *find_kv_model_preset("gemma3-270m");
  const auto rows = kv_memory_table(gemma, 32768, 2);
  EXPECT_EQ(rows[1].bytes, 32768u * 256 * 1 * 2 * 2 * 18);
  EXPECT_EQ(rows[3].bytes, 15u * 512 * 256 * 2 * 2 + 3u * 32768 * 256 * 2 * 2);
  const KvModelShape gpt2 = *find_kv_model_preset("gpt2-124m");
  EXPECT_EQ(kv_memory_table(gpt2, 1024, 4)[0].bytes, 1024u * 768 * 2 * 4 * 12);
}

TEST(KvMemory, RefusesShapesTheEstimatorsRefuse) {
  KvModelShape s = readme_8b();
  s.n_kv_heads = 3;
  EXPECT_NE(validate_kv_shape(s).find("n_kv_heads (3) must divide n_heads (32)"),
            std::string::npos);
  s = readme_8b();
  s.dtype = "fp64";
  EXPECT_NE(validate_kv_shape(s).find("unknown dtype \"fp64\""), std::string::npos);
  s = readme_8b();
  s.swa_layers = s.full_layers = 0;
  EXPECT_NE(validate_kv_shape(s).find("ratio (0:0)"), std::string::npos);
  EXPECT_EQ(format_gb(1234567890123u), "1,234.57 GB");
}

TEST(KvMemory, EveryBookPrintIsWhatTheEstimateGivesAndOnlyItsRunMatches) {
  ASSERT_EQ(kv_book_prints().size(), 7u);
  for (const KvBookPrint& print : kv_book_prints()) {
    const KvModelShape s = *find_kv_model_preset(print.preset);
    bool found = false;
    for (const KvMemoryRow& row : kv_memory_table(s, print.context, *kv_dtype_bytes(print.dtype))) {
      if (row.mechanism != print.mechanism) continue;
      found = true;
      EXPECT_EQ(format_gb(row.bytes), print.printed) << print.preset << " " << print.mechanism;
      EXPECT_EQ(find_kv_book_print(s, print.context, print.dtype, row.mechanism), &print);
    }
    EXPECT_TRUE(found) << print.preset << " " << print.mechanism;
  }
  KvModelShape s = readme_8b();
  EXPECT_TRUE(find_kv_book_print(s, 32768, "bf16", "GQA"));
  EXPECT_FALSE(find_kv_book_print(s, 32767, "bf16", "GQA"));  // another context
  EXPECT_FALSE(find_kv_book_print(s, 32768, "fp16", "GQA"));  // another run, same bytes
  EXPECT_FALSE(find_kv_book_print(s, 32768, "bf16", "MLA"));  // a row the README has not
  s.n_kv_heads = 4;
  EXPECT_FALSE(find_kv_book_print(s, 32768, "bf16", "MHA"));  // an edited shape
  s = readme_8b();
  s.head_dim = 128;  // the same head size, given explicitly: the same estimate
  EXPECT_TRUE(find_kv_book_print(s, 32768, "bf16", "MHA"));
  s.id = "mine";
  EXPECT_FALSE(find_kv_book_print(s, 32768, "bf16", "MHA"));
}

}  // namespace
}  // namespace attnscope::core
