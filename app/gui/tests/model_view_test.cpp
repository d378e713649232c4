// model_view_test.cpp: a real model in the app, without a window: the
// worker's model job (one block's trace, the overview, appends), the
// pattern scores against sums computed here from the engine's weights, and
// every model view drawn and driven with the mouse and keys.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "attnscope/analysis/thumbnail.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/book/teach.hpp"
#include "attnscope/io/io.hpp"
#include "compute/model_job.hpp"
#include "export/files.hpp"
#include "export/files_ui.hpp"
#include "headless_imgui.hpp"
#include "imgui.h"
#include "imgui_internal.h"  // the Compare checkpoints window and its grid's id
#include "panels/panels.hpp"
#include "platform/fonts.hpp"
#include "platform/native_dialog.hpp"
#include "platform/text_edit.hpp"
#include "shell/launch_options.hpp"
#include "shell/ui.hpp"
#include "state/app_state.hpp"
#include "state/session.hpp"
#include "state/step.hpp"
#include "state/view_scale.hpp"
#include "teach/teach.hpp"
#include "temp_dir.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {
namespace {

namespace id = core::stage_id;

std::shared_ptr<const core::Gpt2Model> tiny_model() {
  core::Gpt2Config c;
  c.n_layer = 2;
  c.n_head = 3;
  c.n_embd = 24;
  c.n_inner = 40;
  c.n_positions = 64;
  c.vocab_size = 50257;
  static const auto model = core::random_gpt2(c, 5);
  return model;
}

std::vector<int> ids_of(const std::string& text) {
  std::vector<int> ids;
  for (const core::Token& t : core::Gpt2Tokenizer::builtin().encode(text)) ids.push_back(t.id);
  return ids;
}

ModelJob job_for(const std::string& text, int layer = 1, int head = 2) {
  ModelJob j;
  j.model = tiny_model();
  j.ids = ids_of(text);
  j.layer = layer;
  j.head = head;
  return j;
}

// A Hugging Face GPT-2 folder on disk: config.json and model.safetensors
// (8-byte header length, JSON header, raw little-endian F32), 2 blocks of
// width 8 with 2 heads, random weights from `seed`, `positions` positions.
void write_tiny_checkpoint(const std::filesystem::path& folder, unsigned seed = 3,
                           int positions = 16) {
  constexpr int kLayers = 2, kEmbd = 8, kVocab = 50257;
  const int kPositions = positions;
  std::filesystem::create_directories(folder);
  std::ofstream(folder / "config.json")
      << "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_head\": 2, \"n_embd\": 8, "
         "\"n_positions\": "
      << positions << ", \"vocab_size\": 50257}";
  std::vector<std::pair<std::string, std::vector<int>>> shapes = {
      {"wte.weight", {kVocab, kEmbd}},
      {"wpe.weight", {kPositions, kEmbd}},
      {"ln_f.weight", {kEmbd}},
      {"ln_f.bias", {kEmbd}}};
  for (int l = 0; l < kLayers; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    for (const auto& [name, shape] : std::vector<std::pair<std::string, std::vector<int>>>{
             {"ln_1.weight", {kEmbd}},
             {"ln_1.bias", {kEmbd}},
             {"attn.c_attn.weight", {kEmbd, 3 * kEmbd}},
             {"attn.c_attn.bias", {3 * kEmbd}},
             {"attn.c_proj.weight", {kEmbd, kEmbd}},
             {"attn.c_proj.bias", {kEmbd}},
             {"ln_2.weight", {kEmbd}},
             {"ln_2.bias", {kEmbd}},
             {"mlp.c_fc.weight", {kEmbd, 4 * kEmbd}},
             {"mlp.c_fc.bias", {4 * kEmbd}},
             {"mlp.c_proj.weight", {4 * kEmbd, kEmbd}},
             {"mlp.c_proj.bias", {kEmbd}}})
      shapes.emplace_back(h + name, shape);
  }
  std::string header = "{", data;
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  for (const auto& [name, shape] : shapes) {
    std::size_t n = 1;
    for (int d : shape) n *= static_cast<std::size_t>(d);
    const std::size_t from = data.size();
    for (std::size_t k = 0; k < n; ++k) {
      const float v = shape.size() == 1 ? (name.find(".weight") != std::string::npos ? 1.0f : 0.0f)
                                        : normal(gen);
      data.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    std::string dims;
    for (int d : shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    header +=
        (header.size() > 1 ? "," : "") +
        ("\"" + name + "\": {\"dtype\": \"F32\", \"shape\": [" + dims + "], \"data_offsets\": [" +
         std::to_string(from) + "," + std::to_string(data.size()) + "]}");
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::ofstream out(folder / "model.safetensors", std::ios::binary);
  const std::uint64_t len = header.size();
  out.write(reinterpret_cast<const char*>(&len), sizeof len);
  out << header << data;
}

// ---------------------------------------------------------------------------
// Loading

TEST(ModelLoad, ReportsEveryBlockAndStopsWhenCancelled) {
  core::testing::TempDir dir;
  write_tiny_checkpoint(dir.path() / "tiny");
  core::LoadProgress progress;
  const auto model = core::Gpt2Model::load(dir.path() / "tiny", std::nullopt, &progress);
  ASSERT_TRUE(model);
  EXPECT_EQ(progress.blocks.load(), 2);
  EXPECT_EQ(progress.blocks_done.load(), 2);
  EXPECT_DOUBLE_EQ(progress.fraction(), 1.0);
  core::LoadProgress stop;
  stop.cancel = true;
  EXPECT_THROW(core::Gpt2Model::load(dir.path() / "tiny", std::nullopt, &stop),
               core::LoadCancelled);
  EXPECT_EQ(stop.blocks_done.load(), 0);
  // The loader hands the model over once, and a cancelled one not at all.
  ModelLoader loader;
  loader.start((dir.path() / "tiny").string(), "");
  loader.wait();
  const auto o = loader.take();
  ASSERT_TRUE(o && o->model) << (o ? o->error : "no outcome");
  EXPECT_EQ(o->model->config().n_layer, 2);
  EXPECT_FALSE(loader.take());
  loader.start((dir.path() / "tiny").string(), "");
  loader.cancel();
  loader.wait();
  EXPECT_FALSE(loader.take());
}

// ---------------------------------------------------------------------------
// The worker's job

ModelResult run(const ModelJob& job) {
  KeptRun kept;
  return run_model_job(job, kept);
}

TEST(ModelJob, ABlocksTraceHoldsEveryStageTheStepperShows) {
  const ModelResult r = run(job_for("Your journey starts with one step"));
  const core::Trace& t = *r.trace;
  EXPECT_EQ(t.layer, 1);
  EXPECT_EQ(t.heads_shown(), 3);
  EXPECT_EQ(t.num_tokens(), 6);
  for (Step step : steps_for(t)) {
    const StepMatrices m = step_matrices(step, t, 2);
    EXPECT_FALSE(m.outputs.empty()) << step_id(step);
    // The input is block 0's output; the last block goes on to the run's ln_f and logits.
    const int want = step == Step::Inputs                              ? 0
                     : step == Step::FinalNorm || step == Step::Logits ? -1
                                                                       : 1;
    for (const core::Stage* s : m.outputs) EXPECT_EQ(s->layer, want) << step_id(step);
  }
  // The block's input is the previous block's output, the same numbers.
  const core::Stage* in = step_matrices(Step::Inputs, t, 0).outputs.front();
  EXPECT_EQ(in->id, id::block_output);
  EXPECT_TRUE(in->data().isApprox(*r.run->stage({0, -1, id::block_output})));
  // Every stage a head has is in the trace for every head at this T.
  for (int h = 0; h < 3; ++h) EXPECT_NE(t.find(id::scores, h), nullptr);
  // The last block ends with the logits of the clicked token; block 0 with its output.
  ModelJob clicked = job_for("Your journey starts with one step");
  clicked.next_at = 2;
  const ModelResult c = run(clicked);
  const core::Stage* logits = c.trace->find(core::StageKey{-1, -1, id::logits});
  ASSERT_NE(logits, nullptr);
  Eigen::Index best = 0;
  logits->data().row(0).maxCoeff(&best);
  EXPECT_EQ(best, c.run->next_tokens_at(2, 1).front().id);
  const std::vector<Step> first_block = steps_for(*run(job_for("Your journey", 0)).trace);
  EXPECT_EQ(first_block.back(), Step::BlockOutput);
}

TEST(ModelJob, ThePatternScoresAreTheMeansOfTheEnginesWeights) {
  const ModelResult r = run(job_for("The cat sat on the mat and the cat sat again"));
  const ModelOverview& o = *r.overview;
  ASSERT_EQ(o.patterns.size(), 6u);
  ASSERT_EQ(o.thumbs.size(), 6u);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 3; ++h) {
      const core::RowMatrix w = *r.run->stage({l, h, id::weights});
      const int T = static_cast<int>(w.rows());
      double prev = 0, first = 0, self = 0, entropy = 0;
      for (int i = 0; i < T; ++i) {
        if (i > 0) prev += w(i, i - 1) / (T - 1.0);
        if (i > 0) first += w(i, 0) / (T - 1.0);
        self += w(i, i) / static_cast<double>(T);
        for (int j = 0; j <= i; ++j)
          if (w(i, j) > 0) entropy -= w(i, j) * std::log(static_cast<double>(w(i, j))) / T;
      }
      const core::HeadPatternScores& s = o.patterns[static_cast<std::size_t>(l * 3 + h)];
      EXPECT_NEAR(s.previous_token, prev, 1e-6);
      EXPECT_NEAR(s.first_token, first, 1e-6);
      EXPECT_NEAR(s.self, self, 1e-6);
      EXPECT_NEAR(s.entropy, entropy, 1e-5);
      // The thumbnail of a map within kThumbnailCells is the map itself.
      EXPECT_EQ(o.thumbs[static_cast<std::size_t>(l * 3 + h)].data(), w);
    }
  ASSERT_TRUE(o.induction);
  EXPECT_EQ(o.induction->size(), 6u);
  // The most likely next token heads both lists when they are at the last position.
  ASSERT_EQ(o.next.size(), 10u);
  EXPECT_EQ(o.next_at, o.tokens - 1);
  EXPECT_EQ(o.next.front().id, o.next_last.front().id);
  EXPECT_EQ(o.next.front().id, r.run->next_tokens(1).front().id);
}

TEST(ModelJob, AnEditOfTheTextEditsTheRunOnScreen) {
  KeptRun kept;
  const ModelResult first = run_model_job(job_for("Every effort moves"), kept);
  EXPECT_EQ(kept.run, first.run);
  EXPECT_EQ(first.kept_tokens, 0);
  ModelJob more = job_for("Every effort moves you forward");
  more.induction = first.overview->induction;
  const ModelResult r = run_model_job(more, kept);
  EXPECT_EQ(r.kept_tokens, 3);
  EXPECT_EQ(r.run, first.run);
  // The same numbers as a run of the whole text from scratch.
  const ModelResult fresh = run(job_for("Every effort moves you forward"));
  EXPECT_EQ(fresh.kept_tokens, 0);
  auto expect_fresh = [&](const ModelResult& edited, const std::string& text) {
    const ModelResult whole = run(job_for(text));
    ASSERT_EQ(edited.run->ids(), whole.run->ids());
    for (int h = 0; h < 3; ++h) {
      const core::RowMatrix a = *edited.run->stage({1, h, id::weights});
      const core::RowMatrix b = *whole.run->stage({1, h, id::weights});
      ASSERT_EQ(a.rows(), b.rows());
      EXPECT_LT((a - b).cwiseAbs().maxCoeff(), 1e-5f) << text;
    }
    ASSERT_EQ(edited.overview->next.size(), whole.overview->next.size());
    EXPECT_EQ(edited.overview->next.front().id, whole.overview->next.front().id) << text;
    for (std::size_t k = 0; k < whole.overview->thumbs.size(); ++k)
      EXPECT_LT((edited.overview->thumbs[k].data() - whole.overview->thumbs[k].data())
                    .cwiseAbs()
                    .maxCoeff(),
                1e-5f)
          << text;
  };
  expect_fresh(r, "Every effort moves you forward");
  // Other edits keep the tokens before the first they change, in the same run.
  const ModelResult last = run_model_job(job_for("Every effort moves you backward"), kept);
  EXPECT_EQ(last.run, first.run);
  EXPECT_EQ(last.kept_tokens, 4);
  expect_fresh(last, "Every effort moves you backward");
  const ModelResult shorter = run_model_job(job_for("Every effort"), kept);
  EXPECT_EQ(kept.run, shorter.run);
  EXPECT_EQ(shorter.kept_tokens, 2);
  EXPECT_EQ(shorter.run->num_tokens(), 2);
  expect_fresh(shorter, "Every effort");
  const ModelResult other = run_model_job(job_for("Some effort"), kept);
  EXPECT_EQ(other.kept_tokens, 0);
  expect_fresh(other, "Some effort");
  // Ids the model cannot read are refused; the next job starts afresh.
  ModelJob bad = job_for("Some effort");
  bad.ids.push_back(1 << 30);
  EXPECT_THROW(run_model_job(bad, kept), std::invalid_argument);
  EXPECT_FALSE(kept.run);
  EXPECT_EQ(run_model_job(job_for("Some effort"), kept).kept_tokens, 0);
}

// Typing into a long text: the overview keeps each head's thumbnail blocks
// and pattern terms for the rows before the edit's block and makes the
// rest from the new rows only. Edits on both sides of the blocks' edges,
// appends, cuts, a change of block size and a long new tail all give what
// a fresh overview of the same ids gives.
TEST(ModelJob, AnEditedOverviewIsAFreshOnes) {
  core::Gpt2Config c = tiny_model()->config();
  c.n_positions = 200;
  static const auto model = core::random_gpt2(c, 8);
  auto job_of = [&](const std::vector<int>& ids) {
    ModelJob j;
    j.model = model;
    j.ids = ids;
    return j;
  };
  std::vector<int> ids;
  for (int i = 0; i < 100; ++i) ids.push_back((37 * i * i + 11 * i + 3) % 50000);
  KeptRun kept;
  run_model_job(job_of(ids), kept);  // 100 tokens: blocks of 3
  auto edit = [&](const std::string& what) {
    SCOPED_TRACE(what + " (" + std::to_string(ids.size()) + " tokens)");
    const ModelOverview& o = *run_model_job(job_of(ids), kept).overview;
    KeptRun alone;
    const ModelResult fresh = run_model_job(job_of(ids), alone);
    const ModelOverview& f = *fresh.overview;
    ASSERT_EQ(o.thumb_block(), f.thumb_block());
    ASSERT_EQ(o.thumbs.size(), f.thumbs.size());
    for (std::size_t k = 0; k < f.thumbs.size(); ++k) {
      const core::RowMatrix& a = o.thumbs[k].data();
      const core::RowMatrix want = core::downsample_max(
          *fresh.run->stage({static_cast<int>(k) / 3, static_cast<int>(k) % 3, id::weights}),
          kThumbnailCells);
      ASSERT_EQ(a.rows(), want.rows()) << k;
      ASSERT_EQ(a.cols(), want.cols()) << k;
      EXPECT_LT((a - want).cwiseAbs().maxCoeff(), 1e-5f) << k;
      EXPECT_NEAR(o.patterns[k].previous_token, f.patterns[k].previous_token, 1e-6) << k;
      EXPECT_NEAR(o.patterns[k].first_token, f.patterns[k].first_token, 1e-6) << k;
      EXPECT_NEAR(o.patterns[k].self, f.patterns[k].self, 1e-6) << k;
      EXPECT_NEAR(o.patterns[k].entropy, f.patterns[k].entropy, 1e-5) << k;
      EXPECT_NEAR(o.patterns[k].entropy_normalised, f.patterns[k].entropy_normalised, 1e-6) << k;
    }
  };
  ids.push_back(9);
  edit("an append");
  ids.back() = 10;
  edit("the last token changed");
  ids[96] = 11;  // the first row of a block
  edit("a block's first token");
  ids[98] = 12;  // its last row
  edit("a block's last token");
  ids.insert(ids.end(), {1, 2, 3, 4, 5});
  edit("five appended");
  ids.resize(99);
  edit("a cut at a block's edge");
  ids.resize(140, 7);  // still blocks of 3 (140 / 48 rounds up to 3)
  edit("41 appended");
  ids.push_back(8);  // 145 tokens: blocks of 4
  edit("blocks of 4");
  for (int i = 60; i < 145; ++i) ids[static_cast<std::size_t>(i)] = 20 + i;
  edit("a long new tail");
}

TEST(ModelJob, ALayerOrHeadChangeKeepsTheOverview) {
  KeptRun kept;
  const ModelResult first = run_model_job(job_for("Every effort moves you"), kept);
  ModelJob other = job_for("Every effort moves you");
  other.induction = first.overview->induction;
  other.layer = 0;
  other.head = 3;
  const ModelResult second = run_model_job(other, kept);
  EXPECT_EQ(second.run, first.run);
  EXPECT_EQ(second.overview, first.overview) << "a layer or head change recomputed the overview";
  EXPECT_EQ(second.trace->layer, 0);
  // Another clicked position: the same thumbnails and scores, other next tokens.
  other.next_at = 1;
  const ModelResult third = run_model_job(other, kept);
  ASSERT_NE(third.overview, first.overview);
  EXPECT_EQ(third.overview->next_at, 1);
  const ModelResult fresh = run(other);
  ASSERT_EQ(third.overview->next.size(), fresh.overview->next.size());
  for (std::size_t k = 0; k < fresh.overview->next.size(); ++k)
    EXPECT_EQ(third.overview->next[k].id, fresh.overview->next[k].id);
  EXPECT_EQ(third.overview->patterns.size(), fresh.overview->patterns.size());
  EXPECT_TRUE(third.overview->thumbs.front().data() == fresh.overview->thumbs.front().data());
  // A new text computes a new overview.
  const ModelResult fourth = run_model_job(job_for("Every effort"), kept);
  EXPECT_NE(fourth.overview, third.overview);
  EXPECT_EQ(fourth.overview->tokens, 2);
}

TEST(ModelJob, HeadsSortByTheChosenScoreHighestFirst) {
  ModelOverview o;
  o.layers = 1;
  o.heads = 3;
  o.patterns.resize(3);
  o.patterns[0].self = 0.2;
  o.patterns[1].self = 0.9;
  o.patterns[2].self = 0.5;
  PatternChoice c;
  EXPECT_EQ(heads_in_order(o, 0, c), (std::vector<int>{0, 1, 2}));
  c.kind = core::PatternKind::Self;
  EXPECT_EQ(heads_in_order(o, 0, c), (std::vector<int>{0, 1, 2})) << "colour only";
  c.sort = true;
  EXPECT_EQ(heads_in_order(o, 0, c), (std::vector<int>{1, 2, 0}));
}

// ---------------------------------------------------------------------------
// The app

constexpr int kKeyPageDown = 267;

class ModelApp : public ::testing::Test {
 protected:
  void SetUp() override {
    start_headless_imgui(state);
    state.ui.welcome_dismissed = true;
#if IMGUI_VERSION_NUM < 18700
    ImGui::GetIO().KeyMap[ImGuiKey_PageDown] = kKeyPageDown;
#endif
    state.model.model = tiny_model();
    state.model.typed.text = "Your journey starts with one step";
    state.set_source(Source::Model);
    frames(2);
    ASSERT_TRUE(state.showing_model()) << state.error;
  }
  void TearDown() override { ImGui::DestroyContext(); }

  int frame() { return headless_frame(state); }
  void frames(int n) { headless_frames(state, n); }
  void click(ImVec2 p) { headless_click(state, p); }
  // A window tall enough for the whole Model panel (the next tokens at its
  // foot are clipped, not drawn, below a 1000 px window's edge).
  void tall() { ImGui::GetIO().DisplaySize = ImVec2(1600, 2400); }
  AppState state;
};

TEST_F(ModelApp, EveryViewAndEveryStepDraws) {
  for (ModelView v : {ModelView::Model, ModelView::Head, ModelView::Tokens}) {
    state.model.view = v;
    EXPECT_GT(frame(), 1000) << model_view_id(v);
  }
  state.model.view = ModelView::Head;
  for (Step s : state.steps()) {
    state.step = s;
    EXPECT_GT(frame(), 1000) << step_id(s);
  }
  for (core::PatternKind k : core::kPatternKinds) {
    state.model.pattern = PatternChoice{k, true};
    state.model.view = ModelView::Model;
    EXPECT_GT(frame(), 1000) << core::pattern_key(k);
  }
}

TEST_F(ModelApp, OneHeadsConcatShowsThatHeadsSliceBesideTheConcatenation) {
  // Every head's context in the inputs' column left GPT-2's 12 boxes too
  // small for their cells: titles over empty boxes.
  state.model.view = ModelView::Head;
  state.head = 1;
  state.step = Step::Concat;
  frames(3);
  const StepMatrices m = step_matrices(Step::Concat, *state.trace, state.head);
  ASSERT_EQ(m.outputs.size(), 1u);
  EXPECT_EQ(m.outputs[0]->id, id::concat);
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0]->id, id::context);
  EXPECT_EQ(m.inputs[0]->head, 1);
  const std::string shown = squeezed(headless_text());
  EXPECT_NE(shown.find(squeezed("head 1's context")), std::string::npos) << shown;
  EXPECT_NE(shown.find(squeezed("columns 8 to 15 of the concatenation")), std::string::npos)
      << shown;
}

TEST_F(ModelApp, ClickingAThumbnailOpensThatHead) {
  state.model.view = ModelView::Model;
  frames(2);
  // Hover over the centre column until the grid says the pointer is on
  // layer 1, head 2 (the last tile), then click there.
  const int wanted = 1 * 3 + 2;
  ImVec2 at(-1, -1);
  for (float y = 60; y < 960 && at.x < 0; y += 30)
    for (float x = 400; x < 1240 && at.x < 0; x += 30) {
      ImGui::GetIO().MousePos = ImVec2(x, y);
      frame();
      if (state.model.hovered == wanted) at = ImVec2(x, y);
    }
  ASSERT_GE(at.x, 0) << "no tile of layer 1, head 2 under the pointer";
  click(at);
  const bool opened =
      state.model.view == ModelView::Head && state.model.layer == 1 && state.head == 2;
  EXPECT_TRUE(opened) << "layer " << state.model.layer << " head " << state.head;
  frames(2);
  EXPECT_EQ(state.trace->layer, 1);
}

TEST_F(ModelApp, PageDownAndBracketsChangeLayerAndHead) {
  state.model.layer = 0;
  state.head = 0;
  ImGuiIO& io = ImGui::GetIO();
#if IMGUI_VERSION_NUM < 18700
  io.KeysDown[kKeyPageDown] = true;
  frame();
  io.KeysDown[kKeyPageDown] = false;
#else
  io.AddKeyEvent(ImGuiKey_PageDown, true);
  frame();
  io.AddKeyEvent(ImGuiKey_PageDown, false);
#endif
  frame();
  EXPECT_EQ(state.model.layer, 1);
  io.AddInputCharacter(']');
  frame();
  EXPECT_EQ(state.head, 1);
  io.AddInputCharacter('[');
  io.AddInputCharacter('[');
  frame();
  EXPECT_EQ(state.head, 0) << "clamped at the first head";
  frames(2);
  EXPECT_EQ(state.trace->layer, 1);
}

TEST_F(ModelApp, APatternRankCountsOnlyLowerHeadsAndNamesTies) {
  // Layer 0, head 0 prints 0.900 like heads 1, 2 (0.89999) and 4: higher than
  // the two below it, tied with those three, not "higher than 3".
  auto overview = std::make_shared<ModelOverview>(*state.model.overview);
  ASSERT_EQ(overview->patterns.size(), 6u);
  const double previous[] = {0.9, 0.9, 0.89999, 0.2, 0.9, 0.1};
  for (std::size_t k = 0; k < 6; ++k) overview->patterns[k].previous_token = previous[k];
  state.model.overview = overview;
  state.model.view = ModelView::Model;
  state.model.layer = 0;
  state.head = 0;
  const HeadRank r = head_rank(*overview, core::PatternKind::PreviousToken, 0, 3);
  EXPECT_EQ(r.lower, 2);
  EXPECT_EQ(r.tied, 3);
  EXPECT_EQ(r.others, 5);
  frames(2);
  ASSERT_EQ(state.model.hovered, -1);
  const std::string shown = squeezed(headless_text());
  EXPECT_NE(shown.find(squeezed("Higher than 2 of the other 5 heads, tied with 3")),
            std::string::npos)
      << shown;
  EXPECT_EQ(shown.find(squeezed("Higher than 3 of the other 5 heads")), std::string::npos) << shown;
}

TEST_F(ModelApp, AHeadOpenedFromAllHeadsKeepsItsRowScale) {
  // All heads draws each head row by row; One head under Auto did so only
  // from 128 tokens, so a short text's head looked flat there.
  ASSERT_EQ(state.ui.row_scale, figure::RowScale::Auto);
  ASSERT_LT(state.trace->num_tokens(), figure::kAutoRowScaleTokens);
  state.model.view = ModelView::Head;
  state.step = Step::Softmax;
  frames(2);
  const core::Stage* w = state.trace->find(id::weights, state.head);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(heatmap_scope(state, *state.trace, *w), ScaleScope::Row);
  EXPECT_TRUE(rows_on_own_scale(state));  // the step card's checkbox shows it
  // R: an explicit choice, the same in both views (one scale).
  toggle_row_scale(state);
  EXPECT_EQ(state.ui.row_scale, figure::RowScale::Off);
  EXPECT_EQ(heatmap_scope(state, *state.trace, *w), ScaleScope::Matrix);
  // The book's six tokens stay on one scale under Auto.
  state.ui.row_scale = figure::RowScale::Auto;
  state.set_source(Source::Inputs);
  state.config.variant = core::Variant::Causal;
  state.mark_dirty();
  frames(2);
  const core::Stage* book = state.trace->find(id::weights);
  ASSERT_NE(book, nullptr);
  EXPECT_EQ(heatmap_scope(state, *state.trace, *book), ScaleScope::Matrix);
}

TEST_F(ModelApp, TheNormalisationLabDrawsNegativeNaiveWeightsOnAScaleCentredOnZero) {
  // A model's scores have both signs: division by the sum gives negative
  // "weights", which the weights' scale (0 up) draws like small positive ones.
  const auto n = core::compare_normalisation(*state.trace, state.head);
  ASSERT_TRUE(n);
  ASSERT_GT(n->negative_naive, 0);
  state.model.view = ModelView::Model;  // no stage panel: its scores have a centred scale too
  state.teach.show_normalisation = true;
  state.ui.row_scale = figure::RowScale::On;  // the bar's ends in words: "row max", ...
  frames(3);
  const std::string shown = squeezed(headless_text());
  EXPECT_NE(shown.find("centredon0"), std::string::npos) << shown;
  // The colour bar of a scale centred on 0 ends at minus its top.
  const bool centred =
      shown.find("−rowmax") != std::string::npos || shown.find("-rowmax") != std::string::npos ||
      shown.find("−max") != std::string::npos || shown.find("-max") != std::string::npos;
  EXPECT_TRUE(centred) << shown;
}

TEST_F(ModelApp, TheHeadViewHasALayerPickerAndSpreadsItsRowsOverThePanel) {
  state.model.view = ModelView::Tokens;
  state.select_layer(0);
  frames(3);
  const auto next = headless_text_at("▶");
  ASSERT_TRUE(next) << headless_text();
  click(*next);
  frames(3);
  EXPECT_EQ(state.model.layer, 1);
  EXPECT_EQ(state.trace->layer, 1);
  EXPECT_NE(squeezed(headless_text()).find("of2(PgUp/PgDn)"), std::string::npos);
  // Six tokens in a 1000 px window: rows further apart than a line of text.
  float first = -1, second = -1;
  for (const DrawnGlyph& g : headless_glyphs()) {
    // "Your", " journey": the first two rows, in the head view's left column.
    if ((g.text != "Y" && g.text != "j") || g.pen < 400 || g.pen > 900) continue;
    float& top = g.text == "Y" ? first : second;
    if (top < 0) top = g.top;
  }
  ASSERT_GT(first, 0);
  ASSERT_GT(second, 0);
  EXPECT_GT(second - first, ImGui::GetTextLineHeightWithSpacing() * 1.5f);
}

TEST_F(ModelApp, APatternScoreHasALegendAndSortedTilesShowTheirScores) {
  state.model.pattern = PatternChoice{core::PatternKind::PreviousToken, true};
  frames(3);
  const ModelOverview& o = *state.model.overview;
  double lo = 1e9, hi = -1e9;
  for (int k = 0; k < o.layers * o.heads; ++k) {
    lo = std::min(lo, pattern_value(o, core::PatternKind::PreviousToken, k));
    hi = std::max(hi, pattern_value(o, core::PatternKind::PreviousToken, k));
  }
  char want[64];
  std::snprintf(want, sizeof want, "framecolour:%.3f%.3f", lo, hi);  // the bar between: no text
  const std::string shown = squeezed(headless_text());
  EXPECT_NE(shown.find(want), std::string::npos) << shown;
  // The top-left tile is layer 0's highest-scoring head: its plate has its score.
  const int best = heads_in_order(o, 0, state.model.pattern).front();
  std::snprintf(want, sizeof want, "%d%.2f", best,
                pattern_value(o, core::PatternKind::PreviousToken, best));
  EXPECT_NE(shown.find(want), std::string::npos) << shown;
}

TEST_F(ModelApp, AppendingTheTopTokenGrowsTheTextByIt) {
  const std::size_t before = state.model.typed.tokens.size();
  const int top = state.model.overview->next_last.front().id;
  ASSERT_TRUE(state.append_top_token());
  frames(2);
  ASSERT_EQ(state.model.typed.tokens.size(), before + 1);
  EXPECT_EQ(state.model.typed.tokens.back().id, top);
  EXPECT_EQ(state.trace->num_tokens(), static_cast<int>(before + 1));
  EXPECT_EQ(state.model.overview->tokens, static_cast<int>(before + 1));
}

TEST_F(ModelApp, AppendingATokenThatEndsInsideACharacterKeepsTheTextUtf8) {
  // GPT-2's token 126 is the byte C2 alone, the first of a two-byte
  // character: appended, the text ends in U+FFFD (as tiktoken's decode shows
  // it), not in a byte the tokenizer refuses.
  const std::string before = state.model.typed.text;
  auto overview = std::make_shared<ModelOverview>(*state.model.overview);
  overview->next_last.front() = {126, core::printable_token("\xc2"), 0.5};
  state.model.overview = overview;
  ASSERT_TRUE(state.append_top_token());
  EXPECT_EQ(state.model.typed.text, before + "\xef\xbf\xbd");
  EXPECT_TRUE(state.model.typed.error.empty()) << state.model.typed.error;
  frames(2);
  EXPECT_TRUE(state.error.empty()) << state.error;
  EXPECT_EQ(state.model.typed.tokens.size(),
            core::Gpt2Tokenizer::builtin().encode(state.model.typed.text).size());
}

TEST_F(ModelApp, NextTokenPercentagesTellTheRowsApart) {
  // An untrained model spreads its probability over the whole vocabulary:
  // at two decimals every row read "0.00 %".
  const ModelOverview& o = *state.model.overview;
  ASSERT_EQ(o.next.size(), 10u);
  std::set<double> distinct;
  for (const core::NextToken& t : o.next) distinct.insert(t.probability);
  ASSERT_GT(distinct.size(), 5u);
  tall();
  frames(2);
  const std::string shown = squeezed(headless_text());
  std::set<std::string> printed;
  const std::regex percent(R"(([0-9]+\.[0-9]+)%)");
  for (auto it = std::sregex_iterator(shown.begin(), shown.end(), percent);
       it != std::sregex_iterator(); ++it)
    printed.insert((*it)[1]);
  EXPECT_GE(printed.size(), distinct.size()) << shown;
  EXPECT_EQ(printed.count("0.00"), 0u) << shown;
}

TEST_F(ModelApp, ANewlineTokenIsShownAsAnEscapeInTheNextTokenList) {
  auto overview = std::make_shared<ModelOverview>(*state.model.overview);
  overview->next.front() = {198, "\n", 0.5};  // GPT-2's "\n"
  overview->next[1] = {197, "\t", 0.25};
  overview->next_last = overview->next;
  state.model.overview = overview;
  tall();
  frames(2);
  const std::string shown = headless_text();
  EXPECT_NE(shown.find(R"("\n")"), std::string::npos) << shown;
  EXPECT_NE(shown.find(R"("\t")"), std::string::npos) << shown;
  EXPECT_NE(shown.find(R"(Append "\n")"), std::string::npos) << shown;
}

TEST_F(ModelApp, NextTokensFollowTheClickedPosition) {
  state.model.next_at = 2;
  state.mark_dirty();
  frames(2);
  EXPECT_EQ(state.model.overview->next_at, 2);
  core::ModelRun fresh(tiny_model(), state.model.typed.ids());
  EXPECT_EQ(state.model.overview->next.front().id, fresh.next_tokens_at(2, 1).front().id);
}

TEST_F(ModelApp, TheOverviewHoldsTheTextsLossAndItsLens) {
  const ModelOverview& o = *state.model.overview;
  core::ModelRun fresh(tiny_model(), state.model.typed.ids());
  const core::TextLoss want = core::text_loss(fresh);
  ASSERT_EQ(o.loss.per_token.size(), want.per_token.size());
  for (std::size_t i = 0; i < want.per_token.size(); ++i)
    EXPECT_NEAR(o.loss.per_token[i], want.per_token[i], 1e-5) << i;
  EXPECT_TRUE(o.lens.layers.empty()) << "the lens waits for the Logit lens window";
  EXPECT_FALSE(o.grid) << "the grid waits for the Logit lens window";
  // One token more: the losses before it are carried over, not recomputed.
  const std::vector<double> before = o.loss.per_token;
  ASSERT_TRUE(state.append_top_token());
  frames(2);
  const core::TextLoss& after = state.model.overview->loss;
  ASSERT_EQ(after.per_token.size(), before.size() + 1);
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after.per_token[i], before[i]);
  // The window asks for the grid; its last layer is each position's answer.
  state.model.lens_open = true;
  state.mark_dirty();
  frames(3);
  const auto grid = state.model.overview->grid;
  ASSERT_TRUE(grid);
  const core::LensColumn& lens = state.model.overview->lens;
  ASSERT_EQ(lens.layers.size(), 3u);  // embeddings, block 0, block 1
  EXPECT_EQ(lens.layers.back().front().id, state.model.overview->next.front().id);
  EXPECT_EQ(grid->layers, 3);
  EXPECT_EQ(grid->positions, state.model.overview->tokens);
  EXPECT_EQ(grid->at(2, grid->positions - 1).id, state.model.overview->next_last.front().id);
  EXPECT_GT(frame(), 1000);
}

