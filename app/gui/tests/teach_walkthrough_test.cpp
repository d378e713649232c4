// teach_walkthrough_test.cpp: the Learn features drawn without a window
// (ImGui's null backend, as headless_frame_test.cpp): the walkthrough driven
// from its first step to its last, every Learn window in every variant, and
// the edits they make (weights, embeddings) reaching the engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "attnscope/book/teach.hpp"
#include "figure/stage_figure.hpp"
#include "headless_imgui.hpp"
#include "imgui.h"
#include "imgui_internal.h"
#include "shell/ui.hpp"
#include "state/app_state.hpp"
#include "teach/teach.hpp"
#include "widgets/heatmap_view.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {
namespace {

class Teach : public ::testing::Test {
 protected:
  void SetUp() override { start_headless_imgui(state); }
  void TearDown() override { ImGui::DestroyContext(); }
  int frame() { return headless_frame(state); }
  void frames(int n) { headless_frames(state, n); }
  void open_all() {
    TeachState& t = state.teach;
    t.show_softmax = t.show_normalisation = t.show_masking = t.show_dropout = t.show_heads =
        t.show_compare = t.show_weights = t.show_embedding = t.show_sizes = t.show_book = true;
  }
  AppState state;
};

TEST_F(Teach, WalkthroughRunsFromFirstToLastStepWithTheBooksNumbers) {
  const auto& steps = walkthrough_steps();
  ASSERT_EQ(steps.size(), 16u);
  start_walkthrough(state, 0);
  frames(3);
  ASSERT_TRUE(state.teach.walk_active);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const WalkStep& s = steps[k];
    EXPECT_EQ(state.teach.walk_step, static_cast<int>(k));
    ASSERT_TRUE(state.trace);
    EXPECT_EQ(state.trace->config.variant, s.variant) << s.title;
    EXPECT_EQ(state.step, s.step) << s.title;
    EXPECT_TRUE(state.error.empty()) << state.error;
    // The highlighted cell survived the recompute.
    if (*s.pin_stage) {
      EXPECT_TRUE(state.pinned.valid()) << s.title;
      EXPECT_NE(state.trace->find(state.pinned.stage, state.pinned.head), nullptr) << s.title;
    }
    if (s.window) {
      EXPECT_TRUE(state.teach.*s.window) << s.title;
    }
    // Every book tensor this step shows is green.
    const StepMatrices m = step_matrices(state.step, *state.trace, state.head);
    int badges = 0;
    for (const core::Stage* st : m.outputs)
      for (const core::BookMatrix* b : core::book_matrices_for_stage(*state.trace, st->id)) {
        EXPECT_TRUE(core::check_book(*b, state.trace.get()).matches) << s.title << " " << b->name;
        ++badges;
      }
    // The book prints no split Q: no badge there. Its `masked` print is the
    // causal class's masked stage (raw scores, -inf in the future).
    if (s.dropout == 0.0 && s.step != Step::SplitHeads) {
      EXPECT_GT(badges, 0) << s.title << " " << step_id(s.step);
    }
    EXPECT_GT(frame(), 1000);
    state.teach.walk_apply = static_cast<int>(k) + 1 < static_cast<int>(steps.size())
                                 ? static_cast<int>(k) + 1
                                 : -1;  // what Next does
    frames(2);
  }
  // Back, then leave: the app keeps the last setup and the walkthrough closes.
  state.teach.walk_apply = state.teach.walk_step - 1;
  frames(2);
  EXPECT_EQ(state.teach.walk_step, static_cast<int>(steps.size()) - 2);
  state.teach.walk_active = false;
  frames(2);
  EXPECT_EQ(state.trace->config.variant, core::Variant::Multihead);
  EXPECT_EQ(state.step, Step::SplitHeads);
}

