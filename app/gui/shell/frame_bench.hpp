// frame_bench.hpp: what --bench-frames measures and prints. One FrameBench
// lives in main; it brackets every frame (input, draw_ui, ImGui::Render, the
// GL draw submission, the buffer swap) and, at the end, prints the frames,
// their min/median/max, the time to the first frame and peak memory.
//
// CPU time is the UI thread's (CLOCK_THREAD_CPUTIME_ID): what a frame costs
// the thread that must stay responsive. The whole process's CPU in the same
// interval is printed beside it: it adds the engine's thread and the GL
// driver's threads (Mesa's llvmpipe rasterizes on its own threads under Xvfb).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace attnscope::gui {

// Milliseconds since this process started (from /proc/self/stat, which has
// clock-tick resolution, ~10 ms; -1 when unknown).
double ms_since_process_start();

// A line of /proc/self/status in MB, e.g. status_mb("VmHWM") is peak RSS; -1 when unknown.
double status_mb(const char* key);

class FrameBench {
 public:
  // Call right before a frame's input polling ...
  void begin_frame();
  // ... and right after its buffer swap. `note` marks the frame in the
  // listing ("computing", "trace adopted"); `with_trace` says whether a trace was on screen.
  void end_frame(bool with_trace, const char* note);
  // Call once the first frame is on screen.
  void first_frame_shown() { first_frame_ms_ = ms_since_process_start(); }
  // Call once the first trace is on screen.
  void first_trace_shown() { first_trace_ms_ = ms_since_process_start(); }

  // Call when the source (a model) was ready, before the first frame.
  void source_loaded() { loaded_ms_ = ms_since_process_start(); }
  // Call when a keystroke's edit was made ...
  void edited() { edit_wall_ = clock_now_ms(); }
  // ... and when the frame showing its result was swapped.
  void edit_shown();

  int frames_with_trace() const { return with_trace_; }
  int edits_shown() const { return static_cast<int>(edits_ms_.size()); }
  // The listing and the summary; `header` describes the run.
  void print(std::FILE* out, const std::string& header) const;

 private:
  struct Frame {
    double ui_cpu_ms, process_cpu_ms, wall_ms;
    bool with_trace;
    std::string note;
  };
  std::vector<Frame> frames_;
  double t_cpu_ = 0, p_cpu_ = 0, wall_ = 0;
  double first_frame_ms_ = -1, first_trace_ms_ = -1, loaded_ms_ = -1;
  double edit_wall_ = -1;         // when the last edit was made (CLOCK_MONOTONIC ms)
  std::vector<double> edits_ms_;  // each edit to the frame showing it
  static double clock_now_ms();
  int with_trace_ = 0;
};

}  // namespace attnscope::gui