TEST_F(ModelApp, SampleDrawsWhatTheBooksGenerateDrawsFromTheSeed) {
  state.model.sampling.settings = core::Sampling{1.3, 40, 7};
  core::BookSampler book(state.model.sampling.settings);
  for (int k = 0; k < 4; ++k) {
    core::ModelRun run(tiny_model(), state.model.typed.ids());
    const int want = book.next(run.logits());
    const std::optional<int> got = state.sample_token();
    ASSERT_TRUE(got) << state.model.typed.error;
    EXPECT_EQ(*got, want) << "draw " << k;
    frames(2);
  }
  EXPECT_EQ(state.model.sampling.drawn, 4);
  EXPECT_GT(frame(), 1000);
  // Other settings, or an edited text, start again from the seed.
  state.model.sampling.settings.seed = 8;
  core::ModelRun run(tiny_model(), state.model.typed.ids());
  const int want = core::BookSampler(state.model.sampling.settings).next(run.logits());
  EXPECT_EQ(state.sample_token(), std::optional<int>(want));
  EXPECT_EQ(state.model.sampling.drawn, 1);
  // Settings that cannot sample say why instead of drawing.
  frames(2);
  state.model.sampling.settings.temperature = -1.0;
  EXPECT_FALSE(state.sample_token());
  EXPECT_NE(state.model.typed.error.find("temperature"), std::string::npos);
}

