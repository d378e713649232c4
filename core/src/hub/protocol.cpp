// protocol.cpp: the Hub's API JSON and response headers, parsed (see
// hub/protocol.hpp). Everything here takes bytes a server chose: nothing
// is trusted, nothing throws but ParseError.
#include "attnscope/hub/protocol.hpp"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "attnscope/base/errors.hpp"
#include "attnscope/hub/sha256.hpp"

namespace attnscope::core::hub {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

bool is_commit(std::string_view s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

RepoListing parse_repo_listing(std::string_view json, std::string_view source) {
  const std::string where(source);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception&) {
    throw ParseError(where +
                     ": the server's file list is not JSON (is the endpoint a "
                     "Hugging Face Hub?)");
  }
  if (!j.is_object()) throw ParseError(where + ": the server's file list is not a JSON object");
  RepoListing out;
  const auto sha = j.find("sha");
  if (sha == j.end() || !sha->is_string() || !is_commit(sha->get_ref<const std::string&>()))
    throw ParseError(where + ": the server's file list has no commit (\"sha\": 40 hex digits)");
  out.commit = sha->get<std::string>();
  const auto siblings = j.find("siblings");
  if (siblings == j.end() || !siblings->is_array())
    throw ParseError(where + ": the server's file list has no \"siblings\" list");
  for (const auto& s : *siblings) {
    const auto name = s.is_object() ? s.find("rfilename") : s.end();
    if (!s.is_object() || name == s.end() || !name->is_string())
      throw ParseError(where + ": an entry of \"siblings\" has no string \"rfilename\"");
    out.files.push_back(name->get<std::string>());
  }
  return out;
}

std::optional<std::string> ResponseHead::get(std::string_view name) const {
  const std::string key = lower(name);
  for (auto it = headers.rbegin(); it != headers.rend(); ++it)
    if (it->first == key) return it->second;
  return std::nullopt;
}

void add_header_line(std::string_view line, ResponseHead& head) {
  line = trim(line);
  if (line.empty()) return;
  if (line.starts_with("HTTP/")) {
    head = ResponseHead{};
    const auto space = line.find(' ');
    if (space == std::string_view::npos) return;
    std::string_view code = line.substr(space + 1, 3);
    int status = 0;
    for (char c : code) {
      if (c < '0' || c > '9') return;
      status = status * 10 + (c - '0');
    }
    if (code.size() == 3) head.status = status;
    return;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return;
  head.headers.emplace_back(lower(trim(line.substr(0, colon))),
                            std::string(trim(line.substr(colon + 1))));
}

std::string normalize_etag(std::string_view etag) {
  etag = trim(etag);
  if (etag.starts_with("W/")) etag.remove_prefix(2);
  while (!etag.empty() && etag.front() == '"') etag.remove_prefix(1);
  while (!etag.empty() && etag.back() == '"') etag.remove_suffix(1);
  return std::string(etag);
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

bool FileMeta::lfs() const { return is_sha256_hex(etag); }

FileMeta file_meta(const ResponseHead& head) {
  FileMeta m;
  if (auto linked = head.get("x-linked-etag"))
    m.etag = normalize_etag(*linked);
  else if (auto etag = head.get("etag"))
    m.etag = normalize_etag(*etag);
  m.commit = head.get("x-repo-commit").value_or("");
  const bool redirect = head.status >= 300 && head.status < 400;
  if (redirect) m.location = head.get("location").value_or("");
  if (auto linked = head.get("x-linked-size"))
    m.size = parse_size(*linked);
  else if (!redirect)
    if (auto length = head.get("content-length")) m.size = parse_size(*length);
  return m;
}

std::optional<ContentRange> parse_content_range(std::string_view value) {
  value = trim(value);
  if (!value.starts_with("bytes ")) return std::nullopt;
  value.remove_prefix(6);
  const auto dash = value.find('-'), slash = value.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || dash > slash)
    return std::nullopt;
  ContentRange r;
  const auto first = parse_size(value.substr(0, dash));
  const auto last = parse_size(value.substr(dash + 1, slash - dash - 1));
  if (!first || !last || *last < *first) return std::nullopt;
  r.first = *first;
  r.last = *last;
  const std::string_view total = value.substr(slash + 1);
  if (total != "*") {
    r.total = parse_size(total);
    if (!r.total || *r.total <= r.last) return std::nullopt;
  }
  return r;
}

}  // namespace attnscope::core::hub
