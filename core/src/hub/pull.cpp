// pull.cpp: PullJob, a model fetched from the Hub into the cache
// (hub/pull.hpp).
//
// Sections
//   1. options from the environment
//   2. errors a person can act on, from HTTP outcomes
//   3. PullRun: list, ask, check space, download, link, ref
//   4. PullJob: progress, cancel, waiting
#include "attnscope/hub/pull.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "attnscope/base/errors.hpp"
#include "attnscope/formats/files.hpp"
#include "attnscope/hub/protocol.hpp"
#include "attnscope/hub/sha1.hpp"
#include "attnscope/hub/sha256.hpp"
#include "hub/feeder.hpp"
#include "hub/http.hpp"

namespace attnscope::core::hub {

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------
// 1. Options

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string first_line_of(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  if (in) std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
    line.pop_back();
  return line;
}

fs::path hf_home() {
  if (const std::string h = env("HF_HOME"); !h.empty()) return h;
  if (const std::string x = env("XDG_CACHE_HOME"); !x.empty()) return fs::path(x) / "huggingface";
  const std::string home = env("HOME");
  return fs::path(home.empty() ? "." : home) / ".cache" / "huggingface";
}

bool truthy(const std::string& v) {
  std::string l;
  for (char c : v) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return l == "1" || l == "true" || l == "yes" || l == "on";
}

std::string megabytes(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

}  // namespace

PullOptions pull_options(const RepoRef& ref, const std::string& endpoint) {
  PullOptions o;
  o.ref = ref;
  o.endpoint = !endpoint.empty() ? endpoint : env("HF_ENDPOINT");
  if (o.endpoint.empty()) o.endpoint = "https://huggingface.co";
  while (o.endpoint.size() > 1 && o.endpoint.back() == '/') o.endpoint.pop_back();
  o.token = env("HF_TOKEN");
  if (o.token.empty()) {
    const std::string path = env("HF_TOKEN_PATH");
    o.token = first_line_of(path.empty() ? hf_home() / "token" : fs::path(path));
  }
  o.offline = truthy(env("HF_HUB_OFFLINE"));
  o.cache = cache_root();
  return o;
}

namespace {

// ---------------------------------------------------------------------------
// 2. Errors

// A pull's end other than success: one line for a person.
struct Failure : std::runtime_error {
  Failure(const std::string& what, bool was_cancelled = false)
      : std::runtime_error(what), cancelled(was_cancelled) {}
  bool cancelled;
};

const char* kCancelled = "cancelled; the partial file is kept: pull again to resume";

// What went wrong with a request for `what` (a file name, or "the file
// list"), in words that say what to do.
[[noreturn]] void fail_http(const HttpOutcome& r, const std::string& what, const PullOptions& o,
                            bool token) {
  const std::string repo = o.ref.repo;
  const std::string code = r.head.get("x-error-code").value_or("");
  if (r.cancelled) throw Failure(kCancelled, true);
  if (r.too_many_redirects)
    throw Failure(what +
                  ": the server redirected more than 10 times (a redirect loop); try "
                  "again later, or check HF_ENDPOINT (" +
                  o.endpoint + ")");
  if (r.stalled)
    throw Failure(what + ": no data arrived for " + std::to_string(o.stall_seconds) +
                  " s; the partial file is kept: pull again to resume");
  if (r.curl_code != 0 && (r.head.status == 200 || r.head.status == 206))
    throw Failure(what + ": the connection dropped (" + r.curl_error +
                  "); the partial file is kept: pull again to resume");
  if (r.curl_code != 0)
    throw Failure("cannot reach " + o.endpoint + " (" + r.curl_error +
                  "): check the network or HF_ENDPOINT; HF_HUB_OFFLINE=1 uses the cache only");
  const std::string status = "HTTP " + std::to_string(r.head.status);
  if (code == "RepoNotFound" || (r.head.status == 404 && what == "the file list" && code.empty()))
    throw Failure(repo + ": no such model on " + o.endpoint + " (" + status +
                  "): check the name (org/name, as on huggingface.co)" +
                  (token ? "" : "; a private model also needs HF_TOKEN"));
  if (code == "RevisionNotFound")
    throw Failure(repo + " has no revision '" + o.ref.revision + "' (" + status +
                  "): name a branch, tag or commit of it, or leave out @revision");
  if (r.head.status == 401 || r.head.status == 403 || code == "GatedRepo")
    throw Failure(repo + ": the Hub refused access (" + status +
                  "): accept the licence at https://huggingface.co/" + repo + " and set HF_TOKEN" +
                  (token ? " (the token in use was refused: check it has read access)"
                         : " to a token from https://huggingface.co/settings/tokens"));
  if (r.head.status == 404)
    throw Failure(what + ": not found on the server (" + status + ") for " + repo + "@" +
                  o.ref.revision + "; pull again later, or report it to the model's authors");
  if (r.head.status == 429)
    throw Failure(what + ": the server asks to slow down (" + status +
                  "); wait a minute and pull again");
  if (r.head.status >= 500)
    throw Failure(what + ": the server failed (" + status + "); try again later");
  throw Failure(what + ": unexpected answer from the server (" + status + ")");
}

// ---------------------------------------------------------------------------
// 3. PullRun

struct Planned {
  std::string name;
  FileMeta meta;
  fs::path blob;
};

// How one GET of a file into its partial file ended.
struct Attempt {
  HttpOutcome outcome;
  std::uint64_t got = 0;
  bool bad_range = false;
  std::string write_error;
};

}  // namespace

class PullRun {
 public:
  PullRun(PullJob& job)
      : job_(job),
        o_(job.options_),
        http_(HttpSettings{o_.token, o_.connect_timeout_seconds, o_.stall_seconds}, job.cancel_),
        storage_(o_.cache / repo_folder_name(o_.ref.repo)) {}

