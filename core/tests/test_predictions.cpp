// test_predictions.cpp: the book's sampling draws what torch.multinomial
// draws after torch.manual_seed, top-k keeps ties, the loss is each next
// token's -log p, and the logit lens ends at the model's own prediction.
// (Against the book's generate() and GPTModel: app/tests/model_sampling_oracle_test.py.)
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>

#include "attnscope/model/gpt2_model.hpp"
#include "attnscope/model/predictions.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

// 300 logits (i * 37 mod 101) / 25: many equal values, so cuts meet ties.
RowMatrix ramp_logits() {
  RowMatrix l(1, 300);
  for (int i = 0; i < 300; ++i) l(0, i) = static_cast<float>((i * 37) % 101) / 25.0f;
  return l;
}

TEST(BookSampler, DrawsWhatTorchMultinomialDrawsAfterManualSeed) {
  // torch.manual_seed(s); torch.multinomial(softmax(cut(l) / t), 1), twelve times.
  const RowMatrix l = ramp_logits();
  BookSampler plain(Sampling{1.0, 0, 123});
  const std::vector<int> want_plain{292, 256, 90, 117, 262, 106, 232, 226, 87, 34, 199, 240};
  for (int w : want_plain) EXPECT_EQ(plain.next(l), w);
  BookSampler cut(Sampling{0.7, 20, 5});
  const std::vector<int> want_cut{109, 109, 191, 292, 251, 221, 79, 49, 292, 60, 210, 90};
  for (int w : want_cut) EXPECT_EQ(cut.next(l), w);
}

TEST(BookSampler, GreedyIsTheFirstLargestLogitWithOrWithoutACut) {
  const RowMatrix l = ramp_logits();  // 4.0 first at i = 100 * 37^-1 mod 101
  int first = 0;
  for (int i = 1; i < 300; ++i)
    if (l(0, i) > l(0, first)) first = i;
  EXPECT_EQ(BookSampler(Sampling{0.0, 0, 1}).next(l), first);
  EXPECT_EQ(BookSampler(Sampling{0.0, 3, 1}).next(l), first);
}

TEST(SamplingStep, TheCutKeepsTiesAndTheTemperatureFlattens) {
  const RowMatrix l = ramp_logits();  // every value 0..100/25 appears 2 or 3 times
  const SamplingStep s = sampling_step(l, Sampling{2.0, 4, 0});
  EXPECT_FLOAT_EQ(s.cut, 99.0f / 25.0f);
  int kept = 0;
  double after = 0.0;
  for (int i = 0; i < 300; ++i) {
    kept += l(0, i) >= s.cut;
    after += s.after[static_cast<std::size_t>(i)];
    if (l(0, i) < s.cut) {
      EXPECT_EQ(s.after[static_cast<std::size_t>(i)], 0.0f);
    }
  }
  EXPECT_EQ(s.kept, kept);
  EXPECT_GT(s.kept, 4);  // the ties at the cut stay
  EXPECT_NEAR(after, 1.0, 1e-5);
  // A higher temperature moves probability from the top token to the others.
  const SamplingStep hot = sampling_step(l, Sampling{4.0, 4, 0});
  std::size_t top = 0;
  for (std::size_t i = 1; i < 300; ++i)
    if (s.after[i] > s.after[top]) top = i;
  EXPECT_LT(hot.after[top], s.after[top]);
  const SamplingStep greedy = sampling_step(l, Sampling{});
  EXPECT_EQ(greedy.after[top], 1.0f);
  EXPECT_EQ(greedy.kept, 300);
}

TEST(Sampling, RefusesValuesThatCannotSample) {
  EXPECT_THROW(check_sampling(Sampling{-0.5, 0, 0}, 10), std::invalid_argument);
  EXPECT_THROW(check_sampling(Sampling{std::numeric_limits<double>::infinity(), 0, 0}, 10),
               std::invalid_argument);
  EXPECT_THROW(check_sampling(Sampling{1.0, 11, 0}, 10), std::invalid_argument);
  EXPECT_THROW(check_sampling(Sampling{1.0, -1, 0}, 10), std::invalid_argument);
  EXPECT_NO_THROW(check_sampling(Sampling{1.0, 10, 0}, 10));
}

const std::shared_ptr<const Gpt2Model>& tiny_model() {
  static const auto model = random_gpt2(testing::tiny_gpt2_config(80), 11);
  return model;
}

std::vector<int> some_ids(int n) {
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) ids.push_back((97 * i * i + 13 * i + 3) % 50257);
  return ids;
}

TEST(TextLoss, IsEachNextTokensMinusLogProbability) {
  // 70 tokens: more than one block of 64 rows of logits.
  ModelRun run(tiny_model(), some_ids(70));
  const TextLoss loss = text_loss(run);
  ASSERT_EQ(loss.per_token.size(), 69u);
  const int V = tiny_model()->config().vocab_size;
  double sum = 0.0;
  for (int i : {0, 1, 63, 64, 68}) {
    const int target = run.ids()[static_cast<std::size_t>(i + 1)];
    for (const NextToken& n : run.next_tokens_at(i, V))
      if (n.id == target) {
        EXPECT_NEAR(loss.per_token[static_cast<std::size_t>(i)], -std::log(n.probability), 1e-4)
            << "position " << i;
      }
  }
  for (double v : loss.per_token) sum += v;
  ASSERT_TRUE(loss.mean && loss.perplexity);
  EXPECT_NEAR(*loss.mean, sum / 69.0, 1e-12);
  EXPECT_NEAR(*loss.perplexity, std::exp(*loss.mean), 1e-9 * *loss.perplexity);

  ModelRun one(tiny_model(), some_ids(1));
  const TextLoss none = text_loss(one);
  EXPECT_TRUE(none.per_token.empty());
  EXPECT_FALSE(none.mean || none.perplexity);
}

