// autosave_test.cpp: the debounced autosave of the last session (autosave.hpp)
// with a hand-driven clock: when it writes, that it writes only changes, that
// every part of the session reaches the file, failures told once and retried.
#include "shell/autosave.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <vector>

#include "state/session.hpp"
#include "temp_dir.hpp"

namespace attnscope::gui {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = Autosave::Clock;

class AutosaveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = dir_ / "session.json";
    state_.load_preset("book");
    state_.recompute_if_dirty();
  }
  static Autosave::Options inline_options() {
    Autosave::Options o;
    o.mode = Autosave::Mode::Inline;
    return o;
  }
  // The state a fresh launch restores from the file.
  AppState restored() const {
    AppState s;
    s.load_preset("book");
    EXPECT_EQ(load_session(file_, s).warning, "");
    return s;
  }
  // An edit followed by the debounce: what one change in the app amounts to.
  void change_and_settle(Autosave& a, const std::function<void(AppState&)>& edit) {
    edit(state_);
    now_ += 1s;
    a.note_activity(now_);
    now_ += Autosave::kDebounce;
    a.poll(state_, now_);
  }
  ino_t inode() const {
    struct stat st {};
    return ::stat(file_.c_str(), &st) == 0 ? st.st_ino : 0;
  }

  core::testing::TempDir temp_;  // a fresh folder per test, removed afterwards
  const fs::path dir_ = temp_.path();
  fs::path file_;
  AppState state_;
  Clock::time_point now_ = Clock::time_point{} + 1000h;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST_F(AutosaveTest, ADragIsSavedOnceAfterItEndsNotOnEveryFrame) {
  Autosave a(file_, "", inline_options());
  // 60 frames of dragging an embedding value, 16 ms apart.
  for (int f = 0; f < 60; ++f) {
    state_.inputs.embeddings(0, 0) = 0.01f * static_cast<float>(f);
    a.note_activity(now_);
    EXPECT_FALSE(a.poll(state_, now_)) << "frame " << f;
    now_ += 16ms;
  }
  const Clock::time_point last = now_ - 16ms;
  EXPECT_FALSE(fs::exists(file_)) << "nothing is written while the drag goes on";
  ASSERT_TRUE(a.time_to_check(last + 700ms));
  EXPECT_EQ(*a.time_to_check(last + 700ms), Autosave::kDebounce - 700ms);
  EXPECT_FALSE(a.poll(state_, last + 700ms));
  EXPECT_FALSE(fs::exists(file_));
  EXPECT_TRUE(a.poll(state_, last + Autosave::kDebounce));
  ASSERT_TRUE(fs::exists(file_));
  EXPECT_EQ(a.stats().writes, 1);
  EXPECT_EQ(a.stats().checks, 1);
  EXPECT_FLOAT_EQ(restored().inputs.embeddings(0, 0), 0.59f);
  EXPECT_FALSE(a.time_to_check(last + 2s)) << "nothing pending after the check";
}

TEST_F(AutosaveTest, AnEndlessDragIsStillSavedEveryFewSeconds) {
  Autosave a(file_, "", inline_options());
  const Clock::time_point start = now_;
  std::optional<Clock::duration> first_write;
  for (int f = 0; now_ - start < 12s; ++f) {  // 12 s of input, no pause
    state_.inputs.embeddings(1, 1) = 0.001f * static_cast<float>(f);
    a.note_activity(now_);
    a.poll(state_, now_);
    if (!first_write && a.stats().writes > 0) first_write = now_ - start;
    now_ += 16ms;
  }
  ASSERT_TRUE(first_write);
  EXPECT_GE(*first_write, Autosave::kMaxDelay);
  EXPECT_LE(*first_write, Autosave::kMaxDelay + 16ms) << "at the latest 5 s after the first change";
  EXPECT_GE(a.stats().writes, 2);
  EXPECT_LE(a.stats().writes, 3);  // 12 s / 5 s, never one per frame
}

