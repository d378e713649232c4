// files.cpp: atomic writes, export names, the export folder, bounded reads.
//
// Sections
//   1. errno -> words a person can act on
//   2. write_file_atomic, write_new_file, folders
//   3. names: timestamp, export stem, sanitizing
//   4. the default export folder (XDG)
//   5. read_import_file
#include "attnscope/formats/files.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>
#include <string>

#include "attnscope/base/errors.hpp"

namespace attnscope::core {

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------
// 1. Errors

// What went wrong, in words, for the errno values a person can do something about.
std::string reason(int err) {
  switch (err) {
    case ENOENT:
      return "no such file or folder";
    case EACCES:
    case EPERM:
      return "permission denied";
    case ENOSPC:
    case EDQUOT:
      return "no space left on the disk";
    case EROFS:
      return "the file system is read-only";
    case EEXIST:
      return "a file of that name already exists (attnscope never overwrites files)";
    case ENOTDIR:
      return "a part of the path is not a folder";
    case EISDIR:
      return "it is a folder";
    case ENAMETOOLONG:
      return "the name is too long";
    case EFBIG:
      return "the file is too large for this file system or limit";
    case EIO:
      return "input/output error (is the disk failing or the medium removed?)";
    default:
      return std::strerror(err);
  }
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

[[noreturn]] void fail_write(const fs::path& path, int err) {
  throw FileError("cannot write " + quoted(path) + ": " + reason(err));
}

// The folder a file goes into ("." for a bare name).
fs::path folder_of(const fs::path& path) {
  fs::path dir = path.parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

// Throws FileError unless `dir` is an existing folder; `target` is what we
// were about to write there (named in the message), or empty.
void check_folder(const fs::path& dir, const fs::path& target) {
  struct stat st {};
  const std::string what =
      target.empty() ? "cannot use " + quoted(dir) : "cannot write " + quoted(target);
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) throw FileError(what + ": the folder " + quoted(dir) + " does not exist");
    throw FileError(what + ": " + quoted(dir) + ": " + reason(err));
  }
  if (!S_ISDIR(st.st_mode)) throw FileError(what + ": " + quoted(dir) + " is not a folder");
}

// ---------------------------------------------------------------------------
// 2. Writing

// A fresh name for a temporary file: hidden, unlikely to collide, and short
// whatever the target's length (so that it never hits NAME_MAX first).
// ".attnscope-<pid>-<counter>-<salt hex>.tmp"; remove_stale_temp_files reads the pid back.
constexpr std::string_view kTempPrefix = ".attnscope-";
constexpr std::string_view kTempSuffix = ".tmp";

std::string temp_name() {
  static std::atomic<unsigned> counter{0};
  static const unsigned long long salt = std::random_device{}();
  char buf[80];
  std::snprintf(buf, sizeof buf, "%s%ld-%u-%llx%s", kTempPrefix.data(),
                static_cast<long>(::getpid()), counter.fetch_add(1), salt, kTempSuffix.data());
  return buf;
}

// The writer's pid of a temp_name(), or -1 when `name` is not one.
long temp_file_pid(std::string_view name) {
  if (!name.starts_with(kTempPrefix) || !name.ends_with(kTempSuffix)) return -1;
  name.remove_prefix(kTempPrefix.size());
  name.remove_suffix(kTempSuffix.size());
  long pid = 0;
  std::size_t digits = 0;
  for (; digits < name.size() && name[digits] >= '0' && name[digits] <= '9'; ++digits) {
    if (pid > 99999999) return -1;  // no pid is that long
    pid = pid * 10 + (name[digits] - '0');
  }
  if (digits == 0 || digits == name.size() || name[digits] != '-' || pid <= 0) return -1;
  return pid;
}

// True unless `pid` certainly does not run here (kill(pid, 0) says ESRCH).
bool process_may_run(long pid) {
  if (pid == static_cast<long>(::getpid())) return true;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

// Removes the temporary file on every exit path that does not rename it.
struct TempFile {
  fs::path path;
  int fd = -1;
  bool keep = false;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!keep && !path.empty()) ::unlink(path.c_str());
  }
};

