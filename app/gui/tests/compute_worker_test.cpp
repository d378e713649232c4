// compute_worker_test.cpp: the engine's thread. Jobs coalesce to the newest,
// a stale result is never adopted, errors show at once, explicit parameters
// and seeded runs give the same traces as the synchronous path.
#include "compute/compute_worker.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "attnscope/analysis/memory.hpp"
#include "attnscope/base/rng.hpp"
#include "attnscope/io/weights.hpp"
#include "state/app_state.hpp"

namespace attnscope::gui {
namespace {

core::Inputs random_inputs(int T, int d) { return core::random_inputs(T, d, 7); }

core::Config multihead(int d_out = 8, int heads = 2) {
  core::Config c;
  c.variant = core::Variant::Multihead;
  c.d_out = d_out;
  c.num_heads = heads;
  c.dropout = 0.1;
  return c;
}

void expect_same_trace(const core::Trace& a, const core::Trace& b) {
  ASSERT_EQ(a.stages.size(), b.stages.size());
  EXPECT_EQ(a.explicit_weights, b.explicit_weights);
  for (std::size_t k = 0; k < a.stages.size(); ++k) {
    EXPECT_EQ(a.stages[k].id, b.stages[k].id);
    EXPECT_EQ(a.stages[k].head, b.stages[k].head);
    // Bit for bit, -inf and all: the same engine ran on the same inputs.
    EXPECT_EQ(0, std::memcmp(a.stages[k].data().data(), b.stages[k].data().data(),
                             sizeof(float) * static_cast<std::size_t>(a.stages[k].data().size())))
        << a.stages[k].id;
  }
}

AppState with_worker(core::Inputs inputs, core::Config config) {
  AppState s;
  s.inputs = std::move(inputs);
  s.config = config;
  s.start_worker({});
  s.mark_dirty();
  return s;
}

TEST(ComputeWorker, ManyJobsPostedWhileOneRunsCoalesceToTheLast) {
  std::atomic<int> notified = 0;
  ComputeWorker w([&] { ++notified; });
  // A slow job first (tens of ms), then 99 quick ones while it runs.
  w.post(ComputeJob{multihead(64, 4), random_inputs(512, 64), nullptr, 1, nullptr});
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let it start (not required)
  const core::Inputs small = random_inputs(6, 3);
  for (std::uint64_t v = 2; v <= 100; ++v) {
    core::Config c = multihead(4, 2);
    c.seed = v;
    w.post(ComputeJob{c, small, nullptr, v, nullptr});
  }
  w.wait_idle();
  const auto r = w.take();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->version, 100u);
  ASSERT_TRUE(r->trace);
  EXPECT_EQ(r->trace->config.seed, 100u);
  EXPECT_LT(w.jobs_run(), 10) << "pending jobs were not replaced by newer ones";
  EXPECT_FALSE(w.take()) << "a result is handed over once";
  EXPECT_GE(notified.load(), 1);
  EXPECT_FALSE(w.busy());
}

TEST(ComputeWorker, AStaleResultIsNeverAdopted) {
  AppState s = with_worker(random_inputs(256, 32), multihead(32, 4));
  std::uint64_t seen = s.trace_version;
  int adopted = 0;
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    s.config.seed = seed;
    s.mark_dirty();
    s.recompute_if_dirty();
    if (seed % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    s.recompute_if_dirty();  // adopts whatever finished
    if (s.trace_version != seen) {
      seen = s.trace_version;
      ++adopted;
      // Only the answer to the newest request is shown: the current seed's.
      EXPECT_EQ(s.trace->config.seed, s.config.seed);
      EXPECT_FALSE(s.computing());
    }
  }
  s.finish_recompute();
  ASSERT_TRUE(s.trace);
  EXPECT_EQ(s.trace->config.seed, 100u);
  EXPECT_FALSE(s.computing());
  EXPECT_LT(s.worker->jobs_run(), 101);
  EXPECT_GE(adopted, 0);
}

TEST(ComputeWorker, ResultsEqualTheSynchronousPath) {
  AppState sync;
  sync.inputs = random_inputs(40, 12);
  sync.config = multihead(12, 3);
  sync.recompute_if_dirty();
  ASSERT_TRUE(sync.trace) << sync.error;
  AppState async = with_worker(sync.inputs, sync.config);
  async.recompute_if_dirty();
  // The job went to the worker: the synchronous path's cache stayed empty.
  // (Not computing(): a job this small can be done and adopted already.)
  EXPECT_EQ(async.sync_cache.prepared(), nullptr);
  EXPECT_NE(sync.sync_cache.prepared(), nullptr);
  async.finish_recompute();
  ASSERT_TRUE(async.trace) << async.error;
  expect_same_trace(*sync.trace, *async.trace);
  // A second run reuses the worker's cached parameters: still the same.
  async.config.dropout = 0.5;
  sync.config.dropout = 0.5;
  async.mark_dirty();
  sync.mark_dirty();
  async.finish_recompute();
  sync.recompute_if_dirty();
  expect_same_trace(*sync.trace, *async.trace);
}

TEST(ComputeWorker, ExplicitParametersRunOnTheWorker) {
  const core::Config config = multihead(8, 2);
  const core::Inputs inputs = random_inputs(10, 6);
  core::TorchGenerator gen(999);  // not the seed's parameters
  auto params = std::make_shared<const core::Parameters>(core::init_parameters(config, 6, gen));
  AppState s = with_worker(inputs, config);
  s.explicit_parameters = params;
  s.finish_recompute();
  ASSERT_TRUE(s.trace) << s.error;
  EXPECT_TRUE(s.trace->explicit_weights);
  expect_same_trace(*s.trace, core::run_with_explicit_parameters(config, inputs, *params));
  // Parameters that do not fit the config: refused at once, the trace stays.
  const auto version = s.trace_version;
  s.config.d_out = 12;
  s.config.num_heads = 3;
  s.mark_dirty();
  s.recompute_if_dirty();
  EXPECT_FALSE(s.error.empty());
  EXPECT_FALSE(s.computing());
  EXPECT_EQ(s.trace_version, version);
}

TEST(ComputeWorker, AnInvalidEditShowsItsErrorAtOnceAndDropsTheJobInFlight) {
  AppState s = with_worker(random_inputs(512, 64), multihead(64, 4));
  s.finish_recompute();
  ASSERT_TRUE(s.trace);
  const auto version = s.trace_version;
  s.config.seed = 5;  // a valid job, still running when ...
  s.mark_dirty();
  s.recompute_if_dirty();
  EXPECT_TRUE(s.computing());
  EXPECT_TRUE(s.error.empty());
  s.config.d_out = 63;  // ... this edit cannot run: 63 columns do not split into 4 heads
  s.mark_dirty();
  s.recompute_if_dirty();
  EXPECT_FALSE(s.error.empty());
  EXPECT_FALSE(s.computing());
  s.worker->wait_idle();
  s.recompute_if_dirty();
  EXPECT_EQ(s.trace_version, version) << "the seed-5 result answers an older request";
  EXPECT_EQ(s.trace->config.seed, 123u);
}

TEST(ComputeWorker, ATraceTooLargeForTheMemoryLeftIsRefusedAndTheLastOneStays) {
  AppState s = with_worker(random_inputs(256, 64), multihead(64, 4));
  s.finish_recompute();
  ASSERT_TRUE(s.trace);
  const auto version = s.trace_version;
  // 256 tokens, 64 heads: 64 x 6 stages of 256 x 256 floats, ~106 MB; allow 20.
  ASSERT_EQ(setenv("ATTNSCOPE_MEMORY_LIMIT_MB", "20", 1), 0);
  s.config.num_heads = 64;
  s.config.d_out = 64;
  s.mark_dirty();
  s.finish_recompute();
  unsetenv("ATTNSCOPE_MEMORY_LIMIT_MB");
  EXPECT_NE(s.error.find("this trace needs 106 MB of memory and 20 MB is available"),
            std::string::npos)
      << s.error;
  EXPECT_EQ(s.trace_version, version) << "the last trace stays on screen";
  EXPECT_EQ(s.trace->config.num_heads, 4);
  // With the memory back, the same edit runs.
  s.mark_dirty();
  s.finish_recompute();
  EXPECT_TRUE(s.error.empty()) << s.error;
  EXPECT_EQ(s.trace->config.num_heads, 64);
}

// Resident memory (kB) from /proc/self/status, or -1 where there is none.
// (Unused where the test below is skipped at compile time.)
[[maybe_unused]] long resident_kb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "VmRSS:", 6) == 0) kb = std::atol(line + 6);
  std::fclose(f);
  return kb;
}

