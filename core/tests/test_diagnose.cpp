// test_diagnose.cpp: find_nonfinite names the first stage with a NaN or an
// unexpected infinity, the cell, the cause, and advice that actually works.
#include <cmath>
#include <limits>

#include "attnscope/analysis/diagnose.hpp"
#include "attnscope/io/weights.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

using testing::book_inputs;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Config config_of(Variant v, double dropout = 0.0) {
  Config c;
  c.variant = v;
  c.d_out = 4;
  c.num_heads = 2;
  c.dropout = dropout;
  c.seed = 123;
  return c;
}

Inputs book_times(float factor) {
  Inputs in = book_inputs();
  in.embeddings *= factor;
  return in;
}

// The number after "below about " in the advice.
double advised_limit(const NonFiniteFinding& f) {
  const std::string key = "below about ";
  const auto at = f.advice.find(key);
  if (at == std::string::npos) return std::nan("");
  return std::stod(f.advice.substr(at + key.size()));
}

TEST(Diagnose, OrdinaryRunsOfEveryVariantHaveNothingToReport) {
  for (Variant v : kAllVariants) {
    const Trace t = run_attention(config_of(v, 0.5), book_inputs());
    EXPECT_FALSE(find_nonfinite(t).has_value()) << variant_id(v);
  }
}

TEST(Diagnose, TheCausalMaskIsExpectedButOtherInfinitiesAreNot) {
  const Trace t = run_attention(config_of(Variant::Causal), book_inputs());
  const Stage* masked = t.find("masked_scores");
  ASSERT_NE(masked, nullptr);
  ASSERT_TRUE(std::isinf(masked->data()(0, 1)));
  EXPECT_TRUE(nonfinite_expected(Variant::Causal, *masked, 0, 1));
  EXPECT_FALSE(nonfinite_expected(Variant::Causal, *masked, 1, 0));  // below the diagonal
  // The book scales after masking: the scaled scores keep the mask's -inf.
  const Stage* scaled = t.find("scaled_scores");
  ASSERT_NE(scaled, nullptr);
  ASSERT_TRUE(std::isinf(scaled->data()(0, 1)));
  EXPECT_TRUE(nonfinite_expected(Variant::Causal, *scaled, 0, 1));
  EXPECT_FALSE(nonfinite_expected(Variant::SelfAttentionV2, *scaled, 0, 1));
  EXPECT_FALSE(find_nonfinite(t).has_value());

  // -inf on the diagonal, NaN or +inf above it: reported.
  for (auto [r, c, v] : {std::tuple{2, 2, -kInf}, std::tuple{0, 3, kNaN}, std::tuple{1, 5, kInf}}) {
    Trace bad = t;
    for (Stage& s : bad.stages)
      if (s.id == "masked_scores") s.mutable_data()(r, c) = v;
    const auto f = find_nonfinite(bad);
    ASSERT_TRUE(f.has_value()) << r << "," << c;
    EXPECT_EQ(f->stage, "masked_scores");
    EXPECT_EQ(f->row, r);
    EXPECT_EQ(f->col, c);
    EXPECT_EQ(f->cells, 1);
  }
  // The same -inf in a stage that is not masked (the raw scores) is reported.
  Trace bad = t;
  for (Stage& s : bad.stages)
    if (s.id == "scores") s.mutable_data()(0, 1) = -kInf;
  const auto f = find_nonfinite(bad);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->stage, "scores");
  EXPECT_FALSE(nonfinite_expected(Variant::Causal, *bad.find("scores"), 0, 1));
}

// Simplified attention on the book's tokens times 1e30: X.X^T overflows in
// every cell, the softmax makes NaN, the context inherits it.
TEST(Diagnose, SimpleScoresOverflowNamesTheCellTheMagnitudesAndASafeLimit) {
  const Trace t = run_attention(config_of(Variant::Simple), book_times(1e30f));
  const auto f = find_nonfinite(t);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->stage, "scores");
  EXPECT_EQ(f->head, -1);
  EXPECT_EQ(f->row, 0);
  EXPECT_EQ(f->col, 0);
  EXPECT_EQ(f->value, kInf);
  EXPECT_EQ(f->cells, 36);
  EXPECT_EQ(f->later_stages, 2);  // weights and context
  EXPECT_EQ(f->where, "scores, row 0 ('Your'), column 0 ('Your')");
  EXPECT_TRUE(contains(f->cause, "X·Xᵀ overflowed float32's range")) << f->cause;
  EXPECT_TRUE(contains(f->cause, "|x| = 8.9e29")) << f->cause;  // book's largest 0.89
  // sqrt(3.4e38 / d_in) = 1.06e19 is where d_in x^2 reaches float32's maximum.
  EXPECT_EQ(f->advice, "Keep embedding values below about 1e19");
  const std::string m = f->message();
  EXPECT_TRUE(contains(m, "+inf in scores, row 0 ('Your'), column 0 ('Your') (and 35 more cells"))
      << m;
  EXPECT_TRUE(contains(m, "2 later stages inherit non-finite values from it.")) << m;
}