TEST_F(ModelApp, TextTooLongOrEmptyIsRefusedAndTheLastRunStays) {
  const auto shown = state.trace;
  state.model.typed.text = "";
  state.model_text_changed();
  frames(2);
  EXPECT_NE(state.error.find("at least one token"), std::string::npos) << state.error;
  EXPECT_EQ(state.trace, shown);
  std::string longer;
  for (int k = 0; k < 70; ++k) longer += " word";
  state.model.typed.text = longer;
  state.model_text_changed();
  frames(2);
  EXPECT_NE(state.error.find("64 at most"), std::string::npos) << state.error;
  EXPECT_EQ(state.trace, shown);
  state.model.typed.text = "Back to a short text";
  state.model_text_changed();
  frames(2);
  EXPECT_TRUE(state.error.empty()) << state.error;
  EXPECT_NE(state.trace, shown);
}

TEST_F(ModelApp, TextInAnyScriptIsCollectedAndDrawnFromTheFonts) {
  // Cyrillic is in DejaVu Sans, CJK only in a fallback font: both were "?".
  state.model.typed.text = "Привет 世界";
  state.model_text_changed();
  frames(2);
  ASSERT_TRUE(state.showing_model()) << state.error;
  for (const char32_t cp : {U'\u041f', U'\u0442', U'\u4e16', U'\u754c'})  // П т 世 界
    EXPECT_EQ(state.ui.extra_glyphs.count(cp), 1u) << static_cast<unsigned>(cp);
  ASSERT_TRUE(state.ui.fonts_dirty);
  headless_rebuild_fonts(state);
  frames(2);
  EXPECT_FALSE(state.ui.fonts_dirty) << "nothing new to add: no second rebuild";
  const ImFont* body = ImGui::GetIO().FontDefault;
  EXPECT_NE(body->FindGlyphNoFallback(0x041F), nullptr);  // П
  const std::string shown = squeezed(headless_text());
  EXPECT_NE(shown.find("Привет"), std::string::npos) << shown;
  if (cjk_font_file().empty())
    GTEST_SKIP() << "no fallback font with CJK installed (fonts-droid-fallback)";
  EXPECT_NE(body->FindGlyphNoFallback(0x4E16), nullptr);  // 世
  EXPECT_NE(shown.find("世界"), std::string::npos) << shown;
}

