// family_view_test.cpp: a Llama/Qwen/Gemma 3 folder opened in the app, as a
// learner does (the loader, the worker's job, every view drawn headless):
// its tokenizer, every head grouped by K/V head, sliding layers marked, the
// stepper in the family's own names, append, the session and the export.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "attnscope/base/stages.hpp"
#include "compute/model_job.hpp"
#include "export/files.hpp"
#include "family_folder.hpp"
#include "headless_imgui.hpp"
#include "imgui.h"
#include "state/app_state.hpp"
#include "state/session.hpp"
#include "state/step.hpp"
#include "temp_dir.hpp"
#include "widgets/widgets.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {
namespace {

namespace id = core::stage_id;

class FamilyApp : public ::testing::Test {
 protected:
  void SetUp() override {
    start_headless_imgui(state);
    state.ui.welcome_dismissed = true;
  }
  void TearDown() override { ImGui::DestroyContext(); }

  // Writes a folder of `config` and opens it as the Model panel does.
  void open(const nlohmann::json& config, const std::string& name) {
    folder = dir.path() / name;
    attnscope::testing::write_family_folder(folder, config, 11);
    state.model.typed.text = "the cat sat on the mat, and the cat sat again";
    state.set_source(Source::Model);
    state.open_model(folder.string());
    state.poll_model_loader(true);
    headless_frames(state, 2);
    ASSERT_TRUE(state.model.family) << state.model.load_error;
    ASSERT_TRUE(state.showing_model()) << state.error;
  }
  std::string shown() { return squeezed(headless_text()); }

