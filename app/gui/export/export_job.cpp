// export_job.cpp: the export job's two halves (see export_job.hpp).
#include "export/export_job.hpp"

#include <limits>
#include <stdexcept>

#include "attnscope/formats/files.hpp"
#include "export/png.hpp"

namespace attnscope::gui {

namespace fs = std::filesystem;

namespace {

int files_to_write(const ExportSpec& s) {
  const auto n = static_cast<int>(s.stages.size());
  return n + (s.data ? n : 0) + (s.session ? 1 : 0);
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

ExportJob::ExportJob(ExportSpec spec)
    : spec_(std::move(spec)), total_(files_to_write(spec_)), pngs_(spec_.stages.size()) {
  if (!spec_.trace || spec_.styles.size() != spec_.stages.size())
    throw std::invalid_argument("an export needs its trace and one style per stage");
  worker_ = std::thread([this] { work(); });
}

ExportJob::~ExportJob() {
  cancel();
  worker_.join();
}

// ---------------------------------------------------------------------------
// The UI thread's half

void ExportJob::step(const Renderer& render, double budget_ms) {
  const auto start = std::chrono::steady_clock::now();
  while (next_render_ < spec_.stages.size()) {
    {
      std::lock_guard lock(mutex_);
      if (stop_ || (!queue_.empty() && queued_bytes_ >= kMaxQueuedBytes)) return;
    }
    Image image;
    image.index = next_render_;
    try {
      if (!render) throw std::runtime_error("PNG export needs the app's window (OpenGL)");
      const core::Stage& s = *spec_.stages[next_render_];
      image.pixels = render(figure::stage_heatmap(*spec_.trace, s, spec_.styles[next_render_]),
                            spec_.png_scale);
    } catch (const std::exception& e) {
      fail(e.what());
      return;
    }
    ++next_render_;
    {
      std::lock_guard lock(mutex_);
      queued_bytes_ += image.pixels.rgba.size();
      queue_.push_back(std::move(image));
      ++rendered_;
    }
    changed_.notify_all();
    if (ms_since(start) >= budget_ms) return;
  }
}

void ExportJob::cancel() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
}

void ExportJob::run_to_end(const Renderer& render) {
  const std::size_t n = spec_.stages.size();
  while (!finished()) {
    step(render, std::numeric_limits<double>::infinity());
    // Then wait until there is room for the next figure, or the end.
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] {
      return status_.load() != Status::Running ||
             (!stop_ && next_render_ < n && (queue_.empty() || queued_bytes_ < kMaxQueuedBytes));
    });
  }
}

bool ExportJob::stopping() const {
  std::lock_guard lock(mutex_);
  return stop_;
}

ExportJob::Progress ExportJob::progress() const { return {done_.load(), total_}; }

std::string ExportJob::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

std::vector<fs::path> ExportJob::png_paths() const {
  std::lock_guard lock(mutex_);
  return pngs_;
}

void ExportJob::fail(const std::string& message) {
  {
    std::lock_guard lock(mutex_);
    if (error_.empty()) error_ = message.empty() ? "unknown error" : message;
    stop_ = true;
  }
  changed_.notify_all();
}

// ---------------------------------------------------------------------------
// The worker's half

void ExportJob::work() {
  enum class Next { Png, Data, Session };
  const std::size_t n = spec_.stages.size();
  const std::size_t data_files = spec_.data ? n : 0;
  std::size_t next_data = 0;
  try {
    for (;;) {
      Next next = Next::Session;
      Image image;
      {
        std::unique_lock lock(mutex_);
        // A waiting image comes first (it holds memory); data files fill the
        // time the UI takes to render the next one.
        changed_.wait(lock, [&] {
          return stop_ || !queue_.empty() || next_data < data_files || rendered_ == n;
        });
        if (stop_) break;
        if (!queue_.empty()) {
          next = Next::Png;
          image = std::move(queue_.front());
          queue_.pop_front();
          queued_bytes_ -= image.pixels.rgba.size();
        } else if (next_data < data_files) {
          next = Next::Data;
        }
      }
      changed_.notify_all();  // room for the UI's next figure
      if (next == Next::Png) {
        write_png(image);
      } else if (next == Next::Data) {
        write_data(next_data++);
      } else {  // every PNG and data file is written
        if (spec_.session) {
          const fs::path path = spec_.folder / "session.json";
          core::save_session(path, *spec_.session, core::Overwrite::Never);
          std::lock_guard lock(mutex_);
          written_.push_back(path);
          ++done_;
        }
        std::lock_guard lock(mutex_);
        status_ = Status::Done;
        changed_.notify_all();
        return;
      }
    }
  } catch (const std::exception& e) {
    fail(e.what());
  }
  take_back();
  std::lock_guard lock(mutex_);
  status_ = error_.empty() ? Status::Cancelled : Status::Failed;
  changed_.notify_all();
}

void ExportJob::write_png(const Image& image) {
  const core::Stage& s = *spec_.stages[image.index];
  std::string bytes = encode_png(image.pixels.width, image.pixels.height, image.pixels.rgba);
  if (bytes.empty()) throw std::runtime_error("the PNG of " + s.id + " could not be encoded");
  const auto paths = core::export_stages(
      *spec_.trace, {&s}, spec_.folder, ".png",
      [&bytes](const core::Trace&, const core::Stage&) { return std::move(bytes); }, spec_.time);
  std::lock_guard lock(mutex_);
  pngs_[image.index] = paths.front();
  written_.push_back(paths.front());
  ++done_;
}

void ExportJob::write_data(std::size_t index) {
  const core::DataFormat f = *spec_.data;
  const auto paths =
      core::export_stages(*spec_.trace, {spec_.stages[index]}, spec_.folder,
                          core::format_extension(f), core::data_renderer(f), spec_.time);
  std::lock_guard lock(mutex_);
  written_.push_back(paths.front());
  ++done_;
}

void ExportJob::take_back() {
  std::error_code ec;
  if (spec_.own_folder) {
    fs::remove_all(spec_.folder, ec);
    return;
  }
  std::lock_guard lock(mutex_);
  for (const fs::path& p : written_) fs::remove(p, ec);
}

}  // namespace attnscope::gui
