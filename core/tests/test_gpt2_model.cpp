// test_gpt2_model.cpp: a model run's stages agree with each other, an
// append gives what a full run gives, the cache keeps to its budget, and
// the stage selection of `model trace` refuses what a model does not make.
// (The numbers against PyTorch: app/tests/model_oracle_test.py.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "attnscope/base/stages.hpp"
#include "attnscope/io/io.hpp"
#include "attnscope/model/gpt2_model.hpp"
#include "attnscope/model/model_trace.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

namespace id = stage_id;

const std::shared_ptr<const Gpt2Model>& tiny_model() {
  static const auto model = random_gpt2(testing::tiny_gpt2_config(80), 7);
  return model;
}

std::vector<int> some_ids(int n) {
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) ids.push_back((31 * i * i + 17 * i + 5) % 50257);
  return ids;
}

float max_diff(const RowMatrix& a, const RowMatrix& b) {
  EXPECT_EQ(a.rows(), b.rows());
  EXPECT_EQ(a.cols(), b.cols());
  if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
  return (a - b).cwiseAbs().maxCoeff();
}

TEST(ModelRun, StagesAgreeWithEachOther) {
  ModelRun run(tiny_model(), some_ids(70));
  const Gpt2Config& c = run.model().config();
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim()));
  for (int l = 0; l < c.n_layer; ++l) {
    auto concat = run.stage({l, -1, id::concat});
    ASSERT_TRUE(concat);
    for (int h = 0; h < c.n_head; ++h) {
      auto w = run.stage({l, h, id::weights});
      auto scaled = run.stage({l, h, id::scaled_scores});
      auto masked = run.stage({l, h, id::masked_scores});
      auto scores = run.stage({l, h, id::scores});
      auto v = run.stage({l, h, id::values});
      auto q = run.stage({l, h, id::queries});
      auto k = run.stage({l, h, id::keys});
      auto ctx = run.stage({l, h, id::context});
      auto mask = run.stage({l, h, id::mask});
      ASSERT_TRUE(w && scaled && masked && scores && v && q && k && ctx && mask);
      EXPECT_LT(max_diff(*scores, *q * k->transpose()), 1e-5f);
      for (Eigen::Index i = 0; i < w->rows(); ++i) {
        EXPECT_NEAR(w->row(i).sum(), 1.0f, 1e-5f);
        for (Eigen::Index j = 0; j < w->cols(); ++j) {
          EXPECT_EQ((*mask)(i, j), j > i ? 1.0f : 0.0f);
          if (j > i) {
            EXPECT_EQ((*w)(i, j), 0.0f);
            EXPECT_TRUE(std::isinf((*masked)(i, j)) && (*masked)(i, j) < 0);
          } else {
            EXPECT_EQ((*masked)(i, j), (*scores)(i, j));
            EXPECT_NEAR((*scaled)(i, j), (*scores)(i, j) * scale, 1e-5f);
          }
        }
      }
      EXPECT_LT(max_diff(*ctx, *w * *v), 1e-5f);
      EXPECT_LT(max_diff(concat->middleCols(h * c.head_dim(), c.head_dim()), *ctx), 1e-6f);
    }
    auto x =
        l == 0 ? run.stage({-1, -1, id::embeddings}) : run.stage({l - 1, -1, id::block_output});
    auto out = run.stage({l, -1, id::output});
    auto attn = run.stage({l, -1, id::attn_output});
    ASSERT_TRUE(x && out && attn);
    EXPECT_LT(max_diff(*attn, *x + *out), 1e-5f);
  }
  auto ln_f = run.stage({-1, -1, id::ln_f});
  ASSERT_TRUE(ln_f);
  EXPECT_EQ(ln_f->rows(), 70);
  EXPECT_EQ(run.stage({-1, -1, id::logits})->cols(), 50257);
  // Not stages of a model run, or out of range: nothing.
  EXPECT_FALSE(run.stage({0, 0, id::dropout_mask}));
  EXPECT_FALSE(run.stage({0, -1, id::W_query}));
  EXPECT_FALSE(run.stage({2, 0, id::weights}));
  EXPECT_FALSE(run.stage({0, 3, id::weights}));
  EXPECT_FALSE(run.stage({-1, 0, id::logits}));
}

