// app_state_test.cpp: the stepper's steps, the recompute point, selection
// upkeep, stage texts, and the command line's checks.
#include "state/app_state.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "attnscope/attention/embedding.hpp"
#include "attnscope/io/io.hpp"
#include "shell/launch_options.hpp"
#include "temp_dir.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {
namespace {

std::vector<std::string> ids(const std::vector<Step>& steps) {
  std::vector<std::string> out;
  for (Step s : steps) out.emplace_back(step_id(s));
  return out;
}

AppState book(core::Variant v, int d_out = 2, int heads = 1) {
  AppState s;
  EXPECT_TRUE(s.load_preset("book"));
  s.config.variant = v;
  s.config.d_out = d_out;
  s.config.num_heads = heads;
  s.recompute_if_dirty();
  return s;
}

TEST(Steps, FollowThePipelineOrderOfEachVariant) {
  using V = core::Variant;
  EXPECT_EQ(ids(steps_for(V::Simple)),
            (std::vector<std::string>{"inputs", "scores", "softmax", "context"}));
  EXPECT_EQ(ids(steps_for(V::SelfAttentionV2)),
            (std::vector<std::string>{"inputs", "qkv", "scores", "scaled", "softmax", "context"}));
  EXPECT_EQ(ids(steps_for(V::Causal)),
            (std::vector<std::string>{"inputs", "qkv", "scores", "mask", "masked", "scaled",
                                      "softmax", "dropout", "context"}));
  EXPECT_EQ(ids(steps_for(V::MultiheadWrapper)).back(), "concat");
  EXPECT_EQ(
      ids(steps_for(V::Multihead)),
      (std::vector<std::string>{"inputs", "qkv", "split", "scores", "mask", "masked", "scaled",
                                "softmax", "dropout", "context", "concat", "output"}));
}

TEST(Steps, ParseStepIdsAndTraceStageIds) {
  EXPECT_EQ(parse_step("scaled"), Step::Scaled);
  EXPECT_EQ(parse_step("scaled_scores"), Step::Scaled);
  EXPECT_EQ(parse_step("weights"), Step::Softmax);
  EXPECT_EQ(parse_step("dropped_weights"), Step::Dropout);
  EXPECT_FALSE(parse_step("nonsense").has_value());
  for (core::Variant v : core::kAllVariants)
    for (Step s : steps_for(v)) EXPECT_EQ(parse_step(step_id(s)), s);
}

TEST(Steps, EveryStepOfEveryVariantHasTextAndAMatrix) {
  for (core::Variant v : core::kAllVariants) {
    AppState s = book(v, 4, 2);
    ASSERT_TRUE(s.trace) << s.error;
    for (Step st : steps_for(v)) {
      const StepText t = describe_step(st, *s.trace, 1);
      EXPECT_FALSE(t.title.empty());
      EXPECT_FALSE(t.plain.empty());
      EXPECT_FALSE(t.formula.empty());
      EXPECT_EQ(t.shapes.find('?'), std::string::npos) << step_id(st) << ": " << t.shapes;
      EXPECT_FALSE(step_matrices(st, *s.trace, 1).outputs.empty()) << step_id(st);
    }
  }
}

// The classes after chapter 3 walk their own steps, in the book's order:
// the latent before the projections, RoPE before the K/V heads are shared,
// the window after the causal mask. Each step's text quotes this run.
TEST(Steps, TheClassesAfterChapter3AddTheirOwnSteps) {
  using V = core::Variant;
  AppState gqa = book(V::GroupedQuery, 8, 4);
  gqa.config.num_kv_groups = 2;
  gqa.config.rope = true;
  gqa.mark_dirty();
  gqa.recompute_if_dirty();
  ASSERT_TRUE(gqa.trace) << gqa.error;
  EXPECT_EQ(ids(steps_for(*gqa.trace)),
            (std::vector<std::string>{"inputs", "qkv", "split", "rope", "kv_groups", "scores",
                                      "mask", "masked", "scaled", "softmax", "dropout", "context",
                                      "concat", "output"}));
  const StepText groups = describe_step(Step::KvGroups, *gqa.trace, 3);
  EXPECT_NE(groups.plain.find("heads 0–1 read K/V head 0 and heads 2–3 head 1"), std::string::npos)
      << groups.plain;
  EXPECT_EQ(step_matrices(Step::KvGroups, *gqa.trace, 3).outputs.size(), 4u);  // K_g, V_g x 2
  EXPECT_EQ(per_head_stage(Step::KvGroups, *gqa.trace), "keys");
  // Query heads 2 and 3 read the same keys; heads 1 and 2 do not.
  EXPECT_EQ(gqa.trace->find("keys", 2)->data(), gqa.trace->find("keys", 3)->data());
  EXPECT_NE(gqa.trace->find("keys", 1)->data(), gqa.trace->find("keys", 2)->data());
  const StepMatrices scores = step_matrices(Step::Scores, *gqa.trace, 1);
  ASSERT_EQ(scores.inputs.size(), 2u);
  EXPECT_EQ(scores.inputs[0]->id, "queries_rotated");
  EXPECT_NE(describe_step(Step::Rotate, *gqa.trace, 0).formula.find("10000^(−2i/2)"),
            std::string::npos);

  AppState swa = book(V::SlidingWindow, 4, 2);
  swa.config.window = 2;
  swa.mark_dirty();
  swa.recompute_if_dirty();
  ASSERT_TRUE(swa.trace) << swa.error;
  const std::vector<std::string> swa_steps = ids(steps_for(*swa.trace));
  EXPECT_EQ(std::vector<std::string>(swa_steps.begin() + 4, swa_steps.begin() + 7),
            (std::vector<std::string>{"mask", "window", "masked"}));
  // Six tokens, window 2: 15 future cells and 10 more than one back.
  EXPECT_NE(describe_step(Step::WindowMask, *swa.trace, 0)
                .shapes.find("25 of 36 entries hidden (15 by the causal mask, 10 by the window)"),
            std::string::npos);
  EXPECT_EQ(step_matrices(Step::Masked, *swa.trace, 0).inputs[1]->id, "window_mask");

  AppState mla = book(V::Latent, 4, 2);
  ASSERT_TRUE(mla.trace) << mla.error;
  EXPECT_EQ(ids(steps_for(*mla.trace))[1], "latent");
  EXPECT_NE(describe_step(Step::Latent, *mla.trace, 0).plain.find("latent_dim = 16"),
            std::string::npos);
  EXPECT_NE(describe_step(Step::Projections, *mla.trace, 0).formula.find("K = C_kv·W_UK"),
            std::string::npos);

  AppState cross = book(V::Cross, 4, 2);
  ASSERT_TRUE(cross.trace) << cross.error;
  EXPECT_EQ(ids(steps_for(*cross.trace))[1], "memory");
  EXPECT_NE(describe_step(Step::Memory, *cross.trace, 0).plain.find("M is X itself"),
            std::string::npos);
  for (const AppState* a : {&gqa, &swa, &mla, &cross})
    for (Step st : steps_for(*a->trace)) {
      const StepText t = describe_step(st, *a->trace, 1);
      EXPECT_EQ(t.shapes.find('?'), std::string::npos) << step_id(st) << ": " << t.shapes;
      EXPECT_FALSE(t.plain.empty()) << step_id(st);
      EXPECT_FALSE(step_matrices(st, *a->trace, 1).outputs.empty()) << step_id(st);
    }
}

TEST(Steps, ScoreShapesReadLikeTheIssueSays) {
  AppState s = book(core::Variant::SelfAttentionV2);
  EXPECT_EQ(describe_step(Step::Scores, *s.trace, 0).shapes, "Q (6×2) · Kᵀ (2×6) → ω (6×6)");
}

TEST(Recompute, InvalidConfigKeepsTheLastGoodTraceAndSaysWhy) {
  AppState s = book(core::Variant::Multihead, 4, 2);
  ASSERT_TRUE(s.trace);
  const auto version = s.trace_version;
  s.config.d_out = 3;  // not divisible by 2 heads
  s.mark_dirty();
  s.recompute_if_dirty();
  EXPECT_EQ(s.trace_version, version);
  ASSERT_TRUE(s.trace);
  EXPECT_EQ(s.trace->config.d_out, 4);
  EXPECT_NE(s.error.find("divisible"), std::string::npos) << s.error;
  s.config.d_out = 6;
  s.mark_dirty();
  s.recompute_if_dirty();
  EXPECT_TRUE(s.error.empty());
  EXPECT_GT(s.trace_version, version);
}

TEST(Recompute, NothingHappensUnlessDirty) {
  AppState s = book(core::Variant::Causal);
  const auto version = s.trace_version;
  s.recompute_if_dirty();
  EXPECT_EQ(s.trace_version, version);
}

TEST(Selection, StepSnapsToTheNearestEarlierStepWhenTheVariantLosesIt) {
  AppState s = book(core::Variant::Causal);
  s.step = Step::Masked;  // the book masks the raw scores: Masked comes before Scaled
  s.config.variant = core::Variant::SelfAttentionV2;
  s.mark_dirty();
  s.recompute_if_dirty();
  EXPECT_EQ(s.step, Step::Scores);
}

TEST(Selection, StepByClampsAtBothEnds) {
  AppState s = book(core::Variant::Simple);
  s.step_by(-5);
  EXPECT_EQ(s.step, Step::Inputs);
  s.step_by(+3);
  EXPECT_EQ(s.step, Step::Context);
  s.step_by(+1);
  EXPECT_EQ(s.step, Step::Context);
}

TEST(Selection, PinnedCellFollowsHeadsAndIsDroppedWhenOutOfRange) {
  AppState s = book(core::Variant::Causal);
  s.pinned = CellRef{"weights", -1, 5, 5};
  s.config.variant = core::Variant::Multihead;
  s.config.num_heads = 2;
  s.mark_dirty();
  s.recompute_if_dirty();
  EXPECT_EQ(s.pinned.head, 0);  // now the weights of head 0
  s.inputs.embeddings.conservativeResize(3, 3);
  s.inputs.tokens.resize(3);
  s.mark_dirty();
  s.recompute_if_dirty();
  EXPECT_FALSE(s.pinned.valid());
}

// --- command line -----------------------------------------------------------

AppState launched(std::vector<std::string> args) {
  std::vector<char*> argv;
  std::string name = "attnscope";
  argv.push_back(name.data());
  for (auto& a : args) argv.push_back(a.data());
  LaunchOptions o;
  const auto r = parse_launch_options(static_cast<int>(argv.size()), argv.data(), o);
  EXPECT_TRUE(r.run);
  AppState s;
  s.load_preset("book");
  apply_launch_options(o, s);
  return s;
}

std::string launch_error(std::vector<std::string> args) {
  try {
    launched(std::move(args));
  } catch (const core::ParseError& e) {
    return e.what();
  }
  return {};
}

// Launches on top of `held` (a restored session when `session`); "" or the error.
std::string launch_over(AppState& held, std::vector<std::string> args, bool session) {
  std::string name = "attnscope";
  std::vector<char*> argv{name.data()};
  for (auto& a : args) argv.push_back(a.data());
  LaunchOptions o;
  EXPECT_TRUE(parse_launch_options(static_cast<int>(argv.size()), argv.data(), o).run);
  try {
    apply_launch_options(o, held, session);
  } catch (const core::ParseError& e) {
    return e.what();
  }
  return {};
}

// Pearson correlation of W_query (d_in, d_out) with the inputs' first
// d_in * d_out values, both in the order the generator drew them.
double w_query_follows_inputs(const AppState& s) {
  const core::Stage* w = s.trace->find("W_query", -1);
  EXPECT_NE(w, nullptr);
  if (!w) return 1.0;
  const Eigen::Index n = w->data().size();
  const Eigen::ArrayXd a =
      Eigen::Map<const Eigen::ArrayXf>(s.inputs.embeddings.data(), n).cast<double>();
  const Eigen::ArrayXd b = Eigen::Map<const Eigen::ArrayXf>(w->data().data(), n).cast<double>();
  const Eigen::ArrayXd da = a - a.mean(), db = b - b.mean();
  return (da * db).sum() / std::sqrt((da * da).sum() * (db * db).sum());
}

// Under one seed, SelfAttention_v1's W_query = torch.rand(d_in, d_out) would
// repeat the first inputs exactly, and Q, K, V would show stripes.
TEST(LaunchOptions, RandomInputsHaveASeedOfTheirOwnSoWQueryIsNoCopyOfThem) {
  AppState s = launched({"--random", "64,16", "--variant", "self_attention_v1", "--d-out", "16"});
  EXPECT_EQ(s.input_seed, core::kDefaultInputSeed);
  EXPECT_EQ(s.config.seed, 123u);
  EXPECT_EQ(s.inputs.embeddings, core::random_inputs(64, 16, core::kDefaultInputSeed).embeddings);
  s.recompute_if_dirty();
  ASSERT_TRUE(s.trace) << s.error;
  EXPECT_TRUE(s.origin == InputOrigin::Random);  // the Embeddings panel names the seed
  EXPECT_LT(std::abs(w_query_follows_inputs(s)), 0.3);

  AppState same = launched({"--random", "64,16", "--input-seed", "123", "--variant",
                            "self_attention_v1", "--d-out", "16"});
  same.recompute_if_dirty();
  ASSERT_TRUE(same.trace) << same.error;
  EXPECT_NEAR(w_query_follows_inputs(same), 1.0, 1e-9);  // the copy the default avoids

  // An edited value (the panel's cell says so): no longer the draw of the seed.
  s.inputs.embeddings(3, 3) = 0.5f;
  s.inputs_replaced(InputOrigin::Edited);
  s.recompute_if_dirty();
  EXPECT_EQ(s.origin, InputOrigin::Edited);
}

TEST(LaunchOptions, InputSeedAloneRedrawsRandomInputsAndBadValuesExitWithTwo) {
  AppState s;
  s.input_seed = 5;
  s.draw_random_inputs(4, 3);
  s.inputs.tokens[0] = "named";
  EXPECT_EQ(launch_over(s, {"--input-seed", "6"}, true), "");
  EXPECT_EQ(s.input_seed, 6u);
  EXPECT_EQ(s.inputs.embeddings, core::random_inputs(4, 3, 6).embeddings);
  EXPECT_EQ(s.inputs.tokens[0], "named");
  EXPECT_TRUE(s.origin == InputOrigin::Random);

  for (std::vector<std::string> bad : {std::vector<std::string>{"--input-seed", "-1"},
                                       {"--input-seed", "x"},
                                       {"--random", "0,3"},
                                       {"--random", "5"}}) {
    std::string name = "attnscope";
    std::vector<char*> argv{name.data()};
    for (auto& a : bad) argv.push_back(a.data());
    LaunchOptions o;
    const auto r = parse_launch_options(static_cast<int>(argv.size()), argv.data(), o);
    EXPECT_FALSE(r.run) << bad[0] << " " << bad[1];
    EXPECT_EQ(r.exit_code, 2) << bad[0] << " " << bad[1];
  }
}

// A value the user did not type is named with where it came from and the
// flag that changes it.
TEST(LaunchOptions, AValueFromTheSavedSessionIsNamedWithTheFlagThatChangesIt) {
  auto saved = [](AppState& s) {
    s.load_preset("book");
    s.config.variant = core::Variant::Multihead;
    s.config.d_out = 4;
    s.config.num_heads = 2;
  };
  {
    AppState s;
    saved(s);
    EXPECT_EQ(
        launch_over(s, {"--random", "512,64", "--variant", "multihead", "--heads", "8"}, true),
        "d_out (4, from the saved session) must be divisible by num_heads (8): pass --d-out "
        "8 (or a multiple of 8)");
  }
  {
    AppState s;
    saved(s);
    EXPECT_EQ(launch_over(s, {"--d-out", "9"}, true),
              "d_out (9) must be divisible by num_heads (2, from the saved session): pass --heads "
              "with a divisor of 9 (1, 3, 9)");
  }
  {
    AppState s;
    saved(s);
    EXPECT_EQ(launch_over(s, {"--d-out", "4", "--heads", "3"}, true),
              "d_out (4) must be divisible by num_heads (3)");  // both typed: core's words
  }
  {
    AppState s;
    saved(s);
    EXPECT_EQ(launch_over(s, {"--head", "3"}, true),
              "--head 3 is out of range: there are 2 heads (0 to 1, from the saved session): "
              "pass --heads 4 or more");
  }
  {
    AppState s;
    saved(s);
    s.config.variant = core::Variant::SelfAttentionV2;
    EXPECT_EQ(launch_over(s, {"--stage", "mask"}, true),
              "stage 'mask' is not part of SelfAttention_v2 (the saved session's variant; its "
              "stages: inputs, qkv, scores, scaled, softmax, context): pass --variant causal (or "
              "another with it)");
  }
  // Without a session the held value is the default.
  EXPECT_EQ(launch_error({"--variant", "multihead", "--heads", "3"}),
            "d_out (2, the default) must be divisible by num_heads (3): pass --d-out 3 (or a "
            "multiple of 3)");
  EXPECT_EQ(launch_error({"--head", "1"}),
            "--head needs a variant with heads (multihead_wrapper or multihead); the default "
            "variant is simple: pass --variant multihead");
}

TEST(LaunchOptions, FlagsSetVariantStageHeadAndCell) {
  AppState s = launched({"--variant", "multihead", "--d-out", "4", "--heads", "2", "--stage",
                         "weights", "--head", "1", "--cell", "2,1", "--preset", "shiny"});
  EXPECT_EQ(s.config.variant, core::Variant::Multihead);
  EXPECT_EQ(s.step, Step::Softmax);
  EXPECT_EQ(s.head, 1);
  EXPECT_EQ(s.inputs.tokens.front(), "Hello");
  EXPECT_EQ(s.pinned, (CellRef{"weights", 1, 2, 1}));  // shiny has 3 tokens: row 2 is the last
}

TEST(LaunchOptions, DecimalsDefaultToTheBooksFourAndTakeOneToSix) {
  EXPECT_EQ(launched({}).ui.decimals, 4);
  EXPECT_EQ(launched({"--decimals", "6"}).ui.decimals, 6);
  EXPECT_EQ(launch_error({"--decimals", "9"}), "--decimals (9) must be between 1 and 6");
}

TEST(LaunchOptions, ThemeTakesDarkOrLightAndNamesThemWhenWrong) {
  EXPECT_EQ(launched({}).files.theme, figure::Theme::Light);
  EXPECT_EQ(launched({"--theme", "dark"}).files.theme, figure::Theme::Dark);
  EXPECT_EQ(launch_error({"--theme", "blue"}), "--theme 'blue' is not a theme: use dark or light");
}

TEST(LaunchOptions, RowScaleIsAutomaticUnlessAskedFor) {
  EXPECT_EQ(launched({}).ui.row_scale, figure::RowScale::Auto);
  EXPECT_EQ(launched({"--row-scale"}).ui.row_scale, figure::RowScale::On);
  EXPECT_EQ(launched({"--no-row-scale"}).ui.row_scale, figure::RowScale::Off);
  std::vector<std::string> both = {"attnscope", "--row-scale", "--no-row-scale"};
  std::vector<char*> argv;
  for (auto& a : both) argv.push_back(a.data());
  LaunchOptions o;
  EXPECT_FALSE(parse_launch_options(static_cast<int>(argv.size()), argv.data(), o).run);
}

// The book runs both multi-head classes with 2 heads; a learner who asks for
// one by name from the book's single-head example gets the book's table.
TEST(LaunchOptions, AMultiHeadVariantWithoutHeadsStartsWithTheBooksTwo) {
  AppState s = launched({"--variant", "multihead"});
  EXPECT_EQ(s.config.num_heads, 2);
  EXPECT_EQ(s.config.d_out, 2);
  s.recompute_if_dirty();
  ASSERT_TRUE(s.trace) << s.error;
  const core::Stage* out = s.trace->find("output", -1);
  ASSERT_NE(out, nullptr);
  EXPECT_NEAR(out->data()(0, 0), 0.3190f, 5e-5f);  // the book's first and last rows
  EXPECT_NEAR(out->data()(0, 1), 0.4858f, 5e-5f);
  EXPECT_NEAR(out->data()(5, 0), 0.2575f, 5e-5f);
  EXPECT_NEAR(out->data()(5, 1), 0.4028f, 5e-5f);

  EXPECT_EQ(launched({"--variant", "multihead_wrapper"}).config.num_heads, 2);
  EXPECT_EQ(launched({"--variant", "multihead", "--heads", "1"}).config.num_heads, 1);  // asked
  EXPECT_EQ(launched({"--variant", "multihead", "--d-out", "3"}).config.num_heads, 1);  // odd d_out
  EXPECT_EQ(launched({"--variant", "causal"}).config.num_heads, 1);
}

TEST(LaunchOptions, BadValuesGetTheCliMessages) {
  EXPECT_NE(launch_error({"--variant", "nope"}).find("unknown variant 'nope'"), std::string::npos);
  EXPECT_NE(
      launch_error({"--variant", "multihead", "--d-out", "3", "--heads", "2"}).find("divisible"),
      std::string::npos);
  EXPECT_NE(launch_error({"--dropout", "1.5"}).find("dropout"), std::string::npos);
  EXPECT_NE(launch_error({"--preset", "nope"}).find("unknown preset"), std::string::npos);
  EXPECT_NE(launch_error({"--variant", "simple", "--stage", "mask"}).find("not part of"),
            std::string::npos);
  EXPECT_NE(launch_error({"--stage", "bogus"}).find("unknown stage"), std::string::npos);
  EXPECT_NE(launch_error({"--variant", "multihead_wrapper", "--heads", "2", "--head", "2"})
                .find("out of range"),
            std::string::npos);
  EXPECT_NE(launch_error({"--stage", "scores", "--cell", "9,9"}).find("outside"),
            std::string::npos);
  EXPECT_NE(launch_error({"--config", "/nonexistent/x.json"}).find("cannot open"),
            std::string::npos);
  // An empty path is refused as attnscope-cli refuses it, not ignored.
  EXPECT_EQ(launch_error({"--config", ""}), "--config needs a file path (or - for standard input)");
}

TEST(LaunchOptions, AHubIdNotDownloadedOpensTheWindowThatGetsItUnlessFlagsNeedTheModel) {
  core::testing::TempDir cache;
  const char* was = std::getenv("HF_HUB_CACHE");
  const std::string saved = was ? was : "";
  setenv("HF_HUB_CACHE", cache.path().c_str(), 1);
  const AppState s = launched({"--model", "openai-community/gpt2"});
  EXPECT_TRUE(s.model.get.open);
  EXPECT_EQ(s.model.get.field, "openai-community/gpt2");
  EXPECT_EQ(s.source, Source::Model);
  EXPECT_FALSE(s.model.model);
  EXPECT_NE(s.model.load_error.find("Get a model window"), std::string::npos) << s.model.load_error;
  // --layer needs the model at launch: the launch is refused with why.
  EXPECT_NE(launch_error({"--model", "openai-community/gpt2", "--layer", "3"})
                .find("not in the Hugging Face cache"),
            std::string::npos);
  if (saved.empty())
    unsetenv("HF_HUB_CACHE");
  else
    setenv("HF_HUB_CACHE", saved.c_str(), 1);
}

TEST(LaunchOptions, SeedIsParsedLikeTheCliNeverWrapped) {
  auto parse = [](std::vector<std::string> args, LaunchOptions& o) {
    std::string name = "attnscope";
    std::vector<char*> argv{name.data()};
    for (auto& a : args) argv.push_back(a.data());
    return parse_launch_options(static_cast<int>(argv.size()), argv.data(), o);
  };
  LaunchOptions o;
  EXPECT_TRUE(parse({"--seed", "18446744073709551615"}, o).run);
  EXPECT_EQ(o.run.parsed_seed(), std::uint64_t{18446744073709551615u});
  for (const char* bad : {"-1", "1e3", "18446744073709551616", "12x", ""}) {
    LaunchOptions refused;
    const auto r = parse({"--seed", bad}, refused);
    EXPECT_FALSE(r.run) << bad;
    EXPECT_EQ(r.exit_code, 2) << bad;
  }
}

TEST(TextInputs, TypedTextBecomesChapter2sEmbeddingsAndEditsLetGo) {
  AppState s;
  s.load_preset("book");
  s.text_source = TextSource{{"Your journey starts"}, 4, 7, 0};
  ASSERT_TRUE(s.embed_text());
  const core::Inputs want =
      core::chapter2_inputs(core::tokenize_text("Your journey starts", 4, 7, 0));
  EXPECT_EQ(s.inputs.tokens, (std::vector<std::string>{"Your", " journey", " starts"}));
  EXPECT_EQ(s.inputs.embeddings, want.embeddings);
  ASSERT_EQ(s.text_source.typed.tokens.size(), 3u);
  EXPECT_EQ(s.text_source.typed.tokens[1].id, 7002);  // " journey"
  EXPECT_EQ(s.text_source.typed.tokens[1].start, 4u);
  EXPECT_TRUE(s.origin == InputOrigin::Text);
  s.recompute_if_dirty();
  ASSERT_TRUE(s.trace);
  EXPECT_EQ(s.trace->num_tokens(), 3);

  // Text that cannot be embedded keeps the inputs and says why.
  s.text_source.typed.text = "";
  EXPECT_FALSE(s.embed_text());
  EXPECT_FALSE(s.text_source.typed.error.empty());
  EXPECT_EQ(s.inputs.embeddings, want.embeddings);
  s.text_source = TextSource{{"one two three"}, 3, 1, 2};  // 3 tokens, 2 positions
  EXPECT_FALSE(s.embed_text());
  EXPECT_NE(s.text_source.typed.error.find("3"), std::string::npos) << s.text_source.typed.error;

  // An edited value is no longer the text's; a preset is not either.
  s.text_source = TextSource{{"Your journey starts"}, 4, 7, 0};
  ASSERT_TRUE(s.embed_text());
  EXPECT_TRUE(s.text_source.typed.error.empty());
  EXPECT_EQ(s.source, Source::Text);
  s.recompute_if_dirty();
  s.inputs.embeddings(0, 0) += 1.0f;
  s.inputs_replaced(InputOrigin::Edited);
  s.recompute_if_dirty();
  EXPECT_EQ(s.origin, InputOrigin::Edited);
  EXPECT_EQ(s.source, Source::Inputs);
  ASSERT_TRUE(s.embed_text());
  s.load_preset("book");
  EXPECT_EQ(s.origin, InputOrigin::Preset);
  EXPECT_EQ(s.source, Source::Inputs);
}

// One source at a time: the text source embeds the text, the inputs source
// goes back to the preset from text-made inputs, and a model keeps the
// chapter-3 inputs as they were for the way back.
TEST(TextInputs, TheSourceSwitchTellsWhereTheMatricesComeFrom) {
  AppState s;
  s.load_preset("book");
  const core::Inputs book = s.inputs;
  s.set_source(Source::Text);
  EXPECT_EQ(s.source, Source::Text);
  EXPECT_EQ(s.origin, InputOrigin::Text);
  EXPECT_EQ(s.inputs.tokens.size(), s.text_source.typed.tokens.size());
  s.set_source(Source::Model);
  EXPECT_EQ(s.source, Source::Model);
  EXPECT_EQ(s.chapter3_source(), Source::Text);
  EXPECT_FALSE(s.model.typed.tokens.empty());  // encoded for the model (GPT-2's tokenizer)
  s.set_source(Source::Inputs);
  EXPECT_EQ(s.origin, InputOrigin::Preset);
  EXPECT_EQ(s.inputs.embeddings, book.embeddings);

  // Text that cannot be embedded stays off: the inputs remain the source.
  s.text_source.typed.text = "";
  s.set_source(Source::Text);
  EXPECT_EQ(s.source, Source::Inputs);
  EXPECT_FALSE(s.text_source.typed.error.empty());
  EXPECT_EQ(parse_source("chapter3"), Source::Inputs);  // what older sessions saved
  for (Source v : {Source::Inputs, Source::Text, Source::Model})
    EXPECT_EQ(parse_source(source_id(v)), v);
  for (InputOrigin o : {InputOrigin::Preset, InputOrigin::Random, InputOrigin::Imported,
                        InputOrigin::Edited, InputOrigin::Text})
    EXPECT_EQ(parse_input_origin(input_origin_id(o)), o);
}

TEST(LaunchOptions, TextGivesChapter2InputsAndRefusesOtherInputSources) {
  AppState s;
  s.load_preset("book");
  EXPECT_EQ(
      launch_over(
          s, {"--text", "Hello, world!", "--d-in", "5", "--embed-seed", "9", "--positions", "8"},
          false),
      "");
  EXPECT_TRUE(s.origin == InputOrigin::Text);
  EXPECT_EQ(s.inputs.embeddings,
            core::chapter2_inputs(core::tokenize_text("Hello, world!", 5, 9, 8)).embeddings);
  EXPECT_EQ(launch_over(s, {"--text", "a b c", "--positions", "2"}, false).substr(0, 7), "--text:");
  // --text-file: the same inputs from a file.
  core::testing::TempDir dir;
  std::ofstream(dir.path() / "hello.txt") << "Hello, world!";
  AppState f;
  EXPECT_EQ(launch_over(f,
                        {"--text-file", (dir.path() / "hello.txt").string(), "--d-in", "5",
                         "--embed-seed", "9", "--positions", "8"},
                        false),
            "");
  EXPECT_EQ(f.inputs.embeddings,
            core::chapter2_inputs(core::tokenize_text("Hello, world!", 5, 9, 8)).embeddings);
  for (std::vector<std::string> bad : {std::vector<std::string>{"--text", "a", "--preset", "book"},
                                       {"--text", "a", "--random", "3,2"},
                                       {"--text-file", "x", "--preset", "book"},
                                       {"--d-in", "4"}}) {
    std::string name = "attnscope";
    std::vector<char*> argv{name.data()};
    for (auto& a : bad) argv.push_back(a.data());
    LaunchOptions o;
    EXPECT_FALSE(parse_launch_options(static_cast<int>(argv.size()), argv.data(), o).run)
        << bad[0] << " " << bad[1];
  }
}

}  // namespace
}  // namespace attnscope::gui
