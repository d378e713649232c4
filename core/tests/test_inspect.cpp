// test_inspect.cpp: the inspector's breakdowns add up to the trace's cells.
#include "attnscope/analysis/inspect.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

using namespace testing;

TEST(ExplainScore, ProductsSumToTheScoreAndScaleByRootDk) {
  const Trace t = run_attention(config_for(Variant::SelfAttentionV1, 2, 123), book_inputs());
  const auto b = explain_score(t, -1, 1, 1);
  ASSERT_TRUE(b);
  ASSERT_EQ(b->products.size(), 2u);
  EXPECT_NEAR(b->products[0] + b->products[1], b->sum, 1e-6f);
  EXPECT_NEAR(b->sum, 1.8524f, kBookTolerance);  // omega_22
  EXPECT_TRUE(b->scaled);
  EXPECT_NEAR(b->sum / b->sqrt_dk, b->scaled_value, 1e-6f);
  EXPECT_FALSE(b->masked);
}

TEST(ExplainScore, SimpleAttentionUsesInputsAndNoScaling) {
  const Trace t = run_attention(Config{}, book_inputs());
  const auto b = explain_score(t, -1, 0, 1);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->query.size(), 3u);
  EXPECT_FALSE(b->scaled);
  EXPECT_NEAR(b->sum, 0.9544f, kBookTolerance);
}

TEST(ExplainScore, FutureKeysAreMarkedMaskedInCausalVariants) {
  const Trace t = run_attention(config_for(Variant::Causal, 2, 123), book_inputs());
  EXPECT_TRUE(explain_score(t, -1, 1, 3)->masked);
  EXPECT_FALSE(explain_score(t, -1, 3, 1)->masked);
  EXPECT_FALSE(explain_score(t, -1, 6, 0).has_value());
}

TEST(ExplainSoftmax, ExpsOverSumAreTheWeights) {
  Config c = config_for(Variant::Multihead, 4, 3);
  c.num_heads = 2;
  const Trace t = run_attention(c, book_inputs());
  const auto b = explain_softmax(t, 1, 4);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->exps[5], 0.0f) << "masked key";
  for (std::size_t j = 0; j < b->exps.size(); ++j)
    EXPECT_NEAR(b->exps[j] / b->sum, b->weights[j], 1e-6f) << j;
  EXPECT_EQ(b->weights[0], stage(t, "weights", 1)(4, 0));
}

TEST(ExplainContext, WeightedValueRowsSumToTheContextRow) {
  Config c = config_for(Variant::Causal, 3, 11);
  c.dropout = 0.5;
  const Trace t = run_attention(c, book_inputs());
  const auto b = explain_context(t, -1, 5);
  ASSERT_TRUE(b);
  const Eigen::RowVectorXf sum = b->weighted.colwise().sum();
  for (Eigen::Index k = 0; k < sum.size(); ++k)
    EXPECT_NEAR(sum(k), b->context[static_cast<std::size_t>(k)], 1e-6f);
  EXPECT_EQ(b->weights[0], stage(t, "dropped_weights")(5, 0)) << "uses the dropped weights";
}

}  // namespace
}  // namespace attnscope::core
