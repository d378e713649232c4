// export_job.hpp: Export all (and --export-png) as a job that runs beside the
// frames instead of freezing them. Figures are rendered by OpenGL, whose
// context lives on the UI thread; encoding PNGs, rendering and writing the
// data files and session.json do not need it. So the work is split:
//
//   UI thread, step() once a frame: the next stages' figures rendered into
//     RGBA images (FilesState::render_png), for a few milliseconds but at
//     least one figure, handed to the worker; while kMaxQueuedBytes of images
//     wait, none is rendered.
//   the job's thread: encodes each image as PNG and writes it; writes the
//     data files while no image waits; session.json last.
//
// The job holds what it writes: its own pointer to the trace (a new run on
// screen frees nothing it reads; AppState::keep_only_the_view leaves a trace
// held elsewhere whole) and copies of the styles and the session taken when
// it started, so later edits change nothing in it.
//
// All or nothing: a folder the job was given to own (Export all's new one)
// is removed when the job fails, is cancelled or is destroyed unfinished
// (the app closing); in an existing folder (--export-png) the files it wrote
// are removed instead. Names follow core::export_stages, stage by stage, so
// the files are those a synchronous export names.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "attnscope/base/trace.hpp"
#include "attnscope/formats/formats.hpp"
#include "attnscope/io/session.hpp"
#include "figure/stage_figure.hpp"
#include "render/rendered_image.hpp"

namespace attnscope::gui {

// What one export writes, fixed when it starts.
struct ExportSpec {
  std::shared_ptr<const core::Trace> trace;
  std::vector<const core::Stage*> stages;   // stages of *trace, in the order written
  std::vector<figure::FigureStyle> styles;  // one per stage: how its PNG is drawn
  int png_scale = 2;
  std::optional<core::DataFormat> data;  // also a data file per stage (Export all)
  std::optional<core::Session> session;  // also session.json (Export all)
  std::filesystem::path folder;          // must exist
  bool own_folder = true;  // the job's to remove on failure (else: only the files it wrote)
  std::chrono::system_clock::time_point time;  // the timestamp in the names
};

class ExportJob {
 public:
  using Renderer = std::function<RenderedImage(const figure::Heatmap&, int scale)>;
  enum class Status { Running, Done, Failed, Cancelled };
  struct Progress {
    int done = 0;   // files written
    int total = 0;  // files to write
  };

  // Images waiting for the worker, at most (one is always allowed).
  static constexpr std::size_t kMaxQueuedBytes = 96u << 20;

  // Starts the worker.
  explicit ExportJob(ExportSpec spec);
  // Cancels an unfinished job and waits for its thread, which takes back
  // what it wrote.
  ~ExportJob();
  ExportJob(const ExportJob&) = delete;
  ExportJob& operator=(const ExportJob&) = delete;

  // UI thread: renders the next figures until `budget_ms` has passed (at
  // least one, unless the queue is full) and hands them to the worker. A
  // renderer that throws fails the job with its message.
  void step(const Renderer& render, double budget_ms);
  // Stops; the worker removes what was written, then the status is Cancelled.
  void cancel();
  // step() without a budget until the job has finished (synchronous callers).
  void run_to_end(const Renderer& render);

  // Cancel was asked for or a figure failed: the job is taking back its files.
  bool stopping() const;
  Status status() const { return status_.load(); }
  bool finished() const { return status() != Status::Running; }
  Progress progress() const;
  std::string error() const;  // why it failed ("" otherwise)
  const ExportSpec& spec() const { return spec_; }
  // The PNGs written, in stage order (complete once Done).
  std::vector<std::filesystem::path> png_paths() const;

 private:
  struct Image {
    std::size_t index = 0;  // into spec_.stages
    RenderedImage pixels;
  };

  void work();
  void write_png(const Image& image);
  void write_data(std::size_t index);
  void take_back();
  void fail(const std::string& message);

  const ExportSpec spec_;
  const int total_;
  std::size_t next_render_ = 0;  // UI thread only

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Image> queue_;
  std::size_t queued_bytes_ = 0;
  std::size_t rendered_ = 0;  // images handed over
  bool stop_ = false;
  std::string error_;
  std::vector<std::filesystem::path> pngs_;     // by stage index ("" until written)
  std::vector<std::filesystem::path> written_;  // every file, for take_back()

  std::atomic<int> done_{0};
  std::atomic<Status> status_{Status::Running};
  std::thread worker_;
};

}  // namespace attnscope::gui
