// http.hpp: the little of libcurl a pull needs (internal to the hub room).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "attnscope/hub/protocol.hpp"

namespace attnscope::core::hub {

struct HttpSettings {
  std::string token;  // Authorization: Bearer, to the endpoint's host only
  int connect_timeout_seconds = 15;
  int stall_seconds = 30;  // abort when under 1 byte/s for this long
};

// How a request ended.
struct HttpOutcome {
  int curl_code = 0;          // CURLcode; 0 is success
  std::string curl_error;     // libcurl's words for a failure
  ResponseHead head;          // the last response's status and headers
  std::string effective_url;  // after redirects
  bool cancelled = false;     // the cancel flag stopped it
  bool too_many_redirects = false;
  bool stalled = false;  // too slow for stall_seconds
  bool timed_out_connecting = false;
};

// Called with each chunk of a 200/206 body; false stops the transfer.
using BodySink = std::function<bool(const char* data, std::size_t size, const ResponseHead& head)>;

class Http {
 public:
  Http(HttpSettings settings, const std::atomic<bool>& cancel);
  ~Http();
  Http(const Http&) = delete;
  Http& operator=(const Http&) = delete;

  // HEAD `url`, following only redirects without a host (as huggingface_hub
  // does: a renamed repo); a redirect elsewhere (the CDN) is the answer.
  HttpOutcome head(const std::string& url);
  // GET `url` into memory, at most `max_bytes` (more is an error), every redirect followed.
  HttpOutcome get_text(const std::string& url, std::string& body, std::size_t max_bytes);
  // GET `url` from byte `from` on (a Range request when from > 0), every
  // redirect followed (at most 10), the body of a 200/206 given to `sink`.
  HttpOutcome get(const std::string& url, std::uint64_t from, const BodySink& sink);

 private:
  HttpOutcome perform(const std::string& url, bool head, bool follow, std::uint64_t from,
                      const BodySink* sink);
  HttpSettings settings_;
  const std::atomic<bool>& cancel_;
  void* curl_ = nullptr;  // CURL*, reused so connections are kept alive
};

// `s` percent-encoded for a URL path: unreserved characters (and '/' when
// keep_slash) as they are.
std::string url_escape(std::string_view s, bool keep_slash);

}  // namespace attnscope::core::hub
