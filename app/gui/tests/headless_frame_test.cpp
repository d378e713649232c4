// headless_frame_test.cpp: the whole UI, drawn without a window. ImGui's
// null-backend approach: set DisplaySize, build the font atlas, then
// NewFrame / draw_ui / Render, feeding mouse and keys through ImGuiIO.
// Textures are NullTexture (no GL). An ImGui assertion or a crash fails.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>

#include "attnscope/attention/modern.hpp"
#include "attnscope/base/rng.hpp"
#include "export/files.hpp"
#include "headless_imgui.hpp"
#include "imgui.h"
#include "imgui_internal.h"  // the open Ctrl+click text field of a slider; windows
#include "panels/panels.hpp"
#include "platform/keyboard_queue.hpp"
#include "shell/ui.hpp"
#include "state/app_state.hpp"
#include "widgets/heatmap_view.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {
namespace {

// GLFW's key codes, which ImGui 1.86's GLFW backend puts in io.KeyMap.
constexpr int kKeyRight = 262, kKeyLeft = 263, kKeyEscape = 256, kKeyHome = 268, kKeyEnd = 269;

class Headless : public ::testing::Test {
 protected:
  void SetUp() override {
    start_headless_imgui(state);
    state.ui.welcome_dismissed = true;  // the first-run card is tested in the Teach fixture
#if IMGUI_VERSION_NUM < 18700
    ImGuiIO& io = ImGui::GetIO();
    io.KeyMap[ImGuiKey_RightArrow] = kKeyRight;
    io.KeyMap[ImGuiKey_LeftArrow] = kKeyLeft;
    io.KeyMap[ImGuiKey_Escape] = kKeyEscape;
    io.KeyMap[ImGuiKey_Home] = kKeyHome;
    io.KeyMap[ImGuiKey_End] = kKeyEnd;
#endif
  }
  void TearDown() override { ImGui::DestroyContext(); }

  // One frame; returns the vertex count drawn.
  int frame() { return headless_frame(state); }
  void frames(int n) { headless_frames(state, n); }
  void mouse(ImVec2 p, bool down) {
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = p;
    io.MouseDown[0] = down;
    frame();
  }
  void click(ImVec2 p) { headless_click(state, p); }
  void key(int k) {
#if IMGUI_VERSION_NUM < 18700
    ImGui::GetIO().KeysDown[k] = true;
    frame();
    ImGui::GetIO().KeysDown[k] = false;
    frame();
#else
    const ImGuiKey named = k == kKeyRight  ? ImGuiKey_RightArrow
                           : k == kKeyLeft ? ImGuiKey_LeftArrow
                           : k == kKeyHome ? ImGuiKey_Home
                           : k == kKeyEnd  ? ImGuiKey_End
                                           : ImGuiKey_Escape;
    ImGui::GetIO().AddKeyEvent(named, true);
    frame();
    ImGui::GetIO().AddKeyEvent(named, false);
    frame();
#endif
  }
  void set_variant(core::Variant v, int d_out = 4, int heads = 2) {
    state.config.variant = v;
    state.config.d_out = d_out;
    state.config.num_heads = heads;
    state.config.dropout = 0.3;
    state.mark_dirty();
    frames(2);
    ASSERT_TRUE(state.error.empty()) << state.error;
  }

  AppState state;
};

TEST_F(Headless, EveryVariantEveryStageDrawsForManyFramesWithPinnedCells) {
  for (core::Variant v : core::kAllVariants) {
    set_variant(v);
    for (Step step : steps_for(v)) {
      state.step = step;
      for (int head = 0; head < state.trace->heads_shown(); ++head) {
        state.head = head;
        EXPECT_GT(frame(), 1000) << core::variant_id(v) << " " << step_id(step);
        const StepMatrices m = step_matrices(step, *state.trace, head);
        ASSERT_FALSE(m.outputs.empty());
        // Pin a cell of every matrix on screen, inputs included.
        for (const auto* list : {&m.outputs, &m.inputs})
          for (const core::Stage* s : *list) {
            state.pinned = CellRef{s->id, s->head, static_cast<int>(s->data().rows()) - 1,
                                   static_cast<int>(s->data().cols()) - 1};
            frames(3);
            EXPECT_TRUE(state.pinned.valid()) << s->id;
          }
      }
    }
  }
}

TEST_F(Headless, ArrowKeysWalkThePipelineInOrder) {
  set_variant(core::Variant::Multihead);
  state.step = Step::Inputs;
  const auto steps = steps_for(core::Variant::Multihead);
  for (std::size_t k = 1; k < steps.size(); ++k) {
    key(kKeyRight);
    EXPECT_EQ(state.step, steps[k]);
  }
  key(kKeyRight);  // stays on the last stage
  EXPECT_EQ(state.step, steps.back());
  key(kKeyLeft);
  EXPECT_EQ(state.step, steps[steps.size() - 2]);
  key(kKeyHome);
  EXPECT_EQ(state.step, Step::Inputs);
  key(kKeyEnd);
  EXPECT_EQ(state.step, Step::OutProj);
}

TEST_F(Headless, ClickingAHeatmapCellPinsItAndEscapeUnpins) {
  set_variant(core::Variant::Causal);
  state.step = Step::Softmax;
  frames(3);
  for (float y = 300; y < 900 && !state.pinned.valid(); y += 37)
    for (float x = 450; x < 1250 && !state.pinned.valid(); x += 37) click(ImVec2(x, y));
  ASSERT_TRUE(state.pinned.valid());
  frames(3);  // the inspector draws the breakdown
  key(kKeyEscape);
  EXPECT_FALSE(state.pinned.valid());
}

TEST_F(Headless, ClickingAHeadTileFocusesThatHead) {
  set_variant(core::Variant::MultiheadWrapper, 2, 3);
  state.step = Step::Softmax;
  state.head = 0;
  frames(3);
  for (float y = 820; y < 1000 && state.head == 0; y += 20)
    for (float x = 420; x < 1200 && state.head == 0; x += 25) click(ImVec2(x, y));
  EXPECT_NE(state.head, 0);
}

TEST_F(Headless, RandomMouseAndKeysInEveryVariantNeverBreakIt) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> x(0, 1600), y(0, 1000);
  ImGuiIO& io = ImGui::GetIO();
  for (core::Variant v : core::kAllVariants) {
    set_variant(v);
    for (int k = 0; k < 300; ++k) {
      const int what = static_cast<int>(rng() % 10);
      if (what < 5) {
        click(ImVec2(x(rng), y(rng)));
      } else if (what < 7) {  // drag
        const ImVec2 a(x(rng), y(rng));
        mouse(a, true);
        mouse(ImVec2(a.x + 40, a.y + 25), true);
        mouse(ImVec2(a.x + 40, a.y + 25), false);
      } else if (what < 8) {  // wheel
        io.MousePos = ImVec2(x(rng), y(rng));
        io.MouseWheel = (rng() % 2) ? 1.0f : -1.0f;
        frame();
        io.MouseWheel = 0;
      } else {
        key(rng() % 2 ? kKeyRight : kKeyLeft);
      }
      state.ui.quit_requested = false;
      if (state.inputs.embeddings.rows() > 64) state.load_preset("book");  // keep it quick
    }
    state.ui.show_about = state.ui.show_shortcuts = false;
  }
  SUCCEED();
}

