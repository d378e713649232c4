// autosave.hpp: the last session ($XDG_CONFIG_HOME/attnscope/session.json)
// saved while the app runs, so that a crash, a power cut or a SIGKILL loses
// at most the last second of work.
//
// - Debounced: main calls note_activity() on every frame that had input or a
//   new trace; a check runs `debounce` (0.75 s) after the latest such call,
//   and at the latest `max_delay` (5 s) after the first unsaved one, so a
//   long drag is saved once when it ends (or every 5 s while it lasts), never
//   on every frame.
// - Cheap on the UI thread: a check hashes the session (session_fingerprint);
//   only when that changed is the document copied (session_document) and
//   handed to the writer thread, which formats it (session_text), compares
//   it with the text last written and writes only when it differs.
// - Atomic: gui::write_file_atomic (core's temporary file in the same folder,
//   fsync, rename), so the file on disk is always a whole old or a whole new
//   session, whenever the process dies.
// - Failures never throw and never touch the state: the first failure of a
//   streak produces one report for the user, the next change tries again,
//   and a success after failures reports that saving works again.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "attnscope/io/session.hpp"
#include "state/app_state.hpp"

namespace attnscope::gui {

class Autosave {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kDebounce = std::chrono::milliseconds(750);
  static constexpr Clock::duration kMaxDelay = std::chrono::seconds(5);

  // Thread: documents are formatted and written on the writer thread (the
  // app). Inline: in poll() and flush() themselves (deterministic tests).
  enum class Mode { Thread, Inline };

  struct Options {
    Clock::duration debounce = kDebounce;
    Clock::duration max_delay = kMaxDelay;
    Mode mode = Mode::Thread;
  };

  // `saved_text`: what `file` holds now (the session just restored, as read),
  // so that an unchanged session is not written again; "" when unknown.
  Autosave(std::filesystem::path file, std::string saved_text, Options options);
  explicit Autosave(std::filesystem::path file, std::string saved_text = {})
      : Autosave(std::move(file), std::move(saved_text), Options{}) {}
  // Writes a document still waiting, then stops the writer: a write is never
  // abandoned half way (the temporary file would stay behind).
  ~Autosave();
  Autosave(const Autosave&) = delete;
  Autosave& operator=(const Autosave&) = delete;

  // Something may have changed the session (input, a new trace, launch flags).
  void note_activity(Clock::time_point now);
  // Call on every turn of the loop. When a check is due: hands the session to
  // the writer if its fingerprint changed since the last hand-over. True when
  // a document was handed over.
  bool poll(const AppState& state, Clock::time_point now);
  // How long until the pending check is due (the idle loop waits no longer);
  // nullopt when nothing is pending.
  std::optional<Clock::duration> time_to_check(Clock::time_point now) const;
  // On exit: saves the session now unless the file already holds it, and
  // waits until it is written. Returns "" or what went wrong.
  std::string flush(const AppState& state);
  // Waits until the writer has nothing left to do.
  void wait_idle();

  // For the user: saving started failing (once per streak of failures), or
  // works again. Each report is returned once.
  struct Report {
    bool failed = false;
    std::string message;
  };
  std::optional<Report> take_report();

  struct Stats {
    long checks = 0;     // due checks that hashed the session
    long handed = 0;     // documents handed to the writer (the fingerprint changed)
    long writes = 0;     // files written
    long unchanged = 0;  // documents equal to the text already on disk: not written
    long failures = 0;   // writes that failed
  };
  Stats stats() const;
  const std::filesystem::path& file() const { return file_; }

 private:
  void hand_over(core::Session doc);
  void write(const core::Session& doc);  // format, compare, write; records the outcome
  void run();                            // the writer thread

  const std::filesystem::path file_;
  const Options options_;

  // UI thread only.
  std::optional<Clock::time_point> first_activity_, last_activity_;
  std::optional<std::uint64_t> handed_fingerprint_;

  // Shared with the writer thread.
  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::optional<core::Session> pending_;
  bool busy_ = false, stop_ = false;
  std::string last_written_;  // the file's text as far as we know (writer side)
  std::string last_error_;    // "" after the last write that worked
  bool failing_ = false;
  std::optional<Report> report_;
  Stats stats_;
  std::thread thread_;  // last: started after everything it reads
};

}  // namespace attnscope::gui