// The second tour sets up each class after chapter 3 with its own options,
// opens its Learn window, and what its words say holds in the run shown.
TEST_F(Teach, AfterChapter3TourSetsUpEachClassAndWhatItSaysHolds) {
  const auto& steps = walkthrough_steps(Tour::AfterChapter3);
  ASSERT_EQ(steps.size(), 11u);
  start_walkthrough(state, 0, Tour::AfterChapter3);
  frames(3);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const WalkStep& s = steps[k];
    SCOPED_TRACE(s.title);
    EXPECT_EQ(state.teach.walk_step, static_cast<int>(k));
    ASSERT_TRUE(state.trace);
    EXPECT_TRUE(state.error.empty()) << state.error;
    const core::Trace& t = *state.trace;
    EXPECT_EQ(t.config.variant, s.variant);
    EXPECT_EQ(state.step, s.step);
    EXPECT_EQ(t.config.rope, s.rope);
    EXPECT_FALSE(step_matrices(state.step, t, state.head).outputs.empty());
    if (*s.pin_stage) {
      EXPECT_TRUE(state.pinned.valid());
      EXPECT_NE(t.find(state.pinned.stage, state.pinned.head), nullptr);
    }
    if (s.window) {
      EXPECT_TRUE(state.teach.*s.window);
    }
    if (s.variant == core::Variant::GroupedQuery) {  // heads of a group read the same keys
      EXPECT_EQ(t.config.num_kv_groups, s.kv_groups);
      EXPECT_EQ(t.find("keys", 0)->data(), t.find("keys", 1)->data());
      EXPECT_EQ(t.find("keys", 1)->data() == t.find("keys", 2)->data(), s.kv_groups == 1);
    }
    if (s.variant == core::Variant::Latent) {
      EXPECT_EQ(t.find("latent_kv")->data().cols(), 4);
    }
    if (s.variant == core::Variant::SlidingWindow) {  // "step" weighs three keys
      const core::RowMatrix& w = t.find("weights", 0)->data();
      EXPECT_EQ((w.row(5).array() > 0.0f).count(), 3);
      EXPECT_EQ(w.row(5).head(3).sum(), 0.0f);
      EXPECT_NEAR(w.row(5).sum(), 1.0f, 1e-6f);
    }
    if (s.variant == core::Variant::Cross) {
      EXPECT_EQ(t.find("scores", 0)->data().rows(), 7);
      EXPECT_EQ(t.find("scores", 0)->data().cols(), 8);
      EXPECT_EQ(t.key_tokens.front(), "Kannst");
    }
    EXPECT_GT(frame(), 1000);
    if (k + 1 < steps.size()) state.teach.walk_apply = static_cast<int>(k) + 1;  // Next
    frames(2);
  }
  EXPECT_EQ(state.teach.walk_step, static_cast<int>(steps.size()) - 1);
  leave_walkthrough(state, true);
  frames(2);
  EXPECT_EQ(state.config.variant, core::Variant::Simple);  // the run before the tour
  EXPECT_FALSE(state.teach.show_kv_cache);
}

TEST_F(Teach, AnEditDuringTheWalkthroughTurnsTheBadgeIntoADifference) {
  start_walkthrough(state, 0);
  frames(3);
  state.inputs.embeddings(1, 1) += 0.25f;  // "drag journey's second value"
  state.mark_dirty();
  frames(2);
  const auto books = core::book_matrices_for_stage(*state.trace, "scores");
  ASSERT_FALSE(books.empty());
  for (const core::BookMatrix* b : books) {
    const core::BookCheck c = core::check_book(*b, state.trace.get());
    EXPECT_FALSE(c.matches) << b->name;
    // x_2 · x_2 grows by 2 · 0.87 · 0.25 + 0.25² (attn_weights_2_tmp divides it away).
    if (b->source == core::BookSource::Stage) {
      EXPECT_NEAR(c.max_diff, 0.4975f, 1e-4f) << b->name;
    }
  }
}

TEST_F(Teach, BookChecksSetUpAsksBeforeReplacingEditedInputs) {
  state.ui.welcome_dismissed = true;
  state.teach.show_book = true;
  state.config.variant = core::Variant::SelfAttentionV1;
  state.inputs.embeddings(0, 0) = 0.5f;  // the learner's edit
  state.inputs_replaced(InputOrigin::Edited);
  ImGui::GetIO().DisplaySize = ImVec2(1600, 1400);  // the whole Book check window
  frames(3);
  const core::RowMatrix edited = state.inputs.embeddings;
  // "Set u": a small button clips the descender of its "p".
  auto set_up = headless_text_at("Set u");
  ASSERT_TRUE(set_up) << headless_text();
  headless_click(state, *set_up);
  frames(2);
  EXPECT_EQ(state.inputs.embeddings, edited) << "nothing replaced before the answer";
  EXPECT_NE(squeezed(headless_text()).find("itreplacesyoureditedinputs"), std::string::npos)
      << headless_text();
  const auto cancel = headless_text_at("Cancel");
  ASSERT_TRUE(cancel);
  headless_click(state, *cancel);
  frames(2);
  EXPECT_EQ(state.inputs.embeddings, edited);
  EXPECT_EQ(state.origin, InputOrigin::Edited);
  set_up = headless_text_at("Set u");
  ASSERT_TRUE(set_up);
  headless_click(state, *set_up);
  frames(2);
  const auto replace = headless_text_at("Replace");
  ASSERT_TRUE(replace) << headless_text();
  headless_click(state, *replace);
  frames(3);
  EXPECT_EQ(state.origin, InputOrigin::Preset);
  EXPECT_EQ(state.inputs.embeddings, core::find_preset("book")->embeddings);
  EXPECT_NE(state.config.variant, core::Variant::SelfAttentionV1);
}