// Window sizes a user (or a window manager) can produce: a minimised
// window's 0 x 0, slivers, 1 x 1, and bigger than any monitor. Every panel,
// banner and Learn window must lay out without a crash or an ImGui assertion.
TEST_F(Headless, TinyZeroAndHugeWindowsDrawEveryVariantWithEverythingOpen) {
  const ImVec2 sizes[] = {{1, 1},       {50, 30},   {0, 0},      {2, 700},    {900, 2},
                          {8000, 6000}, {320, 240}, {16384, 16}, {1600, 1000}};
  ImGuiIO& io = ImGui::GetIO();
  state.ui.session_warning = "Your last session could not be restored (test).";
  state.ui.autosave_warning = "The session could not be saved (test).";
  state.ui.show_about = state.ui.show_shortcuts = true;
  TeachState& t = state.teach;
  t.walk_active = t.show_softmax = t.show_normalisation = t.show_masking = t.show_dropout =
      t.show_heads = t.show_compare = t.show_weights = t.show_embedding = t.show_sizes =
          t.show_book = t.show_kv_memory = t.show_kv_cache = t.show_rope = true;
  std::mt19937 rng(11);
  for (core::Variant v : core::kAllVariants) {
    set_variant(v);
    const auto steps = steps_for(v);
    state.step = steps[rng() % steps.size()];
    for (const ImVec2 size : sizes) {
      io.DisplaySize = size;
      frames(3);
      // A click and a wheel turn somewhere inside, as a user would try.
      const ImVec2 p(size.x * 0.5f, size.y * 0.5f);
      click(p);
      io.MousePos = p;
      io.MouseWheel = -1.0f;
      frame();
      io.MouseWheel = 0.0f;
      key(kKeyRight);
      state.ui.quit_requested = false;
    }
    io.DisplaySize = ImVec2(1600, 1000);
    frames(2);
  }
  EXPECT_TRUE(state.trace);
  EXPECT_TRUE(state.error.empty()) << state.error;
}

// Learn > KV-cache memory: the estimate of the open preset with the book's
// printed numbers beside it, none for another context or an edited shape,
// and a refusal (the typed values kept) for a shape the scripts refuse.
TEST_F(Headless, KvCacheMemoryShowsTheBooksPrintsOnlyForTheirRunAndRefusesABadShape) {
  TeachState& t = state.teach;
  t.show_kv_memory = true;
  frames(3);
  std::string text = squeezed(headless_text());
  EXPECT_NE(text.find(squeezed("The book's 8B example, 32768 tokens, bf16: head_dim 128")),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("17,179,869,184"), std::string::npos);
  EXPECT_NE(text.find(squeezed("the same, 17.18 GB (ch04/04_gqa README)")), std::string::npos);
  EXPECT_NE(text.find(squeezed("the same, 0.78 GB (ch04/06_swa README)")), std::string::npos);
  t.kv_context = 4096;  // no README ran this context
  frames(2);
  text = squeezed(headless_text());
  EXPECT_NE(text.find("2,147,483,648"), std::string::npos);  // 4096 x 128 x 32 x 2 x 2 x 32
  EXPECT_EQ(text.find("README)"), std::string::npos);
  // Typing another head count into n_heads (the field right of emb_dim's
  // label): the learner's own shape.
  t.kv_context = 32768;
  frames(2);
  const auto label = headless_text_at("emb_dim");
  ASSERT_TRUE(label);
  const ImVec2 field(label->x + ImGui::CalcTextSize("emb_dim").x + ImGui::GetFontSize() * 3,
                     label->y);
  click(field);  // selects the old value: typing replaces it
  ASSERT_NE(ImGui::GetCurrentContext()->ActiveId, 0u) << "the field took the click";
  for (const char c : std::string("16")) {
    ImGui::GetIO().AddInputCharacter(static_cast<unsigned>(c));
    frames(2);
  }
  EXPECT_EQ(t.kv_shape.n_heads, 16);
  EXPECT_EQ(t.kv_shape.n_kv_heads, 8);
  EXPECT_EQ(t.kv_shape.id, "custom");
  text = squeezed(headless_text());
  EXPECT_EQ(text.find("README)"), std::string::npos);
  EXPECT_NE(text.find(squeezed("Your shape (from The book's 8B example)")), std::string::npos);
  t.kv_shape.n_kv_heads = 3;
  frames(2);
  text = squeezed(headless_text());
  EXPECT_NE(text.find(squeezed("n_kv_heads (3) must divide n_heads (16)")), std::string::npos);
  EXPECT_EQ(t.kv_shape.n_kv_heads, 3);
}