// Renames tmp -> path without replacing anything at path; returns 0 or an errno.
int rename_no_replace(const fs::path& tmp, const fs::path& path) {
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return 0;
  const int err = errno;
  if (err != EINVAL && err != ENOSYS && err != ENOTSUP) return err;
  // The file system cannot rename without replacing: a hard link fails with
  // EEXIST just the same, then the temporary name goes.
  if (::link(tmp.c_str(), path.c_str()) == 0) {
    ::unlink(tmp.c_str());
    return 0;
  }
  const int link_err = errno;
  if (link_err == EEXIST) return EEXIST;
  // No hard links either (FAT, some network file systems): check, then
  // rename. The window between the two is the best such a file system allows.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) return EEXIST;
  return ::rename(tmp.c_str(), path.c_str()) == 0 ? 0 : errno;
}

void sync_folder(const fs::path& dir) {
  // Makes the rename itself durable. Best effort: some file systems refuse.
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

// Writes a new file; returns 0, or EEXIST when `path` is taken (only with
// Overwrite::Never); throws FileError for anything else.
int try_write_atomic(const fs::path& path, std::string_view bytes, Overwrite mode) {
  const fs::path name = path.filename();
  if (name.empty() || name == "." || name == "..")
    throw FileError("cannot write " + quoted(path) + ": that is not a file name");
  const fs::path dir = folder_of(path);
  check_folder(dir, path);

  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (mode == Overwrite::Never) return EEXIST;
    if (S_ISDIR(st.st_mode))
      throw FileError("cannot write " + quoted(path) + ": a folder of that name exists");
  }

  TempFile tmp;
  for (int attempt = 0; attempt < 100 && tmp.fd < 0; ++attempt) {
    tmp.path = dir / temp_name();
    // O_EXCL | O_NOFOLLOW: never open something someone else put there.
    tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (tmp.fd < 0 && errno != EEXIST) {
      const int err = errno;
      tmp.path.clear();
      fail_write(path, err);
    }
  }
  if (tmp.fd < 0) {
    tmp.path.clear();
    fail_write(path, EEXIST);
  }

  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(tmp.fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_write(path, n < 0 ? errno : ENOSPC);
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  // The data is on disk before the rename makes it visible: a crash leaves
  // the old state or the new file, never half of one.
  if (::fsync(tmp.fd) != 0) fail_write(path, errno);
  const int fd = tmp.fd;
  tmp.fd = -1;
  if (::close(fd) != 0) fail_write(path, errno);

  if (mode == Overwrite::Never) {
    const int err = rename_no_replace(tmp.path, path);
    if (err == EEXIST) return EEXIST;
    if (err != 0) fail_write(path, err);
  } else if (::rename(tmp.path.c_str(), path.c_str()) != 0) {
    fail_write(path, errno);
  }
  tmp.keep = true;
  sync_folder(dir);
  return 0;
}

// Reads a stream to its end, refusing more than kMaxImportBytes (so that
// /dev/zero or an endless pipe ends with a message, not a hang).
std::string read_capped(std::istream& in, const std::string& name) {
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxImportBytes)
      throw ParseError(name + " is larger than " + std::to_string(kMaxImportBytes >> 20) +
                       " MB: a config is a small JSON file");
  }
  if (in.bad()) throw ParseError("cannot read " + name);
  return text;
}

}  // namespace

void write_file_atomic(const fs::path& path, std::string_view bytes, Overwrite mode) {
  if (try_write_atomic(path, bytes, mode) == EEXIST)
    throw FileError("cannot write " + quoted(path) + ": " + reason(EEXIST));
}

