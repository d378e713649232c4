// model_download_test.cpp: the Get a model window's state without a server:
// sizes and times for people, a finished pull recognised in a cache laid out
// by hand (as huggingface_hub lays it out), and a pull that cannot connect.
#include "state/model_download.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace attnscope::gui {
namespace {

namespace fs = std::filesystem;

TEST(ModelDownloadText, SizesAndTimesReadAsTheHubShowsThem) {
  EXPECT_EQ(byte_size_text(362), "362 bytes");
  EXPECT_EQ(byte_size_text(4500), "4 kB");
  EXPECT_EQ(byte_size_text(2.5e6), "2.5 MB");
  EXPECT_EQ(byte_size_text(548105171), "548 MB");
  EXPECT_EQ(byte_size_text(1.52e9), "1.52 GB");
  EXPECT_EQ(time_left_text(-1), "");
  EXPECT_EQ(time_left_text(12.2), "13 s left");
  EXPECT_EQ(time_left_text(125), "about 3 min left");
}

// A scratch HF_HUB_CACHE for one test, restored after it.
class ScratchCache : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("attnscope_download_test_" +
             std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    if (const char* was = std::getenv("HF_HUB_CACHE")) saved_ = was;
    setenv("HF_HUB_CACHE", root_.c_str(), 1);
  }
  void TearDown() override {
    if (saved_.empty())
      unsetenv("HF_HUB_CACHE");
    else
      setenv("HF_HUB_CACHE", saved_.c_str(), 1);
    fs::remove_all(root_);
  }
  static void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  fs::path root_;
  std::string saved_;
};

TEST_F(ScratchCache, AFinishedPullIsFoundAndAnUnfinishedOneIsNot) {
  const core::hub::RepoRef ref{"org/tiny", "main"};
  EXPECT_FALSE(cached_model(ref)) << "nothing pulled yet";
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  const fs::path repo = root_ / "models--org--tiny";
  const fs::path snap = repo / "snapshots" / commit;
  write(repo / "blobs" / "aaa", "{}");
  fs::create_directories(snap);
  fs::create_symlink("../../blobs/aaa", snap / "config.json");
  write(repo / "refs" / "main", commit);
  EXPECT_FALSE(cached_model(ref)) << "a snapshot without weights is not a model";
  write(repo / "blobs" / "bbb", "weights");
  fs::create_symlink("../../blobs/bbb", snap / "model.safetensors");
  const auto found = cached_model(ref);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->commit, commit);
  EXPECT_EQ(fs::path(found->snapshot), snap);
  EXPECT_FALSE(cached_model({"org/tiny", "v2"})) << "another revision was never pulled";
}

TEST_F(ScratchCache, ARepoIdNotYetPulledIsToldFromAPathAndFromAPulledModel) {
  EXPECT_EQ(uncached_repo("org/tiny").value_or(core::hub::RepoRef{}).repo, "org/tiny");
  const auto at = uncached_repo("org/tiny@v2");
  ASSERT_TRUE(at);
  EXPECT_EQ(at->revision, "v2");
  EXPECT_FALSE(uncached_repo("gpt2.safetensors")) << "no slash: a file name";
  EXPECT_FALSE(uncached_repo("")) << "no model named";
  EXPECT_FALSE(uncached_repo("a/b/c")) << "not an id: the loader names the path";
  EXPECT_FALSE(uncached_repo(root_.string())) << "a folder that exists is a path";
  const fs::path here = root_ / "org" / "local";
  fs::create_directories(here);
  EXPECT_FALSE(uncached_repo(here.string())) << "an existing org/name folder wins";
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  const fs::path snap = root_ / "models--org--tiny" / "snapshots" / commit;
  write(root_ / "models--org--tiny" / "refs" / "main", commit);
  write(snap / "config.json", "{}");
  EXPECT_TRUE(uncached_repo("org/tiny")) << "config.json alone: a pull stopped early";
  write(snap / "model.safetensors", "weights");
  EXPECT_FALSE(uncached_repo("org/tiny")) << "pulled whole: the loader opens it";
}

TEST_F(ScratchCache, APullThatCannotConnectSaysSoAndLeavesNoModel) {
  ModelDownload d;
  EXPECT_EQ(d.state(), ModelDownload::State::Idle);
  // Port 1 on loopback: nothing listens there, the connection is refused.
  d.start({"org/tiny", "main"}, "http://127.0.0.1:1");
  EXPECT_TRUE(d.running());
  d.wait();
  EXPECT_EQ(d.state(), ModelDownload::State::Failed);
  EXPECT_FALSE(d.result().error.empty());
  EXPECT_EQ(d.result().error.find('\n'), std::string::npos) << "one line";
  EXPECT_FALSE(cached_model({"org/tiny", "main"}));
}

}  // namespace
}  // namespace attnscope::gui
