// test_hub.cpp: the hub room without the network: SHA-256, the Hub's JSON
// and headers, names and paths of the cache; and PullJob against a server
// on 127.0.0.1 that trickles (cancel within a second) or is not there.
// The whole pull against a stand-in Hub is app/tests/hub_pull_test.py.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "attnscope/base/errors.hpp"
#include "attnscope/hub/cache.hpp"
#include "attnscope/hub/protocol.hpp"
#include "attnscope/hub/pull.hpp"
#include "attnscope/hub/sha1.hpp"
#include "attnscope/hub/sha256.hpp"
#include "attnscope/model/gpt2_model.hpp"
#include "hub/feeder.hpp"

namespace hub = attnscope::core::hub;
namespace fs = std::filesystem;
using attnscope::core::ParseError;

#define SHA "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"

namespace {

// ---------------------------------------------------------------------------
// SHA-256

TEST(Sha256, MatchesTheFipsVectors) {
  EXPECT_EQ(hub::sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hub::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hub::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hub::sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, FastPathAgreesWithThePortableOneAtEveryLengthAndSplit) {
  std::mt19937 rng(5);
  std::string data(3000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (std::size_t n = 0; n < data.size(); n += 37) {
    hub::Sha256 best, portable(hub::Sha256::Path::Portable);
    const std::size_t split = rng() % (n + 1);
    best.update(data.data(), split);
    best.update(data.data() + split, n - split);
    portable.update(std::string_view(data.data(), n));
    ASSERT_EQ(best.hex(), portable.hex()) << "length " << n << " split " << split;
  }
}

TEST(Sha256, KnowsItsOwnForm) {
  EXPECT_TRUE(hub::is_sha256_hex(hub::sha256_hex("x")));
  EXPECT_FALSE(hub::is_sha256_hex("abc"));
  EXPECT_FALSE(hub::is_sha256_hex(std::string(64, 'G')));
}

TEST(Sha1, MatchesTheFipsVectors) {
  EXPECT_EQ(hub::sha1_hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(hub::sha1_hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(hub::sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(hub::sha1_hex(std::string(1000000, 'a')), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST(Sha1, GivesGitsBlobIds) {
  // `git hash-object` of an empty file and of "hello world\n".
  EXPECT_EQ(hub::git_blob_sha1(""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
  EXPECT_EQ(hub::git_blob_sha1("hello world\n"), "3b18e512dba79e4c8300dd08aeb37f8e728b8dad");
  EXPECT_TRUE(hub::is_sha1_hex(hub::git_blob_sha1("x")));
  EXPECT_FALSE(hub::is_sha1_hex(hub::sha256_hex("x")));
  EXPECT_FALSE(hub::is_sha1_hex(std::string(40, 'A')));
}

TEST(Sha1, AnySplitOfTheBytesGivesTheSameDigest) {
  std::mt19937 rng(3);
  std::string data(700, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (std::size_t n = 0; n < data.size(); n += 29) {
    hub::Sha1 split;
    const std::size_t at = rng() % (n + 1), at2 = at + rng() % (n - at + 1);
    split.update(data.data(), at);
    split.update(data.data() + at, at2 - at);
    split.update(data.data() + at2, n - at2);
    ASSERT_EQ(split.hex(), hub::sha1_hex(std::string_view(data.data(), n))) << n << " " << at;
  }
}

// ---------------------------------------------------------------------------
// The Hub's answers

TEST(HubProtocol, ParsesTheFileList) {
  const auto l = hub::parse_repo_listing(
      R"({"id": "a/b", "sha": "0123456789abcdef0123456789abcdef01234567",
          "siblings": [{"rfilename": "config.json"}, {"rfilename": "model.safetensors"}]})",
      "api");
  EXPECT_EQ(l.commit, "0123456789abcdef0123456789abcdef01234567");
  EXPECT_EQ(l.files, (std::vector<std::string>{"config.json", "model.safetensors"}));
}

TEST(HubProtocol, RefusesAFileListThatIsNotOne) {
  for (const char* bad :
       {"", "[]", "{\"sha\": 1}", "{\"sha\": \"abc\", \"siblings\": []}",
        "{\"sha\": \"0123456789abcdef0123456789abcdef01234567\"}",
        "{\"sha\": \"0123456789abcdef0123456789abcdef01234567\", \"siblings\": [1]}",
        "{\"sha\": \"0123456789abcdef0123456789abcdef01234567\", \"siblings\": [{}]}"})
    EXPECT_THROW(hub::parse_repo_listing(bad, "api"), ParseError) << bad;
}

TEST(HubProtocol, HeadersOfTheLastResponseCountAndNamesIgnoreCase) {
  hub::ResponseHead h;
  for (const char* line :
       {"HTTP/1.1 307 Temporary Redirect\r\n", "Location: /b\r\n", "\r\n", "HTTP/2 302 \r\n",
        "X-Linked-Etag: \"" SHA "\"\r\n", "nonsense\r\n", "ETag: W/\"other\"\r\n",
        "x-linked-size: 1234\r\n", "Content-Length: 0\r\n", "X-Repo-Commit: abc\r\n",
        "location: https://cdn/x\r\n"})
    hub::add_header_line(line, h);
  EXPECT_EQ(h.status, 302);
  EXPECT_EQ(h.get("LOCATION"), "https://cdn/x");
  const hub::FileMeta m = hub::file_meta(h);
  EXPECT_EQ(m.etag, SHA);  // X-Linked-Etag over ETag, as huggingface_hub
  EXPECT_TRUE(m.lfs());
  EXPECT_EQ(m.size, 1234u);  // X-Linked-Size; a redirect's Content-Length says nothing
  EXPECT_EQ(m.commit, "abc");
  EXPECT_EQ(m.location, "https://cdn/x");
}

TEST(HubProtocol, ASmallFileIsKnownByItsEtagAndLength) {
  hub::ResponseHead h;
  for (const char* line : {"HTTP/1.1 200 OK", "ETag: \"3c1ec1\"", "Content-Length: 665"})
    hub::add_header_line(line, h);
  const hub::FileMeta m = hub::file_meta(h);
  EXPECT_EQ(m.etag, "3c1ec1");
  EXPECT_FALSE(m.lfs());
  EXPECT_EQ(m.size, 665u);
  EXPECT_EQ(hub::normalize_etag("W/\"x\""), "x");
}

TEST(HubProtocol, ContentRangesAndSizes) {
  const auto r = hub::parse_content_range("bytes 100-199/1000");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 100u);
  EXPECT_EQ(r->last, 199u);
  EXPECT_EQ(r->total, 1000u);
  EXPECT_FALSE(hub::parse_content_range("bytes 200-100/1000"));
  EXPECT_FALSE(hub::parse_content_range("bytes 0-1000/1000"));
  EXPECT_FALSE(hub::parse_content_range("items 0-1/2"));
  EXPECT_FALSE(hub::parse_size("-1"));
  EXPECT_FALSE(hub::parse_size("99999999999999999999"));
  EXPECT_EQ(hub::parse_size("18446744073709551"), 18446744073709551u);
}

// ---------------------------------------------------------------------------
// The cache's names

TEST(HubCache, RefusesNamesThatWouldLeaveTheFolder) {
  for (const char* bad :
       {"", "/etc/passwd", "../x", "a/../../x", "a//b", "a/", ".", "a\\b", "a/./b", "x\ny"})
    EXPECT_TRUE(hub::unsafe_file_name(bad)) << bad;
  for (const char* good : {"config.json", "onnx/model.onnx", "a..b", ".gitattributes"})
    EXPECT_FALSE(hub::unsafe_file_name(good)) << good;
}

TEST(HubCache, LinksAreRelativeWithOneStepUpPerFolder) {
  EXPECT_EQ(hub::blob_link_target("config.json", "e1"), "../../blobs/e1");
  EXPECT_EQ(hub::blob_link_target("a/b/c.json", "e1"), "../../../../blobs/e1");
  EXPECT_EQ(hub::repo_folder_name("openai-community/gpt2"), "models--openai-community--gpt2");
  EXPECT_EQ(hub::repo_folder_name("gpt2"), "models--gpt2");
}

TEST(HubCache, PullsOnlyWhatAModelNeeds) {
  for (const char* yes :
       {"config.json", "model.safetensors", "model-00001-of-00002.safetensors",
        "model.safetensors.index.json", "tokenizer.json", "vocab.json", "merges.txt",
        "generation_config.json", "tokenizer_config.json", "special_tokens_map.json"})
    EXPECT_TRUE(hub::is_model_file(yes)) << yes;
  for (const char* no :
       {"pytorch_model.bin", "tf_model.h5", "flax_model.msgpack", "rust_model.ot", "model.gguf",
        "onnx/model.onnx", "README.md", "sub/model.safetensors", ".safetensors"})
    EXPECT_FALSE(hub::is_model_file(no)) << no;
}

TEST(HubCache, ReadsRepoIdsAndRevisions) {
  const auto r = hub::parse_repo_ref("openai-community/gpt2@v1.0");
  EXPECT_EQ(r.repo, "openai-community/gpt2");
  EXPECT_EQ(r.revision, "v1.0");
  EXPECT_EQ(hub::parse_repo_ref("gpt2").revision, "main");
  for (const char* bad :
       {"", "/", "a/b/c", "../x", "a/..", "a/b@", "a/b@../x", "a--b/c", "a b/c", "-a/b", "a/b."})
    EXPECT_THROW(hub::parse_repo_ref(bad), ParseError) << bad;
}

struct EnvGuard {
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  void set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~EnvGuard() {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      if (it->second)
        setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        unsetenv(it->first.c_str());
    }
  }
};

TEST(HubCache, RootFollowsHuggingFaceHubsOrderOfVariables) {
  EnvGuard env;
  env.set("HF_HUB_CACHE", nullptr);
  env.set("HF_HOME", nullptr);
  env.set("XDG_CACHE_HOME", nullptr);
  env.set("HOME", "/h");
  EXPECT_EQ(hub::cache_root(), fs::path("/h/.cache/huggingface/hub"));
  env.set("XDG_CACHE_HOME", "/x");
  EXPECT_EQ(hub::cache_root(), fs::path("/x/huggingface/hub"));
  env.set("HF_HOME", "/hf");
  EXPECT_EQ(hub::cache_root(), fs::path("/hf/hub"));
  env.set("HF_HUB_CACHE", "/c");
  EXPECT_EQ(hub::cache_root(), fs::path("/c"));
}

fs::path temp_folder(const std::string& name) {
  const fs::path p =
      fs::temp_directory_path() / ("attnscope-hub-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

TEST(HubCache, RefsNameCommitsAndCommitsNameThemselves) {
  const fs::path st = temp_folder("refs");
  const std::string commit(40, 'a');
  EXPECT_FALSE(hub::read_ref(st, "main"));
  fs::create_directories(st / "refs");
  std::ofstream(st / "refs" / "main") << commit;
  EXPECT_EQ(hub::read_ref(st, "main"), commit);
  EXPECT_EQ(hub::read_ref(st, std::string(40, 'b')), std::string(40, 'b'));
  EXPECT_FALSE(hub::read_ref(st, "../refs/main"));
  fs::remove_all(st);
}

TEST(HubCache, AModelArgumentThatIsARepoIdOpensItsSnapshot) {
  const fs::path cache = temp_folder("resolve");
  EnvGuard env;
  env.set("HF_HUB_CACHE", cache.c_str());
  const std::string commit(40, 'c');
  const fs::path snap = cache / "models--org--m" / "snapshots" / commit;
  fs::create_directories(snap);
  std::ofstream(snap / "config.json") << "{}";
  fs::create_directories(cache / "models--org--m" / "refs");
  std::ofstream(cache / "models--org--m" / "refs" / "main") << commit;
  EXPECT_EQ(attnscope::core::resolve_model_path("org/m"), snap);
  EXPECT_EQ(attnscope::core::resolve_model_path("org/m@main"), snap);
  EXPECT_EQ(attnscope::core::resolve_model_path("org/m@" + commit), snap);
  EXPECT_EQ(attnscope::core::resolve_model_path(cache), cache) << "a path is itself";
  const auto error = [](const std::string& model) {
    try {
      attnscope::core::resolve_model_path(model);
    } catch (const ParseError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("org/m@v2").find("`attnscope-cli model pull org/m@v2`"), std::string::npos)
      << error("org/m@v2");
  EXPECT_NE(error("org/other").find("`attnscope-cli model pull org/other`"), std::string::npos);
  EXPECT_EQ(error("missing.safetensors").find("model pull"), std::string::npos)
      << "a file name is no model id";
  fs::remove_all(cache);
}

// ---------------------------------------------------------------------------
// BlobFeeder: the bytes to the file on the transfer's thread, to the hash on its own

std::string read_all(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(BlobFeeder, WritesAndHashesEveryByteInOrderAcrossItsBuffers) {
  const fs::path dir = temp_folder("feeder");
  std::mt19937 rng(11);
  // Enough for every buffer to go round twice, in chunks of odd sizes.
  std::string data(2 * hub::BlobFeeder::kBuffers * hub::BlobFeeder::kBufferBytes + 12345, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  const int fd = ::open((dir / "blob").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "head", 4), 4);  // a resumed file: the feeder appends
  hub::Sha256 hash;
  hash.update("head");
  {
    hub::BlobFeeder feeder(fd, &hash);
    for (std::size_t at = 0; at < data.size();) {
      const std::size_t n = std::min<std::size_t>(data.size() - at, 1 + rng() % (700 << 10));
      ASSERT_TRUE(feeder.add(data.data() + at, n));
      at += n;
    }
    EXPECT_EQ(feeder.finish(), "");
  }
  ::close(fd);
  EXPECT_EQ(hash.hex(), hub::sha256_hex("head" + data));
  EXPECT_EQ(read_all(dir / "blob"), "head" + data);
  fs::remove_all(dir);
}

TEST(BlobFeeder, AFailedWriteStopsTheTransferWithItsReason) {
  const fs::path dir = temp_folder("feeder-fail");
  std::ofstream(dir / "blob") << "x";
  const int fd = ::open((dir / "blob").c_str(), O_RDONLY);  // every write fails
  ASSERT_GE(fd, 0);
  hub::Sha256 hash;
  hub::BlobFeeder feeder(fd, &hash);
  const std::string full(hub::BlobFeeder::kBufferBytes, 'x');  // written when full
  EXPECT_FALSE(feeder.add(full.data(), full.size()));
  EXPECT_FALSE(feeder.add("abc", 3));
  EXPECT_NE(feeder.finish(), "");
  ::close(fd);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------
// PullJob

// A server on 127.0.0.1 that answers the file list, then sends one byte a
// second of every other body, until stopped.
class TrickleServer {
 public:
  TrickleServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 8);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~TrickleServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  void serve() {
    std::vector<std::thread> clients;
    while (!stop_) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) break;
      clients.emplace_back([this, c] { answer(c); });
    }
    for (auto& t : clients) t.join();
  }
  void answer(int c) {
    char buf[4096];
    const ssize_t n = ::recv(c, buf, sizeof buf, 0);
    const std::string request(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
    const std::string commit(40, 'c');
    std::string reply;
    if (request.find("/api/models/") != std::string::npos) {
      const std::string body = "{\"sha\": \"" + commit +
                               "\", \"siblings\": [{\"rfilename\": \"config.json\"}, "
                               "{\"rfilename\": \"model.safetensors\"}]}";
      reply =
          "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) +
          "\r\n\r\n" + body;
    } else {
      reply =
          "HTTP/1.1 200 OK\r\nConnection: close\r\nETag: \"" SHA "\"\r\nX-Repo-Commit: " + commit +
          "\r\nContent-Length: 1000\r\n\r\n";
    }
    ::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
    const bool head = request.starts_with("HEAD") || request.find("/api/") != std::string::npos;
    for (int i = 0; !head && !stop_ && i < 1000; ++i) {
      if (::send(c, "x", 1, MSG_NOSIGNAL) != 1) break;
      for (int t = 0; t < 10 && !stop_; ++t)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::close(c);
  }
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(PullJob, CancelEndsASlowTransferWithinASecondAndKeepsThePartialFile) {
  TrickleServer server;
  const fs::path cache = temp_folder("cancel");
  hub::PullOptions o;
  o.ref = hub::parse_repo_ref("org/slow");
  o.endpoint = server.endpoint();
  o.cache = cache;
  hub::PullJob job(o);
  std::thread worker([&] { job.run(); });
  const auto downloading = [&] {
    const auto p = job.progress();
    return !p.files.empty() && p.files[0].state == hub::FileState::Downloading && p.done > 0;
  };
  for (int i = 0; i < 100 && !downloading(); ++i) job.wait_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(downloading()) << job.progress().phase;
  const auto start = std::chrono::steady_clock::now();
  job.cancel();
  EXPECT_TRUE(job.wait_for(std::chrono::milliseconds(1500)));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  worker.join();
  EXPECT_LT(took, 1.0);
  EXPECT_FALSE(job.result().ok);
  EXPECT_TRUE(job.result().cancelled);
  EXPECT_NE(job.result().error.find("pull again to resume"), std::string::npos);
  const fs::path st = cache / "models--org--slow";
  EXPECT_TRUE(fs::exists(st / "blobs" / (std::string(SHA) + ".incomplete")));
  EXPECT_FALSE(fs::exists(st / "refs"));
  EXPECT_FALSE(fs::exists(st / "snapshots"));
  fs::remove_all(cache);
}

TEST(PullJob, NoServerIsAnErrorThatSaysSo) {
  const fs::path cache = temp_folder("noserver");
  hub::PullOptions o;
  o.ref = hub::parse_repo_ref("org/x");
  o.endpoint = "http://127.0.0.1:9";
  o.cache = cache;
  hub::PullJob job(o);
  const hub::PullResult& r = job.run();
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("cannot reach http://127.0.0.1:9"), std::string::npos) << r.error;
  EXPECT_TRUE(job.progress().finished);
  fs::remove_all(cache);
}

TEST(PullJob, OfflineWithoutTheModelSaysHowToGetIt) {
  const fs::path cache = temp_folder("offline");
  hub::PullOptions o;
  o.ref = hub::parse_repo_ref("org/x");
  o.cache = cache;
  o.offline = true;
  hub::PullJob job(o);
  EXPECT_NE(job.run().error.find("unset HF_HUB_OFFLINE"), std::string::npos);
  fs::remove_all(cache);
}

}  // namespace
