// http.cpp: requests on libcurl's easy interface for a pull (hub/http.hpp).
// One handle per Http, reused: the listing, the HEADs and the downloads go
// over kept-alive connections. The cancel flag is read in libcurl's progress
// callback, which it calls at least once a second even when no byte comes.
#include "hub/http.hpp"

#include <curl/curl.h>

#include <mutex>

namespace attnscope::core::hub {

namespace {

struct Transfer {
  ResponseHead head;
  const BodySink* sink = nullptr;
  bool sink_stopped = false;
  const std::atomic<bool>* cancel = nullptr;
};

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  add_header_line(std::string_view(data, size * count), t->head);
  return size * count;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  if (t->head.status != 200 && t->head.status != 206) return n;  // an error page: not the file
  if (t->sink && !(*t->sink)(data, n, t->head)) {
    t->sink_stopped = true;
    return 0;
  }
  return n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<Transfer*>(user)->cancel->load() ? 1 : 0;
}

// "http://host:port" of an absolute URL ("" when it has none).
std::string origin_of(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  const auto path = url.find('/', scheme + 3);
  return url.substr(0, path);
}

}  // namespace

std::string url_escape(std::string_view s, bool keep_slash) {
  static const char digits[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += ch;
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

Http::Http(HttpSettings settings, const std::atomic<bool>& cancel)
    : settings_(std::move(settings)), cancel_(cancel) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = curl_easy_init();
}

Http::~Http() {
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

HttpOutcome Http::perform(const std::string& url, bool head, bool follow, std::uint64_t from,
                          const BodySink* sink) {
  HttpOutcome out;
  CURL* c = static_cast<CURL*>(curl_);
  if (!c) {
    out.curl_code = CURLE_FAILED_INIT;
    out.curl_error = "libcurl could not start";
    return out;
  }
  Transfer t;
  t.sink = sink;
  t.cancel = &cancel_;
  char error[CURL_ERROR_SIZE] = {};
  curl_easy_reset(c);
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "attnscope/" ATTNSCOPE_VERSION);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOBODY, head ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, follow ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, static_cast<long>(settings_.connect_timeout_seconds));
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(settings_.stall_seconds));
  curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 512L * 1024);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  curl_slist* headers = nullptr;
  // Not sent on to another host after a redirect (libcurl drops it there).
  if (!settings_.token.empty())
    headers = curl_slist_append(headers, ("Authorization: Bearer " + settings_.token).c_str());
  if (from > 0)
    headers = curl_slist_append(headers, ("Range: bytes=" + std::to_string(from) + "-").c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  const CURLcode code = curl_easy_perform(c);
  curl_slist_free_all(headers);
  out.curl_code = static_cast<int>(code);
  out.head = std::move(t.head);
  char* effective = nullptr;
  if (curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &effective) == CURLE_OK && effective)
    out.effective_url = effective;
  out.cancelled = code == CURLE_ABORTED_BY_CALLBACK;
  out.too_many_redirects = code == CURLE_TOO_MANY_REDIRECTS;
  out.stalled = code == CURLE_OPERATION_TIMEDOUT && out.head.status != 0;
  out.timed_out_connecting = code == CURLE_OPERATION_TIMEDOUT && out.head.status == 0;
  if (code != CURLE_OK) out.curl_error = error[0] ? error : curl_easy_strerror(code);
  if (t.sink_stopped) out.curl_error = "stopped by the reader";
  return out;
}

HttpOutcome Http::head(const std::string& url) {
  std::string at = url;
  for (int hop = 0; hop <= 10; ++hop) {
    HttpOutcome out = perform(at, true, false, 0, nullptr);
    const bool redirect = out.head.status >= 300 && out.head.status < 400;
    const std::string location = out.head.get("location").value_or("");
    if (out.curl_code != 0 || !redirect || location.empty() || location[0] != '/' ||
        (location.size() > 1 && location[1] == '/'))
      return out;
    at = origin_of(at) + location;  // a redirect on the same host: follow it
  }
  HttpOutcome loop;
  loop.curl_code = CURLE_TOO_MANY_REDIRECTS;
  loop.too_many_redirects = true;
  loop.curl_error = "more than 10 redirects";
  return loop;
}

HttpOutcome Http::get_text(const std::string& url, std::string& body, std::size_t max_bytes) {
  std::string text;
  BodySink collect = [&](const char* data, std::size_t size, const ResponseHead&) {
    if (text.size() + size > max_bytes) return false;
    text.append(data, size);
    return true;
  };
  HttpOutcome out = perform(url, false, true, 0, &collect);
  body = std::move(text);
  return out;
}

HttpOutcome Http::get(const std::string& url, std::uint64_t from, const BodySink& sink) {
  return perform(url, false, true, from, &sink);
}

}  // namespace attnscope::core::hub