fs::path write_new_file(const fs::path& dir, std::string_view stem, std::string_view ext,
                        std::string_view bytes) {
  check_folder(dir, dir / (std::string(stem) + std::string(ext)));
  for (int n = 0; n < 10000; ++n) {
    std::string name(stem);
    if (n > 0) name += "-" + std::to_string(n);
    name += ext;
    const fs::path path = dir / name;
    if (try_write_atomic(path, bytes, Overwrite::Never) == 0) return path;
  }
  throw FileError("cannot write " + quoted(dir / (std::string(stem) + std::string(ext))) +
                  ": 10000 files of that name already exist");
}

fs::path move_aside(const fs::path& file, std::string_view suffix) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0)
    throw FileError("cannot set " + quoted(file) + " aside: " + reason(errno));
  for (int n = 0; n < 10000; ++n) {
    std::string name = file.string() + std::string(suffix);
    if (n > 0) name += "-" + std::to_string(n);
    const int err = rename_no_replace(file, name);
    if (err == 0) {
      sync_folder(folder_of(file));
      return name;
    }
    if (err != EEXIST)
      throw FileError("cannot set " + quoted(file) + " aside as " + quoted(fs::path(name)) + ": " +
                      reason(err));
  }
  throw FileError("cannot set " + quoted(file) + " aside: 10000 files named " +
                  quoted(fs::path(file.string() + std::string(suffix))) + "-N already exist");
}

int remove_stale_temp_files(const fs::path& dir) {
  constexpr auto kDay = std::chrono::hours(24);
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return 0;
  int removed = 0;
  const auto now = fs::file_time_type::clock::now();
  for (const fs::directory_entry& e : it) {
    const long pid = temp_file_pid(e.path().filename().string());
    if (pid < 0 || !e.is_regular_file(ec) || e.is_symlink(ec)) continue;
    const auto written = e.last_write_time(ec);
    const bool old = !ec && now - written > kDay;
    if (process_may_run(pid) && !old) continue;
    if (::unlink(e.path().c_str()) == 0) ++removed;
  }
  return removed;
}

fs::path create_new_folder(const fs::path& parent, std::string_view name) {
  check_folder(parent, {});
  for (int n = 0; n < 10000; ++n) {
    std::string leaf(name);
    if (n > 0) leaf += "-" + std::to_string(n);
    const fs::path dir = parent / leaf;
    if (::mkdir(dir.c_str(), 0777) == 0) return dir;
    const int err = errno;
    if (err != EEXIST)
      throw FileError("cannot create the folder " + quoted(dir) + ": " + reason(err));
  }
  throw FileError("cannot create a folder " + quoted(parent / std::string(name)) +
                  ": 10000 folders of that name already exist");
}

void ensure_folder(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw FileError("cannot create the folder " + quoted(dir) + ": " + reason(ec.value()));
  }
  check_folder(dir, {});
}

void require_folder(const fs::path& dir) { check_folder(dir, {}); }

// ---------------------------------------------------------------------------
// 3. Names

std::string timestamp_text(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm local{};
  ::localtime_r(&secs, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &local);
  return buf;
}

std::string export_stem(std::string_view stage_id, int head, std::string_view variant,
                        std::chrono::system_clock::time_point t) {
  std::string stem = sanitize_file_component(stage_id);
  if (head >= 0) stem += "_h" + std::to_string(head);
  stem += "_" + sanitize_file_component(variant);
  stem += "_" + timestamp_text(t);
  return stem;
}

std::string sanitize_file_component(std::string_view s) {
  constexpr std::size_t kMaxBytes = 100;
  std::string out;
  for (const char c : s) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-' || c == '.';
    if (keep && c == '.' && out.empty()) continue;  // no leading dot: no hidden file, no ".."
    out += keep ? c : '_';
    if (out.size() == kMaxBytes) break;
  }
  return out.empty() ? "_" : out;
}

// ---------------------------------------------------------------------------
// 4. The default export folder