// For every variant and several overflowing scales, the reported stage is
// the first with an unexpected non-finite value, and scaling the embeddings
// down to the advised limit removes every NaN and inf.
TEST(Diagnose, FollowingTheAdviceMakesEveryVariantFinite) {
  for (Variant v : kAllVariants)
    for (float factor : {3.4e38f, 1e30f, 1e21f}) {
      SCOPED_TRACE(std::string(variant_id(v)) + " x" + std::to_string(factor));
      const Inputs in = book_times(factor);
      const Config c = config_of(v, 0.5);
      const auto f = find_nonfinite(run_attention(c, in));
      ASSERT_TRUE(f.has_value());
      EXPECT_TRUE(contains(f->cause, "overflowed")) << f->cause;
      const double limit = advised_limit(*f);
      ASSERT_TRUE(limit > 0 && std::isfinite(limit)) << f->advice;
      Inputs fixed = in;
      fixed.embeddings *= static_cast<float>(limit / fixed.embeddings.cwiseAbs().maxCoeff());
      EXPECT_FALSE(find_nonfinite(run_attention(c, fixed)).has_value())
          << "advice was: " << f->advice;
    }
}

// The wrapper's heads own their weights: huge weights in head 1 only make
// head 1's scores overflow; the advice mentions the (imported) weights.
TEST(Diagnose, OneHeadOfTheWrapperWithHugeImportedWeights) {
  Config c = config_of(Variant::MultiheadWrapper);
  const Inputs in = book_inputs();
  TorchGenerator gen(c.seed);
  Parameters p = init_parameters(c, 3, gen);
  p.qkv[1].query.weight.setConstant(1e30f);
  p.qkv[1].key.weight.setConstant(1e30f);
  const auto f = find_nonfinite(run_with_explicit_parameters(c, in, p));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->stage, "scores");
  EXPECT_EQ(f->head, 1);
  EXPECT_TRUE(contains(f->where, "scores (head 1), row 0 ('Your')")) << f->where;
  EXPECT_TRUE(contains(f->cause, "Q·Kᵀ")) << f->cause;
  EXPECT_TRUE(contains(f->advice, "or use smaller weights")) << f->advice;
}

// A projection overflows first when the weights are huge enough on their own.
TEST(Diagnose, ProjectionOverflowNamesTheWeightMatrix) {
  Config c = config_of(Variant::SelfAttentionV2);
  TorchGenerator gen(c.seed);
  Parameters p = init_parameters(c, 3, gen);
  p.qkv[0].key.weight.setConstant(3e38f);
  const auto f = find_nonfinite(run_with_explicit_parameters(c, book_inputs(), p));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->stage, "keys");
  EXPECT_TRUE(contains(f->cause, "X·W_key overflowed")) << f->cause;
  EXPECT_TRUE(contains(f->cause, "|w| = 3e38")) << f->cause;
}

// Scores of zero (uniform weights), values of 3e38: the softmax is fine, but
// dropout doubles the kept weights and weights.V leaves float32's range.
TEST(Diagnose, ContextOverflowMentionsTheDropoutScale) {
  Config c = config_of(Variant::Causal, 0.5);
  c.d_out = 2;
  Inputs in;
  in.embeddings = RowMatrix::Ones(6, 1);
  for (int t = 0; t < 6; ++t) in.tokens.push_back("t" + std::to_string(t));
  TorchGenerator gen(c.seed);
  Parameters p = init_parameters(c, 1, gen);
  p.qkv[0].query.weight.setZero();
  p.qkv[0].key.weight.setZero();
  p.qkv[0].value.weight.setConstant(3e38f);
  const Trace t = run_with_explicit_parameters(c, in, p);
  const auto f = find_nonfinite(t);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->stage, "context");
  EXPECT_EQ(f->value, kInf);
  EXPECT_TRUE(contains(f->cause, "weights·V overflowed")) << f->cause;
  EXPECT_TRUE(contains(f->cause, "dropout scaled the kept weights up to a row sum of 2"))
      << f->cause;
}

// MultiHeadAttention's out_proj: concat.W_out overflows last of all.
TEST(Diagnose, OutputProjectionOverflow) {
  Config c = config_of(Variant::Multihead);
  TorchGenerator gen(c.seed);
  Parameters p = init_parameters(c, 3, gen);
  p.out.weight.setConstant(3e38f);
  const auto f = find_nonfinite(run_with_explicit_parameters(c, book_times(4.0f), p));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->stage, "output");
  EXPECT_TRUE(contains(f->cause, "concat·W_out + b_out overflowed")) << f->cause;
  EXPECT_EQ(f->later_stages, 0);
}

// Non-finite inputs and weights never come from the engine (validate and the
// importers refuse them), but a trace built elsewhere is still explained.
TEST(Diagnose, NonFiniteInputsOrWeightsAreNamedAsSuch) {
  Trace t = run_attention(config_of(Variant::Causal), book_inputs());
  Trace bad_inputs = t;
  bad_inputs.stages.front().mutable_data()(4, 2) = kNaN;
  auto f = find_nonfinite(bad_inputs);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->where, "inputs, row 4 ('one'), column 2 ('d2')");
  EXPECT_TRUE(contains(f->cause, "embeddings themselves")) << f->cause;

  Trace bad_weights = t;
  for (Stage& s : bad_weights.stages)
    if (s.id == "W_value") s.mutable_data()(0, 0) = -kInf;
  f = find_nonfinite(bad_weights);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->stage, "W_value");
  EXPECT_EQ(f->value, -kInf);
  EXPECT_TRUE(contains(f->message(), "-inf in W_value, row 0")) << f->message();
}

}  // namespace
}  // namespace attnscope::core