TEST_F(AutosaveTest, NothingIsWrittenWhenNothingChanged) {
  // Started on the text already on disk (a restored session): no write at all.
  ASSERT_EQ(save_session(file_, state_), "");
  const ino_t first = inode();
  Autosave a(file_, slurp(file_), inline_options());
  a.note_activity(now_);
  EXPECT_TRUE(a.poll(state_, now_ + 1s));  // the first check formats and compares ...
  EXPECT_EQ(a.stats().writes, 0);          // ... and finds the file up to date
  EXPECT_EQ(a.stats().unchanged, 1);
  // Mouse moves, clicks on nothing: checks that hash and stop there.
  for (int k = 0; k < 5; ++k) {
    now_ += 2s;
    a.note_activity(now_);
    EXPECT_FALSE(a.poll(state_, now_ + 1s));
  }
  EXPECT_EQ(a.stats().checks, 6);
  EXPECT_EQ(a.stats().handed, 1);
  // A change and its undo before the check: nothing to write either.
  state_.step = Step::Softmax;
  a.note_activity(now_ + 3s);
  state_.step = Step::Inputs;
  EXPECT_FALSE(a.poll(state_, now_ + 5s));
  EXPECT_EQ(a.stats().writes, 0);
  EXPECT_EQ(a.flush(state_), "");  // exit: still nothing to write
  EXPECT_EQ(a.stats().writes, 0);
  EXPECT_EQ(inode(), first) << "the file was never replaced";
}

TEST_F(AutosaveTest, EveryPartOfTheSessionReachesTheFile) {
  Autosave a(file_, "", inline_options());
  struct Change {
    const char* what;
    std::function<void(AppState&)> edit;
    std::function<bool(const AppState&)> restored;
  };
  const std::vector<Change> changes = {
      {"token", [](AppState& s) { s.inputs.tokens[2] = "travels"; },
       [](const AppState& s) { return s.inputs.tokens[2] == "travels"; }},
      {"embedding", [](AppState& s) { s.inputs.embeddings(3, 1) = -0.75f; },
       [](const AppState& s) { return s.inputs.embeddings(3, 1) == -0.75f; }},
      {"variant and sizes",
       [](AppState& s) {
         s.config.variant = core::Variant::Multihead;
         s.config.d_out = 4;
         s.config.num_heads = 2;
       },
       [](const AppState& s) {
         return s.config.variant == core::Variant::Multihead && s.config.num_heads == 2;
       }},
      {"dropout", [](AppState& s) { s.config.dropout = 0.125; },
       [](const AppState& s) { return s.config.dropout == 0.125; }},
      {"stage", [](AppState& s) { s.step = Step::Masked; },
       [](const AppState& s) { return s.step == Step::Masked; }},
      {"head", [](AppState& s) { s.head = 1; }, [](const AppState& s) { return s.head == 1; }},
      {"pinned cell",
       [](AppState& s) {
         s.pinned = CellRef{"masked_scores", 1, 3, 2};
       },
       [](const AppState& s) {
         return s.pinned == CellRef{"masked_scores", 1, 3, 2};
       }},
      {"colours", [](AppState& s) { s.ui.palette = Palette::Warm; },
       [](const AppState& s) { return s.ui.palette == Palette::Warm; }},
      {"numbers in cells", [](AppState& s) { s.ui.show_values = false; },
       [](const AppState& s) { return !s.ui.show_values; }},
      {"window size",
       [](AppState& s) {
         s.ui.window_width = 1024;
         s.ui.window_height = 700;
       },
       [](const AppState& s) { return s.ui.window_width == 1024 && s.ui.window_height == 700; }},
      {"a mid-edit run (d_out 5 over 2 heads)", [](AppState& s) { s.config.d_out = 5; },
       [](const AppState& s) { return s.config.d_out == 5; }},
  };
  long writes = 0;
  for (const Change& c : changes) {
    change_and_settle(a, c.edit);
    state_.recompute_if_dirty();
    EXPECT_EQ(a.stats().writes, ++writes) << c.what;
    EXPECT_TRUE(c.restored(restored())) << c.what << " was not in the saved session";
  }
}