// Learn > KV cache, step by step: the book's six tokens one at a time
// through the cached classes, each step what generating with use_cache
// gives (run_cached), checked against a full recompute; a sliding window's
// cache keeps only its last W keys; a class that cannot run is refused with
// the typed values kept.
TEST_F(Headless, KvCacheStepsShowWhatUseCacheGivesAndTheWindowTrimsTheCache) {
  TeachState& t = state.teach;
  t.show_kv_cache = true;
  frames(3);
  ASSERT_TRUE(t.cache_result) << t.cache_refusal;
  std::string text = squeezed(headless_text());
  EXPECT_NE(text.find(squeezed("Step 0: \"Your\" arrives")), std::string::npos) << text;
  EXPECT_NE(text.find(squeezed("cached result = full recompute of tokens 0..0")),
            std::string::npos);
  const core::RowMatrix& x = state.inputs.embeddings;
  for (const core::modern::Kind kind :
       {core::modern::Kind::Multihead, core::modern::Kind::GroupedQuery,
        core::modern::Kind::SlidingWindow, core::modern::Kind::Latent}) {
    t.cache_config.kind = kind;
    t.cache_config.window = 2;
    t.cache_config.latent_dim = 3;
    const auto steps = core::modern::run_cached(t.cache_config, x);
    for (int step : {1, 5}) {
      t.cache_t = step;
      frames(2);
      ASSERT_TRUE(t.cache_result) << t.cache_refusal;
      const core::modern::CacheStep& s = *t.cache_result;
      EXPECT_LT(s.max_abs_diff, 1e-5f);
      EXPECT_LT((s.output - steps[static_cast<std::size_t>(step)].output).cwiseAbs().maxCoeff(),
                1e-6f);
      EXPECT_EQ(s.cache_bytes, steps[static_cast<std::size_t>(step)].cache_bytes);
    }
  }
  t.cache_config.kind = core::modern::Kind::SlidingWindow;
  frames(2);
  ASSERT_TRUE(t.cache_result);
  EXPECT_EQ(t.cache_result->first_key_position, 4);
  EXPECT_EQ(t.cache_result->keys.front().rows(), 2);
  text = squeezed(headless_text());
  EXPECT_NE(text.find(squeezed("the 2 cached keys (positions 4..5)")), std::string::npos) << text;
  t.cache_config.num_heads = 3;  // 4 columns cannot split into 3 heads
  frames(2);
  EXPECT_FALSE(t.cache_result);
  EXPECT_FALSE(t.cache_refusal.empty());
  EXPECT_NE(squeezed(headless_text()).find(squeezed(t.cache_refusal.substr(0, 30))),
            std::string::npos);
  EXPECT_EQ(t.cache_config.num_heads, 3);
}

// Learn > Rotary positions: the run's rotated scores at positions 0.. and
// c.. agree to float precision; a class without queries says what to pick.
TEST_F(Headless, RopeShowsTheShiftedScoresAgreeAndAsksForAClassWithQueries) {
  TeachState& t = state.teach;
  t.show_rope = true;
  set_variant(core::Variant::Simple);
  frames(2);
  EXPECT_NE(squeezed(headless_text()).find(squeezed("pick a class with W_query and W_key")),
            std::string::npos);
  set_variant(core::Variant::Multihead, 8, 2);
  for (int shift : {0, 100, 4000}) {
    t.rope_shift = shift;
    frames(2);
    const std::string text = squeezed(headless_text());
    EXPECT_NE(text.find(squeezed("again at " + std::to_string(shift) + "..")), std::string::npos)
        << text;
    const std::size_t at = text.find("largest|difference|");
    ASSERT_NE(at, std::string::npos);
    const double diff = std::stod(text.substr(at + std::string("largest|difference|").size()));
    if (shift == 0)
      EXPECT_EQ(diff, 0.0);
    else
      EXPECT_LT(diff, 1e-4) << shift;
  }
}

TEST_F(Headless, BannersShowRestoreAndAutosaveWarningsUntilDismissed) {
  set_variant(core::Variant::Causal);
  frames(3);
  const int plain = frame();
  state.ui.autosave_warning = "The session could not be saved (cannot write here).";
  frames(2);
  const int one = frame();
  EXPECT_GT(one, plain) << "the autosave banner is drawn";
  state.ui.session_warning = "Your last session could not be restored (test).";
  frames(2);
  EXPECT_GT(frame(), one) << "both banners are drawn";
  // Dismiss: the first "Dismiss" button from the top is the restore banner's.
  for (float y = 20; y < 200 && !state.ui.session_warning.empty(); y += 4)
    for (float x = 1400; x < 1600 && !state.ui.session_warning.empty(); x += 10)
      click(ImVec2(x, y));
  EXPECT_TRUE(state.ui.session_warning.empty()) << "Dismiss clears the restore warning";
  EXPECT_FALSE(state.ui.autosave_warning.empty()) << "... and only that one";
}

TEST_F(Headless, TheSavedNoticeIsHiddenWhileAWindowScreenshotIsPending) {
  frames(2);
  notify(state, "Saved weights.png", "/tmp/weights.png", false);
  frame();
  const ImGuiWindow* notice = ImGui::FindWindowByName("##notice");
  ASSERT_NE(notice, nullptr);
  EXPECT_TRUE(notice->Active);
  // F12 asks for a screenshot: main grabs the frame drawn while the countdown
  // is still running, which must not show the previous save's notice.
  state.files.screenshot_countdown = 1;
  frame();
  EXPECT_FALSE(notice->Active) << "the notice would be in the screenshot";
  state.files.screenshot_countdown = 0;
  frame();
  EXPECT_TRUE(notice->Active) << "it comes back afterwards";
}

#if IMGUI_VERSION_NUM < 18700
// What ImGui 1.86's GLFW backend does with a key or a character
// (imgui_impl_glfw.cpp: KeysDown by GLFW key code, modifiers from KeysDown).
void backend(const KeyboardQueue::Event& e) {
  ImGuiIO& io = ImGui::GetIO();
  if (e.is_char) {
    io.AddInputCharacter(e.codepoint);
    return;
  }
  if (e.key >= 0 && e.key < IM_ARRAYSIZE(io.KeysDown)) {
    if (e.action == KeyboardQueue::kPress) io.KeysDown[e.key] = true;
    if (e.action == KeyboardQueue::kRelease) io.KeysDown[e.key] = false;
  }
  io.KeyCtrl = io.KeysDown[341] || io.KeysDown[345];
  io.KeyShift = io.KeysDown[340] || io.KeysDown[344];
  io.KeyAlt = io.KeysDown[342] || io.KeysDown[346];
}

