// test_gpt2_retext.cpp: ModelRun::retext, the edit of a run's text, gives
// every stage a fresh run of the new text gives, whatever the edit (a
// longer, shorter or equally long text, an append, a cut, a change of the
// first token) and wherever it falls against the heads' tiles (8 query rows,
// the tiled kernel from 32 new rows, blocks of 64); and it refuses what the
// constructor refuses, leaving the run as it was.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnscope/base/stages.hpp"
#include "attnscope/model/gpt2_model.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

namespace id = stage_id;

// Two layers, three heads of 8: small enough for a sweep under the sanitizers.
const std::shared_ptr<const Gpt2Model>& small_model() {
  static const auto model = random_gpt2(testing::tiny_gpt2_config(160), 11);
  return model;
}

// n ids from `seed`: texts from different seeds differ at every position.
std::vector<int> ids_from(int seed, int n) {
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) ids.push_back((97 * seed + 31 * i * i + 17 * i + 5) % 50000);
  return ids;
}

std::vector<int> joined(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The largest difference between a and b relative to b's largest entry (at
// least 1); equal infinities (the masked scores) count as equal.
float relative_diff(const RowMatrix& a, const RowMatrix& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
  if (a.size() == 0) return 0.0f;
  const Eigen::ArrayXXf same = (a.array() == b.array()).cast<float>();
  const Eigen::ArrayXXf diff = (1.0f - same) * (a - b).array().abs().unaryExpr([](float v) {
    return std::isnan(v) ? 0.0f : v;
  });
  const float largest = b.array().isFinite().select(b.array().abs(), 0.0f).maxCoeff();
  return diff.maxCoeff() / std::max(1.0f, largest);
}

// Every stage of `got` against `want` (a fresh run of the same ids). Each
// head's weights are asked for first: the maps retext kept and extended,
// not a recompute of the head.
void expect_same_run(ModelRun& got, ModelRun& want, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.ids(), want.ids());
  EXPECT_EQ(got.tokens(), want.tokens());
  const float tolerance = 1e-4f;  // the append tests' (logits 1e-4 of the largest)
  EXPECT_LT(relative_diff(got.logits(), want.logits()), tolerance);
  auto same = [&](const StageKey& key) {
    const auto a = got.stage(key), b = want.stage(key);
    ASSERT_TRUE(a && b) << key.id << " " << key.layer << "," << key.head;
    EXPECT_LT(relative_diff(*a, *b), tolerance) << key.id << " " << key.layer << "," << key.head;
  };
  const Gpt2Config& c = want.model().config();
  for (int l = 0; l < c.n_layer; ++l)
    for (int h = 0; h < c.n_head; ++h) same({l, h, id::weights});
  for (const char* s : {id::embeddings, id::ln_f, id::logits}) same({-1, -1, s});
  for (int l = 0; l < c.n_layer; ++l) {
    for (const char* s : {id::ln_1, id::concat, id::output, id::attn_output, id::ln_2,
                          id::mlp_hidden, id::mlp_activation, id::mlp_output, id::block_output})
      same({l, -1, s});
    for (int h = 0; h < c.n_head; ++h)
      for (const char* s : {id::queries, id::keys, id::values, id::scores, id::masked_scores,
                            id::scaled_scores, id::weights, id::context})
        same({l, h, s});
  }
  const int T = want.num_tokens();
  for (int p : {0, T / 2, T - 1}) {
    const auto a = got.next_tokens_at(p, 3), b = want.next_tokens_at(p, 3);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].id, b[i].id) << "position " << p;
      EXPECT_NEAR(a[i].probability, b[i].probability, 1e-6) << "position " << p;
    }
  }
}

// A text of `prefix` tokens and `old_tail` more, retexted to the same prefix
// and `new_tail` other tokens.
void check_edit(int prefix, int old_tail, int new_tail, ModelRun::Options options) {
  const std::vector<int> head = ids_from(1, prefix);
  const std::vector<int> before = joined(head, ids_from(2, old_tail));
  const std::vector<int> after = joined(head, ids_from(3, new_tail));
  ModelRun run(small_model(), before, options);
  const int first = run.retext(after);
  const std::string what = "prefix " + std::to_string(prefix) + ", tail " +
                           std::to_string(old_tail) + " -> " + std::to_string(new_tail);
  EXPECT_EQ(first, new_tail > 0 ? prefix : static_cast<int>(after.size())) << what;
  ModelRun fresh(small_model(), after, options);
  expect_same_run(run, fresh, what);
}

