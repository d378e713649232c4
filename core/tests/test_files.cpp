// test_files.cpp: atomic writes that never clobber, export names, the
// default export folder, bounded reads of imports.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>

#include "attnscope/formats/files.hpp"
#include "attnscope/io/io.hpp"
#include "temp_dir.hpp"

namespace attnscope::core {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::TempDir;
using testing::write_text;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// 2024-01-02 03:04:05 UTC, read back in UTC.
std::chrono::system_clock::time_point fixed_time() {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  return std::chrono::system_clock::from_time_t(1704164645);
}

TEST(WriteFileAtomic, WritesExactlyTheBytesAndLeavesNoTemporaryFile) {
  TempDir dir;
  const std::string bytes("a\0b\n\x93NUMPY", 11);
  write_file_atomic(dir / "x.bin", bytes);
  EXPECT_EQ(read_text(dir / "x.bin"), bytes);
  EXPECT_EQ(dir.names(), (std::vector<std::string>{"x.bin"}));
}

TEST(WriteFileAtomic, NeverOverwritesAnExistingFile) {
  TempDir dir;
  write_text(dir / "x.csv", "old");
  const std::string msg = error_of([&] { write_file_atomic(dir / "x.csv", "new"); });
  EXPECT_NE(msg.find((dir / "x.csv").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("already exists"), std::string::npos) << msg;
  EXPECT_EQ(read_text(dir / "x.csv"), "old");
  EXPECT_EQ(dir.names(), (std::vector<std::string>{"x.csv"}));
}

TEST(WriteFileAtomic, NeverFollowsASymlinkOverAnExistingFile) {
  TempDir dir;
  write_text(dir / "target.txt", "precious");
  fs::create_symlink(dir / "target.txt", dir / "link.csv");
  EXPECT_NE(error_of([&] { write_file_atomic(dir / "link.csv", "new"); }), "");
  EXPECT_EQ(read_text(dir / "target.txt"), "precious");
  // Replace swaps the link itself for a file; the target stays untouched.
  write_file_atomic(dir / "link.csv", "new", Overwrite::Replace);
  EXPECT_FALSE(fs::is_symlink(dir / "link.csv"));
  EXPECT_EQ(read_text(dir / "link.csv"), "new");
  EXPECT_EQ(read_text(dir / "target.txt"), "precious");
}

TEST(WriteFileAtomic, TreatsADanglingSymlinkAsTaken) {
  TempDir dir;
  fs::create_symlink(dir / "nowhere", dir / "x.csv");
  EXPECT_NE(error_of([&] { write_file_atomic(dir / "x.csv", "new"); }), "");
  EXPECT_FALSE(fs::exists(dir / "nowhere"));
}

TEST(WriteFileAtomic, ReplaceSwapsTheContentAtomically) {
  TempDir dir;
  write_text(dir / "s.json", "old");
  write_file_atomic(dir / "s.json", "new", Overwrite::Replace);
  EXPECT_EQ(read_text(dir / "s.json"), "new");
  EXPECT_EQ(dir.names(), (std::vector<std::string>{"s.json"}));
}

TEST(WriteFileAtomic, NamesAMissingFolder) {
  TempDir dir;
  const std::string msg = error_of([&] { write_file_atomic(dir / "no" / "x.csv", "x"); });
  EXPECT_NE(msg.find("the folder '" + (dir / "no").string() + "' does not exist"),
            std::string::npos)
      << msg;
}

TEST(WriteFileAtomic, SaysWhenThePathRunsThroughAFile) {
  TempDir dir;
  write_text(dir / "plain", "x");
  const std::string msg = error_of([&] { write_file_atomic(dir / "plain" / "x.csv", "x"); });
  EXPECT_NE(msg.find("is not a folder"), std::string::npos) << msg;
}

TEST(WriteFileAtomic, SaysPermissionDeniedForAReadOnlyFolder) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores folder permissions";
  TempDir dir;
  fs::create_directory(dir / "ro");
  fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  const std::string msg = error_of([&] { write_file_atomic(dir / "ro" / "x.csv", "x"); });
  fs::permissions(dir / "ro", fs::perms::owner_all);
  EXPECT_NE(msg.find("permission denied"), std::string::npos) << msg;
  EXPECT_TRUE(fs::is_empty(dir / "ro"));
}

TEST(WriteNewFile, AddsACounterWhenTheNameIsTaken) {
  TempDir dir;
  EXPECT_EQ(write_new_file(dir.path(), "w", ".csv", "0"), dir / "w.csv");
  EXPECT_EQ(write_new_file(dir.path(), "w", ".csv", "1"), dir / "w-1.csv");
  fs::create_symlink(dir / "elsewhere", dir / "w-2.csv");
  EXPECT_EQ(write_new_file(dir.path(), "w", ".csv", "3"), dir / "w-3.csv");
  EXPECT_EQ(read_text(dir / "w.csv"), "0");
  EXPECT_EQ(read_text(dir / "w-1.csv"), "1");
  EXPECT_EQ(read_text(dir / "w-3.csv"), "3");
  EXPECT_FALSE(fs::exists(dir / "elsewhere"));
}

TEST(CreateNewFolder, NeverReusesAnExistingFolder) {
  TempDir dir;
  EXPECT_EQ(create_new_folder(dir.path(), "run"), dir / "run");
  EXPECT_EQ(create_new_folder(dir.path(), "run"), dir / "run-1");
  EXPECT_NE(error_of([&] { create_new_folder(dir / "missing", "run"); }).find("does not exist"),
            std::string::npos);
}

TEST(MoveAside, NeverReplacesAnEarlierCopy) {
  TempDir dir;
  for (const char* text : {"first", "second", "third"}) {
    write_text(dir / "session.json", text);
    move_aside(dir / "session.json", ".bak");
  }
  EXPECT_EQ(read_text(dir / "session.json.bak"), "first");
  EXPECT_EQ(read_text(dir / "session.json.bak-1"), "second");
  EXPECT_EQ(read_text(dir / "session.json.bak-2"), "third");
  EXPECT_FALSE(fs::exists(dir / "session.json"));
  write_text(dir / "session.json", "fourth");
  EXPECT_EQ(move_aside(dir / "session.json", ".bak"), dir / "session.json.bak-3");
  const std::string msg = error_of([&] { move_aside(dir / "missing.json", ".bak"); });
  EXPECT_NE(msg.find("missing.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no such file"), std::string::npos) << msg;
}

TEST(RemoveStaleTempFiles, RemovesOnlyFilesOfWritersThatNoLongerRun) {
  TempDir dir;
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);  // reaped: that pid runs nothing now
  const std::string dead = std::to_string(child), alive = std::to_string(::getpid());
  write_text(dir / (".attnscope-" + dead + "-0-1f2e.tmp"), "{\"half");
  write_text(dir / (".attnscope-" + alive + "-3-1f2e.tmp"), "being written");
  write_text(dir / (".attnscope-" + alive + "-4-1f2e.tmp"), "two days old");
  const auto two_days = fs::file_time_type::clock::now() - std::chrono::hours(48);
  fs::last_write_time(dir / (".attnscope-" + alive + "-4-1f2e.tmp"), two_days);
  for (const char* keep : {"session.json", ".attnscope-x-1-2.tmp", ".attnscope-12.tmp", "a.tmp",
                           ".attnscope-1-2-3.json"})
    write_text(dir / keep, "keep");
  fs::create_directory(dir / (".attnscope-" + dead + "-9-1.tmp"));  // not a file: kept

