// test_teach.cpp: the teaching views' numbers (teach.hpp): book values and
// checks, softmax unfolded, normalisation, masking, dropout, sizes, head
// split, compare, parameters of a trace.
#include <cmath>
#include <limits>

#include "attnscope/base/stages.hpp"
#include "attnscope/book/teach.hpp"
#include "attnscope/io/weights.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

using namespace testing;

Trace run_book(const BookRun& r) {
  Config c = config_for(r.variant, r.d_out, r.seed);
  c.num_heads = r.num_heads;
  return run_attention(c, book_inputs());
}

TEST(TeachBook, EveryPrintedTensorMatchesItsRun) {
  ASSERT_GE(book_matrices().size(), 25u);
  for (const BookMatrix& b : book_matrices()) {
    const Trace t = run_book(b.run);
    EXPECT_TRUE(book_applies(b, t)) << b.name;
    const BookCheck c = check_book(b, &t);
    EXPECT_TRUE(c.comparable) << b.section << " " << b.name;
    EXPECT_TRUE(c.matches) << b.section << " " << b.name << " max diff " << c.max_diff;
    EXPECT_LE(c.max_diff, kBookTolerance) << b.name;
  }
}

TEST(TeachBook, MaskedScoresCompareMinusInfExactlyAndTheLowerTriangleByValue) {
  const BookMatrix* masked = nullptr;
  for (const BookMatrix& b : book_matrices())
    if (b.source == BookSource::MaskMinusInf) masked = &b;
  ASSERT_NE(masked, nullptr);
  EXPECT_EQ(masked->section, "3.5.1");
  EXPECT_EQ(masked->run.variant, Variant::SelfAttentionV2);
  Trace t = run_book(masked->run);
  const auto v = book_value(*masked, &t);
  ASSERT_TRUE(v);
  EXPECT_EQ((*v)(0, 5), -std::numeric_limits<float>::infinity());
  EXPECT_NEAR((*v)(5, 5), 0.0078f, kBookTolerance);
  BookCheck c = check_book(*masked, &t);
  EXPECT_TRUE(c.matches);
  EXPECT_TRUE(std::isfinite(c.max_diff));
  // A finite value where the book prints −∞ is infinitely off, not NaN.
  Stage* scores = nullptr;
  for (Stage& s : t.stages)
    if (s.id == "scores") scores = &s;
  ASSERT_NE(scores, nullptr);
  scores->mutable_data()(4, 4) += 0.01f;  // a lower-triangle edit shows its size
  c = check_book(*masked, &t);
  EXPECT_FALSE(c.matches);
  EXPECT_NEAR(c.max_diff, 0.01f, 1e-4f);
}

TEST(TeachBook, TheScalarAttnScore22IsOneCellOfTheScores) {
  const BookMatrix* s22 = nullptr;
  for (const BookMatrix& b : book_matrices())
    if (b.name == "attn_score_22") s22 = &b;
  ASSERT_NE(s22, nullptr);
  EXPECT_EQ(s22->row, 1);
  EXPECT_EQ(s22->col, 1);
  const Trace t = run_book(s22->run);
  const auto v = book_value(*s22, &t);
  ASSERT_TRUE(v);
  ASSERT_EQ(v->size(), 1);
  EXPECT_EQ((*v)(0, 0), t.find("scores")->data()(1, 1));
  EXPECT_NEAR((*v)(0, 0), 1.8524f, kBookTolerance);
  EXPECT_TRUE(check_book(*s22, &t).matches);
}

TEST(TeachBook, StageSummaryCoversEveryTensorOfTheStage) {
  const Trace t = run_book(BookRun{Variant::SelfAttentionV1, 2, 1, 123});
  const StageBookCheck s = check_book_stage(t, "scores");
  EXPECT_EQ(s.count, 2);  // attn_score_22 and attn_scores_2
  EXPECT_TRUE(s.matches);
  EXPECT_NE(s.names.find("attn_score_22"), std::string::npos);
  EXPECT_EQ(check_book_stage(t, "scaled_scores").count, 0);
  const Trace other = run_book(BookRun{Variant::SelfAttentionV1, 2, 1, 7});
  EXPECT_EQ(check_book_stage(other, "scores").count, 0);
}

