// keyboard_queue.hpp: keyboard input (keys and typed characters) handed to
// ImGui one frame's worth at a time, in the order it arrived.
//
// ImGui 1.86 reads the keys' state once per frame: a press and its release
// that arrive in the same poll (xdotool, fast typists, remote desktops, or
// anyone typing while a slow frame runs) would never be seen, nor a release
// and the next press. So an event for a key that already went down or up
// since the last frame waits for the next frame -- and so does every event
// after it, to keep the order. Holding back only the releases (as main.cpp
// did before) let the keys after them reach ImGui early: Ctrl+Y, then "Q"
// typed during a slow frame, showed ImGui Ctrl still down with Q pressed, and
// the app quit (found by the monkey test; regression tests in
// headless_frame_test.cpp and keyboard_queue_test.cpp).
//
// No GLFW or ImGui here: main feeds GLFW's callbacks in and delivers to
// ImGui's backend through the sink; tests deliver to a fake.
#pragma once

#include <deque>
#include <functional>
#include <vector>

namespace attnscope::gui {

class KeyboardQueue {
 public:
  // GLFW's action values (main.cpp checks them against glfw3.h).
  static constexpr int kRelease = 0, kPress = 1, kRepeat = 2;

  struct Event {
    bool is_char = false;
    int key = 0, scancode = 0, action = 0, mods = 0;  // a key event
    unsigned codepoint = 0;                           // a typed character
  };
  using Sink = std::function<void(const Event&)>;

  explicit KeyboardQueue(Sink sink) : sink_(std::move(sink)) {}

  // From the input callbacks: delivered at once unless they must wait.
  void key(int key, int scancode, int action, int mods);
  void character(unsigned codepoint);
  // After a frame: what waited goes to ImGui now, up to the next event for a
  // key that already changed in this batch. True when something was delivered
  // (draw a frame to show it).
  bool frame_done();
  // The last frame_done() delivered key releases only: nothing on screen
  // changes until the next frame, whenever that is.
  bool delivered_only_releases() const { return only_releases_; }
  // Everything now (a minimised window draws no frames to wait for).
  void flush();
  bool empty() const { return queue_.empty(); }

 private:
  bool deliver();  // true when something was delivered

  Sink sink_;
  std::deque<Event> queue_;
  std::vector<int> changed_;  // keys ImGui saw go down or up since the last frame
  bool only_releases_ = false;
};

}  // namespace attnscope::gui
