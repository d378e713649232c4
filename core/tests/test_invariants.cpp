// test_invariants.cpp: properties that hold for any input, checked on random
// inputs for every variant.
#include <algorithm>
#include <numeric>
#include <random>

#include "test_support.hpp"

namespace attnscope::core {
namespace {

using namespace testing;

Inputs random_inputs(int T, int d_in, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  Inputs in;
  in.embeddings.resize(T, d_in);
  for (Eigen::Index k = 0; k < in.embeddings.size(); ++k) in.embeddings.data()[k] = u(rng);
  for (int t = 0; t < T; ++t) in.tokens.push_back("tok" + std::to_string(t));
  return in;
}

Config variant_config(Variant v, double dropout = 0.0) {
  Config c;
  c.variant = v;
  c.d_out = 4;
  c.num_heads = 2;
  c.dropout = dropout;
  c.seed = 7;
  return c;
}

std::vector<const Stage*> stages_named(const Trace& t, const char* id) {
  std::vector<const Stage*> out;
  for (const auto& s : t.stages)
    if (s.id == id) out.push_back(&s);
  return out;
}

class EveryVariant : public ::testing::TestWithParam<Variant> {};
class CausalVariant : public ::testing::TestWithParam<Variant> {};
class NonCausalVariant : public ::testing::TestWithParam<Variant> {};

TEST_P(EveryVariant, WeightRowsSumToOne) {
  const Trace t = run_attention(variant_config(GetParam()), random_inputs(9, 5, 1));
  const auto weights = stages_named(t, "weights");
  ASSERT_FALSE(weights.empty());
  for (const Stage* s : weights)
    for (Eigen::Index r = 0; r < s->data().rows(); ++r) {
      EXPECT_NEAR(s->data().row(r).sum(), 1.0f, 1e-6f) << "head " << s->head << " row " << r;
      EXPECT_GE(s->data().row(r).minCoeff(), 0.0f);
    }
}

TEST_P(CausalVariant, UpperTriangleIsExactlyZero) {
  const Trace t = run_attention(variant_config(GetParam(), 0.3), random_inputs(9, 5, 2));
  for (const char* id : {"weights", "dropped_weights"})
    for (const Stage* s : stages_named(t, id))
      for (Eigen::Index i = 0; i < s->data().rows(); ++i)
        for (Eigen::Index j = i + 1; j < s->data().cols(); ++j)
          EXPECT_EQ(s->data()(i, j), 0.0f)
              << id << " head " << s->head << " (" << i << "," << j << ")";
}

TEST_P(CausalVariant, DropoutKeepsValuesScaledByOneOverOneMinusP) {
  const double p = 0.25;
  const Trace t = run_attention(variant_config(GetParam(), p), random_inputs(12, 3, 3));
  const float scale = 1.0f / static_cast<float>(1.0 - p);
  int kept = 0, dropped = 0;
  for (const Stage* mask : stages_named(t, "dropout_mask")) {
    const RowMatrix& w = stage(t, "weights", mask->head);
    const RowMatrix& d = stage(t, "dropped_weights", mask->head);
    for (Eigen::Index k = 0; k < mask->data().size(); ++k) {
      const float m = mask->data().data()[k];
      ASSERT_TRUE(m == 0.0f || m == scale) << m;
      (m == 0.0f ? dropped : kept)++;
      EXPECT_EQ(d.data()[k], w.data()[k] * m);
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(dropped, 0);
}

TEST_P(NonCausalVariant, PermutingTokensPermutesOutputs) {
  const Inputs in = random_inputs(7, 4, 4);
  std::vector<int> perm(7);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(5));
  Inputs shuffled = in;
  for (int r = 0; r < 7; ++r)
    shuffled.embeddings.row(r) = in.embeddings.row(perm[static_cast<std::size_t>(r)]);
  const Config c = variant_config(GetParam());
  const Trace t1 = run_attention(c, in);
  const RowMatrix& out = stage(t1, "context");
  const Trace t2 = run_attention(c, shuffled);
  const RowMatrix& out2 = stage(t2, "context");
  for (int r = 0; r < 7; ++r)
    for (Eigen::Index k = 0; k < out.cols(); ++k)
      EXPECT_NEAR(out2(r, k), out(perm[static_cast<std::size_t>(r)], k), 1e-5f);
}

TEST_P(EveryVariant, SameSeedGivesIdenticalTrace) {
  const Config c = variant_config(GetParam(), 0.5);
  const Inputs in = random_inputs(5, 3, 6);
  const Trace a = run_attention(c, in), b = run_attention(c, in);
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (std::size_t k = 0; k < a.stages.size(); ++k) {
    EXPECT_EQ(a.stages[k].id, b.stages[k].id);
    EXPECT_TRUE(a.stages[k].data().cwiseEqual(b.stages[k].data()).all()) << a.stages[k].id;
  }
}

std::string variant_test_name(const ::testing::TestParamInfo<Variant>& param_info) {
  return std::string(variant_id(param_info.param));
}
INSTANTIATE_TEST_SUITE_P(Variants, EveryVariant, ::testing::ValuesIn(kAllVariants),
                         variant_test_name);
INSTANTIATE_TEST_SUITE_P(Variants, CausalVariant,
                         ::testing::Values(Variant::Causal, Variant::MultiheadWrapper,
                                           Variant::Multihead),
                         variant_test_name);
INSTANTIATE_TEST_SUITE_P(Variants, NonCausalVariant,
                         ::testing::Values(Variant::Simple, Variant::SelfAttentionV1,
                                           Variant::SelfAttentionV2),
                         variant_test_name);

TEST(Dropout, EvalModeAndZeroRateLeaveWeightsUntouched) {
  for (bool training : {false, true}) {
    Config c = variant_config(Variant::Causal, training ? 0.0 : 0.5);
    c.training = training;
    const Trace t = run_attention(c, random_inputs(6, 3, 7));
    EXPECT_EQ(stage(t, "dropout_mask"), RowMatrix::Ones(6, 6));
    EXPECT_EQ(stage(t, "dropped_weights"), stage(t, "weights"));
  }
}

TEST(Dropout, RateOneDropsEverythingInTraining) {
  const Trace t = run_attention(variant_config(Variant::Causal, 1.0), random_inputs(6, 3, 8));
  EXPECT_EQ(stage(t, "dropout_mask"), RowMatrix::Zero(6, 6));
  EXPECT_EQ(stage(t, "context"), RowMatrix::Zero(6, 4));
}

TEST(Multihead, HeadsAreColumnSlicesAndConcatHoldsTheirContexts) {
  Config c = variant_config(Variant::Multihead);
  c.d_out = 6;
  c.num_heads = 3;
  const Trace t = run_attention(c, random_inputs(5, 4, 9));
  for (int h = 0; h < 3; ++h) {
    EXPECT_EQ(stage(t, "queries", h), stage(t, "queries").middleCols(2 * h, 2));
    EXPECT_EQ(stage(t, "concat").middleCols(2 * h, 2), stage(t, "context", h));
  }
  EXPECT_EQ(stage(t, "W_out").rows(), 6);
  EXPECT_EQ(stage(t, "b_out").cols(), 6);
}

TEST(Softmax, StaysFiniteForHugeScores) {
  RowMatrix s(1, 3);
  s << 1e30f, -1e30f, 1e30f;
  const RowMatrix w = softmax_rows(s);
  EXPECT_TRUE(w.allFinite());
  EXPECT_FLOAT_EQ(w(0, 0), 0.5f);
  EXPECT_FLOAT_EQ(w(0, 1), 0.0f);
}

}  // namespace
}  // namespace attnscope::core