// Regression (found by the monkey test, seeds 2 and 4): Ctrl+Y, then "Q" typed
// while a slow frame ran, all in one poll. Releases of keys pressed in that
// poll were held back for a frame but later presses were not, so ImGui saw
// Ctrl still down with Q pressed, and the app quit.
TEST_F(Headless, KeysFromOneSlowFrameReachTheUiInOrderAndQDoesNotQuit) {
  set_variant(core::Variant::Causal);
  state.step = Step::Inputs;
  frames(2);
  KeyboardQueue q(backend);
  auto run_frames = [&](int n) {
    for (int k = 0; k < n; ++k) {
      frame();
      q.frame_done();
    }
  };
  q.key(341, 37, KeyboardQueue::kPress, 0);  // xdotool key ctrl+y: Ctrl goes up before Y
  q.key(89, 29, KeyboardQueue::kPress, 2);
  q.key(341, 37, KeyboardQueue::kRelease, 2);
  q.key(89, 29, KeyboardQueue::kRelease, 0);
  q.key(340, 50, KeyboardQueue::kPress, 0);  // then "Q": Shift, Q
  q.key(81, 24, KeyboardQueue::kPress, 1);
  q.character('Q');
  q.key(340, 50, KeyboardQueue::kRelease, 1);
  q.key(81, 24, KeyboardQueue::kRelease, 0);
  q.key(262, 114, KeyboardQueue::kPress, 0);  // and Right twice
  q.key(262, 114, KeyboardQueue::kRelease, 0);
  q.key(262, 114, KeyboardQueue::kPress, 0);
  q.key(262, 114, KeyboardQueue::kRelease, 0);
  run_frames(8);
  EXPECT_FALSE(state.ui.quit_requested) << "Q after Ctrl+Y must not quit";
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(state.step, steps_for(core::Variant::Causal)[2]) << "both Right presses count";

  // A real Ctrl+Q, all in one poll, still quits.
  q.key(341, 37, KeyboardQueue::kPress, 0);
  q.key(81, 24, KeyboardQueue::kPress, 2);
  q.key(81, 24, KeyboardQueue::kRelease, 2);
  q.key(341, 37, KeyboardQueue::kRelease, 0);
  run_frames(4);
  EXPECT_TRUE(state.ui.quit_requested);
}
#endif

TEST_F(Headless, AnInvalidEditKeepsTheLastTraceOnScreen) {
  set_variant(core::Variant::Multihead, 4, 2);
  const auto version = state.trace_version;
  state.config.d_out = 5;
  state.mark_dirty();
  frames(5);
  EXPECT_EQ(state.trace_version, version);
  EXPECT_FALSE(state.error.empty());
  EXPECT_TRUE(state.trace);
}

TEST_F(Headless, IdleFramesUploadNoTextures) {
  set_variant(core::Variant::Causal);
  state.step = Step::Masked;
  frames(5);
  const long uploads = state.textures.uploads();
  frames(20);
  EXPECT_EQ(state.textures.uploads(), uploads);
  state.ui.palette = Palette::ColorBlindSafe;
  frames(2);
  EXPECT_GT(state.textures.uploads(), uploads);
}

TEST_F(Headless, A512TokenInputDrawsEveryStageOfMultihead) {
  state.inputs.embeddings.resize(512, 8);
  core::TorchGenerator gen(1);
  gen.fill_uniform(state.inputs.embeddings, 0.0f, 1.0f);
  state.inputs.tokens.clear();
  for (int t = 0; t < 512; ++t) state.inputs.tokens.push_back("t" + std::to_string(t));
  set_variant(core::Variant::Multihead, 8, 4);
  for (Step step : steps_for(core::Variant::Multihead)) {
    state.step = step;
    const StepMatrices m = step_matrices(step, *state.trace, 0);
    const core::Stage* s = m.outputs.front();
    state.pinned = CellRef{s->id, s->head, 300,
                           static_cast<int>(std::min<Eigen::Index>(100, s->data().cols() - 1))};
    frames(2);
  }
  EXPECT_EQ(state.trace->num_tokens(), 512);
}

// At T >= 128 one shared scale draws the weights (~1/T each) in one flat
// colour: the scores and weights are coloured by row until the learner
// chooses otherwise with R, and exports follow the screen. The book's T = 6
// keeps one scale per matrix.
TEST_F(Headless, LongSequencesColourScoresAndWeightsByRowUntilTheLearnerChooses) {
  auto press_r = [&] {
#if IMGUI_VERSION_NUM < 18700
    key('R');
#else
    ImGui::GetIO().AddKeyEvent(ImGuiKey_R, true);
    frame();
    ImGui::GetIO().AddKeyEvent(ImGuiKey_R, false);
    frame();
#endif
  };
  set_variant(core::Variant::Causal, 4, 1);
  state.step = Step::Softmax;
  frames(2);
  auto scope_of = [&](const char* id) {
    const core::Stage* s = state.trace->find(id);
    EXPECT_NE(s, nullptr) << id;
    return heatmap_scope(state, *state.trace, *s);
  };
  EXPECT_EQ(state.ui.row_scale, figure::RowScale::Auto);
  EXPECT_EQ(scope_of("weights"), ScaleScope::Matrix) << "the book's example";
  state.inputs.embeddings.resize(128, 4);
  core::TorchGenerator gen(1);
  gen.fill_uniform(state.inputs.embeddings, 0.0f, 1.0f);
  state.inputs.tokens.clear();
  for (int t = 0; t < 128; ++t) state.inputs.tokens.push_back("t" + std::to_string(t));
  state.mark_dirty();
  frames(3);
  ASSERT_EQ(state.trace->num_tokens(), 128);
  EXPECT_EQ(scope_of("weights"), ScaleScope::Row);
  EXPECT_EQ(scope_of("scores"), ScaleScope::Row);
  EXPECT_EQ(scope_of("queries"), ScaleScope::Matrix);
  EXPECT_TRUE(rows_on_own_scale(state));
  const core::Stage& w = *state.trace->find("weights");
  EXPECT_EQ(figure_style(state, *state.trace, w).scope, ScaleScope::Row) << "exports follow";
  press_r();
  EXPECT_EQ(state.ui.row_scale, figure::RowScale::Off);
  EXPECT_EQ(scope_of("weights"), ScaleScope::Matrix);
  EXPECT_EQ(figure_style(state, *state.trace, w).scope, ScaleScope::Matrix);
  press_r();
  EXPECT_EQ(state.ui.row_scale, figure::RowScale::On);
  EXPECT_EQ(scope_of("queries"), ScaleScope::Row) << "on: every heatmap";
}