  EXPECT_EQ(remove_stale_temp_files(dir.path()), 2);
  std::vector<std::string> kept = {".attnscope-" + alive + "-3-1f2e.tmp",
                                   ".attnscope-" + dead + "-9-1.tmp",
                                   ".attnscope-1-2-3.json",
                                   ".attnscope-12.tmp",
                                   ".attnscope-x-1-2.tmp",
                                   "a.tmp",
                                   "session.json"};
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(dir.names(), kept);
  EXPECT_EQ(remove_stale_temp_files(dir / "missing"), 0);
}

TEST(EnsureFolder, CreatesMissingParents) {
  TempDir dir;
  ensure_folder(dir / "a" / "b");
  EXPECT_TRUE(fs::is_directory(dir / "a" / "b"));
  write_text(dir / "file", "x");
  EXPECT_NE(error_of([&] { ensure_folder(dir / "file"); }), "");
}

TEST(ExportStem, FollowsTheNamingRule) {
  const auto t = fixed_time();
  EXPECT_EQ(timestamp_text(t), "20240102-030405");
  EXPECT_EQ(export_stem("weights", 1, "causal", t), "weights_h1_causal_20240102-030405");
  EXPECT_EQ(export_stem("context", -1, "multihead", t), "context_multihead_20240102-030405");
}