TEST(TeachBook, StandaloneDropoutExampleNeedsNoTrace) {
  for (const BookMatrix& b : book_matrices())
    if (b.source == BookSource::DropoutOnes) {
      const BookCheck c = check_book(b, nullptr);
      EXPECT_TRUE(c.matches);
      EXPECT_EQ(c.max_diff, 0.0f);
    }
}

TEST(TeachBook, AnEditedEmbeddingShowsTheLargestDifference) {
  Inputs in = book_inputs();
  in.embeddings(1, 1) += 0.25f;  // journey's second value
  const Trace t = run_attention(config_for(Variant::Simple, 2, 123), in);
  const BookMatrix* scores = nullptr;
  for (const BookMatrix& b : book_matrices())
    if (b.name == "attn_scores" && b.run.variant == Variant::Simple) scores = &b;
  ASSERT_NE(scores, nullptr);
  EXPECT_TRUE(book_applies(*scores, t));
  const BookCheck c = check_book(*scores, &t);
  EXPECT_TRUE(c.comparable);
  EXPECT_FALSE(c.matches);
  // x_2 · x_2 grows by 2·0.87·0.25 + 0.25² = 0.4975, the largest change.
  EXPECT_NEAR(c.max_diff, 0.4975f, 1e-4f);
}

TEST(TeachBook, AnotherDropoutIsNamedNotMeasured) {
  // The book printed CausalAttention's context_vecs at dropout 0.0; at 0.5
  // in training the difference is the dropout's, not worth a number.
  Config c = config_for(Variant::Causal, 2, 123);
  c.dropout = 0.5;
  const Trace t = run_attention(c, book_inputs());
  int checked = 0;
  for (const BookMatrix* b : book_matrices_for_stage(t, stage_id::context)) {
    const BookCheck check = check_book(*b, &t);
    EXPECT_TRUE(check.dropout_differs) << b->name;
    EXPECT_FALSE(check.matches) << b->name;
    EXPECT_EQ(check.book_dropout, 0.0);
    EXPECT_EQ(check.run_dropout, 0.5);
    ++checked;
  }
  EXPECT_GT(checked, 0);
  const StageBookCheck stage = check_book_stage(t, stage_id::context);
  EXPECT_TRUE(stage.dropout_differs);
  EXPECT_EQ(stage.run_dropout, 0.5);
  // The weights come before the dropout: still the book's.
  for (const BookMatrix* b : book_matrices_for_stage(t, stage_id::weights)) {
    EXPECT_FALSE(check_book(*b, &t).dropout_differs) << b->name;
  }
  // In eval mode nothing is dropped: the book's numbers again.
  c.training = false;
  const Trace eval = run_attention(c, book_inputs());
  for (const BookMatrix* b : book_matrices_for_stage(eval, stage_id::context)) {
    const BookCheck check = check_book(*b, &eval);
    EXPECT_FALSE(check.dropout_differs) << b->name;
    EXPECT_TRUE(check.matches) << b->name;
  }
}

TEST(TeachBook, OtherRunsAreNotCheckedAgainstTheBook) {
  const Trace t = run_attention(config_for(Variant::SelfAttentionV1, 2, 7), book_inputs());
  EXPECT_TRUE(book_matrices_for_stage(t, "context").empty());
  const Trace ok = run_attention(config_for(Variant::SelfAttentionV1, 2, 123), book_inputs());
  EXPECT_EQ(book_matrices_for_stage(ok, "context").size(), 2u);  // context_vec_2, sa_v1
}

TEST(TeachSoftmax, UnfoldedRowSumsToOneAndEqualsTheTraceWeights) {
  Config c = config_for(Variant::Causal, 2, 789);
  const Trace t = run_attention(c, book_inputs());
  for (int row = 0; row < 6; ++row) {
    const auto u = unfold_softmax(t, 0, row);
    ASSERT_TRUE(u);
    EXPECT_FLOAT_EQ(u->divisor, std::sqrt(2.0f));
    float sum_w = 0, sum_e = 0;
    for (std::size_t j = 0; j < 6; ++j) {
      sum_w += u->weights[j];
      sum_e += u->exps[j];
      EXPECT_EQ(u->masked[j], static_cast<int>(j) > row);
      EXPECT_NEAR(u->weights[j], stage(t, "weights")(row, static_cast<Eigen::Index>(j)), 1e-6f);
      if (!u->masked[j]) {
        EXPECT_LE(u->shifted[j], 0.0f);
      }
    }
    EXPECT_NEAR(sum_w, 1.0f, 1e-6f);
    EXPECT_FLOAT_EQ(sum_e, u->sum);
  }
}

