// feeder.cpp: BlobFeeder (hub/feeder.hpp). Sixteen 512 kB buffers go
// round: the transfer's thread fills one and writes it, the hashing thread
// hashes the full ones, so receiving and writing overlap with hashing
// instead of taking turns with it, and a 500 MB file takes about a
// thousand write(2) calls instead of libcurl's 32 000 chunks. Measured with
// scripts/hub_throughput.py (docs/PERFORMANCE.md).
#include "hub/feeder.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace attnscope::core::hub {

namespace {

// Writes all of `data` to `fd`; "" or the error's words.
std::string write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::system_category().message(n < 0 ? errno : EIO);
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return "";
}

}  // namespace

BlobFeeder::BlobFeeder(int fd, Sha256* hash) : fd_(fd), hash_(hash) {
  filling_.reserve(kBufferBytes);
  for (int i = 1; i < kBuffers; ++i) {
    free_.emplace_back();
    free_.back().reserve(kBufferBytes);
  }
  if (hash_) thread_ = std::thread([this] { loop(); });
}

BlobFeeder::~BlobFeeder() { finish(); }

bool BlobFeeder::add(const char* data, std::size_t size) {
  while (size > 0 && error_.empty()) {
    const std::size_t n = std::min(size, kBufferBytes - filling_.size());
    filling_.insert(filling_.end(), data, data + n);
    data += n;
    size -= n;
    if (filling_.size() == kBufferBytes) flush();
  }
  // A slow transfer reaches the disk too, for a resume after a crash.
  if (!filling_.empty() && Clock::now() - last_flush_ > kFlushEvery) flush();
  return error_.empty();
}

void BlobFeeder::flush() {
  last_flush_ = Clock::now();
  error_ = write_all(fd_, filling_.data(), filling_.size());
  if (!error_.empty()) return;
  if (hash_)
    hand_over();
  else
    filling_.clear();
}

void BlobFeeder::hand_over() {
  std::unique_lock lock(mutex_);
  full_.push_back(std::move(filling_));
  changed_.notify_all();
  changed_.wait(lock, [&] { return !free_.empty(); });
  filling_ = std::move(free_.back());
  free_.pop_back();
  filling_.clear();
}

void BlobFeeder::loop() {
  while (true) {
    std::vector<char> buffer;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return !full_.empty() || closing_; });
      if (full_.empty()) return;
      buffer = std::move(full_.front());
      full_.pop_front();
    }
    hash_->update(buffer.data(), buffer.size());
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(buffer));
    changed_.notify_all();
  }
}

std::string BlobFeeder::finish() {
  if (finished_) return error_;
  finished_ = true;
  if (!filling_.empty() && error_.empty()) {
    error_ = write_all(fd_, filling_.data(), filling_.size());
    if (!error_.empty()) filling_.clear();  // not in the file: not hashed
  }
  {
    std::lock_guard lock(mutex_);
    if (!filling_.empty()) full_.push_back(std::move(filling_));
    closing_ = true;
    changed_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  return error_;
}

}  // namespace attnscope::core::hub