TEST_F(AutosaveTest, AFailedSaveIsToldOnceKeepsTheStateAndIsRetriedOnTheNextChange) {
  // The config folder's place is taken by a file: nothing can be saved there.
  const fs::path blocked = dir_ / "attnscope";
  { std::ofstream(blocked) << "not a folder"; }
  const fs::path file = blocked / "session.json";
  Autosave a(file, "", inline_options());

  change_and_settle(a, [](AppState& s) { s.step = Step::Softmax; });
  EXPECT_EQ(a.stats().failures, 1);
  auto report = a.take_report();
  ASSERT_TRUE(report);
  EXPECT_TRUE(report->failed);
  EXPECT_NE(report->message.find("could not be saved"), std::string::npos) << report->message;
  EXPECT_NE(report->message.find(blocked.string()), std::string::npos) << report->message;
  EXPECT_FALSE(a.take_report()) << "a report is given once";
  EXPECT_EQ(state_.step, Step::Softmax) << "the state is untouched";

  change_and_settle(a, [](AppState& s) { s.head = 1; });  // tried again ...
  EXPECT_EQ(a.stats().failures, 2);
  EXPECT_FALSE(a.take_report()) << "... failing again says nothing new";
  EXPECT_NE(a.flush(state_), "") << "flush reports the failure to main";

  fs::remove(blocked);  // the user fixed it
  change_and_settle(a, [](AppState& s) { s.ui.show_values = false; });
  EXPECT_EQ(a.stats().writes, 1);
  report = a.take_report();
  ASSERT_TRUE(report);
  EXPECT_FALSE(report->failed);
  EXPECT_NE(report->message.find("saved again"), std::string::npos) << report->message;
  AppState s;
  ASSERT_EQ(load_session(file, s).warning, "");
  EXPECT_EQ(s.step, Step::Softmax);  // nothing of the failed saves was lost
  EXPECT_EQ(s.head, 1);
  EXPECT_FALSE(s.ui.show_values);

  // Failing again later is told again.
  fs::remove_all(blocked);
  { std::ofstream(blocked) << "taken again"; }
  change_and_settle(a, [](AppState& st) { st.head = 0; });
  report = a.take_report();
  ASSERT_TRUE(report);
  EXPECT_TRUE(report->failed);
}

TEST_F(AutosaveTest, ATokenThatCannotBeSavedIsAFailureNotACrash) {
  Autosave a(file_, "", inline_options());
  change_and_settle(a, [](AppState& s) { s.inputs.tokens[0] = "bad \xff byte"; });
  EXPECT_EQ(a.stats().failures, 1);
  const auto report = a.take_report();
  ASSERT_TRUE(report);
  EXPECT_NE(report->message.find("UTF-8"), std::string::npos) << report->message;
  EXPECT_FALSE(fs::exists(file_));
}

TEST_F(AutosaveTest, TheWriterThreadWritesAndFlushWaitsForIt) {
  {
    Autosave a(file_);  // the app's mode: a writer thread
    change_and_settle(a, [](AppState& s) { s.step = Step::Softmax; });
    a.wait_idle();
    EXPECT_EQ(restored().step, Step::Softmax);
    state_.step = Step::Context;  // no check due: flush (exit) saves it anyway
    EXPECT_EQ(a.flush(state_), "");
    EXPECT_EQ(restored().step, Step::Context);
    EXPECT_EQ(a.stats().writes, 2);
    // Handed over and destroyed at once: the destructor finishes the write.
    change_and_settle(a, [](AppState& s) { s.step = Step::Scores; });
  }
  EXPECT_EQ(restored().step, Step::Scores);
  int temporaries = 0;
  for (const auto& e : fs::directory_iterator(dir_))
    if (e.path().filename() != "session.json") ++temporaries;
  EXPECT_EQ(temporaries, 0);
}

}  // namespace
}  // namespace attnscope::gui
