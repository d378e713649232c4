// pull.hpp: fetch a model from the Hugging Face Hub into the cache
// (hub/cache.hpp), with progress, cancel, resume and checks.
//
//   hub::PullJob job(hub::pull_options("openai-community/gpt2"));
//   std::thread worker([&] { job.run(); });   // blocking; any thread
//   while (!job.wait_for(std::chrono::milliseconds(200)))
//     show(job.progress());                   // a snapshot, any thread
//   worker.join();
//   const hub::PullResult& r = job.result();  // r.snapshot or r.error
//
// What a pull does, in order: list the revision's files (the API), keep the
// ones a model needs (is_model_file), refuse names that would leave the
// folder, ask each file's ETag and size (HEAD), check free space; then for
// each blob not yet in the cache, holding the lock huggingface_hub takes on
// it (<cache>/.locks/models--org--name/<etag>.lock, flock), so that a second
// pull of the same blob waits for the first: download it into
// blobs/<etag>.incomplete (resumed with Range), check its size and ETag (an
// LFS file's sha256, a small file's git blob sha1), rename it to
// blobs/<etag>. Then link snapshots/<commit>/<file> and write
// refs/<revision> last. A pull that stops early leaves no snapshot link or
// ref that looks complete; only partial blobs, which the next pull resumes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/hub/cache.hpp"

namespace attnscope::core::hub {

struct PullOptions {
  RepoRef ref;                  // the model and revision
  std::string endpoint;         // "https://huggingface.co" or a mirror (no trailing '/')
  std::string token;            // sent as "Authorization: Bearer" to the endpoint ("": none)
  std::filesystem::path cache;  // the cache root (cache_root())
  bool offline = false;         // the cache only, no network
  int connect_timeout_seconds = 15;
  int stall_seconds = 30;  // give up when no byte arrives for this long
  int attempts = 3;        // per file, while each attempt brings bytes
};

// Options for `ref` from the environment as huggingface_hub reads it:
// HF_ENDPOINT (else https://huggingface.co; `endpoint` wins when not empty),
// HF_TOKEN (else the file $HF_TOKEN_PATH, else $HF_HOME/token), HF_HUB_OFFLINE
// (1/true/yes/on), the cache root of cache_root().
PullOptions pull_options(const RepoRef& ref, const std::string& endpoint = "");

enum class FileState {
  Queued,       // not started
  Waiting,      // another pull (attnscope's or Python's) holds its lock
  Cached,       // its blob was already in the cache
  Downloading,  // bytes arriving
  Checking,     // size and hash being checked
  Done,         // fetched and checked
  Failed,
};

struct FileProgress {
  std::string name;                    // "model.safetensors"
  std::uint64_t done = 0;              // bytes received (a resumed partial file included)
  std::optional<std::uint64_t> total;  // from the server, when it said
  FileState state = FileState::Queued;
};

// A consistent copy of a pull's progress, taken under the job's lock.
struct PullProgress {
  std::string phase;  // "listing files", "asking sizes", "downloading", "linking", "done"
  std::vector<FileProgress> files;
  std::uint64_t done = 0;       // bytes received over all files
  std::uint64_t total = 0;      // bytes over all files whose size is known
  double bytes_per_second = 0;  // over the last few seconds
  double seconds_left = -1;     // -1: unknown
  bool finished = false;
};

struct PullResult {
  bool ok = false;
  bool cancelled = false;
  std::filesystem::path snapshot;  // snapshots/<commit>, what Gpt2Model::load takes
  std::string commit;
  std::string error;                    // one line: the problem and what to do
  std::uint64_t bytes_transferred = 0;  // file bytes received (0 for a complete cached model)
  int files_fetched = 0;
};

class PullJob {
 public:
  explicit PullJob(PullOptions options);
  PullJob(const PullJob&) = delete;
  PullJob& operator=(const PullJob&) = delete;

  // Runs the whole pull on the calling thread and returns its result (also
  // kept for result()). Never throws; call it once.
  const PullResult& run();
  // Asks run() to stop: a transfer under way ends within a second, its
  // partial file kept for the next pull. Any thread, any time.
  void cancel();
  bool cancel_requested() const { return cancel_.load(); }
  // A copy of the progress; any thread.
  PullProgress progress() const;
  // Blocks until run() has finished or `timeout` has passed; true when finished.
  bool wait_for(std::chrono::milliseconds timeout) const;
  // The result once run() has returned.
  const PullResult& result() const { return result_; }

 private:
  void execute();
  PullOptions options_;
  std::atomic<bool> cancel_{false};
  mutable std::mutex mutex_;
  mutable std::condition_variable finished_cv_;
  PullProgress progress_;
  std::vector<std::pair<double, std::uint64_t>> speed_samples_;  // (seconds, bytes received)
  std::uint64_t received_ = 0;
  PullResult result_;
  friend class PullRun;
};

}  // namespace attnscope::core::hub
