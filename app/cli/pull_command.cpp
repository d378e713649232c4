// pull_command.cpp: `attnscope-cli model pull`: a hub::PullJob on a worker
// thread; this thread wakes every 200 ms (blocked on the job in between) to
// draw the progress and pass Ctrl+C on as the job's cancel.
#include "pull_command.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>

#include "attnscope/base/errors.hpp"
#include "attnscope/hub/pull.hpp"

namespace attnscope::cli {

namespace core = attnscope::core;
namespace hub = attnscope::core::hub;

namespace {

volatile std::sig_atomic_t g_interrupted = 0;

void on_interrupt(int) { g_interrupted = 1; }

std::string size_text(double bytes) {
  char buf[32];
  if (bytes >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  else if (bytes >= 1e6)
    std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.1f kB", bytes / 1e3);
  return buf;
}

// The terminal's one line: the file under way, the totals, speed, time left.
std::string progress_line(const hub::PullProgress& p) {
  if (p.files.empty()) return p.phase + "...";
  std::size_t current = 0, finished = 0;
  for (std::size_t i = 0; i < p.files.size(); ++i) {
    const auto s = p.files[i].state;
    if (s == hub::FileState::Done || s == hub::FileState::Cached) ++finished;
    if (s == hub::FileState::Downloading || s == hub::FileState::Checking ||
        s == hub::FileState::Waiting)
      current = i;
  }
  std::string line = p.files[current].name + "  " + size_text(static_cast<double>(p.done)) + " / " +
                     size_text(static_cast<double>(p.total));
  if (p.files[current].state == hub::FileState::Waiting) line += "  waiting for another pull";
  char buf[96];
  if (p.total > 0) {
    std::snprintf(buf, sizeof buf, "  %3.0f%%",
                  100.0 * static_cast<double>(p.done) / static_cast<double>(p.total));
    line += buf;
  }
  if (p.bytes_per_second > 0) line += "  " + size_text(p.bytes_per_second) + "/s";
  if (p.seconds_left >= 0) {
    const long s = static_cast<long>(p.seconds_left + 0.5);
    std::snprintf(buf, sizeof buf, "  %ld:%02ld left", s / 60, s % 60);
    line += buf;
  }
  std::snprintf(buf, sizeof buf, "  (%zu of %zu files)", finished, p.files.size());
  return line + buf;
}

// Plain lines for a log: one when each file is done, cached or failed.
void print_new_lines(const hub::PullProgress& p, std::vector<hub::FileState>& shown) {
  shown.resize(p.files.size(), hub::FileState::Queued);
  for (std::size_t i = 0; i < p.files.size(); ++i) {
    const auto s = p.files[i].state;
    if (s == shown[i]) continue;
    shown[i] = s;
    const std::string size = size_text(static_cast<double>(p.files[i].done));
    if (s == hub::FileState::Done)
      std::fprintf(stderr, "%s: fetched, %s\n", p.files[i].name.c_str(), size.c_str());
    else if (s == hub::FileState::Cached)
      std::fprintf(stderr, "%s: in the cache, %s\n", p.files[i].name.c_str(), size.c_str());
    else if (s == hub::FileState::Waiting)
      std::fprintf(stderr, "%s: waiting for another pull of it to finish (its lock is held)\n",
                   p.files[i].name.c_str());
  }
}

}  // namespace

int run_model_pull(const std::string& repo_ref, const std::string& endpoint) {
  const hub::RepoRef ref = hub::parse_repo_ref(repo_ref);
  hub::PullJob job(hub::pull_options(ref, endpoint));
  const bool terminal = isatty(STDERR_FILENO) == 1;
  struct sigaction action = {}, previous = {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  g_interrupted = 0;
  sigaction(SIGINT, &action, &previous);
  std::thread worker([&job] { job.run(); });
  std::vector<hub::FileState> shown;
  std::size_t drawn = 0;
  while (true) {
    const bool finished = job.wait_for(std::chrono::milliseconds(200));
    if (g_interrupted) job.cancel();
    const hub::PullProgress p = job.progress();
    if (terminal) {
      const std::string line = progress_line(p);
      std::fprintf(stderr, "\r%s%s", line.c_str(),
                   std::string(drawn > line.size() ? drawn - line.size() : 0, ' ').c_str());
      drawn = line.size();
    } else {
      print_new_lines(p, shown);
    }
    if (finished) break;
  }
  worker.join();
  sigaction(SIGINT, &previous, nullptr);
  if (terminal) std::fprintf(stderr, "\n");
  const hub::PullResult& r = job.result();
  if (r.ok) {
    std::cout << r.snapshot.string() << "\n";
    std::cout.flush();
    return std::cout ? 0 : 1;
  }
  if (r.cancelled && g_interrupted) {
    std::fprintf(stderr, "error: %s\n", r.error.c_str());
    return 130;
  }
  throw core::ParseError(r.error);
}

}  // namespace attnscope::cli
