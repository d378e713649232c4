// test_cpu_share.cpp: the engine sizes its thread teams to the CPUs that
// other programs leave free.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>
#include <vector>

#include "kernels/cpu_share.hpp"

#if defined(ATTNSCOPE_HAVE_OPENMP)
#include <omp.h>
#endif

namespace attnscope::core::detail {
namespace {

TEST(CpuShare, ReadsTheRunnableCountOfLoadavg) {
  EXPECT_EQ(runnable_in_loadavg("0.52 0.41 0.30 3/456 7890\n"), 3);
  EXPECT_EQ(runnable_in_loadavg("12.00 8.10 4.00 17/1024 1"), 17);
  EXPECT_EQ(runnable_in_loadavg("0.00  0.00  0.00  1/90 5"), 1);  // extra spaces
  EXPECT_EQ(runnable_in_loadavg(""), -1);
  EXPECT_EQ(runnable_in_loadavg("0.5 0.4 0.3"), -1);
  EXPECT_EQ(runnable_in_loadavg("0.5 0.4 0.3 x/5 1"), -1);
  EXPECT_EQ(runnable_in_loadavg("0.5 0.4 0.3 7 1"), -1);  // no '/'
}

TEST(CpuShare, LeavesTheCpusOthersUseToThem) {
  // Alone (only the caller runnable): the whole team.
  EXPECT_EQ(free_threads_from(1, 0, 2, 2), 2);
  // The caller's own spinning workers are not others.
  EXPECT_EQ(free_threads_from(2, 1, 2, 2), 2);
  // One other busy program on two CPUs: one thread.
  EXPECT_EQ(free_threads_from(2, 0, 2, 2), 1);
  EXPECT_EQ(free_threads_from(3, 1, 2, 2), 1);
  // A build on both CPUs: never fewer than one.
  EXPECT_EQ(free_threads_from(9, 0, 2, 2), 1);
  // Eight CPUs, three others: five, but never past OpenMP's limit.
  EXPECT_EQ(free_threads_from(4, 0, 8, 8), 5);
  EXPECT_EQ(free_threads_from(4, 0, 8, 4), 4);
  // Unknown load: the whole team.
  EXPECT_EQ(free_threads_from(-1, 0, 2, 2), 2);
  EXPECT_EQ(free_threads_from(1, 0, 2, 0), 1);
}

#if defined(ATTNSCOPE_HAVE_OPENMP)
// The team follows the machine: with as many other busy processes as this
// process may use CPUs, the engine runs on one thread, and the caller's
// setting comes back when the share ends.
TEST(CpuShare, AThreadShareGivesWayToBusyProcessesAndRestores) {
  const int cap = omp_get_max_threads();
  {
    const ThreadShare share;
    EXPECT_GE(share.threads(), 1);
    EXPECT_LE(share.threads(), cap);
    EXPECT_EQ(omp_get_max_threads(), share.threads());
    const ThreadShare inner;  // nested: decided by the outer one
    EXPECT_EQ(inner.threads(), share.threads());
  }
  EXPECT_EQ(omp_get_max_threads(), cap);
  if (cap < 2 || omp_get_num_procs() < 2) GTEST_SKIP() << "one CPU: nothing to share";
  std::vector<pid_t> busy;
  for (int i = 0; i < omp_get_num_procs(); ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      volatile unsigned long spins = 0;  // volatile: a loop with an effect, kept by the compiler
      for (;;) spins = spins + 1;
    }
    busy.push_back(pid);
  }
  usleep(200000);  // the spinners are running
  int ones = 0;
  for (int i = 0; i < 5; ++i) {
    usleep(5000);  // past the sampler's interval
    ones += free_threads() == 1 ? 1 : 0;
  }
  for (pid_t pid : busy) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  EXPECT_GE(ones, 4) << "with every CPU busy the engine should run on one thread";
}
#endif

// Every item once, for counts and range counts across each other's edges
// (fewer items than ranges, uneven splits), with teams smaller than, equal
// to and larger than the number of ranges; next_is_own only where the next
// item is in the same range and the thread is that range's owner.
TEST(CpuShare, ARangeShareRunsEveryItemOnceAndSaysWhichNextIsOwn) {
  std::vector<int> counts;
  for (int count = 0; count <= 20; ++count) counts.push_back(count);
  for (int count : {31, 32, 33, 47, 48, 49, 63, 64, 65}) counts.push_back(count);
  for (int count : counts)
    for (int ranges : {1, 2, 3, 4, 5, 8})
      for (int team = 1; team <= 3; ++team) {
        std::vector<int> runs(static_cast<std::size_t>(count), 0);
        std::vector<int> bad_hint(static_cast<std::size_t>(count), 0);
        RangeShare share(count, ranges);
        auto range_of = [&](int i) {
          for (int r = 0; r < ranges; ++r)
            if (i < static_cast<int>(static_cast<long long>(count) * (r + 1) / ranges)) return r;
          return -1;
        };
#pragma omp parallel num_threads(team)
        share.run([&](int i, bool next_is_own) {
          // Each item is written by the one thread that claimed it.
          runs[static_cast<std::size_t>(i)] += 1;
#if defined(ATTNSCOPE_HAVE_OPENMP)
          const int me = omp_get_thread_num();
#else
          const int me = 0;
#endif
          if (next_is_own &&
              (i + 1 >= count || range_of(i + 1) != range_of(i) || range_of(i) != me))
            bad_hint[static_cast<std::size_t>(i)] = 1;
        });
        for (int i = 0; i < count; ++i) {
          ASSERT_EQ(runs[static_cast<std::size_t>(i)], 1)
              << "item " << i << " of " << count << ", " << ranges << " ranges, team " << team;
          ASSERT_EQ(bad_hint[static_cast<std::size_t>(i)], 0)
              << "item " << i << " of " << count << ", " << ranges << " ranges, team " << team;
        }
      }
}

#if defined(ATTNSCOPE_HAVE_OPENMP)
// A thread held up at its first item (as by another program on its core)
// is helped: the other runs the rest of the held thread's range.
TEST(CpuShare, ARangeShareHelpsAThreadThatIsHeldUp) {
  constexpr int kCount = 20;
  std::vector<int> by(kCount, -1);
  RangeShare share(kCount, 2);
#pragma omp parallel num_threads(2)
  {
    if (omp_get_num_threads() == 2)
      share.run([&](int i, bool) {
        by[static_cast<std::size_t>(i)] = omp_get_thread_num();
        if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      });
  }
  if (by[0] < 0) GTEST_SKIP() << "OpenMP gave a team of one";
  int helped = 0;
  for (int i = 1; i < kCount / 2; ++i) helped += by[static_cast<std::size_t>(i)] != by[0] ? 1 : 0;
  EXPECT_GE(helped, 8) << "the held thread's range should have been done by the other thread";
}
#endif

}  // namespace
}  // namespace attnscope::core::detail