// Polls up to 20 s (a sanitized build on a loaded machine is slow).
bool eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 2000 && !done(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return done();
}

TEST(ComputeWorker, FreedMemoryGoesBackOnlyOnceTheWorkerHasBeenIdle) {
  ComputeWorker w;
  w.post(ComputeJob{multihead(8, 2), random_inputs(16, 8), nullptr, 1, nullptr});
  w.wait_idle();
  ASSERT_TRUE(w.take());

  // A job posted right after the request cancels it: a drag keeps its warm pages.
  w.release_when_idle();
  w.post(ComputeJob{multihead(8, 2), random_inputs(16, 8), nullptr, 2, nullptr});
  w.wait_idle();
  ASSERT_TRUE(w.take());
  std::this_thread::sleep_for(ComputeWorker::kReleaseDelay + std::chrono::milliseconds(300));
  EXPECT_EQ(w.releases(), 0);

  // Not before the delay, and once after it.
  const auto asked = std::chrono::steady_clock::now();
  w.release_when_idle();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (std::chrono::steady_clock::now() - asked < ComputeWorker::kReleaseDelay) {
    EXPECT_EQ(w.releases(), 0);
  }
  EXPECT_TRUE(eventually([&] { return w.releases() == 1; }));
  EXPECT_GE(std::chrono::steady_clock::now() - asked, ComputeWorker::kReleaseDelay);
  std::this_thread::sleep_for(ComputeWorker::kReleaseDelay);
  EXPECT_EQ(w.releases(), 1) << "one request, one release";
}