TEST_F(Teach, ABookBadgeAtAnotherDropoutSaysWhichTheBookPrintedAt) {
  const auto& steps = walkthrough_steps();
  int k = 0;
  while (k < static_cast<int>(steps.size()) &&
         std::string(steps[static_cast<std::size_t>(k)].title) != "The CausalAttention class")
    ++k;
  ASSERT_LT(k, static_cast<int>(steps.size()));
  start_walkthrough(state, k);
  frames(3);
  state.config.dropout = 0.5;
  state.mark_dirty();
  frames(3);
  const std::string shown = squeezed(headless_text());
  EXPECT_NE(shown.find(squeezed("printed at dropout 0.0; you have 0.5")), std::string::npos)
      << shown;
  EXPECT_EQ(shown.find("offby"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("bookΔ"), std::string::npos) << shown;
}

TEST_F(Teach, CompareNamesWhatDiffersAndNoSeedWithoutWeights) {
  state.config.variant = core::Variant::Simple;
  state.mark_dirty();
  frames(2);
  state.teach.show_compare = true;
  frames(1);
  // Click "Pin the current run as A", the window's first item; then edit an embedding.
  const ImGuiWindow* w = ImGui::FindWindowByName("Compare runs");
  ASSERT_NE(w, nullptr);
  const ImGuiStyle& style = ImGui::GetStyle();
  headless_click(state, ImVec2(w->Pos.x + style.WindowPadding.x + 10,
                               w->Pos.y + w->TitleBarHeight() + style.WindowPadding.y +
                                   ImGui::GetFrameHeight() * 0.5f));
  ASSERT_EQ(state.teach.compare_a, state.trace) << "the pin button was not hit";
  state.inputs.embeddings(1, 1) += 0.25f;
  state.inputs_replaced(InputOrigin::Edited);
  frames(3);
  const std::string shown = squeezed(headless_text());
  const std::size_t at = shown.find("PinthecurrentrunasA");
  ASSERT_NE(at, std::string::npos) << shown;
  const std::size_t a = shown.find("A:", at), b = shown.find("B:", a);
  const std::size_t end = std::min(shown.find("B−A", b), shown.find("B-A", b));
  ASSERT_NE(end, std::string::npos) << shown;
  const std::string line_a = shown.substr(a + 2, b - a - 2),
                    line_b = shown.substr(b + 2, end - b - 2);
  EXPECT_NE(line_a, line_b);
  EXPECT_NE(line_a.find("preset"), std::string::npos) << line_a;
  EXPECT_NE(line_b.find("edited"), std::string::npos) << line_b;
  // Simplified self-attention has no weights: no seed makes anything in it.
  EXPECT_EQ(line_a.find("seed"), std::string::npos) << line_a;
  EXPECT_EQ(line_b.find("seed"), std::string::npos) << line_b;
}

TEST_F(Teach, EveryLearnWindowDrawsInEveryVariant) {
  open_all();
  for (core::Variant v : core::kAllVariants) {
    state.config.variant = v;
    state.config.d_out = 4;
    state.config.num_heads = 2;
    state.config.dropout = 0.5;
    state.mark_dirty();
    frames(2);
    ASSERT_TRUE(state.error.empty()) << state.error;
    for (Step step : steps_for(v)) {
      state.step = step;
      EXPECT_GT(frame(), 1000) << core::variant_id(v) << " " << step_id(step);
    }
    state.teach.compare_a = state.trace;  // pin A, then change the seed: B differs
    state.config.seed = 789;
    state.mark_dirty();
    frames(3);
    state.config.seed = 123;
  }
}

TEST_F(Teach, TheDropoutAverageIsComputedOnDemandForTheCurrentTrace) {
  state.config.variant = core::Variant::Causal;
  state.config.dropout = 0.5;
  state.teach.show_dropout = true;
  state.mark_dirty();
  frames(2);
  EXPECT_FALSE(state.teach.average);  // nothing per frame
  const core::Stage* w = state.trace->find("weights");
  state.teach.average = core::dropout_average(w->data(), 0.5, 1, 200);
  state.teach.average_trace_version = state.trace_version;
  frames(2);
  ASSERT_TRUE(state.teach.average);
  EXPECT_LT(state.teach.average->max_error.back(), state.teach.average->max_error.front());
}

TEST_F(Teach, EditedWeightsRunThroughTheEngineAndResetReturnsToSeeded) {
  state.config.variant = core::Variant::SelfAttentionV1;
  state.mark_dirty();
  frames(2);
  const core::RowMatrix seeded = state.trace->find("context")->data();
  auto p = core::parameters_of(*state.trace);
  ASSERT_TRUE(p);
  p->qkv[0].value.weight(0, 0) += 1.0f;
  state.explicit_parameters = std::make_shared<const core::Parameters>(*p);
  state.mark_dirty();
  state.teach.show_weights = true;
  frames(2);
  EXPECT_TRUE(state.trace->explicit_weights);
  EXPECT_NE(state.trace->find("context")->data(), seeded);
  state.explicit_parameters.reset();  // "Reset to seeded"
  state.mark_dirty();
  frames(2);
  EXPECT_EQ(state.trace->find("context")->data(), seeded);
}

TEST_F(Teach, CompareShowsExactDifferencesBetweenPinnedAndCurrent) {
  state.config.variant = core::Variant::Causal;
  state.mark_dirty();
  frames(2);
  state.teach.show_compare = true;
  state.teach.compare_a = state.trace;
  state.config.seed = 789;
  state.mark_dirty();
  frames(3);
  const auto d = core::compare_stage(*state.teach.compare_a, *state.trace, "weights", -1);
  ASSERT_TRUE(d);
  EXPECT_GT(d->max_abs, 0.0f);
  EXPECT_EQ(d->diff(5, 0), state.trace->find("weights")->data()(5, 0) -
                               state.teach.compare_a->find("weights")->data()(5, 0));
}

// The child window of the main layout whose name contains `part`
// ("/walkthrough_", "/inspector_", "/stage_"), or nullptr.
const ImGuiWindow* layout_child(const char* part) {
  for (const ImGuiWindow* w : GImGui->Windows)
    if (w->Active && std::string(w->Name).find(part) != std::string::npos) return w;
  return nullptr;
}

TEST_F(Teach, LearnWindowsOpenInTheCentreClearOfTheStepperAndTheWalkthrough) {
  start_walkthrough(state, 11);  // dropout, p 0.5
  frames(3);
  open_all();
  frames(3);
  const ImGuiWindow* walk = layout_child("/walkthrough_");
  ASSERT_NE(walk, nullptr);
  const ImRect walk_r = walk->Rect();
  for (const char* name : {"Dropout lab", "Normalisation compared", "Head split", "Weights editor",
                           "Softmax unfolded", "Book check"}) {
    const ImGuiWindow* w = ImGui::FindWindowByName(name);
    ASSERT_NE(w, nullptr) << name;
    const ImRect r = w->Rect();
    EXPECT_FALSE(r.Overlaps(walk_r)) << name;
    EXPECT_GT(r.Min.y, 200.0f) << name << ": below the stage strip and explanation";
    EXPECT_LE(r.Max.y, 1000.0f) << name;
    EXPECT_GT(r.Min.x, 300.0f) << name << ": right of the controls";
  }
}

// The panel is the foot of the right column: it covers neither the
// inspector nor the matrices and their colour bars, and it stays where it
// is (Next with it) whatever each step says.
TEST_F(Teach, WalkthroughPanelCoversNothingAndNextStaysInOnePlace) {
  start_walkthrough(state, 0);
  frames(3);
  const ImGuiWindow* walk = layout_child("/walkthrough_");
  const ImGuiWindow* inspector = layout_child("/inspector_");
  const ImGuiWindow* stage = layout_child("/stage_");
  ASSERT_TRUE(walk && inspector && stage);
  const ImVec2 pos = walk->Pos, size = walk->Size;
  for (int k = 0; k < static_cast<int>(walkthrough_steps().size()); ++k) {
    state.teach.walk_apply = k;
    frames(3);
    walk = layout_child("/walkthrough_");
    inspector = layout_child("/inspector_");
    stage = layout_child("/stage_");
    ASSERT_TRUE(walk && inspector && stage) << k;
    EXPECT_FALSE(walk->Rect().Overlaps(inspector->Rect())) << k;
    EXPECT_FALSE(walk->Rect().Overlaps(stage->Rect())) << k;
    EXPECT_GT(inspector->Size.y, 250.0f) << k;
    EXPECT_EQ(walk->Pos.x, pos.x) << k;
    EXPECT_EQ(walk->Pos.y, pos.y) << k;
    EXPECT_EQ(walk->Size.y, size.y) << k;
  }
}

TEST_F(Teach, EachStepClosesTheWindowThePreviousStepOpened) {
  state.teach.show_book = true;  // the learner's own: stays open throughout
  start_walkthrough(state, 1);   // opens Normalisation
  frames(3);
  EXPECT_TRUE(state.teach.show_normalisation);
  state.teach.walk_apply = 2;  // the context vector: Normalisation would cover it
  frames(3);
  EXPECT_FALSE(state.teach.show_normalisation);
  state.teach.walk_apply = 6;  // Softmax unfolded
  frames(3);
  EXPECT_TRUE(state.teach.show_softmax);
  state.teach.walk_apply = 7;  // Z, which Softmax unfolded covered
  frames(3);
  EXPECT_FALSE(state.teach.show_softmax);
  EXPECT_TRUE(state.teach.show_book);
}

TEST_F(Teach, LeaveRestoresTheRunAndWindowsTheLearnerHadBefore) {
  state.config.variant = core::Variant::Multihead;
  state.config.d_out = 4;
  state.config.num_heads = 2;
  state.config.seed = 7;
  state.inputs.embeddings(0, 0) = 0.25f;
  state.step = Step::Context;
  state.pinned = CellRef{"context", 0, 3, 1};
  state.teach.show_compare = true;
  state.mark_dirty();
  frames(3);
  const core::Config before = state.config;
  const core::RowMatrix inputs = state.inputs.embeddings;
  start_walkthrough(state, 0);
  frames(3);
  for (int k : {1, 4, 9}) {
    state.teach.walk_apply = k;
    frames(3);
  }
  EXPECT_EQ(state.config.seed, 789u);
  leave_walkthrough(state, true);
  frames(3);
  EXPECT_FALSE(state.teach.walk_active);
  EXPECT_EQ(state.config.variant, before.variant);
  EXPECT_EQ(state.config.d_out, before.d_out);
  EXPECT_EQ(state.config.seed, before.seed);
  EXPECT_EQ(state.inputs.embeddings, inputs);
  EXPECT_EQ(state.trace->config.seed, 7u);
  EXPECT_EQ(state.step, Step::Context);
  EXPECT_EQ(state.pinned, (CellRef{"context", 0, 3, 1}));
  EXPECT_TRUE(state.teach.show_compare);
  EXPECT_FALSE(state.teach.show_masking);  // step 9 opened it

  // "Keep this run and leave" keeps the step's run.
  start_walkthrough(state, 4);
  frames(3);
  leave_walkthrough(state, false);
  frames(3);
  EXPECT_EQ(state.config.variant, walkthrough_steps()[4].variant);
}

// N or Enter: next step; P or Backspace: back (GLFW key codes in 1.86).
TEST_F(Teach, KeysStepTheWalkthrough) {
#if IMGUI_VERSION_NUM < 18700
  ImGui::GetIO().KeyMap[ImGuiKey_Enter] = 257;  // as the GLFW backend maps them
  ImGui::GetIO().KeyMap[ImGuiKey_Backspace] = 259;
#endif
  start_walkthrough(state, 3);
  frames(3);
  auto press = [&](int glfw_key, [[maybe_unused]] ImGuiKey named) {
#if IMGUI_VERSION_NUM < 18700
    ImGui::GetIO().KeysDown[glfw_key] = true;
    frames(1);
    ImGui::GetIO().KeysDown[glfw_key] = false;
#else
    ImGui::GetIO().AddKeyEvent(named, true);
    frames(1);
    ImGui::GetIO().AddKeyEvent(named, false);
#endif
    frames(2);
  };
#if IMGUI_VERSION_NUM < 18700
  const ImGuiKey n_key = ImGuiKey_COUNT, p_key = ImGuiKey_COUNT;  // unused in 1.86
#else
  const ImGuiKey n_key = ImGuiKey_N, p_key = ImGuiKey_P;
#endif
  press('N', n_key);
  EXPECT_EQ(state.teach.walk_step, 4);
  press(257, ImGuiKey_Enter);
  EXPECT_EQ(state.teach.walk_step, 5);
  press('P', p_key);
  EXPECT_EQ(state.teach.walk_step, 4);
  press(259, ImGuiKey_Backspace);
  EXPECT_EQ(state.teach.walk_step, 3);
}

// A first launch offers the walkthrough in a card over the stage; starting
// the walkthrough (or "Not now") hides it for good.
TEST_F(Teach, TheFirstRunCardOffersTheWalkthroughUntilItStarts) {
  frames(2);
  EXPECT_NE(layout_child("/welcome_"), nullptr);
  start_walkthrough(state, 0);
  frames(2);
  EXPECT_TRUE(state.ui.welcome_dismissed);
  EXPECT_EQ(layout_child("/welcome_"), nullptr);
  leave_walkthrough(state, true);
  frames(2);
  EXPECT_EQ(layout_child("/welcome_"), nullptr);
}

TEST_F(Teach, DropoutAverageAtPZeroOrOneIsExplainedNotReplaced) {
  state.config.variant = core::Variant::Causal;
  state.teach.show_dropout = true;
  for (double p : {0.0, 1.0}) {
    state.config.dropout = p;
    state.mark_dirty();
    frames(2);
    EXPECT_GT(frame(), 1000);
    EXPECT_FALSE(state.teach.average);  // the button is disabled, nothing computed
  }
  // The first seed shifts the seeds averaged over.
  const core::Stage* w = state.trace->find("weights");
  const auto a1 = core::dropout_average(w->data(), 0.5, 1, 1);
  const auto a7 = core::dropout_average(w->data(), 0.5, 7, 1);
  EXPECT_EQ(a7->mean, core::apply_dropout(w->data(), 0.5, 7));
  EXPECT_NE(a1->mean, a7->mean);
}

TEST_F(Teach, WeightsEditorShowsBiasesAndLargeMatrices) {
  state.config.variant = core::Variant::Multihead;
  state.config.qkv_bias = true;
  state.config.d_out = 80;  // wider than a table's 64 columns and the old 16 × 16 limit
  state.config.num_heads = 2;
  state.teach.show_weights = true;
  state.mark_dirty();
  frames(3);
  ASSERT_TRUE(state.error.empty()) << state.error;
  EXPECT_GT(frame(), 1000);
  const auto p = core::parameters_of(*state.trace);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->qkv[0].query.bias.cols(), 80);
  EXPECT_EQ(p->out.bias.cols(), 80);
}