TEST_F(ModelApp, AnEmojiInTheTextIsDrawnWithAGlyphOfItsOwn) {
  if constexpr (IM_UNICODE_CODEPOINT_MAX < 0x1F600 && IMGUI_VERSION_NUM >= 19200)
    GTEST_SKIP() << "ImGui 1.92 with a 16-bit ImWchar draws U+FFFD above U+FFFF";
  // 😀 (U+1F600) was "?": ImGui's 16-bit characters end at U+FFFF.
  state.model.typed.text = "smile \xf0\x9f\x98\x80 now";
  state.model_text_changed();
  frames(2);
  EXPECT_EQ(state.ui.extra_glyphs.count(U'\U0001F600'), 1u);
  ASSERT_TRUE(state.ui.fonts_dirty);
  headless_rebuild_fonts(state);
  frames(2);
  const char32_t drawn = drawable_codepoint(U'\U0001F600');
  if (drawn == static_cast<char32_t>(IM_UNICODE_CODEPOINT_INVALID))
    GTEST_SKIP() << "no font with U+1F600 installed (fonts-symbola)";
  const ImFont* body = ImGui::GetIO().FontDefault;
  const ImFontGlyph* glyph = body->FindGlyphNoFallback(static_cast<ImWchar>(drawn));
  ASSERT_NE(glyph, nullptr);
  EXPECT_NE(glyph, body->FallbackGlyph);
  // The text box draws it between the words; the text keeps the real emoji.
  std::string stand_in;
  append_utf8(stand_in, drawn);
  const std::string shown = squeezed(headless_text());
  EXPECT_NE(shown.find("smile" + stand_in + "now"), std::string::npos) << shown;
  EXPECT_EQ(state.model.typed.text, "smile \xf0\x9f\x98\x80 now");
}

