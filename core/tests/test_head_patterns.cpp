// test_head_patterns.cpp: the head pattern scores on matrices whose scores
// are known by construction, the induction sequence, and model_patterns on a
// random GPT-2 against the same scores computed here with plain loops.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "attnscope/base/stages.hpp"
#include "attnscope/model/gpt2_model.hpp"
#include "attnscope/model/head_patterns.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

constexpr int T = 6;

RowMatrix identity() { return RowMatrix::Identity(T, T); }

// Row 0 on itself, every other row on the token before it.
RowMatrix shifted_identity() {
  RowMatrix w = RowMatrix::Zero(T, T);
  w(0, 0) = 1.0f;
  for (int i = 1; i < T; ++i) w(i, i - 1) = 1.0f;
  return w;
}

// Row i spread evenly over keys 0..i.
RowMatrix uniform_causal(int n) {
  RowMatrix w = RowMatrix::Zero(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) w(i, j) = 1.0f / static_cast<float>(i + 1);
  return w;
}

TEST(HeadPatterns, IdentityIsAllSelf) {
  const HeadPatternScores s = pattern_scores(identity());
  EXPECT_DOUBLE_EQ(s.self, 1.0);
  EXPECT_DOUBLE_EQ(s.previous_token, 0.0);
  EXPECT_DOUBLE_EQ(s.first_token, 0.0);
  EXPECT_DOUBLE_EQ(s.entropy, 0.0);
  EXPECT_DOUBLE_EQ(s.entropy_normalised, 0.0);
}

TEST(HeadPatterns, ShiftedIdentityIsAllPreviousToken) {
  const HeadPatternScores s = pattern_scores(shifted_identity());
  EXPECT_DOUBLE_EQ(s.previous_token, 1.0);
  EXPECT_DOUBLE_EQ(s.self, 1.0 / T);               // row 0 only
  EXPECT_DOUBLE_EQ(s.first_token, 1.0 / (T - 1));  // row 1's previous token is token 0
  EXPECT_DOUBLE_EQ(s.entropy, 0.0);
}

TEST(HeadPatterns, UniformRowsHaveEntropyLnOfTheirKeys) {
  const HeadPatternScores s = pattern_scores(uniform_causal(T));
  double entropy = 0.0, first = 0.0, self = 0.0;
  for (int i = 0; i < T; ++i) {
    entropy += std::log(i + 1.0);
    self += 1.0 / (i + 1);
    if (i >= 1) first += 1.0 / (i + 1);
  }
  EXPECT_NEAR(s.entropy, entropy / T, 1e-6);
  EXPECT_NEAR(s.entropy_normalised, 1.0, 1e-6);
  EXPECT_NEAR(s.self, self / T, 1e-7);
  EXPECT_NEAR(s.first_token, first / (T - 1), 1e-7);
  EXPECT_NEAR(s.previous_token, first / (T - 1), 1e-7);  // W[i][i-1] = 1/(i+1) too
}

TEST(HeadPatterns, AllOnTheFirstColumnIsASink) {
  RowMatrix w = RowMatrix::Zero(T, T);
  w.col(0).setOnes();
  const HeadPatternScores s = pattern_scores(w);
  EXPECT_DOUBLE_EQ(s.first_token, 1.0);
  EXPECT_DOUBLE_EQ(s.self, 1.0 / T);
  EXPECT_DOUBLE_EQ(s.previous_token, 1.0 / (T - 1));
  EXPECT_DOUBLE_EQ(s.entropy_normalised, 0.0);
}

TEST(HeadPatterns, OneTokenAndNoTokensDoNotDivideByZero) {
  const HeadPatternScores one = pattern_scores(RowMatrix::Ones(1, 1));
  EXPECT_DOUBLE_EQ(one.self, 1.0);
  EXPECT_DOUBLE_EQ(one.previous_token, 0.0);
  EXPECT_DOUBLE_EQ(one.first_token, 0.0);
  EXPECT_DOUBLE_EQ(one.entropy, 0.0);
  EXPECT_DOUBLE_EQ(one.entropy_normalised, 0.0);
  const HeadPatternScores none = pattern_scores(RowMatrix(0, 0));
  for (double v :
       {none.self, none.previous_token, none.first_token, none.entropy, none.entropy_normalised})
    EXPECT_EQ(v, 0.0);
  EXPECT_THROW(pattern_scores(RowMatrix::Zero(2, 3)), std::invalid_argument);
}

