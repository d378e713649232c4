// keyboard_queue.cpp: see keyboard_queue.hpp.
#include "platform/keyboard_queue.hpp"

#include <algorithm>

namespace attnscope::gui {

void KeyboardQueue::key(int key, int scancode, int action, int mods) {
  Event e;
  e.key = key;
  e.scancode = scancode;
  e.action = action;
  e.mods = mods;
  queue_.push_back(e);
  deliver();
}

void KeyboardQueue::character(unsigned codepoint) {
  Event e;
  e.is_char = true;
  e.codepoint = codepoint;
  queue_.push_back(e);
  deliver();
}

bool KeyboardQueue::deliver() {
  bool any = false;
  only_releases_ = true;
  while (!queue_.empty()) {
    const Event& e = queue_.front();
    if (!e.is_char && e.action != kRepeat) {
      // ImGui must see each state of a key for a frame: a key that went down
      // (or up) in this batch waits before it goes up (or down) again.
      if (std::find(changed_.begin(), changed_.end(), e.key) != changed_.end()) break;
      changed_.push_back(e.key);
    }
    only_releases_ = only_releases_ && !e.is_char && e.action == kRelease;
    sink_(e);
    queue_.pop_front();
    any = true;
  }
  only_releases_ = only_releases_ && any;
  return any;
}

bool KeyboardQueue::frame_done() {
  changed_.clear();
  return deliver();
}

void KeyboardQueue::flush() {
  while (!queue_.empty()) frame_done();
}

}  // namespace attnscope::gui