// The forward's own weights (a fresh run's heads, on the projection kernel
// 8 query rows at a time) against softmax(mask(Q K^T) / sqrt(d_head))
// computed here in double from the run's Q and K.
TEST(ModelRun, TheForwardsWeightsAreTheSoftmaxOfItsScores) {
  ModelRun run(tiny_model(), some_ids(45));  // 5 full tiles and a partial one
  const Gpt2Config& c = run.model().config();
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim()));
  for (int l = 0; l < c.n_layer; ++l)
    for (int h = 0; h < c.n_head; ++h) {
      const auto w = run.stage({l, h, id::weights});  // first: the forward's, not a recompute
      const auto q = run.stage({l, h, id::queries});
      const auto k = run.stage({l, h, id::keys});
      ASSERT_TRUE(w && q && k);
      const Eigen::MatrixXd s = q->cast<double>() * k->cast<double>().transpose() * scale;
      double worst = 0.0;
      for (Eigen::Index i = 0; i < s.rows(); ++i) {
        const double top = s.row(i).head(i + 1).maxCoeff();
        const double sum = (s.row(i).head(i + 1).array() - top).exp().sum();
        for (Eigen::Index j = 0; j < s.cols(); ++j) {
          const double want = j > i ? 0.0 : std::exp(s(i, j) - top) / sum;
          worst = std::max(worst, std::abs((*w)(i, j) - want));
        }
      }
      EXPECT_LT(worst, 1e-6) << "layer " << l << ", head " << h;
    }
}

TEST(ModelRun, AppendingATokenGivesWhatAFullRunGives) {
  const std::vector<int> ids = some_ids(67);  // crosses a 64-row block
  ModelRun full(tiny_model(), ids);
  ModelRun grown(tiny_model(), std::vector<int>(ids.begin(), ids.end() - 2));
  grown.append(ids[ids.size() - 2]);
  grown.append(ids.back());
  EXPECT_EQ(grown.ids(), full.ids());
  EXPECT_EQ(grown.tokens(), full.tokens());
  const float largest = full.logits().cwiseAbs().maxCoeff();
  EXPECT_LT(max_diff(grown.logits(), full.logits()), 1e-4f * largest);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 3; ++h)
      EXPECT_LT(max_diff(*grown.stage({l, h, id::weights}), *full.stage({l, h, id::weights})),
                1e-5f);
  EXPECT_LT(
      max_diff(*grown.stage({1, -1, id::block_output}), *full.stage({1, -1, id::block_output})),
      1e-4f);
  // An append without a cache computes the new rows only, and still agrees.
  ModelRun::Options none;
  none.cache_bytes = 0;
  ModelRun lean(tiny_model(), std::vector<int>(ids.begin(), ids.end() - 1), none);
  lean.append(ids.back());
  EXPECT_EQ(lean.cached_bytes(), 0u);
  EXPECT_LT(max_diff(lean.logits(), full.logits()), 1e-4f * largest);
  EXPECT_LT(max_diff(*lean.stage({0, 1, id::weights}), *full.stage({0, 1, id::weights})), 1e-5f);
}

TEST(ModelRun, AppendedRowsJoinTheirHeadsMapWhenAskedFor) {
  const std::vector<int> ids = some_ids(50);
  ModelRun full(tiny_model(), ids);
  ModelRun grown(tiny_model(), std::vector<int>(ids.begin(), ids.end() - 3));
  grown.append(ids[47]);
  const auto early = grown.stage({1, 2, id::weights});  // joined now; the other heads wait
  ASSERT_EQ(early->rows(), 48);
  grown.append(ids[48]);
  grown.append(ids[49]);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 3; ++h) {
      const auto w = grown.stage({l, h, id::weights});
      ASSERT_EQ(w->rows(), 50);
      EXPECT_LT(max_diff(*w, *full.stage({l, h, id::weights})), 1e-5f) << l << "," << h;
    }
  // A map handed out before an append does not change under its holder.
  EXPECT_LT(max_diff(*early, full.stage({1, 2, id::weights})->topLeftCorner(48, 48)), 1e-5f);

  // Maps evicted between appends (room for two of six) are recomputed whole.
  ModelRun::Options small;
  small.cache_bytes = 2 * 50 * 50 * sizeof(float);
  ModelRun tight(tiny_model(), std::vector<int>(ids.begin(), ids.end() - 2), small);
  tight.append(ids[48]);
  ASSERT_TRUE(tight.stage({0, 0, id::weights}));
  tight.append(ids[49]);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 3; ++h)
      EXPECT_LT(max_diff(*tight.stage({l, h, id::weights}), *full.stage({l, h, id::weights})),
                1e-5f);
  EXPECT_LE(tight.cached_bytes(), small.cache_bytes);
}