// A head on [BOS] r r (offset 1) or r r (offset 0) that puts all of every
// second-copy row on the token after the current token's first occurrence,
// and spreads the other rows evenly.
RowMatrix perfect_induction(int n, int offset) {
  const int size = offset + 2 * n;
  RowMatrix w = uniform_causal(size);
  for (int k = 0; k < n; ++k) {
    w.row(offset + n + k).setZero();
    w(offset + n + k, offset + k + 1) = 1.0f;
  }
  return w;
}

TEST(HeadPatterns, InductionScoreReadsTheStripeAfterTheFirstCopy) {
  EXPECT_DOUBLE_EQ(induction_score(perfect_induction(5, 1), 5, 1), 1.0);
  EXPECT_DOUBLE_EQ(induction_score(perfect_induction(4, 0), 4, 0), 1.0);
  // A previous-token head is no induction head; uniform rows give the mean
  // of 1 / (query + 1) over the second copy.
  RowMatrix prev = RowMatrix::Zero(11, 11);
  prev(0, 0) = 1.0f;
  for (int i = 1; i < 11; ++i) prev(i, i - 1) = 1.0f;
  EXPECT_DOUBLE_EQ(induction_score(prev, 5, 1), 0.0);
  double uniform = 0.0;
  for (int k = 0; k < 5; ++k) uniform += 1.0 / (1 + 5 + k + 1);
  EXPECT_NEAR(induction_score(uniform_causal(11), 5, 1), uniform / 5, 1e-7);
  // Half the weight on the stripe in every row: 0.5.
  RowMatrix half = perfect_induction(5, 1);
  for (int k = 0; k < 5; ++k) {
    half(6 + k, 2 + k) = 0.5f;
    half(6 + k, 0) = 0.5f;
  }
  EXPECT_DOUBLE_EQ(induction_score(half, 5, 1), 0.5);
  EXPECT_THROW(induction_score(perfect_induction(5, 1), 5, 0), std::invalid_argument);
  EXPECT_THROW(induction_score(RowMatrix::Identity(3, 3), 1, 1), std::invalid_argument);
}

TEST(HeadPatterns, InductionIdsAreSeededDistinctAndBelowEndOfText) {
  const std::vector<int> a = induction_ids(200, 3, 50257);
  EXPECT_EQ(a, induction_ids(200, 3, 50257));
  EXPECT_NE(a, induction_ids(200, 4, 50257));
  EXPECT_NE(a, induction_ids(200, 3 + (std::uint64_t{1} << 32), 50257));
  EXPECT_EQ(std::set<int>(a.begin(), a.end()).size(), a.size());
  for (int id : a) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, kInductionBos);
  }
  for (int id : induction_ids(300, 1, 50304)) EXPECT_LT(id, kInductionBos);  // padded vocabulary
  const std::vector<int> all = induction_ids(10, 9, 10);  // every id of a 10-token vocabulary
  EXPECT_EQ(std::set<int>(all.begin(), all.end()).size(), 10u);
  EXPECT_THROW(induction_ids(11, 9, 10), std::invalid_argument);
  EXPECT_TRUE(induction_ids(0, 9, 10).empty());
}

TEST(HeadPatterns, EveryKindHasANameKeyAndExplanation) {
  std::set<std::string_view> keys;
  for (PatternKind k : kPatternKinds) {
    EXPECT_FALSE(pattern_name(k).empty());
    EXPECT_FALSE(pattern_explanation(k).empty());
    keys.insert(pattern_key(k));
  }
  EXPECT_EQ(keys, (std::set<std::string_view>{"previous_token", "first_token", "self", "entropy",
                                              "entropy_normalised", "induction"}));
}

