// export_headless_test.cpp: the file widgets drawn with ImGui's null backend
// (no window): every dialog and the notice draw for many frames in every
// variant, a right-click on a heatmap opens its Export menu, F12 asks for a
// screenshot, Enter in the path field runs the dialog's action.
#include <gtest/gtest.h>

#include <filesystem>

#include "app_state.hpp"
#include "export/files.hpp"
#include "headless_imgui.hpp"
#include "imgui.h"
#include "imgui_internal.h"  // the open popup stack
#include "temp_dir.hpp"
#include "ui.hpp"

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
  void frames(int n) {
    for (int k = 0; k < n; ++k) {
      ImGui::GetIO().DeltaTime = 1.0f / 60.0f;
      ImGui::NewFrame();
      draw_ui(state);
      ImGui::Render();
    }
  }
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

}  // namespace
}  // namespace attnscope::gui
