// model_download.hpp: the Get a model window's state. A pull from the
// Hugging Face Hub (core hub::PullJob) runs on a thread of its own; the UI
// takes a copy of its progress once a frame and never waits for it, so the
// rest of the app stays live for the minutes a download can take.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "attnscope/hub/pull.hpp"

namespace attnscope::gui {

// A model the window offers by name, with what a learner should know before
// fetching it.
struct CatalogModel {
  std::string_view repo;     // "openai-community/gpt2"
  std::string_view title;    // "GPT-2 124M"
  std::string_view size;     // the weights' download size, "548 MB"
  std::string_view licence;  // "MIT"
  std::string_view note;     // one line: what it is
};
// The short list the window shows first (models attnscope opens today).
const std::vector<CatalogModel>& model_catalog();

// The commit a cached model's revision points at, with its snapshot folder,
// when every file the snapshot needs is there (a finished pull); nullopt
// when the model was never pulled or a pull stopped early.
struct CachedModel {
  std::string commit;
  std::string snapshot;  // what AppState::open_model takes
};
std::optional<CachedModel> cached_model(const core::hub::RepoRef& ref);
// A model argument that is no file or folder here but reads as a Hub repo id
// ("org/name[@revision]") whose model is not whole in the cache: its ref,
// for the window to fetch it. nullopt for anything else (a path, an id the
// cache holds), which the loader opens or explains.
std::optional<core::hub::RepoRef> uncached_repo(const std::string& model);

class ModelDownload {
 public:
  enum class State { Idle, Running, Done, Failed, Cancelled };

  ModelDownload() = default;
  // Cancels a pull still under way and waits for its thread (a transfer
  // ends within a second; its partial file stays for the next pull).
  ~ModelDownload();
  ModelDownload(const ModelDownload&) = delete;
  ModelDownload& operator=(const ModelDownload&) = delete;

  // Starts pulling `ref` with the environment's endpoint, token, offline
  // flag and cache (hub::pull_options), or `endpoint` when not empty. A pull
  // under way is cancelled first.
  void start(const core::hub::RepoRef& ref, const std::string& endpoint = "");
  // Asks the pull to stop; poll() says Cancelled once it has.
  void cancel();
  // Once a frame: takes a copy of the progress, and the result when the
  // pull has finished (its thread joined). Never blocks for long.
  void poll();
  // Waits until the pull has finished (tests), then polls.
  void wait();

  State state() const { return state_; }
  bool running() const { return state_ == State::Running; }
  const core::hub::RepoRef& ref() const { return ref_; }
  const core::hub::PullProgress& progress() const { return progress_; }
  const core::hub::PullResult& result() const { return result_; }
  // Seconds since start() (while running) or the pull's length (after).
  double seconds() const;

 private:
  void finish();
  core::hub::RepoRef ref_;
  std::unique_ptr<core::hub::PullJob> job_;
  std::thread thread_;
  State state_ = State::Idle;
  core::hub::PullProgress progress_;
  core::hub::PullResult result_;
  double started_ = 0, ended_ = 0;  // steady clock, seconds
};

// "1.2 MB", "548 MB", "1.52 GB": bytes for people (powers of 1000, as the
// Hub shows sizes).
std::string byte_size_text(double bytes);
// "about 2 min left", "12 s left"; "" when unknown (negative).
std::string time_left_text(double seconds);

}  // namespace attnscope::gui
