// files_state.hpp: what the app remembers about files: the export folder and
// recent folders, the exported figures' theme, the open file dialog, the last
// notice ("Saved ... [Copy path]"), the Export all running beside the frames,
// where imported weights came from, and the off-screen PNG renderer (set by
// main, which owns the GL context; null in headless tests).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/attention/attention.hpp"
#include "attnscope/formats/formats.hpp"
#include "figure/theme.hpp"
#include "platform/native_dialog.hpp"
#include "render/rendered_image.hpp"

namespace attnscope::figure {
struct Heatmap;
struct HeadGrid;
}  // namespace attnscope::figure

namespace attnscope::gui {
class ExportJob;  // export/export_job.hpp

// Renders a heatmap figure off screen at an integer scale (1, 2, 4); throws
// std::runtime_error with a message a person can act on.
using FigureRenderer = std::function<RenderedImage(const figure::Heatmap&, int scale)>;
// The same for the model view's figure of every head.
using HeadGridRenderer = std::function<RenderedImage(const figure::HeadGrid&, int scale)>;

// The path-field dialogs that stand in for a native file dialog.
enum class FileDialog {
  None,
  OpenSession,
  SaveSession,
  ImportEmbeddings,
  ImportWeights,
  ExportFolder,
  ExportAll,
  OpenModel,  // a checkpoint: a Hugging Face folder, .safetensors, the book's .pth
};

// The message after an export, import or save: the full path, copyable.
struct Notice {
  std::string message;  // one line: "Saved weights_h0_causal_...png" or the error
  std::string path;     // the file or folder written ("" for errors)
  bool error = false;
  std::uint64_t serial = 0;  // bumps on every new notice (tests, re-showing)
  // Shown seconds left before it closes itself (the countdown stops while
  // the pointer is over it): long enough to read, an error's longer.
  float seconds_left = 0;
  static constexpr float kSeconds = 8, kErrorSeconds = 20;
};

struct FilesState {
  std::filesystem::path export_folder;                  // empty: core::default_export_folder()
  std::vector<std::string> recent_folders;              // most recent first, at most kMaxRecent
  std::string last_folder;                              // where the path fields start
  int png_scale = 2;                                    // 1, 2 or 4 (Export all, and the default)
  core::DataFormat all_format = core::DataFormat::Npy;  // Export all's data files
  // The colours around exported figures' cells (PNG, SVG, Export all, Export
  // view, --export-png): the export menus' Theme: Dark / Light.
  figure::Theme theme = figure::kDefaultTheme;

  // Explicit weights that came from a file, and which file: while
  // AppState::explicit_parameters is this set, the UI names the file.
  std::weak_ptr<const core::Parameters> imported;
  std::string imported_from;

  Notice notice;
  FileDialog dialog = FileDialog::None;
  // The desktop's dialog (native_dialog.hpp) for `dialog`, while it is open;
  // null: the path-field dialog below is shown instead.
  std::shared_ptr<NativeDialog> native;
  bool native_dialogs = true;  // use zenity/kdialog when present (File menu; remembered)
  std::optional<DialogTool> installed_tool;  // find_dialog_tool(), searched for once
  std::function<void()> wake_ui;  // main: glfwPostEmptyEvent, so a closed dialog is seen at once
  std::string path_input;         // the dialog's path field
  std::string dialog_error;       // why the last attempt failed (shown in the dialog)
  bool confirm_replace = false;   // Save session: the file exists, asked to replace
  std::string listed_folder;      // the folder the dialog lists (cached listing below)
  std::vector<std::pair<std::string, bool>> listing;  // its entries: name, is a folder

  // The Export all that runs beside the frames (null: none); a shared_ptr
  // only so that this header need not define the job. Destroying it (the app
  // closing) cancels it and removes its folder.
  std::shared_ptr<ExportJob> export_job;
  double export_budget_ms = 4.0;  // rendering for it per frame: this long, at least one figure
  // Frames still to draw after an export has ended: its notice is a new
  // auto-sized window, which ImGui shows only from its second frame.
  int frames_after_export = 0;
  bool exporting() const { return export_job != nullptr; }
  // An export needs frames: to render its figures, then to show how it went.
  bool needs_frames() const { return exporting() || frames_after_export > 0; }

  int screenshot_countdown = 0;      // > 0: main grabs the window when it reaches 0
  FigureRenderer render_png;         // null: PNG export is unavailable (no GL context)
  HeadGridRenderer render_grid_png;  // the same for the model view

  // The desktop's dialog program, looked up on PATH the first time only
  // (the Model panel asks every frame).
  DialogTool installed_dialog_tool() {
    if (!installed_tool) installed_tool = find_dialog_tool();
    return *installed_tool;
  }
  // The same, or Builtin while the File menu has the desktop's dialogs off.
  DialogTool dialog_tool() {
    return native_dialogs ? installed_dialog_tool() : DialogTool::Builtin;
  }

  static constexpr std::size_t kMaxRecent = 8;
};

}  // namespace attnscope::gui