// Inputs wider than the table (62 dims) get a note that wraps inside the
// panel and says what to do, not one line cut off at the panel's edge.
TEST_F(Headless, TheEmbeddingsNoteForWideInputsWrapsInsideThePanel) {
  state.inputs.embeddings.resize(6, 64);
  state.inputs.embeddings.setConstant(0.5f);
  state.mark_dirty();
  frames(2);
  float widest = 0, edge = 0;
  for (int k = 0; k < 2; ++k) {
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(360, 600));
    ImGui::Begin("embeddings");
    draw_embedding_panel(state);
    const ImGuiWindow* win = ImGui::GetCurrentWindow();
    widest = win->DC.CursorMaxPos.x;
    edge = win->WorkRect.Max.x;
    ImGui::End();
    ImGui::Render();
  }
  // (The cursor may end a line one space past the edge: the space is not drawn.)
  EXPECT_LE(widest, edge + ImGui::CalcTextSize(" ").x + 0.5f);
}

TEST_F(Headless, UiScaleRebuildsFontsAndStillDraws) {
  state.ui.ui_scale = 1.75f;
  rebuild_fonts(state.ui);
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  ImGui::GetIO().Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
  if (state.ui.unicode)  // DejaVu Sans installed; ImGui's built-in font scales in whole steps
    EXPECT_NEAR(ImGui::GetIO().FontDefault->FontSize, kBaseFontPx * 1.75f, 0.01f);
  else
    EXPECT_GT(ImGui::GetIO().FontDefault->FontSize, 13.0f);
  set_variant(core::Variant::Causal);
  frames(5);
}

TEST_F(Headless, WithTheEngineOnAThreadTheLastTraceStaysUntilTheNewOneIsReady) {
  // 1024 tokens x 4 heads: a trace big enough (112 MiB of T x T stages) to be
  // slimmed to the current view while the next one is computed.
  state.inputs.embeddings.resize(1024, 16);
  core::TorchGenerator gen(3);
  gen.fill_uniform(state.inputs.embeddings, 0.0f, 1.0f);
  state.inputs.tokens.clear();
  for (int t = 0; t < 1024; ++t) state.inputs.tokens.push_back("t" + std::to_string(t));
  state.config.variant = core::Variant::Multihead;
  state.config.d_out = 16;
  state.config.num_heads = 4;
  state.config.dropout = 0.1;
  state.step = Step::Softmax;
  state.start_worker({});
  state.mark_dirty();
  auto frames_until = [&](auto done) {  // generous: a loaded machine may take long
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      frame();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return done();
  };
  frame();  // the first frame does not wait for the engine
  ASSERT_TRUE(frames_until([&] { return state.trace != nullptr && !state.computing(); }));
  frames(3);
  const std::size_t full = state.trace->stages.size();
  const auto version = state.trace_version;

  state.upload_budget_ms = 0.0;  // one piece of work per frame: preparing takes many frames
  state.config.dropout = 0.5;
  state.mark_dirty();
  frame();
  EXPECT_TRUE(state.computing());
  EXPECT_LT(state.trace->stages.size(), full) << "the other heads' stages were freed";
  long uploads_before = state.textures.uploads();
  int old_frames = 0;
  const bool arrived = frames_until([&] {
    if (state.trace_version != version) return true;
    EXPECT_EQ(state.trace->config.dropout, 0.1) << "only the last trace or the new one is shown";
    ++old_frames;
    uploads_before = state.textures.uploads();
    return false;
  });
  ASSERT_TRUE(arrived);
  EXPECT_EQ(state.trace->config.dropout, 0.5);
  EXPECT_EQ(state.trace->stages.size(), full);
  EXPECT_FALSE(state.computing());
  EXPECT_GT(old_frames, 3);
  // Its heatmaps were coloured and uploaded before it was shown.
  EXPECT_LE(state.textures.uploads() - uploads_before, 1);
  const long uploads = state.textures.uploads();
  frames(3);
  EXPECT_EQ(state.textures.uploads(), uploads);
}

// A narrow box shortens a title by rule, never to an ambiguous "W…": the
// three projection matrices (and two heads' context) stay distinguishable
// at every width down to the shortest form's.
TEST_F(Headless, NarrowTitlesStillTellTheMatricesApart) {
  set_variant(core::Variant::MultiheadWrapper, 2, 2);
  const core::Trace& t = *state.trace;
  std::vector<const core::Stage*> groups[2];
  for (const char* id : {"W_query", "W_key", "W_value"}) groups[0].push_back(t.find(id, 0));
  for (int h : {0, 1}) groups[1].push_back(t.find("context", h));
  ImGui::NewFrame();
  for (const auto& group : groups) {
    float shortest = 0;  // the widest of the group's shortest forms
    for (const core::Stage* s : group) {
      ASSERT_NE(s, nullptr);
      shortest = std::max(shortest, ImGui::CalcTextSize(stage_titles(*s).back().c_str()).x);
    }
    EXPECT_LT(shortest, 70.0f);
    for (float w = std::ceil(shortest); w <= 320; w += 5) {
      std::vector<std::string> shown;
      for (const core::Stage* s : group) {
        ASSERT_NE(s, nullptr);
        HeatmapSpec spec;
        spec.stage = s;
        shown.push_back(pick_title(heatmap_titles(spec), w, state.ui.unicode));
        EXPECT_EQ(shown.back().find(state.ui.unicode ? "…" : ".."), std::string::npos)
            << shown.back() << " at " << w << " px";
        EXPECT_LE(ImGui::CalcTextSize(shown.back().c_str()).x, w);
      }
      for (std::size_t a = 0; a < shown.size(); ++a)
        for (std::size_t b = a + 1; b < shown.size(); ++b)
          EXPECT_NE(shown[a], shown[b]) << "at " << w << " px";
    }
  }
  HeatmapSpec keep;
  keep.stage = groups[1][0];
  keep.title = "keep mask (1 kept, 0 dropped)";
  EXPECT_EQ(pick_title(heatmap_titles(keep), ImGui::CalcTextSize("keep mask  ").x, true),
            "keep mask");
  ImGui::Render();
}

