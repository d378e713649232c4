// test_book.cpp: every tensor chapter 3 prints, read off the engine.
// Tolerance: the book prints 4 decimals (see kBookTolerance).
#include "test_support.hpp"

namespace attnscope::core {
namespace {

using namespace testing;

TEST(BookSimplified, ScoresAreDotProductsOfInputs) {
  const Trace t = run_attention(config_for(Variant::Simple, 2, 123), book_inputs());
  expect_book_matrix(stage(t, "scores"),
                     matrix_from_rows({{0.9995f, 0.9544f, 0.9422f, 0.4753f, 0.4576f, 0.6310f},
                                       {0.9544f, 1.4950f, 1.4754f, 0.8434f, 0.7070f, 1.0865f},
                                       {0.9422f, 1.4754f, 1.4570f, 0.8296f, 0.7154f, 1.0605f},
                                       {0.4753f, 0.8434f, 0.8296f, 0.4937f, 0.3474f, 0.6565f},
                                       {0.4576f, 0.7070f, 0.7154f, 0.3474f, 0.6654f, 0.2935f},
                                       {0.6310f, 1.0865f, 1.0605f, 0.6565f, 0.2935f, 0.9450f}}),
                     "attn_scores");
}

TEST(BookSimplified, WeightsAreTheRowSoftmax) {
  const Trace t = run_attention(config_for(Variant::Simple, 2, 123), book_inputs());
  expect_book_matrix(stage(t, "weights"),
                     matrix_from_rows({{0.2098f, 0.2006f, 0.1981f, 0.1242f, 0.1220f, 0.1452f},
                                       {0.1385f, 0.2379f, 0.2333f, 0.1240f, 0.1082f, 0.1581f},
                                       {0.1390f, 0.2369f, 0.2326f, 0.1242f, 0.1108f, 0.1565f},
                                       {0.1435f, 0.2074f, 0.2046f, 0.1462f, 0.1263f, 0.1720f},
                                       {0.1526f, 0.1958f, 0.1975f, 0.1367f, 0.1879f, 0.1295f},
                                       {0.1385f, 0.2184f, 0.2128f, 0.1420f, 0.0988f, 0.1896f}}),
                     "attn_weights");
}

TEST(BookSimplified, ContextVectorsAreWeightedSumsOfInputs) {
  const Trace t = run_attention(config_for(Variant::Simple, 2, 123), book_inputs());
  expect_book_matrix(stage(t, "context"),
                     matrix_from_rows({{0.4421f, 0.5931f, 0.5790f},
                                       {0.4419f, 0.6515f, 0.5683f},
                                       {0.4431f, 0.6496f, 0.5671f},
                                       {0.4304f, 0.6298f, 0.5510f},
                                       {0.4671f, 0.5910f, 0.5266f},
                                       {0.4177f, 0.6503f, 0.5645f}}),
                     "all_context_vecs");
}

TEST(BookSimplified, NaiveNormalisationDiffersFromSoftmaxForQueryTwo) {
  // The book first divides attn_scores_2 by its sum, then uses softmax.
  const Trace t = run_attention(config_for(Variant::Simple, 2, 123), book_inputs());
  const RowMatrix scores_2 = stage(t, "scores").row(1);
  expect_book_matrix(scores_2 / scores_2.sum(),
                     matrix_from_rows({{0.1455f, 0.2278f, 0.2249f, 0.1285f, 0.1077f, 0.1656f}}),
                     "attn_weights_2_tmp");
  expect_book_matrix(stage(t, "weights").row(1),
                     matrix_from_rows({{0.1385f, 0.2379f, 0.2333f, 0.1240f, 0.1082f, 0.1581f}}),
                     "attn_weights_2");
}

TEST(BookTrainable, SelfAttentionV1WeightsAreTorchRandWithSeed123) {
  const Trace t = run_attention(config_for(Variant::SelfAttentionV1, 2, 123), book_inputs());
  expect_book_matrix(stage(t, "W_query"),
                     matrix_from_rows({{0.2961f, 0.5166f}, {0.2517f, 0.6886f}, {0.0740f, 0.8665f}}),
                     "W_query");
  expect_book_matrix(stage(t, "W_key"),
                     matrix_from_rows({{0.1366f, 0.1025f}, {0.1841f, 0.7264f}, {0.3153f, 0.6871f}}),
                     "W_key");
  expect_book_matrix(stage(t, "W_value"),
                     matrix_from_rows({{0.0756f, 0.1966f}, {0.3164f, 0.4017f}, {0.1186f, 0.8274f}}),
                     "W_value");
}

TEST(BookTrainable, StepByStepForQueryTwo) {
  const Trace t = run_attention(config_for(Variant::SelfAttentionV1, 2, 123), book_inputs());
  expect_book_matrix(stage(t, "queries").row(1), matrix_from_rows({{0.4306f, 1.4551f}}), "query_2");
  expect_book_matrix(stage(t, "keys"),
                     matrix_from_rows({{0.3669f, 0.7646f},
                                       {0.4433f, 1.1419f},
                                       {0.4361f, 1.1156f},
                                       {0.2408f, 0.6706f},
                                       {0.1827f, 0.3292f},
                                       {0.3275f, 0.9642f}}),
                     "keys");
  EXPECT_NEAR(stage(t, "scores")(1, 1), 1.8524f, kBookTolerance) << "attn_score_22 (omega_22)";
  expect_book_matrix(stage(t, "scores").row(1),
                     matrix_from_rows({{1.2705f, 1.8524f, 1.8111f, 1.0795f, 0.5577f, 1.5440f}}),
                     "attn_scores_2");
  expect_book_matrix(stage(t, "weights").row(1),
                     matrix_from_rows({{0.1500f, 0.2264f, 0.2199f, 0.1311f, 0.0906f, 0.1820f}}),
                     "attn_weights_2");
  expect_book_matrix(stage(t, "context").row(1), matrix_from_rows({{0.3061f, 0.8210f}}),
                     "context_vec_2");
}

TEST(BookTrainable, SelfAttentionV1OutputWithSeed123) {
  const Trace t = run_attention(config_for(Variant::SelfAttentionV1, 2, 123), book_inputs());
  expect_book_matrix(stage(t, "context"),
                     matrix_from_rows({{0.2996f, 0.8053f},
                                       {0.3061f, 0.8210f},
                                       {0.3058f, 0.8203f},
                                       {0.2948f, 0.7939f},
                                       {0.2927f, 0.7891f},
                                       {0.2990f, 0.8040f}}),
                     "sa_v1(inputs)");
}

TEST(BookTrainable, SelfAttentionV2LinearWeightsWithSeed789) {
  const Trace t = run_attention(config_for(Variant::SelfAttentionV2, 2, 789), book_inputs());
  // The book prints nn.Linear's .weight (d_out x d_in); the trace holds it as used.
  expect_book_matrix(
      stage(t, "W_query").transpose(),
      matrix_from_rows({{0.3161f, 0.4568f, 0.5118f}, {-0.1683f, -0.3379f, -0.0918f}}),
      "W_query.weight");
  expect_book_matrix(
      stage(t, "W_key").transpose(),
      matrix_from_rows({{0.4058f, -0.4704f, 0.2368f}, {0.2134f, -0.2601f, -0.5105f}}),
      "W_key.weight");
  expect_book_matrix(
      stage(t, "W_value").transpose(),
      matrix_from_rows({{0.2526f, -0.1415f, -0.1962f}, {0.5191f, -0.0852f, -0.2043f}}),
      "W_value.weight");
}

const RowMatrix kV2Output = matrix_from_rows({{-0.0739f, 0.0713f},
                                              {-0.0748f, 0.0703f},
                                              {-0.0749f, 0.0702f},
                                              {-0.0760f, 0.0685f},
                                              {-0.0763f, 0.0679f},
                                              {-0.0754f, 0.0693f}});

TEST(BookTrainable, SelfAttentionV2OutputWithSeed789) {
  const Trace t = run_attention(config_for(Variant::SelfAttentionV2, 2, 789), book_inputs());
  expect_book_matrix(stage(t, "context"), kV2Output, "sa_v2(inputs)");
}

TEST(BookTrainable, Exercise31V2WeightsMovedIntoV1GiveV2Output) {
  const Config v2 = config_for(Variant::SelfAttentionV2, 2, 789);
  TorchGenerator gen(v2.seed);
  const Parameters params = init_parameters(v2, 3, gen);
  // SelfAttention_v1 with W = Linear.weight.T: the trace orientation already is.
  TorchGenerator unused(0);
  const Trace v1 = run_with_parameters(config_for(Variant::SelfAttentionV1, 2, 789), book_inputs(),
                                       params, unused);
  expect_book_matrix(stage(v1, "context"), kV2Output, "sa_v1 with sa_v2's weights");
}

const RowMatrix kV2Weights =
    matrix_from_rows({{0.1921f, 0.1646f, 0.1652f, 0.1550f, 0.1721f, 0.1510f},
                      {0.2041f, 0.1659f, 0.1662f, 0.1496f, 0.1665f, 0.1477f},
                      {0.2036f, 0.1659f, 0.1662f, 0.1498f, 0.1664f, 0.1480f},
                      {0.1869f, 0.1667f, 0.1668f, 0.1571f, 0.1661f, 0.1564f},
                      {0.1830f, 0.1669f, 0.1670f, 0.1588f, 0.1658f, 0.1585f},
                      {0.1935f, 0.1663f, 0.1666f, 0.1542f, 0.1666f, 0.1529f}});

const RowMatrix kCausalWeights =
    matrix_from_rows({{1.0000f, 0, 0, 0, 0, 0},
                      {0.5517f, 0.4483f, 0, 0, 0, 0},
                      {0.3800f, 0.3097f, 0.3103f, 0, 0, 0},
                      {0.2758f, 0.2460f, 0.2462f, 0.2319f, 0, 0},
                      {0.2175f, 0.1983f, 0.1984f, 0.1888f, 0.1971f, 0},
                      {0.1935f, 0.1663f, 0.1666f, 0.1542f, 0.1666f, 0.1529f}});

TEST(BookCausal, SelfAttentionV2WeightsBeforeMasking) {
  const Trace t = run_attention(config_for(Variant::SelfAttentionV2, 2, 789), book_inputs());
  expect_book_matrix(stage(t, "weights"), kV2Weights, "attn_weights");
}

TEST(BookCausal, TrilMultiplyAndRenormaliseEqualsMinusInfinityFillAndSoftmax) {
  // Way 1 (the book's first try): softmax, zero the future with tril, renormalise.
  const Trace v2 = run_attention(config_for(Variant::SelfAttentionV2, 2, 789), book_inputs());
  RowMatrix masked_simple = stage(v2, "weights").triangularView<Eigen::Lower>();
  RowMatrix renormalised = masked_simple;
  for (Eigen::Index r = 0; r < renormalised.rows(); ++r)
    renormalised.row(r) /= masked_simple.row(r).sum();
  expect_book_matrix(renormalised, kCausalWeights, "masked_simple_norm");

  // Way 2: CausalAttention (same seed, same three Linear layers) fills -inf first.
  const Trace causal = run_attention(config_for(Variant::Causal, 2, 789), book_inputs());
  expect_book_matrix(stage(causal, "weights"), kCausalWeights, "softmax(masked)");
  EXPECT_TRUE(renormalised.isApprox(stage(causal, "weights"), 1e-5f));
}

// CausalAttention masks the raw scores (masked_fill_) and divides by sqrt(d_k)
// inside the softmax, so its masked stage is the book's print of `masked`.
TEST(BookCausal, MaskedUnscaledScoresAsPrinted) {
  const Trace t = run_attention(config_for(Variant::Causal, 2, 789), book_inputs());
  const RowMatrix printed =
      matrix_from_rows({{0.2899f, 0, 0, 0, 0, 0},
                        {0.4656f, 0.1723f, 0, 0, 0, 0},
                        {0.4594f, 0.1703f, 0.1731f, 0, 0, 0},
                        {0.2642f, 0.1024f, 0.1036f, 0.0186f, 0, 0},
                        {0.2183f, 0.0874f, 0.0882f, 0.0177f, 0.0786f, 0},
                        {0.3408f, 0.1270f, 0.1290f, 0.0198f, 0.1290f, 0.0078f}});
  const RowMatrix& masked = stage(t, "masked_scores");
  const RowMatrix& scaled = stage(t, "scaled_scores");
  const float root_dk = std::sqrt(2.0f);
  for (Eigen::Index i = 0; i < 6; ++i)
    for (Eigen::Index j = 0; j < 6; ++j) {
      if (j > i) {
        EXPECT_EQ(masked(i, j), -std::numeric_limits<float>::infinity());
        EXPECT_EQ(scaled(i, j), -std::numeric_limits<float>::infinity());
      } else {
        EXPECT_NEAR(masked(i, j), printed(i, j), kBookTolerance) << i << "," << j;
        EXPECT_EQ(scaled(i, j), masked(i, j) / root_dk) << i << "," << j;
      }
    }
}

// The stages follow the book's forward: scores, mask, masked, scaled, softmax.
TEST(BookCausal, StagesFollowTheBooksMaskThenScaleOrder) {
  for (Variant v : {Variant::Causal, Variant::MultiheadWrapper, Variant::Multihead}) {
    const Trace t = run_attention(config_for(v, 2, 123), book_inputs());
    const int head = t.find("scores", -1) ? -1 : 0;
    std::vector<std::string> order;
    for (const Stage& s : t.stages)
      if (s.head == head && (s.id == "scores" || s.id == "mask" || s.id == "masked_scores" ||
                             s.id == "scaled_scores" || s.id == "weights"))
        order.push_back(s.id);
    const std::vector<std::string> book = {"scores", "mask", "masked_scores", "scaled_scores",
                                           "weights"};
    EXPECT_EQ(order, book) << variant_id(v);
  }
}

const RowMatrix kDropoutOnes = matrix_from_rows({{2, 2, 0, 2, 2, 0},
                                                 {0, 0, 0, 2, 0, 2},
                                                 {2, 2, 2, 2, 0, 2},
                                                 {0, 2, 2, 0, 0, 2},
                                                 {0, 2, 0, 2, 0, 2},
                                                 {0, 2, 2, 2, 2, 0}});

TEST(BookDropout, HalfOfOnesWithSeed123) {
  TorchGenerator gen(123);
  std::uint8_t keep[36];
  gen.dropout_keep(0.5, 36, keep);
  RowMatrix dropped(6, 6);
  for (int k = 0; k < 36; ++k) dropped.data()[k] = keep[k] ? 2.0f : 0.0f;
  EXPECT_EQ(dropped, kDropoutOnes);
}

TEST(BookDropout, AppliedToCausalWeightsWithSeed123) {
  const Trace causal = run_attention(config_for(Variant::Causal, 2, 789), book_inputs());
  TorchGenerator gen(123);
  std::uint8_t keep[36];
  gen.dropout_keep(0.5, 36, keep);
  RowMatrix dropped = stage(causal, "weights");
  for (int k = 0; k < 36; ++k) dropped.data()[k] *= keep[k] ? 2.0f : 0.0f;
  expect_book_matrix(dropped,
                     matrix_from_rows({{2.0000f, 0, 0, 0, 0, 0},
                                       {0, 0, 0, 0, 0, 0},
                                       {0.7599f, 0.6194f, 0.6206f, 0, 0, 0},
                                       {0, 0.4921f, 0.4925f, 0, 0, 0},
                                       {0, 0.3966f, 0, 0.3775f, 0, 0},
                                       {0, 0.3327f, 0.3331f, 0.3084f, 0.3331f, 0}}),
                     "dropout(attn_weights)");
}

TEST(BookClasses, CausalAttentionWithSeed123) {
  const Trace t = run_attention(config_for(Variant::Causal, 2, 123), book_inputs());
  expect_book_matrix(stage(t, "context"),
                     matrix_from_rows({{-0.4519f, 0.2216f},
                                       {-0.5874f, 0.0058f},
                                       {-0.6300f, -0.0632f},
                                       {-0.5675f, -0.0843f},
                                       {-0.5526f, -0.0981f},
                                       {-0.5299f, -0.1081f}}),
                     "ca(batch)[0]");
}

TEST(BookClasses, MultiHeadAttentionWrapperWithSeed123) {
  Config c = config_for(Variant::MultiheadWrapper, 2, 123);
  c.num_heads = 2;
  const Trace t = run_attention(c, book_inputs());
  expect_book_matrix(stage(t, "output"),
                     matrix_from_rows({{-0.4519f, 0.2216f, 0.4772f, 0.1063f},
                                       {-0.5874f, 0.0058f, 0.5891f, 0.3257f},
                                       {-0.6300f, -0.0632f, 0.6202f, 0.3860f},
                                       {-0.5675f, -0.0843f, 0.5478f, 0.3589f},
                                       {-0.5526f, -0.0981f, 0.5321f, 0.3428f},
                                       {-0.5299f, -0.1081f, 0.5077f, 0.3493f}}),
                     "mha_wrapper(batch)[0]");
}

TEST(BookClasses, MultiHeadAttentionWithSeed123) {
  Config c = config_for(Variant::Multihead, 2, 123);
  c.num_heads = 2;
  const Trace t = run_attention(c, book_inputs());
  expect_book_matrix(stage(t, "output"),
                     matrix_from_rows({{0.3190f, 0.4858f},
                                       {0.2943f, 0.3897f},
                                       {0.2856f, 0.3593f},
                                       {0.2693f, 0.3873f},
                                       {0.2639f, 0.3928f},
                                       {0.2575f, 0.4028f}}),
                     "mha(batch)[0]");
}

}  // namespace
}  // namespace attnscope::core