TEST(TeachSoftmax, ScalingOffMakesWeightsMorePeakedAndEntropyDrops) {
  const Trace t = run_attention(config_for(Variant::SelfAttentionV1, 2, 123), book_inputs());
  const auto scaled = unfold_softmax(t, 0, 1);
  const auto off = unfold_softmax(t, 0, 1, 1.0f);
  const auto flat = unfold_softmax(t, 0, 1, 100.0f);
  ASSERT_TRUE(scaled && off && flat);
  EXPECT_LT(off->entropy, scaled->entropy);
  EXPECT_LT(scaled->entropy, flat->entropy);
  EXPECT_NEAR(flat->entropy, flat->max_entropy, 1e-3f);
  EXPECT_NEAR(scaled->max_entropy, std::log(6.0f), 1e-6f);
  EXPECT_EQ(off->scaled, off->scores);
  // The book's attn_weights_2 (3.4.1) with √d_k = √2.
  EXPECT_NEAR(scaled->weights[1], 0.2264f, kBookTolerance);
}

TEST(TeachNormalise, NaiveDivisionGivesTheBooksTmpWeights) {
  const Trace t = run_attention(config_for(Variant::Simple, 2, 123), book_inputs());
  const RowMatrix n = naive_normalise(stage(t, "scores"));
  expect_book_matrix(n.row(1),
                     matrix_from_rows({{0.1455f, 0.2278f, 0.2249f, 0.1285f, 0.1077f, 0.1656f}}),
                     "attn_weights_2_tmp");
  for (Eigen::Index r = 0; r < 6; ++r) EXPECT_NEAR(n.row(r).sum(), 1.0f, 1e-6f);
}

TEST(TeachNormalise, WholeMatrixBothWaysRowsSumToOne) {
  const Trace t = run_book(BookRun{Variant::Simple, 2, 1, 123});
  const auto n = compare_normalisation(t, -1);
  ASSERT_TRUE(n);
  EXPECT_NEAR(n->naive(1, 1), 0.2278f, kBookTolerance);    // attn_weights_2_tmp
  EXPECT_NEAR(n->softmax(1, 1), 0.2379f, kBookTolerance);  // attn_weights_2
  EXPECT_EQ(n->softmax, t.find("weights")->data());        // simple: softmax of unscaled scores
  for (int r = 0; r < 6; ++r) {
    EXPECT_NEAR(n->naive_row_sums[r], 1.0f, 1e-6f);
    EXPECT_NEAR(n->softmax_row_sums[r], 1.0f, 1e-6f);
  }
  EXPECT_EQ(n->negative_naive, 0);
  const Trace c = run_book(BookRun{Variant::Causal, 2, 1, 789});
  const auto m = compare_normalisation(c, -1);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->naive(0, 0), 1.0f);
  EXPECT_EQ(m->naive(1, 2), 0.0f);
  EXPECT_EQ(m->softmax(1, 2), 0.0f);
  EXPECT_EQ(m->scores(1, 2), -std::numeric_limits<float>::infinity());
  EXPECT_NEAR(m->naive_row_sums[3], 1.0f, 1e-6f);
}

