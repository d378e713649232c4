// desktop_test.cpp: what the app does as a desktop program: files dropped on
// the window open as what they are; the desktop's file dialogs (zenity,
// kdialog: their command lines, and a stand-in script run as a real child
// process) feed the same actions as the path field; the icon's SVG and
// pixels come from the same shapes.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "attnscope/base/rng.hpp"
#include "attnscope/io/weights.hpp"
#include "export/dropped.hpp"
#include "export/files.hpp"
#include "export/files_ui.hpp"
#include "headless_imgui.hpp"
#include "icon/app_icon.hpp"
#include "platform/native_dialog.hpp"
#include "temp_dir.hpp"

namespace attnscope::gui {
namespace {

namespace fs = std::filesystem;

fs::path write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

// An executable shell script.
fs::path write_script(const fs::path& p, const std::string& body) {
  write(p, "#!/bin/sh\n" + body + "\n");
  ::chmod(p.c_str(), 0755);
  return p;
}

// Sets an environment variable for one test and puts it back after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class Desktop : public ::testing::Test {
 protected:
  void SetUp() override {
    state.load_preset("book");
    state.config.variant = core::Variant::Causal;
    state.files.export_folder = dir.path();
    state.finish_recompute();
  }
  // A chapter-3 weights file that fits the run, drawn from another seed.
  fs::path weights_file(const std::string& name) {
    core::Config other = state.config;
    other.seed = 7;
    core::TorchGenerator gen(other.seed);
    return write(dir.path() / name,
                 core::weights_json(core::init_parameters(other, 3, gen), other));
  }
  core::testing::TempDir dir;
  AppState state;
};

// ---------------------------------------------------------------------------
// Dropped files

TEST_F(Desktop, DroppedFilesAreToldApartByNameAndContent) {
  const fs::path d = dir.path();
  ASSERT_EQ(save_session_file(state, d / "s.json", false), "");
  EXPECT_EQ(classify_dropped(d / "s.json"), DroppedKind::Session);
  EXPECT_EQ(classify_dropped(weights_file("w.json")), DroppedKind::Weights);
  EXPECT_EQ(classify_dropped(write(d / "e.json", "[[1, 2], [3, 4]]")), DroppedKind::Embeddings);
  EXPECT_EQ(classify_dropped(write(d / "config.json", R"({"n_embd": 8})")), DroppedKind::Model);
  EXPECT_EQ(classify_dropped(write(d / "bad.json", "{not json")), DroppedKind::Unknown);
  EXPECT_EQ(classify_dropped(write(d / "e.csv", "1,2\n")), DroppedKind::Embeddings);
  EXPECT_EQ(classify_dropped(write(d / "x.npy", "")), DroppedKind::Embeddings);
  EXPECT_EQ(classify_dropped(write(d / "W_query.npy", "")), DroppedKind::Weights);
  EXPECT_EQ(classify_dropped(write(d / "m.safetensors", "")), DroppedKind::Model);
  EXPECT_EQ(classify_dropped(write(d / "m.pth", "")), DroppedKind::Model);
  EXPECT_EQ(classify_dropped(write(d / "notes.txt", "hi")), DroppedKind::Unknown);
  fs::create_directories(d / "npys");
  write(d / "npys" / "W_key.npy", "");
  EXPECT_EQ(classify_dropped(d / "npys"), DroppedKind::Weights);
  fs::create_directories(d / "hf");
  write(d / "hf" / "model.safetensors", "");
  write(d / "hf" / "W_key.npy", "");
  EXPECT_EQ(classify_dropped(d / "hf"), DroppedKind::Model);
}

TEST_F(Desktop, DroppingASessionEmbeddingsOrWeightsOpensThem) {
  ASSERT_EQ(save_session_file(state, dir.path() / "s.json", false), "");
  open_dropped_file(state, weights_file("w.json").string());
  EXPECT_FALSE(state.files.notice.error) << state.files.notice.message;
  EXPECT_EQ(weights_origin(state), (dir.path() / "w.json").string());

  open_dropped_file(state, write(dir.path() / "e.csv", ",a,b,c\nI,1,2,3\nsee,4,5,6\n").string());
  EXPECT_FALSE(state.files.notice.error) << state.files.notice.message;
  EXPECT_EQ(state.inputs.tokens, (std::vector<std::string>{"I", "see"}));

  open_dropped_file(state, (dir.path() / "s.json").string());  // back to the saved run
  EXPECT_FALSE(state.files.notice.error) << state.files.notice.message;
  EXPECT_EQ(state.inputs.tokens.size(), 6u);
  EXPECT_EQ(weights_origin(state), "");
}

TEST_F(Desktop, ABadDroppedFileSaysWhyAndChangesNothing) {
  const core::Inputs before = state.inputs;
  open_dropped_file(state, write(dir.path() / "e.csv", "1,2\n3\n").string());
  EXPECT_TRUE(state.files.notice.error);
  EXPECT_NE(state.files.notice.message.find("e.csv"), std::string::npos)
      << state.files.notice.message;
  EXPECT_EQ(state.inputs.tokens, before.tokens);
  EXPECT_TRUE(state.inputs.embeddings.isApprox(before.embeddings));

  open_dropped_file(state, write(dir.path() / "notes.txt", "hi").string());
  EXPECT_NE(state.ui.session_warning.find("session (.json)"), std::string::npos)
      << state.ui.session_warning;
}

// ---------------------------------------------------------------------------
// The desktop's dialogs

TEST(NativeDialogCommand, ZenityAndKdialogGetEachMode) {
  using Mode = DialogRequest::Mode;
  const DialogRequest open{Mode::OpenFile, "Open session", "/tmp/a", {{"Sessions", {"*.json"}}}};
  EXPECT_EQ(dialog_command(DialogTool::Zenity, open),
            (std::vector<std::string>{"zenity", "--file-selection", "--title=Open session",
                                      "--filename=/tmp/a/", "--file-filter=Sessions | *.json",
                                      "--file-filter=All files | *"}));
  EXPECT_EQ(dialog_command(DialogTool::Kdialog, open),
            (std::vector<std::string>{"kdialog", "--title", "Open session", "--getopenfilename",
                                      "/tmp/a", "Sessions (*.json)\nAll files (*)"}));
  const DialogRequest save{Mode::SaveFile, "Save", "/tmp/a/s.json", {}};
  EXPECT_EQ(dialog_command(DialogTool::Zenity, save),
            (std::vector<std::string>{"zenity", "--file-selection", "--title=Save", "--save",
                                      "--confirm-overwrite", "--filename=/tmp/a/s.json"}));
  const DialogRequest folder{Mode::ChooseFolder, "Export folder", "/tmp/a/", {}};
  EXPECT_EQ(dialog_command(DialogTool::Kdialog, folder),
            (std::vector<std::string>{"kdialog", "--title", "Export folder",
                                      "--getexistingdirectory", "/tmp/a/"}));
}

TEST(NativeDialogCommand, TheEnvironmentChoosesTheTool) {
  core::testing::TempDir bin;
  write_script(bin.path() / "zenity", "exit 0");
  ScopedEnv path("PATH", bin.path().string());
  ScopedEnv desktop("XDG_CURRENT_DESKTOP", "GNOME");
  {
    ScopedEnv choice("ATTNSCOPE_FILE_DIALOG", "auto");
    EXPECT_EQ(find_dialog_tool(), DialogTool::Zenity);
  }
  {
    ScopedEnv choice("ATTNSCOPE_FILE_DIALOG", "builtin");
    EXPECT_EQ(find_dialog_tool(), DialogTool::Builtin);
  }
  {
    ScopedEnv choice("ATTNSCOPE_FILE_DIALOG", "kdialog");  // not installed: the app's own
    EXPECT_EQ(find_dialog_tool(), DialogTool::Builtin);
  }
}

NativeDialog::Result wait_for(const NativeDialog& d) {
  for (int i = 0; i < 500; ++i) {
    if (auto r = d.result()) return *r;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "the dialog's process did not finish in 5 s";
  return {};
}

TEST(NativeDialogProcess, ChosenCancelledAndFailedAreToldApart) {
  using Status = NativeDialog::Result::Status;
  core::testing::TempDir bin;
  const auto run = [&](const std::string& body) {
    const fs::path script = write_script(bin.path() / "dialog", body);
    NativeDialog d({script.string(), "--title=x"});
    return wait_for(d);
  };
  NativeDialog::Result r = run("echo \"/home/me/$1.json\"");
  EXPECT_EQ(r.status, Status::Chosen);
  EXPECT_EQ(r.path, "/home/me/--title=x.json");
  EXPECT_EQ(run("exit 1").status, Status::Cancelled);
  r = run("echo 'cannot open display' >&2; exit 5");
  EXPECT_EQ(r.status, Status::Failed);
  EXPECT_NE(r.error.find("status 5: cannot open display"), std::string::npos) << r.error;
  r = wait_for(NativeDialog({(bin.path() / "missing").string()}));
  EXPECT_EQ(r.status, Status::Failed);
  EXPECT_NE(r.error.find("missing"), std::string::npos) << r.error;
}

TEST(NativeDialogProcess, ClosingTheAppClosesAnOpenDialog) {
  core::testing::TempDir bin;
  const fs::path script = write_script(bin.path() / "dialog", "exec sleep 30");
  const auto start = std::chrono::steady_clock::now();
  { NativeDialog d({script.string()}); }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// File > Open session with a stand-in zenity that answers with a session's
// path: the frames keep coming while it runs, and its answer opens the file.
TEST_F(Desktop, TheDesktopsOpenDialogFeedsTheSameActionAsThePathField) {
  ASSERT_EQ(save_session_file(state, dir.path() / "s.json", false), "");
  state.inputs.tokens[0] = "changed";
  core::testing::TempDir bin;
  write_script(bin.path() / "zenity", "sleep 0.2; echo '" + (dir.path() / "s.json").string() + "'");
  ScopedEnv path("PATH", bin.path().string() + ":" + std::getenv("PATH"));
  ScopedEnv choice("ATTNSCOPE_FILE_DIALOG", "zenity");
  start_headless_imgui(state);
  open_file_dialog(state, FileDialog::OpenSession);
  ASSERT_TRUE(state.files.native) << "zenity was found on PATH";
  int frames = 0;
  for (; frames < 500 && state.files.dialog != FileDialog::None; ++frames) {
    ImGui::NewFrame();
    draw_file_windows(state);
    ImGui::Render();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ImGui::DestroyContext();
  EXPECT_GT(frames, 5) << "frames kept coming while the dialog was open";
  EXPECT_FALSE(state.files.native);
  EXPECT_FALSE(state.files.notice.error) << state.files.notice.message;
  EXPECT_EQ(state.inputs.tokens[0], "Your") << "the session was opened";
}

// ---------------------------------------------------------------------------
// The icon

TEST(AppIcon, TheSvgAndThePixelsDrawTheSameShapes) {
  const auto shapes = icon::shapes();
  ASSERT_EQ(shapes.size(), 26u);  // the tile and 5 x 5 cells
  const std::string svg = icon::svg();
  std::size_t rects = 0;
  for (std::size_t at = 0; (at = svg.find("<rect ", at)) != std::string::npos; ++at) ++rects;
  EXPECT_EQ(rects, shapes.size());
  for (int size : {16, 48, 256}) {
    const auto px = icon::rgba(size);
    ASSERT_EQ(px.size(), static_cast<std::size_t>(size * size * 4));
    EXPECT_EQ(px[3], 0) << "the corner outside the rounded tile is transparent at " << size;
    // The first cell (token 0 on itself, weight 1) at 256 px: its centre's colour.
    if (size == 256) {
      const auto& cell = shapes[1];
      const int x = static_cast<int>(cell.x + cell.w / 2),
                y = static_cast<int>(cell.y + cell.h / 2);
      const std::uint8_t* p = &px[static_cast<std::size_t>(y * size + x) * 4];
      EXPECT_EQ(p[0], cell.r);
      EXPECT_EQ(p[1], cell.g);
      EXPECT_EQ(p[2], cell.b);
      EXPECT_EQ(p[3], 255);
    }
  }
}

}  // namespace
}  // namespace attnscope::gui