TEST_F(ModelApp, TheTextBoxWrapsAndTypingInItFiresNoShortcut) {
  state.model.typed.text =
      "Your journey starts with one step and goes on through every layer of the model "
      "until the last";
  state.model_text_changed();
  frames(3);
  // Wrapped: the box's words come on several lines, all inside the box.
  const std::optional<ImVec2> first = headless_text_at("Your journey");
  ASSERT_TRUE(first);
  ImRect box;
  for (const ImGuiWindow* w : ImGui::GetCurrentContext()->Windows)
    if (std::string(w->Name).find("##model_text") != std::string::npos) box = w->Rect();
  ASSERT_GT(box.GetWidth(), 100.0f);
  std::set<float> lines;
  for (const DrawnGlyph& g : headless_glyphs())
    if (g.top >= box.Min.y && g.top < box.Max.y && g.pen >= box.Min.x && g.pen < box.Max.x) {
      EXPECT_LE(g.pen + g.advance, box.Max.x) << g.text << " runs past the box";
      lines.insert(g.top);
    }
  EXPECT_GE(lines.size(), 2u) << "the text did not wrap";
  click(*first);
  frame();
  ASSERT_TRUE(ImGui::GetIO().WantTextInput);
  // "g" appends the top token and "]" picks the next head, but not while typing.
  const int head = state.head;
  ImGuiIO& io = ImGui::GetIO();
#if IMGUI_VERSION_NUM < 18700
  io.KeysDown['G'] = true;
#else
  io.AddKeyEvent(ImGuiKey_G, true);
#endif
  io.AddInputCharactersUTF8("g]");
  frame();
#if IMGUI_VERSION_NUM < 18700
  io.KeysDown['G'] = false;
#else
  io.AddKeyEvent(ImGuiKey_G, false);
#endif
  frames(2);
  EXPECT_EQ(state.head, head);
  EXPECT_LE(state.model.typed.text.find("g]"), 1u) << state.model.typed.text;  // where clicked
  EXPECT_TRUE(ImGui::GetIO().WantTextInput);
}

TEST_F(ModelApp, ATooLongTextOffersToKeepItsLastTokensAndSaysWhatItDropped) {
  std::string longer = "Hello";
  for (int k = 0; k < 69; ++k) longer += " word";  // 70 tokens, 64 positions
  for (int k = 0; k < 5; ++k) longer += " end";    // 75
  state.model.typed.text = longer;
  state.model_text_changed();
  tall();
  frames(2);
  ASSERT_NE(state.error.find("keep its last 64"), std::string::npos) << state.error;
  const auto button = headless_text_at("Keep the last 64 tokens");
  ASSERT_TRUE(button) << headless_text();
  click(*button);
  frames(3);
  EXPECT_TRUE(state.model.keep_last);
  EXPECT_TRUE(state.error.empty()) << state.error;
  ASSERT_TRUE(state.showing_model());
  // The run reads the last 64 tokens: "Hello" and ten " word"s drop out.
  std::vector<int> kept = ids_of(longer);
  ASSERT_EQ(kept.size(), 75u);
  kept.erase(kept.begin(), kept.begin() + 11);
  EXPECT_EQ(state.model.dropped, 11);
  ASSERT_EQ(state.trace->num_tokens(), 64);
  EXPECT_EQ(state.model.overview->ids, kept);
  EXPECT_EQ(state.trace->tokens.front(), " word");
  EXPECT_EQ(state.trace->tokens.back(), " end");
  const std::string note = squeezed(headless_text());
  EXPECT_NE(note.find("Keepingthelast64tokens:thefirst11ofthetext's75arenotread"),
            std::string::npos)
      << note;
  // Appending goes on past the context, the first tokens dropping out.
  ASSERT_TRUE(state.append_top_token());
  frames(3);
  EXPECT_EQ(state.model.dropped, 12);
  EXPECT_EQ(state.trace->num_tokens(), 64);
  // The session keeps the choice; Read the whole text turns it off and the
  // text is refused again.
  EXPECT_NE(session_json(state).find("\"keep_last\": true"), std::string::npos);
  const auto off = headless_text_at("Read the whole text");
  ASSERT_TRUE(off) << headless_text();
  click(*off);
  frames(2);
  EXPECT_FALSE(state.model.keep_last);
  EXPECT_NE(state.error.find("76 tokens"), std::string::npos) << state.error;
}

TEST_F(ModelApp, ARefusedTextLeavesEveryViewOnTheTokensThatRan) {
  ASSERT_EQ(state.trace->tokens.size(), 6u);  // "Your journey starts with one step"
  std::string longer = "Zebras";
  for (int k = 0; k < 70; ++k) longer += " word";
  state.model.typed.text = longer;
  state.model_text_changed();
  frames(2);
  ASSERT_NE(state.error.find("64 at most"), std::string::npos) << state.error;
  state.model.view = ModelView::Tokens;
  tall();
  frames(2);
  // The head view's right panel and the next-token header name the sixth
  // token of the run (" step"), not the text box's sixth (" word").
  const std::string shown = squeezed(headless_text());
  EXPECT_NE(shown.find("Token5\"step\""), std::string::npos) << shown;
  EXPECT_NE(shown.find("aftertoken5\"step\""), std::string::npos) << shown;
  EXPECT_EQ(shown.find("Token5\"word\""), std::string::npos) << shown;
  EXPECT_EQ(shown.find("aftertoken5\"word\""), std::string::npos) << shown;
}

TEST_F(ModelApp, AMalformedModelFolderGivesItsMessageAndKeepsTheModel) {
  core::testing::TempDir dir;
  const std::filesystem::path folder = dir.path() / "broken";
  std::filesystem::create_directories(folder);
  std::ofstream(folder / "config.json") << "{\"n_layer\": ";
  std::ofstream(folder / "model.safetensors") << "not a safetensors file";
  const auto before = state.model.model;
  state.open_model(folder.string());
  state.poll_model_loader(true);
  EXPECT_FALSE(state.model.load_error.empty());
  EXPECT_EQ(state.model.model, before);
  frames(3);  // draws the message, no crash
  EXPECT_TRUE(state.showing_model());
  // A folder that does not exist says so.
  state.open_model((dir.path() / "nowhere").string());
  state.poll_model_loader(true);
  EXPECT_NE(state.model.load_error.find("nowhere"), std::string::npos) << state.model.load_error;
}

TEST_F(ModelApp, AHubIdNotYetPulledOpensTheWindowThatGetsIt) {
  core::testing::TempDir dir;
  const char* was = std::getenv("HF_HUB_CACHE");
  const std::string saved = was ? was : "";
  setenv("HF_HUB_CACHE", dir.path().c_str(), 1);
  const auto before = state.model.model;
  state.open_model("openai-community/gpt2");
  if (saved.empty())
    unsetenv("HF_HUB_CACHE");
  else
    setenv("HF_HUB_CACHE", saved.c_str(), 1);
  EXPECT_FALSE(state.model.loader->loading()) << "nothing to load until it is pulled";
  EXPECT_TRUE(state.model.get.open);
  EXPECT_EQ(state.model.get.field, "openai-community/gpt2");
  EXPECT_NE(state.model.load_error.find("Get a model"), std::string::npos)
      << state.model.load_error;
  EXPECT_EQ(state.model.model, before) << "the open model stays";
  frames(3);  // the window and the message draw
  EXPECT_TRUE(state.showing_model());
}

TEST_F(ModelApp, DroppedFilesOpenAModelOrSayWhatCanBeDropped) {
  core::testing::TempDir dir;
  const std::filesystem::path notes = dir.path() / "notes.txt";
  std::ofstream(notes) << "hello";
  state.open_dropped(notes.string());
  EXPECT_NE(state.ui.session_warning.find("notes.txt"), std::string::npos)
      << state.ui.session_warning;
  EXPECT_FALSE(state.model.loader->loading());
  // A folder is taken for a model: its load runs and says what is missing.
  state.open_dropped(dir.path().string());
  state.poll_model_loader(true);
  EXPECT_FALSE(state.model.load_error.empty());
  EXPECT_EQ(state.model.model, tiny_model()) << "the model on screen stays";
}