TEST(TeachMasking, TwoWaysAgreeAndTheWrongWayIsFlagged) {
  const Trace t = run_attention(config_for(Variant::Causal, 2, 789), book_inputs());
  const auto m = compare_masking(t, 0);
  ASSERT_TRUE(m);
  EXPECT_LT(m->max_difference, 1e-6f);
  EXPECT_TRUE(m->minus_inf.isApprox(stage(t, "weights"), 1e-6f));
  // Row 0 keeps one weight of a 6-way softmax, the last row keeps them all.
  EXPECT_EQ(m->wrong_rows, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_NEAR(m->wrong_row_sums[5], 1.0f, 1e-6f);
  EXPECT_NEAR(m->wrong_row_sums[0], 0.1921f, kBookTolerance);  // the book's attn_weights[0,0]
  for (Eigen::Index r = 0; r < 6; ++r) EXPECT_NEAR(m->renormalised.row(r).sum(), 1.0f, 1e-6f);
}

TEST(TeachDropout, ViewShowsScaleKeepMaskAndRowSums) {
  Config c = config_for(Variant::Causal, 2, 123);
  c.dropout = 0.5;
  const Trace t = run_attention(c, book_inputs());
  const auto v = dropout_view(t, 0);
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->active);
  EXPECT_EQ(v->scale, 2.0f);
  for (Eigen::Index k = 0; k < v->keep.size(); ++k)
    EXPECT_TRUE(v->keep.data()[k] == 0.0f || v->keep.data()[k] == 1.0f);
  for (std::size_t r = 0; r < 6; ++r) {
    EXPECT_NEAR(v->row_sums_before[r], 1.0f, 1e-6f);
    EXPECT_NEAR(v->row_sums_after[r],
                stage(t, "dropped_weights").row(static_cast<Eigen::Index>(r)).sum(), 1e-6f);
  }
  c.training = false;
  const auto eval = dropout_view(run_attention(c, book_inputs()), 0);
  ASSERT_TRUE(eval);
  EXPECT_FALSE(eval->active);
  EXPECT_EQ(eval->keep, RowMatrix::Ones(6, 6));
}

TEST(TeachDropout, AverageOverSeedsConvergesToTheWeights) {
  const Trace t = run_attention(config_for(Variant::Causal, 2, 789), book_inputs());
  const RowMatrix& w = stage(t, "weights");
  const auto a = dropout_average(w, 0.5, 1, 200);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->max_error.size(), 200u);
  EXPECT_LT(a->max_error.back(), 0.15f);
  EXPECT_LT(a->max_error.back(), a->max_error.front() * 0.25f);
  EXPECT_TRUE(a->mean.isApprox(w, 0.2f));
  EXPECT_FALSE(dropout_average(w, 0.5, 1, 201));
  EXPECT_FALSE(dropout_average(RowMatrix::Ones(65, 65), 0.5, 1, 10));
}

TEST(TeachDropout, ApplyDropoutIsTheBooksExample) {
  const RowMatrix d = apply_dropout(RowMatrix::Ones(6, 6), 0.5, 123);
  EXPECT_EQ(d.row(0), matrix_from_rows({{2, 2, 0, 2, 2, 0}}));
  EXPECT_EQ(d.row(5), matrix_from_rows({{0, 2, 2, 2, 2, 0}}));
}

TEST(TeachSizes, Gpt2LayerHas2360064Parameters) {
  const ParameterCount n = count_parameters(gpt2_layer_config(), kGpt2DIn);
  EXPECT_EQ(n.total, 2360064);
  EXPECT_EQ(n.out, 768 * 768 + 768);
}

TEST(TeachSizes, CountsMatchTheTensorsTheEngineBuilds) {
  for (Variant v : kAllVariants)
    for (bool bias : {false, true}) {
      Config c = config_for(v, 4, 123);
      c.num_heads = 2;
      c.qkv_bias = bias;
      const Trace t = run_attention(c, book_inputs());
      long long from_trace = 0;
      for (const Stage& s : t.stages)
        if (s.id.starts_with("W_") || s.id.starts_with("b_")) from_trace += s.data().size();
      EXPECT_EQ(count_parameters(c, 3).total, from_trace) << variant_id(v) << " bias " << bias;
    }
}

TEST(TeachSizes, ShapesListTheWeightsAndTheScores) {
  const auto shapes = tensor_shapes(gpt2_layer_config(), kGpt2DIn, kGpt2Context);
  bool saw_w = false, saw_scores = false;
  for (const TensorShape& s : shapes) {
    if (s.name == "W_query") saw_w = s.rows == 768 && s.cols == 768 && s.parameter;
    if (s.name.starts_with("scores")) saw_scores = s.rows == 1024 && s.copies == 12;
  }
  EXPECT_TRUE(saw_w);
  EXPECT_TRUE(saw_scores);
}