TEST(ModelRun, TheCacheKeepsToItsBudget) {
  ModelRun::Options small;
  small.cache_bytes = 3 * 40 * 40 * sizeof(float);  // three 40 x 40 maps
  ModelRun run(tiny_model(), some_ids(40), small);
  EXPECT_LE(run.cached_bytes(), small.cache_bytes);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 3; ++h) {
      auto w = run.stage({l, h, id::weights});
      ASSERT_TRUE(w);
      EXPECT_NEAR(w->row(39).sum(), 1.0f, 1e-5f);
      EXPECT_LE(run.cached_bytes(), small.cache_bytes);
    }
}

TEST(ModelRun, RefusesTextItCannotRead) {
  EXPECT_THROW(ModelRun(tiny_model(), {}), std::invalid_argument);
  EXPECT_THROW(ModelRun(tiny_model(), some_ids(81)), std::invalid_argument);
  EXPECT_THROW(ModelRun(tiny_model(), {1, 50257}), std::invalid_argument);
  EXPECT_THROW(ModelRun(tiny_model(), {-1}), std::invalid_argument);
  ModelRun full(tiny_model(), some_ids(80));
  EXPECT_THROW(full.append(1), std::invalid_argument);
}

TEST(ModelRun, NextTokensAreTheLargestLogitsAsProbabilities) {
  ModelRun run(tiny_model(), some_ids(5));
  const auto next = run.next_tokens(10);
  ASSERT_EQ(next.size(), 10u);
  Eigen::Index best = 0;
  run.logits().row(0).maxCoeff(&best);
  EXPECT_EQ(next[0].id, best);
  for (std::size_t i = 1; i < next.size(); ++i)
    EXPECT_GE(next[i - 1].probability, next[i].probability);
  double total = 0;
  const float top = run.logits().maxCoeff();
  for (Eigen::Index j = 0; j < run.logits().cols(); ++j)
    total += std::exp(run.logits()(0, j) - top);
  EXPECT_NEAR(next[0].probability, 1.0 / total, 1e-9);
  EXPECT_EQ(generate_greedy(tiny_model(), some_ids(5), 1), std::vector<int>{next[0].id});
}

TEST(ModelRun, NextTokensAtAnyPositionSeeOnlyTheTextUpToIt) {
  const std::vector<int> ids = some_ids(12);
  ModelRun run(tiny_model(), ids);
  for (int p : {0, 4, 10}) {  // a run of the text up to p predicts the same there
    ModelRun prefix(tiny_model(), std::vector<int>(ids.begin(), ids.begin() + p + 1));
    const auto want = prefix.next_tokens(5), got = run.next_tokens_at(p, 5);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].id, want[i].id) << "position " << p << ", rank " << i;
      EXPECT_EQ(got[i].token, want[i].token);
      EXPECT_NEAR(got[i].probability, want[i].probability, 1e-6);
    }
  }
  const auto last = run.next_tokens_at(11, 3), plain = run.next_tokens(3);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(last[i].id, plain[i].id);
  EXPECT_NE(run.next_tokens_at(4, 1)[0].probability, plain[0].probability);
  EXPECT_THROW(run.next_tokens_at(12), std::invalid_argument);
  EXPECT_THROW(run.next_tokens_at(-1), std::invalid_argument);
}

TEST(ModelStages, SelectionDefaultsOrderAndRefusals) {
  ModelRun run(tiny_model(), some_ids(4));
  const auto keys = select_model_stages(run, {});
  ASSERT_EQ(keys.size(), 2u * 3u + 1u);  // every head's weights, then the logits
  EXPECT_EQ(keys.front().id, id::weights);
  EXPECT_EQ(keys.back().id, id::logits);
  EXPECT_EQ(keys.back().layer, -1);
  const auto some =
      select_model_stages(run, {{1}, {2}, {"logits", "context", "embeddings", "ln_1"}});
  ASSERT_EQ(some.size(), 4u);
  EXPECT_EQ(some[0].id, id::embeddings);
  EXPECT_EQ(some[1].id, id::ln_1);
  EXPECT_EQ(some[1].head, -1);
  EXPECT_EQ(some[2].id, id::context);
  EXPECT_EQ(some[2].layer, 1);
  EXPECT_EQ(some[2].head, 2);
  EXPECT_THROW(select_model_stages(run, {{}, {}, {"dropout_mask"}}), ParseError);
  EXPECT_THROW(select_model_stages(run, {{2}, {}, {}}), ParseError);
  EXPECT_THROW(select_model_stages(run, {{}, {-1}, {}}), ParseError);
  const Trace t = model_trace(run, some);
  ASSERT_EQ(t.stages.size(), 4u);
  EXPECT_EQ(t.num_layers(), 2);
  EXPECT_EQ(t.producer(), "random");
  EXPECT_EQ(t.stages[2].layer, 1);
}

