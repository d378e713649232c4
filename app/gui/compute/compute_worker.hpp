// compute_worker.hpp: the engine on a background thread, so that a recompute
// (hundreds of milliseconds at T = 1024) never stalls a frame.
//
// The UI posts jobs; only the newest pending job is kept (a slider drag
// posts one job per frame and the worker runs the latest). Every job carries
// a version, and so does its result; the UI adopts a result only when its
// version is the newest it requested (AppState::recompute_if_dirty), so a
// stale trace is never shown as current. A result the worker already knows
// to be stale (a newer job is waiting) is dropped on the worker thread, so at
// most two traces are alive at once: the one on screen and the one being
// computed.
//
// Memory: freed trace buffers are kept for the next run (warm pages make a
// recompute during a slider drag faster), so the process's resident memory
// would otherwise stay at its high-water mark and creep up: 817 MB after
// seven drags end to end at T = 1024 with 12 heads, for ~560 MB in use
// (docs/PERFORMANCE.md). Once a new trace is on screen, the UI asks the worker
// to hand the kept memory back (release_when_idle); the worker does so only
// after kReleaseDelay without a new job, so a drag in progress keeps its
// warm pages.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "attnscope/analysis/diagnose.hpp"
#include "attnscope/attention/attention.hpp"
#include "attnscope/base/config.hpp"
#include "attnscope/base/trace.hpp"
#include "compute/model_job.hpp"

namespace attnscope::gui {

// What to run. Precondition: validated (core::validate, and
// core::validate_parameters when explicit_parameters is set), unless `model`
// is set: then a real model runs and config, inputs and parameters are unused.
struct ComputeJob {
  core::Config config;
  core::Inputs inputs;
  std::shared_ptr<const core::Parameters> explicit_parameters;  // null: the seeded module
  std::uint64_t version = 0;                                    // increases with every post
  std::shared_ptr<const ModelJob> model;                        // null: the chapter-3 classes
};

// What a job produced: a trace, or why there is none.
struct ComputeResult {
  std::uint64_t version = 0;  // the job's version
  // Null when the run failed. Not a const object: its owner may drop stages
  // in place (drop_stages) once nobody else reads it.
  std::shared_ptr<core::Trace> trace;
  std::string error;  // "" on success, else one sentence
  // The trace's first unexpected NaN/inf, explained (core/diagnose.hpp);
  // found here, on the worker, while the whole trace is still there.
  std::optional<core::NonFiniteFinding> nonfinite;
  // A model job's overview of every head (its trace is one block of the run).
  std::shared_ptr<const ModelOverview> overview;
  // ... and its comparison with checkpoint B, when the job named one.
  std::shared_ptr<const ModelComparison> comparison;
};

// Runs one job: the seeded module through `cache`, or the explicit
// parameters, then looks for unexpected NaN/inf in the trace; or the model
// job (run_model_job) on `kept_run`, which a chapter-3 job frees. Catches
// out-of-memory and turns it into result.error.
ComputeResult run_job(const ComputeJob& job, core::ParameterCache& cache, KeptRun& kept_run);

// The bytes of matrix data a trace holds (~320 MiB at T = 1024, d = 768, 12 heads).
std::size_t trace_bytes(const core::Trace& trace);

// Frees every stage `keep` rejects, in place (the kept matrices' buffers stay
// where they are). While a new trace is computed, the UI keeps of a big trace on
// screen only what the current view reads, so that two full traces are
// never alive at once (AppState::keep_only_the_view).
void drop_stages(core::Trace& trace, const std::function<bool(const core::Stage&)>& keep);

class ComputeWorker {
 public:
  static constexpr std::chrono::milliseconds kReleaseDelay{500};

  // `notify` is called on the worker thread whenever a result becomes ready
  // (main passes glfwPostEmptyEvent, which wakes the idle loop).
  explicit ComputeWorker(std::function<void()> notify = {});
  // Stops the thread; a job that is running finishes first (the engine
  // cannot be interrupted), a pending one is dropped.
  ~ComputeWorker();
  ComputeWorker(const ComputeWorker&) = delete;
  ComputeWorker& operator=(const ComputeWorker&) = delete;

  // Queues `job`, replacing any job still waiting (coalescing).
  void post(ComputeJob job);
  // The finished result, if one is ready; it is handed over only once.
  std::optional<ComputeResult> take();
  // Blocks until nothing is pending or running (a result may be ready).
  void wait_idle();
  // True while a job is pending or running.
  bool busy() const;
  // True when a finished result waits for take() (set before the notify).
  bool has_result() const;
  // How many jobs the engine actually ran (coalesced ones are not counted).
  long jobs_run() const;
  // Asks the worker to return freed memory to the OS
  // (core::release_freed_memory) once it has been idle for kReleaseDelay.
  // A job posted before then cancels the request: its result will ask again.
  void release_when_idle();
  // How many times the worker released memory.
  long releases() const;

 private:
  void loop();

  std::function<void()> notify_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;  // a job was posted, or stop
  std::condition_variable idle_;  // a job finished
  std::optional<ComputeJob> pending_;
  std::optional<ComputeResult> result_;
  bool running_ = false;
  bool stop_ = false;
  long jobs_run_ = 0;
  bool release_requested_ = false;
  std::chrono::steady_clock::time_point release_at_;
  long releases_ = 0;
  std::thread thread_;  // last: starts after every other member exists
};

}  // namespace attnscope::gui