TEST(TeachHeads, TransposedBlocksAreTheEnginesPerHeadStages) {
  Config c = config_for(Variant::Multihead, 6, 123);
  c.num_heads = 3;
  const Trace t = run_attention(c, book_inputs());
  for (const char* id : {"queries", "keys", "values"}) {
    const auto s = split_heads(t, id);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->head_dim, 2);
    for (int h = 0; h < 3; ++h)
      EXPECT_EQ(RowMatrix(s->transposed.middleRows(h * 6, 6)), stage(t, id, h)) << id << h;
    EXPECT_EQ(s->whole, stage(t, id));
  }
  const auto s = split_heads(t, "queries");
  for (int h = 0; h < 3; ++h)
    EXPECT_EQ(RowMatrix(s->concat.middleCols(h * 2, 2)), stage(t, "context", h));
}

TEST(TeachCompare, DiffIsExactSubtraction) {
  const Trace a = run_attention(config_for(Variant::Causal, 2, 123), book_inputs());
  const Trace b = run_attention(config_for(Variant::Causal, 2, 789), book_inputs());
  const auto d = compare_stage(a, b, "weights", -1);
  ASSERT_TRUE(d && d->same_shape);
  for (Eigen::Index k = 0; k < d->diff.size(); ++k)
    EXPECT_EQ(d->diff.data()[k], stage(b, "weights").data()[k] - stage(a, "weights").data()[k]);
  const auto masked = compare_stage(a, b, "masked_scores", -1);
  ASSERT_TRUE(masked);
  EXPECT_FALSE(std::isnan(masked->max_abs));
  EXPECT_EQ(compare_stage(a, a, "context", -1)->max_abs, 0.0f);
  EXPECT_FALSE(compare_stage(a, b, "W_out", -1));
}

// Two ways that differ only by float32 rounding are drawn as equal; a real
// difference keeps its cells.
TEST(TeachDifference, RoundingNoiseIsDrawnAsZeroAndSaidSo) {
  const Trace t = run_attention(config_for(Variant::Causal, 2, 789), book_inputs());
  const auto m = compare_masking(t, 0);
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->shown.rounding_only);
  EXPECT_EQ(m->shown.shown.cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_EQ(m->shown.max_abs, m->max_difference);
  EXPECT_TRUE(difference_caption(m->shown).starts_with("equal to float32 rounding (max |Δ| = "))
      << difference_caption(m->shown);

  const Trace a = run_attention(config_for(Variant::Causal, 2, 123), book_inputs());
  const auto d = compare_stage(a, t, "weights", -1);
  ASSERT_TRUE(d && d->same_shape);
  EXPECT_FALSE(d->shown.rounding_only);
  EXPECT_EQ(d->shown.shown, d->diff);  // every weight moved by far more than rounding
  EXPECT_TRUE(difference_caption(d->shown).starts_with("largest |Δ| = "));

  RowMatrix base = RowMatrix::Constant(2, 2, 0.5f);
  RowMatrix noisy = base;
  noisy(0, 1) = std::nextafter(0.5f, 1.0f);  // one ulp
  noisy(1, 0) = 0.75f;                       // a real change
  const ShownDifference s = shown_difference(noisy - base, base, noisy);
  EXPECT_EQ(s.shown(0, 1), 0.0f);
  EXPECT_EQ(s.shown(1, 0), 0.25f);
  EXPECT_FALSE(s.rounding_only);
  EXPECT_EQ(difference_caption(shown_difference(base - base, base, base)),
            "identical (max |Δ| = 0)");
}

TEST(TeachParameters, ReadBackFromATraceTheyReproduceIt) {
  for (Variant v :
       {Variant::SelfAttentionV1, Variant::Causal, Variant::MultiheadWrapper, Variant::Multihead}) {
    Config c = config_for(v, 4, 123);
    c.num_heads = 2;
    c.qkv_bias = v != Variant::SelfAttentionV1;
    const Trace t = run_attention(c, book_inputs());
    const auto p = parameters_of(t);
    ASSERT_TRUE(p);
    EXPECT_EQ(validate_parameters(*p, c, 3), "") << variant_id(v);
    const Trace again = run_with_explicit_parameters(c, book_inputs(), *p);
    const char* last = t.find("output") ? "output" : "context";
    EXPECT_EQ(stage(again, last), stage(t, last)) << variant_id(v);
  }
  EXPECT_FALSE(parameters_of(run_attention(config_for(Variant::Simple, 2, 1), book_inputs())));
}

}  // namespace
}  // namespace attnscope::core