// Browse... with a stand-in for the desktop's dialog (a script answering a
// folder's config.json): the chosen folder is opened, and the frames go on
// while the dialog is open. The folder holds no weights, so the load fails
// and says so while the model on screen stays.
TEST_F(ModelApp, BrowseOpensWhatTheDesktopsDialogChose) {
  core::testing::TempDir dir;
  const std::filesystem::path folder = dir.path() / "my-gpt2";
  std::filesystem::create_directories(folder);
  std::ofstream(folder / "config.json") << "{}";
  const std::filesystem::path script = dir.path() / "dialog";
  std::ofstream(script) << "#!/bin/sh\nsleep 0.2; echo '" << (folder / "config.json").string()
                        << "'\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  state.model.browse = std::make_shared<NativeDialog>(std::vector<std::string>{script.string()});
  int n = 0;
  for (; n < 500 && state.model.browse; ++n) {
    frame();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(n, 5) << "frames went on while the dialog was open";
  EXPECT_EQ(state.model.path, folder.string()) << "a config.json stands for its folder";
  state.poll_model_loader(true);
  EXPECT_NE(state.model.load_error.find("my-gpt2"), std::string::npos) << state.model.load_error;
  EXPECT_EQ(state.model.model, tiny_model()) << "the model on screen stays";
}

TEST_F(ModelApp, WithoutADesktopDialogBrowseOpensTheAppsOwnAndItOpensAModel) {
  core::testing::TempDir dir;
  write_tiny_checkpoint(dir.path() / "tiny");
  state.files.installed_tool = DialogTool::Builtin;  // no zenity, no kdialog
  tall();
  frames(2);
  const auto checkpoint = headless_text_at("Checkpoint");  // folded while a model is open
  ASSERT_TRUE(checkpoint);
  click(*checkpoint);
  frames(2);
  const auto browse = headless_text_at("Browse...");
  ASSERT_TRUE(browse) << "Browse... is there without a desktop dialog\n" << headless_text();
  click(*browse);
  frames(2);
  ASSERT_EQ(state.files.dialog, FileDialog::OpenModel);
  EXPECT_NE(squeezed(headless_text()).find("AHuggingFaceGPT-2folder"), std::string::npos)
      << headless_text();
  // The path field has the keyboard, its text selected: typing replaces it.
  ImGuiIO& io = ImGui::GetIO();
  auto type_and_enter = [&](const std::string& text) {
    for (const char c : text) io.AddInputCharacter(static_cast<unsigned char>(c));
    frames(2);
#if IMGUI_VERSION_NUM < 18700
    io.KeyMap[ImGuiKey_Enter] = 257;
    io.KeysDown[257] = true;
    frame();
    io.KeysDown[257] = false;
#else
    io.AddKeyEvent(ImGuiKey_Enter, true);
    frame();
    io.AddKeyEvent(ImGuiKey_Enter, false);
#endif
    frames(2);
  };
  type_and_enter((dir.path() / "missing").string());
  EXPECT_EQ(state.files.dialog, FileDialog::OpenModel) << "a wrong path keeps the dialog open";
  EXPECT_NE(state.files.dialog_error.find("does not exist"), std::string::npos)
      << state.files.dialog_error;
  io.KeyCtrl = false;
  state.files.dialog = FileDialog::None;  // and again, for a fresh field
  frames(2);
  open_file_dialog(state, FileDialog::OpenModel);
  frames(2);
  type_and_enter((dir.path() / "tiny" / "config.json").string());
  EXPECT_EQ(state.files.dialog, FileDialog::None) << state.files.dialog_error;
  EXPECT_EQ(state.model.path, (dir.path() / "tiny").string())
      << "config.json stands for its folder";
  state.poll_model_loader(true);
  ASSERT_TRUE(state.model.model) << state.model.load_error;
  EXPECT_EQ(state.model.model->config().n_embd, 8) << "the tiny checkpoint is open";
}

TEST_F(ModelApp, APthWithoutAConfigPointsAtTheConfigFieldNotAFlag) {
  core::testing::TempDir dir;
  std::ofstream(dir.path() / "model.pth") << "not read: the config is missing first";
  state.open_model((dir.path() / "model.pth").string());
  state.poll_model_loader(true);
  const std::string& e = state.model.load_error;
  EXPECT_NE(e.find("GPT_CONFIG"), std::string::npos) << e;
  EXPECT_NE(e.find("config field"), std::string::npos) << e;
  EXPECT_EQ(e.find("--config"), std::string::npos) << "no command-line flag in the app: " << e;
  tall();
  frames(2);
  const std::string shown = squeezed(headless_text());
  EXPECT_NE(shown.find("configfile:neededforthismodel"), std::string::npos)
      << "the Checkpoint section opens on the marked field\n"
      << shown;
  EXPECT_NE(shown.find(squeezed("choose the config file in the Model panel's config field")),
            std::string::npos)
      << shown;
}

TEST_F(ModelApp, CancelDropsTheLoadsResult) {
  core::testing::TempDir dir;
  state.open_model((dir.path() / "nowhere").string());
  state.model.loader->cancel();
  state.model.loader->wait();
  state.poll_model_loader();
  EXPECT_TRUE(state.model.load_error.empty()) << "a cancelled load reports nothing";
  EXPECT_FALSE(state.model.loader->loading());
}

TEST_F(ModelApp, BackToChapterThreeRunsTheBooksClasses) {
  state.set_source(Source::Inputs);
  frames(2);
  EXPECT_FALSE(state.showing_model());
  EXPECT_FALSE(state.sync_model_run.run) << "the model's run is freed";
  EXPECT_TRUE(state.model.model) << "the model stays loaded";
  state.set_source(Source::Model);
  frames(2);
  EXPECT_TRUE(state.showing_model());
}

TEST_F(ModelApp, TheWalkthroughRunsTheBooksClassesAndLeaveReturnsToTheModel) {
  state.model.layer = 1;
  state.head = 2;
  state.model.view = ModelView::Head;
  state.step = Step::Softmax;
  state.mark_dirty();
  frames(2);
  ASSERT_TRUE(state.showing_model());
  start_walkthrough(state, 0);
  frames(3);
  // The book's words over the book's numbers: the chapter-3 classes on its six tokens.
  EXPECT_EQ(state.source, Source::Inputs);
  ASSERT_TRUE(state.trace);
  EXPECT_FALSE(state.showing_model());
  EXPECT_EQ(state.trace->config.variant, core::Variant::Simple);
  EXPECT_EQ(state.step, Step::Scores);
  const auto books = core::book_matrices_for_stage(*state.trace, id::scores);
  ASSERT_FALSE(books.empty());
  for (const core::BookMatrix* b : books)
    EXPECT_TRUE(core::check_book(*b, state.trace.get()).matches) << b->name;
  // Set up this step again, after the learner moved on: back to the step's stage.
  state.step = Step::Context;
  state.teach.walk_apply = state.teach.walk_step;
  frames(3);
  EXPECT_EQ(state.step, Step::Scores);
  EXPECT_FALSE(state.showing_model());
  // Leave: the model view as it was.
  leave_walkthrough(state, true);
  frames(3);
  EXPECT_EQ(state.source, Source::Model);
  ASSERT_TRUE(state.showing_model()) << state.error;
  EXPECT_EQ(state.model.layer, 1);
  EXPECT_EQ(state.trace->layer, 1);
  EXPECT_EQ(state.head, 2);
  EXPECT_EQ(state.step, Step::Softmax);
  EXPECT_EQ(state.model.view, ModelView::Head);
}

TEST_F(ModelApp, LeavingAWalkthroughStartedOnTypedTextReturnsToTheText) {
  state.set_source(Source::Text);
  frames(2);
  ASSERT_EQ(state.source, Source::Text);
  const std::vector<std::string> tokens = state.trace->tokens;
  start_walkthrough(state, 3);
  frames(3);
  EXPECT_EQ(state.source, Source::Inputs);
  leave_walkthrough(state, true);
  frames(3);
  EXPECT_EQ(state.source, Source::Text);
  EXPECT_EQ(state.origin, InputOrigin::Text);
  EXPECT_EQ(state.trace->tokens, tokens);
}

TEST_F(ModelApp, ASessionKeepsTheModelsPathTextAndSelectionNotItsWeights) {
  state.model.model_path = "/models/gpt2";
  state.model.typed.text = "Hello there";
  state.model.layer = 1;
  state.model.view = ModelView::Tokens;
  state.model.pattern = PatternChoice{core::PatternKind::Induction, true};
  const std::string text = session_json(state);
  EXPECT_NE(text.find("\"/models/gpt2\""), std::string::npos);
  EXPECT_EQ(text.find("wte"), std::string::npos);
  AppState other;
  apply_session_json(text, "test", other);
  // The model is gone: the chapter-3 classes, and a banner naming it.
  EXPECT_EQ(other.source, Source::Inputs);
  EXPECT_NE(other.ui.session_warning.find("/models/gpt2"), std::string::npos)
      << other.ui.session_warning;
  EXPECT_EQ(other.model.typed.text, "Hello there");
  EXPECT_EQ(other.model.layer, 1);
  EXPECT_EQ(other.model.view, ModelView::Tokens);
  EXPECT_EQ(other.model.pattern.kind, core::PatternKind::Induction);
  EXPECT_TRUE(other.model.pattern.sort);
}

TEST_F(ModelApp, ASessionsModelThatFailsToLoadFallsBackToChapterThree) {
  core::testing::TempDir dir;
  const std::filesystem::path folder = dir.path() / "broken";
  std::filesystem::create_directories(folder);
  std::ofstream(folder / "config.json") << "{}";
  state.model.model_path = folder.string();
  const std::string text = session_json(state);
  AppState other;
  apply_session_json(text, "test", other);
  EXPECT_EQ(other.source, Source::Model) << "it exists: the load starts";
  other.poll_model_loader(true);
  EXPECT_EQ(other.source, Source::Inputs);
  EXPECT_NE(other.ui.session_warning.find("could not be opened"), std::string::npos)
      << other.ui.session_warning;
}

TEST_F(ModelApp, TheModelViewExportsAsOneSvgFigure) {
  core::testing::TempDir dir;
  state.files.export_folder = dir.path();
  state.model.pattern = PatternChoice{core::PatternKind::Self, true};
  const auto path = export_model_view(state, ExportKind::Svg, 1);
  ASSERT_TRUE(path) << state.files.notice.message;
  EXPECT_EQ(path->filename().string().rfind("model_view_", 0), 0u) << *path;
  std::ifstream in(*path);
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("2 layers"), std::string::npos) << "the title names the model's size";
  EXPECT_NE(svg.find("sorted by self"), std::string::npos);
  EXPECT_NE(svg.find(">L1<"), std::string::npos) << "a label per layer";
  EXPECT_NE(svg.find("height=\"100%\" fill=\"#ffffff\""), std::string::npos) << "light";
  state.files.theme = figure::Theme::Dark;  // Export view's Theme: Dark
  const auto dark_path = export_model_view(state, ExportKind::Svg, 1);
  ASSERT_TRUE(dark_path) << state.files.notice.message;
  std::ifstream dark_in(*dark_path);
  const std::string dark((std::istreambuf_iterator<char>(dark_in)),
                         std::istreambuf_iterator<char>());
  EXPECT_NE(dark.find("height=\"100%\" fill=\"" +
                      figure::hex(figure::theme_colors(figure::Theme::Dark).background) + "\""),
            std::string::npos);
  // Without the window's renderer there is no PNG, and the notice says why.
  EXPECT_FALSE(export_model_view(state, ExportKind::Png, 2));
  EXPECT_NE(state.files.notice.message.find("OpenGL"), std::string::npos)
      << state.files.notice.message;
}

TEST_F(ModelApp, AModelStagesFileIsNamedForTheModelLayerAndHead) {
  core::testing::TempDir dir;
  state.files.export_folder = dir.path();
  state.select_layer(1);
  state.select_head(2);
  frames(3);
  ASSERT_EQ(state.trace->layer, 1);
  const core::Stage* weights = state.trace->find(id::weights, 2);
  ASSERT_NE(weights, nullptr);
  const auto path = export_stage(state, *weights, ExportKind::Csv, 1);
  ASSERT_TRUE(path) << state.files.notice.message;
  // As attnscope-cli model export names it: stage, layer, head, model.
  const std::string want =
      "weights_l1_h2_" + core::sanitize_file_component(state.trace->model) + "_";
  EXPECT_EQ(path->filename().string().rfind(want, 0), 0u) << *path << " wanted " << want;
}

