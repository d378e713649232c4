// protocol.hpp: what the Hugging Face Hub's HTTP answers say, parsed without
// the network: the API's file list, response headers, a file's metadata.
//
//   {endpoint}/api/models/{repo}/revision/{revision}
//       JSON: "sha" (the commit), "siblings": [{"rfilename": "config.json"}, ...]
//   {endpoint}/{repo}/resolve/{commit}/{file}
//       a small file: 200, ETag "<git blob sha1>", X-Repo-Commit
//       an LFS file:  302 to the CDN, X-Linked-Etag "<sha256>", X-Linked-Size,
//                     X-Repo-Commit (huggingface_hub prefers X-Linked-Etag
//                     over ETag, and X-Linked-Size over Content-Length)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnscope::core::hub {

// The API's answer for one revision.
struct RepoListing {
  std::string commit;              // "sha": 40 hex digits
  std::vector<std::string> files;  // "siblings"[].rfilename, in the server's order
};

// Parses the API's JSON (`source` names it in errors). Throws ParseError when
// it is not JSON, has no 40-hex-digit "sha", or "siblings" is not a list of
// objects with a string "rfilename". File names are not checked here
// (unsafe_file_name does).
RepoListing parse_repo_listing(std::string_view json, std::string_view source);

// One HTTP response's status and headers (the last response of a redirect
// chain when redirects were followed).
struct ResponseHead {
  int status = 0;                                            // 0: no status line yet
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
  // The value of header `name` (any case), the last one if repeated.
  std::optional<std::string> get(std::string_view name) const;
};

// Adds one raw header line as libcurl's header callback gives it ("Name:
// value\r\n"). A status line ("HTTP/1.1 302 Found") starts a new response and
// clears the headers; the blank line at the end is ignored, and so are lines
// that are neither (never throws).
void add_header_line(std::string_view line, ResponseHead& head);

// What a resolve response says of a file.
struct FileMeta {
  std::string etag;                   // normalized: no W/, no quotes
  std::string commit;                 // X-Repo-Commit ("" when absent)
  std::optional<std::uint64_t> size;  // X-Linked-Size, else Content-Length of a non-redirect
  std::string location;               // Location of a redirect ("" when none)
  bool lfs() const;                   // the etag is a sha256 (64 hex digits)
};
FileMeta file_meta(const ResponseHead& head);

// An ETag without its weak marker and quotes: W/"abc" -> abc.
std::string normalize_etag(std::string_view etag);

// "bytes 100-199/1000" -> {100, 199, 1000}; total nullopt for "/*".
struct ContentRange {
  std::uint64_t first = 0, last = 0;
  std::optional<std::uint64_t> total;
};
std::optional<ContentRange> parse_content_range(std::string_view value);

// A decimal size ("1234") or nullopt for anything else (signs, spaces, overflow).
std::optional<std::uint64_t> parse_size(std::string_view text);

}  // namespace attnscope::core::hub
