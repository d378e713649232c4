// cache.cpp: the Hugging Face cache's names and paths (hub/cache.hpp).
#include "attnscope/hub/cache.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "attnscope/base/errors.hpp"

namespace attnscope::core::hub {

namespace fs = std::filesystem;

namespace {

fs::path env_path(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? fs::path(v) : fs::path();
}

bool repo_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

bool good_repo_part(std::string_view part) {
  return !part.empty() && part.size() <= 96 && part != "." && part != ".." &&
         !part.starts_with("--") && part.find("--") == std::string_view::npos &&
         std::all_of(part.begin(), part.end(), repo_char) && part.front() != '.' &&
         part.front() != '-' && part.back() != '.' && part.back() != '-';
}

}  // namespace

fs::path cache_root() {
  if (fs::path p = env_path("HF_HUB_CACHE"); !p.empty()) return p;
  if (fs::path p = env_path("HF_HOME"); !p.empty()) return p / "hub";
  if (fs::path p = env_path("XDG_CACHE_HOME"); !p.empty()) return p / "huggingface" / "hub";
  fs::path home = env_path("HOME");
  if (home.empty()) home = ".";
  return home / ".cache" / "huggingface" / "hub";
}

RepoRef parse_repo_ref(std::string_view text) {
  const std::string shown(text);
  RepoRef ref;
  std::string_view repo = text;
  if (const auto at = text.find('@'); at != std::string_view::npos) {
    repo = text.substr(0, at);
    const std::string_view revision = text.substr(at + 1);
    if (revision.empty() || unsafe_file_name(revision))
      throw ParseError("'" + shown +
                       "': the revision after '@' must be a branch, tag or commit, e.g. "
                       "openai-community/gpt2@main");
    ref.revision = std::string(revision);
  }
  const auto slash = repo.find('/');
  const bool ok = slash == std::string_view::npos ? good_repo_part(repo)
                                                  : good_repo_part(repo.substr(0, slash)) &&
                                                        good_repo_part(repo.substr(slash + 1));
  if (!ok)
    throw ParseError("'" + shown +
                     "' is not a Hub model id: write org/name as on huggingface.co, e.g. "
                     "openai-community/gpt2 (letters, digits, '-', '_', '.'; optionally "
                     "@revision)");
  ref.repo = std::string(repo);
  return ref;
}

std::string repo_folder_name(std::string_view repo) {
  std::string out = "models--";
  for (char c : repo) {
    if (c == '/')
      out += "--";
    else
      out += c;
  }
  return out;
}

std::optional<std::string> unsafe_file_name(std::string_view name) {
  if (name.empty()) return "an empty name";
  if (name.front() == '/') return "an absolute path";
  for (char c : name) {
    if (c == '\\') return "a backslash";
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "a control character";
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t end = name.find('/', start);
    const std::string_view part =
        name.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (part.empty()) return "an empty folder name ('//' or a trailing '/')";
    if (part == "..") return "'..', which leaves the folder";
    if (part == ".") return "a '.' folder";
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return std::nullopt;
}

std::string blob_link_target(std::string_view file, std::string_view etag) {
  std::string out = "../../";
  for (char c : file)
    if (c == '/') out += "../";
  return out + "blobs/" + std::string(etag);
}

bool is_model_file(std::string_view name) {
  if (name.find('/') != std::string_view::npos) return false;  // see cache.hpp: top level only
  for (const char* exact :
       {"config.json", "model.safetensors.index.json", "tokenizer.json", "tokenizer_config.json",
        "vocab.json", "merges.txt", "generation_config.json", "special_tokens_map.json"})
    if (name == exact) return true;
  return name.ends_with(".safetensors") && name.size() > 12;
}

bool is_commit_hash(std::string_view s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::optional<std::string> read_ref(const fs::path& storage, std::string_view revision) {
  if (is_commit_hash(revision)) return std::string(revision);
  if (unsafe_file_name(revision)) return std::nullopt;
  std::ifstream in(storage / "refs" / fs::path(std::string(revision)));
  if (!in) return std::nullopt;
  std::string commit;
  std::getline(in, commit);
  while (!commit.empty() && (commit.back() == '\r' || commit.back() == ' ')) commit.pop_back();
  if (!is_commit_hash(commit)) return std::nullopt;
  return commit;
}

std::uint64_t folder_bytes(const fs::path& folder) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(folder, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    std::error_code ec2;
    if (fs::is_regular_file(it->path(), ec2)) {
      const auto size = fs::file_size(it->path(), ec2);
      if (!ec2) total += size;
    }
  }
  return total;
}

}  // namespace attnscope::core::hub