TEST_F(ModelApp, ExportAllWritesEveryHeadOfTheLayerAndTheSession) {
  core::testing::TempDir dir;
  state.files.export_folder = dir.path();
  state.files.render_png = [](const figure::Heatmap&, int) {  // no GL here: a 2 x 2 stand-in
    RenderedImage r;
    r.width = r.height = 2;
    r.rgba.assign(16, 200);
    return r;
  };
  state.model.layer = 1;
  state.mark_dirty();
  frames(2);
  const auto folder = export_all_stages(state);
  ASSERT_TRUE(folder) << state.files.notice.message;
  int weights = 0;
  for (const auto& e : std::filesystem::directory_iterator(*folder))
    if (e.path().filename().string().rfind("weights_l1_h", 0) == 0 &&
        e.path().extension() == ".png")
      ++weights;
  EXPECT_EQ(weights, 3) << "every head of layer 1";
  std::ifstream in(*folder / "session.json");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(doc.find("\"source\":\"model\""), std::string::npos) << doc.substr(0, 400);
  EXPECT_THROW(run_pytorch_script(state), std::runtime_error);
}

// The tiny model's weights as the book's GPTModel loaded from a .pth: the
// file is a stand-in (the script is written from the config beside it and
// the run on screen; nothing here reads the weights again).
TEST_F(ModelApp, ABookPthRunCopiesAsTheBooksGPTModelScript) {
  core::testing::TempDir dir;
  const auto base = tiny_model();
  std::ofstream(dir.path() / "model.pth") << "stand-in";
  std::ofstream(dir.path() / "gpt_config.json")
      << R"({"vocab_size": 50257, "context_length": 64, "emb_dim": 24, "n_heads": 3,
             "n_layers": 2, "drop_rate": 0.1, "qkv_bias": true})";
  state.model.model = std::make_shared<const core::Gpt2Model>(
      std::shared_ptr<const core::Gpt2Model::Weights>(base, &base->weights()), "model.pth",
      core::ModelFormat::Book,
      std::shared_ptr<const core::Gpt2Tokenizer>(base, &base->tokenizer()));
  state.model.model_path = (dir.path() / "model.pth").string();
  state.model.layer = 1;
  state.head = 2;
  state.mark_dirty();
  frames(2);
  ASSERT_EQ(state.trace->layer, 1);
  EXPECT_FALSE(pytorch_script_unavailable(state));
  const std::string script = run_pytorch_script(state);
  const std::vector<std::string> parts = {"class GPTModel(nn.Module)",
                                          "LAYER = 1",
                                          "HEAD = 2",
                                          "\"qkv_bias\": True",
                                          "\"emb_dim\": 24",
                                          "PTH = \"" + (dir.path() / "model.pth").string() + "\"",
                                          "#   Your journey starts with one step\n"};
  for (const std::string& part : parts) EXPECT_NE(script.find(part), std::string::npos) << part;
  for (int id : state.model.typed.ids())
    EXPECT_NE(script.find("    " + std::to_string(id) + ",  # "), std::string::npos) << id;
  state.files.export_folder = dir.path();
  const auto saved = save_run_as_python(state);
  ASSERT_TRUE(saved) << state.files.notice.message;
  const std::string name = saved->filename().string();
  EXPECT_EQ(name.rfind("run_model", 0), 0u) << name;
  EXPECT_NE(name.find("_layer1_head2_"), std::string::npos) << name;
  EXPECT_EQ(saved->extension(), ".py");
  std::ifstream in(*saved);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()),
            script);
}

TEST_F(ModelApp, AHuggingFaceModelSaysWhyItHasNoScript) {
  core::testing::TempDir dir;
  write_tiny_checkpoint(dir.path() / "tiny");
  state.model.model_path = (dir.path() / "tiny").string();
  const auto why = pytorch_script_unavailable(state);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find(".pth"), std::string::npos) << *why;
  EXPECT_NE(why->find("model trace"), std::string::npos) << *why;
  try {
    run_pytorch_script(state);
    ADD_FAILURE() << "a Hugging Face model's run has no script";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), *why);
  }
  state.files.export_folder = dir.path();
  EXPECT_FALSE(save_run_as_python(state));
  EXPECT_NE(state.files.notice.message.find(*why), std::string::npos) << state.files.notice.message;
}

