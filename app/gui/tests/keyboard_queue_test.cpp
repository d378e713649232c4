// keyboard_queue_test.cpp: keys and characters reach ImGui in order, a frame's
// worth at a time (keyboard_queue.hpp), so that no press is lost and no
// modifier is seen held after it was released.
#include "platform/keyboard_queue.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace attnscope::gui {
namespace {

constexpr int kCtrl = 341, kShift = 340, kQ = 81, kY = 89, kRight = 262;
constexpr int kUp = KeyboardQueue::kRelease, kDown = KeyboardQueue::kPress;

// Records what each frame is given, as text: "+341 +89 | -341 -89 ...".
struct Recorder {
  std::vector<std::string> frames{""};
  void operator()(const KeyboardQueue::Event& e) {
    std::string& f = frames.back();
    if (!f.empty()) f += ' ';
    if (e.is_char)
      f += "'" + std::string(1, static_cast<char>(e.codepoint)) + "'";
    else
      f += (e.action == kDown ? "+" : e.action == kUp ? "-" : "~") + std::to_string(e.key);
  }
};

TEST(KeyboardQueue, EveryPressAndReleaseInOnePollIsSeenForAFrame) {
  Recorder r;
  KeyboardQueue q([&r](const KeyboardQueue::Event& e) { r(e); });
  for (int k = 0; k < 2; ++k) {  // Right, Right: two presses, both must count
    q.key(kRight, 114, kDown, 0);
    q.key(kRight, 114, kUp, 0);
  }
  for (int f = 0; f < 4; ++f) {
    r.frames.emplace_back();
    q.frame_done();
  }
  r.frames.emplace_back();
  q.frame_done();
  EXPECT_EQ(r.frames[0], "+262");
  EXPECT_EQ(r.frames[1], "-262");  // up and down again in one frame would look held
  EXPECT_EQ(r.frames[2], "+262");
  EXPECT_EQ(r.frames[3], "-262");
  EXPECT_EQ(r.frames[4], "");
  EXPECT_TRUE(q.empty());
}

TEST(KeyboardQueue, KeysAfterAWaitingReleaseWaitTooSoModifiersAreNeverStale) {
  Recorder r;
  KeyboardQueue q([&r](const KeyboardQueue::Event& e) { r(e); });
  // xdotool's ctrl+y (Ctrl goes up before Y), then "Q" typed, all in one poll.
  q.key(kCtrl, 37, kDown, 0);
  q.key(kY, 29, kDown, 2);
  q.key(kCtrl, 37, kUp, 2);
  q.key(kY, 29, kUp, 0);
  q.key(kShift, 50, kDown, 0);
  q.key(kQ, 24, kDown, 1);
  q.character('Q');
  q.key(kShift, 50, kUp, 1);
  q.key(kQ, 24, kUp, 0);
  EXPECT_EQ(r.frames[0], "+341 +89") << "Q must not reach ImGui while it still sees Ctrl down";
  for (int f = 0; f < 3; ++f) {
    r.frames.emplace_back();
    q.frame_done();
  }
  EXPECT_EQ(r.frames[1], "-341 -89 +340 +81 'Q'");
  EXPECT_EQ(r.frames[2], "-340 -81");
  EXPECT_EQ(r.frames[3], "");
}

TEST(KeyboardQueue, CharactersKeepTheirPlaceAmongKeys) {
  Recorder r;
  KeyboardQueue q([&r](const KeyboardQueue::Event& e) { r(e); });
  q.character('a');
  q.key(259, 22, kDown, 0);  // Backspace
  q.key(259, 22, kUp, 0);
  q.character('b');  // typed after the Backspace: must not reach ImGui before it
  EXPECT_EQ(r.frames[0], "'a' +259");
  r.frames.emplace_back();
  q.frame_done();
  EXPECT_EQ(r.frames[1], "-259 'b'");
}

TEST(KeyboardQueue, FlushDeliversEverythingAtOnce) {
  Recorder r;
  KeyboardQueue q([&r](const KeyboardQueue::Event& e) { r(e); });
  for (int k = 0; k < 3; ++k) {
    q.key(kRight, 114, kDown, 0);
    q.key(kRight, 114, kUp, 0);
  }
  q.flush();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(r.frames[0], "+262 -262 +262 -262 +262 -262");
}

// A typed letter's release that waited for a frame is all the next batch
// holds: the app then draws no frame for it while a run is computed.
TEST(KeyboardQueue, SaysWhenABatchHeldOnlyReleases) {
  Recorder r;
  KeyboardQueue q([&r](const KeyboardQueue::Event& e) { r(e); });
  constexpr int kA = 65;
  q.key(kA, 38, kDown, 0);
  q.character('a');
  q.key(kA, 38, kUp, 0);  // waits: A went down in this batch
  r.frames.emplace_back();
  EXPECT_TRUE(q.frame_done());
  EXPECT_TRUE(q.delivered_only_releases());
  EXPECT_EQ(r.frames[1], "-65");
  // Typed again at once: the press waits (A went up in this batch), then
  // its release with the press of Y behind it: neither batch is releases only.
  q.key(kA, 38, kDown, 0);
  q.key(kA, 38, kUp, 0);
  q.key(kY, 29, kDown, 0);
  for (const char* want : {"+65", "-65 +89"}) {
    r.frames.emplace_back();
    EXPECT_TRUE(q.frame_done());
    EXPECT_FALSE(q.delivered_only_releases()) << want;
    EXPECT_EQ(r.frames.back(), want);
  }
  r.frames.emplace_back();
  EXPECT_FALSE(q.frame_done()) << "nothing waited";
  EXPECT_FALSE(q.delivered_only_releases());
}

}  // namespace
}  // namespace attnscope::gui
