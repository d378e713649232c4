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

#include <atomic>
#include <memory>

#if defined(ATTNSCOPE_HAVE_OPENMP)
#include <omp.h>
#endif

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

// The size of the next team the calling thread starts (omp_get_max_threads;
// 1 without OpenMP).
inline int team_size() {
#if defined(ATTNSCOPE_HAVE_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Items 0..count-1 shared out in `ranges` contiguous ranges, one per thread
// of a team: each thread runs its own range front to back, then helps with
// what is left of the others', one item at a time from each range's front.
// For memory-bound loops (an append's matrix-vector products): each thread
// streams through memory in order, as with a static schedule, but a thread
// that starts late or runs slow (another program on its core) is helped
// instead of waited for. Make one before the parallel region, with the
// team's size; call run() from every thread of it. Thread t owns range t;
// threads past the last range only help.
class RangeShare {
 public:
  RangeShare(int count, int ranges)
      : count_(count), ranges_(ranges < 1 ? 1 : ranges), taken_(new Taken[ranges_]) {}

  // fn(i, next_is_own): item i; next_is_own is true when item i + 1 is in
  // this thread's own range, so that it most likely runs it next and may
  // fetch it ahead.
  template <typename F>
  void run(F&& fn) {
#if defined(ATTNSCOPE_HAVE_OPENMP)
    const int me = omp_get_thread_num();
#else
    const int me = 0;
#endif
    for (int i = 0; i < ranges_; ++i) {
      const int r = (me + i) % ranges_;
      const int begin = static_cast<int>(static_cast<long long>(count_) * r / ranges_);
      const int end = static_cast<int>(static_cast<long long>(count_) * (r + 1) / ranges_);
      for (;;) {
        const int item = begin + taken_[r].n.fetch_add(1, std::memory_order_relaxed);
        if (item >= end) break;
        fn(item, i == 0 && me < ranges_ && item + 1 < end);
      }
    }
  }

 private:
  struct alignas(64) Taken {  // a line each: the threads' counters do not share one
    std::atomic<int> n{0};
  };
  int count_, ranges_;
  std::unique_ptr<Taken[]> taken_;
};

}  // namespace attnscope::core::detail
