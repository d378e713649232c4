// test_fast_path.cpp: the fast forward pass against the readable reference.
// Same stages in the same order; values drawn from the RNG (parameters,
// masks) identical; computed values equal up to float32 reassociation
// (fused loops, triangular products), 1e-6 of the stage's magnitude.
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>

#include "test_support.hpp"

namespace attnscope::core {
namespace {

using testing::expect_paths_agree;

struct Case {
  Variant variant;
  int tokens, d_in, d_out, heads;
  double dropout;
  bool training, bias;
};

void expect_same_trace(const Case& c) {
  Config config;
  config.variant = c.variant;
  config.d_out = c.d_out;
  config.num_heads = c.heads;
  config.dropout = c.dropout;
  config.training = c.training;
  config.qkv_bias = c.bias;
  config.seed = static_cast<std::uint64_t>(c.tokens * 1000 + c.d_out);
  Inputs in;
  in.embeddings.resize(c.tokens, c.d_in);
  std::mt19937 rng(static_cast<unsigned>(c.tokens + c.d_in));
  std::uniform_real_distribution<float> u(-3, 3);
  for (Eigen::Index k = 0; k < in.embeddings.size(); ++k) in.embeddings.data()[k] = u(rng);
  for (int t = 0; t < c.tokens; ++t) in.tokens.push_back("t" + std::to_string(t));
  ASSERT_EQ(validate(config, in), "");

  const Trace fast = run_attention(config, in, EnginePath::Fast);
  const Trace ref = run_attention(config, in, EnginePath::Reference);
  expect_paths_agree(fast, ref);
}

TEST(FastPath, MatchesReferenceForEveryVariantAndMode) {
  const Case cases[] = {
      {Variant::SelfAttentionV1, 7, 3, 2, 1, 0.0, true, false},
      {Variant::SelfAttentionV2, 9, 5, 4, 1, 0.0, true, true},
      {Variant::Causal, 1, 1, 1, 1, 0.5, true, false},
      {Variant::Causal, 13, 4, 3, 1, 0.3, true, true},
      {Variant::Causal, 8, 4, 3, 1, 1.0, true, false},
      {Variant::Causal, 8, 4, 3, 1, 0.5, false, false},
      {Variant::MultiheadWrapper, 11, 6, 4, 3, 0.1, true, false},
      {Variant::MultiheadWrapper, 5, 2, 2, 2, 0.0, true, true},
      {Variant::Multihead, 17, 8, 12, 4, 0.2, true, true},
      {Variant::Multihead, 33, 16, 16, 8, 0.5, true, false},
      {Variant::Multihead, 6, 3, 2, 2, 0.0, false, false},
      {Variant::Multihead, 64, 32, 32, 1, 0.1, true, false},
      // Sizes where the projections' kernel has partial tiles and panels,
      // several column blocks per thread, and heads run in parallel (T >= 128).
      {Variant::Multihead, 37, 50, 100, 4, 0.1, true, true},
      {Variant::Multihead, 130, 96, 192, 3, 0.1, true, false},
      {Variant::MultiheadWrapper, 129, 40, 49, 2, 0.2, true, true},
      {Variant::Causal, 200, 64, 97, 1, 0.0, false, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(variant_id(c.variant)) + " T=" + std::to_string(c.tokens));
    expect_same_trace(c);
  }
}

// The scaling step divides by sqrt(d_k), as PyTorch does; the fast path
// multiplies by the inverse where that gives the same bits (sqrt(d_k) a power
// of two). Bit for bit against the division, both where it may multiply
// (d_k 64, 4) and where it may not (d_k 3, 32, 48).
TEST(FastPath, ScaledScoresAreTheScoresDividedByRootDkBitForBit) {
  for (const auto& [d_out, heads] : {std::pair{768, 12}, {8, 2}, {9, 3}, {64, 2}, {96, 2}}) {
    Config config;
    config.variant = Variant::Multihead;
    config.d_out = d_out;
    config.num_heads = heads;
    config.dropout = 0.0;
    Inputs in;
    in.embeddings.resize(40, 24);
    std::mt19937 rng(static_cast<unsigned>(d_out));
    std::uniform_real_distribution<float> u(-3, 3);
    for (Eigen::Index k = 0; k < in.embeddings.size(); ++k) in.embeddings.data()[k] = u(rng);
    for (int t = 0; t < 40; ++t) in.tokens.push_back("t" + std::to_string(t));
    const Trace trace = run_attention(config, in, EnginePath::Fast);
    const auto sqrt_dk = static_cast<float>(std::pow(static_cast<double>(d_out / heads), 0.5));
    for (int h = 0; h < heads; ++h) {
      // The book's order: the raw scores are masked, then divided.
      const Stage* masked = trace.find("masked_scores", h);
      const Stage* scaled = trace.find("scaled_scores", h);
      ASSERT_TRUE(masked && scaled);
      const RowMatrix divided = masked->data() / sqrt_dk;
      for (Eigen::Index k = 0; k < divided.size(); ++k)
        ASSERT_EQ(std::bit_cast<std::uint32_t>(scaled->data().data()[k]),
                  std::bit_cast<std::uint32_t>(divided.data()[k]))
            << "d_k " << d_out / heads << ", head " << h << ", element " << k;
    }
  }
}

// MultiHeadAttention on the book's inputs: d_out 4, 2 heads.
Config small_multihead() {
  Config c;
  c.variant = Variant::Multihead;
  c.d_out = 4;
  c.num_heads = 2;
  return c;
}

TEST(ParameterCache, GivesTheSameTraceAsAFreshRunAcrossEdits) {
  ParameterCache cache;
  Config c = small_multihead();
  c.dropout = 0.5;
  Inputs in = testing::book_inputs();
  auto same = [](const Trace& a, const Trace& b) {
    if (a.stages.size() != b.stages.size()) return false;
    for (std::size_t k = 0; k < a.stages.size(); ++k)
      if (!a.stages[k].data().cwiseEqual(b.stages[k].data()).all()) return false;
    return true;
  };
  EXPECT_TRUE(same(run_attention(c, in, cache), run_attention(c, in)));  // miss
  in.embeddings(2, 1) = 0.1f;                                            // edit inputs: hit
  EXPECT_TRUE(same(run_attention(c, in, cache), run_attention(c, in)));
  c.dropout = 0.2;  // dropout: hit
  EXPECT_TRUE(same(run_attention(c, in, cache), run_attention(c, in)));
  c.seed = 9;  // seed: miss
  EXPECT_TRUE(same(run_attention(c, in, cache), run_attention(c, in)));
  c.num_heads = 4;  // heads: miss
  EXPECT_TRUE(same(run_attention(c, in, cache), run_attention(c, in)));
}

TEST(ParameterCache, TracesShareOneCopyOfTheParametersAndHeadsShareTheMask) {
  ParameterCache cache;
  const Config c = small_multihead();
  const Inputs in = testing::book_inputs();
  const Trace first = run_attention(c, in, cache);
  const Trace second = run_attention(c, in, cache);  // a hit: the same prepared parameters
  for (const char* id : {"W_query", "W_key", "W_value", "W_out", "b_out"})
    EXPECT_TRUE(first.find(id)->shares_data_with(*second.find(id))) << id;
  EXPECT_FALSE(first.find("context", 0)->shares_data_with(*second.find("context", 0)));
  EXPECT_TRUE(first.find("mask", 0)->shares_data_with(*first.find("mask", 1)));
  EXPECT_FALSE(first.find("mask", 0)->shares_data_with(*second.find("mask", 0)));  // one per run

  // Writing through one stage leaves every other holder as it was.
  Trace edited = second;
  const float before = first.find("W_query")->data()(0, 0);
  edited.stages[1].mutable_data()(0, 0) = before + 1.0f;
  ASSERT_EQ(edited.stages[1].id, "W_query");
  EXPECT_EQ(edited.find("W_query")->data()(0, 0), before + 1.0f);
  EXPECT_EQ(first.find("W_query")->data()(0, 0), before);
  EXPECT_EQ(second.find("W_query")->data()(0, 0), before);
  TorchGenerator gen(0);
  EXPECT_EQ(cache.get(c, 3, gen).qkv.front().query.weight(0, 0), before);
}

}  // namespace
}  // namespace attnscope::core
