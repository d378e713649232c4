// test_numeric_edges.cpp: the engine at the edges of float32 and of the size
// limits, for every variant and both engine paths (EnginePath::Fast and
// ::Reference must agree, NaN for NaN and inf for inf).
//
// Covered elsewhere and not repeated here: rows summing to 1 on ordinary
// inputs and dropout's 1/(1-p) scaling (test_invariants.cpp), the fast path
// on ordinary shapes (test_fast_path.cpp), file parsers refusing oversized
// or non-finite input (test_formats.cpp, test_config_io.cpp, test_weights.cpp).
#include <cmath>
#include <limits>
#include <random>

#include "attnscope/analysis/diagnose.hpp"
#include "attnscope/io/weights.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

using testing::expect_paths_agree;
using testing::stage;

Inputs inputs_of(const RowMatrix& embeddings) {
  Inputs in;
  in.embeddings = embeddings;
  for (Eigen::Index t = 0; t < embeddings.rows(); ++t) in.tokens.push_back("t" + std::to_string(t));
  return in;
}

// T x d_in values drawn from +-[0.5, 1) times `scale` (signs and sizes vary,
// nothing is zero), so every product has a magnitude near scale^2.
RowMatrix scaled_values(int T, int d_in, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.5f, 1.0f);
  RowMatrix m(T, d_in);
  for (Eigen::Index k = 0; k < m.size(); ++k)
    m.data()[k] = (rng() % 2 ? 1.0f : -1.0f) * u(rng) * scale;
  return m;
}

Config config_of(Variant v, int d_out = 4, int heads = 2, double dropout = 0.0, bool bias = false,
                 bool training = true) {
  Config c;
  c.variant = v;
  c.d_out = d_out;
  c.num_heads = heads;
  c.dropout = dropout;
  c.qkv_bias = bias;
  c.training = training;
  c.seed = 42;
  return c;
}

// Runs both paths, checks they agree and returns the fast one.
Trace run_both(const Config& c, const Inputs& in) {
  EXPECT_EQ(validate(c, in), "");
  Trace fast = run_attention(c, in, EnginePath::Fast);
  const Trace ref = run_attention(c, in, EnginePath::Reference);
  expect_paths_agree(fast, ref);
  return fast;
}

// Rows sum to 1 within float32 rounding: the engine sums T exps in float (an
// error growing like sqrt(T) ulps), the test sums in double.
void expect_weight_rows_sum_to_one(const Trace& t) {
  for (const Stage& s : t.stages) {
    if (s.id != "weights") continue;
    ASSERT_TRUE(s.data().allFinite()) << "head " << s.head;
    const double tolerance = 1e-6 * std::max(1.0, std::sqrt(static_cast<double>(s.data().cols())));
    for (Eigen::Index r = 0; r < s.data().rows(); ++r) {
      EXPECT_NEAR(s.data().row(r).cast<double>().sum(), 1.0, tolerance)
          << "head " << s.head << " row " << r;
      EXPECT_GE(s.data().row(r).minCoeff(), 0.0f);
      EXPECT_LE(s.data().row(r).maxCoeff(), 1.0f);
    }
  }
}

// Every stage finite except the causal mask's -inf above the diagonal.
void expect_no_unexpected_nonfinite(const Trace& t) {
  for (const Stage& s : t.stages)
    for (Eigen::Index r = 0; r < s.data().rows(); ++r)
      for (Eigen::Index c = 0; c < s.data().cols(); ++c)
        if (!std::isfinite(s.data()(r, c))) {
          ASSERT_TRUE(nonfinite_expected(t.config.variant, s, r, c))
              << s.id << " head " << s.head << " (" << r << ", " << c << ") = " << s.data()(r, c);
        }
  EXPECT_FALSE(find_nonfinite(t).has_value());
}

class EdgesOfEveryVariant : public ::testing::TestWithParam<Variant> {};

// Embeddings of 1e17: scores reach ~1e35 (finite, near float32's 3.4e38).
// The softmax subtracts the row max, so exp never sees a huge argument.
TEST_P(EdgesOfEveryVariant, HugeFiniteScoresGiveFiniteWeightsThatSumToOne) {
  const Trace t =
      run_both(config_of(GetParam(), 4, 2, 0.25), inputs_of(scaled_values(7, 3, 1e17f, 1)));
  float largest = 0;
  for (const Stage& s : t.stages)
    if (s.id == "scores") largest = std::max(largest, s.data().cwiseAbs().maxCoeff());
  EXPECT_GT(largest, 1e32f) << "the scores should be huge for this test to mean anything";
  expect_weight_rows_sum_to_one(t);
  expect_no_unexpected_nonfinite(t);
}

