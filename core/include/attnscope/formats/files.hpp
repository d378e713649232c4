// files.hpp: files on disk, safely. Atomic writes that never clobber, the
// export naming rule, the default export folder, file-name sanitizing and
// bounded reads of import files. Nothing here knows about attention: the
// bytes come from formats.hpp / session.hpp, the names from the caller.
//
// The guarantees (docs/file-formats.md, "Writing files"):
// - a file appears complete or not at all (temporary file in the same
//   folder, fsync, rename);
// - an existing file is never overwritten unless the caller asks for
//   Overwrite::Replace, and even then a symlink is replaced, never followed;
// - every failure is a FileError whose message names the path and the
//   problem (missing folder, permission denied, disk full, ...), and leaves
//   nothing behind but what was there before.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace attnscope::core {

// A file or folder that could not be written; what() is one line naming the
// path and the problem, e.g. "cannot write '/x/a.csv': the folder '/x' does
// not exist". (Unreadable or malformed imports are ParseError, base/errors.hpp.)
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What write_file_atomic does when the path already exists.
enum class Overwrite {
  Never,    // fail with FileError (exports: the rule is "never overwrite")
  Replace,  // replace the directory entry atomically (a session saved over itself)
};

// Writes `bytes` to `path` through a temporary file in the same folder
// (write, fsync, rename, fsync the folder); throws FileError. With Never the
// final step is a no-replace rename, so a file (or symlink) created at
// `path` in the meantime is not overwritten either.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes,
                       Overwrite mode = Overwrite::Never);

// Writes `bytes` as dir/<stem><ext>, or else dir/<stem>-1<ext>, <stem>-2<ext>,
// ... (the first free name), never overwriting; returns the path written.
// `ext` includes its dot (".csv"); `stem` must already be sanitized.
std::filesystem::path write_new_file(const std::filesystem::path& dir, std::string_view stem,
                                     std::string_view ext, std::string_view bytes);

// Renames `file` to <file><suffix>, or else <file><suffix>-1, <file><suffix>-2,
// ... (the first free name), never replacing anything there; returns the new
// path. For setting a file aside (an unreadable session kept as .bak without
// losing an earlier .bak). Throws FileError naming the file and the problem.
std::filesystem::path move_aside(const std::filesystem::path& file, std::string_view suffix);

// Removes write_file_atomic's temporary files (".attnscope-<pid>-...tmp") in
// `dir` that no write can still finish: their process no longer runs (it was
// killed mid-write), or they are older than a day (a pid since reused, or
// another host's). Temporary files of running writers are left alone.
// Best effort: returns how many were removed; a missing `dir` removes none.
int remove_stale_temp_files(const std::filesystem::path& dir);

// Creates the new folder parent/<name> (or <name>-1, <name>-2, ... when
// taken) and returns it; `parent` must exist. Throws FileError.
std::filesystem::path create_new_folder(const std::filesystem::path& parent, std::string_view name);

// Creates `dir` and any missing parents (for the default export folder);
// throws FileError when that fails or `dir` is not a folder.
void ensure_folder(const std::filesystem::path& dir);

// Checks that `dir` is an existing folder; throws FileError naming it otherwise.
void require_folder(const std::filesystem::path& dir);

// `t` in local time as YYYYmmdd-HHMMSS, the timestamp of export names.
std::string timestamp_text(std::chrono::system_clock::time_point t);

// The export naming rule without extension: <stage>[_h<head>]_<variant>_<YYYYmmdd-HHMMSS>,
// each part sanitized; head < 0 means a whole-layer stage (no _h part).
std::string export_stem(std::string_view stage_id, int head, std::string_view variant,
                        std::chrono::system_clock::time_point t);

// A string made safe as one file-name component: ASCII letters, digits, '_',
// '-' and '.' are kept, any other byte (path separators, spaces, control
// characters, UTF-8) becomes '_'; leading dots are dropped (no hidden files,
// no ".."); never empty; at most 100 bytes.
std::string sanitize_file_component(std::string_view s);

// Looks up an environment variable; nullopt when unset. Injected for tests.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// The default export folder: $XDG_PICTURES_DIR/attnscope, where
// XDG_PICTURES_DIR comes from the environment or else from
// $XDG_CONFIG_HOME/user-dirs.dirs (default ~/.config/user-dirs.dirs), else
// $HOME/Pictures/attnscope; empty when HOME is unknown too. Not created.
std::filesystem::path default_export_folder();
// The same with an injected environment (tests).
std::filesystem::path default_export_folder(const EnvLookup& env);

// The value of `key` (e.g. "XDG_PICTURES_DIR") in the text of a
// user-dirs.dirs file, with $HOME expanded; nullopt when absent or not an
// absolute path.
std::optional<std::string> parse_user_dirs(std::string_view text, std::string_view key,
                                           std::string_view home);

// Import files larger than this are refused before anything is read.
inline constexpr std::uintmax_t kMaxImportBytes = 256ull * 1024 * 1024;

// Reads a whole text file ("-" reads stdin), refusing more than
// kMaxImportBytes; throws ParseError naming the file when it is unreadable.
std::string read_text_file(const std::string& path);

// Reads a whole import file; throws ParseError (base/errors.hpp) naming the file when
// it is missing, unreadable, a folder or other non-regular file, or larger
// than kMaxImportBytes (checked before reading).
std::string read_import_file(const std::filesystem::path& path);

}  // namespace attnscope::core
