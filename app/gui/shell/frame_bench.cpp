// frame_bench.cpp: see frame_bench.hpp. Linux: clock_gettime and /proc.
#include "shell/frame_bench.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

namespace attnscope::gui {

namespace {

double clock_ms(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

struct Stats {
  double min = 0, median = 0, max = 0;
};
Stats stats(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return {v.front(), median, v.back()};
}

}  // namespace

double ms_since_process_start() {
  // Field 22 of /proc/self/stat: start time in clock ticks after boot, the
  // clock CLOCK_BOOTTIME reads.
  std::ifstream f("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  for (int k = 3; k <= 22 && rest >> field; ++k) {
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  if (field.empty() || ticks <= 0) return -1;
  const double start_ms = std::stod(field) * 1e3 / static_cast<double>(ticks);
  return clock_ms(CLOCK_BOOTTIME) - start_ms;
}

double status_mb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(key);
  while (std::getline(f, line))
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':')
      return std::stod(line.substr(n + 1)) / 1024.0;  // "VmHWM:   123456 kB"
  return -1;
}

double FrameBench::clock_now_ms() { return clock_ms(CLOCK_MONOTONIC); }

void FrameBench::edit_shown() {
  if (edit_wall_ < 0) return;
  edits_ms_.push_back(clock_ms(CLOCK_MONOTONIC) - edit_wall_);
  edit_wall_ = -1;
}

void FrameBench::begin_frame() {
  t_cpu_ = clock_ms(CLOCK_THREAD_CPUTIME_ID);
  p_cpu_ = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
  wall_ = clock_ms(CLOCK_MONOTONIC);
}

void FrameBench::end_frame(bool with_trace, const char* note) {
  frames_.push_back(Frame{clock_ms(CLOCK_THREAD_CPUTIME_ID) - t_cpu_,
                          clock_ms(CLOCK_PROCESS_CPUTIME_ID) - p_cpu_,
                          clock_ms(CLOCK_MONOTONIC) - wall_, with_trace, note ? note : ""});
  if (with_trace) ++with_trace_;
}

void FrameBench::print(std::FILE* out, const std::string& header) const {
  std::fprintf(out, "bench-frames: %s\n", header.c_str());
  std::fprintf(out, "frame  ui_cpu_ms  process_cpu_ms  wall_ms\n");
  for (std::size_t k = 0; k < frames_.size(); ++k) {
    const Frame& f = frames_[k];
    std::fprintf(out, "%5zu  %9.3f  %14.3f  %7.3f%s%s\n", k + 1, f.ui_cpu_ms, f.process_cpu_ms,
                 f.wall_ms, f.note.empty() ? "" : "  ", f.note.c_str());
  }
  std::vector<double> ui, proc, wall, ui_all;
  for (const Frame& f : frames_) {
    ui_all.push_back(f.ui_cpu_ms);
    if (!f.with_trace) continue;
    ui.push_back(f.ui_cpu_ms);
    proc.push_back(f.process_cpu_ms);
    wall.push_back(f.wall_ms);
  }
  const Stats u = stats(ui), p = stats(proc), w = stats(wall), a = stats(ui_all);
  std::fprintf(out, "first_frame_ms=%.0f (process start to the first frame swapped)\n",
               first_frame_ms_);
  std::fprintf(out, "first_trace_ms=%.0f (process start to the first frame showing the trace)\n",
               first_trace_ms_);
  if (loaded_ms_ >= 0)
    std::fprintf(out, "trace_after_load_ms=%.0f (the model loaded to the first frame showing it)\n",
                 first_trace_ms_ - loaded_ms_);
  if (!edits_ms_.empty()) {
    const Stats e = stats(edits_ms_);
    std::fprintf(out,
                 "typing: edits=%zu edit_to_screen_ms min=%.1f median=%.1f max=%.1f (one "
                 "character typed to the frame showing its new attention)\n",
                 edits_ms_.size(), e.min, e.median, e.max);
  }
  std::fprintf(out, "frames=%zu with_trace=%zu\n", frames_.size(), ui.size());
  std::fprintf(out, "with trace: ui_cpu_ms min=%.3f median=%.3f max=%.3f\n", u.min, u.median,
               u.max);
  std::fprintf(out, "with trace: process_cpu_ms min=%.3f median=%.3f max=%.3f\n", p.min, p.median,
               p.max);
  std::fprintf(out, "with trace: wall_ms min=%.3f median=%.3f max=%.3f\n", w.min, w.median, w.max);
  std::fprintf(out, "all frames: ui_cpu_ms min=%.3f median=%.3f max=%.3f\n", a.min, a.median,
               a.max);
  std::fprintf(out, "peak_rss_mb=%.1f (VmHWM) rss_mb=%.1f (VmRSS at exit)\n", status_mb("VmHWM"),
               status_mb("VmRSS"));
}

}  // namespace attnscope::gui