  PullResult go();

 private:
  PullResult from_cache() const;
  std::vector<std::string> list();
  bool complete(const std::vector<std::string>& names) const;
  void ask_sizes(const std::vector<std::string>& names);
  void check_space() const;
  void fetch(std::size_t i);
  struct BlobLock {  // an flock on a blob's lock file, released when closed
    int fd = -1;
    BlobLock() = default;
    BlobLock(BlobLock&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
    BlobLock& operator=(BlobLock&&) = delete;
    ~BlobLock() {
      if (fd >= 0) ::close(fd);
    }
  };
  BlobLock lock_blob(std::size_t i);
  std::uint64_t check(const Planned& p, const fs::path& partial, Sha256& hash) const;
  Attempt download(std::size_t i, const fs::path& partial, std::uint64_t have, Sha256* hash);
  void link_and_ref();
  std::string file_url(const std::string& name) const {
    return o_.endpoint + "/" + o_.ref.repo + "/resolve/" + url_escape(commit_, false) + "/" +
           url_escape(name, true);
  }
  void check_cancel() const {
    if (job_.cancel_.load()) throw Failure(kCancelled, true);
  }
  void phase(const std::string& what);
  void file_state(std::size_t i, FileState s, std::optional<std::uint64_t> done = std::nullopt);
  void received(std::size_t i, std::uint64_t n);

