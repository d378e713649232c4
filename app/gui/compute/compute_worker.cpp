// compute_worker.cpp: see compute_worker.hpp.
#include "compute/compute_worker.hpp"

#include <algorithm>
#include <new>
#include <utility>
#include <vector>

#include "attnscope/analysis/memory.hpp"
#include "attnscope/io/weights.hpp"

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace attnscope::gui {

namespace {

constexpr int kWorkerNice = 5;  // 1/3 of a normal thread's CPU share when they compete

ComputeResult run_model(const ComputeJob& job, KeptRun& kept_run) {
  ComputeResult r;
  r.version = job.version;
  try {
    ModelResult m = run_model_job(*job.model, kept_run);
    r.trace = std::move(m.trace);
    r.overview = std::move(m.overview);
    r.comparison = std::move(m.comparison);
    r.nonfinite = core::find_nonfinite(*r.trace);
  } catch (const std::bad_alloc&) {
    r.error = "out of memory: try a shorter text or a smaller model";
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

}  // namespace

ComputeResult run_job(const ComputeJob& job, core::ParameterCache& cache, KeptRun& kept_run) {
  if (job.model) return run_model(job, kept_run);
  kept_run.reset();  // back to the chapter-3 classes: the model's run is not needed
  ComputeResult r;
  r.version = job.version;
  std::string problem = core::memory_problem(job.config, job.inputs);
  if (!problem.empty()) {
    // Memory this process freed but keeps for reuse is not counted as
    // available: hand it back and look again before refusing.
    core::release_freed_memory();
    problem = core::memory_problem(job.config, job.inputs);
  }
  if (!problem.empty()) {
    r.error = problem;  // the last trace stays on screen with this message
    return r;
  }
  try {
    r.trace = std::make_shared<core::Trace>(
        job.explicit_parameters
            ? core::run_with_explicit_parameters(job.config, job.inputs, *job.explicit_parameters)
            : core::run_attention(job.config, job.inputs, cache));
    r.nonfinite = core::find_nonfinite(*r.trace);
  } catch (const std::bad_alloc&) {
    r.error = "out of memory: try fewer tokens or smaller dimensions";
  } catch (const std::exception& e) {  // the engine's preconditions are checked; be safe anyway
    r.error = e.what();
  }
  return r;
}

std::size_t trace_bytes(const core::Trace& trace) {
  std::size_t n = 0;
  for (const core::Stage& s : trace.stages) n += static_cast<std::size_t>(s.data().size());
  return n * sizeof(float);
}

void drop_stages(core::Trace& trace, const std::function<bool(const core::Stage&)>& keep) {
  std::erase_if(trace.stages, [&](const core::Stage& s) { return !keep(s); });
  trace.stages.shrink_to_fit();
}

ComputeWorker::ComputeWorker(std::function<void()> notify) : notify_(std::move(notify)) {
  // Traces of hundreds of MB are freed and rebuilt on every recompute: keep
  // the pages for the next run instead of faulting them in again.
  core::keep_freed_memory_for_reuse();
  thread_ = std::thread([this] { loop(); });
}

ComputeWorker::~ComputeWorker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    pending_.reset();
  }
  wake_.notify_all();
  thread_.join();
}

void ComputeWorker::post(ComputeJob job) {
  std::optional<ComputeJob> replaced;  // freed outside the lock
  {
    std::lock_guard lock(mutex_);
    replaced = std::exchange(pending_, std::move(job));
  }
  wake_.notify_one();
}

std::optional<ComputeResult> ComputeWorker::take() {
  std::lock_guard lock(mutex_);
  return std::exchange(result_, std::nullopt);
}

void ComputeWorker::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return !pending_ && !running_; });
}

bool ComputeWorker::busy() const {
  std::lock_guard lock(mutex_);
  return pending_.has_value() || running_;
}

bool ComputeWorker::has_result() const {
  std::lock_guard lock(mutex_);
  return result_.has_value();
}

long ComputeWorker::jobs_run() const {
  std::lock_guard lock(mutex_);
  return jobs_run_;
}

void ComputeWorker::release_when_idle() {
  {
    std::lock_guard lock(mutex_);
    release_requested_ = true;
    release_at_ = std::chrono::steady_clock::now() + kReleaseDelay;
  }
  wake_.notify_one();
}

long ComputeWorker::releases() const {
  std::lock_guard lock(mutex_);
  return releases_;
}

void ComputeWorker::loop() {
#if defined(__linux__)
  // Below the UI thread: on a machine with few cores the engine (and the
  // OpenMP threads it starts from here, which inherit this) yields to the
  // frames, so that the window stays responsive while a trace is computed.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kWorkerNice);
#endif
  core::ParameterCache cache;  // this thread's: the cache is not thread-safe
  // The last model run, which the next model job extends or reuses (the UI
  // holds only its trace and overview: one run is alive at a time).
  KeptRun model_run;
  std::unique_lock lock(mutex_);
  const auto ready = [this] { return stop_ || pending_.has_value(); };
  for (;;) {
    if (release_requested_) {
      if (!wake_.wait_until(lock, release_at_, ready)) {
        // Idle since the request; a newer request moved the deadline: wait on.
        if (std::chrono::steady_clock::now() < release_at_) continue;
        release_requested_ = false;
        lock.unlock();
        core::release_freed_memory();
        lock.lock();
        ++releases_;
        continue;
      }
    } else {
      wake_.wait(lock, [&] { return ready() || release_requested_; });
      if (!ready()) continue;  // a release request: wait out its delay above
    }
    if (stop_) return;
    release_requested_ = false;  // this job's result asks again once it is on screen
    ComputeJob job = std::move(*pending_);
    pending_.reset();
    // A result nobody took is older than this job, hence stale: free it
    // before the new trace is built, so that two traces at most are alive.
    std::optional<ComputeResult> stale = std::exchange(result_, std::nullopt);
    running_ = true;
    lock.unlock();
    stale.reset();
    ComputeResult r = run_job(job, cache, model_run);
    job = ComputeJob{};  // the inputs copy goes now, not when the next job arrives
    lock.lock();
    const bool superseded = pending_.has_value();
    if (!superseded) result_ = std::move(r);
    lock.unlock();
    // A newer job is waiting: this trace would be dropped by the UI anyway;
    // free it here, off the UI thread and before the next run allocates.
    if (superseded)
      r = ComputeResult{};
    else if (notify_)
      notify_();
    lock.lock();
    running_ = false;
    ++jobs_run_;
    idle_.notify_all();
  }
}

}  // namespace attnscope::gui