  core::testing::TempDir dir;
  std::filesystem::path folder;
  AppState state;
};

TEST(PercentTexts, TinyProbabilitiesInPowersOfTenTheRestAsFewDecimalsAsTellThemApart) {
  // An untrained model's guesses: one near 100 %, the rest far below 0.01 %.
  EXPECT_EQ(percent_texts({1.0 - 1e-9, 3.2e-9, 4.0e-12, 0.0}),
            (std::vector<std::string>{"100.00 %", "3.2e-07 %", "4e-10 %", "0.00 %"}));
  EXPECT_EQ(percent_texts({0.5, 0.25, 0.125}),
            (std::vector<std::string>{"50.00 %", "25.00 %", "12.50 %"}));
  EXPECT_EQ(percent_texts({0.123451, 0.123449}), (std::vector<std::string>{"12.35 %", "12.34 %"}));
  EXPECT_EQ(percent_texts({0.1234, 0.12341}), (std::vector<std::string>{"12.340 %", "12.341 %"}));
  EXPECT_EQ(percent_texts({2e-4, 1e-4}), (std::vector<std::string>{"0.02 %", "0.01 %"}));
}

TEST_F(FamilyApp, AQwen3FolderOpensWithItsTokenizerAndEveryHeadGroupedByKvHead) {
  open(attnscope::testing::tiny_qwen3_config(), "Qwen3-tiny");
  EXPECT_FALSE(state.model.model) << "not read as GPT-2";
  const ModelOverview& o = *state.model.overview;
  EXPECT_EQ(o.layers, 3);
  EXPECT_EQ(o.heads, 8);
  EXPECT_EQ(o.thumbs.size(), 24u);
  ASSERT_TRUE(o.induction);
  EXPECT_EQ(o.induction->size(), 24u);
  ASSERT_EQ(o.next.size(), 10u);
  // The tokenizer.json's post-processor puts its BOS first; "Ġthe" is one token.
  ASSERT_FALSE(state.trace->tokens.empty());
  EXPECT_EQ(state.trace->tokens[0], "<|begin_of_text|>");
  EXPECT_EQ(state.model.typed.tokens[0].id, 299);
  EXPECT_NE(std::find(state.trace->tokens.begin(), state.trace->tokens.end(), " the"),
            state.trace->tokens.end());
  state.model.view = ModelView::Model;
  headless_frames(state, 2);
  const std::string text = shown();
  EXPECT_NE(text.find(squeezed("8 query heads read 2 K/V heads")), std::string::npos) << text;
  EXPECT_NE(text.find(squeezed("8 query heads, 2 K/V heads (grouped-query), head_dim 8")),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(squeezed("q/k RMSNorm per head")), std::string::npos) << text;
  for (ModelView v : {ModelView::Model, ModelView::Head, ModelView::Tokens}) {
    state.model.view = v;
    EXPECT_GT(headless_frame(state), 1000) << model_view_id(v);
  }
}

// The heads' names over the grid ("H0", "H1", ...) as the last frame drew
// them: each name's left and right edge, on the line that holds the most.
std::vector<std::pair<float, float>> head_names() {
  std::map<int, std::vector<std::pair<float, float>>> lines;  // by the line's top
  const std::vector<DrawnGlyph> g = headless_glyphs();
  for (std::size_t i = 0; i + 1 < g.size(); ++i) {
    if (g[i].text != "H" || !std::isdigit(static_cast<unsigned char>(g[i + 1].text[0]))) continue;
    std::size_t k = i + 1;
    while (k + 1 < g.size() && std::isdigit(static_cast<unsigned char>(g[k + 1].text[0])) &&
           std::abs(g[k + 1].pen - (g[k].pen + g[k].advance)) < 1.0f)
      ++k;
    lines[static_cast<int>(std::lround(g[i].top))].emplace_back(g[i].pen, g[k].pen + g[k].advance);
  }
  std::vector<std::pair<float, float>> most;
  for (auto& [top, names] : lines)
    if (names.size() > most.size()) most = names;
  std::sort(most.begin(), most.end());
  return most;
}

TEST_F(FamilyApp, TheHeadsNamesOverTheGridNeverOverlap) {
  open(attnscope::testing::tiny_qwen3_config(), "Qwen3-tiny");
  state.model.view = ModelView::Model;
  headless_frames(state, 2);
  EXPECT_EQ(head_names().size(), 8u) << "room for every name: " << shown();
  // A window so narrow that the tiles are thinner than "H7": every other name.
  ImGui::GetIO().DisplaySize = ImVec2(560, 700);
  headless_frames(state, 3);
  const auto names = head_names();
  ASSERT_GE(names.size(), 2u) << shown();
  EXPECT_LT(names.size(), 8u);
  for (std::size_t k = 1; k < names.size(); ++k)
    EXPECT_LT(names[k - 1].second, names[k].first) << "name " << k;
}

TEST_F(FamilyApp, TheStepperWalksTheBlockInTheFamilysOwnNames) {
  open(attnscope::testing::tiny_gemma3_config(), "gemma3-tiny");
  state.model.view = ModelView::Head;
  for (int layer : {0, 2}) {
    state.select_layer(layer);
    headless_frames(state, 2);
    ASSERT_EQ(state.trace->layer, layer);
    const std::vector<Step> steps = state.steps();
    auto has = [&](Step s) { return std::find(steps.begin(), steps.end(), s) != steps.end(); };
    EXPECT_TRUE(has(Step::QkNorm));
    EXPECT_TRUE(has(Step::Rotate));
    EXPECT_TRUE(has(Step::KvGroups));
    EXPECT_EQ(has(Step::WindowMask), layer == 0) << "layers 0 and 1 slide, 2 does not";
    EXPECT_FALSE(has(Step::SplitHeads));
    EXPECT_FALSE(has(Step::Dropout));
    EXPECT_EQ(has(Step::Logits), layer == 2);
    for (Step s : steps) {
      state.step = s;
      EXPECT_GT(headless_frame(state), 1000) << step_id(s);
      const StepText t = describe_step(s, *state.trace, state.head);
      EXPECT_FALSE(t.title.empty()) << step_id(s);
      EXPECT_EQ(t.plain.find("GPT-2's attention has no such step"), std::string::npos)
          << step_id(s);
      EXPECT_EQ(t.shapes.find('?'), std::string::npos) << step_id(s) << ": " << t.shapes;
    }
  }
  const core::Trace& t = *state.trace;
  EXPECT_NE(describe_step(Step::LayerNorm, t, 0).title.find("input_layernorm"), std::string::npos);
  EXPECT_NE(describe_step(Step::LayerNorm2, t, 0).title.find("pre_feedforward_layernorm"),
            std::string::npos);
  EXPECT_NE(describe_step(Step::Residual, t, 0).formula.find("post_attention_layernorm"),
            std::string::npos);
  EXPECT_NE(describe_step(Step::Scaled, t, 0).plain.find("0.2887"), std::string::npos)
      << "12^-1/2, query_pre_attn_scalar's, not head_dim's";
  EXPECT_NE(describe_step(Step::Rotate, t, 0).formula.find("1000000"), std::string::npos)
      << "the full layer's base";
  EXPECT_NE(describe_step(Step::KvGroups, t, 3).plain.find("Heads 0–3 read K/V head 0"),
            std::string::npos);
  state.select_layer(0);
  headless_frames(state, 2);
  EXPECT_NE(describe_step(Step::Rotate, *state.trace, 0).formula.find("10000^"), std::string::npos)
      << "a sliding layer's local base";
  EXPECT_NE(describe_step(Step::WindowMask, *state.trace, 0).title.find("4"), std::string::npos);
}

TEST_F(FamilyApp, AppendingTheTopTokenAddsItsBytesAndRunsAgain) {
  open(attnscope::testing::tiny_qwen3_config(), "Qwen3-tiny");
  const std::string before = state.model.typed.text;
  const int top = state.model.overview->next_last[0].id;
  ASSERT_TRUE(state.append_top_token()) << state.model.typed.error;
  const std::optional<std::string> bytes = state.model.token_bytes(top);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(state.model.typed.text, core::decode_utf8_replace(before + *bytes));
  headless_frames(state, 3);
  EXPECT_EQ(state.model.overview->ids, state.model.typed.ids());
}

TEST_F(FamilyApp, EditsKeepTheRunAndGiveWhatAFreshRunGives) {
  open(attnscope::testing::tiny_gemma3_config(), "gemma3-tiny");
  const std::string text = state.model.typed.text;
  // Typing on, then a backspace, then an edit near the start.
  for (const std::string& edit : {text + " on", text + " o", text, "a" + text.substr(1)}) {
    state.model.typed.text = edit;
    state.model_text_changed();
    headless_frames(state, 3);
    ASSERT_EQ(state.model.overview->ids, state.model.typed.ids()) << edit;
    ModelJob job;
    job.family = state.model.family;
    job.ids = state.model.typed.ids();
    KeptRun fresh;
    const ModelResult r = run_model_job(job, fresh);
    const ModelOverview& a = *state.model.overview;
    const ModelOverview& b = *r.overview;
    ASSERT_EQ(a.thumbs.size(), b.thumbs.size());
    for (std::size_t k = 0; k < a.thumbs.size(); ++k) {
      EXPECT_LT((a.thumbs[k].data() - b.thumbs[k].data()).cwiseAbs().maxCoeff(), 1e-5f) << edit;
      EXPECT_NEAR(a.patterns[k].previous_token, b.patterns[k].previous_token, 1e-5) << edit;
    }
    ASSERT_EQ(a.loss.per_token.size(), b.loss.per_token.size());
    for (std::size_t i = 0; i < a.loss.per_token.size(); ++i)
      EXPECT_NEAR(a.loss.per_token[i], b.loss.per_token[i], 1e-4) << edit;
    EXPECT_EQ(a.next[0].id, b.next[0].id);
  }
}

TEST_F(FamilyApp, ASessionReopensTheFolderAndTheExportNamesIt) {
  open(attnscope::testing::tiny_qwen3_config(), "Qwen3-tiny");
  state.select_layer(2);
  state.select_head(5);
  const std::string text = session_json(state);
  EXPECT_NE(text.find(folder.string()), std::string::npos);
  AppState other;
  apply_session_json(text, "test", other);
  other.poll_model_loader(true);
  ASSERT_TRUE(other.model.family) << other.ui.session_warning;
  EXPECT_EQ(other.model.layer, 2);
  EXPECT_EQ(other.model.model_name(), "Qwen3-tiny");

  state.files.export_folder = dir.path();
  const auto path = export_model_view(state, ExportKind::Svg, 1);
  ASSERT_TRUE(path) << state.files.notice.message;
  std::ifstream in(*path);
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(svg.find("Qwen3-tiny: attention of every head (3 layers"), std::string::npos);
  EXPECT_NE(pytorch_script_unavailable(state).value_or("").find("qwen3 model"), std::string::npos);
}

TEST_F(FamilyApp, AFolderWithoutItsTokenizerIsRefusedSayingWhatToAdd) {
  folder = dir.path() / "no-tokenizer";
  attnscope::testing::write_family_folder(folder, attnscope::testing::tiny_qwen3_config(), 1);
  std::filesystem::remove(folder / "tokenizer.json");
  state.set_source(Source::Model);
  state.open_model(folder.string());
  state.poll_model_loader(true);
  EXPECT_FALSE(state.model.family);
  EXPECT_NE(state.model.load_error.find("no tokenizer.json"), std::string::npos)
      << state.model.load_error;
  nlohmann::json moe = attnscope::testing::tiny_qwen3_config();
  moe["num_experts"] = 8;
  attnscope::testing::write_family_folder(dir.path() / "moe", moe, 1);
  state.open_model((dir.path() / "moe").string());
  state.poll_model_loader(true);
  EXPECT_FALSE(state.model.family);
  EXPECT_NE(state.model.load_error.find("num_experts"), std::string::npos)
      << state.model.load_error;
}

}  // namespace
}  // namespace attnscope::gui