// Prefixes and new tails on both sides of 8, 32 and 64 rows, two tails per
// prefix in turn (every pair would be too slow under the sanitizers); the
// old tail none (an append of the new tail), as long, shorter or longer.
void sweep(std::initializer_list<int> prefixes, int turn) {
  constexpr std::array tails{1, 8, 9, 31, 32, 33, 65};
  int k = 0;
  for (int p : prefixes) {
    for (int i = 0; i < 2; ++i) {
      const int n = tails[static_cast<std::size_t>(2 * turn + i) % tails.size()];
      const int old_tail = std::array{0, n, n / 2, n + 7}[k++ % 4];
      check_edit(p, old_tail, n, {});
      if (::testing::Test::HasFatalFailure()) return;
    }
    ++turn;
  }
}

TEST(ModelRunRetext, AnEditAfterAFewTokensGivesWhatAFreshRunGives) { sweep({1, 7, 8, 9, 31}, 0); }

TEST(ModelRunRetext, AnEditAfterManyTokensGivesWhatAFreshRunGives) {
  sweep({32, 33, 63, 64, 65}, 5);
}

TEST(ModelRunRetext, ACutTheFirstTokenAndNoCacheAlsoAgree) {
  check_edit(40, 9, 0, {});  // the text lost its end: no layer runs, new logits
  check_edit(1, 33, 0, {});
  check_edit(0, 20, 20, {});  // the first token changed: the whole forward
  check_edit(0, 70, 3, {});
  ModelRun::Options none;
  none.cache_bytes = 0;
  check_edit(33, 40, 9, none);
  ModelRun::Options tight;  // room for two of the six maps
  tight.cache_bytes = 2 * 100 * 100 * sizeof(float);
  check_edit(60, 40, 33, tight);
}

// Edits one after the other, with appends between, some maps settled and
// some not: the kept rows, the pending blocks and their cuts add up.
TEST(ModelRunRetext, EditsInARowKeepAgreeing) {
  ModelRun run(small_model(), ids_from(1, 70));
  std::vector<int> ids = run.ids();
  auto edit = [&](std::vector<int> next, const std::string& what) {
    run.retext(next);
    ids = std::move(next);
    ModelRun fresh(small_model(), ids);
    expect_same_run(run, fresh, what);
  };
  run.append(5);
  ids.push_back(5);
  ASSERT_TRUE(run.stage({0, 1, id::weights}));  // settled; the other maps still pending
  run.append(6);
  ids.push_back(6);
  edit(joined(std::vector<int>(ids.begin(), ids.begin() + 71), ids_from(4, 40)), "after appends");
  edit(joined(std::vector<int>(ids.begin(), ids.begin() + 90), ids_from(5, 2)), "inside a block");
  edit(std::vector<int>(ids.begin(), ids.begin() + 50), "a cut");
  edit(joined(ids, ids_from(6, 1)), "an append by retext");
  edit(joined(std::vector<int>(ids.begin(), ids.begin() + 8), ids_from(7, 100)), "a long tail");
}

TEST(ModelRunRetext, TheSameTextDoesNoWork) {
  ModelRun run(small_model(), ids_from(1, 40));
  const auto scores = run.stage({1, 2, id::scores});  // also caches the head's weights anew
  const auto map = run.stage({1, 2, id::weights});
  const std::size_t bytes = run.cached_bytes();
  EXPECT_EQ(run.retext(run.ids()), 40);
  // The same matrices: nothing recomputed.
  EXPECT_EQ(run.stage({1, 2, id::weights}).get(), map.get());
  EXPECT_EQ(run.stage({1, 2, id::scores}).get(), scores.get());
  EXPECT_EQ(run.cached_bytes(), bytes);
}

TEST(ModelRunRetext, RefusesWhatTheConstructorRefusesAndKeepsTheRun) {
  const std::vector<int> ids = ids_from(1, 30);
  ModelRun run(small_model(), ids);
  const RowMatrix logits = run.logits();
  const auto map = run.stage({0, 0, id::weights});
  const auto out = run.stage({1, -1, id::block_output});
  const std::vector<std::vector<int>> bad = {
      {},
      ids_from(2, 161),
      joined(ids, {50257}),
      joined(std::vector<int>(ids.begin(), ids.end() - 1), {-1})};
  for (const std::vector<int>& b : bad) {
    std::string refused, constructor;
    try {
      run.retext(b);
    } catch (const std::invalid_argument& e) {
      refused = e.what();
    }
    try {
      ModelRun(small_model(), b);
    } catch (const std::invalid_argument& e) {
      constructor = e.what();
    }
    EXPECT_FALSE(refused.empty());
    EXPECT_EQ(refused, constructor);
    EXPECT_EQ(run.ids(), ids);
    EXPECT_EQ(run.tokens().size(), ids.size());
    EXPECT_TRUE(run.logits() == logits);
    EXPECT_EQ(run.stage({0, 0, id::weights}).get(), map.get());
    EXPECT_EQ(run.stage({1, -1, id::block_output}).get(), out.get());
  }
  ModelRun fresh(small_model(), ids);
  expect_same_run(run, fresh, "after the refusals");
}