// 1e-30 and denormal embeddings: products underflow to 0 (or to denormals),
// every score of a row is (nearly) equal and the weights are uniform.
TEST_P(EdgesOfEveryVariant, TinyAndDenormalEmbeddingsGiveUniformFiniteWeights) {
  const float denormal = std::numeric_limits<float>::denorm_min() * 1000.0f;  // ~1.4e-42
  ASSERT_LT(denormal, std::numeric_limits<float>::min());
  for (float scale : {1e-30f, denormal}) {
    SCOPED_TRACE(scale);
    for (bool bias : {false, true}) {
      const Trace t = run_both(config_of(GetParam(), 4, 2, 0.0, bias),
                               inputs_of(scaled_values(5, 3, scale, 2)));
      expect_weight_rows_sum_to_one(t);
      expect_no_unexpected_nonfinite(t);
      const bool causal = is_causal(GetParam());
      for (const Stage& s : t.stages) {
        if (s.id != "weights") continue;
        for (Eigen::Index i = 0; i < 5; ++i)
          for (Eigen::Index j = 0; j < 5; ++j) {
            const float want = causal ? (j <= i ? 1.0f / static_cast<float>(i + 1) : 0.0f) : 0.2f;
            EXPECT_NEAR(s.data()(i, j), want, 1e-6f)
                << "head " << s.head << " (" << i << "," << j << ")";
          }
      }
    }
  }
}

// Identical tokens: every score of a row is the same number, so the softmax
// is exactly uniform over the keys a query may see. Latent attention's keys
// pass through a second, 16-wide product, which Eigen blocks: its rows can
// round differently by an ulp or two, so there the scores are only nearly
// equal and the weights equal to float precision.
TEST_P(EdgesOfEveryVariant, AllEqualScoresGiveExactlyUniformWeights) {
  RowMatrix same(6, 3);
  same.rowwise() = Eigen::RowVector3f(0.3f, -1.2f, 2.5f);
  const Trace t = run_both(config_of(GetParam()), inputs_of(same));
  const bool causal = is_causal(GetParam());
  const bool exact = GetParam() != Variant::Latent;
  for (const Stage& s : t.stages) {
    if (s.id == "scores") {
      for (Eigen::Index i = 0; i < 6; ++i) {
        const float first = s.data()(i, 0);
        const float ulps = exact ? 0.0f : 4.0f * std::numeric_limits<float>::epsilon();
        EXPECT_LE((s.data().row(i).array() - first).abs().maxCoeff(), ulps * std::abs(first))
            << "head " << s.head << " row " << i;
      }
    }
    if (s.id != "weights") continue;
    for (Eigen::Index i = 0; i < 6; ++i)
      for (Eigen::Index j = 0; j < 6; ++j) {
        const float want = causal ? (j <= i ? 1.0f / static_cast<float>(i + 1) : 0.0f) : 1.0f / 6;
        EXPECT_FLOAT_EQ(s.data()(i, j), want) << "head " << s.head << " (" << i << "," << j << ")";
      }
  }
}

// The smallest module: one token, one input dimension, d_out = 1 (head_dim =
// 1), with and without bias. One token attends only to itself: weight 1.
TEST_P(EdgesOfEveryVariant, OneTokenOneDimensionOneOutput) {
  for (bool bias : {false, true}) {
    SCOPED_TRACE(bias ? "qkv_bias" : "no bias");
    RowMatrix x(1, 1);
    x << 0.75f;
    const Trace t = run_both(config_of(GetParam(), 1, 1, 0.5, bias), inputs_of(x));
    for (const Stage& s : t.stages)
      if (s.id == "weights") {
        EXPECT_EQ(s.data(), RowMatrix::Constant(1, 1, 1.0f));
      }
    expect_no_unexpected_nonfinite(t);
    const char* last =
        GetParam() == Variant::MultiheadWrapper || split_heads(GetParam()) ? "output" : "context";
    EXPECT_EQ(stage(t, last).rows(), 1);
    EXPECT_EQ(stage(t, last).cols(), 1);
  }
}