TEST(ModelStages, EveryModelOnlyCatalogueRowIsMade) {
  ModelRun run(tiny_model(), some_ids(3));
  for (const StageInfo& s : stage_catalogue()) {
    EXPECT_TRUE(!s.model_only || s.model_scope != ModelScope::None) << s.id;
    if (s.model_scope == ModelScope::None) continue;
    const auto scope = model_stage_scope(s.id);
    ASSERT_TRUE(scope) << s.id;
    const int layer = *scope == ModelScope::Run ? -1 : 0;
    const int head = *scope == ModelScope::Head ? 0 : -1;
    EXPECT_TRUE(run.stage({layer, head, s.id})) << s.id;
    EXPECT_FALSE(s.model_symbol.empty()) << s.id;
  }
}

TEST(ModelStages, ABlockRunsFromLn1ThroughTheMlpToItsOutput) {
  namespace id = stage_id;
  const BlockStages b = block_stages();
  EXPECT_EQ(b.before_heads, std::vector<std::string_view>{id::ln_1});
  EXPECT_EQ(b.heads, (std::vector<std::string_view>{id::queries, id::keys, id::values, id::scores,
                                                    id::mask, id::masked_scores, id::scaled_scores,
                                                    id::weights, id::context}));
  EXPECT_EQ(b.after_heads, (std::vector<std::string_view>{
                               id::concat, id::output, id::attn_output, id::ln_2, id::mlp_hidden,
                               id::mlp_activation, id::mlp_output, id::block_output}));
  // The MLP's stages add up to the block's output, as forward_layer adds them.
  ModelRun mlp_run(tiny_model(), some_ids(9));
  for (int l = 0; l < mlp_run.num_layers(); ++l) {
    const auto attn = mlp_run.stage({l, -1, id::attn_output});
    const auto mlp = mlp_run.stage({l, -1, id::mlp_output});
    const auto out = mlp_run.stage({l, -1, id::block_output});
    ASSERT_TRUE(attn && mlp && out);
    EXPECT_LT(max_diff(*attn + *mlp, *out), 1e-5f) << "layer " << l;
    const auto h = mlp_run.stage({l, -1, id::mlp_hidden});
    const auto g = mlp_run.stage({l, -1, id::mlp_activation});
    ASSERT_TRUE(h && g);
    EXPECT_EQ(h->cols(), tiny_model()->config().n_inner);
    // GELU keeps large positive values and squashes negative ones towards 0.
    for (Eigen::Index k = 0; k < h->size(); ++k) {
      const float x = h->data()[k], y = g->data()[k];
      if (x > 3.0f) {
        EXPECT_NEAR(y, x, 0.01f * x);
      }
      if (x < -3.0f) {
        EXPECT_NEAR(y, 0.0f, 0.01f);
      }
    }
  }
  // GPT-2's recipe lists them all, and a model trace says what it is.
  const BlockDescription gpt2 = gpt2_block(tiny_model()->config());
  const std::vector<std::string_view> ids = block_stage_ids(gpt2.recipe);
  for (const auto* part : {&b.before_heads, &b.heads, &b.after_heads})
    for (std::string_view s : *part)
      EXPECT_NE(std::find(ids.begin(), ids.end(), s), ids.end()) << s;
  EXPECT_EQ(std::find(ids.begin(), ids.end(), id::dropout_mask), ids.end());  // eval mode
  ModelRun run(tiny_model(), some_ids(3));
  const Trace t = model_trace(run, {{0, 0, id::weights}});
  EXPECT_EQ(t.kind, TraceKind::ModelRun);
  EXPECT_EQ(t.recipe(), gpt2.recipe);
  EXPECT_EQ(t.heads_shown(), tiny_model()->config().n_head);
  EXPECT_EQ(t.head_dim(), tiny_model()->config().n_embd / tiny_model()->config().n_head);
  EXPECT_EQ(t.block_input_key().id, id::embeddings);
}

}  // namespace
}  // namespace attnscope::core
