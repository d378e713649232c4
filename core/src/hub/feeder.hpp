// feeder.hpp: a download's bytes into its partial file and, on a second
// thread, into its hash (internal to the hub room). Hashing is the slowest
// step (SHA-256 runs at about the speed of a loopback transfer), so the
// transfer's thread only writes each chunk, as curl -o does, and copies it
// for the hashing thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "attnscope/hub/sha256.hpp"

namespace attnscope::core::hub {

class BlobFeeder {
 public:
  // Appends to the open file `fd` (the caller's, left open) and adds the
  // same bytes to `hash` on a thread of its own (no thread when null).
  BlobFeeder(int fd, Sha256* hash);
  ~BlobFeeder();
  BlobFeeder(const BlobFeeder&) = delete;
  BlobFeeder& operator=(const BlobFeeder&) = delete;

  // Writes `size` bytes to the file, copies them into the buffer being
  // filled and hands each full buffer to the hashing thread; waits (on a
  // condition variable) while all buffers are queued. False when the write
  // failed: stop the transfer.
  bool add(const char* data, std::size_t size);
  // Hands over the rest, waits until everything is hashed, ends the thread.
  // Returns the write error ("" when none). Later calls return it again.
  std::string finish();

  static constexpr std::size_t kBufferBytes = 4u << 20;
  static constexpr int kBuffers = 4;

 private:
  void hand_over();
  void loop();
  int fd_;
  Sha256* hash_;
  std::vector<char> filling_;  // the transfer thread's own
  std::mutex mutex_;
  std::condition_variable changed_;  // a buffer queued or freed, or the end
  std::deque<std::vector<char>> full_;
  std::vector<std::vector<char>> free_;
  std::string error_;  // the transfer thread's own
  bool closing_ = false;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace attnscope::core::hub