// qkv_bias with d_in = 1: nn.Linear(1, d_out) draws its bias from U(-1, 1)
// (1/sqrt(fan_in) = 1), and queries = x * W + b exactly (one product each).
TEST_P(EdgesOfEveryVariant, QkvBiasWithOneInputDimension) {
  if (!has_weights(GetParam()) || GetParam() == Variant::SelfAttentionV1) GTEST_SKIP() << "no bias";
  RowMatrix x(4, 1);
  x << 1.5f, -0.25f, 0.0f, 3.0f;
  const Trace t = run_both(config_of(GetParam(), 4, 2, 0.0, true), inputs_of(x));
  const int h = GetParam() == Variant::MultiheadWrapper ? 0 : -1;
  const RowMatrix& b = stage(t, "b_query", h);
  ASSERT_EQ(b.rows(), 1);
  ASSERT_EQ(b.cols(), 4);
  EXPECT_LE(b.cwiseAbs().maxCoeff(), 1.0f);
  EXPECT_GT(b.cwiseAbs().maxCoeff(), 0.0f);
  const RowMatrix& w = stage(t, "W_query", h);
  ASSERT_EQ(w.rows(), 1);
  const RowMatrix& q = stage(t, "queries", h);
  for (Eigen::Index r = 0; r < 4; ++r)
    for (Eigen::Index c = 0; c < 4; ++c) EXPECT_EQ(q(r, c), x(r, 0) * w(0, c) + b(0, c));
  expect_weight_rows_sum_to_one(t);
}

std::string variant_name(const ::testing::TestParamInfo<Variant>& info) {
  return std::string(variant_id(info.param));
}
INSTANTIATE_TEST_SUITE_P(Variants, EdgesOfEveryVariant, ::testing::ValuesIn(kAllVariants),
                         variant_name);

// head_dim = 1: as many heads as output columns; each head's scores are a
// product of two numbers, its scale 1/sqrt(1) = 1.
TEST(NumericEdges, MultiheadWithHeadDimOne) {
  const Config c = config_of(Variant::Multihead, 6, 6, 0.1);
  const Trace t = run_both(c, inputs_of(scaled_values(5, 4, 1.0f, 3)));
  for (int h = 0; h < 6; ++h) {
    EXPECT_EQ(stage(t, "queries", h).cols(), 1);
    EXPECT_EQ(stage(t, "scaled_scores", h), stage(t, "masked_scores", h));
  }
  expect_weight_rows_sum_to_one(t);
  expect_no_unexpected_nonfinite(t);
}

// Dropout at both ends, in training and eval mode, for every causal variant.
TEST(NumericEdges, DropoutZeroAndOneInTrainingAndEvalForEveryCausalVariant) {
  for (Variant v : {Variant::Causal, Variant::MultiheadWrapper, Variant::Multihead})
    for (double p : {0.0, 1.0})
      for (bool training : {true, false}) {
        SCOPED_TRACE(std::string(variant_id(v)) + " p=" + std::to_string(p) +
                     (training ? " training" : " eval"));
        const Trace t = run_both(config_of(v, 4, 2, p, false, training),
                                 inputs_of(scaled_values(6, 3, 1.0f, 4)));
        const bool drops_all = p == 1.0 && training;
        for (const Stage& s : t.stages) {
          if (s.id == "dropout_mask") {
            EXPECT_EQ(s.data(), drops_all ? RowMatrix::Zero(6, 6) : RowMatrix::Ones(6, 6));
          } else if (s.id == "dropped_weights") {
            EXPECT_EQ(s.data(), drops_all ? RowMatrix::Zero(6, 6) : stage(t, "weights", s.head));
          } else if (s.id == "context" && drops_all) {
            EXPECT_TRUE(s.data().isZero()) << "head " << s.head;
          }
        }
        expect_weight_rows_sum_to_one(t);
        expect_no_unexpected_nonfinite(t);
      }
}

// Eval mode ignores the dropout rate entirely: the same trace as p = 0.
TEST(NumericEdges, EvalModeIgnoresTheDropoutRate) {
  const Inputs in = inputs_of(scaled_values(5, 3, 1.0f, 5));
  for (Variant v : {Variant::Causal, Variant::MultiheadWrapper, Variant::Multihead}) {
    const Trace eval = run_both(config_of(v, 4, 2, 0.9, false, false), in);
    const Trace none = run_both(config_of(v, 4, 2, 0.0, false, true), in);
    ASSERT_EQ(eval.stages.size(), none.stages.size());
    for (std::size_t k = 0; k < eval.stages.size(); ++k)
      EXPECT_EQ(eval.stages[k].data(), none.stages[k].data())
          << variant_id(v) << " " << eval.stages[k].id;
  }
}

// ---------------------------------------------------------------------------
// Overflow: finite inputs whose products leave float32's range.