TEST_F(Teach, StageTilesCarryBookBadgesForTheNewTensors) {
  state.config.variant = core::Variant::SelfAttentionV1;
  state.step = Step::Scores;
  state.mark_dirty();
  frames(2);
  const core::Stage* scores = state.trace->find("scores");
  ASSERT_NE(scores, nullptr);
  EXPECT_GT(stage_book_badge_width(state, *scores), 0.0f);
  EXPECT_EQ(core::check_book_stage(*state.trace, "scores").count, 2);  // + attn_score_22
  const core::Stage* scaled = state.trace->find("scaled_scores");
  ASSERT_NE(scaled, nullptr);
  EXPECT_EQ(stage_book_badge_width(state, *scaled), 0.0f);
  state.teach.show_normalisation = true;
  state.teach.show_heads = true;
  EXPECT_GT(frame(), 1000);
}

// How far the widest line of Learn window `name` reaches past its content
// region, in px (0 or less: everything is inside).
float overflow(const char* name) {
  const ImGuiWindow* w = ImGui::FindWindowByName(name);
  if (!w || !w->Active) return 1e9f;
  return w->ContentSize.x - w->ContentRegionRect.GetWidth();
}

TEST_F(Teach, BookCheckKeepsItsSetUpButtonsInsideTheWindow) {
  // A run whose description is long (context_vecs §3.6.1: the wrapper, d_out
  // 2, seed 123, 2 heads): its "Set up" used to sit past the window's edge.
  state.teach.show_book = true;
  frames(3);
  EXPECT_LE(overflow("Book check"), 1.0f);
}

