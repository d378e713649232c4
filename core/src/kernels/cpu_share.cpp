// cpu_share.cpp: sizing the engine's OpenMP teams to the CPUs that are free
// (cpu_share.hpp).
#include "kernels/cpu_share.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(ATTNSCOPE_HAVE_OPENMP)
#include <omp.h>
#endif

namespace attnscope::core::detail {

namespace {

// A small /proc file into buf (NUL-terminated); false where it cannot be read.
bool read_small_file(const char* path, char* buf, std::size_t size) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::read(fd, buf, size - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  return true;
}

// True when thread `tid` of this process is running or waiting for a CPU
// (state R in its stat line: the field after the command's closing ')').
bool thread_runnable(long tid) {
  char path[64], buf[512];
  std::snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
  if (!read_small_file(path, buf, sizeof buf)) return false;
  const char* close = std::strrchr(buf, ')');
  return close && close[1] == ' ' && close[2] == 'R';
}

long this_tid() { return static_cast<long>(::syscall(SYS_gettid)); }

// Per calling thread: the thread ids of its OpenMP workers (libgomp keeps
// the same pool threads for one master's teams), and the last sample.
struct Sampler {
  int cap = 0;  // the team size the workers were recorded for
  std::vector<long> workers;
  std::chrono::steady_clock::time_point when{};
  int threads = 0;
};

constexpr auto kResample = std::chrono::milliseconds(4);

thread_local int share_depth = 0;  // ThreadShares alive on this thread: the outer one decides

}  // namespace

int runnable_in_loadavg(const char* line) {
  // Three load averages, then "running/total".
  const char* p = line;
  for (int field = 0; field < 3; ++field) {
    p = std::strchr(p, ' ');
    if (!p) return -1;
    while (*p == ' ') ++p;
  }
  char* end = nullptr;
  const long running = std::strtol(p, &end, 10);
  if (end == p || *end != '/' || running < 0 || running > 1 << 20) return -1;
  return static_cast<int>(running);
}

int free_threads_from(int runnable, int own_spinning, int cpus, int cap) {
  cap = std::max(cap, 1);
  if (runnable < 0) return cap;                                 // unknown: the whole team
  const int others = std::max(runnable - 1 - own_spinning, 0);  // 1: the caller
  return std::clamp(std::max(cpus, 1) - others, 1, cap);
}

int free_threads() {
#if defined(ATTNSCOPE_HAVE_OPENMP)
  if (omp_in_parallel()) return 1;
  thread_local Sampler s;
  const int cap = omp_get_max_threads();
  if (cap <= 1) return 1;
  const auto now = std::chrono::steady_clock::now();
  if (s.cap == cap && s.threads > 0 && now - s.when < kResample) return s.threads;
  if (s.cap != cap) {  // record the workers' ids once per team size
    s.workers.assign(static_cast<std::size_t>(cap), 0);
    long* ids = s.workers.data();  // the caller's: inside the region `s` is each thread's own
#pragma omp parallel num_threads(cap)
    ids[omp_get_thread_num()] = this_tid();
    s.workers.erase(s.workers.begin());  // the caller itself
    s.cap = cap;
  }
  char buf[128];
  int runnable = -1;
  if (read_small_file("/proc/loadavg", buf, sizeof buf)) runnable = runnable_in_loadavg(buf);
  int spinning = 0;
  if (runnable > 0)
    for (long tid : s.workers) spinning += tid > 0 && thread_runnable(tid) ? 1 : 0;
  s.threads = free_threads_from(runnable, spinning, omp_get_num_procs(), cap);
  s.when = now;
  return s.threads;
#else
  return 1;
#endif
}

ThreadShare::ThreadShare() {
#if defined(ATTNSCOPE_HAVE_OPENMP)
  previous_ = threads_ = omp_get_max_threads();
  if (share_depth++ == 0) threads_ = free_threads();
  if (threads_ != previous_) omp_set_num_threads(threads_);
#endif
}

ThreadShare::~ThreadShare() {
#if defined(ATTNSCOPE_HAVE_OPENMP)
  --share_depth;
  if (threads_ != previous_) omp_set_num_threads(previous_);
#endif
}

}  // namespace attnscope::core::detail
