// cpu_share.hpp: how many threads the engine's next parallel phase should
// use: OpenMP's team size, less the CPUs that other programs keep busy now.
// Internal to attnscope_core.
//
// On a 2-core machine with one other busy process, a team of two loses more
// than it gains: the thread that shares its core with the other process runs
// at half speed, and its partner waits for it at every barrier (spinning in
// libgomp, taking the core the other process wanted). One thread on the free
// core is faster. So each phase asks the kernel how many threads are
// runnable now (/proc/loadavg), takes away its own, and sizes its team to
// the CPUs left over; with nothing else running that is the whole team.
#pragma once

namespace attnscope::core::detail {

// The number of CPUs this process may use (its affinity, capped by OpenMP's
// thread limit for the calling thread) that no other program's thread is
// running on now; at least 1. Sampled at most every few milliseconds per
// calling thread; without /proc, the whole team.
int free_threads();

// The arithmetic of free_threads, apart for tests: `runnable` threads on the
// whole machine now (the caller among them), `own_spinning` of them the
// caller's idle OpenMP workers, `cpus` this process may use, `cap` OpenMP's
// limit.
int free_threads_from(int runnable, int own_spinning, int cpus, int cap);

// The runnable count in a /proc/loadavg line ("0.5 0.4 0.3 3/456 789": 3),
// or -1 where the line is not of that form.
int runnable_in_loadavg(const char* line);

// For its lifetime, OpenMP regions started by the calling thread use
// free_threads() threads; the team size is restored afterwards, so code
// outside it sees the user's setting. Not for use inside a parallel region.
class ThreadShare {
 public:
  ThreadShare();
  ~ThreadShare();
  ThreadShare(const ThreadShare&) = delete;
  ThreadShare& operator=(const ThreadShare&) = delete;
  int threads() const { return threads_; }

 private:
  int previous_ = 1;
  int threads_ = 1;
};

}  // namespace attnscope::core::detail