TEST_F(Teach, HeadSplitOfTheBooksExampleHasReadableColumns) {
  state.config.variant = core::Variant::Causal;
  state.teach.show_heads = true;
  state.mark_dirty();
  frames(2);
  // The switch offers the book's example: d_out 2, 2 heads, seed 123.
  state.config.seed = 789;
  ImGuiWindow* w = ImGui::FindWindowByName("Head split");
  ASSERT_NE(w, nullptr);
  bool switched = false;
  for (float y = w->Pos.y + 30; y < w->Pos.y + 300 && !switched; y += 4) {
    ImGuiIO& io = ImGui::GetIO();
    for (bool down : {false, true, false}) {
      io.MousePos = ImVec2(w->Pos.x + 40, y);
      io.MouseDown[0] = down;
      frame();
    }
    switched = state.config.variant == core::Variant::Multihead;
  }
  ASSERT_TRUE(switched);
  EXPECT_EQ(state.config.d_out, 2);
  EXPECT_EQ(state.config.num_heads, 2);
  EXPECT_EQ(state.config.seed, 123u);
  ImGui::GetIO().MousePos = ImVec2(-1, -1);
  frames(3);
  // Each head's 6 × 1 block: cells at least 2 font sizes tall, not 8 px.
  const ImGuiWindow* block = nullptr;
  for (const ImGuiWindow* c : GImGui->Windows)
    if (c->Active && std::string(c->Name).find("##transposed") != std::string::npos) block = c;
  ASSERT_NE(block, nullptr);
  const float font = ImGui::GetFontSize();
  EXPECT_GE(block->ContentSize.y, 2 * 6 * font * 2.0f);  // two heads' blocks, scrolled
}

