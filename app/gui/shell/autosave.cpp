// autosave.cpp: debounce on the UI thread, format + compare + write on the
// writer thread (autosave.hpp).
#include "shell/autosave.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include "state/session.hpp"

namespace attnscope::gui {

Autosave::Autosave(std::filesystem::path file, std::string saved_text, Options options)
    : file_(std::move(file)), options_(options), last_written_(std::move(saved_text)) {
  if (options_.mode == Mode::Thread) thread_ = std::thread([this] { run(); });
}

Autosave::~Autosave() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Autosave::note_activity(Clock::time_point now) {
  if (!first_activity_) first_activity_ = now;
  last_activity_ = now;
}

std::optional<Autosave::Clock::duration> Autosave::time_to_check(Clock::time_point now) const {
  if (!last_activity_) return std::nullopt;
  const Clock::time_point due =
      std::min(*last_activity_ + options_.debounce, *first_activity_ + options_.max_delay);
  return due > now ? due - now : Clock::duration::zero();
}

bool Autosave::poll(const AppState& state, Clock::time_point now) {
  const auto wait = time_to_check(now);
  if (!wait || *wait > Clock::duration::zero()) return false;
  first_activity_.reset();
  last_activity_.reset();
  const std::uint64_t fingerprint = session_fingerprint(state);
  {
    std::lock_guard lock(mutex_);
    ++stats_.checks;
  }
  if (handed_fingerprint_ == fingerprint) return false;  // nothing the session holds changed
  handed_fingerprint_ = fingerprint;
  hand_over(session_document(state));
  return true;
}

std::string Autosave::flush(const AppState& state) {
  first_activity_.reset();
  last_activity_.reset();
  handed_fingerprint_ = session_fingerprint(state);
  hand_over(session_document(state));
  wait_idle();
  std::lock_guard lock(mutex_);
  return last_error_;
}

void Autosave::hand_over(core::Session doc) {
  {
    std::lock_guard lock(mutex_);
    ++stats_.handed;
    if (options_.mode == Mode::Thread) {
      pending_ = std::move(doc);  // replaces one still waiting: only the newest matters
      wake_.notify_one();
      return;
    }
  }
  write(doc);
}

void Autosave::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return !pending_ && !busy_; });
}

void Autosave::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return pending_.has_value() || stop_; });
    if (!pending_) break;  // stop_, and nothing left to write
    core::Session doc = std::move(*pending_);
    pending_.reset();
    busy_ = true;
    lock.unlock();
    write(doc);
    lock.lock();
    busy_ = false;
    if (!pending_) idle_.notify_all();
  }
  idle_.notify_all();
}

void Autosave::write(const core::Session& doc) {
  std::string text, error;
  try {
    text = session_text(doc);
  } catch (const std::exception& e) {
    error = e.what();
  }
  bool unchanged = false;
  if (error.empty()) {
    {
      std::lock_guard lock(mutex_);
      unchanged = text == last_written_;
    }
    if (!unchanged) error = write_file_atomic(file_, text);
  }

  std::lock_guard lock(mutex_);
  if (unchanged) {
    ++stats_.unchanged;
  } else if (error.empty()) {
    ++stats_.writes;
    last_written_ = std::move(text);
  } else {
    ++stats_.failures;
  }
  last_error_ = error;
  if (!error.empty() && !failing_) {
    failing_ = true;
    report_ = Report{true, "The session could not be saved (" + error +
                               "). Nothing is lost: attnscope keeps it and tries again after "
                               "your next change and when you quit."};
  } else if (error.empty() && failing_) {
    failing_ = false;
    report_ = Report{false, "The session is saved again in " + file_.string() + "."};
  }
}

std::optional<Autosave::Report> Autosave::take_report() {
  std::lock_guard lock(mutex_);
  std::optional<Report> r = std::move(report_);
  report_.reset();
  return r;
}

Autosave::Stats Autosave::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace attnscope::gui
