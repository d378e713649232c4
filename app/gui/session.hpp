// session.hpp: the last session (tokens, embeddings, config, stage, pinned
// cell, view preferences) saved on exit and restored on the next launch, in
// $XDG_CONFIG_HOME/attnscope/ (default ~/.config/attnscope/) next to imgui.ini.
// Layout: {"attnscope_session": 1, "run": <config document>, "view": {...}},
// the layout of core's session files; "view" holds stage, head, pinned cell
// and UI preferences. Unlike core's, an invalid run (mid-edit) is kept.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include "app_state.hpp"

namespace attnscope::gui {

// A session file that cannot be used; what() names the problem.
class SessionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// $XDG_CONFIG_HOME/attnscope when XDG_CONFIG_HOME is an absolute path, else
// $HOME/.config/attnscope; empty when neither is known.
std::filesystem::path config_dir();

// The session as a JSON document.
std::string session_json(const AppState& state);
// Applies a session document to `state`; throws SessionError and leaves
// `state` untouched when the document is not a valid session.
void apply_session_json(std::string_view text, std::string_view source, AppState& state);

// Writes `text` to `path` atomically (temp file in the same directory, fsync,
// rename), creating the directory. Returns "" or what went wrong.
std::string write_file_atomic(const std::filesystem::path& path, std::string_view text);

// Restores `file` into `state`. A missing file changes nothing and returns "".
// A corrupt one is renamed to <file>.bak (unless `set_aside` is false, as for
// --screenshot, which leaves the files alone) and the returned warning says so.
std::string load_session(const std::filesystem::path& file, AppState& state, bool set_aside = true);
// Saves atomically; returns "" or what went wrong.
std::string save_session(const std::filesystem::path& file, const AppState& state);

}  // namespace attnscope::gui