TEST(HeadGridFigure, TilesAreLaidOutInOrderWithGaps) {
  figure::HeadGrid g;
  g.layers = 2;
  g.heads = 3;
  for (int k = 0; k < 6; ++k)
    g.maps.push_back(core::RowMatrix::Constant(8, 8, 0.1f * static_cast<float>(k)));
  const figure::Scene sc = figure::layout_head_grid(g);
  // 3 tiles of 8 cells and 2 gaps of 1 across, 2 tiles and 1 gap down.
  EXPECT_EQ(sc.grid.cols(), 3 * 8 + 2);
  EXPECT_EQ(sc.grid.rows(), 2 * 8 + 1);
  EXPECT_EQ(sc.grid.colors.at(8, 0), (figure::Rgba8{255, 255, 255, 255})) << "a gap";
  g.order = {{2, 0, 1}, {}};
  EXPECT_NO_THROW(figure::layout_head_grid(g));
  g.order = {{2, 2, 1}};
  EXPECT_THROW(figure::layout_head_grid(g), std::invalid_argument);
  g.order.clear();
  g.maps.pop_back();
  EXPECT_THROW(figure::layout_head_grid(g), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// The model flags the app shares with attnscope-cli (run_flags)

// Parses `args` as attnscope's command line and applies it to `state`: "" or
// the ParseError's message.
std::string launch_model(AppState& state, std::vector<std::string> args) {
  std::string name = "attnscope";
  std::vector<char*> argv{name.data()};
  for (auto& a : args) argv.push_back(a.data());
  LaunchOptions o;
  if (!parse_launch_options(static_cast<int>(argv.size()), argv.data(), o).run)
    return "parse refused";
  try {
    apply_launch_options(o, state);
  } catch (const core::ParseError& e) {
    return e.what();
  }
  return {};
}

TEST(ModelFlags, TextFileIdsAndModelConfigOpenTheModelAsTextDoes) {
  core::testing::TempDir dir;
  write_tiny_checkpoint(dir.path() / "tiny");
  const std::string tiny = (dir.path() / "tiny").string();
  const std::string sentence = "Every effort moves you";
  std::ofstream(dir.path() / "text.txt") << sentence;
  AppState by_text, by_file, by_ids, by_config;
  ASSERT_EQ(launch_model(by_text, {"--model", tiny, "--text", sentence}), "");
  const std::vector<int> ids = by_text.model.typed.ids();
  ASSERT_GT(ids.size(), 3u);
  EXPECT_EQ(
      launch_model(by_file, {"--model", tiny, "--text-file", (dir.path() / "text.txt").string()}),
      "");
  EXPECT_EQ(by_file.model.typed.ids(), ids);
  std::string list;
  for (int id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  EXPECT_EQ(launch_model(by_ids, {"--model", tiny, "--ids", list}), "");
  EXPECT_EQ(by_ids.model.typed.text, sentence);
  EXPECT_EQ(by_ids.model.typed.ids(), ids);
  EXPECT_EQ(
      launch_model(by_config, {"--model", tiny, "--model-config",
                               (dir.path() / "tiny" / "config.json").string(), "--text", sentence}),
      "");
  EXPECT_EQ(by_config.model.typed.ids(), ids);
  // Ids whose text the tokenizer splits otherwise ("a", "b" is "ab"), ids
  // outside the vocabulary, a text and ids at once, two config files.
  AppState refused;
  const std::string split = launch_model(refused, {"--model", tiny, "--ids", "64,65"});
  EXPECT_NE(split.find("splits the text of these ids differently"), std::string::npos) << split;
  const std::string outside = launch_model(refused, {"--model", tiny, "--ids", "50257"});
  EXPECT_NE(outside.find("outside"), std::string::npos) << outside;
  const std::string both = launch_model(refused, {"--model", tiny, "--ids", "64", "--text", "a"});
  EXPECT_NE(both.find("not both"), std::string::npos) << both;
  const std::string config = (dir.path() / "tiny" / "config.json").string();
  const std::string two = launch_model(
      refused, {"--model", tiny, "--model-config", config, "--config", config, "--text", "a"});
  EXPECT_NE(two.find("keep --model-config"), std::string::npos) << two;
  EXPECT_EQ(launch_model(refused, {"--ids", "64"}), "parse refused") << "--ids needs --model";
}

TEST(ModelFlags, KeepLastOpensATextLongerThanTheContextAtItsEnd) {
  core::testing::TempDir dir;
  write_tiny_checkpoint(dir.path() / "tiny");  // 16 positions
  const std::string tiny = (dir.path() / "tiny").string();
  std::string text = "Hello";
  for (int k = 0; k < 19; ++k) text += " word";  // 20 tokens
  AppState refused, kept;
  const std::string why = launch_model(refused, {"--model", tiny, "--text", text});
  EXPECT_NE(why.find("16 at most"), std::string::npos) << why;
  EXPECT_NE(why.find("--keep-last"), std::string::npos) << why;
  ASSERT_EQ(launch_model(kept, {"--model", tiny, "--text", text, "--keep-last"}), "");
  EXPECT_TRUE(kept.model.keep_last);
  EXPECT_EQ(kept.model.dropped, 4);
  EXPECT_EQ(kept.model.typed.ids(), std::vector<int>(16, kept.model.typed.ids().back()));
  EXPECT_EQ(launch_model(refused, {"--keep-last"}), "parse refused") << "--keep-last needs --model";
}

// ---------------------------------------------------------------------------
// Compare checkpoints

// 40 tokens (more than 32, where the engine's row blocks split) for models of 64 positions.
const std::string kLongText =
    "The attention mechanism lets every token look back at the tokens before it, and "
    "training changes where each head looks, one small step at a time, until the model has "
    "read the whole sentence once more.";

// Every head of `got` is core::compare_runs's on fresh runs of `a` and `b`,
// within float32 rounding: another run may share the work among other
// threads, and a run edited since (ModelRun::retext) sums in another order.
void expect_cores_numbers(const ModelComparison& got,
                          const std::shared_ptr<const core::Gpt2Model>& a,
                          const std::shared_ptr<const core::Gpt2Model>& b) {
  constexpr float kRounding = 1e-6f;
  core::ModelRun ra(a, got.ids), rb(b, got.ids);
  const core::RunDifference want = core::compare_runs(ra, rb);
  ASSERT_EQ(got.every_head.per_head.size(), want.per_head.size());
  for (std::size_t k = 0; k < want.per_head.size(); ++k) {
    const core::HeadDifference &g = got.every_head.per_head[k], &w = want.per_head[k];
    EXPECT_NEAR(g.mean_abs, w.mean_abs, kRounding * std::max(w.mean_abs, 1e-3)) << k;
    EXPECT_NEAR(g.max_abs, w.max_abs, kRounding) << k;
    // The largest is where `got` says (a near tie may name the other cell).
    const auto wa = ra.stage({w.layer, w.head, id::weights});
    const auto wb = rb.stage({w.layer, w.head, id::weights});
    EXPECT_NEAR(std::abs((*wb)(g.max_query, g.max_key) - (*wa)(g.max_query, g.max_key)), w.max_abs,
                kRounding)
        << k;
  }
  const core::StageKey key{got.layer, got.head, id::weights};
  for (const auto& [mine, theirs] : {std::pair{got.a, ra.stage(key)}, {got.b, rb.stage(key)}}) {
    ASSERT_TRUE(mine && theirs);
    ASSERT_EQ(mine->rows(), theirs->rows());
    ASSERT_EQ(mine->cols(), theirs->cols());
    EXPECT_LE((*mine - *theirs).cwiseAbs().maxCoeff(), kRounding);
  }
}

TEST(ModelJob, ACheckpointBRunsOnTheSameIdsBesideA) {
  core::Gpt2Config c = tiny_model()->config();
  const auto other = core::random_gpt2(c, 6);
  KeptRun kept;
  ModelJob job = job_for(kLongText);
  job.compare = other;
  const ModelResult r = run_model_job(job, kept);
  ASSERT_TRUE(r.comparison);
  ASSERT_EQ(r.comparison->error, "");
  EXPECT_GT(r.comparison->ids.size(), 32u);
  EXPECT_EQ(r.comparison->layer, 1);
  EXPECT_EQ(r.comparison->head, 2);
  expect_cores_numbers(*r.comparison, tiny_model(), other);
  // Another head: B's run and every head's numbers stay; the maps follow.
  const std::shared_ptr<core::ModelRun> b_run = kept.compare_run;
  job.layer = 0;
  job.head = 1;
  const ModelResult second = run_model_job(job, kept);
  EXPECT_EQ(kept.compare_run, b_run);
  EXPECT_EQ(second.comparison->layer, 0);
  expect_cores_numbers(*second.comparison, tiny_model(), other);
  // An edit of the text edits B's run too.
  job.ids.pop_back();
  const ModelResult edited = run_model_job(job, kept);
  EXPECT_EQ(kept.compare_run, b_run);
  expect_cores_numbers(*edited.comparison, tiny_model(), other);
  // Without a B the run goes; a B of another shape gives only the reason.
  job.compare = nullptr;
  EXPECT_FALSE(run_model_job(job, kept).comparison);
  EXPECT_FALSE(kept.compare_run);
  c.n_head = 4;
  job.compare = core::random_gpt2(c, 6);
  const ModelResult refused = run_model_job(job, kept);
  ASSERT_TRUE(refused.comparison);
  EXPECT_NE(refused.comparison->error.find("2 layers × 4 heads"), std::string::npos)
      << refused.comparison->error;
}

TEST_F(ModelApp, CompareCheckpointsDrawsCoresNumbersAndABadBKeepsA) {
  core::testing::TempDir dir;
  const std::string a = (dir.path() / "epoch1").string(), b = (dir.path() / "epoch10").string();
  write_tiny_checkpoint(a, 3, 64);
  write_tiny_checkpoint(b, 4, 64);
  state.open_model(a);
  state.poll_model_loader(true);
  ASSERT_EQ(state.model.model_path, a) << state.model.load_error;
  state.model.typed.text = kLongText;
  state.model_text_changed();
  state.open_compare_model(b);
  state.poll_compare_loader(true);
  ASSERT_TRUE(state.model.compare.model) << state.model.compare.error;
  frames(3);
  const std::shared_ptr<const ModelComparison> r = state.model.compare.result;
  ASSERT_TRUE(r);
  ASSERT_EQ(r->error, "");
  EXPECT_EQ(r->ids, state.model.typed.ids());
  expect_cores_numbers(*r, state.model.model, state.model.compare.model);
  // The window says both files' names and the selected head's numbers as core has them.
  const std::string drawn = squeezed(headless_text());
  EXPECT_NE(drawn.find("A:epoch1"), std::string::npos) << drawn;
  EXPECT_NE(drawn.find("B:epoch10"), std::string::npos) << drawn;
  const core::HeadDifference& head =
      r->every_head.per_head[static_cast<std::size_t>(r->layer * 2 + r->head)];
  EXPECT_NE(
      drawn.find(squeezed(display(state, describe_head_difference(head, state.trace->tokens)))),
      std::string::npos)
      << drawn;
  char mean[32];
  std::snprintf(mean, sizeof mean, "%.4g", head.mean_abs);
  EXPECT_NE(drawn.find(squeezed(display(state, std::string("mean |B − A| = ") + mean))),
            std::string::npos)
      << drawn;
  // The selection follows the learner's.
  state.select_layer(0);
  state.select_head(1);
  frames(2);
  ASSERT_TRUE(state.model.compare.result);
  EXPECT_EQ(state.model.compare.result->layer, 0);
  EXPECT_EQ(state.model.compare.result->head, 1);
  // A click on a cell of the grid selects its head: find the grid under
  // the pointer, read which head its tooltip names, click there.
  ImGuiWindow* window = ImGui::FindWindowByName("Compare checkpoints");
  ASSERT_NE(window, nullptr);
  const ImGuiID grid = window->GetID("head_grid");
  const std::regex tooltip("layer(\\d+),head(\\d+)mean");  // the tooltip, not the menu bar
  std::optional<ImVec2> cell;
  int want_layer = -1, want_head = -1;
  for (float y = window->Pos.y; y < window->Pos.y + window->Size.y && !cell; y += 12)
    for (float x = window->Pos.x + window->Size.x * 0.5f;
         x < window->Pos.x + window->Size.x && !cell; x += 12) {
      ImGui::GetIO().MousePos = ImVec2(x, y);
      frame();
      const std::string text = squeezed(headless_text());
      std::smatch named;
      if (GImGui->HoveredId != grid || !std::regex_search(text, named, tooltip)) continue;
      want_layer = std::stoi(named[1]);
      want_head = std::stoi(named[2]);
      if (want_layer != 0 || want_head != 1) cell = ImVec2(x, y);  // not the selected one
    }
  ASSERT_TRUE(cell) << "no cell of the grid but the selected one found";
  click(*cell);
  frames(2);
  EXPECT_EQ(state.model.layer, want_layer);
  EXPECT_EQ(state.head, want_head);
  ASSERT_TRUE(state.model.compare.result);
  EXPECT_EQ(state.model.compare.result->layer, want_layer);
  EXPECT_EQ(state.model.compare.result->head, want_head);
  ImGui::GetIO().MousePos = ImVec2(-1, -1);
  // A missing B: an error, A and the B before stay.
  const auto a_model = state.model.model;
  const auto b_model = state.model.compare.model;
  state.open_compare_model((dir.path() / "missing").string());
  state.poll_compare_loader(true);
  frames(2);
  EXPECT_NE(state.model.compare.error, "");
  EXPECT_EQ(state.model.model, a_model);
  EXPECT_EQ(state.model.compare.model, b_model);
  EXPECT_TRUE(state.showing_model());
  EXPECT_NE(squeezed(headless_text()).find("missing"), std::string::npos);
  // The same file twice: said so, and every difference is 0.
  state.open_compare_model(a);
  state.poll_compare_loader(true);
  frames(3);
  EXPECT_NE(squeezed(headless_text()).find("thesamefileasA"), std::string::npos);
  ASSERT_TRUE(state.model.compare.result);
  for (const core::HeadDifference& h : state.model.compare.result->every_head.per_head)
    EXPECT_EQ(h.max_abs, 0.0f);
}

TEST_F(ModelApp, ACheckpointOfAnotherShapeIsRefusedNamingBoth) {
  core::testing::TempDir dir;
  write_tiny_checkpoint(dir.path() / "two_heads", 3, 64);
  state.open_compare_model((dir.path() / "two_heads").string());  // A has 3 heads
  state.poll_compare_loader(true);
  frames(3);
  const std::string drawn = squeezed(headless_text());
  EXPECT_NE(drawn.find(squeezed(display(state, "2 layers × 3 heads"))), std::string::npos) << drawn;
  EXPECT_NE(drawn.find(squeezed(display(state, "2 layers × 2 heads"))), std::string::npos) << drawn;
  EXPECT_TRUE(state.showing_model());
}

TEST(ModelFlags, CompareModelOpensTheWindowOnB) {
  core::testing::TempDir dir;
  write_tiny_checkpoint(dir.path() / "a", 3, 64);
  write_tiny_checkpoint(dir.path() / "b", 4, 64);
  AppState state;
  EXPECT_EQ(launch_model(state, {"--model", (dir.path() / "a").string(), "--compare-model",
                                 (dir.path() / "b").string(), "--text", "Every effort"}),
            "");
  EXPECT_TRUE(state.model.compare.open);
  EXPECT_TRUE(state.model.compare.model);
  AppState bad;
  const std::string why = launch_model(bad, {"--model", (dir.path() / "a").string(),
                                             "--compare-model", (dir.path() / "no").string()});
  EXPECT_NE(why.find("--compare-model"), std::string::npos) << why;
}

}  // namespace
}  // namespace attnscope::gui