TEST(LogitLens, EndsAtTheModelsOwnPredictionAtEveryPosition) {
  ModelRun run(tiny_model(), some_ids(70));
  const int L = run.num_layers();
  for (int position : {0, 7, 64, 69}) {
    const LensColumn lens = logit_lens(run, position, 5);
    ASSERT_EQ(lens.layers.size(), static_cast<std::size_t>(L + 1));
    const auto want = run.next_tokens_at(position, 5);
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(lens.layers.back()[i].id, want[i].id);
      EXPECT_NEAR(lens.layers.back()[i].probability, want[i].probability, 1e-6);
    }
  }
  EXPECT_THROW(logit_lens(run, 70, 5), std::invalid_argument);
  EXPECT_THROW(logit_lens(run, -1, 5), std::invalid_argument);
  EXPECT_THROW(logit_lens(run, 0, 0), std::invalid_argument);
}

// An edit's forward reads the LM head once for the last row and the rows
// whose loss changed (up to kLossRowsWithLogits of them); text_loss takes
// those and gives what a fresh run's loss gives, on both sides of the limit.
TEST(TextLoss, TakesTheLossRowsTheForwardRead) {
  const int T = 70;
  const auto limit = static_cast<int>(ModelRun::kLossRowsWithLogits);
  for (int first : {T - 1, T - limit, T - limit - 1, 20}) {
    std::vector<int> ids = some_ids(T);
    ModelRun run(tiny_model(), ids);
    const TextLoss before = text_loss(run);
    for (int t = first; t < T; ++t)
      ids[static_cast<std::size_t>(t)] = (ids[static_cast<std::size_t>(t)] + 5) % 50257;
    ASSERT_EQ(run.retext(ids), first);
    const std::string what = "first changed token " + std::to_string(first);
    EXPECT_EQ(run.loss_logits_from(), T - first <= limit ? first - 1 : T - 1) << what;
    const std::span<const double> known(before.per_token.data(),
                                        static_cast<std::size_t>(first - 1));
    const TextLoss got = text_loss(run, known);
    ModelRun fresh(tiny_model(), ids);
    const TextLoss want = text_loss(fresh);
    ASSERT_EQ(got.per_token.size(), want.per_token.size()) << what;
    for (std::size_t i = 0; i < want.per_token.size(); ++i)
      EXPECT_NEAR(got.per_token[i], want.per_token[i], 1e-5) << what << " token " << i;
    EXPECT_NE(got.per_token.back(), before.per_token.back()) << what;
  }
  ModelRun one(tiny_model(), some_ids(1));
  EXPECT_TRUE(text_loss(one).per_token.empty());
  EXPECT_EQ(one.loss_logits_from(), 0);
}

TEST(LogitLens, TheGridsTopTokenIsEachColumnsFirst) {
  ModelRun run(tiny_model(), some_ids(66));
  const LensGrid grid = logit_lens_grid(run);
  ASSERT_EQ(grid.layers, run.num_layers() + 1);
  ASSERT_EQ(grid.positions, 66);
  for (int position : {0, 63, 64, 65}) {
    const LensColumn lens = logit_lens(run, position, 1);
    for (int l = 0; l < grid.layers; ++l) {
      EXPECT_EQ(grid.at(l, position).id, lens.layers[static_cast<std::size_t>(l)][0].id);
      EXPECT_NEAR(grid.at(l, position).probability,
                  lens.layers[static_cast<std::size_t>(l)][0].probability, 1e-6);
    }
  }
  std::atomic<bool> cancel{true};
  EXPECT_EQ(logit_lens_grid(run, &cancel).top.size(), 0u);
}

TEST(Predictions, AnEditReusesWhatCameBeforeIt) {
  // Two texts sharing their first 65 tokens: the losses of positions 0..63
  // and the grid's first 65 columns carry over; the rest is computed.
  std::vector<int> a = some_ids(70), b = some_ids(65);
  for (int id : {9, 8, 7, 6, 5, 4, 3, 2}) b.push_back(id);
  ModelRun ra(tiny_model(), a), rb(tiny_model(), b);
  const TextLoss la = text_loss(ra), want = text_loss(rb);
  const TextLoss got = text_loss(rb, std::span<const double>(la.per_token).first(64));
  ASSERT_EQ(got.per_token.size(), want.per_token.size());
  for (std::size_t i = 0; i < 64; ++i) EXPECT_EQ(got.per_token[i], la.per_token[i]);  // taken
  for (std::size_t i = 0; i < got.per_token.size(); ++i)
    EXPECT_NEAR(got.per_token[i], want.per_token[i], 1e-5)
        << i;  // runs of other lengths round differently
  const LensGrid ga = logit_lens_grid(ra), gb = logit_lens_grid(rb);
  const LensGrid mixed = logit_lens_grid(rb, nullptr, &ga, 65);
  ASSERT_EQ(mixed.top.size(), gb.top.size());
  for (int l = 0; l < mixed.layers; ++l)  // taken, not recomputed
    EXPECT_EQ(mixed.at(l, 64).probability, ga.at(l, 64).probability);
  for (std::size_t i = 0; i < gb.top.size(); ++i) {
    EXPECT_EQ(mixed.top[i].id, gb.top[i].id) << i;
    EXPECT_NEAR(mixed.top[i].probability, gb.top[i].probability, 1e-6) << i;
  }
}

}  // namespace
}  // namespace attnscope::core
