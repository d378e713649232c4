// native_dialog.hpp: the desktop's own Open/Save/folder dialogs, shown by
// zenity (GNOME and most others) or kdialog (KDE) in a process of their own,
// so the window keeps drawing while one is open. Without either program the
// app's path-field dialogs are used (panels/files_panel.cpp).
//
// ATTNSCOPE_FILE_DIALOG chooses: "zenity", "kdialog", "builtin" (the app's
// own), or unset/"auto" (kdialog on KDE when present, else zenity, else
// kdialog, else the app's own).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace attnscope::gui {

enum class DialogTool { Builtin, Zenity, Kdialog };

// The tool ATTNSCOPE_FILE_DIALOG and PATH give (see above).
DialogTool find_dialog_tool();
// "zenity", "kdialog" or "builtin".
const char* dialog_tool_name(DialogTool t);

struct DialogRequest {
  enum class Mode { OpenFile, SaveFile, ChooseFolder };
  Mode mode = Mode::OpenFile;
  std::string title;
  std::string start;  // the folder to start in; SaveFile: the suggested file's full path
  // Name filters, e.g. {"Sessions", {"*.json"}}; "All files" is added.
  std::vector<std::pair<std::string, std::vector<std::string>>> filters;
};

// The command line that shows `request` with `tool` (Zenity or Kdialog).
std::vector<std::string> dialog_command(DialogTool tool, const DialogRequest& request);

// One dialog in its own process, waited for on a thread.
class NativeDialog {
 public:
  struct Result {
    enum class Status { Chosen, Cancelled, Failed };
    Status status = Status::Failed;
    std::string path;   // Chosen: the file or folder
    std::string error;  // Failed: why (the program's message or exit code)
  };

  // Starts `argv`; when it cannot be started, result() says Failed at once.
  // `on_done` runs on the dialog's thread once result() is set (main wakes
  // its idle loop with it).
  explicit NativeDialog(std::vector<std::string> argv, std::function<void()> on_done = {});
  // Closes a dialog still open (SIGTERM) and waits for its thread.
  ~NativeDialog();
  NativeDialog(const NativeDialog&) = delete;
  NativeDialog& operator=(const NativeDialog&) = delete;

  // The outcome once the dialog has closed; nullopt while it is open.
  std::optional<Result> result() const;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace attnscope::gui