TEST(ExportStem, SanitizesEveryPart) {
  const auto t = fixed_time();
  EXPECT_EQ(export_stem("../x/y", 0, "a b", t), "_x_y_h0_a_b_20240102-030405");
}

TEST(SanitizeFileComponent, RemovesSeparatorsDotDotAndControlCharacters) {
  EXPECT_EQ(sanitize_file_component("../etc/passwd"), "_etc_passwd");
  EXPECT_EQ(sanitize_file_component(".."), "_");
  EXPECT_EQ(sanitize_file_component(""), "_");
  EXPECT_EQ(sanitize_file_component("a\\b/c\nd"), "a_b_c_d");
  EXPECT_EQ(sanitize_file_component("W_query"), "W_query");
  EXPECT_EQ(sanitize_file_component("h\xC3\xA9"), "h__");
  EXPECT_EQ(sanitize_file_component(std::string(300, 'x')).size(), 100u);
  for (const char* s : {"..", "../..", "/", "a/../b"}) {
    const std::string out = sanitize_file_component(s);
    EXPECT_EQ(out.find('/'), std::string::npos) << s;
    EXPECT_NE(out, "..") << s;
    EXPECT_NE(out.front(), '.') << s;
  }
}

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(DefaultExportFolder, PrefersXdgPicturesDirFromTheEnvironment) {
  EXPECT_EQ(default_export_folder(env_of({{"HOME", "/home/u"}, {"XDG_PICTURES_DIR", "/pics"}})),
            fs::path("/pics/attnscope"));
}

TEST(DefaultExportFolder, ReadsUserDirsWhenTheVariableIsUnset) {
  TempDir dir;
  write_text(dir / "user-dirs.dirs",
             "# written by xdg-user-dirs-update\nXDG_DESKTOP_DIR=\"$HOME/Desktop\"\n"
             "XDG_PICTURES_DIR=\"$HOME/Bilder\"\n");
  EXPECT_EQ(default_export_folder(
                env_of({{"HOME", "/home/u"}, {"XDG_CONFIG_HOME", dir.path().string()}})),
            fs::path("/home/u/Bilder/attnscope"));
}

TEST(DefaultExportFolder, FallsBackToHomePictures) {
  TempDir dir;  // an empty config folder: no user-dirs.dirs
  EXPECT_EQ(default_export_folder(
                env_of({{"HOME", "/home/u"}, {"XDG_CONFIG_HOME", dir.path().string()}})),
            fs::path("/home/u/Pictures/attnscope"));
  EXPECT_EQ(default_export_folder(env_of({})), fs::path());
}

TEST(ParseUserDirs, ExpandsHomeAndIgnoresRelativePaths) {
  EXPECT_EQ(parse_user_dirs("XDG_PICTURES_DIR=\"$HOME/P\"\n", "XDG_PICTURES_DIR", "/h"), "/h/P");
  EXPECT_EQ(parse_user_dirs("XDG_PICTURES_DIR=\"/abs/P\"\r\n", "XDG_PICTURES_DIR", "/h"), "/abs/P");
  EXPECT_EQ(parse_user_dirs("XDG_PICTURES_DIR=\"rel\"\n", "XDG_PICTURES_DIR", "/h"), std::nullopt);
  EXPECT_EQ(parse_user_dirs("XDG_PICTURES_DIRX=\"/x\"\n", "XDG_PICTURES_DIR", "/h"), std::nullopt);
}

TEST(ReadImportFile, RefusesFilesOver256MegabytesBeforeReading) {
  TempDir dir;
  const fs::path big = dir / "big.csv";
  {
    const int fd = ::open(big.c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kMaxImportBytes + 1)), 0);  // sparse: no disk used
    ::close(fd);
  }
  const std::string msg = error_of([&] { read_import_file(big); });
  EXPECT_NE(msg.find(big.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("limited to 256 MB"), std::string::npos) << msg;
}

TEST(ReadImportFile, NamesMissingFilesAndFolders) {
  TempDir dir;
  EXPECT_NE(error_of([&] { read_import_file(dir / "none.csv"); }).find("no such file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_import_file(dir.path()); }).find("is a folder"), std::string::npos);
  write_text(dir / "ok.csv", "1,2\n");
  EXPECT_EQ(read_import_file(dir / "ok.csv"), "1,2\n");
}

TEST(ReadImportFile, ThrowsParseErrorSoFrontEndsReportItAsBadInput) {
  TempDir dir;
  EXPECT_THROW(read_import_file(dir / "none.csv"), ParseError);
}

}  // namespace
}  // namespace attnscope::core