// 3e38 (just under float32's 3.4e38) and 1e30: the scores overflow to inf,
// the softmax computes inf - inf = NaN. Both paths make the same non-finite
// values, and find_nonfinite reports the first stage that has them.
TEST_P(EdgesOfEveryVariant, OverflowingEmbeddingsGiveTheSameNaNsOnBothPathsAndAreDiagnosed) {
  for (float scale : {3e38f, 1e30f}) {
    SCOPED_TRACE(scale);
    const Trace t =
        run_both(config_of(GetParam(), 4, 2, 0.5), inputs_of(scaled_values(5, 3, scale, 6)));
    const auto found = find_nonfinite(t);
    ASSERT_TRUE(found.has_value());
    // Everything before the reported stage is finite (the masked -inf aside).
    bool reached = false;
    for (const Stage& s : t.stages) {
      if (s.id == found->stage && s.head == found->head) {
        reached = true;
        EXPECT_FALSE(std::isfinite(s.data()(found->row, found->col)));
        break;
      }
      for (Eigen::Index r = 0; r < s.data().rows(); ++r)
        for (Eigen::Index c = 0; c < s.data().cols(); ++c)
          if (!std::isfinite(s.data()(r, c))) {
            ASSERT_TRUE(nonfinite_expected(t.config.variant, s, r, c)) << s.id;
          }
    }
    EXPECT_TRUE(reached) << found->stage;
    // Overflow happens in a product: a projection or the scores.
    EXPECT_TRUE(found->stage == "scores" || found->stage == "queries" || found->stage == "keys" ||
                found->stage == "values")
        << found->stage;
    EXPECT_NE(found->message().find("overflowed"), std::string::npos) << found->message();
  }
}

// A causal row whose scores overflowed is NaN in PyTorch at every key, the
// masked ones included (exp(-inf - inf) * (1 / NaN) = 0 * NaN). The fast
// path once wrote 0 above the diagonal there.
TEST(NumericEdges, AnOverflowedCausalRowIsNaNAtTheMaskedKeysToo) {
  for (Variant v : {Variant::Causal, Variant::MultiheadWrapper, Variant::Multihead}) {
    SCOPED_TRACE(variant_id(v));
    const Trace t = run_both(config_of(v, 4, 2, 0.5), inputs_of(scaled_values(5, 3, 1e30f, 9)));
    for (const Stage& s : t.stages) {
      if (s.id != "weights") continue;
      for (Eigen::Index i = 0; i < 5; ++i) {
        if (!std::isnan(s.data()(i, 0))) continue;  // this row's scores did not overflow
        for (Eigen::Index j = 0; j < 5; ++j)
          EXPECT_TRUE(std::isnan(s.data()(i, j)))
              << "head " << s.head << " (" << i << "," << j << ")";
      }
    }
  }
}

// Weights . V multiplies the zero weights above the diagonal too, and
// 0 * inf = NaN: one future token whose value overflowed makes every earlier
// context row NaN, in PyTorch and in the reference. The fast path once skipped those
// zeros and left the earlier rows finite.
TEST(NumericEdges, AnInfiniteValueOfALaterTokenReachesEveryContextRow) {
  Config c = config_of(Variant::Causal, 1, 1, 0.0);
  RowMatrix x = RowMatrix::Ones(5, 1);
  x(4, 0) = 1e38f;
  TorchGenerator gen(c.seed);
  Parameters p = init_parameters(c, 1, gen);
  p.qkv[0].query.weight.setZero();  // scores 0: uniform, finite weights
  p.qkv[0].key.weight.setZero();
  p.qkv[0].value.weight.setConstant(10.0f);  // values row 4 = 1e39 = inf
  const Inputs in = inputs_of(x);
  const Trace fast = run_with_explicit_parameters(c, in, p, EnginePath::Fast);
  const Trace ref = run_with_explicit_parameters(c, in, p, EnginePath::Reference);
  expect_paths_agree(fast, ref);
  ASSERT_TRUE(stage(fast, "weights").allFinite());
  ASSERT_TRUE(std::isinf(stage(fast, "values")(4, 0)));
  for (Eigen::Index i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(stage(fast, "context")(i, 0))) << i;
  EXPECT_EQ(stage(fast, "context")(4, 0), std::numeric_limits<float>::infinity());  // 0.2 * inf
  const auto found = find_nonfinite(fast);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->stage, "values");
  EXPECT_EQ(found->row, 4);
}