// The book prints the weights with 4 decimals (0.1921, not 0.19): so does
// the app by default at its default window size, and View > Decimals
// changes it.
TEST_F(Headless, TheWeightsShowTheBooksFourDecimalsAtTheDefaultWindow) {
  EXPECT_EQ(state.ui.decimals, 4);
  set_variant(core::Variant::Causal, 2, 1);
  state.step = Step::Softmax;
  frames(3);
  const StepMatrices m = step_matrices(state.step, *state.trace, 0);
  ASSERT_EQ(m.outputs.front()->id, "weights");
  EXPECT_EQ(state.ui.views["out/0"].decimals, 4);
  state.ui.decimals = 2;
  frames(2);
  EXPECT_EQ(state.ui.views["out/0"].decimals, 2);
}

// At T = 512 the inspector's softmax table (a row per key) scrolls to the
// pinned key, which would otherwise be hundreds of rows below its top.
TEST_F(Headless, TheInspectorScrollsToThePinnedKeyOfALongRow) {
  state.draw_random_inputs(512, 8);
  set_variant(core::Variant::SelfAttentionV2);
  state.step = Step::Softmax;
  frames(2);
  const core::Stage* w = state.trace->find(core::stage_id::weights);  // one head: head -1
  ASSERT_NE(w, nullptr) << state.error;
  state.pinned = CellRef{w->id, w->head, 500, 400};
  frames(4);
  const std::string shown = headless_text();
  EXPECT_NE(shown.find("\nt400"), std::string::npos) << "key t400's row is in view";
  // Moving the pin moves the table again.
  state.pinned = CellRef{w->id, w->head, 500, 20};
  frames(4);
  EXPECT_NE(headless_text().find("\nt20"), std::string::npos);
}

// A notice closes itself when its time is up, not while the pointer is on it.
TEST_F(Headless, ANoticeClosesItselfUnlessThePointerIsOnIt) {
  notify(state, "Saved a file", "/tmp/a file", false);
  EXPECT_EQ(state.files.notice.seconds_left, Notice::kSeconds);
  frames(30);  // half a second
  ASSERT_FALSE(state.files.notice.message.empty());
  EXPECT_LT(state.files.notice.seconds_left, Notice::kSeconds - 0.4f);
  const auto at = headless_text_at("Saved a file");
  ASSERT_TRUE(at) << headless_text();
  state.files.notice.seconds_left = 0.05f;
  ImGui::GetIO().MousePos = *at;
  frames(20);
  EXPECT_FALSE(state.files.notice.message.empty()) << "the pointer is on it";
  ImGui::GetIO().MousePos = ImVec2(5, 500);
  frames(10);
  EXPECT_TRUE(state.files.notice.message.empty());
  notify(state, "Could not save", "", true);
  EXPECT_EQ(state.files.notice.seconds_left, Notice::kErrorSeconds);
}

// Typing into a slider after Ctrl+click: the value applies on Enter or when
// the field loses focus, never digit by digit.
class TypedSlider : public Headless {
 protected:
  void SetUp() override {
    Headless::SetUp();
#if IMGUI_VERSION_NUM < 18700
    ImGui::GetIO().KeyMap[ImGuiKey_Enter] = kKeyEnter;
#endif
    set_variant(core::Variant::Causal, 3, 1);
  }
  static constexpr int kKeyEnter = 257;
  // True when a slider's Ctrl+click text field is open and began with `text`.
  static bool field_open_with(const char* text) {
    const ImGuiContext& g = *ImGui::GetCurrentContext();
    return g.TempInputId != 0 && g.ActiveId == g.TempInputId &&
           g.InputTextState.InitialTextA.Data != nullptr &&
           std::string(g.InputTextState.InitialTextA.Data) == text;
  }
  // Ctrl+click the slider showing `value` (d_out's, on the controls panel).
  bool ctrl_click_slider_showing(const char* value) {
    ImGuiIO& io = ImGui::GetIO();
    for (float y = 40; y < 640; y += 6) {
      io.KeyCtrl = true;
      click(ImVec2(150, y));
      io.KeyCtrl = false;
      frame();
      if (field_open_with(value)) {
        field_y = y;
        return true;
      }
      if (ImGui::GetCurrentContext()->TempInputId != 0) {
        key_enter();  // another slider's field: close it unchanged
      }
    }
    return false;
  }
  void type(const char* text) {
    for (const char* c = text; *c; ++c) {
      ImGui::GetIO().AddInputCharacter(static_cast<unsigned>(*c));
      frames(2);
      EXPECT_EQ(state.config.d_out, d_out_before) << "typed so far: " << std::string(text, c + 1);
      EXPECT_EQ(state.trace->config.d_out, d_out_before) << "a run while typing";
    }
  }
  void key_enter() {
#if IMGUI_VERSION_NUM < 18700
    key(kKeyEnter);
#else
    ImGui::GetIO().AddKeyEvent(ImGuiKey_Enter, true);
    frame();
    ImGui::GetIO().AddKeyEvent(ImGuiKey_Enter, false);
    frame();
#endif
  }
  int d_out_before = 0;
  float field_y = 0;  // where the slider's field was opened
};

TEST_F(TypedSlider, DigitsTypedIntoDOutRunNothingUntilEnter) {
  d_out_before = state.config.d_out;
  const auto version = state.trace_version;
  ASSERT_TRUE(ctrl_click_slider_showing("3"));
  type("12");  // "1" alone would be a valid d_out: it must not run
  EXPECT_EQ(state.trace_version, version);
  key_enter();
  frames(3);
  EXPECT_EQ(state.config.d_out, 12);
  EXPECT_EQ(state.trace->config.d_out, 12);
  EXPECT_TRUE(state.ui.typed_refusal.empty()) << state.ui.typed_refusal;
}

TEST_F(TypedSlider, ATypedSeedRunsNothingUntilEnter) {
  const std::uint64_t seed_before = state.config.seed;
  ASSERT_NE(seed_before, 4217u);
  const auto version = state.trace_version;
  const auto roll = headless_text_at("Roll");
  ASSERT_TRUE(roll) << headless_text();
  click(ImVec2(40, roll->y));  // the seed's field, left of its - and + buttons
  ASSERT_NE(ImGui::GetCurrentContext()->ActiveId, 0u) << "the seed field took the click";
  ImGuiIO& io = ImGui::GetIO();  // the click selected the old seed: typing replaces it
  for (const char c : std::string("4217")) {
    io.AddInputCharacter(static_cast<unsigned>(c));
    frames(2);
    EXPECT_EQ(state.config.seed, seed_before) << "typed so far, up to " << c;
    EXPECT_EQ(state.trace_version, version) << "a run while typing";
  }
  key_enter();
  frames(3);
  EXPECT_EQ(state.config.seed, 4217u);
  EXPECT_EQ(state.trace->config.seed, 4217u);
}