  PullJob& job_;
  const PullOptions& o_;
  Http http_;
  fs::path storage_;
  std::string commit_;
  std::vector<Planned> files_;
  std::uint64_t transferred_ = 0;
  int fetched_ = 0;
};

void PullRun::phase(const std::string& what) {
  std::lock_guard lock(job_.mutex_);
  job_.progress_.phase = what;
}

void PullRun::file_state(std::size_t i, FileState s, std::optional<std::uint64_t> done) {
  std::lock_guard lock(job_.mutex_);
  FileProgress& f = job_.progress_.files[i];
  f.state = s;
  if (done) {
    job_.progress_.done += *done - f.done;
    f.done = *done;
  }
}

void PullRun::received(std::size_t i, std::uint64_t n) {
  using clock = std::chrono::steady_clock;
  static const auto epoch = clock::now();
  const double now = std::chrono::duration<double>(clock::now() - epoch).count();
  std::lock_guard lock(job_.mutex_);
  PullProgress& p = job_.progress_;
  p.files[i].done += n;
  p.done += n;
  job_.received_ += n;
  auto& samples = job_.speed_samples_;
  if (samples.empty() || now - samples.back().first >= 0.1) {
    samples.emplace_back(now, job_.received_);
    while (samples.size() > 2 && now - samples.front().first > 3.0) samples.erase(samples.begin());
  }
  const auto& [t0, b0] = samples.front();
  if (now - t0 > 0.05) p.bytes_per_second = static_cast<double>(job_.received_ - b0) / (now - t0);
  p.seconds_left = p.bytes_per_second > 0 && p.total >= p.done
                       ? static_cast<double>(p.total - p.done) / p.bytes_per_second
                       : -1;
}

PullResult PullRun::from_cache() const {
  const auto commit = read_ref(storage_, o_.ref.revision);
  const std::string name = o_.ref.repo + "@" + o_.ref.revision;
  std::error_code ec;
  if (!commit || !fs::exists(storage_ / "snapshots" / *commit / "config.json", ec))
    throw Failure("HF_HUB_OFFLINE is set and " + name + " is not in the cache (" +
                  storage_.string() + "): unset HF_HUB_OFFLINE to download it");
  PullResult r;
  r.ok = true;
  r.commit = *commit;
  r.snapshot = storage_ / "snapshots" / *commit;
  return r;
}

// The revision's commit and the files a model needs, names checked.
std::vector<std::string> PullRun::list() {
  phase("listing files");
  const std::string url = o_.endpoint + "/api/models/" + o_.ref.repo + "/revision/" +
                          url_escape(o_.ref.revision, false);
  std::string body;
  const HttpOutcome r = http_.get_text(url, body, 64u << 20);
  if (r.curl_code != 0 || r.head.status != 200)
    fail_http(r, "the file list", o_, !o_.token.empty());
  const RepoListing listing = parse_repo_listing(body, url);
  commit_ = listing.commit;
  std::vector<std::string> names;
  std::vector<std::string> others;
  for (const std::string& f : listing.files) {
    if (const auto why = unsafe_file_name(f))
      throw Failure(o_.ref.repo + ": the server's file list names '" + f + "', which has " + *why +
                    "; refusing it (is " + o_.endpoint + " a Hugging Face Hub?)");
    if (is_model_file(f))
      names.push_back(f);
    else if (f.ends_with(".bin") || f.ends_with(".h5") || f.ends_with(".pth") ||
             f.ends_with(".gguf") || f.ends_with(".msgpack") || f.ends_with(".ot"))
      others.push_back(f);
  }
  const auto has = [&](auto pred) { return std::any_of(names.begin(), names.end(), pred); };
  if (!has([](const std::string& n) { return n == "config.json"; }))
    throw Failure(o_.ref.repo + "@" + o_.ref.revision +
                  " has no config.json: it is not a transformers model attnscope can open");
  if (!has([](const std::string& n) { return n.ends_with(".safetensors"); }))
    throw Failure(o_.ref.repo + "@" + o_.ref.revision + " has no .safetensors weights" +
                  (others.empty() ? "" : " (only " + others.front() + ")") +
                  "; attnscope reads safetensors: pick a revision or a copy of the model that "
                  "has them");
  return names;
}

// Whether snapshots/<commit>/ already has every file, each link reaching its blob.
bool PullRun::complete(const std::vector<std::string>& names) const {
  std::error_code ec;
  const fs::path snap = storage_ / "snapshots" / commit_;
  for (const auto& n : names)
    if (!fs::is_regular_file(snap / n, ec)) return false;
  return true;
}

void PullRun::ask_sizes(const std::vector<std::string>& names) {
  phase("asking sizes");
  for (const std::string& name : names) {
    check_cancel();
    const HttpOutcome r = http_.head(file_url(name));
    const bool redirect = r.head.status >= 300 && r.head.status < 400;
    if (r.curl_code != 0 || (r.head.status != 200 && !redirect))
      fail_http(r, name, o_, !o_.token.empty());
    Planned p{name, file_meta(r.head), {}};
    if (p.meta.etag.empty() || unsafe_file_name(p.meta.etag) ||
        p.meta.etag.find('/') != std::string::npos)
      throw Failure(name + ": the server sent no usable ETag (is " + o_.endpoint +
                    " a Hugging Face Hub?)");
    p.blob = storage_ / "blobs" / p.meta.etag;
    files_.push_back(std::move(p));
  }
  std::lock_guard lock(job_.mutex_);
  PullProgress& pr = job_.progress_;
  pr.files.clear();
  pr.done = pr.total = 0;
  for (const Planned& p : files_) {
    pr.files.push_back({p.name, 0, p.meta.size, FileState::Queued});
    pr.total += p.meta.size.value_or(0);
  }
}

void PullRun::check_space() const {
  std::uint64_t need = 0;
  std::error_code ec;
  for (const Planned& p : files_) {
    if (fs::exists(p.blob, ec) || !p.meta.size) continue;
    const auto partial = fs::file_size(fs::path(p.blob.string() + ".incomplete"), ec);
    const std::uint64_t have = ec ? 0 : partial;
    if (*p.meta.size > have) need += *p.meta.size - have;
  }
  fs::path probe = storage_;
  while (!probe.empty() && !fs::exists(probe, ec)) probe = probe.parent_path();
  const fs::space_info space = fs::space(probe.empty() ? fs::path(".") : probe, ec);
  if (!ec && space.available < need)
    throw Failure("not enough free disk space for " + o_.ref.repo + ": it needs " +
                  megabytes(need) + " more, " + o_.cache.string() + " has " +
                  megabytes(space.available) +
                  " free; free some space or set HF_HUB_CACHE to a folder on another disk");
}

namespace {

// Feeds the bytes of `file` to `hash` (a partial file being resumed, or a
// small file being checked).
template <class Hash>
void hash_file(const fs::path& file, Hash& hash) {
  std::ifstream in(file, std::ios::binary);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    hash.update(buf.data(), static_cast<std::size_t>(in.gcount()));
  }
}

}  // namespace

// One GET of file i from byte `have` on, appended to `partial`: the bytes
// go to a BlobFeeder, which writes them in large pieces and hashes them on
// a second thread while this one receives the next.
Attempt PullRun::download(std::size_t i, const fs::path& partial, std::uint64_t have,
                          Sha256* hash) {
  const int fd = ::open(partial.c_str(),
                        O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (have ? 0 : O_TRUNC), 0644);
  if (fd < 0)
    throw Failure("cannot write " + partial.string() + ": " + std::strerror(errno) +
                  "; check the cache folder's permissions or set HF_HUB_CACHE");
  Attempt a;
  {
    BlobFeeder feeder(fd, hash);
    bool first = true;
    const BodySink sink = [&](const char* data, std::size_t n, const ResponseHead& h) {
      if (first) {  // nothing is queued yet: the file and hash are this thread's
        first = false;
        if (h.status == 200 && have > 0) {  // the Range was ignored: start over
          if (ftruncate(fd, 0) != 0) return false;
          if (hash) *hash = Sha256();
          file_state(i, FileState::Downloading, 0);
        } else if (h.status == 206) {
          const auto range = parse_content_range(h.get("content-range").value_or(""));
          if (!range || range->first != have) return !(a.bad_range = true);
        }
      }
      if (!feeder.add(data, n)) return false;
      received(i, n);
      transferred_ += n;
      a.got += n;
      return true;
    };
    a.outcome = http_.get(file_url(files_[i].name), have, sink);
    a.write_error = feeder.finish();
  }
  if (::close(fd) != 0 && a.write_error.empty()) a.write_error = std::strerror(errno);
  return a;
}

// The lock huggingface_hub takes on a blob while it writes it,
// <cache>/.locks/models--org--name/<etag>.lock, taken with flock as its
// filelock does: two pulls of one model (ours or Python's) never write the
// same partial file at once. A busy lock is tried again every 50 ms, so a
// cancel stops the wait well within a second.
PullRun::BlobLock PullRun::lock_blob(std::size_t i) {
  const fs::path folder = o_.cache / ".locks" / repo_folder_name(o_.ref.repo);
  fs::create_directories(folder);
  const fs::path file = folder / (files_[i].meta.etag + ".lock");
  BlobLock lock;
  lock.fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock.fd < 0)
    throw Failure("cannot open the lock " + file.string() + ": " + std::strerror(errno) +
                  "; check the cache folder's permissions or set HF_HUB_CACHE");
  bool waiting = false;
  while (::flock(lock.fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR)
      throw Failure("cannot lock " + file.string() + ": " + std::strerror(errno));
    if (!waiting) file_state(i, FileState::Waiting);
    waiting = true;
    check_cancel();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return lock;
}

// Checks a downloaded file against what the server announced: its size,
// and its ETag: an LFS file's sha256 (hashed as it arrived, into `hash`),
// a small file's git blob sha1 (hashed here from the file). Removes the
// file and throws when they differ; returns its size.
std::uint64_t PullRun::check(const Planned& p, const fs::path& partial, Sha256& hash) const {
  std::error_code ec;
  const std::uint64_t size = fs::file_size(partial, ec);
  if (p.meta.size && size != *p.meta.size) {
    fs::remove(partial, ec);
    throw Failure(p.name + ": " + std::to_string(size) + " bytes arrived, the server announced " +
                  std::to_string(*p.meta.size) + "; the partial file was removed: pull again");
  }
  std::string kind, got;
  if (p.meta.lfs()) {
    kind = "sha256";
    got = hash.hex();
  } else if (is_sha1_hex(p.meta.etag)) {
    kind = "git blob sha1";
    Sha1 sha1;
    start_git_blob(sha1, size);
    hash_file(partial, sha1);
    got = sha1.hex();
  }
  if (got != p.meta.etag && !kind.empty()) {
    fs::remove(partial, ec);
    throw Failure(p.name + ": the bytes that arrived have " + kind + " " + got.substr(0, 12) +
                  "..., not the " + p.meta.etag.substr(0, 12) +
                  "... the server announced; the file was removed: pull again (if it "
                  "repeats, the server or a proxy is damaging it)");
  }
  return size;
}

void PullRun::fetch(std::size_t i) {
  Planned& p = files_[i];
  const BlobLock lock = lock_blob(i);  // held until the blob is in place
  std::error_code ec;
  if (fs::exists(p.blob, ec)) {
    file_state(i, FileState::Cached, fs::file_size(p.blob, ec));
    return;
  }
  fs::create_directories(storage_ / "blobs");
  const fs::path partial = p.blob.string() + ".incomplete";
  const bool lfs = p.meta.lfs();
  Sha256 hash;
  for (int attempt = 1;; ++attempt) {
    check_cancel();
    std::uint64_t have = fs::exists(partial, ec) ? fs::file_size(partial, ec) : 0;
    if (ec || (p.meta.size && have > *p.meta.size)) {
      fs::remove(partial, ec);
      have = 0;
    }
    file_state(i, FileState::Downloading, have);
    hash = Sha256();
    if (lfs && have > 0) hash_file(partial, hash);
    if (p.meta.size && have == *p.meta.size) break;
    const Attempt a = download(i, partial, have, lfs ? &hash : nullptr);
    if (!a.write_error.empty())
      throw Failure("cannot write " + partial.string() + " (" + a.write_error +
                    "); free some disk space or set HF_HUB_CACHE, then pull again");
    const HttpOutcome& r = a.outcome;
    const bool body = r.head.status == 200 || r.head.status == 206;
    if (a.bad_range || r.head.status == 416) {  // the partial file cannot be continued
      fs::remove(partial, ec);
      if (attempt < o_.attempts) continue;
    }
    if (r.curl_code == 0 && body) break;
    const bool dropped = body && !r.cancelled && !r.stalled && a.got > 0;
    if (dropped && attempt < o_.attempts) continue;  // it was moving: resume now
    fail_http(r, p.name, o_, !o_.token.empty());
  }
  file_state(i, FileState::Checking);
  const std::uint64_t size = check(p, partial, hash);
  fs::rename(partial, p.blob);
  file_state(i, FileState::Done, size);
  ++fetched_;
}

// The snapshot's links (each made under a temporary name, then renamed over
// its place), then refs/<revision>: last, so that a pull that stops early
// never leaves a ref naming an incomplete snapshot.
void PullRun::link_and_ref() {
  phase("linking");
  const fs::path snap = storage_ / "snapshots" / commit_;
  std::error_code ec;
  for (const Planned& p : files_) {
    const fs::path link = snap / p.name;
    fs::create_directories(link.parent_path());
    const fs::path target = blob_link_target(p.name, p.meta.etag);
    if (fs::is_symlink(link, ec) && fs::read_symlink(link, ec) == target) continue;
    const fs::path tmp = link.string() + ".attnscope-link";
    fs::remove(tmp, ec);
    fs::create_symlink(target, tmp);
    fs::rename(tmp, link);
  }
  if (o_.ref.revision == commit_) return;
  if (read_ref(storage_, o_.ref.revision) == commit_) return;
  const fs::path ref = storage_ / "refs" / o_.ref.revision;
  fs::create_directories(ref.parent_path());
  write_file_atomic(ref, commit_, Overwrite::Replace);
}

PullResult PullRun::go() {
  PullResult r;
  try {
    if (o_.offline) return from_cache();
    const std::vector<std::string> names = list();
    check_cancel();
    if (complete(names)) {
      std::lock_guard lock(job_.mutex_);
      std::error_code ec;
      for (const auto& n : names) {
        const auto size = fs::file_size(storage_ / "snapshots" / commit_ / n, ec);
        job_.progress_.files.push_back({n, size, size, FileState::Cached});
        job_.progress_.done += size;
        job_.progress_.total += size;
      }
    } else {
      ask_sizes(names);
      check_space();
      phase("downloading");
      for (std::size_t i = 0; i < files_.size(); ++i) {
        check_cancel();
        fetch(i);
      }
    }
    check_cancel();
    link_and_ref();
    phase("done");
    r.ok = true;
    r.commit = commit_;
    r.snapshot = storage_ / "snapshots" / commit_;
  } catch (const Failure& f) {
    r.error = f.what();
    r.cancelled = f.cancelled;
  } catch (const ParseError& e) {
    r.error = e.what();
  } catch (const FileError& e) {
    r.error = e.what();
  } catch (const fs::filesystem_error& e) {
    r.error = "cannot write the cache (" + std::string(e.what()) +
              "); check the folder's permissions and free space, or set HF_HUB_CACHE";
  } catch (const std::exception& e) {
    r.error = std::string("unexpected failure: ") + e.what();
  }
  r.bytes_transferred = transferred_;
  r.files_fetched = fetched_;
  return r;
}

// ---------------------------------------------------------------------------
// 4. PullJob

PullJob::PullJob(PullOptions options) : options_(std::move(options)) {}

const PullResult& PullJob::run() {
  PullResult r;
  {
    PullRun pull(*this);
    r = pull.go();
  }
  std::lock_guard lock(mutex_);
  result_ = std::move(r);
  progress_.finished = true;
  if (result_.ok) progress_.phase = "done";
  finished_cv_.notify_all();
  return result_;
}

void PullJob::cancel() { cancel_.store(true); }

PullProgress PullJob::progress() const {
  std::lock_guard lock(mutex_);
  return progress_;
}

bool PullJob::wait_for(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return finished_cv_.wait_for(lock, timeout, [&] { return progress_.finished; });
}

}  // namespace attnscope::core::hub
