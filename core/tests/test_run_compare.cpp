// test_run_compare.cpp: two runs of one text compared head by head, against
// the same numbers computed here with plain loops over ModelRun::stage.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "attnscope/base/stages.hpp"
#include "attnscope/model/gpt2_model.hpp"
#include "attnscope/model/run_compare.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

// 40 tokens: more than 32, where the kernel's row blocks start to split.
std::vector<int> ids_of(int n) {
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) ids.push_back((i * 977 + 13) % 50257);
  return ids;
}

TEST(RunCompare, HeadDifferenceReadsOnlyTheCellsAQuerySees) {
  RowMatrix a = RowMatrix::Zero(3, 3), b = RowMatrix::Zero(3, 3);
  // Binary fractions: every difference is exact.
  a << 1, 0, 0, 0.5f, 0.5f, 0, 0.25f, 0.25f, 0.5f;
  b << 1, 0, 0, 0.75f, 0.25f, 0, 0.25f, 0.125f, 0.625f;
  const HeadDifference d = head_difference(a, b, 4, 2);
  EXPECT_EQ(d.layer, 4);
  EXPECT_EQ(d.head, 2);
  // |Δ| over the six seen cells: 0, 0.25, 0.25, 0, 0.125, 0.125.
  EXPECT_EQ(d.mean_abs, 0.75 / 6.0);
  EXPECT_EQ(d.max_abs, 0.25f);
  EXPECT_EQ(d.max_query, 1);  // the first of the two 0.25s, row by row
  EXPECT_EQ(d.max_key, 0);
}

TEST(RunCompare, HeadDifferenceRefusesMapsOfDifferentShapes) {
  EXPECT_THROW(head_difference(RowMatrix::Zero(3, 3), RowMatrix::Zero(4, 4)),
               std::invalid_argument);
  EXPECT_THROW(head_difference(RowMatrix::Zero(3, 4), RowMatrix::Zero(3, 4)),
               std::invalid_argument);
}

TEST(RunCompare, OneModelAgainstItselfDiffersNowhere) {
  const auto model = random_gpt2(testing::tiny_gpt2_config(64), 7);
  ModelRun a(model, ids_of(40)), b(model, ids_of(40));
  const RunDifference r = compare_runs(a, b);
  ASSERT_EQ(r.per_head.size(), 6u);
  for (const HeadDifference& h : r.per_head) {
    EXPECT_EQ(h.mean_abs, 0.0);
    EXPECT_EQ(h.max_abs, 0.0f);
  }
}

TEST(RunCompare, EveryHeadMatchesLoopsOverItsStages) {
  const auto model_a = random_gpt2(testing::tiny_gpt2_config(64), 7);
  const auto model_b = random_gpt2(testing::tiny_gpt2_config(64), 8);
  ModelRun a(model_a, ids_of(40)), b(model_b, ids_of(40));
  const RunDifference r = compare_runs(a, b);
  EXPECT_EQ(r.layers, 2);
  EXPECT_EQ(r.heads, 3);
  EXPECT_EQ(r.tokens, 40);
  ASSERT_EQ(r.per_head.size(), 6u);
  for (const HeadDifference& h : r.per_head) {
    const auto map_a = a.stage({h.layer, h.head, stage_id::weights});
    const auto map_b = b.stage({h.layer, h.head, stage_id::weights});
    const RowMatrix &wa = *map_a, &wb = *map_b;
    double sum = 0.0;
    float best = 0.0f;
    for (int i = 0; i < 40; ++i)
      for (int j = 0; j < 40; ++j) {
        const float delta = std::abs(wb(i, j) - wa(i, j));
        if (j > i) {
          EXPECT_EQ(delta, 0.0f);  // masked in both
          continue;
        }
        sum += delta;
        best = std::max(best, delta);
      }
    EXPECT_NEAR(h.mean_abs, sum / (40.0 * 41.0 / 2.0), 1e-9);
    EXPECT_EQ(h.max_abs, best);
    EXPECT_GT(h.max_abs, 0.0f);  // other weights, other maps
    EXPECT_EQ(std::abs(wb(h.max_query, h.max_key) - wa(h.max_query, h.max_key)), best);
  }
  const HeadDifference& most = r.most_changed();
  for (const HeadDifference& h : r.per_head) EXPECT_LE(h.mean_abs, most.mean_abs);
}

TEST(RunCompare, ChosenLayersAndHeadsOnlyInTheirOrder) {
  const auto model_a = random_gpt2(testing::tiny_gpt2_config(64), 7);
  const auto model_b = random_gpt2(testing::tiny_gpt2_config(64), 8);
  ModelRun a(model_a, ids_of(5)), b(model_b, ids_of(5));
  const RunDifference r = compare_runs(a, b, {1}, {2, 0});
  ASSERT_EQ(r.per_head.size(), 2u);
  EXPECT_EQ(r.per_head[0].layer, 1);
  EXPECT_EQ(r.per_head[0].head, 2);
  EXPECT_EQ(r.per_head[1].head, 0);
  EXPECT_THROW(compare_runs(a, b, {2}), std::invalid_argument);
  EXPECT_THROW(compare_runs(a, b, {}, {3}), std::invalid_argument);
}

TEST(RunCompare, ModelsOfOtherShapesAreRefusedNamingBoth) {
  Gpt2Config wide = testing::tiny_gpt2_config(64);
  wide.n_layer = 3;
  wide.n_head = 4;
  EXPECT_EQ(compare_refusal(testing::tiny_gpt2_config(64), testing::tiny_gpt2_config(64), "a", "b"),
            "");
  const std::string why = compare_refusal(testing::tiny_gpt2_config(64), wide, "one", "two");
  EXPECT_NE(why.find("A (one) has 2 layers × 3 heads"), std::string::npos) << why;
  EXPECT_NE(why.find("B (two) has 3 layers × 4 heads"), std::string::npos) << why;
  ModelRun a(random_gpt2(testing::tiny_gpt2_config(64), 7), ids_of(5));
  ModelRun b(random_gpt2(wide, 8), ids_of(5));
  try {
    compare_runs(a, b);
    FAIL() << "compared models of two shapes";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("3 layers × 4 heads"), std::string::npos) << e.what();
  }
}

TEST(RunCompare, RunsOfDifferentTextsAreRefused) {
  const auto model = random_gpt2(testing::tiny_gpt2_config(64), 7);
  ModelRun a(model, ids_of(5)), b(model, ids_of(6));
  EXPECT_THROW(compare_runs(a, b), std::invalid_argument);
}

}  // namespace
}  // namespace attnscope::core
