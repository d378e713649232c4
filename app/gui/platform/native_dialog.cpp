// native_dialog.cpp: finding zenity/kdialog, their command lines, and running
// one in a child process whose standard output is the chosen path.
#include "platform/native_dialog.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string_view>

extern char** environ;

namespace attnscope::gui {

namespace {

bool on_path(std::string_view program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::string_view rest(path);
  while (!rest.empty()) {
    const std::size_t colon = rest.find(':');
    const std::string_view dir = rest.substr(0, colon);
    const std::string file = std::string(dir.empty() ? "." : dir) + "/" + std::string(program);
    if (::access(file.c_str(), X_OK) == 0) return true;
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return false;
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

}  // namespace

DialogTool find_dialog_tool() {
  const char* env = std::getenv("ATTNSCOPE_FILE_DIALOG");
  const std::string want = env != nullptr ? env : "";
  if (want == "builtin") return DialogTool::Builtin;
  if (want == "zenity") return on_path("zenity") ? DialogTool::Zenity : DialogTool::Builtin;
  if (want == "kdialog") return on_path("kdialog") ? DialogTool::Kdialog : DialogTool::Builtin;
  const char* desktop = std::getenv("XDG_CURRENT_DESKTOP");
  const bool kde =
      desktop != nullptr && std::string_view(desktop).find("KDE") != std::string_view::npos;
  if (kde && on_path("kdialog")) return DialogTool::Kdialog;
  if (on_path("zenity")) return DialogTool::Zenity;
  if (on_path("kdialog")) return DialogTool::Kdialog;
  return DialogTool::Builtin;
}

const char* dialog_tool_name(DialogTool t) {
  switch (t) {
    case DialogTool::Zenity:
      return "zenity";
    case DialogTool::Kdialog:
      return "kdialog";
    case DialogTool::Builtin:
      break;
  }
  return "builtin";
}

std::vector<std::string> dialog_command(DialogTool tool, const DialogRequest& r) {
  using Mode = DialogRequest::Mode;
  std::vector<std::string> argv;
  if (tool == DialogTool::Zenity) {
    argv = {"zenity", "--file-selection", "--title=" + r.title};
    if (r.mode == Mode::SaveFile) {
      argv.emplace_back("--save");
      argv.emplace_back("--confirm-overwrite");  // it asks before replacing
    }
    if (r.mode == Mode::ChooseFolder) argv.emplace_back("--directory");
    std::string start = r.start;
    if (r.mode != Mode::SaveFile && !start.empty() && !start.ends_with('/')) start += '/';
    if (!start.empty()) argv.push_back("--filename=" + start);
    for (const auto& [name, patterns] : r.filters)
      argv.push_back("--file-filter=" + name + " | " + join(patterns, " "));
    if (!r.filters.empty()) argv.emplace_back("--file-filter=All files | *");
    return argv;
  }
  // kdialog: --title, then the mode with its start and one filter string
  // ("Sessions (*.json)\nAll files (*)"); its save dialog asks before replacing.
  argv = {"kdialog", "--title", r.title};
  std::vector<std::string> filters;
  for (const auto& [name, patterns] : r.filters)
    filters.push_back(name + " (" + join(patterns, " ") + ")");
  if (!filters.empty()) filters.emplace_back("All files (*)");
  switch (r.mode) {
    case Mode::OpenFile:
      argv.insert(argv.end(), {"--getopenfilename", r.start, join(filters, "\n")});
      break;
    case Mode::SaveFile:
      argv.insert(argv.end(), {"--getsavefilename", r.start, join(filters, "\n")});
      break;
    case Mode::ChooseFolder:
      argv.insert(argv.end(), {"--getexistingdirectory", r.start});
      break;
  }
  return argv;
}

// ---------------------------------------------------------------------------
// The child process

struct NativeDialog::Shared {
  mutable std::mutex mutex;
  std::optional<Result> result;
  pid_t pid = -1;
  std::atomic<bool> closing{false};
};

namespace {

// Runs argv with stdout (and stderr) read back; returns the exit status,
// or -1 with `error` set when it could not start.
int run_child(const std::vector<std::string>& argv, pid_t& pid_out, std::mutex& mutex,
              const std::atomic<bool>& closing, std::string& out, std::string& err_text,
              std::string& error) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    error = std::string("cannot make a pipe: ") + std::strerror(errno);
    return -1;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    error = "cannot start " + argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  {
    // The owner may have gone between the spawn and now: close it at once.
    std::lock_guard lock(mutex);
    pid_out = pid;
    if (closing) ::kill(pid, SIGTERM);
  }
  // The dialog prints one short line; read both pipes to their end (stderr
  // after stdout: a dialog never fills a pipe's 64 KiB with warnings).
  char buf[4096];
  for (ssize_t n; (n = ::read(out_pipe[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  for (ssize_t n; (n = ::read(err_pipe[0], buf, sizeof buf)) > 0;) err_text.append(buf, n);
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  {
    std::lock_guard lock(mutex);
    pid_out = -1;
  }
  return status;
}

}  // namespace

NativeDialog::NativeDialog(std::vector<std::string> argv, std::function<void()> on_done)
    : shared_(std::make_shared<Shared>()) {
  thread_ = std::thread([shared = shared_, argv = std::move(argv), on_done = std::move(on_done)] {
    std::string out, err_text, error;
    const int status =
        run_child(argv, shared->pid, shared->mutex, shared->closing, out, err_text, error);
    Result r;
    if (status < 0) {
      r.error = error;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
      r.status = out.empty() ? Result::Status::Cancelled : Result::Status::Chosen;
      r.path = out;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 1) {
      r.status = Result::Status::Cancelled;  // both programs: the user closed it
    } else if (shared->closing) {
      r.status = Result::Status::Cancelled;
    } else {
      while (!err_text.empty() && err_text.back() == '\n') err_text.pop_back();
      r.error = argv[0] +
                (WIFEXITED(status) ? " exited with status " + std::to_string(WEXITSTATUS(status))
                                   : std::string(" was stopped by a signal")) +
                (err_text.empty() ? "" : ": " + err_text.substr(0, 300));
    }
    {
      std::lock_guard lock(shared->mutex);
      shared->result = std::move(r);
    }
    if (on_done && !shared->closing) on_done();
  });
}

NativeDialog::~NativeDialog() {
  {
    std::lock_guard lock(shared_->mutex);
    shared_->closing = true;
    if (shared_->pid > 0) ::kill(shared_->pid, SIGTERM);
  }
  if (thread_.joinable()) thread_.join();
}

std::optional<NativeDialog::Result> NativeDialog::result() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->result;
}

}  // namespace attnscope::gui
