// test_family_trace.cpp: a family run as the app reads it
// (model/family_trace.hpp), on Qwen3- and Gemma 3-shaped folders written
// here: every stage of a block agrees with the forward and with the stage
// before it, the logits of any position, the loss, the next tokens and the
// induction scores.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "attnscope/base/stages.hpp"
#include "attnscope/model/family_trace.hpp"
#include "family_folder.hpp"
#include "temp_dir.hpp"

namespace attnscope::core {
namespace {

namespace id = stage_id;

std::shared_ptr<const FamilyModel> folder_model(const nlohmann::json& config, std::uint32_t seed,
                                                const core::testing::TempDir& dir,
                                                bool bf16 = false) {
  attnscope::testing::write_family_folder(dir.path(), config, seed, bf16);
  return FamilyModel::load(dir.path());
}

std::vector<int> some_ids(int T, int vocab) {
  std::vector<int> ids;
  for (int t = 0; t < T; ++t) ids.push_back((t * 37 + 11) % (vocab - 1));
  return ids;
}

// max |a - b| over the largest |b| (at least 1).
double relative(const RowMatrix& a, const RowMatrix& b) {
  EXPECT_EQ(a.rows(), b.rows());
  EXPECT_EQ(a.cols(), b.cols());
  if (a.rows() != b.rows() || a.cols() != b.cols()) return 1e9;
  return static_cast<double>((a - b).cwiseAbs().maxCoeff()) /
         std::max(1.0, static_cast<double>(b.cwiseAbs().maxCoeff()));
}

const RowMatrix& stage(const Trace& t, std::string_view sid, int head, int layer) {
  const Stage* s = t.find(StageKey{layer, head, sid});
  EXPECT_NE(s, nullptr) << sid << " head " << head << " layer " << layer;
  static const RowMatrix empty;
  return s ? s->data() : empty;
}

// One head's chain: scores from the rotated Q and K, the mask, the scaled
// scores' softmax equal to the weights, the context from the group's values.
void check_head(const Trace& t, const FamilyRun& run, int layer, int h) {
  const FamilyConfig& c = run.model().config();
  const int g = run.kv_group(h);
  const RowMatrix& q = stage(t, id::queries_rotated, h, layer);
  const RowMatrix& k = stage(t, id::keys_rotated, h, layer);
  EXPECT_LT(relative(k, stage(t, id::group_keys, g, layer)), 1e-7);
  EXPECT_LT(relative(q * k.transpose(), stage(t, id::scores, h, layer)), 1e-6);
  const RowMatrix& scaled = stage(t, id::scaled_scores, h, layer);
  const RowMatrix& weights = stage(t, id::weights, h, layer);
  const bool slides = c.sliding[static_cast<std::size_t>(layer)];
  EXPECT_EQ(t.find(StageKey{layer, h, id::window_mask}) != nullptr, slides);
  const Eigen::Index T = weights.rows();
  for (Eigen::Index i = 0; i < T; ++i) {
    double sum = 0.0, top = -std::numeric_limits<double>::infinity();
    for (Eigen::Index j = 0; j < T; ++j) {
      const bool hidden = j > i || (slides && j <= i - c.sliding_window);
      EXPECT_EQ(std::isinf(scaled(i, j)), hidden) << i << "," << j;
      if (hidden) {
        EXPECT_EQ(weights(i, j), 0.0f);
      } else {
        top = std::max(top, static_cast<double>(scaled(i, j)));
      }
    }
    for (Eigen::Index j = 0; j <= i; ++j)
      if (std::isfinite(scaled(i, j))) sum += std::exp(scaled(i, j) - top);
    for (Eigen::Index j = 0; j <= i; ++j) {
      if (std::isfinite(scaled(i, j))) {
        EXPECT_NEAR(weights(i, j), std::exp(scaled(i, j) - top) / sum, 2e-6);
      }
    }
  }
  const RowMatrix& v = stage(t, id::values, h, layer);
  EXPECT_LT(relative(weights * v, stage(t, id::context, h, layer)), 1e-6);
  EXPECT_LT(relative(v, stage(t, id::group_values, g, layer)), 1e-7);
}

void check_block(const std::shared_ptr<const FamilyModel>& model, int T) {
  const FamilyConfig& c = model->config();
  const FamilyRun run(model, some_ids(T, c.vocab_size));
  for (int layer = 0; layer < c.num_hidden_layers; ++layer) {
    const Trace t = family_layer_trace(run, layer, 1, true, {}, "", "tiny");
    EXPECT_EQ(t.kind, TraceKind::ModelBlock);
    EXPECT_EQ(t.block.recipe.has(BlockPart::Window), c.sliding[static_cast<std::size_t>(layer)]);
    EXPECT_TRUE(t.block.recipe.has(BlockPart::QkNorm));
    EXPECT_TRUE(t.block.recipe.has(BlockPart::KvGroups));
    for (int h = 0; h < c.num_attention_heads; ++h) check_head(t, run, layer, h);
    // The weights are the forward's own.
    const std::vector<RowMatrix> forward = run.layer_weights(layer);
    for (int h = 0; h < c.num_attention_heads; ++h)
      EXPECT_EQ(stage(t, id::weights, h, layer), forward[static_cast<std::size_t>(h)]);
    // The block's two halves add up to the next block's input.
    const RowMatrix sum =
        stage(t, id::attn_output, -1, layer) + stage(t, id::mlp_output, -1, layer);
    EXPECT_LT(relative(sum, run.residual(layer + 1)), 1e-5) << "layer " << layer << " T " << T;
    EXPECT_EQ(stage(t, id::block_output, -1, layer), run.residual(layer + 1));
    const bool last = layer == c.num_hidden_layers - 1;
    EXPECT_EQ(t.find(StageKey{-1, -1, id::logits}) != nullptr, last);
    if (last) {
      EXPECT_LT(relative(stage(t, id::logits, -1, -1), run.last_logits()), 1e-5);
    }
  }
}

TEST(FamilyTrace, EveryStageOfEachBlockAgreesWithTheForwardAcrossRowBlocks) {
  const core::testing::TempDir qwen_dir, gemma_dir;
  const auto qwen = folder_model(attnscope::testing::tiny_qwen3_config(), 3, qwen_dir);
  const auto gemma = folder_model(attnscope::testing::tiny_gemma3_config(), 4, gemma_dir);
  for (int T : {1, 2, 5, 31, 32, 33, 65}) {
    check_block(qwen, T);
    check_block(gemma, T);
  }
}

TEST(FamilyTrace, OnlyTheFocusedHeadKeepsEveryStageWhenAskedTo) {
  const core::testing::TempDir dir;
  const auto model = folder_model(attnscope::testing::tiny_qwen3_config(), 5, dir);
  const FamilyRun run(model, some_ids(9, 300));
  const Trace t = family_layer_trace(run, 1, 6, false, {}, "", "tiny");
  for (int h = 0; h < 8; ++h) {
    EXPECT_NE(t.find(StageKey{1, h, id::weights}), nullptr);
    EXPECT_EQ(t.find(StageKey{1, h, id::scores}) != nullptr, h == 6);
  }
  EXPECT_THROW(family_layer_trace(run, 3, 0, true, {}, "", "tiny"), std::invalid_argument);
  EXPECT_THROW(family_layer_trace(run, 0, 8, true, {}, "", "tiny"), std::invalid_argument);
  EXPECT_THROW(family_position_logits(run, 9), std::invalid_argument);
}

TEST(FamilyTrace, LossAndNextTokensReadEachPositionsLogits) {
  const core::testing::TempDir dir;
  const auto model = folder_model(attnscope::testing::tiny_gemma3_config(), 6, dir);
  const std::vector<int> ids = some_ids(40, 300);
  const FamilyRun run(model, ids);
  const TextLoss loss = family_text_loss(run);
  ASSERT_EQ(loss.per_token.size(), ids.size() - 1);
  double mean = 0.0;
  for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
    const RowMatrix logits = family_position_logits(run, static_cast<int>(i));
    const double top = logits.maxCoeff();
    const double lse = top + std::log((logits.array().cast<double>() - top).exp().sum());
    EXPECT_NEAR(loss.per_token[i], lse - logits(0, ids[i + 1]), 1e-4);
    EXPECT_LE(logits.cwiseAbs().maxCoeff(), 30.0f);  // softcapped at 30
    mean += loss.per_token[i];
  }
  EXPECT_NEAR(*loss.mean, mean / static_cast<double>(ids.size() - 1), 1e-9);
  // Losses known for a shared prefix are kept as given.
  const std::vector<double> known = {1.0, 2.0};
  const TextLoss again = family_text_loss(run, known);
  EXPECT_EQ(again.per_token[0], 1.0);
  EXPECT_EQ(again.per_token[1], 2.0);
  EXPECT_EQ(again.per_token[2], loss.per_token[2]);
  const std::vector<NextToken> next =
      family_next_tokens(run, 39, 5, [](int tid) { return "t" + std::to_string(tid); });
  ASSERT_EQ(next.size(), 5u);
  Eigen::Index best = 0;
  run.last_logits().row(0).maxCoeff(&best);
  EXPECT_EQ(next[0].id, best);
  EXPECT_EQ(next[0].token, "t" + std::to_string(best));
  for (std::size_t k = 1; k < next.size(); ++k)
    EXPECT_GE(next[k - 1].probability, next[k].probability);
}

TEST(FamilyTrace, InductionScoresEveryHeadOnTheRepeatedSequence) {
  const core::testing::TempDir dir;
  const auto model = folder_model(attnscope::testing::tiny_qwen3_config(), 7, dir);
  for (int bos : {-1, 299}) {
    const std::vector<double> scores = family_induction(model, 10, 0, bos);
    ASSERT_EQ(scores.size(), 3u * 8u);
    for (double s : scores) {
      EXPECT_GE(s, 0.0);
      EXPECT_LE(s, 1.0);
    }
  }
}

// An edit keeps the rows before its first changed token and runs the rest:
// everything equals a fresh run of the new text, at edits on both sides of
// the 32-row blocks and the window, appends, a shorter text, the same text.
// The edits are of `base` (some_ids(T)): pairs of the new ids and the tokens kept.
using Edits = std::vector<std::pair<std::vector<int>, int>>;
Edits edits_of(int T, const std::vector<std::pair<int, int>>& at_and_length) {
  Edits out;
  for (const auto& [at, length] : at_and_length) {
    std::vector<int> ids = some_ids(length, 300);
    if (at < length)
      ids[static_cast<std::size_t>(at)] = (ids[static_cast<std::size_t>(at)] + 5) % 299;
    out.emplace_back(ids, std::min({at, length - 1, T}));
  }
  return out;
}

void check_retext(const std::shared_ptr<const FamilyModel>& model, bool all_logits, int T,
                  const Edits& edits) {
  const std::vector<int> base = some_ids(T, 300);
  for (const auto& [ids, kept] : edits) {
    FamilyRun a(model, base, FamilyRun::Options{all_logits});
    EXPECT_EQ(a.retext(ids), kept);
    const FamilyRun b(model, ids, FamilyRun::Options{all_logits});
    const std::string what = "T " + std::to_string(ids.size()) + ", kept " + std::to_string(kept);
    EXPECT_EQ(a.ids(), ids);
    for (int l = 0; l <= a.num_layers(); ++l)
      EXPECT_LT(relative(a.residual(l), b.residual(l)), 1e-5) << what << " layer " << l;
    // The logits it kept: every row's, or the last's and, after an edit of
    // fewer than 8 rows, those rows' and the one before (what the loss reads).
    const int n = a.num_tokens();
    const int from = all_logits ? 0 : kept > 0 && n - kept < 8 ? kept - 1 : n - 1;
    EXPECT_EQ(a.logits_first(), from) << what;
    EXPECT_LT(relative(a.last_logits(), b.last_logits()), 1e-5) << what;
    for (int p = a.logits_first(); p < n; ++p)
      EXPECT_LT(relative(a.logits().row(p - a.logits_first()), family_position_logits(b, p)), 1e-5)
          << what << " position " << p;
    const TextLoss la = family_text_loss(a), lb = family_text_loss(b);
    ASSERT_EQ(la.per_token.size(), lb.per_token.size()) << what;
    for (std::size_t i = 0; i < la.per_token.size(); ++i)
      EXPECT_NEAR(la.per_token[i], lb.per_token[i], 1e-4) << what << " loss " << i;
    const auto name = [](int) { return std::string(); };
    EXPECT_EQ(family_next_tokens(a, n - 2, 3, name)[0].id,
              family_next_tokens(b, n - 2, 3, name)[0].id)
        << what;
    const int first = std::max(kept, 1) - 1;
    const std::vector<RowMatrix> rows = a.weight_rows(first);
    for (int l = 0; l < a.num_layers(); ++l) {
      const std::vector<RowMatrix> fresh = b.layer_weights(l);
      for (int h = 0; h < a.num_heads(); ++h) {
        const RowMatrix& m = fresh[static_cast<std::size_t>(h)];
        EXPECT_LT(relative(rows[static_cast<std::size_t>(l * a.num_heads() + h)],
                           m.bottomRows(m.rows() - first)),
                  1e-5)
            << what << " layer " << l << " head " << h;
      }
    }
  }
}

TEST(FamilyRetext, AnEditRunsOnlyTheNewRowsAndEqualsAFreshRun) {
  const core::testing::TempDir qwen_dir, gemma_dir;
  const auto qwen = folder_model(attnscope::testing::tiny_qwen3_config(), 8, qwen_dir);
  const auto gemma = folder_model(attnscope::testing::tiny_gemma3_config(), 9, gemma_dir);
  // Appends, edits on both sides of the 32-row blocks, of the first token,
  // a shorter text and the same text.
  const Edits edits =
      edits_of(40, {{40, 41}, {40, 45}, {31, 40}, {32, 40}, {33, 70}, {0, 40}, {19, 20}, {40, 40}});
  check_retext(qwen, false, 40, edits);
  check_retext(gemma, false, 40, edits);
  check_retext(gemma, true, 40, edits);
  FamilyRun run(qwen, some_ids(5, 300));
  EXPECT_THROW(run.retext({1, 300}), std::invalid_argument);
  EXPECT_EQ(run.num_tokens(), 5) << "a refused text leaves the run as it was";
  EXPECT_EQ(run.weight_rows(5)[0].rows(), 0);
  EXPECT_THROW(run.weight_rows(6), std::invalid_argument);
}

// At a real model's width (768, 12 query heads of 64 on 4 K/V heads) in
// BF16, the kernels' widened-in-register paths: the projections of a few
// rows and the LM head's dot products, 1 to 9 new rows around the 8-row
// tile, after 100 tokens.
TEST(FamilyRetext, AtARealWidthInBf16TheNewRowsEqualAFreshRun) {
  nlohmann::json c = attnscope::testing::tiny_qwen3_config();
  c["hidden_size"] = 768;
  c["intermediate_size"] = 1024;
  c["num_hidden_layers"] = 2;
  c["num_attention_heads"] = 12;
  c["num_key_value_heads"] = 4;
  c["head_dim"] = 64;
  const core::testing::TempDir dir;
  const auto model = folder_model(c, 12, dir, true);
  EXPECT_LT(model->weight_bytes(), 20u << 20) << "kept as BF16";
  check_retext(model, false, 100,
               edits_of(100, {{100, 101},
                              {99, 100},
                              {93, 100},
                              {92, 100},
                              {95, 104},
                              {96, 104},
                              {97, 105},
                              {64, 100}}));
  // The maps from the forward's kept queries equal those projected again
  // (a run that keeps none), after a fresh run and after edits.
  FamilyRun::Options none;
  none.kept_query_bytes = 0;
  FamilyRun kept(model, some_ids(100, 300)), projected(model, some_ids(100, 300), none);
  for (const std::vector<int>& ids : {some_ids(100, 300), some_ids(103, 300), some_ids(60, 300)}) {
    kept.retext(ids);
    projected.retext(ids);
    for (int l = 0; l < kept.num_layers(); ++l) {
      const std::vector<RowMatrix> a = kept.layer_weights(l), b = projected.layer_weights(l);
      for (std::size_t h = 0; h < a.size(); ++h)
        EXPECT_LT(relative(a[h], b[h]), 1e-6) << "T " << ids.size() << " layer " << l;
    }
    const std::vector<RowMatrix> ra = kept.weight_rows(40), rb = projected.weight_rows(40);
    for (std::size_t k = 0; k < ra.size(); ++k) EXPECT_LT(relative(ra[k], rb[k]), 1e-6);
  }
}

// A trace made with the last trace's rows (FamilyLayerRows) equals, stage
// for stage, the trace of a fresh run without them: after appends, edits on
// both sides of the 32-row blocks and the window, a shorter text, the same
// text, another layer and another model. The rows kept are this trace's.
void check_kept_rows(const std::shared_ptr<const FamilyModel>& model,
                     const std::shared_ptr<const FamilyModel>& other) {
  const FamilyConfig& c = model->config();
  FamilyRun run(model, some_ids(40, 300));
  FamilyLayerRows rows;
  int layer = 1;
  family_layer_trace(run, layer, 0, true, {}, "", "tiny", -1, &rows);
  ASSERT_EQ(rows.ids, run.ids());
  ASSERT_EQ(rows.stages.normed.rows(), 40);
  const Edits edits =
      edits_of(40, {{40, 41}, {41, 45}, {31, 45}, {33, 70}, {0, 70}, {19, 20}, {20, 20}});
  for (std::size_t e = 0; e <= edits.size(); ++e) {
    const std::vector<int>& ids = e < edits.size() ? edits[e].first : run.ids();
    if (e == edits.size()) layer = 0;  // another layer: nothing is kept from layer 1
    run.retext(ids);
    const Trace kept = family_layer_trace(run, layer, 1, true, {}, "", "tiny", -1, &rows);
    const FamilyRun fresh(model, ids);
    const Trace whole = family_layer_trace(fresh, layer, 1, true, {}, "", "tiny");
    ASSERT_EQ(kept.stages.size(), whole.stages.size()) << "edit " << e;
    for (std::size_t k = 0; k < whole.stages.size(); ++k) {
      const Stage& a = kept.stages[k];
      const Stage& b = whole.stages[k];
      ASSERT_TRUE(a.layer == b.layer && a.head == b.head && a.id == b.id) << "edit " << e;
      EXPECT_LT(relative(a.data(), b.data()), 1e-5)
          << "edit " << e << " stage " << b.id << " head " << b.head;
    }
    EXPECT_EQ(rows.ids, ids) << "edit " << e;
    EXPECT_EQ(rows.layer, layer);
    ASSERT_TRUE(rows.mlp_output);
    EXPECT_EQ(rows.mlp_output->rows(), static_cast<Eigen::Index>(ids.size()));
    EXPECT_EQ(kept.find(StageKey{layer, -1, id::mlp_output})->shared_data(), rows.mlp_output)
        << "the trace and the rows share the matrix";
    EXPECT_EQ(rows.stages.keys_rotated.rows(), static_cast<Eigen::Index>(ids.size()));
    EXPECT_EQ(rows.stages.queries_normed.size() > 0, c.qk_norm);
  }
  // Rows of another model's run are not read.
  FamilyRun theirs(other, run.ids());
  const Trace a = family_layer_trace(theirs, layer, 0, true, {}, "", "tiny", -1, &rows);
  const Trace b = family_layer_trace(theirs, layer, 0, true, {}, "", "tiny");
  EXPECT_EQ(stage(a, id::mlp_output, -1, layer), stage(b, id::mlp_output, -1, layer));
  EXPECT_EQ(rows.model, &theirs.model());
}

TEST(FamilyTrace, AnEditsTraceReadsTheKeptRowsAndEqualsAFreshTrace) {
  const core::testing::TempDir qwen_dir, gemma_dir, other_dir;
  const auto qwen = folder_model(attnscope::testing::tiny_qwen3_config(), 13, qwen_dir);
  const auto gemma = folder_model(attnscope::testing::tiny_gemma3_config(), 14, gemma_dir);
  const auto other = folder_model(attnscope::testing::tiny_qwen3_config(), 15, other_dir);
  check_kept_rows(qwen, other);
  check_kept_rows(gemma, other);
}

}  // namespace
}  // namespace attnscope::core