TEST_F(Teach, DifferenceHeatmapsAreLabelledLikeTheStageTheySubtract) {
  state.config.variant = core::Variant::Causal;
  state.mark_dirty();
  frames(2);
  const core::Trace& t = *state.trace;
  const core::Stage diff{"diff_weights", -1, t.find("weights")->data()};
  EXPECT_TRUE(rows_are_tokens(diff, t));
  EXPECT_TRUE(cols_are_tokens(diff, t));  // tokens, not 0..5
  const core::Stage diff_q{"diff_queries", -1, t.find("queries")->data()};
  EXPECT_TRUE(rows_are_tokens(diff_q, t));
  EXPECT_FALSE(cols_are_tokens(diff_q, t));
  // Its export too: tokens, a signed scale, a title in words.
  const figure::Heatmap h = figure::stage_heatmap(t, diff);
  EXPECT_EQ(h.col_labels, t.tokens);
  EXPECT_EQ(h.kind, figure::ScaleKind::Diverging);
  EXPECT_EQ(h.title, "difference of attention weights");
  // Compare's run lines stay inside its window.
  state.teach.show_compare = true;
  state.teach.compare_a = state.trace;
  state.config.seed = 789;
  state.config.dropout = 0.1;
  state.mark_dirty();
  frames(3);
  EXPECT_LE(overflow("Compare runs"), 1.0f);
}