// The app asks for the release when a new trace has replaced the old one
// on screen (the old one's memory is then free), not for the first trace.
TEST(ComputeWorker, ANewTraceOnScreenAsksTheWorkerToReleaseMemory) {
  AppState s = with_worker(random_inputs(64, 16), multihead(16, 2));
  s.finish_recompute();
  ASSERT_TRUE(s.trace);
  s.config.seed = 5;
  s.mark_dirty();
  const std::uint64_t before = s.trace_version;
  EXPECT_TRUE(eventually([&] {
    s.recompute_if_dirty();
    return s.trace_version != before;
  }));
  EXPECT_EQ(s.trace->config.seed, 5u);
  EXPECT_TRUE(eventually([&] { return s.worker->releases() == 1; }));
}

// What the release is for: memory the allocator kept after a free (the
// app keeps it for the next trace) leaves the process's resident set.
TEST(ComputeWorker, ReleasingReturnsKeptMemoryToTheSystem) {
#if defined(__SANITIZE_ADDRESS__) || !defined(__GLIBC__)
  GTEST_SKIP() << "needs glibc's allocator (AddressSanitizer brings its own)";
#else
  core::keep_freed_memory_for_reuse();
  {
    std::vector<std::vector<float> > blocks;
    for (int i = 0; i < 24; ++i) blocks.emplace_back(2u << 20, 1.0f);  // 24 x 8 MiB, touched
  }
  const long kept = resident_kb();
  ASSERT_GT(kept, 0);
  core::release_freed_memory();
  const long released = resident_kb();
  EXPECT_LT(released, kept - 100 * 1024) << "kept " << kept << " kB, after release " << released;
#endif
}

TEST(ComputeWorker, StoppingWhileAJobRunsJoinsCleanly) {
  auto w = std::make_unique<ComputeWorker>();
  w->post(ComputeJob{multihead(64, 4), random_inputs(512, 64), nullptr, 1, nullptr});
  w->post(ComputeJob{multihead(64, 4), random_inputs(512, 64), nullptr, 2, nullptr});
  w.reset();  // the running job finishes, the pending one is dropped
  SUCCEED();
}

}  // namespace
}  // namespace attnscope::gui