TEST_F(TypedSlider, ATypedDOutTooLargeIsRefusedAndThePreviousRunStays) {
  d_out_before = state.config.d_out;
  const auto version = state.trace_version;
  ASSERT_TRUE(ctrl_click_slider_showing("3"));
  type("5000");  // passes through 5, 50 and 500, all valid
  key_enter();
  frames(3);
  EXPECT_EQ(state.config.d_out, 3) << "a refused value leaves the previous one";
  EXPECT_EQ(state.trace_version, version) << "and the previous run";
  EXPECT_TRUE(state.error.empty()) << state.error;
  EXPECT_NE(state.ui.typed_refusal.find("5000"), std::string::npos) << state.ui.typed_refusal;
  EXPECT_NE(state.ui.typed_refusal.find("stays 3"), std::string::npos) << state.ui.typed_refusal;
}

// The options after chapter 3 are refused with the engine's reason, which
// names the value and what would work; the previous value and run stay.
TEST_F(TypedSlider, TheOptionsAfterChapter3RefuseWhatTheClassCannotRun) {
  set_variant(core::Variant::GroupedQuery, 8, 4);
  state.config.num_kv_groups = 2;
  state.mark_dirty();
  frames(2);
  d_out_before = 8;
  ASSERT_TRUE(ctrl_click_slider_showing("2")) << headless_text();
  frames(2);  // the search may have clicked the eval button on its way
  auto version = state.trace_version;
  type("3");
  key_enter();
  frames(3);
  EXPECT_EQ(state.config.num_kv_groups, 2);
  EXPECT_EQ(state.trace_version, version);
  EXPECT_NE(state.ui.typed_refusal.find("num_kv_groups (3) must divide num_heads (4): try 1, 2 or "
                                        "4"),
            std::string::npos)
      << state.ui.typed_refusal;
  EXPECT_NE(state.ui.typed_refusal.find("stays 2"), std::string::npos);
  EXPECT_TRUE(headless_text_at("num_kv_groups (3) must divide")) << "shown under the slider";
  ASSERT_TRUE(ctrl_click_slider_showing("2"));
  type("1");  // multi-query attention
  key_enter();
  frames(3);
  EXPECT_EQ(state.trace->config.num_kv_groups, 1);
  EXPECT_TRUE(state.ui.typed_refusal.empty()) << state.ui.typed_refusal;

  set_variant(core::Variant::SlidingWindow, 8, 4);
  state.config.window = 3;
  state.mark_dirty();
  frames(2);
  ASSERT_TRUE(ctrl_click_slider_showing("3")) << headless_text();
  frames(2);
  version = state.trace_version;
  type("0");
  key_enter();
  frames(3);
  EXPECT_EQ(state.config.window, 3);
  EXPECT_EQ(state.trace_version, version);
  EXPECT_NE(state.ui.typed_refusal.find("the sliding window (0) must be between 1 and"),
            std::string::npos)
      << state.ui.typed_refusal;
}

TEST_F(TypedSlider, ATypedDOutAppliesWhenTheFieldLosesFocus) {
  d_out_before = state.config.d_out;
  ASSERT_TRUE(ctrl_click_slider_showing("3"));
  type("7");
  click(ImVec2(1400, 700));  // the inspector's empty space
  frames(3);
  EXPECT_EQ(state.config.d_out, 7);
  EXPECT_EQ(state.trace->config.d_out, 7);
}

// The variant list is drawn before d_out: a click on it takes the focus
// before the field can apply its text, and the typed value still counts.
TEST_F(TypedSlider, ATypedDOutAppliesWhenAWidgetAboveTakesTheFocus) {
  d_out_before = state.config.d_out;
  ASSERT_TRUE(ctrl_click_slider_showing("3"));
  type("7");
  click(ImVec2(100, field_y - 54));  // the variant combo, above
  frames(2);
  EXPECT_EQ(state.config.variant, core::Variant::Causal);
  EXPECT_EQ(state.config.d_out, 7);
  key(kKeyEscape);  // close the variant list
  frames(2);
  EXPECT_EQ(state.trace->config.d_out, 7);
}

// The controls a variant does not use are greyed out, and hovering any of
// them says why: in simplified self-attention, also training/eval and the seed.
TEST_F(Headless, ControlsTheVariantDoesNotUseSayWhyWhenHovered) {
  state.config.variant = core::Variant::Simple;
  state.mark_dirty();
  frames(2);
  // Everything the panel renders goes to ImGui's log; the log is "copied"
  // when the first top-level window (the panel's, or a tooltip) ends.
  static std::string logged;
  logged.clear();
  ImGuiIO& io = ImGui::GetIO();
  io.SetClipboardTextFn = [](void*, const char* text) { logged += text; };
  for (const float x : {30.0f, 60.0f}) {
    for (float y = 0; y < 500; y += 4) {
      io.MousePos = ImVec2(x, y);
      ImGui::NewFrame();
      ImGui::SetNextWindowPos(ImVec2(0, 0));
      ImGui::SetNextWindowSize(ImVec2(360, 500));
      ImGui::Begin("controls under test");
      ImGui::LogToClipboard();
      draw_controls_panel(state);
      ImGui::End();
      ImGui::Render();
    }
  }
  io.SetClipboardTextFn = nullptr;
  EXPECT_NE(logged.find("this variant has none, so both give the same result"), std::string::npos)
      << "training/eval";
  EXPECT_NE(logged.find("so it changes nothing"), std::string::npos) << "the seed";
  EXPECT_NE(logged.find("no weights: its output keeps d_in columns"), std::string::npos) << "d_out";
  EXPECT_NE(logged.find("Only the nn.Linear variants"), std::string::npos) << "qkv_bias";
}