TEST(ModelPatterns, AgreeWithPlainLoopsOverTheRunsWeights) {
  const auto model = random_gpt2(testing::tiny_gpt2_config(40), 11);
  std::vector<int> ids;
  for (int i = 0; i < 17; ++i) ids.push_back((7919 * i + 13) % 50000);
  ModelRun run(model, ids);
  // 30 asked, capped to (40 - 1) / 2 = 19 so that [BOS] r r fits 40 positions.
  const ModelPatterns p = model_patterns(run, model, 30, 5);
  ASSERT_EQ(p.layers, 2);
  ASSERT_EQ(p.heads, 3);
  ASSERT_EQ(p.scores.size(), 6u);
  ASSERT_EQ(p.induction.size(), 6u);
  EXPECT_EQ(p.induction_n, 19);
  EXPECT_EQ(p.induction_offset, 1);
  const std::vector<int> r = induction_ids(19, 5, 50257);
  std::vector<int> sequence{50256};
  for (int pass = 0; pass < 2; ++pass) sequence.insert(sequence.end(), r.begin(), r.end());
  EXPECT_EQ(p.induction_sequence, sequence);
  ModelRun repeated(model, sequence);
  const int t = run.num_tokens(), n = 19;
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < 3; ++h) {
      const RowMatrix& w = *run.stage({l, h, stage_id::weights});
      double prev = 0, first = 0, self = 0, entropy = 0, normalised = 0;
      for (int i = 0; i < t; ++i) {
        double row = 0;
        for (int j = 0; j <= i; ++j) row -= w(i, j) * std::log(static_cast<double>(w(i, j)));
        entropy += row;
        self += w(i, i);
        if (i > 0) {
          prev += w(i, i - 1);
          first += w(i, 0);
          normalised += row / std::log(i + 1.0);
        }
      }
      const HeadPatternScores& s = p.scores[static_cast<std::size_t>(l * 3 + h)];
      EXPECT_NEAR(s.previous_token, prev / (t - 1), 1e-9);
      EXPECT_NEAR(s.first_token, first / (t - 1), 1e-9);
      EXPECT_NEAR(s.self, self / t, 1e-9);
      EXPECT_NEAR(s.entropy, entropy / t, 1e-6);
      EXPECT_NEAR(s.entropy_normalised, normalised / (t - 1), 1e-6);
      // Near-uniform rows of a random model: well spread, far from 0.
      EXPECT_GT(s.entropy_normalised, 0.5);
      const RowMatrix& wr = *repeated.stage({l, h, stage_id::weights});
      double induction = 0;
      for (int k = 0; k < n; ++k) induction += wr(1 + n + k, 1 + k + 1);
      EXPECT_NEAR(p.induction[static_cast<std::size_t>(l * 3 + h)], induction / n, 1e-9);
    }
  }
  const auto json = nlohmann::json::parse(model_patterns_json(p, "tiny"));
  EXPECT_EQ(json["model"], "tiny");
  EXPECT_EQ(json["layers"], 2);
  EXPECT_EQ(json["induction_n"], 19);
  EXPECT_EQ(json["induction_ids"].get<std::vector<int>>(), sequence);
  ASSERT_EQ(json["scores"].size(), 6u);
  EXPECT_EQ(json["scores"][4]["layer"], 1);
  EXPECT_EQ(json["scores"][4]["head"], 1);
  EXPECT_DOUBLE_EQ(json["scores"][4]["self"].get<double>(), p.scores[4].self);
  EXPECT_DOUBLE_EQ(json["scores"][4]["induction"].get<double>(), p.induction[4]);
  EXPECT_EQ(json["explanations"].size(), 6u);
}

TEST(ModelPatterns, RefuseAnotherModelsRunAndTooShortASequence) {
  const auto model = random_gpt2(testing::tiny_gpt2_config(40), 11);
  const auto other = random_gpt2(testing::tiny_gpt2_config(40), 12);
  ModelRun run(model, {1, 2, 3});
  EXPECT_THROW(model_patterns(run, other, 10, 1), std::invalid_argument);
  EXPECT_THROW(model_patterns(run, model, 1, 1), std::invalid_argument);
  Gpt2Config short_config = testing::tiny_gpt2_config(40);
  short_config.n_positions = 4;  // [BOS] + 2 x 1: no room for 2 tokens twice
  const auto short_model = random_gpt2(short_config, 1);
  ModelRun short_run(short_model, {1, 2});
  EXPECT_THROW(model_patterns(short_run, short_model, 10, 1), std::invalid_argument);
}

}  // namespace
}  // namespace attnscope::core
