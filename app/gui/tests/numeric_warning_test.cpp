// numeric_warning_test.cpp: no NaN reaches the screen unexplained. The whole
// UI is drawn headless (as in headless_frame_test.cpp) and the text it puts
// on screen is captured with ImGui's logging, which records every piece of
// text that is not clipped away. (Logging stops when the main window ends,
// and log-to-buffer empties its buffer then, so the log goes to a file.)
//
//   - a run whose scores overflow shows, on every step, where the first
//     NaN/inf appeared, why, and what to change; an ordinary run (the causal
//     mask's -inf included) shows no such line;
//   - the embedding editor refuses typed values that are not finite in
//     float32 (1e39, -1e39, "*2e38" which multiplies the value): the cell
//     keeps its value and the panel says why. Letters never get in: ImGui's
//     number fields take only 0-9 . + - * / e E, so "nan" and "inf" type
//     nothing at all.
#include <gtest/gtest.h>
#include <unistd.h>  // getpid

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "headless_imgui.hpp"
#include "imgui.h"
#include "imgui_internal.h"  // the embedding table's layout
#include "shell/ui.hpp"
#include "state/app_state.hpp"

namespace attnscope::gui {
namespace {

// GLFW's key codes, which ImGui 1.86's GLFW backend puts in io.KeyMap.
constexpr int kKeyEnter = 257;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class NumericWarning : public ::testing::Test {
 protected:
  void SetUp() override {
    start_headless_imgui(state);
    ImGui::GetIO().KeyMap[ImGuiKey_Enter] = kKeyEnter;
  }
  void TearDown() override { ImGui::DestroyContext(); }

  void frame() { headless_frame(state); }
  void frames(int n) { headless_frames(state, n); }
  // One frame; returns the text it drew, runs of white space made one space
  // (ImGui logs wrapped lines and items on one line with their own spacing).
  std::string frame_text() {
    // One file per process: ctest -j runs this binary's tests side by side.
    const std::string log = ::testing::TempDir() + "attnscope_numeric_warning_log_" +
                            std::to_string(::getpid()) + ".txt";
    std::filesystem::remove(log);  // ImGui appends
    ImGui::GetIO().DeltaTime = 1.0f / 60.0f;
    ImGui::NewFrame();
    ImGui::LogToFile(0, log.c_str());  // 0: do not force tree nodes open
    draw_ui(state);
    ImGui::LogFinish();  // already finished by the main window's End()
    ImGui::Render();
    std::ifstream in(log, std::ios::binary);
    const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    std::filesystem::remove(log);
    EXPECT_FALSE(raw.empty()) << "nothing was logged";
    std::string text;
    for (char ch : raw) {
      const bool space = ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t';
      if (!space || (!text.empty() && text.back() != ' ')) text += space ? ' ' : ch;
    }
    return text;
  }
  void set_embeddings_scale(float factor) {
    state.load_preset("book");
    state.inputs.embeddings *= factor;
    state.mark_dirty();
    frames(2);
    ASSERT_TRUE(state.error.empty()) << state.error;  // huge but finite: a valid run
  }

  // The centre of the embedding editor's cell (row r, dimension c), from the
  // table's layout in the last frame.
  ImVec2 embedding_cell(int r, int c) {
    ImGuiContext& g = *GImGui;
    const int T = static_cast<int>(state.inputs.embeddings.rows());
    const int columns = static_cast<int>(state.inputs.embeddings.cols()) + 2;
    for (int n = 0; n < g.Tables.GetMapSize(); ++n) {
      ImGuiTable* t = g.Tables.TryGetMapData(n);
      if (!t || t->ColumnsCount != columns || !t->OuterWindow ||
          !std::strstr(t->OuterWindow->Name, "/left_"))
        continue;
      const ImGuiTableColumn& col = t->Columns[c + 1];  // column 0 holds the token names
      const float row_h = t->RowPosY2 - t->RowPosY1;    // the last row drawn is row T - 1
      const float top = t->RowPosY1 - static_cast<float>(T - 1 - r) * row_h;
      return ImVec2((col.MinX + col.MaxX) * 0.5f, top + row_h * 0.5f);
    }
    ADD_FAILURE() << "the embedding table was not drawn";
    return ImVec2(-1, -1);
  }
  // Ctrl+click (ImGui's "type a value" gesture) on the embedding cell (r, c),
  // type `text`, press Enter. The cell is found anew each time: the table
  // moves when a message appears above it.
  void type_into(int r, int c, const std::string& text, bool char_per_frame = false) {
    ImGuiIO& io = ImGui::GetIO();
    io.MouseDown[0] = false;
    frame();
    type_at([&] { return embedding_cell(r, c); }, text, char_per_frame);
  }
  // The centre of cell (r, c) of the weights editor's first matrix (W_query),
  // from its scrolling grid's place in the last frame and edit_matrix's layout.
  ImVec2 weights_cell(int r, int c) {
    ImGuiContext& g = *GImGui;
    for (ImGuiWindow* w : g.Windows) {
      if (!std::strstr(w->Name, "Weights editor/") || !std::strstr(w->Name, "##grid")) continue;
      const float font = g.FontSize;
      const float label_w = font * 2.6f, cell_w = font * 4.2f;
      const float pitch = cell_w + g.Style.ItemSpacing.x;
      const float row_h = font + g.Style.FramePadding.y * 2 + g.Style.ItemSpacing.y;
      return ImVec2(w->Pos.x + label_w + static_cast<float>(c) * pitch + cell_w * 0.5f,
                    w->Pos.y + g.Style.WindowPadding.y + static_cast<float>(r) * row_h +
                        (font + g.Style.FramePadding.y * 2) * 0.5f);
    }
    ADD_FAILURE() << "the weights editor was not drawn";
    return ImVec2(-1, -1);
  }
  // Ctrl+click at where(), type `text`, press Enter.
  template <typename Where>
  void type_at(Where where, const std::string& text, bool char_per_frame = false) {
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = where();
    frame();
    io.KeyCtrl = true;
    io.MouseDown[0] = true;
    frame();
    io.MouseDown[0] = false;
    frame();
    io.KeyCtrl = false;
    ASSERT_TRUE(io.WantTextInput) << "the click did not open the cell for typing";
    for (char ch : text) {
      io.AddInputCharacter(static_cast<unsigned>(ch));
      if (char_per_frame) frame();
    }
    frame();
    io.KeysDown[kKeyEnter] = true;
    frame();
    io.KeysDown[kKeyEnter] = false;
    frames(2);
    EXPECT_FALSE(io.WantTextInput) << "Enter did not close the cell";
  }

  AppState state;
};

TEST_F(NumericWarning, OverflowingScoresAreExplainedOnEveryStep) {
  state.config.variant = core::Variant::Simple;
  set_embeddings_scale(1e30f);  // the book's tokens times 1e30: X.X^T overflows
  ASSERT_TRUE(state.nonfinite.has_value());
  EXPECT_EQ(state.nonfinite->stage, "scores");
  for (Step step : steps_for(core::Variant::Simple)) {
    state.step = step;
    const std::string text = frame_text();
    SCOPED_TRACE(std::string(step_id(step)));
    EXPECT_TRUE(contains(text, "Not a number: +inf in scores, row 0 ('Your'), column 0 ('Your')"))
        << text;
    EXPECT_TRUE(contains(text, "X·Xᵀ overflowed float32's range")) << text;
    EXPECT_TRUE(contains(text, "Keep embedding values below about 1e19")) << text;
  }

  // Following the advice: embeddings at 1e19 run without a NaN, and the line goes.
  state.load_preset("book");
  state.inputs.embeddings *= 1e19f / state.inputs.embeddings.maxCoeff();
  state.mark_dirty();
  frames(2);
  EXPECT_FALSE(state.nonfinite.has_value()) << state.nonfinite->message();
  EXPECT_FALSE(contains(frame_text(), "Not a number")) << "the warning outlived its trace";
}

TEST_F(NumericWarning, TheCausalMaskIsNotWarnedAbout) {
  state.config.variant = core::Variant::Causal;
  state.config.dropout = 0.5;
  state.mark_dirty();
  frames(2);
  state.step = Step::Masked;  // the -inf cells are on screen
  const std::string text = frame_text();
  EXPECT_FALSE(state.nonfinite.has_value());
  EXPECT_FALSE(contains(text, "Not a number")) << text;
}

TEST_F(NumericWarning, TheEngineThreadFindsItToo) {
  state.config.variant = core::Variant::Multihead;
  state.config.d_out = 4;
  state.config.num_heads = 2;
  state.inputs.embeddings *= 3e38f;
  state.start_worker({});
  state.mark_dirty();
  frame();
  state.finish_recompute();
  ASSERT_TRUE(state.trace);
  ASSERT_TRUE(state.nonfinite.has_value());
  state.step = Step::Softmax;
  const std::string text = frame_text();
  EXPECT_TRUE(contains(text, "Not a number: ")) << text;
  EXPECT_TRUE(contains(text, "overflowed float32's range")) << text;
}

TEST_F(NumericWarning, TheEmbeddingEditorRefusesValuesThatAreNotFinite) {
  frames(3);
  type_into(1, 0, "2.5");  // 'journey', d0
  ASSERT_EQ(state.inputs.embeddings(1, 0), 2.5f) << "typing went into another cell";
  frames(2);
  auto version = state.trace_version;

  for (auto [typed, sign] :
       {std::pair{"1e39", "+inf"}, std::pair{"-1e39", "-inf"}, std::pair{"*2e38", "+inf"}}) {
    SCOPED_TRACE(typed);
    type_into(1, 0, typed);
    EXPECT_EQ(state.inputs.embeddings(1, 0), 2.5f);
    EXPECT_TRUE(state.inputs.embeddings.allFinite());
    EXPECT_TRUE(state.error.empty()) << state.error;
    EXPECT_EQ(state.trace_version, version) << "a refused value must not recompute";
    const std::string text = frame_text();
    EXPECT_TRUE(contains(text, std::string("d0 of 'journey' cannot be ") + sign)) << text;
    EXPECT_TRUE(contains(text, "must be finite numbers")) << text;
    EXPECT_TRUE(contains(text, "It stays 2.5000.")) << text;
  }
  // Typed one character a frame it passes through 1 and 1000 first: the cell
  // goes back to the value from before the edit.
  type_into(1, 0, "1e39", /*char_per_frame=*/true);
  EXPECT_EQ(state.inputs.embeddings(1, 0), 2.5f);
  EXPECT_TRUE(contains(frame_text(), "It stays 2.5000."));
  frames(2);
  version = state.trace_version;  // 1 and 1000 did go in on the way, and were recomputed
  for (const char* typed : {"nan", "inf", "-inf"}) {  // the letters are filtered out
    SCOPED_TRACE(typed);
    type_into(1, 0, typed);
    EXPECT_EQ(state.inputs.embeddings(1, 0), 2.5f);
    EXPECT_EQ(state.trace_version, version);
  }

  // The next value that goes in clears the message.
  type_into(1, 0, "-1.25");
  EXPECT_EQ(state.inputs.embeddings(1, 0), -1.25f);
  EXPECT_FALSE(contains(frame_text(), "cannot be"));
  EXPECT_GT(state.trace_version, version);
}

TEST_F(NumericWarning, TheWeightsEditorRefusesValuesThatAreNotFinite) {
  state.config.variant = core::Variant::SelfAttentionV1;
  state.mark_dirty();
  state.teach.show_weights = true;
  frames(3);
  ImGui::GetIO().MouseDown[0] = false;
  type_at([&] { return weights_cell(0, 1); }, "0.75");
  ASSERT_TRUE(state.explicit_parameters) << "typing did not reach the weights";
  ASSERT_EQ(state.explicit_parameters->qkv[0].query.weight(0, 1), 0.75f);
  frames(2);
  const auto version = state.trace_version;
  const auto held = state.explicit_parameters;

  for (auto [typed, sign] : {std::pair{"1e39", "+inf"}, std::pair{"*5e38", "+inf"}}) {
    SCOPED_TRACE(typed);
    type_at([&] { return weights_cell(0, 1); }, typed);
    EXPECT_EQ(state.explicit_parameters, held) << "a refused value must not replace the weights";
    EXPECT_EQ(state.explicit_parameters->qkv[0].query.weight(0, 1), 0.75f);
    EXPECT_EQ(state.trace_version, version) << "a refused value must not recompute";
    // The Learn window is not in the main window's log: read what it draws.
    const std::string& text = state.teach.weights_refusal;
    EXPECT_TRUE(contains(text, std::string("W_query[0, 1] cannot be ") + sign)) << text;
    EXPECT_TRUE(contains(text, "weights must be finite numbers")) << text;
    EXPECT_TRUE(contains(text, "It stays 0.7500.")) << text;
  }

  // Typed one character a frame, "1e39" passes through 1 and 1000 (ImGui
  // applies the text as it changes) before +inf: the cell goes back to the
  // value it had before the edit, not the last finite one.
  type_at([&] { return weights_cell(0, 1); }, "1e39", /*char_per_frame=*/true);
  EXPECT_EQ(state.explicit_parameters->qkv[0].query.weight(0, 1), 0.75f);
  EXPECT_TRUE(contains(state.teach.weights_refusal, "It stays 0.7500."))
      << state.teach.weights_refusal;

  // The next value that goes in clears the message.
  type_at([&] { return weights_cell(0, 1); }, "-0.5");
  EXPECT_EQ(state.explicit_parameters->qkv[0].query.weight(0, 1), -0.5f);
  EXPECT_TRUE(state.teach.weights_refusal.empty()) << state.teach.weights_refusal;
  EXPECT_GT(state.trace_version, version);
}

}  // namespace
}  // namespace attnscope::gui