// A product that overflows on its own: x * w = 1e20 * 1e20 = 1e40. Eigen
// rounds it to inf and then adds -inf from the next term (NaN); a fused
// multiply-add chain would add the exact product and stay at inf. The fast
// path's kernel steps aside for Eigen here, so both paths give the same NaN.
TEST(NumericEdges, ProductsThatOverflowAloneGiveTheSameNaNsOnBothPaths) {
  Config c = config_of(Variant::SelfAttentionV2, 2, 1, 0.0);
  RowMatrix x(3, 2);
  x << 1e20f, -1e20f, 1e20f, 1e20f, 1.0f, 2.0f;
  TorchGenerator gen(c.seed);
  Parameters p = init_parameters(c, 2, gen);
  for (Projection* w : {&p.qkv[0].query, &p.qkv[0].key, &p.qkv[0].value})
    w->weight << 1e20f, 1.0f, 1e20f, 1.0f;  // column 0: x0 * 1e20 + x1 * 1e20
  const Inputs in = inputs_of(x);
  const Trace fast = run_with_explicit_parameters(c, in, p, EnginePath::Fast);
  const Trace ref = run_with_explicit_parameters(c, in, p, EnginePath::Reference);
  expect_paths_agree(fast, ref);
  EXPECT_TRUE(std::isnan(stage(fast, "queries")(0, 0)));  // 1e40 - 1e40: inf - inf
  EXPECT_TRUE(std::isinf(stage(fast, "queries")(1, 0)));  // 1e40 + 1e40
  EXPECT_EQ(stage(fast, "queries")(2, 1), 3.0f);
}

// ---------------------------------------------------------------------------
// Limits: validation accepts every maximum and refuses one more, with a
// message naming the value and the limit.

TEST(Limits, ValidateAcceptsEachMaximumAndRefusesOneMore) {
  const Config ok = config_of(Variant::Multihead, 64, 64);
  EXPECT_EQ(validate(ok, inputs_of(RowMatrix::Zero(kMaxTokens, 1))), "");
  EXPECT_EQ(validate(ok, inputs_of(RowMatrix::Zero(1, kMaxDim))), "");
  EXPECT_EQ(
      validate(config_of(Variant::Multihead, kMaxDim, kMaxHeads), inputs_of(RowMatrix::Zero(1, 1))),
      "");

  EXPECT_EQ(validate(ok, inputs_of(RowMatrix::Zero(kMaxTokens + 1, 1))),
            "too many tokens (4097): at most 4096 are supported");
  EXPECT_EQ(validate(ok, inputs_of(RowMatrix::Zero(1, kMaxDim + 1))),
            "d_in (4097) is too large: at most 4096 is supported");
  EXPECT_EQ(validate(config_of(Variant::Causal, kMaxDim + 1, 1), inputs_of(RowMatrix::Zero(1, 1))),
            "d_out (4097) must be between 1 and 4096");
  EXPECT_EQ(validate(config_of(Variant::MultiheadWrapper, 2, kMaxHeads + 1),
                     inputs_of(RowMatrix::Zero(1, 1))),
            "num_heads (65) must be between 1 and 64");
}

// The limit path of the config reader: 4096 rows parse, 4097 are refused
// from the list's length, before a matrix is built.
TEST(Limits, ConfigWithTheMostTokensParsesAndOneMoreIsRefused) {
  auto rows = [](int n) {
    std::string json = R"({"embeddings": [)";
    for (int t = 0; t < n; ++t) json += t ? ",[0.5]" : "[0.5]";
    return json + "]}";
  };
  Config c;
  Inputs in;
  resolve(parse_run_spec(rows(kMaxTokens), "max.json"), c, in);
  EXPECT_EQ(in.embeddings.rows(), kMaxTokens);
  EXPECT_EQ(validate(c, in), "");
  try {
    resolve(parse_run_spec(rows(kMaxTokens + 1), "over.json"), c, in);
    FAIL() << "4097 tokens were accepted";
  } catch (const ParseError& e) {
    EXPECT_EQ(std::string(e.what()),
              "over.json: too many tokens (4097 rows of embeddings): at most 4096 are supported");
  }
}

// The largest sizes run: 4096 tokens (simple: three cheap products) and
// d_in = 4096, both paths, finite, rows summing to 1.
TEST(Limits, TheLargestTokenCountAndInputWidthRun) {
  const Trace wide = run_both(config_of(Variant::Causal, 2, 1, 0.1),
                              inputs_of(scaled_values(3, kMaxDim, 0.01f, 7)));
  expect_weight_rows_sum_to_one(wide);
  expect_no_unexpected_nonfinite(wide);

  const Trace tall =
      run_both(config_of(Variant::Simple), inputs_of(scaled_values(kMaxTokens, 1, 1.0f, 8)));
  EXPECT_EQ(stage(tall, "weights").rows(), kMaxTokens);
  expect_weight_rows_sum_to_one(tall);
  expect_no_unexpected_nonfinite(tall);
}

}  // namespace
}  // namespace attnscope::core
