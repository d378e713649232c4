// session.hpp: the app's session documents, on core's session format
// (core/include/attnscope/io/session.hpp): {"attnscope_session": 1, "run": ...,
// "weights": ..., "view": {...}}. The same document is
//   - the last session, saved while the app runs (autosave.hpp: shortly after
//     every change, and on exit) and restored on the next launch, in
//     $XDG_CONFIG_HOME/attnscope/session.json (default ~/.config/attnscope/)
//     next to imgui.ini;
//   - what File > Save session writes and File > Open session reads.
// "view" is the app's: stage, head, pinned cell, UI preferences, files.
//
// The app saves half-finished edits as they are. A run that does not
// validate (d_out not divisible by the heads, mid-edit) cannot be core's
// "run", so the document then holds the last good run (the trace on screen)
// as "run" and the edits as "view"."draft"; restoring applies the draft, and
// core (or the CLI) reading the file sees a valid session of the last good run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "attnscope/io/session.hpp"
#include "state/app_state.hpp"

namespace attnscope::gui {

// A session file that cannot be used; what() names the problem.
class SessionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// $XDG_CONFIG_HOME/attnscope when XDG_CONFIG_HOME is an absolute path, else
// $HOME/.config/attnscope; empty when neither is known.
std::filesystem::path config_dir();

// The session that reproduces the trace on screen: its config, tokens and
// embeddings, and the explicit weights it ran with; nullopt without a trace
// (or when the weights it ran with were replaced since).
std::optional<core::Session> session_of_trace(const AppState& state);

// The app's "view" object (stage, head, pinned cell, preferences) as JSON text.
std::string session_view_json(const AppState& state);

// The session as a JSON document (core::session_json).
std::string session_json(const AppState& state);

// The same in two steps, so that the second can run on another thread: the
// document (copies of the run, the weights and the view, no reference into
// `state`), then its text. session_text throws core::ParseError only for a
// run that cannot be saved (a token that is not UTF-8 text).
core::Session session_document(const AppState& state);
std::string session_text(const core::Session& doc);

// A 64-bit hash of everything session_json reads: equal fingerprints mean
// (but for a hash collision) equal documents. Cheap next to session_json
// (no formatting: one pass over the embeddings and weights), so that the
// autosave can tell "nothing changed" without writing the document out.
std::uint64_t session_fingerprint(const AppState& state);

// What applying a session changes besides the run and the selection.
struct SessionScope {
  bool preferences = true;  // UI scale, window size, files settings (the last session: yes;
                            // File > Open session: no, those are this app's, not the run's)
};

// Applies a session document to `state`; throws SessionError and leaves
// `state` untouched when the document is not a valid session.
void apply_session_json(std::string_view text, std::string_view source, AppState& state,
                        SessionScope scope = {});

// Writes `text` to `path` atomically (core::write_file_atomic, replacing),
// creating the directory. Returns "" or what went wrong.
std::string write_file_atomic(const std::filesystem::path& path, std::string_view text);

// What restoring the last session did.
struct SessionRestore {
  std::string warning;  // "" when restored (or there was none); else for the user, naming the file
  std::string text;     // the file's bytes when it was restored (the autosave's starting point)
  std::filesystem::path set_aside_as;  // where an unusable file went ("" when it stayed)
  bool newer_version = false;          // the file was written by a newer attnscope
  // False when an unusable file could not be set aside: saving over it
  // would destroy it, so this run must not save the session.
  bool may_save = true;
};

// Restores `file` into `state`. A missing file changes nothing. A file that
// cannot be used (corrupt, or written by a newer attnscope in a format this
// one cannot read) leaves `state` as it was (the defaults) and is renamed to
// <file>.bak, or .bak-1, .bak-2, ... when that is taken (never replacing an
// earlier one), unless `set_aside` is false (--screenshot leaves the files
// alone); the warning says which file, what was wrong and where it went.
SessionRestore load_session(const std::filesystem::path& file, AppState& state,
                            bool set_aside = true);

// The "attnscope_session" version of a document, or nullopt when it has none
// (not JSON, not an object, not an integer).
std::optional<long long> session_version(std::string_view text);
// Saves atomically; returns "" or what went wrong.
std::string save_session(const std::filesystem::path& file, const AppState& state);

}  // namespace attnscope::gui