// The stages whose row i reads row i of the block's input (and a head's
// context, the keys before it) are asked for before an edit: the edit keeps
// their rows before it and the forward joins the new ones, so they are
// still cached after it (the other stages are recomputed when asked for),
// and they equal a fresh run's. Edits on both sides of the heads' tiles.
TEST(ModelRunRetext, RowWiseStagesLookedAtBeforeAnEditTakeTheNewRows) {
  const Gpt2Config& c = small_model()->config();
  auto look = [&](ModelRun& run) {
    for (int l = 0; l < c.n_layer; ++l) {
      for (const char* s : {id::ln_1, id::concat, id::output, id::attn_output, id::ln_2,
                            id::mlp_hidden, id::mlp_activation, id::mlp_output})
        ASSERT_TRUE(run.stage({l, -1, s}));
      for (int h = 0; h < c.n_head; ++h) ASSERT_TRUE(run.stage({l, h, id::context}));
    }
  };
  // Floats of those stages at T tokens: per layer six T x d, two T x the
  // MLP's width, and a T x head_dim context per head.
  auto row_wise_bytes = [&](int T) {
    const std::size_t d = static_cast<std::size_t>(c.n_embd);
    const std::size_t per_layer =
        6 * d + 2 * static_cast<std::size_t>(c.n_inner) +
        static_cast<std::size_t>(c.n_head) * static_cast<std::size_t>(c.head_dim());
    return static_cast<std::size_t>(T) * per_layer * static_cast<std::size_t>(c.n_layer) * 4;
  };
  for (int prefix : {1, 8, 9, 32, 33, 64}) {
    for (int tail : {1, 9, 33}) {
      const std::vector<int> before = joined(ids_from(1, prefix), ids_from(2, 5));
      const std::vector<int> after = joined(ids_from(1, prefix), ids_from(3, tail));
      ModelRun looked(small_model(), before), not_looked(small_model(), before);
      look(looked);
      looked.retext(after);
      not_looked.retext(after);
      const std::string what =
          "prefix " + std::to_string(prefix) + ", tail " + std::to_string(tail);
      EXPECT_EQ(looked.cached_bytes() - not_looked.cached_bytes(),
                row_wise_bytes(static_cast<int>(after.size())))
          << what;
      ModelRun fresh(small_model(), after);
      expect_same_run(looked, fresh, what);
      if (HasFatalFailure()) return;
    }
  }
  // An append extends them too; a text that only lost its end keeps their top rows.
  ModelRun run(small_model(), ids_from(1, 20)), plain(small_model(), ids_from(1, 20));
  look(run);
  run.append(7);
  plain.append(7);
  EXPECT_EQ(run.cached_bytes() - plain.cached_bytes(), row_wise_bytes(21));
  look(run);
  run.retext(ids_from(1, 12));
  plain.retext(ids_from(1, 12));
  EXPECT_EQ(run.cached_bytes() - plain.cached_bytes(), row_wise_bytes(12));
  ModelRun fresh(small_model(), ids_from(1, 12));
  expect_same_run(run, fresh, "a cut");
}

// layer_weights: every head's map of a layer as stage() gives it, the
// cached ones joined with their new rows, the others made and not cached.
TEST(ModelRunRetext, ALayersMapsAtOnceAreTheStagesMaps) {
  const std::vector<int> ids = ids_from(1, 70);
  ModelRun::Options tight;  // room for two of the six maps
  tight.cache_bytes = 2 * 75 * 75 * sizeof(float);
  ModelRun run(small_model(), ids, tight);
  run.retext(joined(std::vector<int>(ids.begin(), ids.begin() + 60), ids_from(2, 12)));
  ModelRun fresh(small_model(), run.ids());
  const std::size_t bytes = run.cached_bytes();
  for (int l = 0; l < 2; ++l) {
    const auto maps = run.layer_weights(l);
    ASSERT_EQ(maps.size(), 3u);
    for (int h = 0; h < 3; ++h) {
      ASSERT_TRUE(maps[static_cast<std::size_t>(h)]);
      EXPECT_LT(
          relative_diff(*maps[static_cast<std::size_t>(h)], *fresh.stage({l, h, id::weights})),
          1e-5f)
          << l << "," << h;
    }
  }
  EXPECT_LE(run.cached_bytes(), bytes + 2 * 72 * 72 * sizeof(float));  // at most the two joined
  EXPECT_THROW(run.layer_weights(2), std::invalid_argument);
  EXPECT_THROW(run.layer_weights(-1), std::invalid_argument);
}

}  // namespace
}  // namespace attnscope::core