TEST_F(Teach, EmbeddingSpaceNamesCloseDotsWithoutOverlap) {
  // "journey" (0.55, 0.87) and "starts" (0.57, 0.85) in dims 0 and 1.
  const std::vector<ImVec2> points = {{100, 100}, {103, 102}, {300, 50}};
  const std::vector<ImVec2> sizes = {{56, 17}, {44, 17}, {80, 17}};
  const ImVec4 bounds(0, 0, 340, 200);
  const std::vector<ImVec2> at = place_point_labels(points, sizes, bounds);
  ASSERT_EQ(at.size(), 3u);
  auto apart = [&](std::size_t a, std::size_t b) {
    return at[a].x + sizes[a].x <= at[b].x || at[b].x + sizes[b].x <= at[a].x ||
           at[a].y + sizes[a].y <= at[b].y || at[b].y + sizes[b].y <= at[a].y;
  };
  EXPECT_TRUE(apart(0, 1));
  EXPECT_TRUE(apart(0, 2));
  EXPECT_TRUE(apart(1, 2));
  for (std::size_t k = 0; k < at.size(); ++k) {  // inside, "step"-like labels near the edge too
    EXPECT_GE(at[k].x, bounds.x);
    EXPECT_LE(at[k].x + sizes[k].x, bounds.z);
  }
  state.teach.show_embedding = true;
  EXPECT_GT(frame(), 1000);
}

}  // namespace
}  // namespace attnscope::gui
