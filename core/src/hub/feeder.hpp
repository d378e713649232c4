// feeder.hpp: a download's bytes into its partial file and, on a second
// thread, into its hash (internal to the hub room). Hashing is the slowest
// step (SHA-256 runs at about the speed of a loopback transfer), so the
// transfer's thread only gathers libcurl's chunks (16 kB each) into large
// buffers and writes each full one with one write(2); the hashing thread
// then hashes it while the transfer goes on.
#pragma once

#include <chrono>
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

  // Copies `size` bytes into the buffer being filled; a full buffer (or one
  // kFlushEvery old: a slow transfer reaches the disk too) is written to
  // the file and handed to the hashing thread, waiting (on a condition
  // variable) while all buffers are queued. False once a write has failed:
  // stop the transfer.
  bool add(const char* data, std::size_t size);
  // Writes the rest, waits until everything written is hashed, ends the
  // thread. Returns the write error ("" when none). Later calls return it
  // again.
  std::string finish();

  using Clock = std::chrono::steady_clock;
  static constexpr auto kFlushEvery = std::chrono::milliseconds(250);
  static constexpr std::size_t kBufferBytes = 512u << 10;
  static constexpr int kBuffers = 16;

 private:
  void flush();
  void hand_over();
  void loop();
  int fd_;
  Sha256* hash_;
  std::vector<char> filling_;  // the transfer thread's own, as are these two
  Clock::time_point last_flush_ = Clock::now();
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
