// session_test.cpp: the session round trip, atomic writes, corrupt files set
// aside with a warning, and where the files live.
#include "session.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "attnscope/io.hpp"

namespace attnscope::gui {
namespace {

namespace fs = std::filesystem;

class Session : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attnscope-session-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST_F(Session, RoundTripRestoresInputsConfigStageCellAndView) {
  AppState a;
  a.load_preset("shiny");
  a.inputs.tokens[1] = "glossy";
  a.inputs.embeddings(2, 1) = 0.123456789f;
  a.config.variant = core::Variant::Multihead;
  a.config.d_out = 4;
  a.config.num_heads = 2;
  a.config.dropout = 0.25;
  a.config.seed = 18446744073709551615ull;
  a.config.qkv_bias = true;
  a.config.training = false;
  a.step = Step::Masked;
  a.head = 1;
  a.pinned = CellRef{"masked_scores", 1, 2, 0};
  a.ui.palette = Palette::ColorBlindSafe;
  a.ui.show_values = false;
  a.ui.ui_scale = 1.25f;
  const fs::path file = dir_ / "session.json";
  ASSERT_EQ(save_session(file, a), "");

  AppState b;
  b.load_preset("book");
  ASSERT_EQ(load_session(file, b), "");
  EXPECT_EQ(b.inputs.tokens, a.inputs.tokens);
  EXPECT_EQ(b.inputs.embeddings, a.inputs.embeddings);  // floats round-trip exactly
  EXPECT_EQ(b.config.variant, core::Variant::Multihead);
  EXPECT_EQ(b.config.d_out, 4);
  EXPECT_EQ(b.config.num_heads, 2);
  EXPECT_EQ(b.config.dropout, 0.25);
  EXPECT_EQ(b.config.seed, 18446744073709551615ull);
  EXPECT_TRUE(b.config.qkv_bias);
  EXPECT_FALSE(b.config.training);
  EXPECT_EQ(b.step, Step::Masked);
  EXPECT_EQ(b.head, 1);
  EXPECT_EQ(b.pinned, a.pinned);
  EXPECT_EQ(b.ui.palette, Palette::ColorBlindSafe);
  EXPECT_FALSE(b.ui.show_values);
  EXPECT_FLOAT_EQ(b.ui.ui_scale, 1.25f);
  EXPECT_EQ(b.preset, "shiny");
}

TEST_F(Session, AnInvalidButWellFormedConfigIsRestoredAsIs) {
  AppState a;
  a.load_preset("book");
  a.config.variant = core::Variant::Multihead;
  a.config.d_out = 3;  // not divisible by 2 heads: the user was mid-edit
  a.config.num_heads = 2;
  ASSERT_EQ(save_session(dir_ / "s.json", a), "");
  AppState b;
  EXPECT_EQ(load_session(dir_ / "s.json", b), "");
  EXPECT_EQ(b.config.d_out, 3);
  b.recompute_if_dirty();
  EXPECT_FALSE(b.error.empty());
}

TEST_F(Session, MissingFileChangesNothing) {
  AppState s;
  s.load_preset("book");
  EXPECT_EQ(load_session(dir_ / "none.json", s), "");
  EXPECT_EQ(s.inputs.tokens.size(), 6u);
}

TEST_F(Session, CorruptFileIsSetAsideAsBakWithAWarning) {
  for (const char* junk :
       {"{not json", "[1, 2]", "{\"attnscope_session\": 1, \"run\": {\"embeddings\": \"x\"}}",
        "{\"attnscope_session\": 1, \"run\": {\"tokens\": [\"a\"], \"embeddings\": [[1], [2]]}}"}) {
    const fs::path file = dir_ / "session.json";
    { std::ofstream(file) << junk; }
    AppState s;
    s.load_preset("book");
    const std::string warning = load_session(file, s);
    EXPECT_NE(warning.find("could not be restored"), std::string::npos) << junk;
    EXPECT_NE(warning.find("session.json.bak"), std::string::npos) << warning;
    EXPECT_FALSE(fs::exists(file));
    EXPECT_EQ(slurp(dir_ / "session.json.bak"), junk);
    EXPECT_EQ(s.inputs.tokens.front(), "Your");  // defaults kept
  }
}

TEST_F(Session, AtomicWriteReplacesTheFileAndLeavesNoTemporary) {
  const fs::path file = dir_ / "sub" / "x.json";
  ASSERT_EQ(write_file_atomic(file, "one"), "");
  ASSERT_EQ(write_file_atomic(file, "two"), "");
  EXPECT_EQ(slurp(file), "two");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_ / "sub")) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST_F(Session, AtomicWriteReportsAnUnwritableDirectory) {
  { std::ofstream(dir_ / "file") << "x"; }
  EXPECT_NE(write_file_atomic(dir_ / "file" / "x.json", "y"), "");
}

TEST(ConfigDir, FollowsXdgConfigHomeThenHome) {
  const char* old_xdg = std::getenv("XDG_CONFIG_HOME");
  const std::string keep = old_xdg ? old_xdg : "";
  const char* old_home = std::getenv("HOME");
  const std::string keep_home = old_home ? old_home : "";
  ::setenv("XDG_CONFIG_HOME", "/tmp/xdg-test", 1);
  EXPECT_EQ(config_dir(), fs::path("/tmp/xdg-test/attnscope"));
  ::setenv("XDG_CONFIG_HOME", "relative/is/ignored", 1);
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(config_dir(), fs::path("/home/someone/.config/attnscope"));
  if (old_xdg)
    ::setenv("XDG_CONFIG_HOME", keep.c_str(), 1);
  else
    ::unsetenv("XDG_CONFIG_HOME");
  if (old_home) ::setenv("HOME", keep_home.c_str(), 1);
}

}  // namespace
}  // namespace attnscope::gui