// At d_out 1000 a (6, 1000) Q fitted to its box's width would be a line of
// sub-pixel cells; it keeps cells at least 8 px high and scrolls instead.
TEST_F(Headless, AWideMatrixKeepsVisibleCellsInItsBox) {
  state.inputs.embeddings.resize(6, 8);
  core::TorchGenerator gen(5);
  gen.fill_uniform(state.inputs.embeddings, 0.0f, 1.0f);
  state.inputs.tokens = {"t0", "t1", "t2", "t3", "t4", "t5"};
  set_variant(core::Variant::Causal, 1000, 1);
  const core::Stage* q = state.trace->find("queries");
  ASSERT_NE(q, nullptr);
  ASSERT_EQ(q->data().cols(), 1000);
  HeatmapResult r, tile;
  for (int k = 0; k < 2; ++k) {
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(700, 600));
    ImGui::Begin("wide");
    HeatmapSpec spec;
    spec.slot = "test/wide";
    spec.stage = q;
    r = draw_heatmap(state, spec, ImVec2(600, 300));
    spec.slot = "test/tile";  // a head tile: no scrolling, its rows stretch instead
    spec.compact = true;
    tile = draw_heatmap(state, spec, ImVec2(150, 100));
    ImGui::End();
    ImGui::Render();
  }
  const float px = ImGui::GetFontSize() / kBaseFontPx;
  EXPECT_GE(r.cells_max.y - r.cells_min.y, 6 * 8.0f * px - 0.5f) << "6 rows of at least 8 px";
  EXPECT_GT(r.cells_max.x - r.cells_min.x, 300.0f) << "and the box's width";
  EXPECT_GE(tile.cells_max.y - tile.cells_min.y, 6 * 8.0f * px - 0.5f) << "a tile's rows too";
}

// A long sequence's square T x T weights are not "wide": at zoom 1 the whole
// matrix fits its box (sub-pixel cells and all), so the causal triangle shows
// whole on first view instead of a scrolled slice of it.
TEST_F(Headless, ALongSequencesSquareWeightsFitTheirBoxWhole) {
  state.inputs = core::random_inputs(512, 4, 42);
  set_variant(core::Variant::Causal, 2, 1);
  const core::Stage* w = state.trace->find("weights");
  ASSERT_NE(w, nullptr);
  HeatmapResult r;
  for (int k = 0; k < 2; ++k) {
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(700, 900));
    ImGui::Begin("square");
    HeatmapSpec spec;
    spec.slot = "test/square";
    spec.stage = w;
    r = draw_heatmap(state, spec, ImVec2(450, 800));  // taller than wide, as in the app
    ImGui::End();
    ImGui::Render();
  }
  const float width = r.cells_max.x - r.cells_min.x, height = r.cells_max.y - r.cells_min.y;
  EXPECT_GT(width, 200.0f);
  EXPECT_NEAR(height, width, 2.0f) << "all 512 x 512 cells, square, not a slice";
}

// An edit made while a frame is drawn (here a click on Roll, which takes a
// new seed) is posted to the engine at the end of that frame, not at the
// start of the next one: the engine works while the frame is shown.
TEST_F(Headless, AnEditReachesTheEngineInTheFrameThatMadeIt) {
  set_variant(core::Variant::SelfAttentionV2);  // a seed that matters: Roll is enabled
  state.start_worker({});
  state.mark_dirty();
  frame();
  state.worker->wait_idle();
  frames(2);
  ASSERT_TRUE(state.trace);
  const std::uint64_t seed = state.config.seed, version = state.requested_version;
  const auto roll = headless_text_at("Roll");
  ASSERT_TRUE(roll) << headless_text();
  click(*roll);  // the button acts on the release, in the click's last frame
  ASSERT_NE(state.config.seed, seed) << "Roll took a new seed";
  EXPECT_FALSE(state.dirty) << "the edit waits for another frame";
  EXPECT_EQ(state.requested_version, version + 1);
  state.worker->wait_idle();
  frames(2);
  EXPECT_EQ(state.trace->config.seed, state.config.seed);
}

// The pixels a frame's triangles cover, each clipped to its command's clip
// rectangle (by its bounding box where it crosses the edge).
double covered_pixels(const ImDrawData& data) {
  double area = 0;
  for (int l = 0; l < data.CmdListsCount; ++l) {
    const ImDrawList& dl = *data.CmdLists[l];
    for (const ImDrawCmd& c : dl.CmdBuffer) {
      if (c.UserCallback) continue;
      for (unsigned i = 0; i + 2 < c.ElemCount; i += 3) {
        ImVec2 p[3];
        for (unsigned k = 0; k < 3; ++k)
          p[k] = dl.VtxBuffer[static_cast<int>(dl.IdxBuffer[static_cast<int>(c.IdxOffset + i + k)] +
                                               c.VtxOffset)]
                     .pos;
        const float x0 = std::min({p[0].x, p[1].x, p[2].x}),
                    x1 = std::max({p[0].x, p[1].x, p[2].x});
        const float y0 = std::min({p[0].y, p[1].y, p[2].y}),
                    y1 = std::max({p[0].y, p[1].y, p[2].y});
        const double whole = 0.5 * std::fabs((p[1].x - p[0].x) * (p[2].y - p[0].y) -
                                             (p[2].x - p[0].x) * (p[1].y - p[0].y));
        const float cx0 = std::max(x0, c.ClipRect.x), cy0 = std::max(y0, c.ClipRect.y);
        const float cx1 = std::min(x1, c.ClipRect.z), cy1 = std::min(y1, c.ClipRect.w);
        if (cx1 <= cx0 || cy1 <= cy0) continue;
        const double box = static_cast<double>(x1 - x0) * (y1 - y0);
        area += box > 0 ? whole * (static_cast<double>(cx1 - cx0) * (cy1 - cy0)) / box : 0.0;
      }
    }
  }
  return area;
}

// In software GL (llvmpipe, a desktop without a GPU driver) a frame's time
// is the pixels it fills: the columns and the panes inside them draw no
// background of their own (the frame is cleared in their colour), so a
// frame of the book's example covers half the window, not twice over.
TEST_F(Headless, AFrameFillsLessThanTheWindow) {
  for (const core::Variant v : {core::Variant::Causal, core::Variant::MultiheadWrapper}) {
    set_variant(v);
    frames(3);
    const ImVec2 size = ImGui::GetIO().DisplaySize;
    const double covered = covered_pixels(*ImGui::GetDrawData());
    EXPECT_LT(covered, 0.75 * size.x * size.y) << "variant " << static_cast<int>(v) << ": "
                                               << covered / (size.x * size.y) << " of the window";
  }
}

}  // namespace
}  // namespace attnscope::gui
