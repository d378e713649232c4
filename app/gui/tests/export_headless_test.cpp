// export_headless_test.cpp: the file widgets drawn with ImGui's null backend
// (no window): every dialog and the notice draw for many frames in every
// variant, a right-click on a heatmap opens its Export menu, F12 asks for a
// screenshot, Enter in the path field runs the dialog's action.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "export/files.hpp"
#include "headless_imgui.hpp"
#include "imgui.h"
#include "imgui_internal.h"  // the open popup stack
#include "shell/ui.hpp"
#include "state/app_state.hpp"
#include "temp_dir.hpp"

namespace attnscope::gui {
namespace {

namespace fs = std::filesystem;

class FilesHeadless : public ::testing::Test {
 protected:
  void SetUp() override {
    start_headless_imgui(state);
#if IMGUI_VERSION_NUM < 18700
    ImGui::GetIO().KeyMap[ImGuiKey_Enter] = 257;  // GLFW_KEY_ENTER
#endif
    state.files.export_folder = dir_;
  }
  void TearDown() override { ImGui::DestroyContext(); }
  void frames(int n) { headless_frames(state, n); }
  AppState state;
  core::testing::TempDir temp_;  // a fresh folder per test, removed afterwards
  const fs::path dir_ = temp_.path();
};

TEST_F(FilesHeadless, EveryDialogAndTheNoticeDrawInEveryVariant) {
  for (core::Variant v : core::kAllVariants) {
    state.config.variant = v;
    state.mark_dirty();
    for (FileDialog d :
         {FileDialog::OpenSession, FileDialog::SaveSession, FileDialog::ImportEmbeddings,
          FileDialog::ImportWeights, FileDialog::ExportFolder, FileDialog::ExportAll}) {
      state.files.dialog = d;
      state.files.path_input = dir_.string() + "/";
      state.files.dialog_error = "a message";
      state.files.recent_folders = {dir_.string(), "/tmp"};
      notify(state, "Saved x.png", (dir_ / "x.png").string(), false);
      frames(3);
      EXPECT_EQ(state.files.dialog, d);
    }
  }
}

TEST_F(FilesHeadless, RightClickingAHeatmapOpensItsExportMenu) {
  state.step = Step::Softmax;
  frames(3);
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = ImVec2(600, 420);  // a cell of the first matrix in the centre
  frames(1);
  io.MouseDown[1] = true;
  frames(1);
  io.MouseDown[1] = false;
  frames(2);
  ImGuiContext& g = *ImGui::GetCurrentContext();
  EXPECT_GT(g.OpenPopupStack.Size, 0) << (g.HoveredWindow ? g.HoveredWindow->Name : "no window");
}

TEST_F(FilesHeadless, F12AsksMainForAScreenshot) {
  frames(2);
#if IMGUI_VERSION_NUM < 18700
  ImGui::GetIO().KeysDown[301] = true;  // GLFW_KEY_F12
  frames(1);
  ImGui::GetIO().KeysDown[301] = false;
#else
  ImGui::GetIO().AddKeyEvent(ImGuiKey_F12, true);
  frames(1);
  ImGui::GetIO().AddKeyEvent(ImGuiKey_F12, false);
#endif
  EXPECT_EQ(state.files.screenshot_countdown, 2);
}

TEST_F(FilesHeadless, EnterInThePathFieldRunsTheDialog) {
  frames(2);
  state.files.path_input = (dir_ / "s.json").string();
  state.files.dialog = FileDialog::SaveSession;
  frames(2);  // the field takes the keyboard focus
#if IMGUI_VERSION_NUM < 18700
  ImGui::GetIO().KeysDown[257] = true;
  frames(1);
  ImGui::GetIO().KeysDown[257] = false;
#else
  ImGui::GetIO().AddKeyEvent(ImGuiKey_Enter, true);
  frames(1);
  ImGui::GetIO().AddKeyEvent(ImGuiKey_Enter, false);
#endif
  frames(1);
  EXPECT_TRUE(fs::exists(dir_ / "s.json")) << state.files.dialog_error;
  EXPECT_EQ(state.files.dialog, FileDialog::None);
}

// Export all renders a figure a frame (budget 0 here) while the frames go on,
// with its progress window where the notice goes, then the notice.
TEST_F(FilesHeadless, ExportAllRunsBesideTheFramesWithItsProgressWindow) {
  state.config.variant = core::Variant::MultiheadWrapper;
  state.config.num_heads = 2;
  state.mark_dirty();
  state.files.render_png = [](const figure::Heatmap&, int) {
    return RenderedImage{2, 2, std::vector<std::uint8_t>(16, 200)};
  };
  state.files.export_budget_ms = 0;
  frames(2);
  ASSERT_TRUE(start_export_all(state));
  EXPECT_TRUE(state.preparing());  // main keeps drawing frames
  int frames_drawn = 0, with_progress = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (state.files.exporting() && std::chrono::steady_clock::now() < deadline) {
    frames(1);
    ++frames_drawn;
    const ImGuiWindow* w = ImGui::FindWindowByName("##export_progress");
    with_progress += w && w->Active;
  }
  ASSERT_FALSE(state.files.exporting());
  EXPECT_GE(frames_drawn, static_cast<int>(state.trace->stages.size()));
  EXPECT_GE(with_progress, static_cast<int>(state.trace->stages.size()) - 1);
  EXPECT_FALSE(state.files.notice.error) << state.files.notice.message;
  EXPECT_TRUE(state.files.notice.message.starts_with("Exported ")) << state.files.notice.message;
  // main keeps drawing until the notice has shown (from its second frame).
  EXPECT_TRUE(state.preparing());
  frames(2);
  const ImGuiWindow* progress = ImGui::FindWindowByName("##export_progress");
  EXPECT_TRUE(!progress || !progress->Active);
  const ImGuiWindow* notice = ImGui::FindWindowByName("##notice");
  EXPECT_TRUE(notice && notice->Active && !notice->Hidden);
  frames(1);
  EXPECT_FALSE(state.preparing());
}

}  // namespace
}  // namespace attnscope::gui