std::optional<std::string> parse_user_dirs(std::string_view text, std::string_view key,
                                           std::string_view home) {
  // Lines look like: XDG_PICTURES_DIR="$HOME/Pictures" (xdg-user-dirs(1)).
  std::optional<std::string> found;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r'))
      line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    if (!line.starts_with(key) || line.size() <= key.size() || line[key.size()] != '=') continue;
    std::string_view value = line.substr(key.size() + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    std::string v;
    if (value.starts_with("$HOME")) {
      if (home.empty()) continue;
      v = std::string(home) + std::string(value.substr(5));
    } else {
      v = std::string(value);
    }
    if (v.empty() || v.front() != '/') continue;
    found = v;  // the last assignment wins, as in a shell
  }
  return found;
}

fs::path default_export_folder(const EnvLookup& env) {
  const auto home = env("HOME");
  const std::string home_dir = home && !home->empty() && home->front() == '/' ? *home : "";
  if (const auto xdg = env("XDG_PICTURES_DIR"); xdg && !xdg->empty() && xdg->front() == '/')
    return fs::path(*xdg) / "attnscope";

  fs::path user_dirs;
  if (const auto cfg = env("XDG_CONFIG_HOME"); cfg && !cfg->empty() && cfg->front() == '/')
    user_dirs = fs::path(*cfg) / "user-dirs.dirs";
  else if (!home_dir.empty())
    user_dirs = fs::path(home_dir) / ".config" / "user-dirs.dirs";
  if (!user_dirs.empty()) {
    std::error_code ec;
    if (fs::is_regular_file(user_dirs, ec) && fs::file_size(user_dirs, ec) < 65536 && !ec) {
      try {
        const std::string text = read_text_file(user_dirs.string());
        if (const auto dir = parse_user_dirs(text, "XDG_PICTURES_DIR", home_dir))
          return fs::path(*dir) / "attnscope";
      } catch (const ParseError&) {
        // An unreadable user-dirs.dirs is not our problem: fall back.
      }
    }
  }
  if (home_dir.empty()) return {};
  return fs::path(home_dir) / "Pictures" / "attnscope";
}

fs::path default_export_folder() {
  return default_export_folder([](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (!v) return std::nullopt;
    return std::string(v);
  });
}

// ---------------------------------------------------------------------------
// 5. Reading imports

std::string read_import_file(const fs::path& path) {
  // Messages start with the path, like the parsers' ("<file>: <problem>").
  const std::string name = path.string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw ParseError(name + ": no such file");
    throw ParseError(name + ": cannot open it: " + reason(err));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw ParseError(name + ": cannot read it: " + reason(errno));
  if (S_ISDIR(st.st_mode)) throw ParseError(name + ": is a folder: give the path of a file");
  if (!S_ISREG(st.st_mode)) throw ParseError(name + ": is not a regular file");
  const auto size = static_cast<std::uintmax_t>(st.st_size);
  auto too_large = [&](std::uintmax_t bytes) {
    char buf[160];
    std::snprintf(buf, sizeof buf, ": is too large (%.1f MB): import files are limited to %llu MB",
                  static_cast<double>(bytes) / (1024.0 * 1024.0),
                  static_cast<unsigned long long>(kMaxImportBytes >> 20));
    return ParseError(name + buf);
  };
  if (size > kMaxImportBytes) throw too_large(size);

  std::string data;
  data.resize(static_cast<std::size_t>(size));
  std::size_t got = 0;
  // Read until EOF, but never past the limit even if the file grows meanwhile.
  for (;;) {
    if (got == data.size()) {
      if (data.size() > kMaxImportBytes) throw too_large(data.size());
      data.resize(data.size() + 65536);
    }
    const ssize_t n = ::read(fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ParseError(name + ": cannot read it: " + reason(errno));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  data.resize(got);
  if (data.size() > kMaxImportBytes) throw too_large(data.size());
  return data;
}

std::string read_text_file(const std::string& path) {
  if (path == "-") return read_capped(std::cin, "standard input");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ParseError("'" + path + "' is a directory: give the path of a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ParseError("cannot open '" + path + "': no such file, or not readable");
  try {
    return read_capped(in, "'" + path + "'");
  } catch (const std::ios_base::failure&) {
    throw ParseError("cannot read '" + path + "'");
  }
}

}  // namespace attnscope::core
